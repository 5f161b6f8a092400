"""The chain compiler and the flat loops that run compiled chains.

A chain is compiled once per (stage, tool, agent) and registry version.  Each hook's
handlers become a tuple of plain callables: a sync handler is stored as itself, an async
handler as itself too (its timeout, if it has one, is given by a ``Watch`` around the
loop under asyncio, or by a wrapper elsewhere: see ``Watch``), an async approver with a
timeout as a small wrapper that runs it up to its first suspension and arms its deadline
only if it suspends (``_deadline_on_suspend``).  Calling any of them returns None (a
sync handler, or a wrapped one that finished without suspending) or an awaitable, so
the per-call loop is the same for all::

    for fn in fns:
        r = fn(inp, out)
        if r is not None:
            await r

No per-step bookkeeping is done on the happy path: when a handler raises, its position
is recovered from the iterator (``len(fns) - length_hint(it) - 1``) and the loop resumes
from the next handler if the policy says so.
"""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Sequence
from inspect import isawaitable
from operator import length_hint
from time import perf_counter_ns
from types import CoroutineType
from typing import Any

from ..errors import AbortTurn, HardAbort
from .deadlines import Watch, deadline_on_suspend, running_asyncio_loop
from .hooks import OnError
from .payloads import ToolResult, error_result
from .registry import Entry

__all__ = [
    "Failure",
    "Step",
    "Timings",
    "Watched",
    "any_async",
    "any_watched",
    "callables",
    "compile_steps",
    "describe",
    "invoke",
    "run_after_sync",
    "run_gate",
    "run_gate_sync",
    "run_plain",
]

_ABORTS = (AbortTurn, HardAbort)


class Step:
    """One compiled registration: what the loops need on failure, and for reports."""

    __slots__ = (
        "call",
        "handler",
        "hook",
        "id",
        "is_async",
        "on_error",
        "portable",
        "priority",
        "timeout",
        "trusted",
        "watched",
    )

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
        self.handler: Callable[..., Any] = fn  # as registered: what a failure report names
        # an async handler with a timeout, run by the loops below: under asyncio the
        # loop awaits it as it is and a Watch gives it its deadline if it suspends
        # (see run_watched); elsewhere (trio) it runs as ``portable``
        self.watched = (
            wrap and entry.is_async and self.timeout is not None and entry.key != "tool.approve"
        )
        self.portable: Callable[..., Any] = fn
        if wrap and entry.is_async and self.timeout is not None:
            # approvers answer by returning; the other hooks' return values are unused
            wrapped = deadline_on_suspend(fn, self.timeout, keep=entry.key == "tool.approve")
            self.portable = wrapped
            if not self.watched:
                fn = wrapped
        self.call: Callable[..., Any] = fn

    def __repr__(self) -> str:
        return f"<Step {self.id!r} on {self.hook} priority={self.priority}>"


def compile_steps(
    entries: Sequence[Entry[Any]], default_timeout: float | None, *, wrap: bool = True
) -> tuple[tuple[Callable[..., Any], ...], tuple[Step, ...]]:
    """Compile entries into (callables, steps), both in execution order.

    ``wrap=False`` leaves timeouts to the caller (middleware layers apply their own).
    """
    # comprehensions and loops, not generators, on the compile path: a generator costs
    # ~40 ns an item, and a registry change recompiles every chain a call meets
    steps = tuple(
        [
            Step(e, e.reg.timeout if e.reg.timeout is not None else default_timeout, wrap=wrap)
            for e in entries
        ]
    )
    return callables(steps), steps


def any_async(steps: Sequence[Step]) -> bool:
    """Whether some step's handler is ``async def``."""
    for step in steps:  # noqa: SIM110 - a loop: any() over a generator costs 4x
        if step.is_async:
            return True
    return False


def any_watched(steps: Sequence[Step]) -> bool:
    """Whether some step's deadline is given by a ``Watch`` (``Step.watched``)."""
    for step in steps:  # noqa: SIM110 - a loop: any() over a generator costs 4x
        if step.watched:
            return True
    return False


def callables(steps: Sequence[Step]) -> tuple[Callable[..., Any], ...]:
    """The loops' tuple of ``steps``' callables: a ``Watched`` one when some handler's
    deadline is given by a ``Watch``."""
    fns = tuple([s.call for s in steps])
    if not any_watched(steps):
        return fns
    watched = Watched(fns)
    watched.portable = tuple([s.portable for s in steps])
    watched.awaited = all(s.is_async and s.call is s.handler for s in steps)
    return watched


class Watched(tuple):  # type: ignore[type-arg]
    """The callables of a chain with async handlers that have a timeout (as they are,
    for run_watched), and ``portable``: the same with those handlers wrapped to bound
    themselves, for event loops other than asyncio's.  ``awaited``: every handler is
    ``async def`` and called as it is, so the loops await each call without looking at
    what it returned (the async pair rows)."""

    portable: tuple[Callable[..., Any], ...]
    awaited: bool


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
    w: Watch | None = None,
) -> Step | None:
    """Run every handler in order; returns the step whose failure asks to block, if any.

    With ``times``, appends each handler's (id, duration) to it.
    """
    if w is None and type(fns) is Watched:
        if running_asyncio_loop() is None:
            fns = fns.portable
        else:
            w = Watch()
            w.loop = loop = run_plain(fns, steps, inp, out, failed, times, w)
            return await w.run(loop)  # type: ignore[no-any-return]
    it = iter(fns)
    if w is not None:
        w.it, w.steps = it, steps
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
            elif type(fns) is Watched and fns.awaited:
                for fn in it:
                    await fn(inp, out)
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
            if await _policy(failed, w, step, exc, inp, out) == "block":
                return step
        except BaseException as exc:
            if w is None or not w.timed_out(exc):
                raise
            step = steps[len(fns) - length_hint(it) - 1]
            if times is not None:
                times.append((step.id, perf_counter_ns() - start))
            if await _policy(failed, w, step, TimeoutError(), inp, out) == "block":
                return step


