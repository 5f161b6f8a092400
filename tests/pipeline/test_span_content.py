"""``trace_content=True``: the model's messages and a tool's input on spans, in the GenAI
conventions' message schema and where Phoenix fills its input/output columns from;
redacted; nothing computed without content tracing or without a recording span."""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from interpose import LLMRequest, LLMResponse, Pipeline, Redactor, ToolCall
from interpose.pipeline.span_content import chat_content

KEY = "sk-ant-api03-" + "Q" * 40


def one(exporter: InMemorySpanExporter, name: str) -> dict[str, Any]:
    [span] = [s for s in exporter.get_finished_spans() if s.name == name]
    return dict(span.attributes or {})


def loads(attrs: dict[str, Any], key: str) -> Any:
    return json.loads(str(attrs[key]))


async def chat(pipe: Pipeline, request: LLMRequest | dict[str, Any], response: LLMResponse) -> None:
    async with pipe, pipe.turn(agent_id="coder", model="m", session_key="s") as turn:
        await turn.message("hello")
        await turn.call_llm(request, call=lambda req: response)


async def test_chat_span_carries_the_messages_in_the_genai_schema(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": f"deploy with {KEY}"},
        # interpose's own agent loop: tool calls as {"id", "name", "args"}
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "exec", "args": {"command": "make"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "exec", "content": {"exit_code": 0}},
        # OpenAI chat: the arguments as a JSON string
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "login", "arguments": json.dumps({"api_key": KEY})},
                }
            ],
        },
        # Anthropic content blocks
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c2", "content": "ok"},
                {"type": "text", "text": "thanks"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm"},
                {"type": "tool_use", "id": "c3", "name": "read", "input": {"path": "a"}},
            ],
        },
        # OpenAI Responses items
        {"type": "function_call", "call_id": "c4", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c4", "output": "a b"},
        # LangChain's role names, a block of another kind, something that is not a dict
        {"role": "human", "content": [{"type": "image", "url": "https://example.net/a.png"}]},
        # not a dict at all (an llm.before handler may append anything)
        cast(dict[str, Any], "just text"),
    ]
    pipe = Pipeline(builtins=False, tracer_provider=provider, trace_content=True)
    response = LLMResponse(
        content="done",
        tool_calls=[ToolCall(id="c5", name="exec", args={"token": "t0ps3cret"})],
        stop_reason="tool_use",
    )
    await chat(pipe, LLMRequest(system="be brief", messages=history), response)

    attrs = one(exporter, "chat m")
    assert loads(attrs, "gen_ai.system_instructions") == [{"type": "text", "content": "be brief"}]
    assert loads(attrs, "gen_ai.input.messages") == [
        {"role": "user", "parts": [{"type": "text", "content": "deploy with [REDACTED]"}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "tool_call", "name": "exec", "arguments": {"command": "make"}, "id": "c1"}
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "response": {"exit_code": 0}, "id": "c1"}],
            "name": "exec",
        },
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "name": "login",
                    "arguments": {"api_key": "[REDACTED]"},
                    "id": "c2",
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {"type": "tool_call_response", "response": "ok", "id": "c2"},
                {"type": "text", "content": "thanks"},
            ],
        },
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "hm"},
                {"type": "tool_call", "name": "read", "arguments": {"path": "a"}, "id": "c3"},
            ],
        },
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "name": "ls", "arguments": {}, "id": "c4"}],
        },
        {"role": "tool", "parts": [{"type": "tool_call_response", "response": "a b", "id": "c4"}]},
        {"role": "user", "parts": [{"type": "image", "url": "https://example.net/a.png"}]},
        {"role": "user", "parts": [{"type": "text", "content": "just text"}]},
    ]
    assert loads(attrs, "gen_ai.output.messages") == [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "done"},
                {
                    "type": "tool_call",
                    "name": "exec",
                    "arguments": {"token": "[REDACTED]"},
                    "id": "c5",
                },
            ],
            "finish_reason": "tool_call",
        }
    ]
    # Phoenix's input and output columns: the same JSON
    assert attrs["input.value"] == attrs["gen_ai.input.messages"]
    assert attrs["output.value"] == attrs["gen_ai.output.messages"]
    assert attrs["input.mime_type"] == attrs["output.mime_type"] == "application/json"
    assert KEY not in str(attrs)
    # the turn: the user's message
    turn = one(exporter, "invoke_agent coder")
    assert turn["input.value"] == "hello"
    assert loads(turn, "gen_ai.input.messages") == [
        {"role": "user", "parts": [{"type": "text", "content": "hello"}]}
    ]


async def test_chat_span_records_the_request_as_rewritten_and_the_response_as_delivered(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    pipe = Pipeline(builtins=False, tracer_provider=provider, trace_content=True)

    @pipe.intercept("llm.before")
    def add_rule(inp: Any, out: LLMRequest) -> None:
        out.messages.append({"role": "user", "content": "answer in French"})

    @pipe.intercept("llm.after")
    def censor(inp: Any, out: Any) -> None:
        out.response = LLMResponse(content="[censored]", stop_reason="end_turn")

    await chat(pipe, {"messages": [{"role": "user", "content": "hi"}]}, LLMResponse(content="yo"))
    attrs = one(exporter, "chat m")
    assert [m["parts"][0]["content"] for m in loads(attrs, "gen_ai.input.messages")] == [
        "hi",
        "answer in French",
    ]
    assert loads(attrs, "gen_ai.output.messages") == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "[censored]"}],
            "finish_reason": "stop",
        }
    ]
    assert "gen_ai.system_instructions" not in attrs  # no system prompt


