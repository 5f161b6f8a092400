"""``RedisStreamPublisher``: an observer that appends events to a Redis Stream, in
pipelined batches, with backpressure or drops while Redis is slow or down (see the
package docstring, ``interpose.bus.redis``)."""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import os
import socket
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from ..events import Event, InterceptorFailed, encode_event
from ..memory import Overflow, check_overflow
from .common import (
    DEFAULT_STREAM,
    DEFAULT_URL,
    RespVersion,
    Script,
    backoff_delay,
    check_name,
    check_url,
    connect,
    positive_int,
)
from .stats import FleetMetrics, PublisherStats

if TYPE_CHECKING:
    from opentelemetry import metrics
    from redis.asyncio import Redis

    from ..host import Host
    from ..memory import Subscription

__all__ = ["RedisStreamPublisher", "default_producer_id"]

log = logging.getLogger("interpose.bus.redis")

# ARGV: producer, maxlen (0: no trimming), then event JSON and seq, pairwise
_XADD_BATCH = b"""
local producer, maxlen = ARGV[1], ARGV[2]
for i = 3, #ARGV, 2 do
  if maxlen ~= '0' then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', maxlen, '*',
               'e', ARGV[i], 'p', producer, 'n', ARGV[i + 1])
  else
    redis.call('XADD', KEYS[1], '*', 'e', ARGV[i], 'p', producer, 'n', ARGV[i + 1])
  end
end
return (#ARGV - 2) / 2
"""


