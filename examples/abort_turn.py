"""End a turn early (AbortTurn) or stop the whole agent (HardAbort).

``raise AbortTurn(reason)`` from any handler ends the current turn cleanly: the turn's
``async with`` block swallows it and marks the turn aborted.  ``raise HardAbort(reason)``
goes through every layer to the caller, to stop the agent loop.  Both bypass the
``on_error`` policies: they are decisions, not failures.  The pipeline records in
``exc.source`` which interceptor raised them, and a tool call ended by ``AbortTurn``
still publishes its ``tool_exec_end`` (status "aborted").
"""

from __future__ import annotations

from typing import Any

import anyio

from interpose import (
    AbortTurn,
    Event,
    HardAbort,
    Pipeline,
    ToolBeforeInput,
    ToolBeforeOutput,
    Turn,
)
from interpose.bus.events import ToolExecEnd, TurnAborted

pipe = Pipeline(builtins=False)
BUDGET = 2  # tool calls allowed per session
spent: dict[str, int] = {}


def search(args: dict[str, Any]) -> str:
    """The tool: a fake web search."""
    return f"results for {args['q']!r}"


@pipe.intercept("tool.before", tools="group:web", priority=100, id="budget")
def budget(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    spent[inp.session_key] = spent.get(inp.session_key, 0) + 1
    if spent[inp.session_key] > BUDGET:
        raise AbortTurn(f"tool budget of {BUDGET} calls used up")


@pipe.intercept("tool.before", tools="group:runtime", priority=100, id="kill-switch")
def kill_switch(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if "shutdown" in out.args.get("command", ""):
        raise HardAbort("the agent tried to shut the host down")


aborts: list[TurnAborted] = []
aborted_calls: list[ToolExecEnd] = []


def on_abort(event: Event) -> None:
    if isinstance(event, TurnAborted):
        aborts.append(event)
    elif isinstance(event, ToolExecEnd) and event.status == "aborted":
        aborted_calls.append(event)


pipe.subscribe(on_abort, events={"turn_aborted", "tool_exec_end"})


async def body(turn: Turn) -> str:
    """A turn body for ``run_turn``: one search."""
    result = await turn.call_tool("web_search", {"q": "anyio"}, call=search)
    return str(result.output)


async def main() -> None:
    async with pipe:
        # 1. inside a turn: the turn ends at the aborting call
        async with pipe.turn(session_key="s1") as turn:
            for q in ("python", "msgspec", "anyio", "trio"):
                result = await turn.call_tool("web_search", {"q": q}, call=search)
                print("search:", result.output)
        print(f"turn aborted={turn.aborted} reason={turn.abort_reason!r}")

        # 2. a one-call turn: the abort becomes a result with status "aborted"
        result = await pipe.call_tool("web_search", {"q": "more"}, call=search, session_key="s1")
        print("call_tool:", result.status, result.output)

        # 3. run_turn returns the body's value, or None when the turn was aborted
        print("run_turn (new session):", await pipe.run_turn(body, session_key="s2"))
        print("run_turn (spent session):", await pipe.run_turn(body, session_key="s1"))

        # 4. HardAbort reaches the caller: the agent loop stops
        try:
            async with pipe.turn(session_key="s3") as turn:
                await turn.call_tool("exec", {"command": "shutdown -h now"}, call=search)
        except HardAbort as exc:
            print(f"HardAbort: {exc.reason} (raised in {exc.source}, turn aborted={turn.aborted})")
    print("turn_aborted events:", [(e.session_key, e.hard) for e in aborts])
    # one per call that AbortTurn ended; the HardAbort call (s3) has no tool_exec_end
    print("aborted calls:", [(e.session_key, e.tool_name, e.decided_by) for e in aborted_calls])


if __name__ == "__main__":
    anyio.run(main)
