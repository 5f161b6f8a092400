"""The span tree a turn leaves, pinned with the SDK's in-memory exporter.

Each test builds its own SDK ``TracerProvider`` and passes it to the pipeline, so the
process-wide provider stays unset (another test checks the global one in a subprocess).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from interpose import (
    AbortTurn,
    Approval,
    LLMRequest,
    LLMResponse,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
)
from interpose.pipeline.redaction import Redactor
from interpose.pipeline.tracing import TracingLevel


class Spans:
    """The finished spans, with lookups by name and by parent."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self.exporter = exporter

    @property
    def all(self) -> tuple[ReadableSpan, ...]:
        return self.exporter.get_finished_spans()

    def names(self) -> list[str]:
        return [s.name for s in self.all]

    def one(self, name: str) -> ReadableSpan:
        found = [s for s in self.all if s.name == name]
        assert len(found) == 1, f"{len(found)} spans named {name!r} in {self.names()}"
        return found[0]

    def children(self, parent: ReadableSpan) -> list[str]:
        """Names of ``parent``'s children, in start order."""
        assert parent.context is not None
        kids = [
            s
            for s in self.all
            if s.parent is not None and s.parent.span_id == parent.context.span_id
        ]
        return [s.name for s in sorted(kids, key=lambda s: s.start_time or 0)]

    def tree(self) -> dict[str, Any]:
        """{root name: {child name: {...}}}: the whole tree by name."""
        roots = [s for s in self.all if s.parent is None]

        def build(span: ReadableSpan) -> dict[str, Any]:
            assert span.context is not None
            kids = sorted(
                (
                    s
                    for s in self.all
                    if s.parent is not None and s.parent.span_id == span.context.span_id
                ),
                key=lambda s: s.start_time or 0,
            )
            return {k.name: build(k) for k in kids}

        return {r.name: build(r) for r in roots}


@pytest.fixture
def spans(exporter: InMemorySpanExporter) -> Spans:
    return Spans(exporter)


