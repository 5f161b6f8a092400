"""The ``interpose`` command: ``interpose demo``, ``interpose bench``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["main"]


def _find_benchmarks() -> Path | None:
    """benchmarks/ of the source checkout (editable install) or of the current directory."""
    for root in (Path(__file__).resolve().parent.parent, Path.cwd()):
        candidate = root / "benchmarks" / "bench_tool_call.py"
        if candidate.is_file():
            return candidate
    return None


def _demo(args: argparse.Namespace) -> int:
    from .agent.demo import run_demo

    if args.otlp is None:
        code: int = run_demo(workdir=args.workdir)
        return code
    return _demo_exported(args, run_demo)


def _demo_exported(args: argparse.Namespace, run_demo: Callable[..., int]) -> int:
    """``interpose demo --otlp URL``: the demo, its spans sent to a collector.

    Exits with the demo's own code when it fails, 2 when the export cannot be set up, 1
    when the collector did not accept every span (the SDK logs why on stderr), else 0.
    """
    from .errors import ConfigError
    from .observers.otel import configure, resolve_endpoint

    protocol = args.otlp_protocol
    sent = [0, 0]  # spans accepted, spans refused

    def count(spans: int, accepted: bool) -> None:
        sent[0 if accepted else 1] += spans

    try:
        target = resolve_endpoint(args.otlp, protocol)
        provider = configure(
            args.otlp, protocol=protocol, service_name="interpose-demo", on_export=count
        )
    except (ConfigError, ImportError) as exc:
        print(f"interpose demo: --otlp: {exc}", file=sys.stderr)
        return 2
    try:
        code: int = run_demo(workdir=args.workdir)
    finally:
        # sends what is still queued (bounded by the exporter's timeout)
        provider.shutdown()
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


def _bench(args: argparse.Namespace) -> int:
    import runpy

    script = _find_benchmarks()
    if script is None:
        print(
            "interpose bench: benchmarks/bench_tool_call.py not found; run it from a source "
            "checkout of interpose",
            file=sys.stderr,
        )
        return 2
    sys.argv = [str(script), *(["--quick"] if args.quick else [])]
    runpy.run_path(str(script), run_name="__main__")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="interpose", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run a scripted agent session through a pipeline")
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
    demo.set_defaults(func=_demo)
    bench = sub.add_parser("bench", help="measure per-tool-call overhead against its floor")
    bench.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    bench.set_defaults(func=_bench)
    args = parser.parse_args(argv)
    try:
        result: int = args.func(args)
    except BrokenPipeError:
        # the reader went away (`interpose demo | head`): stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
