"""Rolling out a new policy safely: shadow it, replay recorded traffic, then enforce.

1. The new rule runs in ``mode="shadow"`` next to the enforcing guards: it decides on
   every call, its decisions are published as ``shadow_decision`` events, and nothing
   it decides is applied.  Meanwhile the audit log records each call (arguments and
   results, redacted) so that the traffic can be replayed.
2. ``interpose replay`` runs the recorded calls through the stack a candidate config
   builds -- no tool runs -- and lists what it would change; it exits 1 because the
   candidate blocks calls the recorded run allowed.
3. Once the numbers look right, the rule is switched to ``enforce``.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio

from interpose import Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.bus.events import ShadowDecision
from interpose.cli import main as interpose_cli
from interpose.observers import AuditLog


def run(args: dict[str, Any]) -> str:
    """The tools of this session: fakes that only say what they were asked."""
    return f"done ({len(args)} arguments)"


def no_git_push(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    """The new policy: pushes go through CI, not through the agent."""
    if out.args.get("command", "").startswith("git push"):
        out.block, out.block_reason = True, "pushes go through CI"


# What the agent did last week (one turn of it).
TRAFFIC = [
    ("exec", {"command": "git status"}),
    ("exec", {"command": "git push origin main"}),
    ("web_fetch", {"url": "https://pypi.org/simple/anyio/", "api_key": "pk-3x4mpl3-k3y"}),
    ("read", {"path": "~/.aws/credentials"}),
]

# The candidate stack: the default guards, plus the new rule as a config would
# state it, plus a tool filter nobody has tried yet.
CANDIDATE = """\
[hooks.builtins.command-safety-guard]
deny = ["^git push"]
[hooks.builtins.tool-filter]
deny = ["web_fetch"]
"""


async def shadow_week(pipe: Pipeline) -> None:
    # step 1: the new rule in shadow mode; every call recorded
    decisions: list[ShadowDecision] = []
    pipe.subscribe(decisions.append, events={"shadow_decision"})
    async with pipe, pipe.turn(agent_id="coder", turn_id="t1") as turn:
        for n, (tool, args) in enumerate(TRAFFIC, 1):
            result = await turn.call_tool(tool, args, call=run, call_id=f"c{n}")
            print(f"c{n} {tool}: {result.status}")
    for d in decisions:
        print(f"shadow: {d.interceptor_id} would {d.decision} {d.tool_call_id} ({d.reason})")
    print("counts:", pipe.registry.shadow.counts)


async def enforce(pipe: Pipeline) -> None:
    # step 3: the replay said what would change; now the rule enforces
    pipe.registry.set_mode("no-git-push", "enforce")
    async with pipe:
        result = await pipe.call_tool("exec", {"command": "git push origin main"}, call=run)
    print(f"git push: {result.status} by {result.details['decided_by']}")


def main() -> None:
    pipe = Pipeline()  # the guards that enforce today
    pipe.intercept("tool.before", tools=["exec"], id="no-git-push", mode="shadow")(no_git_push)
    with tempfile.TemporaryDirectory() as tmp:
        audit = Path(tmp) / "audit.jsonl"
        with AuditLog(audit) as log:
            log.attach(pipe, record_args=True, record_results=True)
            print("== 1. shadow mode, recording")
            anyio.run(shadow_week, pipe)
            print("api key in the audit log:", "pk-3x4mpl3-k3y" in audit.read_text("utf-8"))
            print("== 2. interpose replay audit.jsonl --config candidate.toml")
            candidate = Path(tmp) / "candidate.toml"
            candidate.write_text(CANDIDATE, encoding="utf-8")
            code = interpose_cli(["replay", str(audit), "--config", str(candidate)])
            print(f"exit code: {code}")
            print("== 3. enforce")
            anyio.run(enforce, pipe)


if __name__ == "__main__":
    main()
