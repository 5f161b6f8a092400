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

The code: ``common`` (connecting, raw commands, reply shapes), ``stats`` (counters and
their OpenTelemetry instruments), ``publisher`` and ``consumer``.
"""

from __future__ import annotations

from .common import read_entries
from .consumer import RedisStreamConsumer
from .publisher import RedisStreamPublisher
from .stats import ConsumerStats, PublisherStats

__all__ = [
    "ConsumerStats",
    "PublisherStats",
    "RedisStreamConsumer",
    "RedisStreamPublisher",
    "read_entries",
]