async def _policy(
    failed: Failure, w: Watch | None, step: Step, exc: Exception, inp: Any, out: Any
) -> OnError:
    """``failed(step, exc, inp, out)``, the failure policy of a step, with the loop's
    watch told that what its loop awaits now is no handler."""
    if w is None:
        return await failed(step, exc, inp, out)
    w.settling = True
    try:
        return await failed(step, exc, inp, out)
    finally:
        w.settling = False


def run_after_sync(
    fns: tuple[Callable[..., Any], ...],
    steps: tuple[Step, ...],
    inp: Any,
    out: Any,
    settle: Callable[[Step, Exception, Any, Any], OnError],
) -> Step | None:
    """``run_plain`` for chains of sync handlers only, with nobody listening (tool.after
    on the quiet path): no coroutine, no timing; ``settle`` applies a failed step's
    policy synchronously.

    Returns the step whose failure asks to block, if any.
    """
    it = iter(fns)
    while True:
        try:
            for fn in it:
                if fn(inp, out) is not None:
                    raise TypeError(_SYNC_RETURNED)
            return None
        except _ABORTS as exc:
            exc.source = exc.source or steps[len(fns) - length_hint(it) - 1].id
            raise
        except Exception as exc:
            step = steps[len(fns) - length_hint(it) - 1]
            if settle(step, exc, inp, out) == "block":
                return step


_SYNC_RETURNED = (
    "a sync handler returned a value; interceptors mutate their output "
    "and return None (declare it `async def` if it awaits)"
)


async def run_gate(
    fns: tuple[Callable[..., Any], ...],
    steps: tuple[Step, ...],
    inp: Any,
    out: Any,
    failed: Failure,
    track: bool = False,
    times: Timings | None = None,
    w: Watch | None = None,
) -> tuple[Step | None, Step | None]:
    """Run before-handlers on an output with ``block``; stop at the first block.

    Returns (blocker, responder): the step that blocked (or whose failure blocked) and,
    with ``track`` (the output has a ``result``), the last step that set
    ``out.result``.  Tracking costs a comparison per step, so callers ask for it only
    when the responder matters (trusted responders ahead of approvers, or listeners).
    With ``times`` (which implies ``track``), appends each handler's (id, duration).
    """
    if w is None and type(fns) is Watched:
        if running_asyncio_loop() is None:
            fns = fns.portable
        else:
            w = Watch()
            w.loop = loop = run_gate(fns, steps, inp, out, failed, track, times, w)
            return await w.run(loop)  # type: ignore[no-any-return]
    it = iter(fns)
    if w is not None:
        w.it, w.steps = it, steps
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
            elif type(fns) is Watched and fns.awaited:
                for fn in it:
                    await fn(inp, out)
                    if out.block:
                        return steps[len(fns) - length_hint(it) - 1], responder
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
            if await _policy(failed, w, step, exc, inp, out) == "block":
                return step, responder
        except BaseException as exc:
            if w is None or not w.timed_out(exc):
                raise
            step = steps[len(fns) - length_hint(it) - 1]
            if times is not None:
                times.append((step.id, perf_counter_ns() - start))
            if await _policy(failed, w, step, TimeoutError(), inp, out) == "block":
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
                    raise TypeError(_SYNC_RETURNED)
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


def run_gate_sync_tracked(
    fns: tuple[Callable[..., Any], ...],
    steps: tuple[Step, ...],
    inp: Any,
    out: Any,
    settle: Callable[[Step, Exception, Any, Any], OnError],
    times: Timings | None = None,
) -> tuple[Step | None, Step | None]:
    """``run_gate_sync`` that also names the step that responded (for the span of a
    traced call, for the events of an observed one) and, with ``times``, appends each
    handler's (id, duration): sync handlers without a coroutine (``settle`` publishes
    a failure at once).

    Returns (blocker, responder): the step that blocked (or whose failure blocked), and
    the last step that set ``out.result``.

    Raises:
        AbortTurn, HardAbort: raised by a handler (named as its source).
    """
    responder: Step | None = None
    seen = out.result
    start = 0
    for i, fn in enumerate(fns):
        if times is not None:
            start = perf_counter_ns()
        try:
            if fn(inp, out) is not None:
                raise TypeError(_SYNC_RETURNED)
        except _ABORTS as exc:
            if times is not None:
                times.append((steps[i].id, perf_counter_ns() - start))
            exc.source = exc.source or steps[i].id
            raise
        except Exception as exc:
            if times is not None:
                times.append((steps[i].id, perf_counter_ns() - start))
            if settle(steps[i], exc, inp, out) == "block":
                return steps[i], responder
            continue
        if times is not None:
            times.append((steps[i].id, perf_counter_ns() - start))
        if out.block:
            return steps[i], responder
        if out.result is not seen:
            seen = out.result
            responder = steps[i]
    return None, responder


async def invoke(call: Callable[[Any], Any], args: Any) -> tuple[ToolResult, int]:
    """Run an operation (sync or async), timing it; an exception becomes an error result.

    Returns (result, duration in ns).  Aborts propagate.
    """
    start = time.perf_counter_ns()
    try:
        out = call(args)
        if type(out) is CoroutineType or isawaitable(out):  # the common case first
            out = await out
    except _ABORTS:
        raise
    except Exception as exc:
        result = error_result(exc)
    else:
        result = ToolResult(output=out)
    return result, time.perf_counter_ns() - start
