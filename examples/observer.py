"""Observers: subscribe to the bus and receive events after the fact.

Observers never slow a call down or change it: publishing puts the event in each
subscriber's bounded buffer and returns.  A pipeline with subscribers must be entered
(``async with pipe``), which runs the observers and drains their buffers on exit.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio

from interpose import Event, Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.bus.events import ToolExecEnd, ToolExecSkipped

pipe = Pipeline(builtins=False)


def write(args: dict[str, Any]) -> str:
    """The tool: a fake file write."""
    return f"wrote {len(args['content'])} bytes to {args['path']}"


@pipe.intercept("tool.before", tools=["write"], id="no-dotfiles")
def no_dotfiles(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if out.args["path"].startswith("."):
        out.block, out.block_reason = True, "dotfiles are read-only"


# a sync observer that records every event (no `events=`: all kinds)
recorded: list[Event] = []
pipe.subscribe(recorded.append)

# an async observer on one kind; `overflow="block"` (the default) never loses an event:
# when its buffer is full the publisher waits for room (backpressure)
statuses: Counter[str] = Counter()


async def count_status(event: Event) -> None:
    await anyio.sleep(0.001)  # e.g. a network write; the tool call does not wait for it
    if isinstance(event, ToolExecEnd):
        statuses[event.status] += 1


counted = pipe.subscribe(count_status, events={"tool_exec_end"}, buffer=1)


# a lossy observer: a full buffer drops the newest event instead of waiting
async def sample(event: Event) -> None:
    await anyio.sleep(0.001)


lossy = pipe.subscribe(sample, events={"tool_exec_end"}, buffer=1, overflow="drop_newest")


async def main() -> None:
    try:
        await pipe.call_tool("write", {"path": "a.txt", "content": "x"}, call=write)
    except RuntimeError as exc:
        print("without `async with pipe`:", exc)

    async with pipe, pipe.turn(agent_id="coder", session_key="s1") as turn:
        await turn.message("tidy up the repo")
        for path in ("notes.txt", ".bashrc", "todo.txt"):
            await turn.call_tool("write", {"path": path, "content": "hello"}, call=write)
    # leaving `async with pipe` drained every buffer: all events have been handled

    print("kinds:", [event.kind for event in recorded])
    for event in recorded:
        if isinstance(event, ToolExecSkipped):
            print(f"skipped: {event.tool_name} why={event.why} by={event.decided_by}")
            print(f"  reason={event.reason!r} agent={event.agent_id} session={event.session_key}")
    print("statuses:", dict(statuses))
    s = counted.stats
    print(f"block policy: published={s.published} delivered={s.delivered} dropped={s.dropped}")
    s = lossy.stats
    accounted = s.delivered + s.dropped == s.published
    print(f"drop_newest: delivered + dropped == published: {accounted}")


if __name__ == "__main__":
    anyio.run(main)
