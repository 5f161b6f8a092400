"""The decision probe: a tracer provider the candidate pipeline traces to during a
replay; its spans are never exported, it only notes each handler's decision."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.trace import INVALID_SPAN_CONTEXT, NonRecordingSpan

__all__ = ["ProbeProvider"]


class _ProbeSpan(NonRecordingSpan):
    """A span that is never exported; it notes the decision an instrumented handler
    reports (``interpose.decision``), with the handler's id and hook."""

    def __init__(self, attributes: Any, sink: list[tuple[str, str, str]]) -> None:
        super().__init__(INVALID_SPAN_CONTEXT)
        attributes = attributes or {}
        self._id = str(attributes.get("interpose.interceptor.id", ""))
        self._hook = str(attributes.get("interpose.hook", ""))
        self._sink = sink

    def set_attribute(self, key: str, value: Any) -> None:
        if key == "interpose.decision" and self._id:
            self._sink.append((self._id, self._hook, str(value)))


class _ProbeTracer(otel_trace.Tracer):
    def __init__(self, sink: list[tuple[str, str, str]]) -> None:
        self.sink = sink

    def start_span(self, name: str, *args: Any, **kwargs: Any) -> otel_trace.Span:
        return _ProbeSpan(kwargs.get("attributes"), self.sink)

    @contextmanager
    def start_as_current_span(  # type: ignore[override]
        self, name: str, *args: Any, **kwargs: Any
    ) -> Iterator[otel_trace.Span]:
        yield _ProbeSpan(kwargs.get("attributes"), self.sink)


class ProbeProvider(otel_trace.TracerProvider):
    """Notes ``(handler id, hook, decision)`` in ``decisions`` for each decision an
    instrumented handler reports."""

    def __init__(self) -> None:
        self.decisions: list[tuple[str, str, str]] = []
        self.tracer = _ProbeTracer(self.decisions)

    def get_tracer(self, *args: Any, **kwargs: Any) -> otel_trace.Tracer:
        return self.tracer
