"""The fleet bus: events of many agent processes on one Redis Stream, consumed at least once.

Needs the ``redis`` extra (redis-py's asyncio client) and Redis >= 6.2 (7.0 for the
``lag`` of ``XINFO GROUPS``).

Publishing: ``RedisStreamPublisher`` is an observer.  ``publisher.attach(pipe)``
subscribes it and runs its writer while the pipeline is entered: each event is encoded
once (``encode_event``, one reused msgspec encoder) and queued; the writer sends what is
queued in pipelined batches of ``XADD ... MAXLEN ~ n``.  When Redis is slow or down the
queue fills and the overflow policy applies: ``block`` makes the observer wait, so the
bus buffer fills and the agent waits (backpressure, nothing lost); ``drop_oldest`` and
``drop_newest`` drop and count.  The writer reconnects with exponential backoff and
resends a batch that did not go through; a tool call never fails because of Redis.

Each entry has three fields: ``e`` (the event as JSON), ``p`` (the producer id:
``host:pid:random``) and ``n`` (the producer's own sequence number, from 1).  A resent
batch may add an entry twice; ``(p, n)`` names the event, so consumers drop the copy.

Consuming: ``RedisStreamConsumer`` reads with a consumer group and hands decoded events
(the same tagged union as the in-memory bus) to ordinary observers.  An entry is acked
only after every observer returned.  On start it re-reads its own pending entries; it
takes over the entries of dead consumers with ``XAUTOCLAIM`` once they have been idle
for ``claim_idle`` seconds; it drops events already acked in its group (a sorted set
of ``p n`` keys per group, ``<stream>:seen:<group>``, kept for ``dedup_window``
seconds); it moves an entry that failed ``max_deliveries`` times (or could not be
decoded) to the dead-letter stream (``<stream>:dead``).  ``lag`` and ``pending`` are
properties and OpenTelemetry metrics.

Both pin RESP2 by default; ``protocol=3`` works too (``read_entries`` accepts both
reply shapes of ``XREADGROUP``).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import os
import random
import socket
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio
import anyio.abc
import msgspec

from .._callables import is_async_callable
from .events import Event, InterceptorFailed, decode_event, encode_event
from .memory import Overflow, check_overflow, event_kinds

if TYPE_CHECKING:
    from opentelemetry import metrics
    from redis.asyncio import Redis

    from .host import Host
    from .memory import Subscription

__all__ = [
    "ConsumerStats",
    "PublisherStats",
    "RedisStreamConsumer",
    "RedisStreamPublisher",
    "read_entries",
]

log = logging.getLogger("interpose.bus.redis")

Entry: TypeAlias = tuple[bytes, dict[bytes, bytes]]
Protocol: TypeAlias = Literal[2, 3]
_DEFAULT_URL = "redis://127.0.0.1:6379/0"
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
_DEFAULT_STREAM = "interpose:events"


def _redis_module() -> Any:
    try:
        import redis.asyncio
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "the Redis Streams bus needs redis-py: pip install 'interpose[redis]'"
        ) from exc
    return redis.asyncio


def _check_url(url: object) -> None:
    """Raises ValueError unless ``url`` is a redis://, rediss:// or unix:// URL that
    redis-py can parse; ImportError without redis-py."""
    _redis_module()
    from redis.asyncio.connection import parse_url

    if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"not a Redis URL (redis://host:port/db): {url!r}")
    try:
        parse_url(url)
    except ValueError as exc:
        raise ValueError(f"not a valid Redis URL: {url!r}: {exc}") from None


def _connect(url: str, protocol: Protocol, socket_timeout: float | None) -> Redis:
    """A client for ``url`` without redis-py's own retries: the callers retry with their
    own backoff, and a hidden retry would stretch their timeouts.  It connects on its
    first command."""
    module = _redis_module()
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    client: Redis = module.Redis.from_url(
        url,
        protocol=protocol,
        socket_timeout=socket_timeout,
        socket_connect_timeout=min(socket_timeout or 5.0, 5.0),
        retry=Retry(NoBackoff(), 0),
    )
    return client


def _redis_errors() -> tuple[type[Exception], ...]:
    """What a lost or refused connection raises (plus OSError underneath)."""
    from redis.exceptions import ConnectionError, TimeoutError

    return (ConnectionError, TimeoutError, OSError)


def _backoff(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff with full jitter (never more than ``cap`` seconds)."""
    return random.uniform(base / 2, min(cap, base * 2.0**attempt))


def default_producer_id() -> str:
    """``host:pid:random`` (the random part tells apart two runs that reuse a pid)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


# KEYS: stream, seen set; ARGV: group, n, then n (score, key) pairs, then the ids to ack
_ACK_AND_REMEMBER = b"""
local n = tonumber(ARGV[2])
if n > 0 then
  redis.call('ZADD', KEYS[2], unpack(ARGV, 3, 2 + 2 * n))
