"""The in-memory broadcast bus.

Each subscription owns a bounded deque and one consumer task.  Publishing appends to
the deques of the matching subscriptions and returns; it only waits when a subscription
with ``overflow="block"`` is full (backpressure: nothing is lost).  ``drop_oldest`` and
``drop_newest`` never wait and count what they drop.  Closing the bus lets every
consumer drain its buffer before the task group exits.

The core is synchronous (``publish_nowait``); ``publish`` is the async wrapper that
waits only when it must.

Consumers run shielded from cancellation: a deadline or a cancel around
``async with pipe`` must not stop them in the middle of the backlog the pipeline still
has to drain (it drains within a bounded grace, see ``Pipeline.drain_grace``).  They
stop when the bus closes and their buffer is empty, or at once with ``abort()``.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import anyio
import anyio.abc
import anyio.lowlevel

from .._callables import is_async_callable
from .events import EVENT_KINDS, Event

__all__ = ["InMemoryBus", "Overflow", "Subscription", "SubscriptionStats"]

log = logging.getLogger("interpose.bus")

Overflow: TypeAlias = Literal["block", "drop_oldest", "drop_newest"]
Observer: TypeAlias = Callable[[Any], Any]
OVERFLOW_VALUES = frozenset({"block", "drop_oldest", "drop_newest"})
_FAIR_SHARE = 64  # events a consumer delivers before it yields to other tasks


def event_kinds(events: Iterable[str] | None) -> frozenset[str] | None:
    """The kinds a subscriber asked for (None: every kind).

    Raises:
        ValueError: an unknown event kind.
    """
    kinds = None if events is None else frozenset(events)
    if kinds is not None and not kinds <= EVENT_KINDS:
        unknown = ", ".join(sorted(kinds - EVENT_KINDS))
        raise ValueError(
            f"unknown event kind(s): {unknown}; kinds: {', '.join(sorted(EVENT_KINDS))}"
        )
    return kinds


def check_overflow(overflow: object) -> None:
    """Raise ``ValueError`` unless ``overflow`` is one of the ``Overflow`` policies."""
    if overflow not in OVERFLOW_VALUES:
        raise ValueError(
            f"overflow must be 'block', 'drop_oldest' or 'drop_newest', got {overflow!r}"
        )


@dataclass
class SubscriptionStats:
    """Counters of one subscription.  ``delivered + dropped + len(buffer)`` equals the
    number of events published to it; ``aborted`` is the part of ``dropped`` given up
    at exit (still queued when the drain stopped)."""

    published: int = 0
    delivered: int = 0
    dropped: int = 0
    aborted: int = 0
    failed: int = 0
    timed_out: int = 0
    high_water: int = 0


class Subscription:
    """One observer's place on the bus: its filter, buffer, policy and counters."""

    def __init__(
        self,
        observer: Observer,
        kinds: frozenset[str] | None,
        buffer: int,
        overflow: Overflow,
        timeout: float | None,
        name: str,
    ) -> None:
        self.observer = observer
        self.kinds = kinds
        self.buffer = buffer
        self.overflow = overflow
        self.timeout = timeout
        self.name = name
        self.stats = SubscriptionStats()
        self.is_async = is_async_callable(observer)
        self._queue: deque[Event] = deque()
        self._wakeup: anyio.Event | None = None
        self._space: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        self._closed = False
        self.busy = False
        # called when the bus starts draining for its exit (see InMemoryBus.drain): an
        # observer that waits on something outside (a RedisStreamPublisher) starts its
        # own close deadline there
        self.on_drain: Callable[[], None] | None = None

    def __repr__(self) -> str:
        return f"<Subscription {self.name!r} kinds={self.kinds} stats={self.stats}>"

    # -- publisher side (sync core) -----------------------------------------------

    def offer(self, event: Event, *, force: bool = False) -> bool:
        """Queue ``event`` without waiting; False only if a ``block`` buffer is full.

        ``force`` queues past a full ``block`` buffer instead (see
        ``InMemoryBus.publish_now``).
        """
        q = self._queue
        if len(q) >= self.buffer:
            if self.overflow == "block":
                if not force:
                    return False
            else:
                self.stats.dropped += 1
                if self.overflow == "drop_newest":
                    self.stats.published += 1
                    return True
                q.popleft()
        q.append(event)
        self.stats.published += 1
        if len(q) > self.stats.high_water:
            self.stats.high_water = len(q)
        if self._wakeup is not None:
            self._wakeup.set()
        return True

    async def wait_for_space(self) -> None:
        # every publisher waiting on this buffer shares one event: the consumer wakes
        # them all when it frees a slot, and they race for it
        while len(self._queue) >= self.buffer and not self._closed:
            if self._space is None:
                self._space = anyio.Event()
            await self._space.wait()

    # -- consumer side ------------------------------------------------------------

    @property
    def backlog(self) -> int:
        """Events queued, not yet handed to the observer."""
        return len(self._queue)

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being delivered."""
        return not self._queue and not self.busy

    async def run(
        self,
        on_failure: Callable[[Subscription, Event, Exception, bool], None],
        on_idle: Callable[[], None],
    ) -> None:
        # shielded: only close() (once the buffer is empty) or abort() end a consumer,
        # never a cancellation aimed at the code that entered the pipeline
        with anyio.CancelScope(shield=True) as self._scope:
            await self._consume(on_failure, on_idle)
        self._scope = None

    async def _consume(
        self,
        on_failure: Callable[[Subscription, Event, Exception, bool], None],
        on_idle: Callable[[], None],
    ) -> None:
        q = self._queue
        delivered = 0
        while True:
            while not q:
                on_idle()
                if self._closed:
                    return
                self._wakeup = anyio.Event()
                await self._wakeup.wait()
                self._wakeup = None
            event = q.popleft()
            if self._space is not None:
                self._space.set()
                self._space = None
            self.busy = True
            try:
                await self._deliver(event, on_failure)
            finally:
                self.busy = False
            delivered += 1
            if not delivered % _FAIR_SHARE:
                # a sync observer never suspends: let the agent and the other
                # observers run between slices of a long backlog
                await anyio.lowlevel.checkpoint()

    async def _deliver(
        self, event: Event, on_failure: Callable[[Subscription, Event, Exception, bool], None]
    ) -> None:
        # "delivered" counts every event handed to the observer, whatever it did with it
        self.stats.delivered += 1
        try:
            if not self.is_async:
                self.observer(event)
            elif self.timeout is None:
                await self.observer(event)
            else:
                with anyio.fail_after(self.timeout):
                    await self.observer(event)
        except TimeoutError as exc:
            self.stats.timed_out += 1
            on_failure(self, event, exc, True)
        except Exception as exc:
            self.stats.failed += 1
            on_failure(self, event, exc, False)

    def close(self) -> None:
        self._closed = True
        if self._wakeup is not None:
            self._wakeup.set()
        if self._space is not None:
            self._space.set()

    def abort(self) -> int:
        """Stop the consumer where it is and give up on what is still queued, counted
        as dropped (so ``delivered + dropped == published`` still holds); returns that
        count."""
        self.close()
        if self._scope is not None:
            self._scope.cancel()
        left = len(self._queue)
        self._queue.clear()
        self.stats.dropped += left
        self.stats.aborted += left
        return left


class InMemoryBus:
    """Broadcast bus living in this process.

    Use ``subscribe`` any time; ``async with bus`` (or ``start(task_group)``) runs the
    consumers; leaving it drains every buffer.  With no subscription for a kind,
    ``wants(kind)`` is False and callers skip building the event.
    """

    def __init__(self, *, observer_timeout: float | None = 0.5) -> None:
        self.observer_timeout = observer_timeout
        self.subscriptions: list[Subscription] = []
        self.wanted: frozenset[str] = frozenset()
        self._by_kind: dict[str, tuple[Subscription, ...]] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._idle: anyio.Event | None = None
        self.failure_hook: Callable[[Subscription, Event, Exception, bool], None] | None = None

    @property
    def running(self) -> bool:
        return self._tg is not None

    def subscribe(
        self,
        observer: Observer,
        *,
        events: Iterable[str] | None = None,
        buffer: int = 1024,
        overflow: Overflow = "block",
        timeout: float | None = None,
        name: str | None = None,
    ) -> Subscription:
        """Subscribe ``observer`` (sync or async callable taking an event).

        Raises:
            ValueError: unknown event kind, non-positive buffer, unknown overflow policy.
        """
        kinds = event_kinds(events)
        if not isinstance(buffer, int) or buffer < 1:
            raise ValueError(f"buffer must be a positive int, got {buffer!r}")
        check_overflow(overflow)
        sub = Subscription(
            observer,
            kinds,
            buffer,
            overflow,
            self.observer_timeout if timeout is None else timeout,
            name or str(getattr(observer, "__qualname__", type(observer).__qualname__)),
        )
        self.subscriptions.append(sub)
        self._reindex()
        if self._tg is not None:
            self._tg.start_soon(
                sub.run, self._on_failure, self._consumer_idle, name=f"observer {sub.name}"
            )
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self.subscriptions.remove(sub)
        sub.close()
        self._reindex()

    def _reindex(self) -> None:
        self._by_kind = {
            kind: tuple(s for s in self.subscriptions if s.kinds is None or kind in s.kinds)
            for kind in EVENT_KINDS
        }
        self.wanted = frozenset(kind for kind, subs in self._by_kind.items() if subs)

    # -- publishing ---------------------------------------------------------------

    def publish_now(self, event: Event) -> None:
        """Queue ``event`` without waiting, for publishers that must not wait: a report
        raised while delivering (an observer failed: it runs in an observer's task,
        which must not block on the bus), the end of a call being cancelled.  A full
        ``block`` buffer takes it anyway (going over by the events in flight) so that
        nothing is lost; the drop policies apply as usual."""
        for sub in self._by_kind.get(event.kind, ()):
            sub.offer(event, force=True)

    def publish_nowait(self, event: Event) -> list[Subscription]:
        """Queue ``event`` everywhere it fits; returns the full ``block`` subscriptions."""
        full: list[Subscription] = []
        for sub in self._by_kind.get(event.kind, ()):
            if not sub.offer(event):
                full.append(sub)
        return full

    async def publish(self, event: Event) -> None:
        """Queue ``event``; waits only for full ``block`` buffers (backpressure).

        An event is queued for every subscriber or none: a publish cancelled while it
        waits for room still queues the event, past the limit, in the buffers it had
        not reached, then lets the cancellation through.  So the tool_exec_start of a
        call always has its tool_exec_end, even when a deadline cuts the call short.
        """
        if self._tg is None:
            raise RuntimeError("the bus is not running: publish inside `async with bus`")
        subs = self._by_kind.get(event.kind, ())
        for sub in subs:
            if not sub.offer(event):
                await self._offer_when_room(event, sub, subs)

    async def _offer_when_room(
        self, event: Event, sub: Subscription, subs: tuple[Subscription, ...]
    ) -> None:
        """Wait for room in ``sub`` (a full ``block`` buffer), then queue ``event``."""
        try:
            while not sub.offer(event):
                if sub._closed:
                    # closed while we waited: its consumer may be gone, so waiting could
                    # last forever; queue it (delivered if the bus starts again)
                    sub.offer(event, force=True)
                    return
                await sub.wait_for_space()
        except BaseException:
            for rest in subs[subs.index(sub) :]:
                rest.offer(event, force=True)
            raise

    # -- lifecycle ----------------------------------------------------------------

    def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Start the consumers in ``tg`` (the caller owns the task group)."""
        self._tg = tg
        for sub in self.subscriptions:
            sub._closed = False
            tg.start_soon(
                sub.run, self._on_failure, self._consumer_idle, name=f"observer {sub.name}"
            )

    async def drain(self) -> None:
        """Wait until every buffer is empty and no observer is busy.

        Observers may publish while they run (a failing observer is reported as an
        ``interceptor_failed`` event), so draining waits for the whole bus to go quiet,
        not for each buffer in turn.  It first calls each subscription's ``on_drain``
        hook: an observer bounded by a close deadline of its own starts it there.
        """
        for sub in self.subscriptions:
            if sub.on_drain is not None:
                sub.on_drain()
        while not all(sub.idle for sub in self.subscriptions):
            self._idle = anyio.Event()
            await self._idle.wait()
        self._idle = None

    @property
    def idle(self) -> bool:
        """Every buffer empty and no observer in the middle of an event."""
        return all(sub.idle for sub in self.subscriptions)

    def _consumer_idle(self) -> None:
        if self._idle is not None and all(sub.idle for sub in self.subscriptions):
            self._idle.set()

    def close(self) -> None:
        """Ask every consumer to stop once its buffer is empty (``drain`` first)."""
        self._tg = None
        for sub in self.subscriptions:
            sub.close()

    def abort(self) -> int:
        """Stop every consumer where it is (after a drain that ran out of time): what is
        still queued is counted as dropped and logged.  Returns how many events that
        was."""
        self._tg = None
        lost = 0
        for sub in self.subscriptions:
            left = sub.abort()
            if left:
                log.warning("observer %s: %d event(s) not delivered, dropped", sub.name, left)
            lost += left
        return lost

    async def __aenter__(self) -> InMemoryBus:
        self._own_tg = anyio.create_task_group()
        await self._own_tg.__aenter__()
        self.start(self._own_tg)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        # a cancellation while draining gives up on the rest (counted as dropped): the
        # consumers are shielded, so they have to be stopped here (``Pipeline`` grants a
        # grace period first, see ``Pipeline.drain_grace``)
        try:
            await self.drain()
        finally:
            self.close()
            if not self.idle:
                self.abort()
            await self._own_tg.__aexit__(None, None, None)

    def _on_failure(self, sub: Subscription, event: Event, exc: Exception, timed_out: bool) -> None:
        what = "timed out" if timed_out else f"raised {type(exc).__name__}: {exc}"
        log.warning("observer %s %s on %s", sub.name, what, event.kind)
        if self.failure_hook is not None:
            self.failure_hook(sub, event, exc, timed_out)