def default_producer_id() -> str:
    """``host:pid:random`` (the random part tells apart two runs that reuse a pid)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class RedisStreamPublisher:
    """An observer that appends every event it receives to a Redis Stream.

    ``publisher.attach(pipe)`` subscribes it and adds it to ``pipe``'s services, so its
    batching writer runs while the pipeline is entered and what is queued is sent before
    the pipeline exits.  (``[observers.redis]`` in the config file does the same.)
    ``async with publisher:`` runs the writer on its own, for subscribing it by hand.
    Without a running writer, a call sends its event at once (one round trip per event,
    within the subscription's timeout).

    Args:
        url: ``redis://[user:password@]host:port/db`` (``rediss://`` for TLS).
        stream: the stream key.
        maxlen: trim the stream to about this many entries on every write (``MAXLEN ~``,
            whole macro-nodes at a time, so it may hold a little more); None: never trim.
            Size it above the largest lag a consumer group may have (docs/fleet.md).
        overflow: what happens when ``queue`` events wait for Redis: ``block`` (the
            agent waits), ``drop_oldest`` or ``drop_newest`` (counted in ``stats``).
        queue: how many encoded events may wait for Redis.
        batch: the most events sent in one pipelined round trip.
        producer: the producer id (default ``host:pid:random``).
        backoff: the first and the longest wait (s) between attempts while Redis is down.
        close_timeout: how long (s) closing waits for Redis to take what is still
            queued; the rest is counted as lost and logged.
        socket_timeout: how long (s) a command may wait for Redis's reply.
        protocol: the RESP version to speak (2 or 3).
        meter_provider: report the ``interpose.fleet.*`` publisher metrics there; None:
            the global provider.

    Raises:
        ValueError: a bad URL, size, policy or timeout.
        ImportError: redis-py is not installed (the ``redis`` extra).
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        stream: str = DEFAULT_STREAM,
        maxlen: int | None = 1_000_000,
        overflow: Overflow = "block",
        queue: int = 8192,
        batch: int = 512,
        producer: str | None = None,
        backoff: tuple[float, float] = (0.05, 2.0),
        close_timeout: float = 5.0,
        socket_timeout: float = 5.0,
        protocol: RespVersion = 2,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        check_name("stream", stream)
        if maxlen is not None and not positive_int(maxlen):
            raise ValueError(f"maxlen must be a positive int or None, got {maxlen!r}")
        check_overflow(overflow)
        for name, value in (("queue", queue), ("batch", batch)):
            if not positive_int(value):
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if len(backoff) != 2 or not 0 < backoff[0] <= backoff[1]:
            raise ValueError(
                f"backoff must be (first, longest) with 0 < first <= longest: {backoff}"
            )
        for name, seconds in (("close_timeout", close_timeout), ("socket_timeout", socket_timeout)):
            if not isinstance(seconds, int | float) or not seconds > 0:
                raise ValueError(f"{name} must be a positive number of seconds, got {seconds!r}")
        if protocol not in (2, 3):
            raise ValueError(f"protocol must be 2 or 3, got {protocol!r}")
        self.url = url
        self.stream = stream
        self.maxlen = maxlen
        self.overflow: Overflow = overflow
        self.queue = queue
        self.batch = batch
        self.producer = producer or default_producer_id()
        self.backoff = backoff
        self.close_timeout = close_timeout
        self._counts = PublisherStats()  # the publisher's own; ``stats`` adds its subscriptions'
        check_url(url)
        self._protocol: RespVersion = protocol
        self._socket_timeout = socket_timeout
        self._client: Redis | None = None
        self._producer = self.producer.encode()
        self._stream = stream.encode()
        self._maxlen = str(maxlen or 0).encode()
        self._script = Script(_XADD_BATCH)
        self._seq = itertools.count(1)
        self._pending: deque[tuple[bytes, bytes]] = deque()  # (n, event JSON)
        self._wakeup: anyio.Event | None = None
        self._space: anyio.Event | None = None
        self._running = False
        self._closing = False
        self._stopped: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        # the close deadline (anyio clock), set when the exit begins, and the scope of
        # the writer's current attempt (a send, or the backoff after a failure)
        self._deadline: float | None = None
        self._attempt: anyio.CancelScope | None = None
        self._lost_before = 0
        self._waiting = 0  # callers waiting for room in the queue
        self._close_report: Event | None = None
        self._subs: list[Subscription] = []
        self._down_since: float | None = None
        self._report: Callable[[Event], None] | None = None
        self._own_tg: anyio.abc.TaskGroup | None = None
        FleetMetrics.get(meter_provider).publishers.add(self)

    def __repr__(self) -> str:
        return f"<RedisStreamPublisher {self.stream!r} producer={self.producer!r} {self.stats}>"

    @property
    def stats(self) -> PublisherStats:
        """The counters now, with the drops and losses of the subscriptions ``attach``
        made (see ``PublisherStats``)."""
        own = self._counts
        dropped, lost = own.dropped, own.lost
        for sub in self._subs:
            dropped += sub.stats.dropped - sub.stats.aborted
            lost += sub.stats.aborted
        return dataclasses.replace(own, dropped=dropped, lost=lost, queued=len(self._pending))

    @property
    def connected(self) -> bool:
        """False while Redis is unreachable (from the first failed write to the next
        successful one)."""
        return self._down_since is None

    # -- the observer -------------------------------------------------------------------

    async def __call__(self, event: Event, /) -> None:
        """Queue ``event`` for the writer; waits only when the queue is full and the
        policy is ``block`` (until the close deadline at most).  Without a running
        writer, sends it before returning.

        Raises:
            redis.exceptions.ConnectionError: (only without a running writer) Redis is
                unreachable; on the bus this is an observer failure, with its event.
        """
        item = (str(next(self._seq)).encode(), encode_event(event))
        pending = self._pending
        if len(pending) >= self.queue and not await self._make_room():
            return
        if self._running:
            pending.append(item)
            if self._wakeup is not None:
                self._wakeup.set()
        elif self._deadline is None:
            pending.append(item)
            await self._send(list(pending))
            pending.clear()
        elif event is not self._close_report:
            # reached a publisher that the pipeline's exit closed: a report delivered
            # after it (its own report of what it lost is not counted again)
            self._counts.lost += 1

    async def _make_room(self) -> bool:
        """The queue is full: apply the overflow policy.  False: the new event is not
        queued (dropped by ``drop_newest``, or lost: the writer gave up at the close
        deadline and will not make room)."""
        if self.overflow == "drop_newest":
            self._counts.dropped += 1
            return False
        if self.overflow == "drop_oldest":
            self._pending.popleft()
            self._counts.dropped += 1
            return True
        # block: backpressure until the writer makes room, or stops (at the latest at
        # the close deadline: it wakes us then)
        stopped = self._stopped
        self._waiting += 1
        try:
            while len(self._pending) >= self.queue and self._running:
                if stopped is not None and stopped.is_set():
                    self._counts.lost += 1
                    return False
                if self._space is None:
                    self._space = anyio.Event()
                await self._space.wait()
        finally:
            self._waiting -= 1
        return True

    def attach(
        self,
        pipe: Host,
        *,
        events: Iterable[str] | None = None,
        buffer: int = 1024,
        name: str | None = None,
    ) -> Subscription:
        """Subscribe to ``pipe`` with this publisher's overflow policy and no observer
        timeout (a Redis outage is the policy's business), and run the writer while
        ``pipe`` is entered.  Writing failures are published on ``pipe``'s bus as
        ``interceptor_failed`` events (hook ``observer``, policy ``retry``), one per
        outage.

        Raises:
            ValueError: an unknown event kind or a non-positive buffer.
            RuntimeError: ``pipe`` is already entered.
        """
        sub = pipe.subscribe(
            self,
            events=events,
            buffer=buffer,
            overflow=self.overflow,
            timeout=math.inf,
            name=name or f"redis {self.stream}",
        )
        pipe.add_service(self)
        bus = pipe.bus
        self._report = bus.publish_now
        # the close_timeout clock starts when the pipeline's exit starts draining the
        # bus, so that a drain waiting on this publisher ends within it
        sub.on_drain = self._begin_closing
        self._subs.append(sub)
        return sub

    # -- the writer ---------------------------------------------------------------------

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Start the writer in ``tg`` (``Pipeline.add_service`` calls this)."""
        if self._running:
            raise RuntimeError("this publisher is already running")
        self._running = True
        self._closing = False
        self._deadline = None
        self._close_report = None
        self._wakeup = anyio.Event()
        self._stopped = anyio.Event()
        tg.start_soon(self._writer, name=f"redis publisher {self.stream}")

    async def aclose(self) -> None:
        """Send what is queued (until the close deadline: ``close_timeout`` s after the
        exit began, then count the rest as lost, log it and report it on the bus) and
        stop the writer; close the connection (also of a publisher that ran without its
        writer)."""
        if self._running and self._stopped is not None:
            await self._stop_writer(self._stopped)
        client, self._client = self._client, None
        self._script.sha = None
        if client is not None:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    def _begin_closing(self) -> None:
        """Start the ``close_timeout`` clock, once per run: the pipeline's drain calls
        this when its exit begins (``Subscription.on_drain``), ``aclose`` otherwise.
        From the deadline on, the writer stops at its first batch that does not go
        through, and a caller waiting for room in the queue gives up (counted lost)."""
        if self._deadline is not None or not self._running:
            return
        self._deadline = anyio.current_time() + self.close_timeout
        self._lost_before = self._counts.lost
        if self._attempt is not None:
            self._attempt.deadline = self._deadline

    async def _stop_writer(self, stopped: anyio.Event) -> None:
        self._begin_closing()
        self._closing = True
        if self._wakeup is not None:
            self._wakeup.set()
        # the writer bounds itself by the deadline (plus one last round trip, bounded
        # by socket_timeout, if Redis still answered then); this is a safety net
        assert self._deadline is not None
        grace = self._deadline - anyio.current_time() + self._socket_timeout + 1.0
        with anyio.move_on_after(grace, shield=True):
            await stopped.wait()
        if not stopped.is_set() and self._scope is not None:
            self._scope.cancel()
            with anyio.CancelScope(shield=True):
                await stopped.wait()
        self._running = False
        self._counts.lost += len(self._pending)
        self._pending.clear()
        # and what will be lost as it comes: the callers still waiting for room (they
        # give up now), the events still in the subscription's buffer (a drain that
        # ran out of grace left them)
        lost = self._counts.lost - self._lost_before
        lost += self._waiting + sum(sub.backlog for sub in self._subs)
        if lost:
            self._report_lost(lost)

    def _report_lost(self, lost: int) -> None:
        """Log and publish (an ``interceptor_failed`` event, error type ``EventsLost``,
        policy ``drop``) the events given up at exit."""
        message = (
            f"{lost} event(s) not sent to Redis within close_timeout={self.close_timeout:g}s "
            f"of the exit, lost"
        )
        log.error("redis publisher %s: %s", self.stream, message)
        if self._report is not None:
            self._close_report = InterceptorFailed(
                ts=time.time_ns(),
                hook="observer",
                interceptor_id=f"redis {self.stream}",
                error_type="EventsLost",
                error=message,
                policy="drop",
            )
            self._report(self._close_report)

    async def __aenter__(self) -> RedisStreamPublisher:
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._own_tg = tg
        await self.start(tg)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        tg, self._own_tg = self._own_tg, None
        try:
            await self.aclose()
        finally:
            if tg is not None:
                await tg.__aexit__(None, None, None)

    async def _writer(self) -> None:
        assert self._stopped is not None
        try:
            # shielded, like the bus's consumers: a cancellation around the pipeline
            # must not stop it before the exit; aclose() stops it, by the close deadline
            with anyio.CancelScope(shield=True) as self._scope:
                await self._write_loop()
        finally:
            self._scope = None
            self._stopped.set()
            if self._space is not None:  # callers waiting for room: it will not come
                self._space.set()

    async def _write_loop(self) -> None:
        pending = self._pending
        attempt = 0
        while True:
            if not pending:
                if self._closing:
                    return
                self._wakeup = anyio.Event()
                await self._wakeup.wait()
                continue
            batch = [pending[i] for i in range(min(self.batch, len(pending)))]
            if not await self._attempt_send(batch, attempt):
                attempt += 1
                if self._deadline is not None and anyio.current_time() >= self._deadline:
                    return  # closing, and Redis does not take it: aclose counts the rest
                continue
            attempt = 0
            for _ in batch:
                pending.popleft()
            if self._space is not None:
                self._space.set()
                self._space = None

    async def _attempt_send(self, batch: Sequence[tuple[bytes, bytes]], attempt: int) -> bool:
        """Send ``batch``; after a failure, wait the backoff and return False.  The
        close deadline cuts both short (an attempt begun after it is bounded by
        ``socket_timeout`` alone)."""
        from redis.exceptions import RedisError

        deadline = self._deadline
        now = anyio.current_time()
        with anyio.CancelScope() as self._attempt:
            if deadline is not None and deadline > now:
                self._attempt.deadline = deadline
            try:
                await self._send(batch)
                return True
            except (RedisError, OSError) as exc:
                # a lost connection, or an error reply (out of memory, a key of the wrong
                # type...): retried with backoff either way, never raised into the agent
                self._failed(exc)
                if deadline is None or deadline > now:
                    await anyio.sleep(backoff_delay(attempt + 1, *self.backoff))
            finally:
                self._attempt = None
        return False

    async def _send(self, batch: Sequence[tuple[bytes, bytes]]) -> None:
        """Append ``batch`` in one round trip: one script call that runs the XADDs.

        One command and one reply per batch instead of one per event (redis-py spends
        tens of microseconds packing each command and parsing each reply), and a batch
        is applied whole or not at all.  A batch whose reply was lost is sent again;
        consumers drop the copies by ``(p, n)``.
        """
        client = self._client
        if client is None:
            client = self._client = connect(self.url, self._protocol, self._socket_timeout)
        args: list[bytes] = [self._producer, self._maxlen]
        for n, data in batch:
            args += (data, n)
        await self._script(client, (self._stream,), args)
        self._counts.published += len(batch)
        self._counts.batches += 1
        if self._down_since is not None:
            log.warning(
                "redis publisher %s: Redis is back after %.1fs",
                self.stream,
                time.monotonic() - self._down_since,
            )
            self._down_since = None

    def _failed(self, exc: Exception) -> None:
        self._counts.errors += 1
        if self._down_since is not None:
            return
        self._down_since = time.monotonic()
        log.warning(
            "redis publisher %s: cannot write (%s: %s); retrying with backoff, %d queued",
            self.stream,
            type(exc).__name__,
            exc,
            len(self._pending),
        )
        if self._report is not None:
            self._report(
                InterceptorFailed(
                    ts=time.time_ns(),
                    hook="observer",
                    interceptor_id=f"redis {self.stream}",
                    error_type=type(exc).__name__,
                    error=str(exc) or type(exc).__name__,
                    policy="retry",
                )
            )
