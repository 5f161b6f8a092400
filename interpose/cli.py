"""The ``interpose`` command: ``interpose demo``, ``interpose bench``, ``interpose check``,
``interpose run-hook-test``, ``interpose replay``, ``interpose mcp-proxy``, ``interpose tail``,
``interpose audit``."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Built, Config
    from .pipeline.registry import Registration

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

    Exits with the demo's own code when it fails, 2 when the export cannot be set up or
    nothing accepts a connection at the collector's address, 1 when the collector did not
    accept every span, else 0.

    Raises:
        UsageError: the collector cannot be reached (checked once, before the demo runs).
    """
    import logging

    from .errors import ConfigError, UsageError
    from .observers.otel import configure, resolve_endpoint

    protocol = args.otlp_protocol
    sent = [0, 0]  # spans accepted, spans refused

    def count(spans: int, accepted: bool) -> None:
        sent[0 if accepted else 1] += spans

    try:
        target = resolve_endpoint(args.otlp, protocol)
    except ConfigError as exc:
        print(f"interpose demo: --otlp: {exc}", file=sys.stderr)
        return 2
    why = _unreachable(target)
    if why is not None:
        raise UsageError(f"cannot reach the collector at {target}: {why}")
    try:
        provider = configure(
            args.otlp, protocol=protocol, service_name="interpose-demo", on_export=count
        )
    except (ConfigError, ImportError) as exc:
        print(f"interpose demo: --otlp: {exc}", file=sys.stderr)
        return 2
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


def _unreachable(url: str, timeout: float = 2.0) -> str | None:
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
    sys.argv = [
        str(script),
        *(["--quick"] if args.quick else []),
        *(["--plot", args.plot] if args.plot else []),
        *(["--clock", args.clock] if args.clock != "wall" else []),
    ]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:  # the script's own exit status (2: --plot without matplotlib)
        return exc.code if isinstance(exc.code, int) else 1
    return 0


def _load(path: str) -> Built | None:
    """Load and describe a config for ``check`` / ``run-hook-test``; None (after printing
    the error on stderr) when it is invalid."""
    from .config import describe, load_config
    from .errors import ConfigError

    try:
        config = load_config(path)
        return describe(config, base_dir=Path(path).resolve().parent, source=path)
    except ConfigError as exc:
        print(f"interpose: {exc}", file=sys.stderr)
        return None


def _check(args: argparse.Namespace) -> int:
    """``interpose check FILE``: validate a config and print its stack in execution order.

    Exits 0 when the file is valid, 1 (the error on stderr) when it is not.
    """
    built = _load(args.file)
    if built is None:
        return 1
    print(f"{args.file}: OK")
    for line in _stack_lines(built):
        print(line)
    return 0


def _seconds(value: float | None) -> str:
    return "none" if value is None else f"{value:g}s"


def _matcher(reg: Registration, built: Built) -> str:
    """The tools and agents a registration applies to, as the config spelled them."""
    import re as _re

    shown = built.matchers.get(reg.id)
    if shown is None:
        matcher = reg.tool_matcher
        if matcher is None:
            shown = "*"
        elif isinstance(matcher, _re.Pattern):
            shown = f"/{matcher.pattern}/"
        elif isinstance(matcher, str):
            shown = matcher
        else:
            shown = ", ".join(matcher)
    shown = shown or "*"
    agents = reg.agent_matcher
    if agents is not None:
        pattern = agents.pattern if isinstance(agents, _re.Pattern) else agents
        shown += f" (agents /{pattern}/)"
    return shown


