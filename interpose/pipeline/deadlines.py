"""Deadlines of async handlers that cost only the handlers that wait.

``Step`` (in ``chain``) wraps an async handler with a timeout by
``deadline_on_suspend``; the loops of ``chain`` give the others their deadlines
through a ``Watch`` around a whole tool call under asyncio (``watch_here``).
"""

from __future__ import annotations

import asyncio
import math
import sys
import types
import weakref
from asyncio.events import _get_running_loop
from collections.abc import Awaitable, Callable, Coroutine, Generator, Iterator
from operator import length_hint
from types import CoroutineType
from typing import Any, Protocol

import anyio

__all__ = [
    "Deadlined",
    "Watch",
    "deadline_on_suspend",
    "running_asyncio_loop",
    "watch_here",
]


class Deadlined(Protocol):
    """What a ``Watch`` reads of a step (a ``chain.Step``)."""

    @property
    def watched(self) -> bool: ...

    @property
    def timeout(self) -> float | None: ...


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
running_asyncio_loop: Callable[[], object] = (
    _get_running_loop if sys.version_info >= (3, 11) else _no_loop
)


def deadline_on_suspend(
    fn: Callable[..., Awaitable[Any]], seconds: float, *, keep: bool
) -> Callable[..., Any]:
    if keep:  # an approver: fn(request), whose return value is its answer

        def answer(request: Any) -> Any:
            coro = fn(request)
            if type(coro) is not CoroutineType or running_asyncio_loop() is None:
                return _await_within(coro, seconds)
            try:
                first = coro.send(None)
            except StopIteration as done:
                return done.value
            return _finish(coro, first, seconds)

        return answer

    def intercept(inp: Any, out: Any) -> Any:
        coro = fn(inp, out)
        if type(coro) is not CoroutineType or running_asyncio_loop() is None:
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


# The loops below (run_plain, run_gate) give their async handlers' timeouts under
# asyncio without any wrapper: the loop awaits each handler's coroutine as it is, which
# is the cheapest way to run one, and a handler that finishes without suspending has
# cost nothing more than that.  What notices a suspension is one ``Watch`` per tool call
# (made by the tool stage for its tool.before and tool.after loops) or per run of
# another stage's loop: a generator between the loop's coroutine and the task, which
# steps the loop itself.  When the first step returns, nothing suspended and no deadline
# was armed: the watch cost one generator for the whole call.  Whoever awaits a loop
# under the watch notes the loop's coroutine on it (``watch.loop``, once per loop, not
# per handler); when something suspends, the coroutine that loop awaits is the handler
# that waits, and its deadline is armed then, ``timeout`` seconds from its first
# suspension.  Each handler has its own full timeout, counted from its
# own first suspension; a finished handler takes its deadline with it.
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

    __slots__ = (
        "alarm",
        "armed",
        "cancelling",
        "deadline",
        "fired",
        "it",
        "loop",
        "settling",
        "steps",
        "task",
    )
    it: Iterator[Callable[..., Any]]  # the running loop's iterator: where it is
    steps: tuple[Deadlined, ...]  # the running loop's steps (chain.Step)
    deadline: float  # of the handler armed last
    task: Any
    cancelling: int  # the task's cancellation requests before its first deadline

    def __init__(self) -> None:
        # the handler loop the watched call awaits now, set by whoever awaits it (a
        # finished one awaits nothing): what it awaits when something suspends is the
        # handler that waits
        self.loop: Any = None
        self.settling = False  # a loop awaits a failure policy, not a handler
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
        """Something suspended: if it is a handler a loop awaits, and not the one armed
        already, arm its deadline."""
        if self.settling:
            return
        loop = self.loop
        r = loop.cr_await if loop is not None else None
        if type(r) is not CoroutineType or r is self.armed:
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
    return Watch() if running_asyncio_loop() is not None else None