async def test_a_failed_model_call_keeps_its_input_messages(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    pipe = Pipeline(builtins=False, tracer_provider=provider, trace_content=True)

    def down(request: LLMRequest) -> LLMResponse:
        raise ConnectionError("model down")

    async with pipe, pipe.turn(agent_id="coder", model="m") as turn:
        with pytest.raises(ConnectionError):
            await turn.call_llm({"messages": [{"role": "user", "content": "hi"}]}, call=down)
    attrs = one(exporter, "chat m")
    assert attrs["error.type"] == "ConnectionError"
    assert loads(attrs, "gen_ai.input.messages") == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    ]
    assert "gen_ai.output.messages" not in attrs
    assert "output.value" not in attrs


async def test_tool_span_puts_the_arguments_in_the_input_column(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    pipe = Pipeline(builtins=False, tracer_provider=provider, trace_content=True)
    await pipe.call_tool("exec", {"command": "ls", "password": "hunter22"}, call=lambda a: "ok")
    attrs = one(exporter, "execute_tool exec")
    assert loads(attrs, "input.value") == {"command": "ls", "password": "[REDACTED]"}
    assert attrs["input.value"] == attrs["gen_ai.tool.call.arguments"]
    assert attrs["input.mime_type"] == "application/json"
    assert loads(attrs, "gen_ai.tool.call.result") == "ok"


class CountingRedactor(Redactor):
    """Counts the content it is asked to encode or scrub."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def to_json(self, value: Any) -> str:
        self.calls += 1
        return super().to_json(value)

    def redact_text(self, text: str) -> str:
        self.calls += 1
        return super().redact_text(text)


async def run_turn(pipe: Pipeline) -> None:
    response = LLMResponse(content="ok", tool_calls=[ToolCall(id="c", name="exec", args={})])
    async with pipe, pipe.turn(agent_id="coder", model="m") as turn:
        await turn.message("hello")
        await turn.call_llm(
            {"system": "s", "messages": [{"role": "user", "content": "x"}]}, call=lambda r: response
        )
        await turn.call_tool("exec", {"command": "ls"}, call=lambda a: "out")


async def test_no_content_without_trace_content(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    redactor = CountingRedactor()
    await run_turn(Pipeline(builtins=False, tracer_provider=provider, redactor=redactor))
    spans: tuple[ReadableSpan, ...] = exporter.get_finished_spans()
    assert len(spans) == 3
    for span in spans:
        keys = set(span.attributes or {})
        assert not {k for k in keys if k.startswith(("input.", "output."))}, span.name
        assert not keys & {
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        }, span.name
    assert redactor.calls == 0


async def test_nothing_is_computed_for_a_span_that_does_not_record() -> None:
    exporter = InMemorySpanExporter()
    unsampled = TracerProvider(sampler=ALWAYS_OFF)
    unsampled.add_span_processor(SimpleSpanProcessor(exporter))
    redactor = CountingRedactor()
    pipe = Pipeline(
        builtins=False, tracer_provider=unsampled, trace_content=True, redactor=redactor
    )
    await run_turn(pipe)
    assert exporter.get_finished_spans() == ()
    assert redactor.calls == 0
    unsampled.shutdown()

    # and the same turn on a recording provider does use it
    recording = TracerProvider()
    pipe = Pipeline(
        builtins=False, tracer_provider=recording, trace_content=True, redactor=redactor
    )
    await run_turn(pipe)
    assert redactor.calls > 0
    recording.shutdown()


# -- whatever the messages, valid GenAI messages (Phoenix drops a list with one bad item) --

_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=5)
_keys = st.sampled_from(
    [
        *("role", "content", "tool_calls", "type", "name", "tool_call_id", "id", "call_id"),
        *("arguments", "args", "output", "function", "text", "input", "thinking", "tool_use_id"),
    ]
)
_kinds = st.sampled_from(
    [
        *("text", "tool_use", "tool_result", "thinking", "function_call", "function_call_output"),
        *("tool_call", "reasoning", "uri", "image"),
    ]
)
_values = st.recursive(
    _scalars | _kinds,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=4),
    max_leaves=12,
)
_messages = st.lists(st.dictionaries(_keys, _values, max_size=5) | _values, max_size=4)


def _valid_part(part: Any) -> bool:
    if not (isinstance(part, dict) and isinstance(part.get("type"), str)):
        return False
    kind = part["type"]
    if kind in ("text", "reasoning"):
        return isinstance(part.get("content"), str)
    if kind == "tool_call":
        return isinstance(part.get("name"), str) and isinstance(part.get("id", ""), str)
    if kind == "tool_call_response":
        return "response" in part and isinstance(part.get("id", ""), str)
    # a generic part: any other type of the caller's (the schema's others need fields)
    return kind not in ("server_tool_call", "server_tool_call_response", "blob", "file", "uri")


@settings(max_examples=300, deadline=None)
@given(_messages)
def test_any_messages_become_valid_genai_messages(messages: list[Any]) -> None:
    attrs = chat_content(LLMRequest(messages=messages), LLMResponse(), Redactor())
    converted = json.loads(attrs["gen_ai.input.messages"])
    assert len(converted) == len(messages)
    for message in converted:
        assert isinstance(message["role"], str)
        assert isinstance(message.get("name", ""), str)
        assert all(_valid_part(part) for part in message["parts"]), message