def _stack_lines(built: Built) -> list[str]:
    """The stack of a built config, stage by stage, each list in execution order; then
    the process hooks, observers and tracing."""
    from .pipeline.hooks import STAGE_HOOKS, STAGES
    from .pipeline.shadow import declared_policy

    pipe = built.pipeline
    registry = pipe.registry
    lines = [
        f"defaults: interceptor_timeout={_seconds(pipe.interceptor_timeout)} "
        f"approval_timeout={_seconds(pipe.approval_timeout)} "
        f"observer_timeout={_seconds(pipe.observer_timeout)} max_retries={pipe.max_retries}",
    ]
    rows: list[tuple[str, ...]] = []
    for stage in STAGES:
        keys = [(stage, "middleware"), *((hook, hook) for hook in STAGE_HOOKS[stage])]
        for key, label in keys:
            for entry in registry.entries(key):
                reg = entry.registration
                rows.append(
                    (
                        stage,
                        label,
                        str(reg.priority),
                        reg.id,
                        _matcher(reg, built),
                        entry.on_error if reg.mode == "enforce" else declared_policy(reg),
                        reg.mode,
                        reg.source,
                    )
                )
    lines.append("")
    if not rows:
        lines.append("stack: empty (nothing is registered)")
    else:
        header = ("stage", "hook", "priority", "id", "tools", "on_error", "mode", "source")
        widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]
        lines.append("stack (execution order):")
        for row in (header, *rows):
            cells = [
                cell.rjust(width) if i == 2 else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=False))
            ]
            lines.append("  " + "  ".join([*cells, row[-1]]).rstrip())
    lines.append("")
    if built.processes:
        lines.append("process hooks:")
        width = max(len(name) for name in built.processes)
        for name, command in built.processes.items():
            lines.append(f"  {name.ljust(width)}  {command}")
    else:
        lines.append("process hooks: none")
    subscriptions = pipe.bus.subscriptions
    if subscriptions:
        lines.append("observers:")
        width = max(len(sub.name) for sub in subscriptions)
        for sub in subscriptions:
            kinds = "every event" if sub.kinds is None else ", ".join(sorted(sub.kinds))
            lines.append(f"  {sub.name.ljust(width)}  {kinds} (overflow={sub.overflow})")
    else:
        lines.append("observers: none")
    content = ", content recorded (redacted)" if built.trace_content else ""
    export = f", exported to {built.exporter}" if built.exporter else ""
    lines.append(f"tracing: {pipe.tracing}{content}{export}")
    if built.priority_order == "picoclaw":
        lines.append(
            "priority order: picoclaw (builtins before process hooks, lower priority "
            "first, ties by name), as interpose priorities:"
        )
        lines += [f"  {line}" for line in built.order] or ["  (nothing to order)"]
    if built.notes:
        lines.append("notes:")
        lines += [f"  {note}" for note in built.notes]
    return lines


def _run_hook_test(args: argparse.Namespace) -> int:
    """``interpose run-hook-test FILE --tool T --args JSON``: one synthetic tool call
    through the configured stack, with a stub tool that only echoes its arguments.

    Exits 0 when the call went through the stack (whatever it decided), 1 when the
    config is invalid, 2 when ``--args`` is not a JSON object.
    """
    try:
        call_args = json.loads(args.args)
    except json.JSONDecodeError as exc:
        print(f"interpose run-hook-test: --args is not JSON: {exc}", file=sys.stderr)
        return 2
    if not isinstance(call_args, dict):
        print("interpose run-hook-test: --args must be a JSON object", file=sys.stderr)
        return 2
    from .config import load_config
    from .errors import ConfigError

    try:
        config = load_config(args.file)
    except ConfigError as exc:
        print(f"interpose: {exc}", file=sys.stderr)
        return 1
    import anyio

    base_dir = Path(args.file).resolve().parent
    lines = anyio.run(
        _one_call, config, base_dir, args.file, args.tool, call_args, args.agent, args.session
    )
    for line in lines:
        print(line)
    return 0


async def _one_call(
    config: Config,
    base_dir: Path,
    file: str,
    tool: str,
    call_args: dict[str, Any],
    agent: str,
    session: str,
) -> list[str]:
    """Build the pipeline, enter it (process hooks start), make the call, and say what
    happened, line by line."""
    from .config import build_pipeline

    exporter, provider = _span_recorder()
    pipe = build_pipeline(
        config,
        base_dir=base_dir,
        source=file,
        tracing="interceptor" if provider is not None else None,
        tracer_provider=provider,
    )
    events: list[Any] = []
    pipe.subscribe(
        events.append,
        events={"tool_exec_start", "tool_exec_skipped", "tool_exec_end", "interceptor_failed"},
        name="run-hook-test",
    )
    received: list[dict[str, Any]] = []

    def stub(args: dict[str, Any]) -> dict[str, Any]:
        received.append(dict(args))
        return {"echo": args}

    async with pipe:
        result = await pipe.call_tool(
            tool, call_args, call=stub, call_id="test-1", agent_id=agent, session_key=session
        )
    lines = [f"call: {tool} {json.dumps(call_args)} (agent {agent})", ""]
    lines += _decisions(exporter, events)
    lines.append("")
    lines.append("events:")
    for event in events:
        lines.append("  " + _describe_event(event))
    lines.append("")
    if received:
        lines.append(f"the tool (a stub) ran with: {json.dumps(received[-1], default=repr)}")
    else:
        lines.append("the tool (a stub) did not run")
    output = json.dumps(result.output, default=repr)
    decided = result.details.get("decided_by")
    by = f" (decided by {decided})" if decided else ""
    lines.append(f"result: {result.status}{by} {output}")
    if provider is not None:
        provider.shutdown()
    return lines


