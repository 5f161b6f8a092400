"""``interpose demo [--workdir DIR] [--otlp URL]``: the scripted agent session, its
spans optionally sent to a collector."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from ._common import Subparsers, command, usage

__all__ = ["add_parser", "run", "unreachable"]


def add_parser(sub: Subparsers) -> None:
    """The ``demo`` subcommand."""
    demo = command(
        sub,
        "demo",
        "run a scripted agent session through a pipeline",
        "Run a scripted agent session (no network, no LLM) through a pipeline with the "
        "default guards and print what each tool call became: allowed, blocked, rewritten.",
        "  0  the session ran\n"
        "  1  --otlp: the collector did not accept every span\n"
        "  2  bad input: --workdir is a file or holds files the demo did not write; --otlp "
        "is not a URL or the otlp extra is missing\n",
    )
    demo.add_argument("--workdir", default=None, help="scratch directory for the demo's tools")
    demo.add_argument(
        "--otlp",
        metavar="URL",
        default=None,
        help="send the session's spans to this OpenTelemetry collector "
        "(e.g. http://127.0.0.1:4318; needs the otlp extra)",
    )
    demo.add_argument(
        "--otlp-protocol",
        choices=("http", "grpc"),
        default="http",
        help="OTLP over HTTP (port 4318 by convention, the default) or gRPC (4317)",
    )
    demo.set_defaults(func=run)


def _workdir(value: str | None) -> None:
    """``demo --workdir``: a directory, created if missing."""
    if value is None:
        return
    root = Path(value).expanduser()
    if root.exists() and not root.is_dir():
        raise usage(f"--workdir {value}: not a directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise usage(f"--workdir {value}: cannot create it: {exc.strerror}") from None


def run(args: argparse.Namespace) -> int:
    from ..agent.demo import run_demo

    _workdir(args.workdir)
    if args.otlp is None:
        code: int = run_demo(workdir=args.workdir)
        return code
    return _run_exported(args, run_demo)


def _run_exported(args: argparse.Namespace, run_demo: Callable[..., int]) -> int:
    """``interpose demo --otlp URL``: the demo, its spans sent to a collector.

    Exits with the demo's own code when it fails, 2 when the export cannot be set up or
    nothing accepts a connection at the collector's address, 1 when the collector did not
    accept every span, else 0.

    Raises:
        UsageError: the collector cannot be reached (checked once, before the demo runs).
    """
    import logging

    from ..errors import ConfigError
    from ..observers.otel import configure, resolve_endpoint

    protocol = args.otlp_protocol
    sent = [0, 0]  # spans accepted, spans refused

    def count(spans: int, accepted: bool) -> None:
        sent[0 if accepted else 1] += spans

    try:
        target = resolve_endpoint(args.otlp, protocol)
    except ConfigError as exc:
        raise usage(f"--otlp: {exc}") from None
    why = unreachable(target)
    if why is not None:
        raise usage(f"cannot reach the collector at {target}: {why}")
    try:
        provider = configure(
            args.otlp, protocol=protocol, service_name="interpose-demo", on_export=count
        )
    except (ConfigError, ImportError) as exc:
        raise usage(f"--otlp: {exc}") from None
    # a collector that goes away during the demo: the exporter's retry warnings would
    # repeat, raw, what the one line below says about the spans it refused
    exporters = logging.getLogger("opentelemetry.exporter.otlp")
    level = exporters.level
    exporters.setLevel(logging.CRITICAL)
    try:
        code: int = run_demo(workdir=args.workdir)
    finally:
        # sends what is still queued (bounded by the exporter's timeout)
        provider.shutdown()
        exporters.setLevel(level)
    if code != 0:  # the demo did not run (it said why)
        return code
    wire = "OTLP/HTTP" if protocol == "http" else "OTLP/gRPC"
    if sent[1]:
        print(
            f"interpose demo: the collector at {target} ({wire}) did not accept "
            f"{sent[1]} of {sum(sent)} spans; is it running?",
            file=sys.stderr,
        )
        return code or 1
    print(f"interpose demo: sent {sent[0]} spans to {target} ({wire}), service.name=interpose-demo")
    return code


def unreachable(url: str, timeout: float = 2.0) -> str | None:
    """Why nothing accepts a TCP connection at ``url``'s host and port (one attempt,
    within ``timeout`` s), or None when something does, or when the exporter would go
    through a proxy (``http_proxy``, ``https_proxy``, ``grpc_proxy``, not ``no_proxy``)."""
    import socket
    from urllib.parse import urlsplit
    from urllib.request import getproxies, proxy_bypass

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    proxies = getproxies()
    if (proxies.get(parts.scheme) or proxies.get("grpc")) and not proxy_bypass(host):
        return None  # only the proxy knows whether the collector is there
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except ConnectionRefusedError:
        return "connection refused"
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except socket.gaierror as exc:
        return f"unknown host {host!r} ({exc.strerror})"
    except OSError as exc:
        return exc.strerror or type(exc).__name__
