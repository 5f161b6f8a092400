"""The chain compiler and the flat loops that run compiled chains.

A chain is compiled once per (stage, tool, agent) and registry version.  Each hook's
handlers become a tuple of plain callables: a sync handler is stored as itself, an async
handler as itself when it has no timeout, or as a small wrapper that runs it up to its
first suspension and arms its deadline only if it suspends (see
``_deadline_on_suspend``).  Calling any of them returns None (a sync handler, or a
wrapped one that finished without suspending) or an awaitable, so the per-call loop is
the same for all::

    for fn in fns:
        r = fn(inp, out)
        if r is not None:
            await r

No per-step bookkeeping is done on the happy path: when a handler raises, its position
is recovered from the iterator (``len(fns) - length_hint(it) - 1``) and the loop resumes
from the next handler if the policy says so.
"""

from __future__ import annotations

import asyncio
import functools
import math
import sys
import time
import types
from asyncio.events import _get_running_loop
from collections.abc import Awaitable, Callable, Coroutine, Generator, Sequence
from inspect import isawaitable
from operator import length_hint
from time import perf_counter_ns
from types import CoroutineType
from typing import Any

import anyio

from ..errors import AbortTurn, HardAbort, MiddlewareError
from .hooks import OnError
from .payloads import ToolResult, error_result
from .registry import Entry

__all__ = [
    "Failure",
    "Step",
    "Timings",
    "build_onion",
    "compile_steps",
    "describe",
    "invoke",
    "run_after",
    "run_gate",
    "run_gate_sync",
    "run_plain",
]

_ABORTS = (AbortTurn, HardAbort)


class Step:
    """One compiled registration: what the loops need on failure, and for reports."""

    __slots__ = ("call", "hook", "id", "is_async", "on_error", "priority", "timeout", "trusted")

    def __init__(self, entry: Entry[Any], timeout: float | None, *, wrap: bool = True) -> None:
        reg = entry.reg
        self.id: str = reg.id
        self.hook: str = entry.key
        self.priority: int = reg.priority
        self.on_error: OnError = entry.on_error
        self.is_async: bool = entry.is_async
        # math.inf: the handler bounds its own waits (a process hook's timer), so it
        # gets no cancel scope, which would cost every call several microseconds
        self.timeout = None if timeout == math.inf else timeout
        self.trusted: bool = getattr(reg, "trusted", False)
        fn = reg.handler
        if wrap and entry.is_async and self.timeout is not None:
            # approvers answer by returning; the other hooks' return values are unused
            fn = _deadline_on_suspend(fn, self.timeout, keep=entry.key == "tool.approve")
        self.call: Callable[..., Any] = fn

    def __repr__(self) -> str:
        return f"<Step {self.id!r} on {self.hook} priority={self.priority}>"


# A timeout costs only the handlers that wait.  Entering a cancel scope costs several
# microseconds, while most async handlers are checks that finish without suspending.
# So, under asyncio, the wrapper runs the handler's coroutine up to its first
# suspension itself: a handler that finishes there has run completely, synchronously,
# inside the call of the wrapper, and no deadline was armed (the loops then see None,
# as from a sync handler; an approver's answer comes back as a plain value).  A handler
# that suspends gets its deadline armed at that moment, ``seconds`` from its first
# suspension (what ran before could not have been interrupted anyway), and the rest of
# it is awaited by ``_finish``.
#
# The deadline is a timer on the event loop that cancels the task, as
# ``asyncio.timeout`` does, rather than a cancel scope: a scope entered at the first
# suspension would be entered *inside* whatever scopes the handler opened before it
# suspended (``anyio.sleep`` under trio opens one), which breaks their nesting.  Trio
# has no way to cancel a task but a scope that encloses the code, so under trio (and any
# other event loop) the handler runs inside ``anyio.fail_after`` from its start, as it
# always did.  Either way the caller sees what ``with fail_after(seconds): await
# fn(...)`` would give it: the handler's exceptions, the cancellation of an outer scope,
# or a ``TimeoutError`` when the deadline passed.


