"""Metrics from bus events, through the OpenTelemetry metrics API (``opentelemetry-api``).

Instruments (meter ``interpose``):

- ``interpose.tool.calls`` (counter, ``{call}``): one per tool call, by
  ``gen_ai.tool.name``, ``interpose.status`` (ok, error, blocked, denied, responded,
  aborted) and ``gen_ai.agent.id``.  A call that tool.after retried counts once, with
  the status of its last run (the ends of earlier runs have ``retried=True``).
- ``interpose.tool.duration`` (histogram, ``s``): how long the tool ran, same
  attributes, one point per run; only runs of the tool (a blocked, denied or answered
  call took no tool time and would only drag the distribution towards zero).
- ``interpose.interceptor.duration`` (histogram, ``s``): the time each interceptor took
  on a tool call, by ``interpose.interceptor.id``.
- ``interpose.interceptor.failures`` (counter, ``{failure}``): ``interceptor_failed``
  events, by ``interpose.interceptor.id``, ``interpose.hook``, ``interpose.policy`` and
  ``error.type``.  Failing observers count here too, with ``interpose.hook="observer"``.
- ``interpose.shadow.decisions`` (counter, ``{decision}``): ``shadow_decision`` events,
  by ``interpose.interceptor.id``, ``interpose.hook``, ``interpose.shadow.decision`` and
  ``interpose.shadow.would_block``: what shadow-mode registrations would have done.
- ``interpose.bus.dropped`` (observable counter, ``{event}``): events dropped by the
  bus, by subscription (``interpose.subscription``), read from
  ``Subscription.stats.dropped`` of every bus the observer is attached to.

Durations are in seconds, as in the OpenTelemetry semantic conventions (e.g.
``gen_ai.client.operation.duration``); the events carry nanoseconds.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry import metrics

from ..bus.events import Event, InterceptorFailed, ShadowDecision, ToolExecEnd

if TYPE_CHECKING:
    from ..bus.host import Host
    from ..bus.memory import InMemoryBus, Overflow, Subscription, SubscriptionStats

__all__ = ["METRIC_EVENTS", "MetricsObserver"]

METRIC_EVENTS = frozenset({"tool_exec_end", "interceptor_failed", "shadow_decision"})
"""The event kinds ``MetricsObserver`` reads (what ``attach`` subscribes it to)."""

# Bucket boundaries (s), offered to the SDK as advice: its default boundaries
# (0, 5, 10, ... 10000) suit milliseconds and would put every call in one bucket.
TOOL_BUCKETS = (
    0.0001,
    0.0005,
    0.001,
    0.005,
    0.01,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
)
INTERCEPTOR_BUCKETS = (
    0.000001,
    0.000005,
    0.00001,
    0.00005,
    0.0001,
    0.0005,
    0.001,
    0.005,
    0.01,
    0.05,
    0.1,
    0.5,
    1.0,
    5.0,
)
_NOT_RUN = frozenset({"blocked", "denied", "responded", "aborted"})


class MetricsObserver:
    """Turn tool-call and failure events into OpenTelemetry metrics.

    Args:
        meter_provider: the provider to get the ``interpose`` meter from; None uses the
            global one (``opentelemetry.metrics.get_meter_provider()``), which records
            nothing until an SDK provider is set.
    """

    def __init__(self, meter_provider: metrics.MeterProvider | None = None) -> None:
        from .._version import __version__

        meter = metrics.get_meter("interpose", __version__, meter_provider=meter_provider)
        self.meter = meter
        self.tool_calls = meter.create_counter(
            "interpose.tool.calls", unit="{call}", description="Tool calls, by outcome."
        )
        self.tool_duration = _histogram(
            meter, "interpose.tool.duration", "How long the tool ran.", TOOL_BUCKETS
        )
        self.interceptor_duration = _histogram(
            meter,
            "interpose.interceptor.duration",
            "How long an interceptor took on a tool call.",
            INTERCEPTOR_BUCKETS,
        )
        self.failures = meter.create_counter(
            "interpose.interceptor.failures",
            unit="{failure}",
            description="Interceptors, middleware layers and observers that raised or timed out.",
        )
        self.shadow_decisions = meter.create_counter(
            "interpose.shadow.decisions",
            unit="{decision}",
            description="What shadow-mode registrations would have done, not enforced.",
        )
        self._buses: list[weakref.ref[InMemoryBus]] = []
        # every subscription's counters seen so far, kept after its bus is gone so that
        # the cumulative count never goes down (the stats objects hold nothing else)
        self._stats: dict[int, tuple[str, SubscriptionStats]] = {}
        self.dropped = meter.create_observable_counter(
            "interpose.bus.dropped",
            callbacks=[self._observe_dropped],
            unit="{event}",
            description="Events a full subscription buffer dropped.",
        )

    def __repr__(self) -> str:
        return f"<MetricsObserver attached to {len(self._buses)} bus(es)>"

    def __call__(self, event: Event, /) -> None:
        """Record ``event`` (other kinds than ``METRIC_EVENTS`` are ignored)."""
        if isinstance(event, ToolExecEnd):
            attributes = {
                "gen_ai.tool.name": event.tool_name,
                "interpose.status": event.status,
                "gen_ai.agent.id": event.agent_id,
            }
            if not event.retried:
                self.tool_calls.add(1, attributes)
            # a tool that did not run has duration 0; after-hooks may relabel one that did
            if event.duration_ns or event.status not in _NOT_RUN:
                self.tool_duration.record(event.duration_ns / 1e9, attributes)
            record = self.interceptor_duration.record
            # interceptor_ns may be shorter: middleware layers are not timed on their own
            # (and zip without strict=: the keyword costs ~130 ns a call)
            for interceptor, ns in zip(event.interceptors, event.interceptor_ns):  # noqa: B905
                record(ns / 1e9, {"interpose.interceptor.id": interceptor})
        elif isinstance(event, ShadowDecision):
            self.shadow_decisions.add(
                1,
                {
                    "interpose.interceptor.id": event.interceptor_id,
                    "interpose.hook": event.hook,
                    "interpose.shadow.decision": event.decision,
                    "interpose.shadow.would_block": event.would_block,
                },
            )
        elif isinstance(event, InterceptorFailed):
            self.failures.add(
                1,
                {
                    "interpose.interceptor.id": event.interceptor_id,
                    "interpose.hook": event.hook,
                    "interpose.policy": event.policy,
                    "error.type": event.error_type,
                },
            )

    def attach(
        self,
        pipe: Host,
        *,
        buffer: int = 1024,
        overflow: Overflow = "block",
        name: str = "metrics",
    ) -> Subscription:
        """Subscribe this observer to the kinds it reads, and count ``pipe``'s bus drops.

        Raises:
            ValueError: a non-positive buffer or an unknown overflow policy.
        """
        sub = pipe.subscribe(
            self, events=METRIC_EVENTS, buffer=buffer, overflow=overflow, name=name
        )
        # the metric reader calls back from its own thread: replace the list, never edit it
        buses = [ref for ref in self._buses if ref() is not None and ref() is not pipe.bus]
        self._buses = [*buses, weakref.ref(pipe.bus)]
        self._remember(pipe.bus)
        return sub

    def _remember(self, bus: InMemoryBus) -> None:
        for sub in list(bus.subscriptions):
            self._stats.setdefault(id(sub.stats), (sub.name, sub.stats))

    def _observe_dropped(self, options: metrics.CallbackOptions) -> Iterable[metrics.Observation]:
        """The drop counters of every subscription on the attached buses, by name
        (subscriptions that share a name, e.g. on two pipelines, are added up)."""
        for ref in self._buses:
            bus = ref()
            if bus is not None:
                self._remember(bus)
        dropped: dict[str, int] = {}
        for name, stats in list(self._stats.values()):
            dropped[name] = dropped.get(name, 0) + stats.dropped
        return [
            metrics.Observation(count, {"interpose.subscription": name})
            for name, count in dropped.items()
        ]


def _histogram(
    meter: metrics.Meter, name: str, description: str, buckets: Sequence[float]
) -> metrics.Histogram:
    """A histogram in seconds, with bucket advice where the API takes it (>= 1.30)."""
    try:
        return meter.create_histogram(
            name, unit="s", description=description, explicit_bucket_boundaries_advisory=buckets
        )
    except TypeError:  # an older opentelemetry-api
        create: Any = meter.create_histogram
        histogram: metrics.Histogram = create(name, unit="s", description=description)
        return histogram
