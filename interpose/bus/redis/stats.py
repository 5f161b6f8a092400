"""The counters of Redis publishers and consumers, and the OpenTelemetry instruments
(``interpose.fleet.*``) that read them."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from opentelemetry import metrics

__all__ = ["ConsumerStats", "FleetMetrics", "PublisherStats"]


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


class CountedPublisher(Protocol):
    """A publisher as the instruments read it (``RedisStreamPublisher``)."""

    stream: str

    @property
    def stats(self) -> PublisherStats: ...


class CountedConsumer(Protocol):
    """A consumer as the instruments read it (``RedisStreamConsumer``)."""

    stream: str
    group: str
    stats: ConsumerStats


class FleetMetrics:
    """One set of observable instruments per meter provider, reading the counters of
    every live publisher and consumer (so that many of them never register an
    instrument twice)."""

    _by_provider: dict[int, FleetMetrics] = {}  # noqa: RUF012 - a per-class registry

    def __init__(self, meter_provider: metrics.MeterProvider | None) -> None:
        from opentelemetry import metrics

        from ..._version import __version__

        self.publishers: weakref.WeakSet[CountedPublisher] = weakref.WeakSet()
        self.consumers: weakref.WeakSet[CountedConsumer] = weakref.WeakSet()
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
    def get(cls, meter_provider: metrics.MeterProvider | None) -> FleetMetrics:
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
