"""An agent process of the approval tests.

``python agent_worker.py URL PREFIX SPEC``: a pipeline with the built-in guards, one ask
rule (``Bash(git push:*)``) and ``DurableApprovals`` on the Redis approval store at URL
(keys under PREFIX); SPEC (JSON) gives ``agent``, ``session``, ``timeout`` (seconds a
request waits), ``calls`` (``{"id": call id, "command": ...}``) and ``concurrent``
(run the calls at once, not one after the other).  Prints one JSON object a line:
``{"ready": pid}``; each ``approval_requested`` and ``grant_used`` event
(``{"event": kind, ...}``); each call's result (``{"call": id, "status", "reason",
"ran"}``: ``ran`` is the command the tool got, None when it did not run); then
``{"done": count}``.  The tool only records its arguments: nothing is executed.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from interpose import Pipeline
from interpose.approvals.redis import RedisApprovalStore
from interpose.approvals.waiting import DurableApprovals
from interpose.bus.events import Event
from interpose.permissions.claude import parse_claude_rule
from interpose.permissions.engine import Permissions
from interpose.permissions.policy import PermissionPolicy


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main(url: str, prefix: str, spec: dict[str, Any]) -> None:
    base = Path.cwd()
    rule = parse_claude_rule("Bash(git push:*)", "ask", source="test", base=base, cwd=base)
    pipe = Pipeline(approval_timeout=float(spec.get("timeout", 60)))
    PermissionPolicy(Permissions([rule])).install(pipe)
    store = RedisApprovalStore(url, prefix=prefix)
    DurableApprovals(store).install(pipe)

    def heard(event: Event) -> None:
        emit(
            {
                "event": event.kind,
                **{
                    k: getattr(event, k, None)
                    for k in ("request_id", "resumed", "grant_id", "granted_by")
                },
            }
        )

    pipe.subscribe(heard, events=["approval_requested", "grant_used"])

    async def one(call: dict[str, Any]) -> None:
        ran: list[str] = []

        def tool(args: dict[str, Any]) -> str:
            ran.append(args["command"])
            return "recorded"

        result = await pipe.call_tool(
            "exec",
            {"command": call["command"]},
            call=tool,
            call_id=call["id"],
            agent_id=spec["agent"],
            session_key=spec.get("session", "s1"),
        )
        reason = result.output.get("reason", "") if isinstance(result.output, dict) else ""
        emit(
            {
                "call": call["id"],
                "status": result.status,
                "reason": reason,
                "ran": ran[0] if ran else None,
            }
        )

    async with pipe:
        emit({"ready": os.getpid()})
        if spec.get("concurrent"):
            async with anyio.create_task_group() as tg:
                for call in spec["calls"]:
                    tg.start_soon(one, call)
        else:
            for call in spec["calls"]:
                await one(call)
    await store.aclose()
    emit({"done": len(spec["calls"])})


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