def traced_pipe(provider: TracerProvider, **kw: Any) -> Pipeline:
    kw.setdefault("tracing", "interceptor")
    pipe = Pipeline(builtins=False, tracer_provider=provider, **kw)

    @pipe.intercept("tool.before", priority=10, id="no-rm")
    def no_rm(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if "rm -rf" in str(out.args.get("command", "")):
            out.block, out.block_reason = True, "rm -rf is not allowed"

    @pipe.intercept("tool.before", priority=0, id="add-timeout")
    def add_timeout(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.args.setdefault("timeout", 30)

    @pipe.intercept("tool.after", id="audit")
    async def audit(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        pass

    return pipe


def run_exec(args: dict[str, Any]) -> str:
    return f"ran {args['command']!r}"


async def test_allowed_call_tree_and_attributes(provider: TracerProvider, spans: Spans) -> None:
    pipe = traced_pipe(provider)
    async with pipe.turn(
        agent_id="coder", session_key="s1", provider="anthropic", model="claude-x"
    ) as turn:
        result = await turn.call_tool("bash", {"command": "ls"}, call=run_exec, call_id="c1")
    assert result.status == "ok"

    assert spans.tree() == {
        "invoke_agent coder": {
            "execute_tool exec": {
                "tool.before no-rm": {},
                "tool.before add-timeout": {},
                "tool.after audit": {},
            }
        }
    }
    agent = spans.one("invoke_agent coder")
    assert agent.kind is SpanKind.INTERNAL
    assert agent.status.status_code is StatusCode.UNSET
    assert dict(agent.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": "coder",
        "gen_ai.agent.name": "coder",
        "gen_ai.conversation.id": "s1",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-x",
        "interpose.turn.id": turn.turn_id,
    }
    tool = spans.one("execute_tool exec")
    assert tool.kind is SpanKind.INTERNAL
    assert tool.status.status_code is StatusCode.UNSET
    assert dict(tool.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "exec",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "gen_ai.agent.id": "coder",
        "gen_ai.conversation.id": "s1",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-x",
        "interpose.tool.raw_name": "bash",
    }
    # no content unless opted in
    assert "gen_ai.tool.call.arguments" not in (tool.attributes or {})
    rewrite = spans.one("tool.before add-timeout")
    assert dict(rewrite.attributes or {}) == {
        "interpose.hook": "tool.before",
        "interpose.interceptor.id": "add-timeout",
        "interpose.priority": 0,
        "interpose.on_error": "block",
        "interpose.decision": "modify",
    }
    assert (spans.one("tool.before no-rm").attributes or {})["interpose.decision"] == "continue"
    assert (spans.one("tool.after audit").attributes or {})["interpose.decision"] == "continue"


async def test_blocked_call_is_an_error_with_the_reason(
    provider: TracerProvider, spans: Spans
) -> None:
    pipe = traced_pipe(provider)
    async with pipe.turn(agent_id="coder") as turn:
        result = await turn.call_tool("exec", {"command": "rm -rf /"}, call=run_exec)
    assert result.status == "blocked"

    # the block ends the before-phase: add-timeout never ran, the after-hook did
    assert spans.tree() == {
        "invoke_agent coder": {
            "execute_tool exec": {"tool.before no-rm": {}, "tool.after audit": {}}
        }
    }
    tool = spans.one("execute_tool exec")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.status.description == "rm -rf is not allowed"
    attrs = tool.attributes or {}
    assert attrs["error.type"] == "tool_blocked"
    assert attrs["interpose.tool.status"] == "blocked"
    assert attrs["interpose.decided_by"] == "no-rm"
    assert (spans.one("tool.before no-rm").attributes or {})["interpose.decision"] == "block"
    # a refused call is not a failed turn
    assert spans.one("invoke_agent coder").status.status_code is StatusCode.UNSET


async def test_responded_call(provider: TracerProvider, spans: Spans) -> None:
    pipe = traced_pipe(provider)

    @pipe.intercept("tool.before", tools="read", priority=50, id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = "cached contents"

    async with pipe.turn(agent_id="coder") as turn:
        result = await turn.call_tool("read", {"path": "a.txt"}, call=run_exec)
    assert result.status == "responded"

    tool = spans.one("execute_tool read")
    assert tool.status.status_code is StatusCode.UNSET
    assert (tool.attributes or {})["interpose.tool.status"] == "responded"
    assert (tool.attributes or {})["interpose.decided_by"] == "cache"
    assert (spans.one("tool.before cache").attributes or {})["interpose.decision"] == "respond"
    # later before-interceptors still run after a respond
    assert spans.children(tool) == [
        "tool.before cache",
        "tool.before no-rm",
        "tool.before add-timeout",
        "tool.after audit",
    ]


async def test_denied_approval(provider: TracerProvider, spans: Spans) -> None:
    pipe = traced_pipe(provider)

    @pipe.approver(tools="exec", id="no-sudo")
    def no_sudo(req: Any) -> Approval:
        if "sudo" in req.args["command"]:
            return Approval.deny("no sudo")
        return Approval.allow()

    async with pipe.turn(agent_id="coder") as turn:
        denied = await turn.call_tool("exec", {"command": "sudo ls"}, call=run_exec)
        allowed = await turn.call_tool("exec", {"command": "ls"}, call=run_exec)
    assert (denied.status, allowed.status) == ("denied", "ok")

    first, second = (s for s in spans.all if s.name == "execute_tool exec")
    assert first.status.status_code is StatusCode.ERROR
    assert first.status.description == "no sudo"
    assert (first.attributes or {})["error.type"] == "tool_denied"
    assert (first.attributes or {})["interpose.decided_by"] == "no-sudo"
    assert second.status.status_code is StatusCode.UNSET
    decisions = [
        (s.attributes or {})["interpose.decision"]
        for s in spans.all
        if s.name == "tool.approve no-sudo"
    ]
    assert decisions == ["deny", "allow"]


async def test_interceptor_failure_is_recorded_on_its_span(
    provider: TracerProvider, spans: Spans
) -> None:
    pipe = traced_pipe(provider)

    @pipe.intercept("tool.before", priority=20, id="flaky")
    async def flaky(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise KeyError("ticket")

    async with pipe.turn(agent_id="coder") as turn:
        result = await turn.call_tool("exec", {"command": "ls"}, call=run_exec)
    # tool.before fails closed by default
    assert result.status == "blocked"

    failed = spans.one("tool.before flaky")
    assert failed.status.status_code is StatusCode.ERROR
    attrs = failed.attributes or {}
    assert attrs["interpose.decision"] == "failed"
    assert attrs["error.type"] == "KeyError"
    assert [e.name for e in failed.events] == ["exception"]
    assert (failed.events[0].attributes or {})["exception.type"] == "KeyError"
    tool = spans.one("execute_tool exec")
    assert (tool.attributes or {})["error.type"] == "tool_blocked"
    assert tool.status.description == "interceptor 'flaky' failed: KeyError: 'ticket'"
    assert spans.children(tool) == ["tool.before flaky", "tool.after audit"]


async def test_aborted_turn(provider: TracerProvider, spans: Spans) -> None:
    pipe = traced_pipe(provider)

    @pipe.intercept("tool.before", tools="exec", priority=20, id="stop")
    def stop(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise AbortTurn("budget exhausted")

    async with pipe.turn(agent_id="coder") as turn:
        await turn.call_tool("exec", {"command": "ls"}, call=run_exec)
    assert turn.aborted

    assert spans.tree() == {"invoke_agent coder": {"execute_tool exec": {"tool.before stop": {}}}}
    agent = spans.one("invoke_agent coder")
    assert agent.status.status_code is StatusCode.ERROR
    assert agent.status.description == "budget exhausted"
    assert (agent.attributes or {})["error.type"] == "turn_aborted"
    assert (agent.attributes or {})["interpose.decided_by"] == "stop"
    tool = spans.one("execute_tool exec")
    assert tool.status.status_code is StatusCode.ERROR
    assert (tool.attributes or {})["error.type"] == "tool_aborted"
    assert (spans.one("tool.before stop").attributes or {})["interpose.decision"] == "abort"


async def test_tool_spans_nest_under_execute_tool(provider: TracerProvider, spans: Spans) -> None:
    pipe = traced_pipe(provider)
    tracer = provider.get_tracer("my-tool")

    async def read_file(args: dict[str, Any]) -> str:
        with tracer.start_as_current_span("open file"), tracer.start_as_current_span("decode"):
            return "text"

    async with pipe.turn(agent_id="coder") as turn:
        await turn.call_tool("read", {"path": "a.txt"}, call=read_file)

    tool = spans.one("execute_tool read")
    assert spans.children(tool) == [
        "tool.before no-rm",
        "tool.before add-timeout",
        "open file",
        "tool.after audit",
    ]
    assert spans.children(spans.one("open file")) == ["decode"]


async def test_middleware_layers_nest_like_the_onion(
    provider: TracerProvider, spans: Spans
) -> None:
    pipe = traced_pipe(provider)

    @pipe.middleware("tool", priority=10, id="outer")
    async def outer(ctx: Any, call_next: Any) -> None:
        await call_next()

    @pipe.middleware("tool", priority=0, id="cache-layer", tools="read")
    async def cache_layer(ctx: Any, call_next: Any) -> None:
        if ctx.args.get("path") == "cached.txt":
            from interpose import ToolResult

            ctx.result = ToolResult(output="cached", status="responded")
            return
        await call_next()

    async with pipe.turn(agent_id="coder") as turn:
        await turn.call_tool("read", {"path": "a.txt"}, call=run_exec)
        await turn.call_tool("read", {"path": "cached.txt"}, call=run_exec)

    first, second = (s for s in spans.all if s.name == "execute_tool read")
    assert spans.children(first) == ["tool outer"]
    outer_spans = [s for s in spans.all if s.name == "tool outer"]
    assert spans.children(outer_spans[0]) == ["tool cache-layer"]
    layers = [s for s in spans.all if s.name == "tool cache-layer"]
    assert spans.children(layers[0]) == [
        "tool.before no-rm",
        "tool.before add-timeout",
        "tool.after audit",
    ]
    assert (layers[0].attributes or {})["interpose.decision"] == "continue"
    assert (layers[1].attributes or {})["interpose.decision"] == "respond"
    assert spans.children(layers[1]) == []
    assert (second.attributes or {})["interpose.tool.status"] == "responded"
    assert (outer_spans[0].attributes or {})["interpose.hook"] == "tool"


async def test_chat_span_and_llm_interceptors(provider: TracerProvider, spans: Spans) -> None:
    pipe = traced_pipe(provider)

    @pipe.intercept("llm.before", id="system-prompt")
    def system_prompt(inp: Any, out: LLMRequest) -> None:
        out.system = "be brief"

    @pipe.intercept("message.before", id="tag")
    def tag(inp: Any, out: Any) -> None:
        out.metadata["tagged"] = True

    def model(request: LLMRequest) -> LLMResponse:
        return LLMResponse(
            content="hi", usage={"input_tokens": 12, "output_tokens": 3}, stop_reason="end_turn"
        )

    async with pipe.turn(
        agent_id="coder", session_key="s1", provider="anthropic", model="claude-x"
    ) as turn:
        await turn.message("hello")
        await turn.call_llm(LLMRequest(messages=[{"role": "user", "content": "hello"}]), call=model)

    assert spans.tree() == {
        "invoke_agent coder": {
            "message.before tag": {},
            "chat claude-x": {"llm.before system-prompt": {}},
        }
    }
    chat = spans.one("chat claude-x")
    assert chat.kind is SpanKind.CLIENT
    assert dict(chat.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.agent.id": "coder",
        "gen_ai.conversation.id": "s1",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": "claude-x",
        "gen_ai.response.finish_reasons": ("end_turn",),
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.usage.output_tokens": 3,
    }
    decision = (spans.one("llm.before system-prompt").attributes or {})["interpose.decision"]
    assert decision == "modify"


async def test_level_tool_makes_no_interceptor_spans(
    provider: TracerProvider, spans: Spans
) -> None:
    pipe = traced_pipe(provider, tracing="tool")
    async with pipe.turn(agent_id="coder") as turn:
        await turn.call_tool("exec", {"command": "ls"}, call=run_exec)
    assert spans.tree() == {"invoke_agent coder": {"execute_tool exec": {}}}


async def test_level_off_touches_no_provider() -> None:
    class Exploding:
        def get_tracer(self, *args: Any, **kwargs: Any) -> Any:
            raise AssertionError("tracing='off' must not touch the provider")

    pipe = Pipeline(builtins=False, tracing="off", tracer_provider=Exploding())  # type: ignore[arg-type]

    @pipe.intercept("tool.before")
    def noop(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        pass

    async with pipe.turn() as turn:
        assert (await turn.call_tool("exec", {"command": "ls"}, call=run_exec)).status == "ok"


async def test_switching_levels_at_run_time(provider: TracerProvider, spans: Spans) -> None:
    pipe = traced_pipe(provider, tracing="off")
    await pipe.call_tool("exec", {"command": "ls"}, call=run_exec)
    assert spans.names() == []
    pipe.tracing = "interceptor"
    await pipe.call_tool("exec", {"command": "ls"}, call=run_exec)
    assert "tool.before no-rm" in spans.names()
    with pytest.raises(ValueError, match="tracing must be"):
        pipe.tracing = "everything"  # type: ignore[assignment]


async def test_content_is_opt_in_and_redacted(provider: TracerProvider, spans: Spans) -> None:
    pipe = traced_pipe(
        provider,
        tracing="tool",
        trace_content=True,
        redactor=Redactor(patterns=[r"ticket-\d{6}"]),
    )
    key = "sk-ant-api03-" + "A" * 40

    def fetch(args: dict[str, Any]) -> dict[str, Any]:
        return {"body": f"Authorization: Bearer {'x' * 32}", "ticket": "ticket-123456"}

    await pipe.call_tool(
        "web_fetch", {"url": "https://example.net", "api_key": key, "note": key}, call=fetch
    )
    attrs = spans.one("execute_tool web_fetch").attributes or {}
    arguments = json.loads(str(attrs["gen_ai.tool.call.arguments"]))
    assert arguments == {
        "url": "https://example.net",
        "api_key": "[REDACTED]",
        "note": "[REDACTED]",
    }
    assert json.loads(str(attrs["gen_ai.tool.call.result"])) == {
        "body": "Authorization: Bearer [REDACTED]",
        "ticket": "[REDACTED]",
    }
    assert key not in str(attrs)


async def test_one_call_turn_parents_to_the_callers_span(
    provider: TracerProvider, spans: Spans
) -> None:
    pipe = traced_pipe(provider, tracing="tool")
    with provider.get_tracer("agent").start_as_current_span("my agent step"):
        await pipe.call_tool("exec", {"command": "ls"}, call=run_exec)
    assert spans.tree() == {"my agent step": {"execute_tool exec": {}}}


async def test_tool_error_names_the_exception(provider: TracerProvider, spans: Spans) -> None:
    pipe = traced_pipe(provider, tracing="tool")

    def broken(args: dict[str, Any]) -> None:
        raise FileNotFoundError("a.txt")

    result = await pipe.call_tool("read", {"path": "a.txt"}, call=broken)
    assert result.status == "error"
    tool = spans.one("execute_tool read")
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.status.description == "FileNotFoundError: a.txt"
    assert (tool.attributes or {})["error.type"] == "FileNotFoundError"


async def test_tool_exec_end_times_each_interceptor(provider: TracerProvider) -> None:
    pipe = traced_pipe(provider, tracing="off")
    ends: list[Any] = []
    pipe.subscribe(ends.append, events={"tool_exec_end"})
    async with pipe:
        await pipe.call_tool("exec", {"command": "ls"}, call=run_exec)
        await pipe.call_tool("exec", {"command": "rm -rf /"}, call=run_exec)
    allowed, blocked = ends
    assert allowed.interceptors == ("no-rm", "add-timeout", "audit")
    assert blocked.interceptors == ("no-rm", "audit")
    for end in ends:
        assert len(end.interceptor_ns) == len(end.interceptors)
        assert all(ns > 0 for ns in end.interceptor_ns)


def test_global_provider_installed_after_the_pipeline_is_built() -> None:
    # the global provider can be set once per process: check it in a fresh one
    script = textwrap.dedent(
        """
        import anyio
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
            InMemorySpanExporter,
        )
        from interpose import Pipeline

        pipe = Pipeline(builtins=False)
        exporter = InMemorySpanExporter()

        async def main() -> None:
            await pipe.call_tool("exec", {"command": "ls"}, call=lambda a: "ok")
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            trace.set_tracer_provider(provider)
            await pipe.call_tool("exec", {"command": "ls"}, call=lambda a: "ok")

        anyio.run(main)
        print([s.name for s in exporter.get_finished_spans()])
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "['execute_tool exec']"


async def test_failing_model_call_marks_the_chat_span(
    provider: TracerProvider, spans: Spans
) -> None:
    pipe = traced_pipe(provider, tracing="tool")

    def model(request: LLMRequest) -> LLMResponse:
        raise ConnectionError("provider unreachable")

    with pytest.raises(ConnectionError):
        async with pipe.turn(agent_id="coder", model="claude-x") as turn:
            await turn.call_llm(LLMRequest(), call=model)

    chat = spans.one("chat claude-x")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.status.description == "ConnectionError: provider unreachable"
    assert (chat.attributes or {})["error.type"] == "ConnectionError"
    agent = spans.one("invoke_agent coder")
    assert agent.status.status_code is StatusCode.ERROR
    assert (agent.attributes or {})["error.type"] == "ConnectionError"
    assert [e.name for e in agent.events] == ["exception"]


@pytest.mark.parametrize("level", ["tool", "interceptor"])
async def test_a_chain_of_sync_before_handlers_records_every_outcome(
    provider: TracerProvider, spans: Spans, level: TracingLevel
) -> None:
    """Only sync tool.before handlers and nobody listening: the traced call takes the
    quiet path, and its span still names who decided, whatever the outcome."""
    pipe = Pipeline(builtins=False, tracer_provider=provider, tracing=level)

    @pipe.intercept("tool.before", tools="read", priority=30, id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = "cached"

    @pipe.intercept("tool.before", tools="exec", priority=20, id="gate")
    def gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        command = out.args["command"]
        if command == "rm -rf /":
            out.block, out.block_reason = True, "no"
        elif command == "stop":
            raise AbortTurn("budget exhausted")
        elif command == "crash":
            raise KeyError("ticket")

    @pipe.intercept("tool.before", tools="exec", priority=10, id="add-timeout")
    def add_timeout(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.args = {**out.args, "timeout": 30}

    def run(args: dict[str, Any]) -> str:
        if args["command"] == "boom":
            raise OSError("disk")
        return f"ran {args['command']} in {args['timeout']}"

    results = [
        await pipe.call_tool(name, args, call=run, call_id=f"c{i}")
        for i, (name, args) in enumerate(
            [
                ("exec", {"command": "ls"}),
                ("exec", {"command": "rm -rf /"}),
                ("read", {"path": "a"}),
                ("exec", {"command": "crash"}),
                ("exec", {"command": "boom"}),
                ("exec", {"command": "stop"}),
            ]
        )
    ]
    assert [r.status for r in results] == [
        "ok",
        "blocked",
        "responded",
        "blocked",
        "error",
        "aborted",
    ]
    assert results[0].output == "ran ls in 30"
    tools = [s for s in spans.all if s.name.startswith("execute_tool")]
    assert [(s.attributes or {})["gen_ai.tool.call.id"] for s in tools] == [
        f"c{i}" for i in range(6)
    ]
    attrs = [dict(s.attributes or {}) for s in tools]
    assert "interpose.tool.status" not in attrs[0]
    assert tools[0].status.status_code is StatusCode.UNSET
    assert [a.get("interpose.decided_by") for a in attrs] == [
        None,
        "gate",
        "cache",
        "gate",
        None,
        "gate",
    ]
    assert [a.get("error.type") for a in attrs] == [
        None,
        "tool_blocked",
        None,
        "tool_blocked",
        "OSError",
        "tool_aborted",
    ]
    assert tools[1].status.description == "no"
    assert tools[3].status.description == "interceptor 'gate' failed: KeyError: 'ticket'"
    children = [spans.children(s) for s in tools]
    if level == "tool":
        assert children == [[]] * 6
    else:
        assert children == [
            ["tool.before gate", "tool.before add-timeout"],
            ["tool.before gate"],
            ["tool.before cache"],
            ["tool.before gate"],
            ["tool.before gate", "tool.before add-timeout"],
            ["tool.before gate"],
        ]
        decisions = [
            (s.attributes or {})["interpose.decision"]
            for s in spans.all
            if s.name.startswith("tool.before")
        ]
        assert decisions == [
            "continue",
            "modify",
            "block",
            "respond",
            "failed",
            "continue",
            "modify",
            "abort",
        ]


async def test_spans_are_current_while_they_run_and_restored_after(
    provider: TracerProvider, spans: Spans
) -> None:
    """A handler's and the tool's spans are current while they run (a span they start
    nests in theirs), and the caller's context is back afterwards, failure or not."""
    pipe = traced_pipe(provider)
    tracer = provider.get_tracer("user")

    @pipe.intercept("tool.before", priority=20, id="inner-span")
    def inner(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        with tracer.start_as_current_span("handler work"):
            pass
        if out.args.get("fail"):
            raise KeyError("boom")

    async def tool(args: dict[str, Any]) -> str:
        with tracer.start_as_current_span("tool work"):
            return "ok"

    outside = trace.get_current_span()
    for args in ({}, {"fail": True}):
        await pipe.call_tool("exec", args, call=tool)
        assert trace.get_current_span() is outside
    handler_spans = [s for s in spans.all if s.name == "tool.before inner-span"]
    assert len(handler_spans) == 2
    for span in handler_spans:
        assert spans.children(span) == ["handler work"]
    assert handler_spans[1].status.status_code is StatusCode.ERROR
    assert [e.name for e in handler_spans[1].events] == ["exception"]
    tool_span = next(s for s in spans.all if s.name == "execute_tool exec")
    assert "tool work" in spans.children(tool_span)
