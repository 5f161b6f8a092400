"""A process hook: a long-lived child process that reviews tool calls over JSON-RPC.

examples/hooks/review_gate.py is the child (a plain Python script, PicoClaw-compatible).
It blocks force-pushes, answers the plugin tool "whoami" itself, gives exec calls a
default timeout and asks for a change ticket before production deploys; it also
receives the tool_exec_end events and writes them to a log.

A second hook, "legacy", speaks another protocol version, so its handshake fails: with
``on_error="skip"`` the calls it should have reviewed go ahead (fail open), and each
failure is published as an ``interceptor_failed`` event.

Run it: ``python examples/process_hook.py``
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from interpose import Pipeline, ProcessHook, ToolResult
from interpose.bus.events import InterceptorFailed

GATE = Path(__file__).parent / "hooks" / "review_gate.py"
# a child that answers the handshake with a protocol version interpose does not speak
LEGACY = (
    "import json, sys\n"
    "hello = json.loads(sys.stdin.readline())\n"
    "reply = {'name': 'legacy', 'protocol_version': 2}\n"
    "print(json.dumps({'jsonrpc': '2.0', 'id': hello['id'], 'result': reply}), flush=True)\n"
    "sys.stdin.read()\n"
)


def run_tool(args: dict[str, Any]) -> str:
    timeout = f" (timeout {args['timeout']}s)" if "timeout" in args else ""
    return f"ran {args.get('command') or args.get('path')!r}{timeout}"


def show(label: str, result: ToolResult) -> None:
    detail = result.output["reason"] if result.status in ("blocked", "denied") else result.output
    print(f"{label:<17} -> {result.status}: {detail}")


async def main() -> None:
    log = Path(tempfile.mkdtemp()) / "review_gate.log"
    pipe = Pipeline(builtins=False)
    pipe.register_tool("whoami")  # a tool the hook implements itself
    gate = ProcessHook(
        "review_gate",
        [sys.executable, str(GATE)],
        intercept=["before_tool", "approve_tool"],
        observe=["tool_exec_end"],
        tools=["exec", "whoami"],
        priority=50,
        on_error="block",  # fail closed: no review, no tool call
        timeout=2.0,
        env={"REVIEW_GATE_LOG": str(log)},  # the child sees PATH, HOME, LANG... and this
    )
    gate.install(pipe)
    legacy = ProcessHook(
        "legacy",
        [sys.executable, "-c", LEGACY],
        tools=["read"],
        on_error="skip",  # fail open: an unreviewed read goes ahead
        restart_backoff=(60.0, 60.0),
    )
    legacy.install(pipe)
    failures: list[InterceptorFailed] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})

    async with pipe:  # starts both children and waits for their handshakes
        print(f"{gate.name} is up: it calls itself {gate.child_name!r}")
        for command in ("git status", "git push --force", "deploy prod"):
            show(command, await pipe.call_tool("exec", {"command": command}, call=run_tool))
        who = await pipe.call_tool("whoami", {}, call=run_tool, agent_id="coder", session_key="s1")
        show("whoami", who)
        print(f"legacy running: {legacy.running}")
        show("read notes.md", await pipe.call_tool("read", {"path": "notes.md"}, call=run_tool))

    # leaving `async with pipe` delivered every event, then closed the children's stdin
    for failure in failures:
        reason = failure.error.split(";")[0]  # what follows says when it restarts
        print(f"interceptor_failed: {failure.interceptor_id} policy={failure.policy}")
        print(f"  {reason}")
    print("the gate saw:", " | ".join(log.read_text().splitlines()))
    shutil.rmtree(log.parent)


if __name__ == "__main__":
    anyio.run(main)
