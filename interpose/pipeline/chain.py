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

import asyncio
import math
import sys
import time
import types
import weakref
from asyncio.events import _get_running_loop
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator, Sequence
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
    "Watch",
    "Watched",
    "build_onion",
    "callables",
    "compile_steps",
    "describe",
    "invoke",
    "run_after",
    "run_after_sync",
    "run_gate",
    "run_gate_sync",
    "run_plain",
    "watch_here",
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
            wrapped = _deadline_on_suspend(fn, self.timeout, keep=entry.key == "tool.approve")
            self.portable = wrapped
            if not self.watched:
                fn = wrapped
        self.call: Callable[..., Any] = fn

    def __repr__(self) -> str:
        return f"<Step {self.id!r} on {self.hook} priority={self.priority}>"


# A timeout costs only the handlers that wait.  Entering a cancel scope costs several
# microseconds, while most async handlers are checks that finish without suspending.
# The loops' handlers get their deadlines from a ``Watch`` (below); approvers, and the
# loops' handlers on other event loops than asyncio's, from this wrapper.
# Under asyncio, the wrapper runs the handler's coroutine up to its first
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


# The loops below (run_plain, run_gate, run_after) give their async handlers' timeouts
# under asyncio without any wrapper: the loop awaits each handler's coroutine as it is,
# which is the cheapest way to run one, and a handler that finishes without suspending
# has cost nothing more than that (one store: ``w.r = r``).  What notices a suspension
# is one ``Watch`` per tool call (made by the tool stage for its tool.before and
# tool.after loops) or per run of another stage's loop: a generator between the loop's
# coroutine and the task, which steps the loop itself.  When the first step returns,
# nothing suspended and no deadline was armed: the watch cost one generator for the
# whole call.  When something suspends and the handler noted last has started and not
# finished, that handler is what waits (the loop awaits it): its deadline is armed
# then, ``timeout`` seconds from its first suspension.  Each handler has its own full
# timeout, counted from its own first suspension; a finished handler takes its deadline
# with it.
#
# The deadlines of every watch on an event loop share one timer (``_Alarm``), armed for
# the earliest and re-armed only when a new deadline comes before it: with the same
# default timeout everywhere, arming a deadline is a dict store.  When the timer rings,
# each watch whose handler is past its deadline cancels its task, as ``asyncio.timeout``
# does; the loop turns that cancellation, coming out of the handler, into a
# ``TimeoutError`` for the handler's policy, unless another cancellation is pending too
# (``Task.uncancel``), which then goes on as a cancellation.  Watches still waiting set
# the next ring.
#
# Trio has no timer that can cancel a task, only cancel scopes that enclose the code,
# and a scope entered at a handler's first suspension would nest inside whatever scopes
# the handler opened before it (``anyio.sleep`` opens one).  So on other event loops
# than asyncio's the loop runs the ``portable`` callables: each such handler inside
# ``anyio.fail_after`` from its start.