end
if #ARGV > 2 + 2 * n then
  return redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 3 + 2 * n))
end
return 0
"""


def _pack(args: Sequence[bytes]) -> bytes:
    """One command in RESP, as redis-py would send it."""
    parts = [b"*%d\r\n" % len(args)]
    parts += [b"$%d\r\n%s\r\n" % (len(arg), arg) for arg in args]
    return b"".join(parts)


async def _raw(client: Redis, *args: bytes) -> Any:
    """Send one command packed by ``_pack`` on a connection of ``client``'s pool and
    return its reply (an error reply raises ``ResponseError``, as redis-py does).

    A failure or a cancellation in the middle disconnects the connection: a reply left
    unread must not be taken for the next command's.
    """
    pool = client.connection_pool
    connection = await pool.get_connection()  # type: ignore[no-untyped-call]
    try:
        await connection.send_packed_command(_pack(args), check_health=False)
        reply = await connection.read_response()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await connection.disconnect()
        raise
    finally:
        await pool.release(connection)
    from redis.exceptions import ResponseError

    if isinstance(reply, ResponseError):
        raise reply
    return reply


class _Script:
    """A Lua script called with ``EVALSHA`` through ``_raw``, loaded on first use and
    again after ``NOSCRIPT`` (a restarted Redis has forgotten it)."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.sha: bytes | None = None

    async def __call__(self, client: Redis, keys: Sequence[bytes], args: Sequence[bytes]) -> Any:
        from redis.exceptions import NoScriptError

        if self.sha is None:
            self.sha = await _raw(client, b"SCRIPT", b"LOAD", self.source)
        head = (b"EVALSHA", self.sha, str(len(keys)).encode(), *keys)
        try:
            return await _raw(client, *head, *args)
        except NoScriptError:  # redis-py's class for a NOSCRIPT error reply
            pass
        self.sha = await _raw(client, b"SCRIPT", b"LOAD", self.source)
        return await _raw(client, b"EVALSHA", self.sha, *head[2:], *args)


def _raw_entries(reply: Any) -> list[Entry]:
    """The entries of a raw ``XREADGROUP`` reply for one stream (``_raw``: no redis-py
    response callbacks): ``[[stream, [[id, [f, v, ...]], ...]]]`` (RESP2) or
    ``{stream: [[id, [f, v, ...]], ...]}`` (RESP3); nothing: None, ``[]`` or ``{}``."""
    if not reply:
        return []
    raw = next(iter(reply.values())) if isinstance(reply, Mapping) else reply[0][1]
    entries: list[Entry] = []
    for entry_id, flat in raw:
        if flat and type(flat[0]) is bytes:
            it = iter(flat)
            entries.append((entry_id, dict(zip(it, it, strict=True))))
        else:
            entries.append((_bytes(entry_id), _fields(flat)))
    return entries


# -- reply shapes -----------------------------------------------------------------------


def read_entries(reply: Any) -> list[Entry]:
    """The entries of an ``XREADGROUP``/``XREAD`` reply for one stream, in either shape.

    RESP2 (``protocol=2``, redis-py's default against Redis 7.0) gives
    ``[[stream, [(id, {field: value}), ...]]]``; RESP3 gives
    ``{stream: [[(id, {field: value}), ...]]}``.  No reply (a ``BLOCK`` that ran out) is
    ``[]``, ``{}`` or ``None``.  A pending entry that was trimmed away has no fields
    (``{}`` or ``None``): it is kept, with ``{}``.

    Raises:
        ValueError: the reply has neither shape.
    """
    if not reply:
        return []
    if isinstance(reply, Mapping):
        groups: Iterable[Any] = reply.values()
        batches = [batch for value in groups for batch in value]
    elif isinstance(reply, list | tuple):
        batches = []
        for item in reply:
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise ValueError(f"unexpected XREADGROUP reply item: {item!r}")
            batches.append(item[1])
    else:
        raise ValueError(f"unexpected XREADGROUP reply: {type(reply).__name__}")
    entries: list[Entry] = []
    for batch in batches:
        for entry in batch or ():
            if not isinstance(entry, list | tuple) or len(entry) != 2:
                raise ValueError(f"unexpected stream entry: {entry!r}")
            entry_id, fields = entry
            if type(entry_id) is not bytes or type(fields) is not dict:
                entry_id, fields = _bytes(entry_id), _fields(fields)
            # else: what redis-py gives without decode_responses, kept as it is
            entries.append((entry_id, fields))
    return entries


def _bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def _fields(fields: Any) -> dict[bytes, bytes]:
    if not fields:
        return {}
    if isinstance(fields, Mapping):
        return {_bytes(k): _bytes(v) for k, v in fields.items()}
    # a flat [field, value, ...] list (a raw reply)
    flat = list(fields)
    return {_bytes(flat[i]): _bytes(flat[i + 1]) for i in range(0, len(flat) - 1, 2)}


