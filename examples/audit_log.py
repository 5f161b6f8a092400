"""Audit log: every event as one JSON line, flushed as it happens, rotated by size.

``AuditLog.attach`` subscribes with ``overflow="block"``: when the writer falls behind,
the agent waits rather than an event going missing.  Each line decodes back into the
event with ``decode_event``; a rotation never splits a line.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio

from interpose import Approval, ApprovalRequest, Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.bus.events import Event, ToolExecEnd, ToolExecSkipped, ToolExecStart, decode_event
from interpose.observers import AuditLog

pipe = Pipeline(builtins=False)


def run(args: dict[str, Any]) -> str:
    """The tool: a fake shell."""
    return f"ran {args['command']!r}"


@pipe.intercept("tool.before", tools=["exec"], id="no-rm")
def no_rm(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if out.args["command"].startswith("rm "):
        out.block, out.block_reason = True, "rm is not allowed"


@pipe.approver(tools=["exec"], id="no-deploys")
def no_deploys(request: ApprovalRequest) -> Approval | None:
    return Approval.deny("deploys need a ticket") if "deploy" in request.args["command"] else None


def read_audit(path: Path) -> list[Event]:
    """Every event of a rotated audit log, oldest first: path.N, ..., path.1, path."""
    rotated = sorted(path.parent.glob(path.name + ".*"), key=lambda p: int(p.suffix[1:]))
    events: list[Event] = []
    for file in [*reversed(rotated), path]:
        with file.open("rb") as lines:
            events.extend(decode_event(line) for line in lines)
    return events


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "audit.jsonl"
        with AuditLog(path, max_bytes=1024, backups=5) as audit:
            sub = audit.attach(pipe)
            async with pipe, pipe.turn(agent_id="coder", session_key="s1") as turn:
                for command in ("ls", "rm -rf build", "make deploy", "make test"):
                    await turn.call_tool("exec", {"command": command}, call=run)
        events = read_audit(path)
        rotated = path.with_name("audit.jsonl.1").exists()

    in_order = [e.seq for e in events] == sorted(e.seq for e in events)
    print(f"published {sub.stats.published}, dropped {sub.stats.dropped}, read back {len(events)}")
    print(f"rotated: {rotated}, in seq order: {in_order}")
    for e in events:
        line = f"{e.seq:2} {e.kind}"
        if isinstance(e, ToolExecStart):
            line += f" {e.tool_call_id}"
        elif isinstance(e, ToolExecSkipped):
            line += f" {e.tool_call_id} {e.why} by {e.decided_by}: {e.reason}"
        elif isinstance(e, ToolExecEnd):
            line += f" {e.tool_call_id} {e.status}"
        print(line)


if __name__ == "__main__":
    anyio.run(main)