class Watch:
    """The deadlines of one run of a loop, or of a whole tool call: see above."""

    __slots__ = ("alarm", "armed", "cancelling", "deadline", "fired", "it", "r", "steps", "task")
    it: Iterator[Callable[..., Any]]  # the running loop's iterator: where it is
    steps: tuple[Step, ...]  # the running loop's steps
    deadline: float  # of the handler armed last
    task: Any
    cancelling: int  # the task's cancellation requests before its first deadline

    def __init__(self) -> None:
        self.r: Any = None  # the coroutine of the async handler a loop ran last
        self.armed: Any = None  # the one whose deadline is set
        self.fired: Any = None  # the one the alarm cancelled
        self.alarm: _Alarm | None = None  # set once a deadline was armed

    @types.coroutine
    def run(self, coro: Coroutine[Any, Any, Any]) -> Generator[Any, Any, Any]:
        """Await ``coro`` (a loop, or a tool call's core), arming deadlines as the
        handlers in it suspend."""
        try:
            yielded = coro.send(None)
        except StopIteration as done:  # nothing suspended: the common case
            return done.value
        try:
            while True:
                if self.r is not None and self.r is not self.armed:
                    self._arm()
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
        finally:
            if self.alarm is not None:
                self._done()

    def _arm(self) -> None:
        r = self.r
        # started and not finished: the loop awaits it, so it is what suspended
        if getattr(r, "cr_frame", None) is None:
            self.r = None  # it finished (or is not a coroutine): nothing to arm
            return
        self.armed = r
        step = self.steps[len(self.steps) - length_hint(self.it) - 1]
        if not step.watched or step.timeout is None:
            return
        loop = asyncio.get_running_loop()
        alarm = self.alarm
        if alarm is None:
            alarm = self.alarm = _alarm(loop)
            task: Any = asyncio.current_task()
            self.task = task
            self.cancelling = task.cancelling()
        self.deadline = deadline = loop.time() + step.timeout
        alarm.add(self, deadline, loop)

    def expire(self, now: float) -> float | None:
        """The alarm rang at ``now``: cancel the task if the armed handler is past its
        deadline.  Returns the deadline still to watch, or None."""
        if self.armed.cr_frame is None:  # it finished: nobody waits under a deadline
            return None
        if self.deadline > now:
            return self.deadline
        self.fired = self.armed
        self.task.cancel()
        return None

    def timed_out(self, exc: BaseException) -> bool:
        """Whether ``exc``, out of the handler a loop awaited, is the cancellation of
        its deadline (and no other cancellation is pending)."""
        if self.fired is None:
            return False
        self.fired = None
        return self.task.uncancel() <= self.cancelling and isinstance(exc, asyncio.CancelledError)

    def _done(self) -> None:
        alarm = self.alarm
        if alarm is not None:
            alarm.watches.pop(self, None)
            if self.fired is not None:
                # a handler swallowed its deadline's cancellation: take the request
                # back, as asyncio.timeout does, so that it does not linger on the task
                self.fired = None
                self.task.uncancel()


class _Alarm:
    """One timer per event loop for every watch with a deadline: armed for the earliest
    deadline, and re-armed only when a new deadline comes before it.  The default
    timeout is the same for every handler, so a new deadline almost always comes after
    the timer: arming one is then a dict store, not a new ``TimerHandle`` (whose
    creation, and its place in the loop's heap of timers, is most of what a timer
    costs).  It holds its loop weakly: the loop's entry in ``_alarms`` goes with it."""

    __slots__ = ("__weakref__", "loop", "timer", "watches", "when")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = weakref.ref(loop)
        self.timer: asyncio.TimerHandle | None = None
        self.when = math.inf
        self.watches: dict[Watch, None] = {}  # with a deadline armed, in no order

    def add(self, watch: Watch, deadline: float, loop: asyncio.AbstractEventLoop) -> None:
        self.watches[watch] = None
        if deadline < self.when:
            if self.timer is not None:
                self.timer.cancel()
            self.when = deadline
            self.timer = loop.call_at(deadline, self._ring)

    def _ring(self) -> None:
        self.timer = None
        self.when = math.inf
        loop = self.loop()
        if loop is None:  # pragma: no cover - a timer runs on a loop that exists
            return
        # the loop runs a timer up to one clock resolution early
        now = loop.time() + loop._clock_resolution  # type: ignore[attr-defined]
        nearest = math.inf
        for watch in list(self.watches):
            deadline = watch.expire(now)
            if deadline is None:
                del self.watches[watch]
            elif deadline < nearest:
                nearest = deadline
        if nearest < math.inf:
            self.when = nearest
            self.timer = loop.call_at(nearest, self._ring)


_alarms: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Alarm] = weakref.WeakKeyDictionary()
_last_alarm: _Alarm | None = None  # the alarm used last: most programs run one loop


def _alarm(loop: asyncio.AbstractEventLoop) -> _Alarm:
    """The alarm of ``loop``, the running event loop."""
    global _last_alarm
    alarm = _last_alarm
    if alarm is None or alarm.loop() is not loop:
        alarm = _alarms.get(loop)
        if alarm is None:
            alarm = _alarms[loop] = _Alarm(loop)
        _last_alarm = alarm
    return alarm


