"""Spans reach a real OTLP collector: ``configure()``, a traced turn, the example, the CLI.

The tests marked ``integration`` export to the session's rotel collector (see conftest.py)
over OTLP/HTTP and OTLP/gRPC and assert on what rotel printed.  Each export carries a
unique ``test.run`` resource attribute, so a test reads only its own spans.  The other
tests check ``configure()``'s validation and its global-provider rule without a collector.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.util.types import AttributeValue

from interpose import (
    ConfigError,
    LLMRequest,
    LLMResponse,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolCall,
)
from interpose.cli import main
from interpose.observers.otel import OTLPProtocol, configure, resolve_endpoint

if TYPE_CHECKING:  # the fixtures' types (conftest.py is not imported by name at run time)
    from tests.integration.conftest import Collector, SpanRecord

ROOT = Path(__file__).resolve().parents[2]
PROTOCOLS: list[OTLPProtocol] = ["http", "grpc"]
SUBPROCESS_TIMEOUT = 60  # s


Configure: TypeAlias = "Callable[[Collector, OTLPProtocol], tuple[TracerProvider, str]]"


@pytest.fixture
def exporting() -> Iterator[Configure]:
    """``exporting(collector, protocol)`` → (a private provider exporting to the collector,
    the run id its spans carry); every provider is shut down after the test."""
    providers: list[TracerProvider] = []

    def make(collector: Collector, protocol: OTLPProtocol) -> tuple[TracerProvider, str]:
        run = uuid.uuid4().hex
        provider = configure(
            collector.endpoint(protocol),
            protocol=protocol,
            service_name="interpose-tests",
            resource_attributes={"test.run": run},
            set_global=False,
            timeout=5.0,
        )
        providers.append(provider)
        return provider, run

    yield make
    for provider in providers:
        provider.shutdown()


def of_run(run: str) -> Callable[[SpanRecord], bool]:
    return lambda span: span.resource.get("test.run") == run


def by_name(spans: list[SpanRecord], name: str) -> list[SpanRecord]:
    return [span for span in spans if span.name == name]


# -- the harness: a plain SDK span through configure() ------------------------------------


@pytest.mark.integration
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_configure_sends_spans_with_their_attributes(
    collector: Collector, protocol: OTLPProtocol
) -> None:
    run = uuid.uuid4().hex
    batches: list[tuple[int, bool]] = []
    provider = configure(
        collector.endpoint(protocol),
        protocol=protocol,
        service_name=f"harness-{protocol}",
        resource_attributes={"test.run": run},
        set_global=False,
        on_export=lambda count, accepted: batches.append((count, accepted)),
    )
    try:
        tracer = provider.get_tracer("tests")
        attributes: dict[str, AttributeValue] = {
            "a.str": "x y=z",
            "a.int": 3,
            "a.bool": True,
            "a.float": 1.5,
        }
        with (
            tracer.start_as_current_span("parent", attributes=attributes),
            tracer.start_as_current_span("child", kind=SpanKind.CLIENT) as span,
        ):
            span.set_attribute("a.list", ["p", "q"])
            span.set_status(Status(StatusCode.ERROR, "it broke: badly"))
        assert provider.force_flush()
    finally:
        provider.shutdown()

    spans = collector.wait_for_spans(of_run(run), count=2)
    [parent] = by_name(spans, "parent")
    [child] = by_name(spans, "child")
    assert parent.resource["service.name"] == f"harness-{protocol}"
    assert parent.parent_span_id == ""
    assert (parent.kind, parent.status_code) == ("INTERNAL", "UNSET")
    assert parent.attributes == attributes
    assert child.trace_id == parent.trace_id
    assert child.parent_span_id == parent.span_id
    assert (child.kind, child.status_code, child.status_message) == (
        "CLIENT",
        "ERROR",
        "it broke: badly",
    )
    assert child.attributes == {"a.list": ("p", "q")}
    # on_export heard of every span, and the collector accepted them
    assert sum(count for count, _ in batches) == 2
    assert all(accepted for _, accepted in batches)


# -- a traced turn -------------------------------------------------------------------------


def traced_pipeline(provider: TracerProvider, ran: list[str]) -> Pipeline:
    """The built-in guards plus a blocker, a rewriter and an observer, every one traced."""
    pipe = Pipeline(builtins=True, tracing="interceptor", tracer_provider=provider)

    @pipe.intercept("tool.before", tools="exec", priority=200, id="no-rm-rf")
    def no_rm_rf(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if "rm -rf" in out.args["command"]:
            out.block, out.block_reason = True, "rm -rf is not allowed here"

    @pipe.intercept("tool.before", tools="exec", priority=10, id="no-color")
    def no_color(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.args["command"] += " --color=never"

    @pipe.intercept("tool.after", tools="exec", id="audit")
    def audit(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        ran.append(f"{inp.tool_call_id}:{out.result.status}")

    return pipe


def model(request: LLMRequest) -> LLMResponse:
    return LLMResponse(
        tool_calls=[
            ToolCall(id="c-rm", name="exec", args={"command": "rm -rf build"}),
            ToolCall(id="c-ls", name="exec", args={"command": "ls"}),
        ],
        stop_reason="tool_use",
    )


def run_exec(args: dict[str, Any]) -> str:
    return f"ran {args['command']}"


@pytest.mark.integration
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_turn_arrives_as_one_gen_ai_trace(
    collector: Collector, exporting: Configure, protocol: OTLPProtocol
) -> None:
    provider, run = exporting(collector, protocol)
    ran: list[str] = []
    pipe = traced_pipeline(provider, ran)
    async with pipe.turn(
        agent_id="coder", session_key="s1", provider="anthropic", model="claude-x"
    ) as turn:
        response = await turn.call_llm(LLMRequest(messages=[{"role": "user"}]), call=model)
        results = [
            await turn.call_tool(call.name, call.args, call=run_exec, call_id=call.id)
            for call in response.tool_calls
        ]
    assert [r.status for r in results] == ["blocked", "ok"]
    assert ran == ["c-rm:blocked", "c-ls:ok"]
    assert provider.force_flush()

    # the turn's span ends last: once it is printed, the whole trace is
    collector.wait_for_spans(lambda s: of_run(run)(s) and s.name == "invoke_agent coder", 1)
    spans = collector.wait_for_spans(of_run(run), 1)
    names = sorted(span.name for span in spans)

    [root] = by_name(spans, "invoke_agent coder")
    assert root.parent_span_id == "", "invoke_agent is the root of the trace"
    assert root.kind == "INTERNAL"
    assert {span.trace_id for span in spans} == {root.trace_id}, "one trace per turn"
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.id"] == "coder"
    assert root.attributes["gen_ai.conversation.id"] == "s1"
    assert root.attributes["gen_ai.provider.name"] == "anthropic"
    assert root.attributes["gen_ai.request.model"] == "claude-x"

    chats = by_name(spans, "chat claude-x")
    assert len(chats) == 1, names
    [chat] = chats
    assert (chat.kind, chat.parent_span_id) == ("CLIENT", root.span_id)
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.provider.name"] == "anthropic"
    assert chat.attributes["gen_ai.request.model"] == "claude-x"

    tools = {
        str(span.attributes.get("gen_ai.tool.call.id")): span
        for span in by_name(spans, "execute_tool exec")
    }
    assert set(tools) == {"c-rm", "c-ls"}, names
    for call_id, span in tools.items():
        assert (span.kind, span.parent_span_id) == ("INTERNAL", root.span_id), call_id
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == "exec"
    blocked, allowed = tools["c-rm"], tools["c-ls"]
    assert blocked.status_code == "ERROR"
    assert blocked.attributes["error.type"] == "tool_blocked"
    assert blocked.status_message == "rm -rf is not allowed here"
    assert allowed.status_code != "ERROR"
    assert "error.type" not in allowed.attributes

    # one child span per interceptor that ran, under the tool call it ran in
    def interceptors(parent: SpanRecord) -> dict[str, tuple[str, str]]:
        found = {}
        for span in spans:
            if span.parent_span_id == parent.span_id:
                interceptor = str(span.attributes["interpose.interceptor.id"])
                assert interceptor in span.name, span
                found[interceptor] = (
                    str(span.attributes["interpose.hook"]),
                    str(span.attributes["interpose.decision"]),
                )
        return found

    assert interceptors(blocked) == {
        "no-rm-rf": ("tool.before", "block"),  # the rest of tool.before is skipped
        "audit": ("tool.after", "continue"),
    }
    assert interceptors(allowed) == {
        "no-rm-rf": ("tool.before", "continue"),
        "builtin:command-safety-guard": ("tool.before", "continue"),
        "no-color": ("tool.before", "modify"),
        # the guard's approver (its rules that ask): nothing to ask about here
        "builtin:command-safety-guard.ask": ("tool.approve", "allow"),
        "audit": ("tool.after", "continue"),
    }
    guard = next(s for s in spans if s.attributes.get("interpose.interceptor.id") == "no-rm-rf")
    assert guard.attributes["interpose.priority"] == 200


# -- the example and the CLI ---------------------------------------------------------------


def run_python(args: list[str], run: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``python args…`` from the repository root with ``test.run=<run>`` on its spans."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**os.environ, "OTEL_RESOURCE_ATTRIBUTES": f"test.run={run}", **env},
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )


@pytest.mark.integration
def test_the_example_exports_its_turn(collector: Collector) -> None:
    run = uuid.uuid4().hex
    proc = run_python(
        ["examples/export_otlp.py"], run, OTEL_EXPORTER_OTLP_ENDPOINT=collector.http_endpoint
    )
    assert proc.returncode == 0, proc.stderr
    target = f"{collector.http_endpoint}/v1/traces"
    assert f"exporting 8 spans to {target}" in proc.stdout
    assert "Failed to export" not in proc.stderr

    spans = collector.wait_for_spans(of_run(run), count=8)
    assert {span.resource["service.name"] for span in spans} == {"interpose-example"}
    assert sorted(span.name for span in spans) == [
        "chat claude-x",
        "execute_tool exec",
        "execute_tool exec",
        "invoke_agent coder",
        "tool.approve builtin:command-safety-guard.ask",
        "tool.before builtin:command-safety-guard",
        "tool.before builtin:command-safety-guard",
        "tool.before no-color",
    ]
    [blocked] = [span for span in spans if span.status_code == "ERROR"]
    assert blocked.attributes["gen_ai.tool.call.id"] == "call-2"


@pytest.mark.integration
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_demo_sends_its_session_with_the_otlp_flag(
    collector: Collector, protocol: OTLPProtocol
) -> None:
    run = uuid.uuid4().hex
    endpoint = collector.endpoint(protocol)
    proc = run_python(
        ["-m", "interpose.cli", "demo", "--otlp", endpoint, "--otlp-protocol", protocol], run
    )
    assert proc.returncode == 0, proc.stderr
    wire = {"http": "OTLP/HTTP", "grpc": "OTLP/gRPC"}[protocol]
    last = proc.stdout.splitlines()[-1]
    assert last.startswith("interpose demo: sent "), proc.stdout
    assert last.endswith(
        f"spans to {resolve_endpoint(endpoint, protocol)} ({wire}), service.name=interpose-demo"
    )
    sent = int(last.split()[3])

    # six turns, every span the demo reported sent
    spans = collector.wait_for_spans(of_run(run), count=sent)
    assert len(by_name(spans, "invoke_agent coder")) == 6
    assert {span.resource["service.name"] for span in spans} == {"interpose-demo"}
    refused = {
        str(span.attributes.get("gen_ai.tool.call.id")): span.attributes.get("error.type")
        for span in spans
        if span.name.startswith("execute_tool ") and span.status_code == "ERROR"
    }
    assert refused["t3-rm-root"] == "tool_blocked"
    assert refused["t4-write"] == "tool_denied"


# -- configure() without a collector -------------------------------------------------------


@pytest.mark.parametrize(
    ("endpoint", "protocol", "url"),
    [
        ("http://127.0.0.1:4318", "http", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1:4318/", "http", "http://127.0.0.1:4318/v1/traces"),
        ("http://localhost:4318/v1/traces", "http", "http://localhost:4318/v1/traces"),
        ("https://otel.example.com/v1/traces/", "http", "https://otel.example.com/v1/traces"),
        ("http://localhost:6006", "http", "http://localhost:6006/v1/traces"),
        ("https://gw.example.com/otlp", "http", "https://gw.example.com/otlp/v1/traces"),
        ("http://127.0.0.1:4317", "grpc", "http://127.0.0.1:4317"),
        ("https://otel.example.com:4317/", "grpc", "https://otel.example.com:4317"),
    ],
)
def test_resolve_endpoint_gives_the_url_spans_go_to(
    endpoint: str, protocol: OTLPProtocol, url: str
) -> None:
    assert resolve_endpoint(endpoint, protocol) == url


@pytest.mark.parametrize(
    ("endpoint", "protocol", "message"),
    [
        ("127.0.0.1:4317", "grpc", "give http://127.0.0.1:4317 (plaintext)"),
        ("localhost:4318", "http", "has no scheme"),
        ("ftp://127.0.0.1:4318", "http", "scheme must be http or https"),
        ("http://:4318", "http", "has no host"),
        ("http://127.0.0.1:99999", "http", "out of range"),
        ("", "http", "endpoint must be a URL"),
        ("http://127.0.0.1", "grpc", "usually 4317"),
        ("http://127.0.0.1:4317/v1/traces", "grpc", "without a path"),
        ("http://127.0.0.1:4318", "udp", "protocol must be 'http' or 'grpc'"),
    ],
)
def test_bad_endpoints_are_refused_with_a_reason(
    endpoint: str, protocol: Any, message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        resolve_endpoint(endpoint, protocol)
    with pytest.raises(ValueError, match=re.escape(message)):  # ConfigError is a ValueError
        configure(endpoint, protocol=protocol, set_global=False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"service_name": ""}, "service_name must be a non-empty string"),
        ({"headers": {"api-key": 1}}, "headers must map strings to strings"),
        ({"timeout": 0}, "timeout must be a positive number"),
        ({"timeout": True}, "timeout must be a positive number"),
    ],
)
def test_bad_settings_are_refused(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        configure(set_global=False, **kwargs)


def test_a_missing_sdk_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(ImportError, match=r"pip install 'interpose\[otlp\]'"):
        configure(set_global=False)


def test_a_missing_exporter_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    module = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r"opentelemetry-exporter-otlp-proto-grpc.*interpose\["):
        configure("http://127.0.0.1:4317", protocol="grpc", set_global=False)


def test_the_global_provider_is_set_once_and_a_second_configure_says_so() -> None:
    # the global tracer provider can be set once per process: try it in a fresh one
    script = textwrap.dedent(
        """
        from opentelemetry import trace
        from interpose import ConfigError
        from interpose.observers.otel import configure

        first = configure("http://127.0.0.1:9", timeout=0.5)
        print("global:", trace.get_tracer_provider() is first)
        try:
            configure("http://127.0.0.1:9", timeout=0.5)
        except ConfigError as exc:
            print("second:", exc)
        private = configure("http://127.0.0.1:9", timeout=0.5, set_global=False)
        print("private:", private is not first, trace.get_tracer_provider() is first)
        for provider in (first, private):
            provider.shutdown()
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "global: True"
    assert lines[1].startswith("second: a global tracer provider is already installed")
    assert "configure(..., set_global=False)" in lines[1]
    assert "Pipeline(tracer_provider=...)" in lines[1]
    assert lines[2] == "private: True True"


def test_demo_refuses_a_bad_otlp_endpoint(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--otlp", "localhost:4317", "--otlp-protocol", "grpc"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "", "the demo did not run"
    assert "interpose demo: --otlp: endpoint 'localhost:4317' has no scheme" in captured.err
