"""The LangChain v1 adapter: a real ``create_agent`` agent (a scripted fake chat model
asking for tool calls, several in one message too) through every decision, in both
``agent.invoke`` and ``agent.ainvoke``, with its events and spans."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio.to_thread
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, tool
from langchain_helpers import Driver, Mode, ScriptedChatModel, calls
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from interpose import (
    AbortTurn,
    Approval,
    ApprovalRequest,
    HardAbort,
    LLMAfterInput,
    LLMAfterOutput,
    LLMBeforeInput,
    LLMContext,
    LLMRequest,
    LLMResponse,
    MessageBeforeInput,
    MessageBeforeOutput,
    ParamsBeforeInput,
    ParamsBeforeOutput,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolCall,
)
from interpose.adapters.langchain import InterposeMiddleware

Ran = list[tuple[str, dict[str, Any]]]
CallNext = Callable[[], Awaitable[None]]
HI = {"messages": [HumanMessage("tidy up the project")]}


@pytest.fixture(params=["sync", "async"])
def mode(request: pytest.FixtureRequest) -> Mode:
    mode: Mode = request.param
    return mode


@pytest.fixture
def ran() -> Ran:
    """What the tools were called with (they only record it)."""
    return []


def toolbox(ran: Ran) -> list[BaseTool]:
    @tool
    def ls(path: str) -> str:
        """List a directory."""
        ran.append(("ls", {"path": path}))
        return f"a.txt b.txt in {path}"

    @tool
    def bash(command: str) -> str:
        """Run a shell command (here: only record it, never run it)."""
        ran.append(("bash", {"command": command}))
        return "recorded"

    @tool
    def fail(path: str) -> str:
        """A tool that breaks."""
        ran.append(("fail", {"path": path}))
        raise RuntimeError("disk full")

    return [ls, bash, fail]


def new_pipe(**kw: Any) -> Pipeline:
    kw.setdefault("builtins", False)
    pipe = Pipeline(**kw)
    pipe.register_tool("ls")
    pipe.register_tool("fail")
    return pipe


def agent_for(
    pipe: Pipeline, responses: list[BaseMessage], ran: Ran, **kw: Any
) -> tuple[Any, ScriptedChatModel, InterposeMiddleware]:
    model = ScriptedChatModel(responses=responses)
    checkpointer = kw.pop("checkpointer", None)
    mw = InterposeMiddleware(pipe, **kw)
    agent = create_agent(model, toolbox(ran), middleware=[mw], checkpointer=checkpointer)
    return agent, model, mw


def tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def refusal_of(message: ToolMessage) -> dict[str, Any]:
    assert message.status == "error"
    assert isinstance(message.content, str)
    decoded: dict[str, Any] = json.loads(message.content)
    return decoded


# -- the tool stage ---------------------------------------------------------------------


async def test_continue_runs_every_call_and_publishes_the_turn(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()
    events: list[Any] = []
    pipe.subscribe(events.append)
    agent, _model, mw = agent_for(
        pipe,
        [calls(("ls", {"path": "src"}), ("ls", {"path": "tests"})), AIMessage("done")],
        ran,
        agent_id="coder",
    )
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI, {"configurable": {"thread_id": "th-1"}})
    assert state["messages"][-1].content == "done"
    assert sorted(ran, key=str) == [("ls", {"path": "src"}), ("ls", {"path": "tests"})]
    assert [m.content for m in tool_messages(state)] == [
        "a.txt b.txt in src",
        "a.txt b.txt in tests",
    ]
    assert all(m.status == "success" for m in tool_messages(state))
    kinds = [e.kind for e in events]
    assert kinds[:3] == ["turn_started", "message_received", "params_resolved"]
    assert kinds[-1] == "turn_ended"
    assert kinds.count("llm_request") == 2
    assert kinds.count("llm_response") == 2
    assert kinds.count("tool_exec_start") == 2
    assert kinds.count("tool_exec_end") == 2
    assert {e.turn_id for e in events} == {events[0].turn_id}  # one turn
    assert {(e.agent_id, e.session_key) for e in events} == {("coder", "th-1")}
    ends = [e for e in events if e.kind == "tool_exec_end"]
    assert sorted(e.tool_call_id for e in ends) == ["c1", "c2"]
    assert all(e.tool_name == "ls" and e.status == "ok" for e in ends)
    assert events[1].message == "tidy up the project"


async def test_modify_args_reaches_the_tool(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()

    @pipe.intercept("tool.before", tools="ls", id="sandbox")
    def sandbox(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.args["path"] = "/sandbox/" + out.args["path"]

    agent, _, mw = agent_for(pipe, [calls(("ls", {"path": "src"})), AIMessage("done")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert ran == [("ls", {"path": "/sandbox/src"})]
    assert tool_messages(state)[0].content == "a.txt b.txt in /sandbox/src"


async def test_block_is_an_error_tool_message_the_model_reads(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()
    events: list[Any] = []
    pipe.subscribe(events.append, events={"tool_exec_skipped", "tool_exec_start"})

    @pipe.intercept("tool.before", tools="ls", id="no-etc")
    def no_etc(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.args["path"].startswith("/etc"):
            out.block, out.block_reason = True, "no /etc"

    agent, model, mw = agent_for(pipe, [calls(("ls", {"path": "/etc"})), AIMessage("sorry")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert ran == []
    (message,) = tool_messages(state)
    assert refusal_of(message) == {"status": "blocked", "tool": "ls", "reason": "no /etc"}
    assert message.tool_call_id == "c1"
    assert message.name == "ls"
    # the model's second call saw the refusal
    assert any(isinstance(m, ToolMessage) and "no /etc" in str(m.content) for m in model.calls[1])
    assert [(e.kind, e.why, e.decided_by) for e in events] == [
        ("tool_exec_skipped", "blocked", "no-etc")
    ]


async def test_deny_by_an_approver(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()

    @pipe.approver(tools="exec")
    def gate(req: ApprovalRequest) -> Approval:
        return Approval.deny("no shell today")

    agent, _, mw = agent_for(pipe, [calls(("bash", {"command": "ls"})), AIMessage("ok")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert ran == []
    assert refusal_of(tool_messages(state)[0]) == {
        "status": "denied",
        "tool": "exec",
        "reason": "no shell today",
    }


@pytest.mark.parametrize("allow", [True, False])
async def test_ask_goes_to_human_approval(mode: Mode, ran: Ran, allow: bool) -> None:
    asked: list[tuple[str, dict[str, Any], str]] = []

    async def human(req: ApprovalRequest, reason: str) -> Approval:
        asked.append((req.tool_name, req.args, reason))
        return Approval.allow() if allow else Approval.deny("the human said no")

    pipe = new_pipe(human_approval=human)

    @pipe.approver(tools="exec")
    def gate(req: ApprovalRequest) -> Approval:
        return Approval.ask("shell command")

    agent, _, mw = agent_for(pipe, [calls(("bash", {"command": "make"})), AIMessage("ok")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert asked == [("exec", {"command": "make"}, "shell command")]
    (message,) = tool_messages(state)
    if allow:
        assert ran == [("bash", {"command": "make"})]
        assert message.content == "recorded"
    else:
        assert ran == []
        assert refusal_of(message)["reason"] == "the human said no"


@pytest.mark.parametrize("answer", [True, {"decision": "deny", "reason": "not on prod"}])
async def test_ask_pauses_the_graph_with_interrupt_and_resumes(
    mode: Mode, ran: Ran, answer: Any
) -> None:
    pipe = new_pipe()
    before: list[str] = []
    events: list[Any] = []
    pipe.subscribe(events.append, events={"turn_started", "turn_ended", "tool_exec_end"})

    @pipe.intercept("tool.before", tools="exec", id="count")
    def count(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        before.append(inp.tool_call_id)

    @pipe.approver(tools="exec")
    def gate(req: ApprovalRequest) -> Approval:
        return Approval.ask("deploys need a human")

    agent, model, mw = agent_for(
        pipe,
        [calls(("bash", {"command": "make deploy"})), AIMessage("deployed")],
        ran,
        hitl="interrupt",
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "hitl-1"}}
    async with Driver(mode, pipe, mw) as d:
        paused = await d.invoke(agent, HI, config)
        (pending,) = paused["__interrupt__"]
        assert pending.value == {
            "kind": "interpose.approval",
            "tool": "exec",
            "tool_call_id": "c1",
            "args": {"command": "make deploy"},
            "reason": "deploys need a human",
            "agent_id": "main",
            "session_key": "hitl-1",
        }
        assert ran == []
        assert len(model.calls) == 1
        state = await d.invoke(agent, Command(resume=answer), config)
    # resuming re-runs the paused call's tool stage: before-interceptors see it twice
    assert before == ["c1", "c1"]
    (message,) = tool_messages(state)
    if answer is True:
        assert ran == [("bash", {"command": "make deploy"})]
        assert message.content == "recorded"
    else:
        assert ran == []
        assert refusal_of(message) == {"status": "denied", "tool": "exec", "reason": "not on prod"}
    assert state["messages"][-1].content == "deployed"
    # the paused invocation and its resume are one turn
    assert [e.kind for e in events if e.kind != "tool_exec_end"] == ["turn_started", "turn_ended"]
    assert [e.status for e in events if e.kind == "tool_exec_end"] == [
        "ok" if answer is True else "denied"
    ]


async def test_respond_answers_without_running_the_tool(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()

    @pipe.intercept("tool.before", tools="ls", trusted=True, id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = "cached listing"

    agent, _, mw = agent_for(pipe, [calls(("ls", {"path": "."})), AIMessage("ok")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert ran == []
    (message,) = tool_messages(state)
    assert (message.content, message.status) == ("cached listing", "success")
    assert message.additional_kwargs["interpose_status"] == "responded"


async def test_rewrite_result_in_tool_after(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()

    @pipe.intercept("tool.after", tools="ls", id="upper")
    def upper(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.result.output = str(out.result.output).upper()

    agent, _, mw = agent_for(pipe, [calls(("ls", {"path": "src"})), AIMessage("ok")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    (message,) = tool_messages(state)
    assert message.content == "A.TXT B.TXT IN SRC"
    assert message.tool_call_id == "c1"
    assert message.status == "success"


async def test_a_failing_tool_is_an_error_message(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()
    agent, _, mw = agent_for(pipe, [calls(("fail", {"path": "x"})), AIMessage("ok")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    (message,) = tool_messages(state)
    assert (message.content, message.status) == ("RuntimeError: disk full", "error")


async def test_builtin_guards_stop_rm_rf_home_from_a_shell_tool(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe(builtins=True)
    agent, _, mw = agent_for(
        pipe,
        [calls(("bash", {"command": "ls"}), ("bash", {"command": "rm -rf ~"})), AIMessage("ok")],
        ran,
    )
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert ran == [("bash", {"command": "ls"})]  # the tool never saw rm -rf ~
    by_id = {m.tool_call_id: m for m in tool_messages(state)}
    assert by_id["c1"].content == "recorded"
    refused = refusal_of(by_id["c2"])
    assert refused["status"] == "blocked"
    assert refused["tool"] == "exec"
    assert "rm" in refused["reason"]


# -- the llm stage ----------------------------------------------------------------------


async def test_llm_before_rewrites_system_messages_tools_and_settings(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()

    @pipe.intercept("llm.before", id="policy")
    def policy(inp: LLMBeforeInput, out: LLMRequest) -> None:
        out.system = "You are careful."
        out.messages.append({"role": "user", "content": "Never delete files."})
        out.tools = [t for t in out.tools if t["function"]["name"] != "bash"]
        out.params["temperature"] = 0.1

    model = ScriptedChatModel(responses=[AIMessage("fine")])
    mw = InterposeMiddleware(pipe)
    agent = create_agent(model, toolbox(ran), system_prompt="You are fast.", middleware=[mw])
    async with Driver(mode, pipe, mw) as d:
        await d.invoke(agent, HI)
    (sent,) = model.calls
    assert isinstance(sent[0], SystemMessage)
    assert sent[0].content == "You are careful."
    assert [m.content for m in sent[1:]] == ["tidy up the project", "Never delete files."]
    assert isinstance(sent[2], HumanMessage)
    ((names, settings),) = model.bound
    assert names == ["ls", "fail"]
    assert settings["temperature"] == 0.1


async def test_message_and_params_before_at_the_start(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()

    @pipe.intercept("message.before", id="redact")
    def redact(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        out.message = out.message.replace("project", "[name]")

    @pipe.intercept("params.before", id="cool")
    def cool(inp: ParamsBeforeInput, out: ParamsBeforeOutput) -> None:
        out.temperature = 0.0
        out.max_tokens = 99

    model = ScriptedChatModel(responses=[AIMessage("fine")])
    mw = InterposeMiddleware(pipe)
    agent = create_agent(model, toolbox(ran), middleware=[mw])
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert [m.content for m in model.calls[0]] == ["tidy up the [name]"]
    assert state["messages"][0].content == "tidy up the [name]"
    assert len(state["messages"]) == 2  # replaced in place, not appended
    assert model.bound[0][1]["temperature"] == 0.0
    assert model.bound[0][1]["max_tokens"] == 99


async def test_llm_middleware_responds_without_calling_the_model(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()

    @pipe.middleware("llm", id="canned")
    async def canned(ctx: LLMContext, call_next: CallNext) -> None:
        ctx.response = LLMResponse(
            content="from the cache",
            tool_calls=[ToolCall(id="k1", name="ls", args={"path": "docs"})]
            if not ctx.turn.metadata.get("answered")
            else [],
        )
        ctx.turn.metadata["answered"] = True

    model = ScriptedChatModel(responses=[AIMessage("never")])
    mw = InterposeMiddleware(pipe)
    agent = create_agent(model, toolbox(ran), middleware=[mw])
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert model.calls == []
    assert ran == [("ls", {"path": "docs"})]  # the canned tool call ran
    assert state["messages"][-1].content == "from the cache"


async def test_llm_after_retry_calls_the_model_again(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe(max_retries=2)
    attempts: list[int] = []

    @pipe.intercept("llm.after", id="retry-overloaded")
    def retry(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        attempts.append(inp.attempt)
        out.retry = out.response.content == "overloaded"

    agent, model, mw = agent_for(pipe, [AIMessage("overloaded"), AIMessage("answer")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert attempts == [1, 2]
    assert len(model.calls) == 2
    assert [m.content for m in state["messages"]] == ["tidy up the project", "answer"]


async def test_llm_after_rewrites_the_response(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()

    @pipe.intercept("llm.after", id="veto-bash")
    def veto(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        out.response.tool_calls = [c for c in out.response.tool_calls if c.name != "bash"]

    agent, _, mw = agent_for(
        pipe,
        [calls(("bash", {"command": "make"}), ("ls", {"path": "."})), AIMessage("ok")],
        ran,
    )
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert ran == [("ls", {"path": "."})]
    assert [c["name"] for c in state["messages"][1].tool_calls] == ["ls"]


# -- aborts -----------------------------------------------------------------------------


async def test_abort_turn_in_a_single_call_ends_the_invocation(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()
    events: list[Any] = []
    pipe.subscribe(events.append, events={"turn_aborted", "turn_ended", "tool_exec_end"})

    @pipe.intercept("tool.before", tools="exec", id="stop")
    def stop(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise AbortTurn("enough")

    agent, model, mw = agent_for(
        pipe, [calls(("bash", {"command": "make"})), AIMessage("should not be reached")], ran
    )
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert len(model.calls) == 1
    assert ran == []
    (message,) = tool_messages(state)
    assert refusal_of(message) == {"status": "aborted", "tool": "exec", "reason": "enough"}
    assert state["messages"][-1].content == "[turn aborted: enough]"
    assert [(e.kind, getattr(e, "reason", "")) for e in events] == [
        ("tool_exec_end", "enough"),
        ("turn_aborted", "enough"),
    ]
    assert events[-1].hard is False


async def test_abort_turn_in_a_parallel_batch_ends_after_the_batch(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()

    @pipe.intercept("tool.before", tools="exec", id="stop")
    def stop(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise AbortTurn("stop the batch")

    agent, model, mw = agent_for(
        pipe,
        [
            calls(("ls", {"path": "a"}), ("bash", {"command": "make"}), ("ls", {"path": "b"})),
            AIMessage("should not be reached"),
        ],
        ran,
    )
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert len(model.calls) == 1  # the model is not called after the batch
    by_id = {m.tool_call_id: m for m in tool_messages(state)}
    assert set(by_id) == {"c1", "c2", "c3"}
    assert refusal_of(by_id["c2"])["status"] == "aborted"
    # the siblings were dispatched with it: each either ran or was answered "aborted"
    for sibling in ("c1", "c3"):
        message = by_id[sibling]
        assert message.status == "success" or refusal_of(message)["status"] == "aborted"
    assert ("bash", {"command": "make"}) not in ran


async def test_abort_turn_in_llm_before_ends_with_an_ai_message(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()
    events: list[Any] = []
    pipe.subscribe(events.append, events={"turn_aborted", "turn_ended"})

    @pipe.intercept("llm.before", id="budget")
    def budget(inp: LLMBeforeInput, out: LLMRequest) -> None:
        raise AbortTurn("over budget")

    agent, model, mw = agent_for(pipe, [AIMessage("never")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert model.calls == []
    assert state["messages"][-1].content == "[turn aborted: over budget]"
    assert [e.kind for e in events] == ["turn_aborted"]


async def test_hard_abort_propagates_unwrapped(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()
    events: list[Any] = []
    pipe.subscribe(events.append, events={"turn_aborted", "turn_ended"})
    raised = HardAbort("kill switch")

    @pipe.intercept("tool.before", tools="exec", id="kill")
    def kill(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise raised

    agent, model, mw = agent_for(pipe, [calls(("bash", {"command": "make"})), AIMessage("x")], ran)
    async with Driver(mode, pipe, mw) as d:
        with pytest.raises(HardAbort) as info:
            await d.invoke(agent, HI)
    assert info.value is raised
    assert ran == []
    assert len(model.calls) == 1
    assert [(e.kind, e.hard) for e in events] == [("turn_aborted", True)]


# -- spans ------------------------------------------------------------------------------


def _by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name.startswith(prefix)]


async def test_one_trace_invoke_agent_chat_and_execute_tool(
    mode: Mode, ran: Ran, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    pipe = new_pipe(tracer_provider=provider)

    @pipe.intercept("tool.before", tools="exec", id="no-bash")
    def no_bash(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.block, out.block_reason = True, "no shell"

    agent, _, mw = agent_for(
        pipe,
        [calls(("ls", {"path": "."}), ("bash", {"command": "make"})), AIMessage("ok")],
        ran,
        agent_id="coder",
    )
    async with Driver(mode, pipe, mw) as d:
        await d.invoke(agent, HI, {"configurable": {"thread_id": "traced"}})
    spans = exporter.get_finished_spans()
    (root,) = _by_name(spans, "invoke_agent")
    chats = _by_name(spans, "chat")
    tools = _by_name(spans, "execute_tool")
    assert root.name == "invoke_agent coder"
    assert len(chats) == 2
    assert len(tools) == 2
    assert len(spans) == 5
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}
    for span in chats + tools:
        assert span.parent is not None
        assert span.parent.span_id == root.context.span_id
    assert {s.name for s in tools} == {"execute_tool ls", "execute_tool exec"}
    (blocked,) = [s for s in tools if s.name == "execute_tool exec"]
    assert blocked.status.status_code == StatusCode.ERROR
    assert root.attributes is not None
    assert root.attributes["gen_ai.conversation.id"] == "traced"
    assert root.attributes["gen_ai.request.model"] == "ScriptedChatModel"


async def test_hard_abort_marks_the_invoke_agent_span(
    mode: Mode, ran: Ran, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    pipe = new_pipe(tracer_provider=provider)

    @pipe.intercept("tool.before", tools="exec", id="kill")
    def kill(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise HardAbort("kill switch")

    agent, _, mw = agent_for(pipe, [calls(("bash", {"command": "make"})), AIMessage("x")], ran)
    async with Driver(mode, pipe, mw) as d:
        with pytest.raises(HardAbort):
            await d.invoke(agent, HI)
    (root,) = _by_name(exporter.get_finished_spans(), "invoke_agent")
    assert root.status.status_code == StatusCode.ERROR
    assert root.attributes is not None
    assert root.attributes["interpose.abort.hard"] is True


async def test_with_trace_content_the_chat_spans_carry_the_conversation(
    mode: Mode, ran: Ran, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    # no llm handler reads the messages: they are converted for the spans alone
    pipe = new_pipe(tracer_provider=provider, trace_content=True)
    agent, _, mw = agent_for(pipe, [calls(("ls", {"path": "."})), AIMessage("all tidy")], ran)
    async with Driver(mode, pipe, mw) as d:
        await d.invoke(agent, HI)
    first, second = sorted(
        _by_name(exporter.get_finished_spans(), "chat"), key=lambda s: s.start_time or 0
    )
    assert json.loads(str((first.attributes or {})["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "tidy up the project"}]}
    ]
    user, asked, answered = json.loads(str((second.attributes or {})["gen_ai.input.messages"]))
    assert user["role"] == "user"
    assert asked["role"] == "assistant"
    assert [(p["type"], p["name"], p["arguments"], p["id"]) for p in asked["parts"]] == [
        ("tool_call", "ls", {"path": "."}, "c1")
    ]
    assert answered["role"] == "tool"
    [response] = answered["parts"]
    assert (response["type"], response["id"]) == ("tool_call_response", "c1")
    assert json.loads(str((second.attributes or {})["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "all tidy"}],
            "finish_reason": "stop",
        }
    ]


# -- sync specifics -------------------------------------------------------------------------


def test_sync_invoke_without_any_event_loop(ran: Ran) -> None:
    pipe = new_pipe()
    events: list[Any] = []
    pipe.subscribe(events.append, events={"tool_exec_end"})
    agent, _, mw = agent_for(pipe, [calls(("ls", {"path": "."})), AIMessage("ok")], ran)
    with mw:
        state = agent.invoke(HI)
    assert state["messages"][-1].content == "ok"
    assert [e.status for e in events] == ["ok"]  # drained by close()


async def test_sync_invoke_under_a_running_loop_does_not_deadlock(ran: Ran) -> None:
    pipe = new_pipe()
    agent, _, mw = agent_for(pipe, [calls(("ls", {"path": "."})), AIMessage("ok")], ran)
    with mw:
        state = agent.invoke(HI)  # blocks this loop: the middleware runs on its own
    assert ran == [("ls", {"path": "."})]
    assert state["messages"][-1].content == "ok"


def test_the_public_surface_is_pinned() -> None:
    from langchain.agents.middleware import AgentMiddleware

    import interpose.adapters.langchain as adapter

    assert adapter.__all__ == ["InterposeMiddleware", "InterposeState"]
    assert issubclass(InterposeMiddleware, AgentMiddleware)
    assert InterposeMiddleware.state_schema is adapter.InterposeState
    mw = InterposeMiddleware(new_pipe(), agent_id="a")
    assert (mw.agent_id, mw.hitl, mw.tool_names, mw.name) == (
        "a",
        "handler",
        {},
        "InterposeMiddleware[a]",
    )


def test_hitl_must_be_known() -> None:
    with pytest.raises(ValueError, match="hitl must be"):
        InterposeMiddleware(new_pipe(), hitl="ask")  # type: ignore[arg-type]


async def test_two_asks_in_one_batch_pause_together_and_resume_by_interrupt_id(
    mode: Mode, ran: Ran
) -> None:
    pipe = new_pipe()

    @pipe.approver(tools="exec")
    def gate(req: ApprovalRequest) -> Approval:
        return Approval.ask("shell")

    agent, _, mw = agent_for(
        pipe,
        [calls(("bash", {"command": "make a"}), ("bash", {"command": "make b"})), AIMessage("ok")],
        ran,
        hitl="interrupt",
        checkpointer=InMemorySaver(),
    )
    config = {"configurable": {"thread_id": "hitl-2"}}
    async with Driver(mode, pipe, mw) as d:
        paused = await d.invoke(agent, HI, config)
        pending = {i.value["args"]["command"]: i.id for i in paused["__interrupt__"]}
        assert set(pending) == {"make a", "make b"}
        answers = {pending["make a"]: "approve", pending["make b"]: "reject"}
        state = await d.invoke(agent, Command(resume=answers), config)
    assert ran == [("bash", {"command": "make a"})]
    by_id = {m.tool_call_id: m for m in tool_messages(state)}
    assert by_id["c1"].content == "recorded"
    assert refusal_of(by_id["c2"])["status"] == "denied"


async def test_a_resume_in_another_middleware_opens_a_turn_there(ran: Ran) -> None:
    """As when the process that paused is gone: the checkpoint resumes elsewhere."""
    pipe = new_pipe()
    events: list[Any] = []
    pipe.subscribe(events.append, events={"turn_started", "turn_ended"})

    @pipe.approver(tools="exec")
    def gate(req: ApprovalRequest) -> Approval:
        return Approval.ask("shell")

    saver = InMemorySaver()
    config = {"configurable": {"thread_id": "moved"}}
    responses: list[BaseMessage] = [calls(("bash", {"command": "make"})), AIMessage("ok")]
    first, _, gone = agent_for(pipe, responses, ran, hitl="interrupt", checkpointer=saver)
    second, _, _ = agent_for(pipe, responses[1:], ran, hitl="interrupt", checkpointer=saver)
    async with pipe:
        await first.ainvoke(HI, config)
        state = await second.ainvoke(Command(resume=True), config)
        await gone.aclose()  # ends the turn its middleware never saw resumed
    assert ran == [("bash", {"command": "make"})]
    assert state["messages"][-1].content == "ok"
    # the first turn stayed open until aclose(); the second began and ended at the resume
    kinds = [e.kind for e in events]
    assert kinds == ["turn_started", "turn_started", "turn_ended", "turn_ended"]
    assert events[1].turn_id == events[2].turn_id
    assert events[1].session_key == "moved"
    assert events[3].turn_id == events[0].turn_id


async def test_a_failing_model_ends_the_turn_with_the_error(
    mode: Mode, ran: Ran, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    pipe = new_pipe(tracer_provider=provider)
    events: list[Any] = []
    pipe.subscribe(events.append, events={"turn_ended", "turn_aborted"})
    agent, _, mw = agent_for(pipe, [], ran)  # no response left: the model raises
    async with Driver(mode, pipe, mw) as d:
        with pytest.raises(AssertionError, match="called 1 times"):
            await d.invoke(agent, HI)
    assert [e.kind for e in events] == ["turn_ended"]
    (root,) = _by_name(exporter.get_finished_spans(), "invoke_agent")
    assert root.status.status_code == StatusCode.ERROR


async def test_tool_names_map_a_framework_tool_onto_a_canonical_name(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe(builtins=True)  # the security audit guards `read`
    agent, _, mw = agent_for(
        pipe,
        [calls(("ls", {"path": "/home/me/.ssh/id_rsa"}), ("ls", {"path": "src"})), AIMessage("k")],
        ran,
        tool_names={"ls": "read"},
    )
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert ran == [("ls", {"path": "src"})]
    by_id = {m.tool_call_id: m for m in tool_messages(state)}
    refused = refusal_of(by_id["c1"])
    assert refused["status"] == "blocked"
    assert refused["tool"] == "read"
    assert by_id["c1"].name == "ls"  # the model still sees its own tool's name


async def test_abort_turn_in_message_before_ends_before_any_model_call(
    mode: Mode, ran: Ran
) -> None:
    pipe = new_pipe()
    events: list[Any] = []
    pipe.subscribe(events.append, events={"turn_aborted", "turn_ended"})

    @pipe.intercept("message.before", id="no-secrets")
    def no_secrets(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        if "password" in out.message:
            raise AbortTurn("the message holds a password")

    agent, model, mw = agent_for(pipe, [AIMessage("never")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, {"messages": [HumanMessage("my password is hunter2")]})
    assert model.calls == []
    assert [m.content for m in state["messages"]] == ["my password is hunter2"]
    assert [(e.kind, e.reason) for e in events] == [
        ("turn_aborted", "the message holds a password")
    ]


async def test_ainvoke_with_observers_needs_the_pipeline_entered(ran: Ran) -> None:
    pipe = new_pipe()
    pipe.subscribe(lambda event: None)
    agent, model, _ = agent_for(pipe, [AIMessage("never")], ran)
    with pytest.raises(RuntimeError, match="enter it with `async with pipe:`"):
        await agent.ainvoke(HI)
    assert model.calls == []


async def test_invoke_says_so_when_the_pipeline_is_entered_elsewhere(ran: Ran) -> None:
    pipe = new_pipe()
    agent, model, mw = agent_for(pipe, [AIMessage("never")], ran)
    async with pipe:
        with pytest.raises(RuntimeError, match="enters the pipeline on its own event loop"):
            await anyio.to_thread.run_sync(agent.invoke, HI)
    assert model.calls == []
    mw.close()  # nothing left to stop


async def test_astream_goes_through_the_adapter(ran: Ran) -> None:
    pipe = new_pipe()

    @pipe.intercept("tool.after", tools="ls", id="upper")
    def upper(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.result.output = str(out.result.output).upper()

    agent, _, _ = agent_for(pipe, [calls(("ls", {"path": "src"})), AIMessage("done")], ran)
    seen: list[str] = []
    async for chunk in agent.astream(HI, stream_mode="updates"):
        for update in chunk.values():
            for message in (update or {}).get("messages", []):
                seen.append(str(message.content))
    assert "A.TXT B.TXT IN SRC" in seen
    assert seen[-1] == "done"


async def test_tool_after_retry_runs_the_tool_again(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe(max_retries=1)
    results: list[str] = []

    @pipe.intercept("tool.after", tools="ls", id="retry-once")
    def retry_once(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        results.append(str(out.result.output))
        out.retry = len(results) == 1

    agent, _, mw = agent_for(pipe, [calls(("ls", {"path": "src"})), AIMessage("ok")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert ran == [("ls", {"path": "src"}), ("ls", {"path": "src"})]
    assert len(results) == 2
    assert [m.content for m in tool_messages(state)] == ["a.txt b.txt in src"]


async def test_a_failing_interceptor_follows_its_policy_and_is_published(
    mode: Mode, ran: Ran
) -> None:
    pipe = new_pipe()
    events: list[Any] = []
    pipe.subscribe(events.append, events={"interceptor_failed"})

    @pipe.intercept("tool.before", tools="ls", id="broken-gate")  # tool.before: fail closed
    def broken_gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise KeyError("ticket")

    agent, _, mw = agent_for(pipe, [calls(("ls", {"path": "src"})), AIMessage("ok")], ran)
    async with Driver(mode, pipe, mw) as d:
        state = await d.invoke(agent, HI)
    assert ran == []
    assert refusal_of(tool_messages(state)[0]) == {
        "status": "blocked",
        "tool": "ls",
        "reason": "interceptor 'broken-gate' failed: KeyError: 'ticket'",
    }
    assert [(e.interceptor_id, e.policy, e.tool_call_id) for e in events] == [
        ("broken-gate", "block", "c1")
    ]


async def test_a_failing_llm_interceptor_raises_out_of_the_invocation(mode: Mode, ran: Ran) -> None:
    pipe = new_pipe()
    events: list[Any] = []
    pipe.subscribe(events.append, events={"interceptor_failed", "turn_ended"})

    @pipe.intercept("llm.before", id="broken-prompt")  # llm.before: on_error="raise"
    def broken_prompt(inp: LLMBeforeInput, out: LLMRequest) -> None:
        raise ValueError("no template")

    agent, model, mw = agent_for(pipe, [AIMessage("never")], ran)
    async with Driver(mode, pipe, mw) as d:
        with pytest.raises(ValueError, match="no template"):
            await d.invoke(agent, HI)
    assert model.calls == []
    assert [(e.kind, getattr(e, "interceptor_id", "")) for e in events] == [
        ("interceptor_failed", "broken-prompt"),
        ("turn_ended", ""),
    ]


async def test_hitl_interrupt_defers_to_the_previous_handler_outside_the_graph() -> None:
    asked: list[str] = []

    def human(req: ApprovalRequest, reason: str) -> bool:
        asked.append(req.tool_name)
        return True

    pipe = new_pipe(human_approval=human)

    @pipe.approver(tools="exec")
    def gate(req: ApprovalRequest) -> Approval:
        return Approval.ask("shell")

    InterposeMiddleware(pipe, hitl="interrupt")
    InterposeMiddleware(pipe, hitl="interrupt")  # installed once, not wrapped twice
    result = await pipe.call_tool("bash", {"command": "ls"}, call=lambda args: "listed")
    assert (result.status, result.output, asked) == ("ok", "listed", ["exec"])

    bare = new_pipe()
    bare.approver(tools="exec")(gate)
    InterposeMiddleware(bare, hitl="interrupt")
    refused = await bare.call_tool("bash", {"command": "ls"}, call=lambda args: "listed")
    assert refused.status == "denied"
    assert "no human-approval handler is set" in refused.output["reason"]
