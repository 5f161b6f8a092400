"""Export interpose's spans to an OpenTelemetry collector over OTLP, set up in one call.

The pipeline itself depends on ``opentelemetry-api`` only: it creates its spans through
the global tracer provider, or through ``Pipeline(tracer_provider=...)``.  Until an SDK
provider is installed those spans cost next to nothing and go nowhere.  ``configure()``
installs one that batches the spans and sends them to a collector (Jaeger, Phoenix, the
OpenTelemetry Collector, rotel, …)::

    from interpose.observers.otel import configure

    provider = configure("http://127.0.0.1:4318")  # OTLP/HTTP, the global provider
    ...  # run the agent
    provider.shutdown()  # send what is still buffered, then stop the export thread

This module imports the SDK and the exporters lazily, inside ``configure()``: they come
with the ``otlp`` extra (``pip install 'interpose[otlp]'``).

The OpenTelemetry API lets a process set its global tracer provider once; later attempts
are ignored with a logged warning.  ``configure(set_global=True)`` therefore refuses to
run when a global SDK provider is already installed, and says so; with
``set_global=False`` it leaves the global alone and the caller passes the returned
provider to ``Pipeline(tracer_provider=...)``.  Any number of such private providers can
live side by side, e.g. one per collector, or one per test.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit, urlunsplit

from ..errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult
    from opentelemetry.util.types import AttributeValue

__all__ = ["DEFAULT_ENDPOINT", "OTLPProtocol", "configure", "resolve_endpoint"]

log = logging.getLogger("interpose")

OTLPProtocol = Literal["http", "grpc"]
DEFAULT_ENDPOINT = "http://127.0.0.1:4318"
_TRACES_PATH = "/v1/traces"
_INSTALL = "pip install 'interpose[otlp]'"


def resolve_endpoint(endpoint: str, protocol: OTLPProtocol = "http") -> str:
    """The URL that spans are sent to for ``endpoint`` and ``protocol``.

    OTLP/HTTP posts to a signal path: ``/v1/traces`` is appended unless the URL already
    ends with it (``http://host:4318`` → ``http://host:4318/v1/traces``, ``http://host:6006``
    → ``http://host:6006/v1/traces``).  OTLP/gRPC takes ``http://host:port`` (plaintext)
    or ``https://host:port`` (TLS) and no path.

    Raises:
        ConfigError: ``protocol`` is neither "http" nor "grpc"; ``endpoint`` is not an
            ``http://`` or ``https://`` URL with a host; its port is invalid; or, for
            gRPC, it has no port or has a path.
    """
    if protocol not in ("http", "grpc"):
        raise ConfigError(f"protocol must be 'http' or 'grpc', got {protocol!r}")
    if not isinstance(endpoint, str) or not endpoint.strip():
        raise ConfigError(f"endpoint must be a URL such as {DEFAULT_ENDPOINT!r}, got {endpoint!r}")
    endpoint = endpoint.strip()
    if "://" not in endpoint:
        raise ConfigError(
            f"endpoint {endpoint!r} has no scheme: give http://{endpoint} (plaintext) or "
            f"https://{endpoint} (TLS)"
        )
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"endpoint {endpoint!r}: the scheme must be http or https")
    if not parts.hostname:
        raise ConfigError(f"endpoint {endpoint!r} has no host")
    try:
        port = parts.port
    except ValueError as exc:
        raise ConfigError(f"endpoint {endpoint!r}: {exc}") from None
    if protocol == "grpc":
        if port is None:
            raise ConfigError(
                f"endpoint {endpoint!r}: give the collector's OTLP/gRPC port (usually 4317)"
            )
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ConfigError(
                f"endpoint {endpoint!r}: an OTLP/gRPC endpoint is host:port without a path "
                "(a /v1/traces path belongs to protocol='http')"
            )
        return f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path.endswith(_TRACES_PATH):
        path += _TRACES_PATH
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))


def configure(
    endpoint: str = DEFAULT_ENDPOINT,
    *,
    protocol: OTLPProtocol = "http",
    service_name: str = "interpose",
    headers: Mapping[str, str] | None = None,
    set_global: bool = True,
    resource_attributes: Mapping[str, AttributeValue] | None = None,
    timeout: float = 10.0,
    on_export: Callable[[int, bool], object] | None = None,
) -> TracerProvider:
    """Build an SDK tracer provider that sends every span to an OTLP collector.

    The provider has a ``service.name`` resource (plus ``resource_attributes``, plus what
    ``OTEL_RESOURCE_ATTRIBUTES`` holds) and one ``BatchSpanProcessor`` around an OTLP span
    exporter: spans are queued when they end and sent from a background thread.  Call
    ``provider.force_flush()`` to send the queue now, and ``provider.shutdown()`` before
    the process exits (the SDK also does it at interpreter exit).

    Args:
        endpoint: the collector; see ``resolve_endpoint`` for the accepted forms.
        protocol: "http" (OTLP/HTTP protobuf, port 4318 by convention) or "grpc"
            (OTLP/gRPC, port 4317).
        service_name: the ``service.name`` resource attribute viewers group traces by.
        headers: sent with every export request (e.g. an API key); for gRPC the keys
            are lower-cased, as gRPC metadata requires.
        set_global: install the provider as the process's global tracer provider, which
            every ``Pipeline`` without a ``tracer_provider=`` uses.  With False, pass the
            returned provider to ``Pipeline(tracer_provider=...)``.
        resource_attributes: more resource attributes (``deployment.environment``, …).
        timeout: seconds one export may take, retries included; a collector that does
            not answer costs at most this much per batch (and at shutdown).
        on_export: ``(span_count, accepted)``, called from the export thread after each
            batch; for counting or alerting.  Its exceptions are logged and ignored.

    Returns:
        The SDK ``TracerProvider``: keep it to ``force_flush()`` and ``shutdown()``.

    Raises:
        ConfigError: an invalid ``protocol``, ``endpoint`` (see ``resolve_endpoint``),
            ``service_name``, ``headers`` or ``timeout``; or ``set_global=True`` while
            another global tracer provider is installed.
        ImportError: the OpenTelemetry SDK or the OTLP exporter for ``protocol`` is not
            installed (``pip install 'interpose[otlp]'``).
    """
    url = resolve_endpoint(endpoint, protocol)
    if not isinstance(service_name, str) or not service_name:
        raise ConfigError(f"service_name must be a non-empty string, got {service_name!r}")
    if headers is not None and not (
        isinstance(headers, Mapping)
        and all(isinstance(key, str) and isinstance(value, str) for key, value in headers.items())
    ):
        raise ConfigError("headers must map strings to strings")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")

    from opentelemetry import trace

    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise ImportError(
            f"exporting spans needs the OpenTelemetry SDK ({exc}); install it with: {_INSTALL}"
        ) from exc

    if set_global and not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        # the API would ignore the second provider (and only log it): say so instead
        raise ConfigError(
            "a global tracer provider is already installed, and OpenTelemetry lets a process "
            "set it only once; call configure(..., set_global=False) and pass the returned "
            "provider to Pipeline(tracer_provider=...)"
        )

    exporter = _exporter(url, protocol, headers, float(timeout))
    if on_export is not None:
        exporter = _reporting(exporter, on_export)
    attributes: dict[str, AttributeValue] = dict(resource_attributes or {})
    attributes["service.name"] = service_name
    provider = TracerProvider(resource=Resource.create(attributes))
    provider.add_span_processor(BatchSpanProcessor(exporter, export_timeout_millis=timeout * 1000))
    if set_global:
        trace.set_tracer_provider(provider)
        if trace.get_tracer_provider() is not provider:  # another thread won the race
            provider.shutdown()
            raise ConfigError(
                "a global tracer provider was installed concurrently; call "
                "configure(..., set_global=False) and pass the returned provider to "
                "Pipeline(tracer_provider=...)"
            )
    return provider


def _exporter(
    url: str, protocol: OTLPProtocol, headers: Mapping[str, str] | None, timeout: float
) -> SpanExporter:
    """The OTLP span exporter for ``protocol``; raises ImportError naming the extra."""
    if protocol == "http":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                OTLPSpanExporter as HTTPExporter,
            )
        except ImportError as exc:
            raise ImportError(
                f"OTLP/HTTP export needs opentelemetry-exporter-otlp-proto-http ({exc}); "
                f"install it with: {_INSTALL}"
            ) from exc
        return HTTPExporter(endpoint=url, headers=dict(headers or {}), timeout=timeout)
    try:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GRPCExporter,
        )
    except ImportError as exc:
        raise ImportError(
            f"OTLP/gRPC export needs opentelemetry-exporter-otlp-proto-grpc ({exc}); "
            f"install it with: {_INSTALL}"
        ) from exc
    parts = urlsplit(url)
    # gRPC metadata keys must be lower case; the exporter sends them as given
    metadata = {key.lower(): value for key, value in (headers or {}).items()}
    return GRPCExporter(
        endpoint=parts.netloc,
        insecure=parts.scheme == "http",
        headers=metadata,
        timeout=timeout,
    )


def _reporting(exporter: SpanExporter, on_export: Callable[[int, bool], object]) -> SpanExporter:
    """Wrap ``exporter`` so that ``on_export(count, accepted)`` hears of every batch."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class ReportingExporter(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            result = exporter.export(spans)
            try:
                on_export(len(spans), result is SpanExportResult.SUCCESS)
            except Exception:
                log.exception("interpose: the on_export callback failed")
            return result

        def shutdown(self) -> None:
            exporter.shutdown()

        def force_flush(self, timeout_millis: int = 30000) -> bool:
            return exporter.force_flush(timeout_millis)

    return ReportingExporter()
