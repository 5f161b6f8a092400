"""The ``interpose`` command: ``interpose demo``, ``interpose bench``, ``interpose check``,
``interpose run-hook-test``, ``interpose init``, ``interpose schema``, ``interpose replay``,
``interpose mcp-proxy``, ``interpose tail``, ``interpose audit``.

Bad input to any of them is one line on stderr naming what is wrong, and exit code 2: a
subcommand raises ``UsageError`` (or argparse rejects the arguments), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import Built, Config
    from .errors import UsageError
    from .pipeline.registry import Registration

__all__ = ["main"]


def _version() -> str:
    """The installed package's version (``interpose.__version__`` when run from a source
    tree that is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("interpose")
    except PackageNotFoundError:
        from . import __version__

        return __version__


def _find_benchmarks() -> Path | None:
    """bench_tool_call.py: in the installed package (the wheel ships it as
    ``interpose/_bench/``), else in the source checkout's benchmarks/ (an editable
    install); wherever the command is run from."""
    here = Path(__file__).resolve().parent
    for candidate in (
        here / "_bench" / "bench_tool_call.py",
        here.parent / "benchmarks" / "bench_tool_call.py",
    ):
        if candidate.is_file():
            return candidate
    return None


def _usage(message: str) -> UsageError:
    """The error a subcommand raises for bad input (``main`` prints it, exits 2)."""
    from .errors import UsageError

    return UsageError(message)


