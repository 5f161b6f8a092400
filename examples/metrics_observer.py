"""Metrics observer: tool calls, tool and interceptor time, failures and bus drops as
OpenTelemetry metrics.

The observer uses the OpenTelemetry metrics API only.  To see numbers, a meter provider
from the SDK (the ``otlp`` extra) has to collect them: here an in-memory reader, in
production a ``PeriodicExportingMetricReader`` around an OTLP exporter.
"""

from __future__ import annotations

from typing import Any

import anyio
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    HistogramDataPoint,
    InMemoryMetricReader,
    NumberDataPoint,
)

from interpose import (
    Approval,
    ApprovalRequest,
    Event,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
)
from interpose.observers import MetricsObserver

pipe = Pipeline(builtins=False)


def run(args: dict[str, Any]) -> str:
    """The tool: a fake shell."""
    return f"ran {args['command']!r}"


@pipe.intercept("tool.before", tools=["exec"], id="no-rm")
def no_rm(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if out.args["command"].startswith("rm "):
        out.block, out.block_reason = True, "rm is not allowed"


@pipe.intercept("tool.before", tools=["exec"], id="cache")
def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if out.args["command"] == "date":
        out.result = "Mon Jan  1 00:00:00 UTC 2024"


@pipe.approver(tools=["exec"], id="no-deploys")
def no_deploys(request: ApprovalRequest) -> Approval | None:
    if "deploy" in request.args["command"]:
        return Approval.deny("deploys need a ticket")
    return None


@pipe.intercept("tool.after", tools=["exec"], id="parse-tests", on_error="skip")
def parse_tests(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
    if "test" in str(out.result.output):
        raise ValueError("cannot parse the test report")


reader = InMemoryMetricReader()
provider = MeterProvider(metric_readers=[reader])  # a private provider; the global one is unset
MetricsObserver(provider).attach(pipe)

# a lossy observer: its one-event buffer holds the first tool_exec_end, and as the turn
# never waits for it, the next five are dropped; interpose.bus.dropped counts them
sampled: list[Event] = []
pipe.subscribe(
    sampled.append, events={"tool_exec_end"}, buffer=1, overflow="drop_newest", name="sampler"
)


async def main() -> None:
    commands = ["ls", "rm -rf /", "date", "make deploy", "make test", "ls"]
    async with pipe, pipe.turn(agent_id="coder") as turn:
        for command in commands:
            await turn.call_tool("exec", {"command": command}, call=run)

    data = reader.get_metrics_data()
    assert data is not None
    for metric in data.resource_metrics[0].scope_metrics[0].metrics:
        print(f"{metric.name} ({metric.unit})")
        lines = []
        for point in metric.data.data_points:
            attrs = " ".join(f"{k}={v!s}" for k, v in sorted((point.attributes or {}).items()))
            if isinstance(point, HistogramDataPoint):
                lines.append(f"  {attrs}: count={point.count}")
            elif isinstance(point, NumberDataPoint):
                lines.append(f"  {attrs}: {point.value}")
        print("\n".join(sorted(lines)))
    provider.shutdown()


if __name__ == "__main__":
    anyio.run(main)