def _span_recorder() -> tuple[Any, Any]:
    """An in-memory span exporter on a private SDK tracer provider, so that each
    interceptor's decision can be read back; (None, None) without the SDK."""
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        return None, None
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def _decisions(exporter: Any, events: list[Any]) -> list[str]:
    """What each interceptor and middleware layer decided, in the order they ran."""
    end = next((e for e in events if e.kind == "tool_exec_end"), None)
    took = dict(zip(end.interceptors, end.interceptor_ns, strict=False)) if end else {}
    rows: list[tuple[str, str, str, str]] = []
    if exporter is not None:
        spans = sorted(
            (
                s
                for s in exporter.get_finished_spans()
                if "interpose.interceptor.id" in s.attributes
            ),
            key=lambda s: s.start_time,
        )
        for span in spans:
            attrs = span.attributes
            ident = str(attrs["interpose.interceptor.id"])
            hook = (
                "middleware" if attrs.get("interpose.middleware") else str(attrs["interpose.hook"])
            )
            ns = took.get(ident, span.end_time - span.start_time)
            rows.append(
                (hook, ident, str(attrs.get("interpose.decision", "?")), f"{ns / 1e6:.2f} ms")
            )
    else:
        for ident, ns in took.items():
            rows.append(("", ident, "ran", f"{ns / 1e6:.2f} ms"))
    if not rows:
        return ["decisions: nothing in the stack applies to this call"]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["decisions (in the order they ran):"]
    for row in rows:
        lines.append(
            "  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "  " + row[3]
        )
    return lines


def _describe_event(event: Any) -> str:
    kind = event.kind
    if kind == "tool_exec_skipped":
        return f"{kind}: {event.why} by {event.decided_by or '?'}: {event.reason}"
    if kind == "tool_exec_end":
        extra = f" by {event.decided_by}" if event.decided_by else ""
        return f"{kind}: status={event.status}{extra}"
    if kind == "interceptor_failed":
        timed = ", timed out" if event.timed_out else ""
        return (
            f"{kind}: {event.hook} {event.interceptor_id} ({event.error}; "
            f"policy {event.policy}{timed})"
        )
    return f"{kind}: {event.tool_name}"


def _replay(args: argparse.Namespace) -> int:
    """``interpose replay LOG... --config NEW.toml [--json] [--all]``: run the recorded
    calls of audit logs through the stack NEW.toml builds (never running a tool) and
    print what it would change.

    Exits 1 when the new stack would block a call the recorded run allowed, 2 when a log
    line or the config cannot be read or the new stack raised on a call, else 0.
    """
    import json

    import anyio

    from .errors import ConfigError
    from .replay import LogError, ReplayError, render, replay_files

    try:
        report = anyio.run(replay_files, args.logs, args.config)
    except (LogError, ReplayError, ConfigError, OSError) as exc:
        print(f"interpose replay: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_json(), indent=2, default=str))
    else:
        for line in render(report, every=args.all):
            print(line)
    return 1 if report.regressions else 0


def _add_replay_parser(sub: Any) -> None:
    replay = sub.add_parser(
        "replay",
        help="replay recorded calls of audit logs through a new config's stack, "
        "never running a tool, and print what it would change",
    )
    replay.add_argument(
        "logs",
        nargs="+",
        metavar="AUDIT.jsonl",
        help="audit logs written with recording on (rotated files: oldest first)",
    )
    replay.add_argument(
        "--config", required=True, metavar="NEW.toml", help="the config of the stack to try"
    )
    replay.add_argument("--json", action="store_true", help="print the report as JSON")
    replay.add_argument(
        "--all", action="store_true", help="list every replayed call, not only the changed ones"
    )
    replay.set_defaults(func=_replay)


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
    bench.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="time by wall time (default) or by CPU time (on a machine shared with other work)",
    )
    bench.add_argument(
        "--plot",
        metavar="PATH",
        default=None,
        help="also draw ns per call against the number of layers into PATH (needs matplotlib)",
    )
    bench.set_defaults(func=_bench)
    check = sub.add_parser(
        "check", help="validate a config file and print the stack it builds, in order"
    )
    check.add_argument("file", help="interpose.toml or a .json file of the same shape")
    check.set_defaults(func=_check)
    hook_test = sub.add_parser(
        "run-hook-test",
        help="send one synthetic tool call through a config's stack (the tool is a stub)",
    )
    hook_test.add_argument("file", help="interpose.toml or a .json file of the same shape")
    hook_test.add_argument("--tool", required=True, help="the tool name, e.g. exec")
    hook_test.add_argument(
        "--args", default="{}", help='the arguments as a JSON object, e.g. {"command": "ls"}'
    )
    hook_test.add_argument("--agent", default="main", help="the agent id (default: main)")
    hook_test.add_argument("--session", default="", help="the session key")
    hook_test.set_defaults(func=_run_hook_test)
    _add_replay_parser(sub)
    from .adapters.mcp.cli import add_parser as add_mcp_proxy

    add_mcp_proxy(sub)
    from .bus.fleet_cli import add_parsers as add_fleet

    add_fleet(sub)
    args = parser.parse_args(argv)
    from .errors import UsageError

    try:
        result: int = args.func(args)
    except UsageError as exc:
        # the one rule for bad input: one line naming what is wrong, no traceback
        print(f"interpose {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # the reader went away (`interpose demo | head`): stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
