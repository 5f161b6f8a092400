"""Logging observer: each event as one readable line on a stdlib logger.

Refused calls, tools that raised and failing interceptors come out as warnings, the
rest at the observer's level.  The event's fields ride along as ``record.event`` (a
dict), for handlers that write structured logs.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import anyio

from interpose import Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.observers import LoggingObserver

pipe = Pipeline(builtins=False)


def run(args: dict[str, Any]) -> str:
    """The tool: a fake shell."""
    return f"ran {args['command']!r}"


@pipe.intercept("tool.before", tools=["exec"], id="no-rm")
def no_rm(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if out.args["command"].startswith("rm "):
        out.block, out.block_reason = True, "rm is not allowed"


@pipe.intercept("tool.before", tools=["exec"], id="ticket-check", on_error="skip")
def ticket_check(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    out.args["ticket"] = out.args["env"]["ticket"]  # fails when there is no env


class Refusals(logging.Handler):
    """A structured handler: the fields of refused calls as JSON."""

    def emit(self, record: logging.LogRecord) -> None:
        event: dict[str, Any] = getattr(record, "event", {})
        if event.get("kind") == "tool_exec_end" and event["status"] in ("blocked", "denied"):
            keep = ("tool_name", "tool_call_id", "status", "decided_by", "reason", "session_key")
            print("json:", json.dumps({key: event[key] for key in keep}))


logging.basicConfig(
    stream=sys.stdout, level=logging.INFO, format="%(name)s %(levelname)s %(message)s"
)
logging.getLogger("interpose.events").addHandler(Refusals())
LoggingObserver().attach(pipe)


async def main() -> None:
    async with pipe, pipe.turn(agent_id="coder", session_key="s1", turn_id="t1") as turn:
        await turn.message("clean up and run the tests")
        for command in ("rm -rf build", "make test"):
            await turn.call_tool("exec", {"command": command}, call=run)


if __name__ == "__main__":
    anyio.run(main)