def _no_loop() -> None:
    return None


# The running asyncio loop, or None (under trio): a C function, cheap to call per
# handler.  Python 3.10 has no Task.uncancel, which _finish needs: it always falls back.
_running_asyncio_loop: Callable[[], object] = (
    _get_running_loop if sys.version_info >= (3, 11) else _no_loop
)


def _deadline_on_suspend(
    fn: Callable[..., Awaitable[Any]], seconds: float, *, keep: bool
) -> Callable[..., Any]:
    if keep:  # an approver: fn(request), whose return value is its answer

        def answer(request: Any) -> Any:
            coro = fn(request)
            if type(coro) is not CoroutineType or _running_asyncio_loop() is None:
                return _await_within(coro, seconds)
            try:
                first = coro.send(None)
            except StopIteration as done:
                return done.value
            return _finish(coro, first, seconds)

        return answer

    def intercept(inp: Any, out: Any) -> Any:
        coro = fn(inp, out)
        if type(coro) is not CoroutineType or _running_asyncio_loop() is None:
            return _await_within(coro, seconds)
        # next() with a default, through the coroutine's iterator: a coroutine that
        # returns None finishes without a StopIteration being raised and caught
        step = coro.__await__()
        first = next(step, _DONE)
        if first is _DONE:
            return None
        return _finish(step, first, seconds)

    return intercept


_DONE: Any = object()


async def _await_within(awaitable: Awaitable[Any], seconds: float) -> Any:
    with anyio.fail_after(seconds):
        return await awaitable


@types.coroutine
def _finish(
    coro: Coroutine[Any, Any, Any] | Generator[Any, Any, Any], first: Any, seconds: float
) -> Generator[Any, Any, Any]:
    """Await the rest of ``coro``, which has just yielded ``first`` to the asyncio event
    loop, with a timer that cancels the task ``seconds`` from now: the delegation
    ``await`` would do, inside ``asyncio.timeout(seconds)``.

    Raises:
        TimeoutError: the deadline passed before ``coro`` finished.
    """
    # Task.cancelling/uncancel are 3.11's (the wrappers use _finish only there)
    task: Any = asyncio.current_task()
    loop = task.get_loop()
    cancelling = task.cancelling()
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    timer = loop.call_at(loop.time() + seconds, expire)
    yielded = first
    try:
        while True:
            try:
                sent = yield yielded
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # a cancellation, thrown in by the event loop
                try:
                    yielded = coro.throw(exc)
                except StopIteration as done:
                    return done.value
            else:
                try:
                    yielded = coro.send(sent)
                except StopIteration as done:
                    return done.value
    except asyncio.CancelledError:
        # ours if the timer fired and no other cancellation is pending (asyncio.timeout)
        if expired and task.uncancel() <= cancelling:
            raise TimeoutError from None
        raise
    finally:
        timer.cancel()


def compile_steps(
    entries: Sequence[Entry[Any]], default_timeout: float | None, *, wrap: bool = True
) -> tuple[tuple[Callable[..., Any], ...], tuple[Step, ...]]:
    """Compile entries into (callables, steps), both in execution order.

    ``wrap=False`` leaves timeouts to the caller (middleware layers apply their own).
    """
    steps = tuple(
        Step(e, e.reg.timeout if e.reg.timeout is not None else default_timeout, wrap=wrap)
        for e in entries
    )
    return tuple(s.call for s in steps), steps


def describe(exc: BaseException, step: Step) -> str:
    """What a step's failure was, for logs, events and refusals."""
    if isinstance(exc, TimeoutError) and step.timeout is not None and not str(exc):
        return f"TimeoutError: timed out after {step.timeout}s"
    return f"{type(exc).__name__}: {exc}"


# Called as failed(step, exc, inp, out) when a step raised: records the failure, applies
# 'block' to the output, returns the policy; re-raises the exception for 'raise'.
Failure = Callable[[Step, Exception, Any, Any], Awaitable[OnError]]


# (registration id, wall time in ns) of each handler that ran, in order
Timings = list[tuple[str, int]]


