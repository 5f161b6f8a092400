"""``RedisStreamConsumer``: reads a Redis Stream with a consumer group and delivers its
events to observers, at least once (see the package docstring, ``interpose.bus.redis``)."""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import msgspec

from ..._callables import is_async_callable
from ..events import Event, decode_event
from ..memory import event_kinds
from .common import (
    DEFAULT_STREAM,
    DEFAULT_URL,
    Entry,
    RespVersion,
    Script,
    as_bytes,
    as_fields,
    backoff_delay,
    check_name,
    check_url,
    connect,
    positive_int,
    raw_command,
    raw_entries,
    read_entries,
    redis_errors,
)
from .stats import ConsumerStats, FleetMetrics

if TYPE_CHECKING:
    from opentelemetry import metrics
    from redis.asyncio import Redis

__all__ = ["RedisStreamConsumer", "trimmed_unread"]

log = logging.getLogger("interpose.bus.redis")

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
        url: str = DEFAULT_URL,
        stream: str = DEFAULT_STREAM,
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
        protocol: RespVersion = 2,
        meter_provider: metrics.MeterProvider | None = None,
    ) -> None:
        for name, value in (("stream", stream), ("group", group)):
            check_name(name, value)
        consumer = consumer or f"{socket.gethostname()}:{os.getpid()}"
        check_name("consumer", consumer)
        for name, number in (("batch", batch), ("max_deliveries", max_deliveries)):
            if not positive_int(number):
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
        self._protocol: RespVersion = protocol
        self._seen_key = f"{stream}:seen:{group}"
        self._seen = self._seen_key.encode()
        self._stream = stream.encode()
        self._group = group.encode()
        self._consumer = consumer.encode()
        self._batch = str(batch).encode()
        self._ack_script = Script(_ACK_AND_REMEMBER)
        self._targets: list[_Target] = []
        self._retries: dict[bytes, _Retry] = {}
        self._failures: dict[bytes, int] = {}
        self._stop = False
        self._client: Redis | None = None
        self._own_tg: anyio.abc.TaskGroup | None = None
        self._done: anyio.Event | None = None
        self._batches = 0
        # a bad URL fails here, not in the consumer's task
        check_url(url)
        FleetMetrics.get(meter_provider).consumers.add(self)

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
        client = self._client = connect(self.url, self._protocol, None)
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
                    reply = await raw_command(
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
                    entries = raw_entries(reply)
                    if entries:
                        # a connection lost before the ack leaves the delivered entries
                        # pending with this consumer: XAUTOCLAIM brings them back
                        await self._process(client, entries, recovered=None)
                    attempt = 0
                except redis_errors() as exc:
                    attempt += 1
                    log.warning(
                        "redis consumer %s/%s: %s: %s; retrying",
                        self.group,
                        self.consumer,
                        type(exc).__name__,
                        exc,
                    )
                    await anyio.sleep(backoff_delay(attempt, 0.05, 2.0))
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
            entries = [(as_bytes(i), as_fields(f)) for i, f in claimed]
            # our own failed entries wait for their retry, not for a claim
            entries = [e for e in entries if e[0] not in self._retries]
            if entries:
                self.stats.claimed += len(entries)
                await self._process(
                    client, entries, recovered=await self._deliveries(client, entries)
                )
            if as_bytes(start) in (b"0-0", b"0"):
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
        return {as_bytes(row["message_id"]): int(row["times_delivered"]) for row in rows}

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
            if as_bytes(_info(info, "name")) == self._group:
                trimmed = trimmed_unread(info, dict(stream))
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
            scores = await raw_command(client, b"ZMSCORE", self._seen, *keys)
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


def trimmed_unread(group: Mapping[Any, Any], stream: Mapping[Any, Any]) -> int | None:
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
    last = _id_key(as_bytes(_info(group, "last-delivered-id")))
    length = int(_info(stream, "length") or 0)
    if last == _id_key(as_bytes(_info(stream, "last-generated-id"))):
        return int(added) - int(read)
    first = _id_key(as_bytes(_info(stream, "recorded-first-entry-id") or b"0-0"))
    if length == 0 or last < first:
        return int(added) - int(read) - length
    return None


def _id_key(entry_id: bytes) -> tuple[int, int]:
    ms, _, seq = entry_id.partition(b"-")
    return int(ms), int(seq or 0)