def watch_here() -> Watch | None:
    """A watch for a whole tool call under asyncio (``await watch.run(core)``, the
    watch passed to its loops), or None elsewhere."""
    return Watch() if _running_asyncio_loop() is not None else None


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
    return callables(steps), steps


def callables(steps: Sequence[Step]) -> tuple[Callable[..., Any], ...]:
    """The loops' tuple of ``steps``' callables: a ``Watched`` one when some handler's
    deadline is given by a ``Watch``."""
    fns = tuple(s.call for s in steps)
    if not any(s.watched for s in steps):
        return fns
    watched = Watched(fns)
    watched.portable = tuple(s.portable for s in steps)
    return watched


class Watched(tuple):  # type: ignore[type-arg]
    """The callables of a chain with async handlers that have a timeout (as they are,
    for run_watched), and ``portable``: the same with those handlers wrapped to bound
    themselves, for event loops other than asyncio's."""

    portable: tuple[Callable[..., Any], ...]


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
        if _running_asyncio_loop() is None:
            fns = fns.portable
        else:
            w = Watch()
            return await w.run(run_plain(fns, steps, inp, out, failed, times, w))  # type: ignore[no-any-return]
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
                        if w is not None:
                            w.r = r
                        await r
                    times.append(
                        (steps[len(fns) - length_hint(it) - 1].id, perf_counter_ns() - start)
                    )
            else:
                for fn in it:
                    r = fn(inp, out)
                    if r is not None:
                        if w is not None:
                            w.r = r
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
        except BaseException as exc:
            if w is None or not w.timed_out(exc):
                raise
            step = steps[len(fns) - length_hint(it) - 1]
            if times is not None:
                times.append((step.id, perf_counter_ns() - start))
            if await failed(step, TimeoutError(), inp, out) == "block":
                return step


async def run_after(
    fns: tuple[Callable[..., Any], ...],
    steps: tuple[Step, ...],
    inp: Any,
    out: Any,
    failed: Failure,
    times: Timings | None = None,
    w: Watch | None = None,
) -> Step | None:
    """``run_plain`` for tool.after: a plain value a handler assigns to ``out.result``
    (not a ``ToolResult``) becomes the output of the result it replaced, which keeps its
    status, is_error and details -- before the next handler looks, so every handler
    (a redactor, a process hook) sees a ``ToolResult``.

    Checking costs an identity comparison per handler (the result is normally left
    where it was).  Returns the step whose failure asks to block, if any.
    """
    if w is None and type(fns) is Watched:
        if _running_asyncio_loop() is None:
            fns = fns.portable
        else:
            w = Watch()
            return await w.run(run_after(fns, steps, inp, out, failed, times, w))  # type: ignore[no-any-return]
    it = iter(fns)
    if w is not None:
        w.it, w.steps = it, steps
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
                        if w is not None:
                            w.r = r
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
                        if w is not None:
                            w.r = r
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
        except BaseException as exc:
            if w is None or not w.timed_out(exc):
                raise
            step = steps[len(fns) - length_hint(it) - 1]
            if times is not None:
                times.append((step.id, perf_counter_ns() - start))
            if await failed(step, TimeoutError(), inp, out) == "block":
                return step


def run_after_sync(
    fns: tuple[Callable[..., Any], ...],
    steps: tuple[Step, ...],
    inp: Any,
    out: Any,
    settle: Callable[[Step, Exception, Any, Any], OnError],
) -> Step | None:
    """``run_after`` for chains of sync handlers only, with nobody listening: no
    coroutine, no timing; ``settle`` applies a failed step's policy synchronously.

    Returns the step whose failure asks to block, if any.
    """
    it = iter(fns)
    last: ToolResult = out.result
    while True:
        try:
            for fn in it:
                if out.result is not last:
                    last = _settle_result(out, last)
                if fn(inp, out) is not None:
                    raise TypeError(_SYNC_RETURNED)
            if out.result is not last:
                _settle_result(out, last)
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
        if _running_asyncio_loop() is None:
            fns = fns.portable
        else:
            w = Watch()
            return await w.run(run_gate(fns, steps, inp, out, failed, track, times, w))  # type: ignore[no-any-return]
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
                        if w is not None:
                            w.r = r
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
                        if w is not None:
                            w.r = r
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
                        if w is not None:
                            w.r = r
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
        except BaseException as exc:
            if w is None or not w.timed_out(exc):
                raise
            step = steps[len(fns) - length_hint(it) - 1]
            if times is not None:
                times.append((step.id, perf_counter_ns() - start))
            if await failed(step, TimeoutError(), inp, out) == "block":
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