async def run_plain(
    fns: tuple[Callable[..., Any], ...],
    steps: tuple[Step, ...],
    inp: Any,
    out: Any,
    failed: Failure,
    times: Timings | None = None,
) -> Step | None:
    """Run every handler in order; returns the step whose failure asks to block, if any.

    With ``times``, appends each handler's (id, duration) to it.
    """
    it = iter(fns)
    start = 0
    while True:
        try:
            if times is not None:
                for fn in it:
                    start = perf_counter_ns()
                    r = fn(inp, out)
                    if r is not None:
                        await r
                    times.append(
                        (steps[len(fns) - length_hint(it) - 1].id, perf_counter_ns() - start)
                    )
            else:
                for fn in it:
                    r = fn(inp, out)
                    if r is not None:
                        await r
            return None
        except _ABORTS as exc:
            step = steps[len(fns) - length_hint(it) - 1]
            if times is not None:
                times.append((step.id, perf_counter_ns() - start))
            exc.source = exc.source or step.id
            raise
        except Exception as exc:
            step = steps[len(fns) - length_hint(it) - 1]
            if times is not None:
                times.append((step.id, perf_counter_ns() - start))
            if await failed(step, exc, inp, out) == "block":
                return step


async def run_after(
    fns: tuple[Callable[..., Any], ...],
    steps: tuple[Step, ...],
    inp: Any,
    out: Any,
    failed: Failure,
    times: Timings | None = None,
) -> Step | None:
    """``run_plain`` for tool.after: a plain value a handler assigns to ``out.result``
    (not a ``ToolResult``) becomes the output of the result it replaced, which keeps its
    status, is_error and details -- before the next handler looks, so every handler
    (a redactor, a process hook) sees a ``ToolResult``.

    Checking costs an identity comparison per handler (the result is normally left
    where it was).  Returns the step whose failure asks to block, if any.
    """
    it = iter(fns)
    last: ToolResult = out.result
    start = 0
    while True:
        try:
            if times is not None:
                for fn in it:
                    if out.result is not last:
                        last = _settle_result(out, last)
                    start = perf_counter_ns()
                    r = fn(inp, out)
                    if r is not None:
                        await r
                    times.append(
                        (steps[len(fns) - length_hint(it) - 1].id, perf_counter_ns() - start)
                    )
            else:
                for fn in it:
                    if out.result is not last:
                        last = _settle_result(out, last)
                    r = fn(inp, out)
                    if r is not None:
                        await r
            if out.result is not last:
                _settle_result(out, last)
            return None
        except _ABORTS as exc:
            step = steps[len(fns) - length_hint(it) - 1]
            if times is not None:
                times.append((step.id, perf_counter_ns() - start))
            exc.source = exc.source or step.id
            raise
        except Exception as exc:
            step = steps[len(fns) - length_hint(it) - 1]
            if times is not None:
                times.append((step.id, perf_counter_ns() - start))
            if await failed(step, exc, inp, out) == "block":
                return step


def _settle_result(out: Any, last: ToolResult) -> ToolResult:
    """``out.result`` changed from ``last``: keep it if it is a ToolResult, else make the
    value the output of a copy of ``last``.  Returns the result now in ``out``."""
    value = out.result
    if not isinstance(value, ToolResult):
        value = out.result = ToolResult(
            output=value, is_error=last.is_error, status=last.status, details=dict(last.details)
        )
    return value


