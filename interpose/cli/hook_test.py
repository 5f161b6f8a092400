"""``interpose run-hook-test FILE --tool T --args JSON``: one synthetic tool call through
a config's stack, the tool a stub, with what each interceptor decided."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ._common import Subparsers, command, existing, usage

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline

__all__ = ["add_parser", "run"]


def add_parser(sub: Subparsers) -> None:
    """The ``run-hook-test`` subcommand."""
    hook_test = command(
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
    hook_test.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """``interpose run-hook-test FILE --tool T --args JSON``: one synthetic tool call
    through the configured stack, with a stub tool that only echoes its arguments.

    Exits 0 when the call went through the stack (whatever it decided), 1 when the
    config is invalid, 2 when there is no such file or ``--args`` is not a JSON object.
    """
    try:
        call_args = json.loads(args.args)
    except json.JSONDecodeError as exc:
        raise usage(f"--args is not JSON: {exc}") from None
    if not isinstance(call_args, dict):
        raise usage("--args must be a JSON object")
    if not args.tool.strip():
        raise usage("--tool is empty: give a tool name, e.g. exec")
    existing(args.file)
    from ..config import pipeline_from_file
    from ..errors import ConfigError

    exporter, provider = _span_recorder()
    try:
        # read, checked and built once
        pipe = pipeline_from_file(
            args.file,
            tracing="interceptor" if provider is not None else None,
            tracer_provider=provider,
        )
    except ConfigError as exc:
        print(f"interpose: {exc}", file=sys.stderr)
        return 1
    import anyio

    try:
        lines = anyio.run(_one_call, pipe, exporter, args.tool, call_args, args.agent, args.session)
    finally:
        if provider is not None:
            provider.shutdown()
    for line in lines:
        print(line)
    return 0


async def _one_call(
    pipe: Pipeline,
    exporter: Any,
    tool: str,
    call_args: dict[str, Any],
    agent: str,
    session: str,
) -> list[str]:
    """Enter the pipeline (process hooks start), make the call, and say what happened,
    line by line."""
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