# -- the middleware onion -------------------------------------------------------------
#
# A hand-written onion costs, per layer, one plain call (the next layer's function) and
# one coroutine (the layer's middleware).  The compiled onion keeps that shape while the
# user's API stays ``await call_next()``: a *frame* holds the call's context, and each
# layer's ``call_next`` is a plain function, built once per frame, that reads the
# context from the frame and *returns* the next layer's coroutine, which the
# middleware's own ``await`` then runs.  No closure, partial or wrapper coroutine is
# made per layer per call: a call takes a frame from the chain's pool, sets its
# context, and gives it back when it ends.
#
# A layer with ``on_error="raise"`` and no timeout, with no guarded layer outside it,
# costs exactly that.  A guarded layer (``block`` or ``skip``, or any timeout) must
# catch what its own middleware raises before the layer around it sees it, and resume
# that layer as if ``call_next()`` had returned: that takes a frame of its own between
# the two, so its ``call_next`` returns a small generator that runs the middleware's
# coroutine and settles its failures (``yield from``: the coroutine's suspensions go
# straight to the event loop).  Nothing else is done per layer: "did it call
# ``call_next()``" is one position noted on the frame when a layer is entered.
#
# An exception that leaves the inner layers or the core has had its policy applied
# already (an on_error="raise" failure, a bad argument, the LLM call's own error): an
# outer guarded layer lets it through unchanged instead of applying its own policy to
# it.  The one that is passing through is noted on the context (a slot set only on the
# way out, so calls that do not fail pay nothing), and the layer compares identities.
#
# ``call_next`` is valid while the middleware that received it runs (as in ASGI): a
# frame goes back to its pool when the call returns, so a ``call_next`` kept and called
# after that would run the onion of whichever call holds the frame then.  A call that
# ends with an exception does not give its frame back.

App = Callable[[Any], Awaitable[None]]
LayerFailure = Callable[[Step, Exception, Any], Awaitable[OnError]]
Entry_ = Callable[[], Any]

# frames kept per compiled onion for reuse: as many as calls of it ran at once, bounded
_POOL_LIMIT = 64


class _Frame:
    """One call's place in an onion: its context, and the position of the innermost
    layer entered (the core's is the number of layers), for the guarded layers."""

    __slots__ = ("ctx", "reached", "start")

    def __init__(self) -> None:
        self.ctx: Any = None
        self.reached = 0
        self.start: Entry_ = _never


def _never() -> Any:  # pragma: no cover - replaced when the frame is built
    raise RuntimeError("an onion frame used before it was built")


def _escapes(ctx: Any, exc: BaseException) -> None:
    ctx._escaping = exc


def _escaping(ctx: Any) -> BaseException | None:
    return getattr(ctx, "_escaping", None)


def _plain_entry(f: _Frame, fn: Callable[..., Any], inner: Entry_) -> Entry_:
    # the hand-written onion's layer: one call, and the middleware's coroutine
    def enter() -> Any:
        return fn(f.ctx, inner)

    return enter


def _core_entry(f: _Frame, core: App, index: int, marks: bool) -> Entry_:
    if index < 0:  # no guarded layer: nobody reads positions or escapes

        def run() -> Any:
            return core(f.ctx)

        return run
    if marks:  # the core notes what escapes it itself

        def enter() -> Any:
            f.reached = index
            return core(f.ctx)

        return enter

    @types.coroutine
    def marked() -> Generator[Any, Any, None]:
        f.reached = index
        ctx = f.ctx
        try:
            yield from core(ctx)  # type: ignore[misc]
        except Exception as exc:
            _escapes(ctx, exc)
            raise

    return marked


