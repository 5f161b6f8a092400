"""The builder's steps for ``[observers]``: the audit log (and call recording), logging,
metrics, the Redis Streams publisher and the OTLP export."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ._builder import BuilderBase, seconds

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from ..observers.audit import AuditLog
    from ..pipeline.pipeline import Pipeline
    from .schema import ObserversConfig, OTLPConfig, RedisConfig

__all__ = ["FlushSpans", "ObserverSteps"]


class ObserverSteps(BuilderBase):
    """Subscribes the observers a config describes (stand-ins when ``dry``; none, only
    checked, without ``attach_observers``)."""

    def observers(self, pipe: Pipeline, observers: ObserversConfig) -> None:
        if observers.audit is not None and observers.audit.enabled:
            audit = observers.audit
            path = Path(os.path.normpath(self.base_dir / os.path.expanduser(audit.path)))
            if not path.parent.is_dir():
                self.fail("observers.audit.path", f"{path.parent} is not a directory")
            if path.is_dir():
                self.fail("observers.audit.path", f"{path} is a directory")
            name = f"audit-log {path}"
            if not self.attach_observers:
                pass  # checked; nothing recorded or written
            elif audit.record_args or audit.record_llm or audit.record_messages:
                from ..observers.recording import CallRecorder

                with self.at("observers.audit"):
                    CallRecorder(
                        args=audit.record_args,
                        results=audit.record_results,
                        llm=audit.record_llm,
                        messages=audit.record_messages,
                    ).install(pipe)
            if self.dry:
                pipe.subscribe(_stand_in, events=audit.events, name=name)
            elif self.attach_observers:
                sink = _AuditSink(path, audit.max_bytes or None, audit.backups)
                pipe.subscribe(sink, events=audit.events, overflow="block", name=name)
                pipe.add_service(sink)
                self.deferred.append(lambda: self.open_audit(sink))
        if observers.logging is not None and observers.logging.enabled:
            from ..observers.logs import LoggingObserver

            table = observers.logging
            with self.at("observers.logging.level"):
                observer = LoggingObserver(table.logger, level=table.level, content=table.content)
            if self.attach_observers:
                observer.attach(pipe, events=table.events)
        if observers.metrics is not None and observers.metrics.enabled:
            if not self.attach_observers:
                pass
            elif self.dry:
                pipe.subscribe(_stand_in, name="metrics")
            else:
                from ..observers.metrics import MetricsObserver

                MetricsObserver().attach(pipe)

        if observers.redis is not None and observers.redis.enabled:
            self.redis(pipe, observers.redis)

    def open_audit(self, sink: _AuditSink) -> None:
        """Open the audit log (a deferred step: once the whole config is checked)."""
        with self.at("observers.audit"):
            sink.open()
        self.started.append(sink.log.close)

    def redis(self, pipe: Pipeline, table: RedisConfig) -> None:
        """``[observers.redis]``: a ``RedisStreamPublisher`` attached to ``pipe`` (when
        describing, a stand-in subscription of the same name and policy)."""
        from ..bus.redis import RedisStreamPublisher
        from ..bus.redis.common import check_url

        name = f"redis {table.stream}"
        try:
            with self.at("observers.redis.url"):
                check_url(table.url)
        except ImportError:  # pragma: no cover - depends on the install
            self.fail("observers.redis", "needs redis-py: pip install 'interpose[redis]'")
        if not self.attach_observers:
            return
        if self.dry:
            pipe.subscribe(_stand_in, events=table.events, overflow=table.overflow, name=name)
            return
        with self.at("observers.redis"):
            publisher = RedisStreamPublisher(
                table.url,
                stream=table.stream,
                maxlen=table.maxlen or None,
                overflow=table.overflow,
                queue=table.queue,
                batch=table.batch,
                producer=table.producer or None,
            )
            publisher.attach(pipe, events=table.events, buffer=table.buffer, name=name)

    def otlp(self, table: OTLPConfig, *, describe_only: bool) -> tuple[TracerProvider | None, str]:
        """The exporting provider (None when dry or ``describe_only``) and a
        description of the export."""
        from ..observers.otel import configure, resolve_endpoint

        with self.at("observers.otlp.endpoint"):
            url = resolve_endpoint(table.endpoint, table.protocol)
        wire = "OTLP/HTTP" if table.protocol == "http" else "OTLP/gRPC"
        described = f"{url} ({wire}, service.name={table.service_name})"
        if importlib.util.find_spec("opentelemetry.sdk") is None:
            self.fail(
                "observers.otlp",
                "exporting spans needs the OpenTelemetry SDK: pip install 'interpose[otlp]'",
            )
        if self.dry or describe_only:
            return None, described
        with self.at("observers.otlp"):
            try:
                provider = configure(
                    table.endpoint,
                    protocol=table.protocol,
                    service_name=table.service_name,
                    headers=table.headers,
                    set_global=False,
                    timeout=seconds(table.timeout_ms),
                )
            except ImportError as exc:
                raise ConfigError(str(exc)) from None
        self.started.append(provider.shutdown)  # when a later value is rejected
        return provider, described


def _stand_in(event: object) -> None:
    """The observer subscribed in place of one with side effects, when describing."""


class _AuditSink:
    """The audit log of a config: subscribed once, its file open while the pipeline is
    entered (and from the end of the build, so that a bad path fails the build)."""

    log: AuditLog

    def __init__(self, path: Path, max_bytes: int | None, backups: int) -> None:
        from ..observers.audit import AuditLog

        self._make: Callable[[], AuditLog] = lambda: AuditLog(
            path, max_bytes=max_bytes, backups=backups
        )

    def open(self) -> None:
        self.log = self._make()

    def __call__(self, event: Any, /) -> None:
        self.log(event)

    async def start(self, tg: object) -> None:
        if self.log.closed:
            self.log = self._make()

    async def aclose(self) -> None:
        self.log.close()


class FlushSpans:
    """Sends the spans still queued for export when the pipeline exits."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider

    async def start(self, tg: object) -> None:
        return None

    async def aclose(self) -> None:
        flush = getattr(self.provider, "force_flush", None)
        if flush is not None:
            import anyio.to_thread

            await anyio.to_thread.run_sync(flush)
