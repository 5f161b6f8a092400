"""The OpenAI Agents SDK adapter, driven by real ``Runner.run`` calls with the SDK's own
offline scripted model (``agents.testing.ScriptedModel``), through every decision.

The SDK's own tracing is disabled (it would export to the network); interpose's spans go
to an in-memory exporter of an SDK ``TracerProvider`` passed to the pipeline.
"""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from agents import (
    Agent,
    FunctionTool,
    ModelProvider,
    RunConfig,
    Runner,
    RunResult,
    WebSearchTool,
    function_tool,
    handoff,
    set_tracing_disabled,
)
from agents.exceptions import UserError
from agents.items import MessageOutputItem, ToolCallItem, ToolCallOutputItem
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool import ToolErrorFunction
from openai.types.responses import ResponseFunctionWebSearch
from openai.types.responses.response_function_web_search import ActionSearch
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from interpose import (
    AbortTurn,
    Approval,
    ApprovalRequest,
    HardAbort,
    LLMAfterInput,
    LLMAfterOutput,
    LLMBeforeInput,
    LLMRequest,
    LLMResponse,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolCall,
)
from interpose.adapters.openai_agents import (
    InterposeModel,
    InterposeModelProvider,
    InterposeRunner,
    interpose_agent,
)
from interpose.pipeline.context import LLMContext

set_tracing_disabled(True)  # the SDK's own trace export would try the network
NO_SDK_TRACING = RunConfig(tracing_disabled=True)


