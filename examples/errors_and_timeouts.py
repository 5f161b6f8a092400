"""What happens when an interceptor fails or is too slow.

Each registration has an error policy: ``on_error="block"`` (fail closed), ``"skip"``
(fail open) or ``"raise"``.  An *async* handler past its timeout is cancelled and treated
by that policy; a sync handler cannot be interrupted.  Every failure is logged, counted
in ``pipe.stats`` and published as an ``interceptor_failed`` event.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import anyio

from interpose import (
    Event,
    MessageBeforeInput,
    MessageBeforeOutput,
    Pipeline,
    RegistrationError,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
)
from interpose.bus.events import InterceptorFailed

logging.basicConfig(stream=sys.stdout, format="log: %(message)s")
pipe = Pipeline(builtins=False, interceptor_timeout=5.0)


def tool(args: dict[str, Any]) -> str:
    """The tool: echoes its arguments."""
    return f"ok {args}"


# tool.before defaults to on_error="block": a bug in a gate refuses the call
@pipe.intercept("tool.before", tools=["read"], id="buggy-gate")
def buggy_gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    raise KeyError("path")


# on_error="skip": the failure is recorded and the chain goes on
@pipe.intercept("tool.before", tools=["write"], id="buggy-enricher", on_error="skip")
def buggy_enricher(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    raise ValueError("could not enrich")


# on_error="raise": the exception reaches the caller
@pipe.intercept("tool.before", tools=["edit"], id="strict", on_error="raise")
def strict(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    raise RuntimeError("strict interceptor failed")


# message, params and llm hooks default to "raise": there is no call to refuse
@pipe.intercept("message.before", id="buggy-message")
def buggy_message(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
    raise LookupError("no profile for this user")


# after-hooks default to "skip": the result stands
@pipe.intercept("tool.after", tools="group:fs", id="buggy-after")
def buggy_after(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
    if inp.tool_name == "write":
        raise ZeroDivisionError("division by zero")


# an async handler past its timeout is cancelled, then its policy ("block") applies
@pipe.intercept("tool.before", tools=["web_fetch"], id="slow-async", timeout=0.1)
async def slow_async(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    try:
        await anyio.sleep(10)
    except anyio.get_cancelled_exc_class():
        print("slow-async: cancelled")
        raise


# a sync handler cannot be cancelled: its timeout is not enforced (and it blocks the loop)
@pipe.intercept("tool.before", tools=["web_search"], id="slow-sync", timeout=0.1)
def slow_sync(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    time.sleep(0.3)


failures: list[InterceptorFailed] = []


def on_failure(event: Event) -> None:
    if isinstance(event, InterceptorFailed):
        failures.append(event)


pipe.subscribe(on_failure, events={"interceptor_failed"})


async def main() -> None:
    async with pipe:
        for name in ("read", "write", "web_fetch", "web_search"):
            result = await pipe.call_tool(name, {"path": "x"}, call=tool)
            print(f"{name}: {result.status} {result.output}")
        try:
            await pipe.call_tool("edit", {"path": "x"}, call=tool)
        except RuntimeError as exc:
            print("edit: raised", repr(exc))
        async with pipe.turn() as turn:
            try:
                await turn.message("hello")
            except LookupError as exc:
                print("message: raised", repr(exc))
        # bad input is refused up front with an exception, whatever the policies
        try:
            await pipe.call_tool("read", "x", call=tool)  # type: ignore[arg-type]
        except TypeError as exc:
            print("TypeError:", exc)

    print("failures:", pipe.stats.failures)
    print("timeouts:", pipe.stats.timeouts)
    for f in failures:
        print(f"event: {f.hook} {f.interceptor_id} policy={f.policy} timed_out={f.timed_out}")

    # a registration that cannot work is refused when it is made
    before = len(pipe.registry)
    try:
        pipe.intercept("tool.before", tools="group:filesystem")(buggy_gate)
    except RegistrationError as exc:
        print("RegistrationError:", exc)
    print("registry unchanged:", len(pipe.registry) == before)


if __name__ == "__main__":
    anyio.run(main)
