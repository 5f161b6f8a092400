"""The spans of one turn, printed as a tree: what a trace viewer would show.

An SDK tracer provider with an in-memory exporter stands in for a collector; the
pipeline traces every interceptor (``tracing="interceptor"``) and records the tool
arguments and results, redacted (``trace_content=True``).
"""

from __future__ import annotations

from typing import Any

import anyio
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from interpose import (
    LLMRequest,
    LLMResponse,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
)

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))

pipe = Pipeline(tracing="interceptor", tracer_provider=provider, trace_content=True)


@pipe.intercept("tool.before", tools=["exec"], id="default-timeout")
def default_timeout(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    out.args.setdefault("timeout", 30)


@pipe.intercept("tool.after", id="audit")
def audit(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
    pass


def model(request: LLMRequest) -> LLMResponse:
    return LLMResponse(content="listing, then cleaning up", usage={"input_tokens": 42})


def run_exec(args: dict[str, Any]) -> str:
    return f"ran {args['command']!r} with API_KEY=sk-ant-api03-{'x' * 24}"


async def main() -> None:
    async with pipe.turn(
        agent_id="coder", session_key="s1", provider="anthropic", model="claude-x"
    ) as turn:
        await turn.call_llm(LLMRequest(messages=[{"role": "user", "content": "hi"}]), call=model)
        await turn.call_tool("exec", {"command": "ls"}, call=run_exec, call_id="c1")
        await turn.call_tool("exec", {"command": "rm -rf ~"}, call=run_exec, call_id="c2")


def show(span: ReadableSpan, spans: tuple[ReadableSpan, ...], depth: int = 0) -> None:
    attrs = span.attributes or {}
    notes = [f"{key}={attrs[key]!s}" for key in SHOWN if key in attrs]
    if span.status.description:
        notes.append(f"status=ERROR {span.status.description!r}")
    print(f"{'  ' * depth}{span.name}  " + " ".join(notes))
    assert span.context is not None
    children = [s for s in spans if s.parent and s.parent.span_id == span.context.span_id]
    for child in sorted(children, key=lambda s: s.start_time or 0):
        show(child, spans, depth + 1)


SHOWN = (
    "gen_ai.tool.call.id",
    "interpose.decision",
    "error.type",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)

anyio.run(main)
finished = exporter.get_finished_spans()
for root in (s for s in finished if s.parent is None):
    show(root, finished)