# -- metrics ----------------------------------------------------------------------------


class _FleetMetrics:
    """One set of observable instruments per meter provider, reading the counters of
    every live publisher and consumer (so that many of them never register an
    instrument twice)."""

    _by_provider: dict[int, _FleetMetrics] = {}  # noqa: RUF012 - a per-class registry

    def __init__(self, meter_provider: metrics.MeterProvider | None) -> None:
        from opentelemetry import metrics

        from .. import __version__

        self.publishers: weakref.WeakSet[RedisStreamPublisher] = weakref.WeakSet()
        self.consumers: weakref.WeakSet[RedisStreamConsumer] = weakref.WeakSet()
        meter = metrics.get_meter("interpose", __version__, meter_provider=meter_provider)
        make_counter = meter.create_observable_counter
        for name, stat, unit, description in (
            ("published", "published", "{event}", "Events written to the stream."),
            (
                "dropped",
                "dropped",
                "{event}",
                "Events a publisher dropped (Redis slow or down, drop policy), in its "
                "queue or in its bus subscription's buffer.",
            ),
            (
                "publish_lost",
                "lost",
                "{event}",
                "Events a publisher gave up at exit (not sent within close_timeout).",
            ),
            (
                "publish_errors",
                "errors",
                "{error}",
                "Batches that failed to reach Redis (each was retried).",
            ),
        ):
            make_counter(
                f"interpose.fleet.{name}",
                callbacks=[self._publisher_stat(stat)],
                unit=unit,
                description=description,
            )
        for stat, description in (
            ("delivered", "Events a consumer handed to its observers."),
            ("duplicates", "Events a consumer dropped as already seen in its group."),
            ("dead_lettered", "Entries moved to the dead-letter stream."),
            ("claimed", "Entries taken over from idle consumers."),
            ("lost", "Pending entries trimmed from the stream before they were acked."),
        ):
            make_counter(
                f"interpose.fleet.{stat}",
                callbacks=[self._consumer_stat(stat)],
                unit="{event}",
                description=description,
            )
        for stat, description in (
            ("lag", "Entries in the stream not yet read by the consumer group."),
            ("pending", "Entries read by the consumer group and not yet acked."),
            ("trimmed", "Entries trimmed from the stream before the consumer group read them."),
        ):
            meter.create_observable_gauge(
                f"interpose.fleet.{stat}",
                callbacks=[self._consumer_stat(stat)],
                unit="{event}",
                description=description,
            )

    @classmethod
    def get(cls, meter_provider: metrics.MeterProvider | None) -> _FleetMetrics:
        key = id(meter_provider)
        found = cls._by_provider.get(key)
        if found is None:
            found = cls._by_provider[key] = cls(meter_provider)
        return found

    def _publisher_stat(self, stat: str) -> Callable[[Any], Iterable[Any]]:
        from opentelemetry import metrics

        def observe(options: metrics.CallbackOptions) -> Iterable[metrics.Observation]:
            totals: dict[str, int] = {}
            for publisher in list(self.publishers):
                value = getattr(publisher.stats, stat)
                totals[publisher.stream] = totals.get(publisher.stream, 0) + value
            return [
                metrics.Observation(value, {"messaging.destination.name": stream})
                for stream, value in totals.items()
            ]

        return observe

    def _consumer_stat(self, stat: str) -> Callable[[Any], Iterable[Any]]:
        from opentelemetry import metrics

        def observe(options: metrics.CallbackOptions) -> Iterable[metrics.Observation]:
            values: dict[tuple[str, str], int] = {}
            for consumer in list(self.consumers):
                key = (consumer.stream, consumer.group)
                value = getattr(consumer.stats, stat)
                if stat in ("lag", "pending", "trimmed"):  # the group's: the same for all
                    values[key] = value
                else:
                    values[key] = values.get(key, 0) + value
            return [
                metrics.Observation(
                    value,
                    {"messaging.destination.name": stream, "messaging.consumer.group.name": group},
                )
                for (stream, group), value in values.items()
            ]

        return observe


# -- publishing -------------------------------------------------------------------------