def _marked_entry(f: _Frame, fn: Callable[..., Any], inner: Entry_, index: int) -> Entry_:
    # a plain layer inside a guarded one: its failures reach the caller ("raise"), so
    # the guarded layer around it must know them from its own
    @types.coroutine
    def enter() -> Generator[Any, Any, None]:
        f.reached = index
        ctx = f.ctx
        try:
            yield from fn(ctx, inner)
        except Exception as exc:
            _escapes(ctx, exc)
            raise

    return enter


def _guarded_entry(
    f: _Frame, step: Step, inner: Entry_, failed: LayerFailure, index: int
) -> Entry_:
    fn, timeout = step.call, step.timeout

    @types.coroutine
    def settle(ctx: Any, exc: Exception) -> Generator[Any, Any, None]:
        if exc is _escaping(ctx):
            raise exc  # from inside: its policy was applied there
        called = f.reached > index
        try:
            policy = yield from failed(step, exc, ctx).__await__()
        except Exception as raised:  # on_error="raise": on to the caller as itself
            _escapes(ctx, raised)
            raise
        # "skip": the layer counts as absent, so the rest of the onion still runs
        if policy == "skip" and not called:
            yield from inner()

    if timeout is None:

        @types.coroutine
        def enter() -> Generator[Any, Any, None]:
            f.reached = index
            ctx = f.ctx
            try:
                yield from fn(ctx, inner)
                if f.reached == index and not ctx.has_result():
                    raise MiddlewareError(ctx.stage)
            except _ABORTS as exc:
                exc.source = exc.source or step.id
                raise
            except Exception as exc:
                yield from settle(ctx, exc)

        return enter

    @types.coroutine
    def timed() -> Generator[Any, Any, None]:
        f.reached = index
        ctx = f.ctx
        try:
            # the middleware's awaits are delegated through this generator
            with anyio.fail_after(timeout):  # noqa: ASYNC100
                yield from fn(ctx, inner)
            if f.reached == index and not ctx.has_result():
                raise MiddlewareError(ctx.stage)
        except _ABORTS as exc:
            exc.source = exc.source or step.id
            raise
        except Exception as exc:
            yield from settle(ctx, exc)

    return timed


def build_onion(
    steps: Sequence[Step], core: App, failed: LayerFailure, *, core_marks: bool = False
) -> App:
    """Wrap ``core`` in the middleware ``steps`` (outermost first) and return the app.

    A layer with ``on_error="raise"`` and no timeout runs unguarded.  Guarded layers
    apply their policy only to what their own code raised: whatever comes out of
    ``call_next()`` goes on unchanged.  For that, the core notes on the context the
    exception it lets out (``core_marks``: it does so itself; otherwise it is marked
    when some layer is guarded), and so do plain layers inside a guarded one.
    """
    steps = tuple(steps)
    guarded = [not (s.on_error == "raise" and s.timeout is None) for s in steps]
    # the outermost guarded layer: every layer inside it notes its position
    first_guard = guarded.index(True) if any(guarded) else len(steps)

    def frame() -> _Frame:
        f = _Frame()
        entry = _core_entry(f, core, len(steps) if any(guarded) else -1, core_marks)
        for i in reversed(range(len(steps))):
            if guarded[i]:
                entry = _guarded_entry(f, steps[i], entry, failed, i)
            elif i > first_guard:
                entry = _marked_entry(f, steps[i].call, entry, i)
            else:
                entry = _plain_entry(f, steps[i].call, entry)
        f.start = entry
        return f

    pool: list[_Frame] = []

    async def app(ctx: Any) -> None:
        f = pool.pop() if pool else frame()
        f.ctx = ctx
        await f.start()
        # given back only after a call that ended normally: after an exception (a
        # cancellation among them) some layer's coroutine may still hold it
        f.ctx = None
        if len(pool) < _POOL_LIMIT:
            pool.append(f)

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
