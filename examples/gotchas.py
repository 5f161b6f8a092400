"""The mistakes the Gotchas page warns about, each shown next to the fix.

Every section builds its own small pipeline, does the wrong thing and the right thing,
and prints what happened, so the claims on the page are checked by running this file.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from interpose import (
    AbortTurn,
    Approval,
    ApprovalRequest,
    Event,
    HardAbort,
    LLMContext,
    LLMRequest,
    LLMResponse,
    MessageBeforeInput,
    MessageBeforeOutput,
    MessageContext,
    MiddlewareError,
    Pipeline,
    RegistrationError,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolContext,
    ToolResult,
)

CallNext = Callable[[], Awaitable[None]]
# this file makes handlers fail on purpose: keep their warnings out of the output
logging.getLogger("interpose").disabled = True


def echo(args: dict[str, Any]) -> str:
    """A tool that returns its arguments as text."""
    return f"ran with {args}"


# -- 1. per-call state on a middleware instance ---------------------------------------------
class CallTracker:
    """Don't: remembers the current call on the instance, shared by concurrent calls."""

    def __init__(self) -> None:
        self.current = ""

    async def __call__(self, ctx: ToolContext, call_next: CallNext) -> None:
        self.current = ctx.call_id
        await call_next()
        print(f"  don't: instance says {self.current}, the call was {ctx.call_id}")


async def track_call(ctx: ToolContext, call_next: CallNext) -> None:
    """Do: per-call state in a local (or in ctx.state)."""
    current = ctx.call_id
    await call_next()
    print(f"  do:    local says {current}, the call was {ctx.call_id}")


async def two_overlapping_calls(
    middleware: Callable[[ToolContext, CallNext], Awaitable[None]],
) -> None:
    pipe = Pipeline(builtins=False)
    pipe.middleware("tool")(middleware)
    second_started = anyio.Event()

    async def slow(args: dict[str, Any]) -> str:
        await second_started.wait()  # the first call is still running...
        return "slow"

    async def fast(args: dict[str, Any]) -> str:
        second_started.set()  # ...when the second one starts
        return "fast"

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: pipe.call_tool("read", {}, call=slow, call_id="A"))
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(lambda: pipe.call_tool("read", {}, call=fast, call_id="B"))


async def per_call_state() -> None:
    print("1. per-call state")
    await two_overlapping_calls(CallTracker())
    await two_overlapping_calls(track_call)


