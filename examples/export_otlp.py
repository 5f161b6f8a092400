"""Export a traced turn to an OpenTelemetry collector over OTLP/HTTP.

``configure()`` installs an SDK tracer provider that batches spans and sends them to the
collector at ``$OTEL_EXPORTER_OTLP_ENDPOINT`` (default http://127.0.0.1:4318); every
``Pipeline`` then traces through it.  docs/tracing.md shows how to run Jaeger, Phoenix or
rotel there and look at the trace.

The example also runs without a collector (the SDK then logs the failed export on
stderr): besides the OTLP export, it keeps the spans in memory and prints them as a tree.
Needs the ``otlp`` extra: ``pip install 'interpose[otlp]'``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import anyio
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from interpose import LLMRequest, LLMResponse, Pipeline, ToolBeforeInput, ToolBeforeOutput, ToolCall
from interpose.observers.otel import configure, resolve_endpoint

ENDPOINT = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")

# one call: an SDK provider that exports over OTLP/HTTP, installed as the global provider
provider = configure(ENDPOINT, service_name="interpose-example", timeout=2.0)
# a second processor keeps a copy of every span, to print the tree below
kept = InMemorySpanExporter()
provider.add_span_processor(SimpleSpanProcessor(kept))

# with the built-in guards; a span per turn, LLM call, tool call and interceptor
pipe = Pipeline(tracing="interceptor")


@pipe.intercept("tool.before", tools=["exec"], priority=10, id="no-color")
def no_color(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    out.args["command"] += " --color=never"


def model(request: LLMRequest) -> LLMResponse:
    """The LLM: asks for two shell commands, one of which the built-in guard blocks."""
    calls = [
        ToolCall(id="call-1", name="exec", args={"command": "ls"}),
        ToolCall(id="call-2", name="exec", args={"command": "rm -rf /"}),
    ]
    return LLMResponse(tool_calls=calls, stop_reason="tool_use")


def run_exec(args: dict[str, Any]) -> str:
    """The tool: pretend to run a shell command."""
    return f"ran {args['command']!r}"


async def main() -> None:
    async with pipe.turn(
        agent_id="coder", session_key="s1", provider="anthropic", model="claude-x"
    ) as turn:
        request = LLMRequest(messages=[{"role": "user", "content": "tidy up"}])
        response = await turn.call_llm(request, call=model)
        for call in response.tool_calls:
            result = await turn.call_tool(call.name, call.args, call=run_exec, call_id=call.id)
            print(f"{call.id}: {result.status}")


def show(spans: Sequence[ReadableSpan]) -> None:
    """Print the spans as a tree, children in the order they started."""
    children: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent is not None else None
        children.setdefault(parent, []).append(span)

    def walk(parent: int | None, depth: int) -> None:
        for span in children.get(parent, []):
            attributes = span.attributes or {}
            notes = []
            if "interpose.decision" in attributes:
                notes.append("decision=" + str(attributes["interpose.decision"]))
            if span.status.status_code is StatusCode.ERROR:
                error_type = str(attributes.get("error.type"))
                notes.append(f"ERROR {error_type}: {span.status.description}")
            print("  " * depth + " ".join([span.name, *notes]))
            walk(span.context.span_id if span.context is not None else None, depth + 1)

    walk(None, 0)


anyio.run(main)
show(kept.get_finished_spans())
print(f"exporting {len(kept.get_finished_spans())} spans to {resolve_endpoint(ENDPOINT)}")
provider.shutdown()  # sends what is still queued; returns within the 2 s export timeout