def _workdir(value: str | None) -> None:
    """``demo --workdir``: a directory, created if missing."""
    if value is None:
        return
    root = Path(value).expanduser()
    if root.exists() and not root.is_dir():
        raise _usage(f"--workdir {value}: not a directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _usage(f"--workdir {value}: cannot create it: {exc.strerror}") from None


def _demo(args: argparse.Namespace) -> int:
    from .agent.demo import run_demo

    _workdir(args.workdir)
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


def _positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    """An argparse ``type=``: a number above 0."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"expected a number above 0, got {text}")
        return value

    return parse


def _plot_target(path: str) -> None:
    """``bench --plot PATH``, checked before the benchmark runs: matplotlib is installed,
    PATH's directory exists and is writable, and matplotlib can write PATH's format."""
    target = Path(path).expanduser()
    parent = target.parent
    if not parent.is_dir():
        raise _usage(f"--plot {path}: the directory {parent} does not exist")
    if target.is_dir():
        raise _usage(f"--plot {path}: a directory, not a file")
    if not os.access(parent, os.W_OK):
        raise _usage(f"--plot {path}: cannot write to {parent}")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise _usage(
            "--plot needs matplotlib: pip install 'interpose[plot]' (or pip install matplotlib)"
        ) from None
    formats = Figure().canvas.get_supported_filetypes()
    suffix = target.suffix[1:].lower()
    if suffix and suffix not in formats:
        raise _usage(
            f"--plot {path}: matplotlib cannot write .{suffix} files; "
            f"use one of: {', '.join(sorted(formats))}"
        )


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

    if args.plot:
        _plot_target(args.plot)
    script = _find_benchmarks()
    if script is None:
        raise _usage("bench_tool_call.py is not installed with this copy of interpose")
    sys.argv = [
        str(script),
        *(["--quick"] if args.quick else []),
        *(["--rounds", str(args.rounds)] if args.rounds else []),
        *(["--target-ms", str(args.target_ms)] if args.target_ms else []),
        *(["--plot", args.plot] if args.plot else []),
        *(["--clock", args.clock] if args.clock != "wall" else []),
    ]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except SystemExit as exc:  # the script's own exit status (2: --plot without matplotlib)
        return exc.code if isinstance(exc.code, int) else 1
    except ModuleNotFoundError as exc:  # pluggy, the OpenTelemetry SDK: the bench extra
        raise _usage(f"the benchmark needs {exc.name}: pip install 'interpose[bench]'") from None
    return 0


def _existing(file: str) -> None:
    """A config file given on the command line exists (else exit 2, not 1: there is
    nothing to validate)."""
    if not Path(file).is_file():
        what = "a directory, not a file" if Path(file).is_dir() else "no such file"
        raise _usage(f"{file}: {what}")


def _load(path: str) -> tuple[Config, Built] | None:
    """Load and describe a config for ``check``; None (after printing the error on
    stderr) when it is invalid."""
    from .config import describe, load_config
    from .errors import ConfigError

    try:
        config = load_config(path)
        return config, describe(config, base_dir=Path(path).resolve().parent, source=path)
    except ConfigError as exc:
        print(f"interpose: {exc}", file=sys.stderr)
        return None


def _check(args: argparse.Namespace) -> int:
    """``interpose check FILE [--name NAME]``: validate a config, check that its MCP
    servers' commands resolve, and print its stack in execution order and its servers.

    Exits 0 when the file is valid, 1 (each problem on a line of stderr) when it is not,
    2 when there is no such file.
    """
    from .adapters.mcp.config import check_servers

    _existing(args.file)
    loaded = _load(args.file)
    if loaded is None:
        return 1
    config, built = loaded
    base_dir = Path(args.file).resolve().parent
    problems = check_servers(config.mcp.servers, base_dir, name=args.name)
    if problems:
        for problem in problems:
            print(f"interpose: {args.file}: {problem}", file=sys.stderr)
    else:
        print(f"{args.file}: OK")
    for line in [*_stack_lines(built), *_server_lines(config, base_dir)]:
        print(line)
    return 1 if problems else 0


def _server_lines(config: Config, base_dir: Path) -> list[str]:
    """The MCP servers of ``interpose mcp-proxy``, each with how it is reached."""
    from .adapters.mcp.config import describe_server

    servers = config.mcp.servers
    if not servers:
        return []
    width = max(len(name) for name in servers)
    return ["mcp servers:"] + [
        f"  {name.ljust(width)}  {describe_server(table, base_dir)}"
        for name, table in servers.items()
    ]


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
    config is invalid, 2 when there is no such file or ``--args`` is not a JSON object.
    """
    try:
        call_args = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise _usage(f"--args is not JSON: {exc}") from None
    if not isinstance(call_args, dict):
        raise _usage("--args must be a JSON object")
    if not args.tool.strip():
        raise _usage("--tool is empty: give a tool name, e.g. exec")
    _existing(args.file)
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


REPLAY_EXIT_CODES = """\
exit codes:
  0  calls were replayed and the new stack blocks nothing the recorded run allowed
  1  the new stack would block a call the recorded run allowed (a regression)
  2  bad input: a log or the config cannot be read, a log line is not an event, or
     the new stack raised on a call instead of deciding (the message names the line)
  3  no call could be replayed: the logs are empty, hold no call, or were recorded
     without record_args=True (the message says which); a gate never passes on nothing
"""


def _init(args: argparse.Namespace) -> int:
    """``interpose init [PATH] [--force]``: write the commented starter config.

    Exits 0 when it is written, 2 when PATH exists (without ``--force``), its directory
    does not, or it is not a ``.toml`` file.
    """
    from .config.starter import STARTER

    path = Path(args.path).expanduser()
    if path.is_dir():
        path /= "interpose.toml"
    if path.suffix.lower() != ".toml":
        raise _usage(f"{args.path}: the starter file is TOML: give a path ending in .toml")
    if not path.parent.is_dir():
        raise _usage(f"{path}: the directory {path.parent} does not exist")
    try:
        with path.open("w" if args.force else "x", encoding="utf-8") as file:
            file.write(STARTER)
    except FileExistsError:
        raise _usage(f"{path} exists; --force overwrites it") from None
    except OSError as exc:
        raise _usage(f"cannot write {path}: {exc.strerror}") from None
    print(f"wrote {path}; see what it builds: interpose check {path}")
    return 0


def _schema(args: argparse.Namespace) -> int:
    """``interpose schema``: print the JSON Schema of the config file. Exits 0."""
    from .config.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def _replay(args: argparse.Namespace) -> int:
    """``interpose replay LOG... --config NEW.toml [--json] [--all]``: run the recorded
    calls of audit logs through the stack NEW.toml builds (never running a tool) and
    print what it would change.

    The logs are streamed; the report holds the changed calls (``--all``: every call).
    ``--json`` prints the same rows as the text.  Exit status: ``REPLAY_EXIT_CODES``
    (1 on a regression, 2 on bad input, 3 when no call could be replayed, else 0).
    """
    import json

    import anyio

    from .errors import ConfigError
    from .replay import LogError, ReplayError, render, replay_files

    try:
        report = anyio.run(partial(replay_files, args.logs, args.config, every=args.all))
    except (LogError, ReplayError, ConfigError, OSError) as exc:
        print(f"interpose replay: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_json(), indent=2, default=str))
    else:
        for line in render(report):
            print(line)
    nothing = report.nothing_replayed()
    if nothing:
        print(f"interpose replay: {nothing}", file=sys.stderr)
        return 3
    return 1 if report.regressions else 0


def _add_replay_parser(sub: Any) -> None:
    replay = sub.add_parser(
        "replay",
        help="replay recorded calls of audit logs through a new config's stack, "
        "never running a tool, and print what it would change",
        description="Replay the calls recorded in audit logs (written with record_args=True)\n"
        "through the stack NEW.toml builds, never running a tool or a model, and print\n"
        "the calls whose outcome would change, the rules that change them and a summary.\n"
        "The logs are read as a stream: memory holds the report, not the logs.",
        epilog=REPLAY_EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
    replay.add_argument(
        "--json",
        action="store_true",
        help="print the report as one JSON object: the same rows as the text",
    )
    replay.add_argument(
        "--all", action="store_true", help="list every replayed call, not only the changed ones"
    )
    replay.set_defaults(func=_replay)


class _Help(argparse.RawDescriptionHelpFormatter):
    """Each line of a description or epilog wrapped on its own, so the exit codes keep
    one line per code (an indented line's continuation under its meaning)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        return "\n".join(
            textwrap.fill(
                line,
                width,
                initial_indent=indent,
                subsequent_indent=indent + (" " * 5 if line.startswith("  ") else ""),
            )
            for line in text.splitlines()
        )


def _command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    summary: str,
    description: str,
    exits: str,
) -> argparse.ArgumentParser:
    """A subcommand whose ``--help`` says what it does and how it exits (``exits``: one
    ``  N  meaning`` line per code)."""
    return sub.add_parser(
        name,
        help=summary,
        description=description,
        epilog="exit codes:\n" + exits,
        formatter_class=_Help,
    )


def _parser() -> argparse.ArgumentParser:
    """The ``interpose`` command's parser, every subcommand in it."""
    parser = argparse.ArgumentParser(
        prog="interpose",
        description="interpose: policy, telemetry and control between an AI agent and "
        "everything it touches. Bad input to any command: one line on stderr, exit code 2.",
        epilog="`interpose COMMAND --help` describes a command and its exit codes; "
        "docs/cli.md lists them all.",
    )
    parser.add_argument("--version", action="version", version=f"interpose {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = _command(
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
    demo.set_defaults(func=_demo)
    bench = _command(
        sub,
        "bench",
        "measure per-tool-call overhead against its floor",
        "Measure what interpose adds to one tool call (an empty pipeline, interceptors, "
        "middleware, tracing) against the floor and hand-written references, and print "
        "each target's verdict. A full run takes a few minutes, --quick under a minute. "
        "Needs the bench extra (pluggy, the OpenTelemetry SDK).",
        "  0  measured (whatever the verdicts)\n"
        "  2  bad input: --plot into a directory that does not exist, a format matplotlib "
        "cannot write, matplotlib or the bench extra missing\n",
    )
    bench.add_argument("--quick", action="store_true", help="fewer rounds (noisier)")
    bench.add_argument("--rounds", type=_positive(int), default=None, help="timed rounds per case")
    bench.add_argument(
        "--target-ms",
        type=_positive(float),
        default=None,
        metavar="MS",
        help="how long one timed run of a case lasts",
    )
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
    check = _command(
        sub,
        "check",
        "validate a config file and print the stack it builds, in order",
        "Validate a config file without starting anything: the schema, every command "
        "and script it names, regexes, tool matchers, plugins, and the commands of its "
        "MCP servers (looked up on PATH or as files). Print the stack it builds, stage by "
        "stage in execution order, the observers, tracing, and each MCP server with its "
        "transport.",
        "  0  the file is valid\n"
        "  1  it is not (each problem on a line of stderr, naming the field)\n"
        "  2  bad input: no such file\n",
    )
    check.add_argument("file", help="interpose.toml or a .json file of the same shape")
    check.add_argument(
        "--name",
        default=None,
        help="the server `interpose mcp-proxy --name NAME -- COMMAND` adds to the file's "
        "servers: an error when the file has a server of that name",
    )
    check.set_defaults(func=_check)
    init = _command(
        sub,
        "init",
        "write a commented starter interpose.toml",
        "Write a commented starter config: the two guards on, an example rule of your "
        "own, the tool filter and loop guard, an audit log that records calls for "
        "`interpose replay`, tracing. `interpose check` accepts it as written.",
        "  0  written\n"
        "  2  bad input: the file exists (give --force), its directory does not, or the "
        "name does not end in .toml\n",
    )
    init.add_argument(
        "path",
        nargs="?",
        default="interpose.toml",
        help="the file to write, or a directory to write interpose.toml in "
        "(default: ./interpose.toml)",
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(func=_init)
    schema = _command(
        sub,
        "schema",
        "print the JSON Schema of the config file, for editors",
        "Print a JSON Schema (draft 2020-12) of interpose.toml and its .json form, for "
        "editors' completion and checks: `interpose schema > interpose.schema.json`, then "
        "point the editor at it (docs/config.md says how).",
        "  0  printed\n",
    )
    schema.set_defaults(func=_schema)
    hook_test = _command(
        sub,
        "run-hook-test",
        "send one synthetic tool call through a config's stack (the tool is a stub)",
        "Build the pipeline a config file describes, enter it (process hooks start) and "
        "send one tool call through it; the tool is a stub that echoes its arguments. "
        "Print each interceptor's decision in the order they ran, the events, and the "
        "result.",
        "  0  the call went through the stack, whatever it decided\n"
        "  1  the config is invalid\n"
        "  2  bad input: no such file, --args not a JSON object, an empty --tool\n",
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
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