# -- 2. forgetting call_next() ----------------------------------------------------------------
async def forgot_call_next() -> None:
    print("2. forgetting call_next()")
    pipe = Pipeline(builtins=False)

    @pipe.middleware("tool", id="forgetful")
    async def forgetful(ctx: ToolContext, call_next: CallNext) -> None:
        pass  # neither call_next() nor ctx.result

    result = await pipe.call_tool("read", {}, call=echo)
    print(f"  tool stage: {result.status}, decided_by={result.details['decided_by']}")

    pipe = Pipeline(builtins=False)

    @pipe.middleware("llm", id="forgetful-llm")
    async def forgetful_llm(ctx: LLMContext, call_next: CallNext) -> None:
        pass  # neither call_next() nor ctx.response

    async with pipe.turn() as turn:
        try:
            await turn.call_llm(LLMRequest(), call=lambda request: LLMResponse(content="hi"))
        except MiddlewareError as exc:
            print(f"  llm stage: raised {type(exc).__name__} (stage={exc.stage!r})")

    pipe = Pipeline(builtins=False)

    @pipe.middleware("message", id="forgetful-message")
    async def forgetful_message(ctx: MessageContext, call_next: CallNext) -> None:
        pass

    @pipe.intercept("message.before", id="redact")
    def redact(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        out.message = out.message.replace("hunter2", "***")

    async with pipe.turn() as turn:
        msg = await turn.message("my password is hunter2")
    print(f"  message stage, silently: {msg.message!r} (the redact interceptor never ran)")


# -- 3. catching Exception around call_next() ------------------------------------------------
async def swallow_everything(ctx: ToolContext, call_next: CallNext) -> None:
    """Don't: AbortTurn and HardAbort are Exceptions too."""
    try:
        await call_next()
    except Exception:
        ctx.result = ToolResult(output="fallback", is_error=True, status="error")


async def fallback_on_errors(ctx: ToolContext, call_next: CallNext) -> None:
    """Do: let the decisions through."""
    try:
        await call_next()
    except (AbortTurn, HardAbort):
        raise
    except Exception:
        ctx.result = ToolResult(output="fallback", is_error=True, status="error")


async def swallowed_abort() -> None:
    print("3. except Exception around call_next()")
    for label, middleware in (("don't:", swallow_everything), ("do:   ", fallback_on_errors)):
        pipe = Pipeline(builtins=False)
        pipe.middleware("tool")(middleware)

        @pipe.intercept("tool.before", id="stop")
        def stop(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
            raise AbortTurn("the user pressed stop")

        async with pipe.turn() as turn:
            await turn.call_tool("read", {}, call=echo)
        print(f"  {label} turn aborted={turn.aborted}")


# -- 4. slow sync handlers ---------------------------------------------------------------------
async def slow_sync_handler() -> None:
    print("4. slow sync handlers")
    ticks = 0

    async def heartbeat() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", tools=["read"], timeout=0.05, id="sync-lookup")
    def sync_lookup(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        time.sleep(0.2)  # don't: blocks the event loop, and cannot be timed out

    @pipe.intercept("tool.before", tools=["write"], timeout=0.05, id="async-lookup")
    async def async_lookup(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        await anyio.sleep(0.2)  # do: other tasks run meanwhile, and the timeout applies

    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat)
        await anyio.sleep(0.02)
        before = ticks
        result = await pipe.call_tool("read", {}, call=echo)
        print(f"  don't: {result.status} after 0.2 s (timeout 0.05), ticks: {ticks - before}")
        before = ticks
        result = await pipe.call_tool("write", {}, call=echo)
        print(f"  do:    {result.status} (timed out), heartbeat kept ticking: {ticks > before}")
        tg.cancel_scope.cancel()


# -- 5. trusted responders ---------------------------------------------------------------------
async def trusted_responder() -> None:
    print("5. trusted responders")
    for trusted in (True, False):
        pipe = Pipeline(builtins=False)

        @pipe.approver(tools=["exec"], id="no-rm")
        def no_rm(req: ApprovalRequest) -> Approval:
            if "rm " in req.args["command"]:
                return Approval.deny("rm needs review")
            return Approval.allow()

        def simulate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
            out.result = f"(simulated) {out.args['command']}: done"  # answers *anything*

        pipe.intercept("tool.before", tools=["exec"], id="simulator", trusted=trusted)(simulate)
        result = await pipe.call_tool("exec", {"command": "rm -rf build"}, call=echo)
        label = "don't: trusted  " if trusted else "do:    untrusted"
        print(f"  {label} simulator -> {result.status}")


# -- 6. retry without max_retries ---------------------------------------------------------------
async def fetch_flaky(max_retries: int) -> tuple[ToolResult, int]:
    """Call a tool that fails twice, with a tool.after that asks for a retry on errors."""
    runs: list[int] = []

    def flaky(args: dict[str, Any]) -> str:
        runs.append(1)
        if len(runs) < 3:
            raise ConnectionError("try again")
        return "ok"

    pipe = Pipeline(builtins=False, max_retries=max_retries)

    @pipe.intercept("tool.after", tools=["web_fetch"], id="retry-errors")
    def retry_errors(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.retry = out.result.is_error

    result = await pipe.call_tool("web_fetch", {}, call=flaky)
    return result, len(runs)


async def retry_needs_max_retries() -> None:
    print("6. retry")
    result, runs = await fetch_flaky(max_retries=0)
    print(f"  don't: max_retries=0: {result.status} after {runs} run(s)")
    result, runs = await fetch_flaky(max_retries=2)
    print(f"  do:    max_retries=2: {result.status} after {runs} run(s)")


# -- 7. unanchored regex matchers --------------------------------------------------------------
async def unanchored_regex() -> None:
    print("7. regex matchers are searched")
    pipe = Pipeline(builtins=False)
    pipe.register_tool("spreadsheet")

    def noop(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        pass

    pipe.intercept("tool.before", tools="read", id="loose")(noop)
    pipe.intercept("tool.before", tools=["read"], id="exact")(noop)
    pipe.intercept("tool.before", tools=re.compile(r"^read$"), id="anchored")(noop)
    ids = [reg.id for reg in pipe.registry.get("tool.before", tool="spreadsheet")]
    print(f"  don't: tools='read' also applies to spreadsheet: {ids}")
    try:
        pipe.intercept("tool.before", tools=["deploy"], id="too-early")(noop)
    except RegistrationError:
        print("  don't: name an application tool before register_tool(): RegistrationError")


# -- 8. the frozen input -------------------------------------------------------------------------
async def frozen_input() -> None:
    print("8. inputs are frozen")
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", id="rename")
    def rename(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        inp.tool_name = "write"  # type: ignore[misc]  # don't: the input is read-only

    result = await pipe.call_tool("read", {}, call=echo)
    print(f"  don't: {result.status}: {result.output['reason']}")


# -- 9. reading observer results too early -------------------------------------------------------
async def observers_after_drain() -> None:
    print("9. observers run after the fact")
    pipe = Pipeline(builtins=False)
    seen: list[str] = []

    async def record(event: Event) -> None:
        seen.append(event.kind)

    pipe.subscribe(record, events={"tool_exec_end"})
    async with pipe:
        for _ in range(3):
            await pipe.call_tool("read", {}, call=echo)
        inside = len(seen)
    print(f"  don't: read inside `async with pipe` (saw {inside} so far, no guarantee)")
    print(f"  do:    read after it: {len(seen)} events")


# -- 10. a human-approval handler that waits in sync code ---------------------------------------
def sync_prompt(request: ApprovalRequest, reason: str) -> bool:
    """Don't: waits for a person in sync code (think ``input()``)."""
    time.sleep(0.2)  # blocks the event loop, and approval_timeout cannot interrupt it
    return True


async def async_prompt(request: ApprovalRequest, reason: str) -> bool:
    """Do: waits for a person with ``await`` (think a chat message and its reply)."""
    await anyio.sleep(0.2)  # other tasks run meanwhile, and approval_timeout applies
    return True


async def waiting_human_approval() -> None:
    print("10. human approval that waits")
    handlers: tuple[tuple[str, Callable[[ApprovalRequest, str], Any]], ...] = (
        ("don't: sync ", sync_prompt),
        ("do:    async", async_prompt),
    )
    for label, handler in handlers:
        pipe = Pipeline(builtins=False, human_approval=handler, approval_timeout=0.05)

        @pipe.approver(tools=["exec"], id="ask-first")
        def ask_first(req: ApprovalRequest) -> Approval:
            return Approval.ask("a person must confirm")

        result = await pipe.call_tool("exec", {"command": "deploy"}, call=echo)
        print(f"  {label} handler answering after 0.2 s (timeout 0.05): {result.status}")


async def main() -> None:
    await per_call_state()
    await forgot_call_next()
    await swallowed_abort()
    await slow_sync_handler()
    await trusted_responder()
    await retry_needs_max_retries()
    await unanchored_regex()
    await frozen_input()
    await observers_after_drain()
    await waiting_human_approval()


if __name__ == "__main__":
    anyio.run(main)