@dataclass
class PublisherStats:
    """Counters of one publisher: the one place where every event that did not reach
    Redis is counted, whichever layer gave it up.  Every event published to it (to the
    subscription ``attach`` made, or to the publisher itself) is, in the end,
    ``published`` (written to the stream), ``dropped`` (an overflow policy: in the
    publisher's queue, or in that subscription's buffer when the agent ran ahead of
    it), ``lost`` (given up at exit: still queued, or waiting for room in the queue,
    when ``close_timeout`` ran out; or left in that subscription's buffer when the
    pipeline's drain gave up) or still ``queued``.  ``publisher.stats`` is a snapshot.
    """

    published: int = 0
    dropped: int = 0
    lost: int = 0
    errors: int = 0
    batches: int = 0
    queued: int = 0


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
        url: str = _DEFAULT_URL,
        *,
        stream: str = _DEFAULT_STREAM,
        maxlen: int | None = 1_000_000,
        overflow: Overflow = "block",
        queue: int = 8192,
        batch: int = 512,
        producer: str | None = None,
        backoff: tuple[float, float] = (0.05, 2.0),
        close_timeout: float = 5.0,
        socket_timeout: float = 5.0,
        protocol: Protocol = 2,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        _check_name("stream", stream)
        if maxlen is not None and not _positive_int(maxlen):
            raise ValueError(f"maxlen must be a positive int or None, got {maxlen!r}")
        check_overflow(overflow)
        for name, value in (("queue", queue), ("batch", batch)):
            if not _positive_int(value):
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
        _check_url(url)
        self._protocol: Protocol = protocol
        self._socket_timeout = socket_timeout
        self._client: Redis | None = None
        self._producer = self.producer.encode()
        self._stream = stream.encode()
        self._maxlen = str(maxlen or 0).encode()
        self._script = _Script(_XADD_BATCH)
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
        _FleetMetrics.get(meter_provider).publishers.add(self)

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
                    await anyio.sleep(_backoff(attempt + 1, *self.backoff))
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
            client = self._client = _connect(self.url, self._protocol, self._socket_timeout)
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


# -- consuming --------------------------------------------------------------------------


@dataclass
class ConsumerStats:
    """Counters of one consumer; ``lag``, ``pending`` and ``trimmed`` are its group's,
    as last read (``XINFO GROUPS`` and ``XINFO STREAM``).  ``lost``: pending entries
    trimmed before their ack; ``trimmed`` (Redis >= 7): entries trimmed before the
    group read them at all, since the group was created."""

    delivered: int = 0
    acked: int = 0
    duplicates: int = 0
    failures: int = 0
    dead_lettered: int = 0
    claimed: int = 0
    recovered: int = 0
    lost: int = 0
    trimmed: int = 0
    lag: int = 0
    pending: int = 0


class _Target:
    __slots__ = ("is_async", "kinds", "observer", "timeout")

    def __init__(
        self, observer: Callable[[Any], Any], kinds: frozenset[str] | None, timeout: float | None
    ) -> None:
        self.observer = observer
        self.kinds = kinds
        self.timeout = timeout
        self.is_async = is_async_callable(observer)


class _Retry:
    __slots__ = ("due", "fields", "id")

    def __init__(self, entry_id: bytes, fields: dict[bytes, bytes], due: float) -> None:
        self.id = entry_id
        self.fields = fields
        self.due = due