async def run_gate(
    fns: tuple[Callable[..., Any], ...],
    steps: tuple[Step, ...],
    inp: Any,
    out: Any,
    failed: Failure,
    track: bool = False,
    times: Timings | None = None,
) -> tuple[Step | None, Step | None]:
    """Run before-handlers on an output with ``block``; stop at the first block.

    Returns (blocker, responder): the step that blocked (or whose failure blocked) and,
    with ``track`` (the output has a ``result``), the last step that set
    ``out.result``.  Tracking costs a comparison per step, so callers ask for it only
    when the responder matters (trusted responders ahead of approvers, or listeners).
    With ``times`` (which implies ``track``), appends each handler's (id, duration).
    """
    it = iter(fns)
    responder: Step | None = None
    seen = out.result if track or times is not None else None
    start = 0
    while True:
        try:
            if times is not None:
                for fn in it:
                    start = perf_counter_ns()
                    r = fn(inp, out)
                    if r is not None:
                        await r
                    step = steps[len(fns) - length_hint(it) - 1]
                    times.append((step.id, perf_counter_ns() - start))
                    if out.block:
                        return step, responder
                    if out.result is not seen:
                        seen = out.result
                        responder = step
            elif track:
                for fn in it:
                    r = fn(inp, out)
                    if r is not None:
                        await r
                    if out.block:
                        return steps[len(fns) - length_hint(it) - 1], responder
                    if out.result is not seen:
                        seen = out.result
                        responder = steps[len(fns) - length_hint(it) - 1]
            else:
                for fn in it:
                    r = fn(inp, out)
                    if r is not None:
                        await r
                    if out.block:
                        return steps[len(fns) - length_hint(it) - 1], responder
            return None, responder
        except _ABORTS as exc:
            step = steps[len(fns) - length_hint(it) - 1]
            if times is not None:
                times.append((step.id, perf_counter_ns() - start))
            exc.source = exc.source or step.id
            raise
        except Exception as exc:
            step = steps[len(fns) - length_hint(it) - 1]
            if times is not None:
                times.append((step.id, perf_counter_ns() - start))
            if await failed(step, exc, inp, out) == "block":
                return step, responder


def run_gate_sync(
    fns: tuple[Callable[..., Any], ...],
    steps: tuple[Step, ...],
    inp: Any,
    out: Any,
    settle: Callable[[Step, Exception, Any, Any], OnError],
) -> Step | None:
    """``run_gate`` for chains of sync handlers only, with nobody listening: no coroutine,
    no responder tracking; ``settle`` applies a failed step's policy synchronously.

    Returns the step that blocked (or whose failure blocked), if any.
    """
    it = iter(fns)
    while True:
        try:
            for fn in it:
                if fn(inp, out) is not None:
                    raise TypeError(
                        "a sync handler returned a value; interceptors mutate their output "
                        "and return None (declare it `async def` if it awaits)"
                    )
                if out.block:
                    return steps[len(fns) - length_hint(it) - 1]
            return None
        except _ABORTS as exc:
            exc.source = exc.source or steps[len(fns) - length_hint(it) - 1].id
            raise
        except Exception as exc:
            step = steps[len(fns) - length_hint(it) - 1]
            if settle(step, exc, inp, out) == "block":
                return step


# -- the middleware onion -------------------------------------------------------------

App = Callable[[Any], Awaitable[None]]
LayerFailure = Callable[[Step, Exception, Any], Awaitable[OnError]]


def _plain_layer(fn: Callable[..., Any], inner: App) -> App:
    # on_error="raise" and no timeout: nothing to guard, so no extra coroutine frame
    def layer(ctx: Any) -> Awaitable[None]:
        return fn(ctx, functools.partial(inner, ctx))  # type: ignore[no-any-return]

    return layer


# An exception that leaves the inner layers or the core has had its policy applied
# already (an on_error="raise" failure, a bad argument, the LLM call's own error): an
# outer guarded layer lets it through unchanged instead of applying its own policy to
# it.  The one that is passing through is noted on the context (a slot set only on the
# way out, so calls that do not fail pay nothing), and the layer compares identities.


def _escapes(ctx: Any, exc: BaseException) -> None:
    ctx._escaping = exc


def _escaping(ctx: Any) -> BaseException | None:
    return getattr(ctx, "_escaping", None)


def _marked_core(core: App) -> App:
    async def marked(ctx: Any) -> None:
        try:
            await core(ctx)
        except Exception as exc:
            _escapes(ctx, exc)
            raise

    return marked