class Shell:
    """A shell tool whose body only records the command: nothing is ever run."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    def tool(self, name: str = "bash") -> FunctionTool:
        @function_tool(name_override=name)
        async def run_command(command: str) -> str:
            """Run a shell command."""
            self.commands.append(command)
            return f"ran {command}"

        return run_command


def calls(*commands: str, prefix: str = "c") -> list[Any]:
    """One model step asking for ``bash`` once per command (parallel calls)."""
    return [
        function_call("bash", {"command": cmd}, call_id=f"{prefix}{n}")
        for n, cmd in enumerate(commands, 1)
    ]


def seen_outputs(model: ScriptedModel, index: int = 1) -> dict[str, str]:
    """The tool outputs the model read in its call number ``index`` (from 0), by call id."""
    call = model.calls[index]
    assert isinstance(call.input, list)
    return {
        item["call_id"]: item["output"]
        for item in call.input
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    }


def make_agent(model: ScriptedModel, *tools: Any, **kw: Any) -> Agent[Any]:
    return Agent(name="coder", instructions="You fix things.", model=model, tools=list(tools), **kw)


async def run(pipe: Pipeline, agent: Agent[Any], text: str = "tidy up", **kw: Any) -> RunResult:
    async with pipe:
        return await InterposeRunner(pipe).run(agent, text, run_config=NO_SDK_TRACING, **kw)


# -- the tool stage ---------------------------------------------------------------------------


async def test_continue_runs_the_tool_and_the_model_reads_its_output(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    shell = Shell()
    model = ScriptedModel([calls("ls"), [assistant_message("listed")]])
    pipe.subscribe(recorder.append)
    result = await run(pipe, make_agent(model, shell.tool()))
    assert result.final_output == "listed"
    assert shell.commands == ["ls"]
    assert seen_outputs(model) == {"c1": "ran ls"}
    assert [e.kind for e in recorder] == [
        "turn_started",
        "message_received",
        "params_resolved",
        "llm_request",
        "llm_response",
        "tool_exec_start",
        "tool_exec_end",
        "llm_request",
        "llm_response",
        "turn_ended",
    ]
    end = next(e for e in recorder if e.kind == "tool_exec_end")
    assert (end.tool_name, end.tool_call_id, end.status, end.agent_id) == (
        "exec",
        "c1",
        "ok",
        "coder",
    )
    model.assert_complete()


async def test_modify_args_reaches_the_tool(pipe: Pipeline) -> None:
    shell = Shell()

    @pipe.intercept("tool.before", tools="exec")
    def no_color(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        assert inp.raw_name == "bash"
        out.args["command"] += " --color=never"

    model = ScriptedModel([calls("ls"), [assistant_message("ok")]])
    await run(pipe, make_agent(model, shell.tool()))
    assert shell.commands == ["ls --color=never"]
    assert seen_outputs(model) == {"c1": "ran ls --color=never"}


async def test_block_skips_the_tool_and_the_model_reads_why(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    shell = Shell()

    @pipe.intercept("tool.before", tools="exec", id="no-push")
    def no_push(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if "push" in out.args["command"]:
            out.block, out.block_reason = True, "no pushing"

    pipe.subscribe(recorder.append, events={"tool_exec_skipped"})
    model = ScriptedModel([calls("git status", "git push"), [assistant_message("ok")]])
    await run(pipe, make_agent(model, shell.tool()))
    assert shell.commands == ["git status"]
    assert json.loads(seen_outputs(model)["c2"]) == {
        "status": "blocked",
        "tool": "exec",
        "reason": "no pushing",
    }
    [skipped] = recorder
    assert (skipped.why, skipped.decided_by, skipped.tool_call_id) == ("blocked", "no-push", "c2")


async def test_deny_by_an_approver(pipe: Pipeline) -> None:
    shell = Shell()

    @pipe.approver(tools="exec")
    def no_sudo(req: ApprovalRequest) -> Approval:
        return Approval.deny("no sudo") if "sudo" in req.args["command"] else Approval.allow()

    model = ScriptedModel([calls("sudo ls"), [assistant_message("ok")]])
    await run(pipe, make_agent(model, shell.tool()))
    assert shell.commands == []
    assert json.loads(seen_outputs(model)["c1"])["status"] == "denied"


@pytest.mark.parametrize("answer", [True, False])
async def test_ask_goes_to_the_human_approval_handler(answer: bool) -> None:
    asked: list[tuple[str, str]] = []

    async def human(req: ApprovalRequest, reason: str) -> bool:
        asked.append((req.args["command"], reason))
        return answer

    pipe = Pipeline(builtins=False, human_approval=human)

    @pipe.approver(tools="exec")
    def deploys(req: ApprovalRequest) -> Approval:
        return Approval.ask("deploys need a human")

    shell = Shell()
    model = ScriptedModel([calls("deploy prod"), [assistant_message("ok")]])
    await run(pipe, make_agent(model, shell.tool()))
    assert asked == [("deploy prod", "deploys need a human")]
    if answer:
        assert shell.commands == ["deploy prod"]
        assert seen_outputs(model) == {"c1": "ran deploy prod"}
    else:
        assert shell.commands == []
        assert json.loads(seen_outputs(model)["c1"])["status"] == "denied"


async def test_respond_answers_without_running_the_tool(pipe: Pipeline) -> None:
    shell = Shell()

    @pipe.intercept("tool.before", tools="exec")
    def cached(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = "README.md\nsrc/"

    model = ScriptedModel([calls("ls"), [assistant_message("ok")]])
    await run(pipe, make_agent(model, shell.tool()))
    assert shell.commands == []
    assert seen_outputs(model) == {"c1": "README.md\nsrc/"}


async def test_rewrite_result_and_retry_in_tool_after() -> None:
    pipe = Pipeline(builtins=False, max_retries=1)
    shell = Shell()

    @pipe.intercept("tool.after", tools="exec")
    def shout(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        if len(shell.commands) == 1:
            out.retry = True  # the first run is retried once
        out.result.output = str(out.result.output).upper()

    model = ScriptedModel([calls("ls"), [assistant_message("ok")]])
    await run(pipe, make_agent(model, shell.tool()))
    assert shell.commands == ["ls", "ls"]
    assert seen_outputs(model) == {"c1": "RAN LS"}


async def test_invalid_json_arguments_never_reach_the_tool(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    shell = Shell()
    pipe.subscribe(recorder.append, events={"tool_exec_end"})
    bad = function_call("bash", "{not json", call_id="c1")
    model = ScriptedModel([[bad], [assistant_message("ok")]])
    await run(pipe, make_agent(model, shell.tool()))
    assert shell.commands == []
    assert "not valid JSON" in seen_outputs(model)["c1"]
    assert [(e.status, e.is_error) for e in recorder] == [("error", True)]


# -- a tool that raises ------------------------------------------------------------------------


_SDK_DEFAULT: Any = object()


def failing_tool(failure_error_function: Any = _SDK_DEFAULT) -> FunctionTool:
    """A ``bash`` function tool whose body raises; ``failure_error_function`` as
    ``function_tool`` takes it (default: the SDK's)."""

    async def run_command(command: str) -> str:
        """Run a shell command."""
        raise OSError(f"disk full while running {command}")

    if failure_error_function is _SDK_DEFAULT:
        return function_tool(run_command, name_override="bash")
    formatter = cast("ToolErrorFunction | None", failure_error_function)
    return function_tool(run_command, name_override="bash", failure_error_function=formatter)


async def plain_sdk_output(tool: FunctionTool) -> str:
    """What the model reads for the raising tool in a plain SDK run (no interpose)."""
    model = ScriptedModel([calls("ls"), [assistant_message("ok")]])
    await Runner.run(make_agent(model, tool), "tidy up", run_config=NO_SDK_TRACING)
    return seen_outputs(model)["c1"]


async def test_a_tool_that_raises_is_an_error_and_the_model_reads_what_the_sdk_gives(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    pipe = Pipeline(builtins=False, tracer_provider=provider)
    ends: list[Any] = []
    after: list[tuple[str, bool, Any]] = []
    pipe.subscribe(ends.append, events={"tool_exec_end"})

    @pipe.intercept("tool.after", tools="exec")
    def watch(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        after.append((inp.status, inp.is_error, out.result.output))

    model = ScriptedModel([calls("ls"), [assistant_message("sorry")]])
    result = await run(pipe, make_agent(model, failing_tool()))

    assert result.final_output == "sorry"
    # the model reads the SDK's own failure message, as without interpose
    assert seen_outputs(model)["c1"] == await plain_sdk_output(failing_tool())
    assert "disk full" not in seen_outputs(model)["c1"]  # the SDK's default hides it
    # interpose records the failure as one: events, tool.after, span
    [end] = ends
    assert (end.tool_call_id, end.status, end.is_error) == ("c1", "error", True)
    assert after == [("error", True, "OSError: disk full while running ls")]
    [span] = [s for s in exporter.get_finished_spans() if s.name == "execute_tool exec"]
    assert span.attributes is not None
    assert span.attributes["interpose.tool.status"] == "error"
    assert span.attributes["error.type"] == "OSError"


async def test_a_raising_tool_with_its_own_failure_message(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    def explain(ctx: Any, error: Exception) -> str:
        return f"the tool failed: {error}"

    pipe.subscribe(recorder.append, events={"tool_exec_end"})
    model = ScriptedModel([calls("ls"), [assistant_message("ok")]])
    await run(pipe, make_agent(model, failing_tool(failure_error_function=explain)))

    assert seen_outputs(model)["c1"] == "the tool failed: disk full while running ls"
    assert [(e.status, e.is_error) for e in recorder] == [("error", True)]


async def test_a_raising_tool_without_a_failure_message_fails_the_run_as_in_the_sdk(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    plain = ScriptedModel([calls("ls"), [assistant_message("ok")]])
    with pytest.raises(UserError, match="Error running tool bash") as without:
        await Runner.run(
            make_agent(plain, failing_tool(failure_error_function=None)),
            "tidy up",
            run_config=NO_SDK_TRACING,
        )

    pipe.subscribe(recorder.append, events={"tool_exec_end"})
    model = ScriptedModel([calls("ls"), [assistant_message("ok")]])
    with pytest.raises(UserError) as caught:
        await run(pipe, make_agent(model, failing_tool(failure_error_function=None)))

    assert str(caught.value) == str(without.value)
    assert isinstance(caught.value.__cause__, OSError)
    assert [(e.status, e.is_error) for e in recorder] == [("error", True)]


async def test_a_tool_after_handler_may_rewrite_the_error_the_model_reads(pipe: Pipeline) -> None:
    @pipe.intercept("tool.after", tools="exec")
    def explain(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        if inp.is_error:
            out.result.output = "the disk is full: free some space first"

    model = ScriptedModel([calls("ls"), [assistant_message("ok")]])
    await run(pipe, make_agent(model, failing_tool()))

    assert seen_outputs(model)["c1"] == "the disk is full: free some space first"


async def test_without_the_runner_a_raising_tool_is_an_error_too(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    pipe.subscribe(recorder.append, events={"tool_exec_end"})
    model = ScriptedModel([calls("ls"), [assistant_message("ok")]])
    async with pipe:
        await Runner.run(
            interpose_agent(make_agent(model, failing_tool()), pipe),
            "go",
            run_config=NO_SDK_TRACING,
        )

    assert [(e.status, e.is_error) for e in recorder] == [("error", True)]
    assert seen_outputs(model)["c1"] == await plain_sdk_output(failing_tool())


# -- the guards --------------------------------------------------------------------------------


@pytest.mark.parametrize("tool_name", ["bash", "shell"])
async def test_the_builtin_guard_stops_rm_rf_home(tool_name: str) -> None:
    pipe = Pipeline()  # the built-in guards
    shell = Shell()
    step = [function_call(tool_name, {"command": "rm -rf ~"}, call_id="c1")]
    model = ScriptedModel([step, [assistant_message("I could not.")]])
    agent = make_agent(model, shell.tool(tool_name))
    async with pipe:
        runner = InterposeRunner(pipe, tool_names={"shell": "exec"})
        result = await runner.run(agent, "free some space", run_config=NO_SDK_TRACING)
    assert shell.commands == []
    refusal = json.loads(seen_outputs(model)["c1"])
    assert refusal["status"] == "blocked"
    assert "command-safety-guard" in refusal["reason"]
    assert result.final_output == "I could not."


# -- the llm stage -----------------------------------------------------------------------------


async def test_llm_before_rewrites_the_request(pipe: Pipeline) -> None:
    shell = Shell()

    @pipe.intercept("llm.before")
    def policy(inp: LLMBeforeInput, out: LLMRequest) -> None:
        assert [t["name"] for t in out.tools] == ["bash", "web_search"]
        out.system += " Never push."
        out.tools = [t for t in out.tools if t["name"] != "web_search"]
        out.params["temperature"] = 0.1
        out.headers["x-policy"] = "strict"
        out.messages.append({"role": "user", "content": "(be brief)"})

    model = ScriptedModel([[assistant_message("done")]])
    await run(pipe, make_agent(model, shell.tool(), WebSearchTool()))
    [call] = model.calls
    assert call.system_instructions == "You fix things. Never push."
    assert [t.name for t in call.tools] == ["bash"]
    assert call.model_settings.temperature == 0.1
    assert call.model_settings.extra_headers == {"x-policy": "strict"}
    assert call.input == [
        {"role": "user", "content": "tidy up"},
        {"role": "user", "content": "(be brief)"},
    ]


async def test_llm_after_rewrites_the_answer_and_the_tool_calls(pipe: Pipeline) -> None:
    shell = Shell()

    @pipe.intercept("llm.after")
    def policy(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        response = out.response
        for call in response.tool_calls:
            call.args["command"] = call.args["command"].replace("rm", "echo rm")
        response.content = response.content.replace("secret", "[redacted]")

    model = ScriptedModel([calls("rm build"), [assistant_message("the secret is out")]])
    result = await run(pipe, make_agent(model, shell.tool()))
    assert shell.commands == ["echo rm build"]
    assert result.final_output == "the [redacted] is out"


async def test_llm_respond_skips_the_model(pipe: Pipeline) -> None:
    shell = Shell()

    @pipe.middleware("llm")
    async def canned(ctx: LLMContext, call_next: Any) -> None:
        if ctx.request.messages[-1].get("type") == "function_call_output":
            await call_next()  # the model answers after the tool
            return
        ctx.response = LLMResponse(
            tool_calls=[ToolCall(id="p1", name="bash", args={"command": "pwd"})]
        )

    model = ScriptedModel([[assistant_message("you are in /work")]])
    result = await run(pipe, make_agent(model, shell.tool()))
    assert shell.commands == ["pwd"]
    assert len(model.calls) == 1  # the first answer came from the middleware
    assert seen_outputs(model, 0) == {"p1": "ran pwd"}
    assert result.final_output == "you are in /work"


async def test_llm_retry_calls_the_model_again(recorder: list[Any]) -> None:
    pipe = Pipeline(builtins=False, max_retries=2)

    @pipe.intercept("llm.after")
    def retry_overloaded(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        out.retry = out.response.content == "overloaded"

    pipe.subscribe(recorder.append, events={"llm_response"})
    model = ScriptedModel([[assistant_message("overloaded")], [assistant_message("fine")]])
    result = await run(pipe, make_agent(model))
    assert result.final_output == "fine"
    assert len(model.calls) == 2
    assert [e.attempt for e in recorder] == [1, 2]


async def test_hosted_tool_calls_can_be_vetoed_at_llm_after(pipe: Pipeline) -> None:
    vetoed: list[dict[str, Any]] = []

    @pipe.intercept("llm.after")
    def no_web(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        for call in out.response.tool_calls:
            if call.name == "web_search":
                vetoed.append(call.args)
        out.response.tool_calls = [c for c in out.response.tool_calls if c.name != "web_search"]

    search = ResponseFunctionWebSearch(
        id="ws1",
        type="web_search_call",
        status="completed",
        action=ActionSearch(type="search", query="leaked keys"),
    )
    step = [search, assistant_message("nothing found")]
    plain = await run(Pipeline(builtins=False), make_agent(ScriptedModel([step]), WebSearchTool()))
    assert any(isinstance(i, ToolCallItem) for i in plain.new_items)

    result = await run(pipe, make_agent(ScriptedModel([step]), WebSearchTool()))
    assert vetoed == [{"action": {"type": "search", "query": "leaked keys"}}]
    assert not any(isinstance(i, ToolCallItem) for i in result.new_items)
    assert [type(i) for i in result.new_items] == [MessageOutputItem]
    assert result.final_output == "nothing found"


# -- aborts ------------------------------------------------------------------------------------


async def test_abort_turn_ends_the_run_with_a_final_message(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    shell = Shell()

    @pipe.intercept("tool.before", tools="exec", id="budget")
    def budget(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise AbortTurn("out of budget")

    pipe.subscribe(recorder.append, events={"turn_aborted", "turn_ended"})
    model = ScriptedModel([calls("make"), [assistant_message("never said")]])
    result = await run(pipe, make_agent(model, shell.tool()))
    assert result.final_output == "[turn aborted: out of budget]"
    assert shell.commands == []
    assert len(model.calls) == 1
    assert model.remaining_steps == 1
    [aborted] = recorder
    assert (aborted.kind, aborted.reason, aborted.hard) == ("turn_aborted", "out of budget", False)


async def test_abort_turn_among_parallel_calls(pipe: Pipeline) -> None:
    shell = Shell()

    @pipe.intercept("tool.before", tools="exec")
    def stop_on_deploy(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.args["command"] == "deploy":
            raise AbortTurn("deploys end the turn")

    model = ScriptedModel([calls("ls", "deploy", "pwd"), [assistant_message("never said")]])
    result = await run(pipe, make_agent(model, shell.tool()))
    assert result.final_output == "[turn aborted: deploys end the turn]"
    # the call before the abort ran; the aborting call and the one after it did not
    assert shell.commands == ["ls"]
    outputs = {
        cast(dict[str, Any], item.raw_item)["call_id"]: item.output
        for item in result.new_items
        if isinstance(item, ToolCallOutputItem)
    }
    assert outputs["c1"] == "ran ls"
    for call_id in ("c2", "c3"):
        assert json.loads(outputs[call_id]) == {
            "status": "aborted",
            "tool": "exec",
            "reason": "deploys end the turn",
        }
    assert len(model.calls) == 1


async def test_abort_turn_in_llm_before(pipe: Pipeline) -> None:
    @pipe.intercept("llm.before")
    def closed(inp: LLMBeforeInput, out: LLMRequest) -> None:
        raise AbortTurn("outside office hours")

    model = ScriptedModel([[assistant_message("never said")]])
    result = await run(pipe, make_agent(model))
    assert result.final_output == "[turn aborted: outside office hours]"
    assert model.calls == ()


async def test_hard_abort_from_a_tool_reaches_the_caller_unwrapped(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    shell = Shell()

    @pipe.intercept("tool.before", tools="exec", id="kill-switch")
    def kill(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise HardAbort("kill switch")

    pipe.subscribe(recorder.append, events={"turn_aborted"})
    model = ScriptedModel([calls("ls"), [assistant_message("never said")]])
    with pytest.raises(HardAbort) as caught:
        await run(pipe, make_agent(model, shell.tool()))
    assert type(caught.value) is HardAbort
    assert (caught.value.reason, caught.value.source) == ("kill switch", "kill-switch")
    assert shell.commands == []
    [aborted] = recorder
    assert aborted.hard is True


async def test_hard_abort_from_the_llm_stage(pipe: Pipeline) -> None:
    @pipe.intercept("llm.after")
    def kill(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        raise HardAbort("model misbehaves")

    model = ScriptedModel([[assistant_message("hi")]])
    with pytest.raises(HardAbort, match="model misbehaves"):
        await run(pipe, make_agent(model))


async def test_without_the_runner_hard_abort_is_still_a_hard_abort(pipe: Pipeline) -> None:
    """A plain ``Runner.run`` of a wrapped agent: the SDK does not wrap it in UserError."""
    shell = Shell()

    @pipe.intercept("tool.before", tools="exec")
    def kill(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise HardAbort("kill switch")

    model = ScriptedModel([calls("ls"), [assistant_message("never said")]])
    agent = interpose_agent(make_agent(model, shell.tool()), pipe)
    with pytest.raises(HardAbort, match="kill switch"):
        await Runner.run(agent, "go", run_config=NO_SDK_TRACING)


# -- agents: handoffs, agents as tools, plain Runner.run, run_sync ------------------------------


async def test_handoffs_and_agents_as_tools_go_through_the_pipeline(pipe: Pipeline) -> None:
    seen: list[tuple[str, str]] = []
    llm_calls: list[int] = []

    @pipe.intercept("tool.before")
    def record(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        seen.append((inp.tool_name, inp.tool_call_id))

    @pipe.intercept("llm.before")
    def count(inp: LLMBeforeInput, out: LLMRequest) -> None:
        llm_calls.append(1)

    shell = Shell()
    # the agent used as a tool: wrapped before as_tool, so its own calls are seen too
    helper_model = ScriptedModel(
        [[function_call("bash", {"command": "du -sh"}, call_id="h1")], [assistant_message("4K")]]
    )
    helper = interpose_agent(
        Agent(name="helper", model=helper_model, tools=[shell.tool()]), pipe
    ).as_tool(tool_name="ask_helper", tool_description="Ask the helper.")
    specialist_model = ScriptedModel(
        [[function_call("ask_helper", {"input": "size?"}, call_id="s1")], [assistant_message("4K")]]
    )
    specialist = Agent(name="specialist", model=specialist_model, tools=[helper])
    triage_model = ScriptedModel([[function_call("transfer_to_specialist", {}, call_id="t1")]])
    triage = Agent(name="triage", model=triage_model, handoffs=[specialist])
    result = await run(pipe, triage)
    assert result.final_output == "4K"
    assert shell.commands == ["du -sh"]
    assert seen == [("ask_helper", "s1"), ("exec", "h1")]
    assert len(llm_calls) == 5  # triage 1, specialist 2, helper 2
    assert result.last_agent.name == "specialist"


async def test_a_handoff_object_wraps_the_agent_it_hands_off_to(pipe: Pipeline) -> None:
    shell = Shell()

    @pipe.intercept("tool.before", tools="exec")
    def no_color(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.args["command"] += " --color=never"

    specialist_model = ScriptedModel([calls("ls"), [assistant_message("listed")]])
    specialist = Agent(name="specialist", model=specialist_model, tools=[shell.tool()])
    triage_model = ScriptedModel([[function_call("to_specialist", {}, call_id="t1")]])
    triage = Agent(
        name="triage",
        model=triage_model,
        handoffs=[handoff(specialist, tool_name_override="to_specialist")],
    )
    result = await run(pipe, triage)
    assert result.final_output == "listed"
    assert shell.commands == ["ls --color=never"]


async def test_plain_runner_run_of_a_wrapped_agent(pipe: Pipeline, recorder: list[Any]) -> None:
    """Without InterposeRunner every tool call and model call is a turn of its own."""
    shell = Shell()

    @pipe.intercept("tool.before", tools="exec")
    def no_color(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.args["command"] += " --color=never"

    pipe.subscribe(recorder.append, events={"turn_started", "tool_exec_end", "llm_response"})
    model = ScriptedModel([calls("ls"), [assistant_message("ok")]])
    agent = interpose_agent(make_agent(model, shell.tool()), pipe)
    assert interpose_agent(agent, pipe) is agent
    async with pipe:
        result = await Runner.run(agent, "go", run_config=NO_SDK_TRACING)
    assert result.final_output == "ok"
    assert shell.commands == ["ls --color=never"]
    assert [e.kind for e in recorder] == [
        "turn_started",
        "llm_response",
        "turn_started",
        "tool_exec_end",
        "turn_started",
        "llm_response",
    ]
    assert {e.agent_id for e in recorder} == {"coder"}
    assert len({e.turn_id for e in recorder}) == 3


async def test_a_model_named_by_a_string_goes_through_the_provider(pipe: Pipeline) -> None:
    model = ScriptedModel([[assistant_message("hi")]])
    served: list[str | None] = []

    class Scripted(ModelProvider):
        def get_model(self, model_name: str | None) -> Any:
            served.append(model_name)
            return model

    seen: list[str] = []

    @pipe.intercept("llm.before")
    def record(inp: LLMBeforeInput, out: LLMRequest) -> None:
        seen.append(inp.turn_id)

    agent = Agent(name="coder", model="gpt-test")
    async with pipe:
        config = RunConfig(tracing_disabled=True, model_provider=Scripted())
        result = await InterposeRunner(pipe).run(agent, "hi", run_config=config)
    assert result.final_output == "hi"
    assert served == ["gpt-test"]
    assert len(seen) == 1
    wrapped = InterposeModelProvider(pipe, Scripted()).get_model("gpt-test")
    assert isinstance(wrapped, InterposeModel)
    assert wrapped.name == "gpt-test"


def test_run_sync() -> None:
    pipe = Pipeline(builtins=False)
    events: list[Any] = []
    pipe.subscribe(events.append, events={"turn_ended"})
    model = ScriptedModel([[assistant_message("done")]])
    runner = InterposeRunner(pipe)
    result = runner.run_sync(make_agent(model), "hi", run_config={"tracing_disabled": True})
    assert result.final_output == "done"
    assert [e.kind for e in events] == ["turn_ended"]


async def test_the_message_stage_may_rewrite_the_input(pipe: Pipeline) -> None:
    @pipe.intercept("message.before")
    def strip(inp: Any, out: Any) -> None:
        out.message = out.message.strip().lower()

    model = ScriptedModel([[assistant_message("ok")]])
    await run(pipe, make_agent(model), "  TIDY UP  ")
    [call] = model.calls
    assert call.input == [{"role": "user", "content": "tidy up"}]


# -- spans -------------------------------------------------------------------------------------


async def test_one_trace_shows_the_run_its_model_calls_and_its_tools(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    pipe = Pipeline(tracer_provider=provider)  # with the guards
    shell = Shell()
    model = ScriptedModel([calls("ls", "rm -rf /"), [assistant_message("done")]])
    await run(pipe, make_agent(model, shell.tool()))
    spans = exporter.get_finished_spans()
    assert sorted(s.name for s in spans) == [
        "chat",
        "chat",
        "execute_tool exec",
        "execute_tool exec",
        "invoke_agent coder",
    ]
    root = next(s for s in spans if s.name == "invoke_agent coder")
    assert root.context is not None
    assert {s.context.trace_id for s in spans if s.context is not None} == {root.context.trace_id}
    assert all(
        s.parent is not None and s.parent.span_id == root.context.span_id
        for s in spans
        if s is not root
    )
    tools = {
        str(attrs["gen_ai.tool.call.id"]): attrs
        for s in spans
        if s.name.startswith("execute") and (attrs := s.attributes) is not None
    }
    assert set(tools) == {"c1", "c2"}
    assert tools["c2"]["interpose.tool.status"] == "blocked"
    assert tools["c2"]["interpose.decided_by"] == "builtin:command-safety-guard"
    assert "interpose.tool.status" not in tools["c1"]  # an ok call records nothing more


async def test_streamed_runs_hold_the_answer_back_until_llm_after(pipe: Pipeline) -> None:
    shell = Shell()

    @pipe.intercept("llm.after")
    def redact(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        out.response.content = out.response.content.replace("secret", "[redacted]")

    model = ScriptedModel([calls("ls"), [assistant_message("the secret is 42")]])
    agent = interpose_agent(make_agent(model, shell.tool()), pipe)
    streamed = Runner.run_streamed(agent, "go", run_config=NO_SDK_TRACING)
    raw: list[str] = []
    async for event in streamed.stream_events():
        if event.type == "raw_response_event":
            raw.append(event.data.type)
    assert streamed.final_output == "the [redacted] is 42"
    assert shell.commands == ["ls"]
    # the unchanged first answer streams as it came; the rewritten one as its final event
    first = raw[: raw.index("response.completed") + 1]
    assert first[0] == "response.created"
    assert "response.function_call_arguments.delta" in first
    assert raw[len(first) :] == ["response.completed"]