class RedisStreamConsumer:
    """Read a Redis Stream with a consumer group and deliver its events to observers.

    Observers are ordinary observers (sync or async callables taking an event), added
    with ``subscribe``.  Run the consumer with ``await consumer.run()`` (until
    ``stop()``, or until caught up with ``until_caught_up=True``) or in the background
    with ``async with consumer:``.

    Delivery is at least once: an entry is acked after every observer returned, so a
    consumer that dies leaves it pending, and it is delivered again (by this consumer
    when it starts again under the same name, or by another one of the group after
    ``claim_idle`` seconds).  An observer may therefore see an event twice when a
    consumer died between delivering and acking.

    Args:
        url: the Redis URL.
        stream: the stream key.
        group: the consumer group (created at ``start_id`` if missing).
        consumer: this consumer's name in the group (default ``host:pid``); use a
            stable name so that a restarted consumer finds its own pending entries.
        start_id: where a new group starts: ``"0"`` (everything in the stream) or
            ``"$"`` (only what comes next).
        batch: the most entries read at a time.
        block: how long (s) one read waits for new entries.
        claim_idle: take over entries pending this long (s) with another consumer.
        claim_every: how often (s) to look for such entries.
        max_deliveries: an entry whose observers failed this many times (or that Redis
            delivered more often than this) goes to the dead-letter stream and is acked.
        retry_delay: how long (s) to wait before delivering a failed entry again.
        dead_letter: the dead-letter stream (default ``<stream>:dead``).
        dedup_window: how long (s) the group remembers acked ``(producer, seq)`` keys to
            drop copies; None: no deduplication.
        observer_timeout: the default timeout (s) of async observers; None: no limit.
        stats_every: how often (s) ``lag`` and ``pending`` are read from Redis.
        protocol: the RESP version to speak (2 or 3).
        meter_provider: report the ``interpose.fleet.*`` consumer metrics there.

    Raises:
        ValueError: a bad URL, name, size or duration.
        ImportError: redis-py is not installed (the ``redis`` extra).
    """

    def __init__(
        self,
        url: str = _DEFAULT_URL,
        stream: str = _DEFAULT_STREAM,
        group: str = "interpose",
        consumer: str | None = None,
        *,
        start_id: str = "0",
        batch: int = 256,
        block: float = 0.5,
        claim_idle: float = 30.0,
        claim_every: float | None = None,
        max_deliveries: int = 5,
        retry_delay: float = 1.0,
        dead_letter: str | None = None,
        dedup_window: float | None = 3600.0,
        observer_timeout: float | None = 30.0,
        stats_every: float = 1.0,
        protocol: Protocol = 2,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        for name, value in (("stream", stream), ("group", group)):
            _check_name(name, value)
        consumer = consumer or f"{socket.gethostname()}:{os.getpid()}"
        _check_name("consumer", consumer)
        for name, number in (("batch", batch), ("max_deliveries", max_deliveries)):
            if not _positive_int(number):
                raise ValueError(f"{name} must be a positive int, got {number!r}")
        if batch > 2000:  # the ack script unpacks 2 arguments per entry, Lua's limit is 8000
            raise ValueError(f"batch must be at most 2000, got {batch}")
        for name, seconds in (
            ("block", block),
            ("claim_idle", claim_idle),
            ("retry_delay", retry_delay),
            ("stats_every", stats_every),
            ("claim_every", claim_every),
            ("dedup_window", dedup_window),
            ("observer_timeout", observer_timeout),
        ):
            if seconds is not None and (not isinstance(seconds, int | float) or seconds <= 0):
                raise ValueError(f"{name} must be a positive number of seconds, got {seconds!r}")
        if protocol not in (2, 3):
            raise ValueError(f"protocol must be 2 or 3, got {protocol!r}")
        self.url = url
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.start_id = start_id
        self.batch = batch
        self.block = block
        self.claim_idle = claim_idle
        self.claim_every = claim_every if claim_every is not None else max(claim_idle / 2, 0.05)
        self.max_deliveries = max_deliveries
        self.retry_delay = retry_delay
        self.dead_letter = dead_letter or f"{stream}:dead"
        self.dedup_window = dedup_window
        self.observer_timeout = observer_timeout
        self.stats_every = stats_every
        self.stats = ConsumerStats()
        self._protocol: Protocol = protocol
        self._seen_key = f"{stream}:seen:{group}"
        self._seen = self._seen_key.encode()
        self._stream = stream.encode()
        self._group = group.encode()
        self._consumer = consumer.encode()
        self._batch = str(batch).encode()
        self._ack_script = _Script(_ACK_AND_REMEMBER)
        self._targets: list[_Target] = []
        self._retries: dict[bytes, _Retry] = {}
        self._failures: dict[bytes, int] = {}
        self._stop = False
        self._client: Redis | None = None
        self._own_tg: anyio.abc.TaskGroup | None = None
        self._done: anyio.Event | None = None
        self._batches = 0
        # a bad URL fails here, not in the consumer's task
        _check_url(url)
        _FleetMetrics.get(meter_provider).consumers.add(self)

    def __repr__(self) -> str:
        return (
            f"<RedisStreamConsumer {self.stream!r} group={self.group!r} "
            f"consumer={self.consumer!r} {self.stats}>"
        )

    @property
    def lag(self) -> int:
        """Entries of the stream the group has not read yet (as last read from Redis)."""
        return self.stats.lag

    @property
    def pending(self) -> int:
        """Entries the group read and did not ack yet (as last read from Redis)."""
        return self.stats.pending

    def subscribe(
        self,
        observer: Callable[[Any], Any],
        *,
        events: Iterable[str] | None = None,
        timeout: float | None = None,
    ) -> None:
        """Deliver the events of the ``events`` kinds (default: every kind) to
        ``observer``; ``timeout`` (s) bounds an async observer (default
        ``observer_timeout``).  A failure or a timeout leaves the entry pending (see
        ``max_deliveries``).

        Raises:
            ValueError: an unknown event kind.
        """
        kinds = event_kinds(events)
        self._targets.append(
            _Target(observer, kinds, self.observer_timeout if timeout is None else timeout)
        )

    def stop(self) -> None:
        """Ask ``run`` to return after the batch it is delivering (within ``block`` s)."""
        self._stop = True

    # -- running ------------------------------------------------------------------------

    async def run(self, *, until_caught_up: bool = False) -> None:
        """Create the group if needed, deliver this consumer's own pending entries, then
        new ones (and claimed ones) until ``stop()``; with ``until_caught_up``, return
        once a read finds nothing new and nothing waits for a retry.

        Raises:
            redis.exceptions.ConnectionError: Redis cannot be reached at start; later
                outages are retried with backoff.
            redis.exceptions.ResponseError: the key is not a stream, or the like.
        """
        from redis.exceptions import ResponseError

        self._stop = False
        client = self._client = _connect(self.url, self._protocol, None)
        try:
            await self._create_group(client)
            await self._recover_own(client)
            await self._refresh_stats(client)
            next_claim = time.monotonic()
            next_stats = time.monotonic() + self.stats_every
            attempt = 0
            while not self._stop:
                try:
                    now = time.monotonic()
                    if now >= next_claim:
                        await self._claim(client)
                        next_claim = now + self.claim_every
                    await self._retry_due(client)
                    if now >= next_stats:
                        await self._refresh_stats(client)
                        next_stats = now + self.stats_every
                    wait = self.block
                    if self._retries:
                        soonest = min(r.due for r in self._retries.values())
                        wait = min(wait, max(soonest - time.monotonic(), 0.001))
                    wait = min(wait, max(next_claim - time.monotonic(), 0.001))
                    reply = await _raw(
                        client,
                        b"XREADGROUP",
                        b"GROUP",
                        self._group,
                        self._consumer,
                        b"COUNT",
                        self._batch,
                        b"BLOCK",
                        b"%d" % max(int(wait * 1000), 1),
                        b"STREAMS",
                        self._stream,
                        b">",
                    )
                    entries = _raw_entries(reply)
                    if entries:
                        # a connection lost before the ack leaves the delivered entries
                        # pending with this consumer: XAUTOCLAIM brings them back
                        await self._process(client, entries, recovered=None)
                    attempt = 0
                except _redis_errors() as exc:
                    attempt += 1
                    log.warning(
                        "redis consumer %s/%s: %s: %s; retrying",
                        self.group,
                        self.consumer,
                        type(exc).__name__,
                        exc,
                    )
                    await anyio.sleep(_backoff(attempt, 0.05, 2.0))
                    continue
                except ResponseError as exc:
                    if "NOGROUP" not in str(exc):
                        raise
                    # Redis restarted without persistence, or the group was deleted
                    log.warning(
                        "redis consumer %s/%s: the group is gone (%s); creating it again",
                        self.group,
                        self.consumer,
                        exc,
                    )
                    await self._create_group(client)
                    continue
                if not entries and until_caught_up and not self._retries:
                    break
            await self._refresh_stats(client)
        finally:
            self._client = None
            with anyio.CancelScope(shield=True):
                await client.aclose()

    async def __aenter__(self) -> RedisStreamConsumer:
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._own_tg = tg
        self._done = anyio.Event()

        async def run() -> None:
            assert self._done is not None
            try:
                await self.run()
            finally:
                self._done.set()

        tg.start_soon(run, name=f"redis consumer {self.group}/{self.consumer}")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.stop()
        tg, self._own_tg = self._own_tg, None
        if tg is not None:
            await tg.__aexit__(None, None, None)

    async def _create_group(self, client: Redis) -> None:
        from redis.exceptions import ResponseError

        try:
            await client.xgroup_create(
                self.stream,
                self.group,
                self.start_id,
                mkstream=True,
                entries_read=await self._entries_before_start(client),
            )
        except ResponseError as exc:
            if not str(exc).startswith("BUSYGROUP"):
                raise

    async def _entries_before_start(self, client: Redis) -> int | None:
        """The ``ENTRIESREAD`` of a new group at ``start_id`` "0" or "$" (Redis >= 7):
        what it will never read on purpose.  Without it, Redis leaves the group's
        counter unset until its first read and then takes every entry trimmed before
        it as read, so ``stats.trimmed`` could not count them."""
        from redis.exceptions import ResponseError

        if self.start_id not in ("0", "0-0", "$"):
            return None  # Redis estimates it
        try:
            info: dict[Any, Any] = dict(await client.xinfo_stream(self.stream))
        except ResponseError:  # no such key: MKSTREAM makes an empty one
            return 0
        added = _info(info, "entries-added")
        if added is None:  # Redis < 7
            return None
        return int(added) if self.start_id == "$" else int(added) - int(_info(info, "length"))

    async def _recover_own(self, client: Redis) -> None:
        """Deliver the entries this consumer read and did not ack in an earlier life."""
        cursor = b"0"
        for _ in range(1_000_000):  # bounded: every round moves the cursor forward
            reply = await client.xreadgroup(
                self.group, self.consumer, {self.stream: cursor}, count=self.batch
            )
            entries = read_entries(reply)
            if not entries:
                return
            self.stats.recovered += len(entries)
            await self._process(client, entries, recovered=await self._deliveries(client, entries))
            cursor = entries[-1][0]

    async def _claim(self, client: Redis) -> None:
        """Take over entries idle for ``claim_idle`` s with other (dead) consumers."""
        start: Any = "0-0"
        for _ in range(10_000):
            reply = await client.xautoclaim(
                self.stream,
                self.group,
                self.consumer,
                int(self.claim_idle * 1000),
                start,
                count=self.batch,
            )
            start, claimed = reply[0], reply[1]
            deleted = reply[2] if len(reply) > 2 else []
            if deleted:
                # trimmed before anyone acked them: XAUTOCLAIM already dropped them from
                # the pending list
                self.stats.lost += len(deleted)
                log.error(
                    "redis consumer %s/%s: %d pending entr(y/ies) were trimmed from %s "
                    "before they were acked (maxlen below the group's lag?): lost",
                    self.group,
                    self.consumer,
                    len(deleted),
                    self.stream,
                )
            entries = [(_bytes(i), _fields(f)) for i, f in claimed]
            # our own failed entries wait for their retry, not for a claim
            entries = [e for e in entries if e[0] not in self._retries]
            if entries:
                self.stats.claimed += len(entries)
                await self._process(
                    client, entries, recovered=await self._deliveries(client, entries)
                )
            if _bytes(start) in (b"0-0", b"0"):
                return

    async def _deliveries(self, client: Redis, entries: list[Entry]) -> dict[bytes, int]:
        """How often Redis delivered each of ``entries`` (all pending with this consumer)."""
        rows = await client.xpending_range(
            self.stream,
            self.group,
            entries[0][0],
            entries[-1][0],
            len(entries) + len(self._retries),
            consumername=self.consumer,
        )
        return {_bytes(row["message_id"]): int(row["times_delivered"]) for row in rows}

    async def _retry_due(self, client: Redis) -> None:
        if not self._retries:
            return
        now = time.monotonic()
        due = [r for r in self._retries.values() if r.due <= now]
        if not due:
            return
        for r in due:
            del self._retries[r.id]
        due.sort(key=lambda r: _id_key(r.id))
        await self._process(client, [(r.id, r.fields) for r in due], recovered=None)

    async def _refresh_stats(self, client: Redis) -> None:
        from redis.exceptions import RedisError

        try:
            groups = await client.xinfo_groups(self.stream)
            stream = await client.xinfo_stream(self.stream)
        except (RedisError, OSError):  # counters only: the next refresh tries again
            return
        for row in groups:
            info: dict[Any, Any] = dict(row)
            if _bytes(_info(info, "name")) == self._group:
                trimmed = _trimmed_unread(info, dict(stream))
                if trimmed is not None and trimmed > self.stats.trimmed:
                    log.error(
                        "redis consumer %s/%s: %d entr(y/ies) of %s were trimmed before the "
                        "group read them (maxlen below the group's lag?): lost, %d in all",
                        self.group,
                        self.consumer,
                        trimmed - self.stats.trimmed,
                        self.stream,
                        trimmed,
                    )
                    self.stats.trimmed = trimmed
                # Redis's lag still counts what was trimmed unread (its count of the
                # entries the group read does not move when MAXLEN skips it ahead)
                self.stats.lag = max(int(_info(info, "lag") or 0) - self.stats.trimmed, 0)
                self.stats.pending = int(_info(info, "pending") or 0)
                return

    # -- delivering ---------------------------------------------------------------------

    async def _process(
        self, client: Redis, entries: list[Entry], *, recovered: dict[bytes, int] | None
    ) -> None:
        """Deliver ``entries`` in order; then, in one MULTI: remember the keys of what
        was delivered, ack it (and the copies and the lost), dead-letter the poison."""
        to_ack: list[bytes] = []
        dead: list[tuple[bytes, dict[bytes, bytes], str]] = []
        decoded: list[tuple[bytes, dict[bytes, bytes], Event, bytes]] = []
        for entry_id, fields in entries:
            if not fields:
                # pending, but trimmed from the stream before anyone acked it
                self.stats.lost += 1
                to_ack.append(entry_id)
                continue
            try:
                event = decode_event(fields[b"e"])
                key = fields[b"p"] + b" " + fields[b"n"]
            except (KeyError, msgspec.DecodeError, msgspec.ValidationError) as exc:
                dead.append((entry_id, fields, f"undecodable: {type(exc).__name__}: {exc}"))
                continue
            if recovered is not None:
                times = recovered.get(entry_id, 1)
                if times > self.max_deliveries:
                    dead.append((entry_id, fields, f"delivered {times} times, never acked"))
                    continue
            decoded.append((entry_id, fields, event, key))
        seen: set[bytes] = set()
        if decoded and self.dedup_window is not None:
            keys = [d[3] for d in decoded]
            scores = await _raw(client, b"ZMSCORE", self._seen, *keys)
            seen = {key for key, score in zip(keys, scores, strict=True) if score is not None}
        done: dict[bytes, float] = {}
        for entry_id, fields, event, key in decoded:
            if key in seen or key in done:
                self.stats.duplicates += 1
                to_ack.append(entry_id)
                continue
            error = await self._deliver(event)
            if error is None:
                self.stats.delivered += 1
                to_ack.append(entry_id)
                done[key] = (event.ts or time.time_ns()) / 1e6
                self._failures.pop(entry_id, None)
                continue
            self.stats.failures += 1
            failures = self._failures.get(entry_id, 0) + 1
            if failures >= self.max_deliveries:
                self._failures.pop(entry_id, None)
                dead.append((entry_id, fields, f"failed {failures} times: {error}"))
            else:
                self._failures[entry_id] = failures
                due = time.monotonic() + self.retry_delay
                self._retries[entry_id] = _Retry(entry_id, fields, due)
        if not (to_ack or dead):
            return
        if not dead:
            # the common case: remember and ack in one script call, packed here (redis-py
            # packs each argument in Python: most of a consumer's time, at 2 per event)
            await self._ack(client, done, to_ack)
        else:
            await self._ack_dead(client, done, to_ack, dead)
        self.stats.acked += len(to_ack) + len(dead)
        self.stats.dead_lettered += len(dead)
        for entry_id, _, reason in dead:
            log.error(
                "redis consumer %s/%s: entry %s moved to %s: %s",
                self.group,
                self.consumer,
                entry_id.decode(),
                self.dead_letter,
                reason,
            )
        self._batches += 1
        if self.dedup_window is not None and self._batches % 256 == 1:
            horizon = time.time() * 1000 - self.dedup_window * 1000
            await client.zremrangebyscore(self._seen_key, "-inf", horizon)

    async def _ack(self, client: Redis, done: dict[bytes, float], to_ack: list[bytes]) -> None:
        """``ZADD <seen> score key ...`` (the keys of ``done``) and ``XACK`` ``to_ack``,
        atomically, in one round trip."""
        args: list[bytes] = [self._group, str(len(done)).encode()]
        for key, score in done.items():
            args += (b"%d" % score, key)
        args += to_ack
        await self._ack_script(client, (self._stream, self._seen), args)

    async def _ack_dead(
        self,
        client: Redis,
        done: dict[bytes, float],
        to_ack: list[bytes],
        dead: list[tuple[bytes, dict[bytes, bytes], str]],
    ) -> None:
        """As ``_ack``, and copy ``dead`` to the dead-letter stream and ack them, in one
        MULTI."""
        async with client.pipeline(transaction=True) as tx:
            if done and self.dedup_window is not None:
                tx.zadd(self._seen_key, done)
            for entry_id, fields, reason in dead:
                record: dict[Any, Any] = dict(fields)
                record.update(
                    {
                        b"id": entry_id,
                        b"stream": self.stream.encode(),
                        b"group": self.group.encode(),
                        b"consumer": self.consumer.encode(),
                        b"error": reason.encode(),
                    }
                )
                tx.xadd(self.dead_letter, record, maxlen=100_000)
            tx.xack(self.stream, self.group, *to_ack, *(d[0] for d in dead))
            await tx.execute()

    async def _deliver(self, event: Event) -> str | None:
        """Hand ``event`` to every observer that wants it; the first failure, as text."""
        kind = event.kind
        for target in self._targets:
            if target.kinds is not None and kind not in target.kinds:
                continue
            try:
                if not target.is_async:
                    target.observer(event)
                elif target.timeout is None:
                    await target.observer(event)
                else:
                    with anyio.fail_after(target.timeout):
                        await target.observer(event)
            except Exception as exc:
                name = getattr(target.observer, "__qualname__", type(target.observer).__name__)
                log.warning(
                    "redis consumer %s/%s: observer %s failed on %s: %s: %s",
                    self.group,
                    self.consumer,
                    name,
                    kind,
                    type(exc).__name__,
                    exc,
                )
                return f"observer {name}: {type(exc).__name__}: {exc}"
        return None


def _info(row: Mapping[Any, Any], field: str) -> Any:
    """A field of an ``XINFO`` reply, keyed by str or by bytes (RESP2 or RESP3)."""
    return row.get(field, row.get(field.encode()))


def _trimmed_unread(group: Mapping[Any, Any], stream: Mapping[Any, Any]) -> int | None:
    """How many entries MAXLEN trimmed before ``group`` read them (the ``XINFO GROUPS``
    row and ``XINFO STREAM`` of Redis >= 7), or None when it cannot be told now.

    Redis counts the entries ever added to the stream (``entries-added``) and, per
    group, those it read (``entries-read``); trimming changes neither.  When nothing
    unread is left between the two ends (the group's last-delivered id is the last id
    added, or is older than the stream's first entry: every entry left is unread), the
    difference, less the entries still unread, is exactly what was trimmed unread.
    Entries removed with ``XDEL`` before the group read them count too.
    """
    read, added = _info(group, "entries-read"), _info(stream, "entries-added")
    if read is None or added is None:  # Redis < 7, or a group that has not read yet
        return None
    last = _id_key(_bytes(_info(group, "last-delivered-id")))
    length = int(_info(stream, "length") or 0)
    if last == _id_key(_bytes(_info(stream, "last-generated-id"))):
        return int(added) - int(read)
    first = _id_key(_bytes(_info(stream, "recorded-first-entry-id") or b"0-0"))
    if length == 0 or last < first:
        return int(added) - int(read) - length
    return None


def _id_key(entry_id: bytes) -> tuple[int, int]:
    ms, _, seq = entry_id.partition(b"-")
    return int(ms), int(seq or 0)


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _check_name(field: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field} must be a non-empty string, got {value!r}")