# A guarded layer must know whether its middleware called ``call_next()``: one that
# fails after calling it must not run the rest of the onion again under "skip", and one
# that returns without calling it must have set the result.  Rather than a closure per
# layer per call that flags the call, every layer notes its position on the context
# when it is entered (``ctx._reached``, one slot store), and so does the core: after
# ``fn`` returns or raises, a position beyond the layer's own means something inside
# ran.  A layer entered again (an outer layer that calls ``call_next()`` twice) notes
# its position again first.


def _guarded_layer(step: Step, inner: App, failed: LayerFailure, index: int) -> App:
    fn, timeout = step.call, step.timeout

    async def settle(ctx: Any, exc: Exception) -> None:
        if exc is _escaping(ctx):
            raise exc  # from inside: its policy was applied there
        called = ctx._reached > index
        try:
            policy = await failed(step, exc, ctx)
        except Exception as raised:  # on_error="raise": on to the caller as itself
            _escapes(ctx, raised)
            raise
        # "skip": the layer counts as absent, so the rest of the onion still runs
        if policy == "skip" and not called:
            await inner(ctx)

    if timeout is None:

        async def layer(ctx: Any) -> None:
            ctx._reached = index
            try:
                await fn(ctx, functools.partial(inner, ctx))
                if ctx._reached == index and not ctx.has_result():
                    raise MiddlewareError(ctx.stage)
            except _ABORTS as exc:
                exc.source = exc.source or step.id
                raise
            except Exception as exc:
                await settle(ctx, exc)

        return layer

    async def timed_layer(ctx: Any) -> None:
        ctx._reached = index
        try:
            with anyio.fail_after(timeout):
                await fn(ctx, functools.partial(inner, ctx))
            if ctx._reached == index and not ctx.has_result():
                raise MiddlewareError(ctx.stage)
        except _ABORTS as exc:
            exc.source = exc.source or step.id
            raise
        except Exception as exc:
            await settle(ctx, exc)

    return timed_layer


def _entered(core: App, index: int) -> App:
    # the core notes its position too, for the guarded layer just outside it
    def enter(ctx: Any) -> Awaitable[None]:
        ctx._reached = index
        return core(ctx)

    return enter


def _marked_plain_layer(fn: Callable[..., Any], inner: App, index: int) -> App:
    # a plain layer inside a guarded one: its failures reach the caller ("raise"), so
    # the guarded layer around it must know them from its own
    async def layer(ctx: Any) -> None:
        ctx._reached = index
        try:
            await fn(ctx, functools.partial(inner, ctx))
        except Exception as exc:
            _escapes(ctx, exc)
            raise

    return layer


def build_onion(
    steps: Sequence[Step], core: App, failed: LayerFailure, *, core_marks: bool = False
) -> App:
    """Wrap ``core`` in the middleware ``steps`` (outermost first) and return the app.

    A layer with ``on_error="raise"`` and no timeout runs unguarded.  Guarded layers
    apply their policy only to what their own code raised: whatever comes out of
    ``call_next()`` goes on unchanged.  For that, the core notes on the context the
    exception it lets out (``core_marks``: it does so itself; otherwise it is wrapped
    when some layer is guarded), and so do plain layers inside a guarded one.
    """
    guarded = [not (s.on_error == "raise" and s.timeout is None) for s in steps]
    app = core if core_marks or not any(guarded) else _marked_core(core)
    if any(guarded):
        app = _entered(app, len(steps))
    for i in reversed(range(len(steps))):
        if guarded[i]:
            app = _guarded_layer(steps[i], app, failed, i)
        elif any(guarded[:i]):
            app = _marked_plain_layer(steps[i].call, app, i)
        else:
            app = _plain_layer(steps[i].call, app)
    return app


async def invoke(call: Callable[[Any], Any], args: Any) -> tuple[ToolResult, int]:
    """Run an operation (sync or async), timing it; an exception becomes an error result.

    Returns (result, duration in ns).  Aborts propagate.
    """
    start = time.perf_counter_ns()
    try:
        out = call(args)
        if isawaitable(out):
            out = await out
    except _ABORTS:
        raise
    except Exception as exc:
        result = error_result(exc)
    else:
        result = ToolResult(output=out)
    return result, time.perf_counter_ns() - start
