"""The reference agent runs each turn through the pipeline and reports what happened."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from interpose import (
    AbortTurn,
    HardAbort,
    LLMRequest,
    LLMResponse,
    MessageBeforeInput,
    MessageBeforeOutput,
    ParamsBeforeInput,
    ParamsBeforeOutput,
    Pipeline,
    ToolBeforeInput,
    ToolBeforeOutput,
    TurnContext,
)
from interpose.agent import Agent, ScriptedModel, Toolbox, last_tool_result, reply, tool_use
from interpose.agent.model import FINISHED
from interpose.bus.events import ToolExecEnd


class FakeTools:
    """Tools that record the args they were called with."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tools(self) -> dict[str, Any]:
        def echo(args: dict[str, Any]) -> str:
            self.calls.append(("echo", dict(args)))
            return f"echo: {args.get('text', '')}"

        async def add(args: dict[str, Any]) -> int:
            self.calls.append(("add", dict(args)))
            return int(args["a"]) + int(args["b"])

        return {"echo": echo, "add": add}


@pytest.fixture
def fake() -> FakeTools:
    return FakeTools()


def agent(pipe: Pipeline, model: ScriptedModel, fake: FakeTools, **kw: Any) -> Agent:
    pipe.register_tool("echo")
    pipe.register_tool("add")
    return Agent(pipe, model, fake.tools(), **kw)


# -- the loop ---------------------------------------------------------------------------


async def test_final_answer_without_tools(pipe: Pipeline, fake: FakeTools) -> None:
    model = ScriptedModel([reply("hello there")])
    run = await agent(pipe, model, fake).run("hi")

    assert run.answer == "hello there"
    assert run.stop_reason == "answer"
    assert run.steps == 1
    assert run.calls == []
    assert not run.aborted
    assert [m["role"] for m in run.history] == ["user", "assistant"]


async def test_tool_calls_run_and_their_results_go_back_to_the_model(
    pipe: Pipeline, fake: FakeTools
) -> None:
    def answer(req: LLMRequest) -> LLMResponse:
        last = last_tool_result(req)
        assert last is not None
        return reply(f"the sum is {last['content']}")

    model = ScriptedModel(
        [
            tool_use("echo", {"text": "hi"}, id="c1"),
            tool_use("add", {"a": 2, "b": 3}, id="c2"),
            answer,
        ]
    )
    run = await agent(pipe, model, fake).run("add 2 and 3")

    assert fake.calls == [("echo", {"text": "hi"}), ("add", {"a": 2, "b": 3})]
    assert [r.output for r in run.results] == ["echo: hi", 5]
    assert run.answer == "the sum is 5"
    assert run.steps == 3
    tool_messages = [m for m in run.history if m["role"] == "tool"]
    assert tool_messages == [
        {
            "role": "tool",
            "tool_call_id": "c1",
            "name": "echo",
            "content": "echo: hi",
            "status": "ok",
            "is_error": False,
        },
        {
            "role": "tool",
            "tool_call_id": "c2",
            "name": "add",
            "content": 5,
            "status": "ok",
            "is_error": False,
        },
    ]
    # the model saw the first result in its second request
    assert model.requests[1].messages[-1]["content"] == "echo: hi"


async def test_tools_get_rewritten_args_but_the_record_keeps_the_models(
    pipe: Pipeline, fake: FakeTools
) -> None:
    a = agent(pipe, ScriptedModel([tool_use("echo", {"text": "hi"}, id="c1")]), fake)

    @pipe.intercept("tool.before", tools=["echo"], id="shout")
    def shout(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.args["text"] = out.args["text"].upper()

    run = await a.run("say hi")

    assert fake.calls == [("echo", {"text": "HI"})]
    assert run.calls[0].call.args == {"text": "hi"}
    assert run.results[0].output == "echo: HI"


async def test_unknown_tool_gives_an_error_result_and_the_loop_goes_on(
    pipe: Pipeline, fake: FakeTools
) -> None:
    model = ScriptedModel([tool_use("teleport", {}, id="c1"), reply("never mind")])
    run = await agent(pipe, model, fake).run("go")

    result = run.results[0]
    assert result.is_error
    assert result.status == "error"
    assert "unknown tool 'teleport'" in result.output
    assert "add, echo" in result.output
    assert run.answer == "never mind"


async def test_tool_names_are_normalized_when_looked_up(pipe: Pipeline, tmp_path: Path) -> None:
    box = Toolbox(tmp_path)
    model = ScriptedModel([tool_use("Bash", {"command": "echo via-alias"}, id="c1")])
    run = await Agent(pipe, model, box.tools, schemas=box.schemas).run("x")

    assert run.results[0].output["stdout"] == "via-alias\n"
    assert model.requests[0].tools == box.schemas


async def test_max_steps_bounds_the_loop(pipe: Pipeline, fake: FakeTools) -> None:
    model = ScriptedModel([tool_use("echo", {"text": str(i)}, id=f"c{i}") for i in range(10)])
    run = await agent(pipe, model, fake, max_steps=3).run("loop")

    assert run.steps == 3
    assert run.stop_reason == "max_steps"
    assert len(fake.calls) == 3
    assert model.remaining == 7


def test_max_steps_must_be_positive(pipe: Pipeline) -> None:
    with pytest.raises(ValueError, match="max_steps"):
        Agent(pipe, ScriptedModel([]), {}, max_steps=0)


async def test_script_that_runs_out_finishes_the_turn(pipe: Pipeline, fake: FakeTools) -> None:
    run = await agent(pipe, ScriptedModel([]), fake).run("anything")
    assert run.answer == FINISHED
    assert run.stop_reason == "answer"


async def test_a_step_returning_the_wrong_type_is_an_error(pipe: Pipeline, fake: FakeTools) -> None:
    model = ScriptedModel([lambda req: "not a response"])  # type: ignore[list-item,return-value]
    with pytest.raises(TypeError, match="not an LLMResponse"):
        await agent(pipe, model, fake).run("x")


# -- the stages around the loop ---------------------------------------------------------


async def test_message_and_params_stages_shape_the_request(pipe: Pipeline, fake: FakeTools) -> None:
    @pipe.intercept("message.before")
    def tidy(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        out.message = out.message.strip()

    @pipe.intercept("params.before")
    def tune(inp: ParamsBeforeInput, out: ParamsBeforeOutput) -> None:
        out.model, out.temperature = "bigger-model", 0.2

    model = ScriptedModel([reply("ok")])
    run = await agent(pipe, model, fake, system="be brief", model_name="small").run("  hi  ")

    request = model.requests[0]
    assert run.message == "hi"
    assert request.system == "be brief"
    assert request.messages == [{"role": "user", "content": "hi"}]
    assert request.params == {"model": "bigger-model", "temperature": 0.2}


async def test_turn_middleware_wraps_the_whole_run(pipe: Pipeline, fake: FakeTools) -> None:
    order: list[str] = []

    @pipe.middleware("turn", priority=10)
    async def outer(ctx: TurnContext, call_next: Any) -> None:
        order.append("outer in")
        await call_next()
        order.append("outer out")

    @pipe.middleware("turn", priority=0)
    async def inner(ctx: TurnContext, call_next: Any) -> None:
        order.append("inner in")
        await call_next()
        order.append("inner out")

    tools = fake.tools()

    def echo(args: dict[str, Any]) -> Any:
        order.append("tool")
        return tools["echo"](args)

    pipe.register_tool("echo")
    model = ScriptedModel([tool_use("echo", {"text": "x"}, id="c1"), reply("done")])
    run = await Agent(pipe, model, {"echo": echo}).run("go")

    assert order == ["outer in", "inner in", "tool", "inner out", "outer out"]
    assert run.answer == "done"


async def test_history_continues_across_runs_of_a_session(pipe: Pipeline, fake: FakeTools) -> None:
    model = ScriptedModel([tool_use("echo", {"text": "a"}, id="c1"), reply("one"), reply("two")])
    a = agent(pipe, model, fake)
    await a.run("first", session_key="s")
    run = await a.run("second", session_key="s")

    assert [m["role"] for m in run.history] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
    ]
    assert model.requests[-1].messages[-1] == {"role": "user", "content": "second"}
    assert a.history("other") == []


# -- aborts -----------------------------------------------------------------------------


async def test_abort_turn_in_a_tool_hook_ends_the_run_aborted(
    pipe: Pipeline, fake: FakeTools
) -> None:
    model = ScriptedModel(
        [
            tool_use("echo", {"text": "fine"}, id="c1"),
            tool_use("add", {"a": 1, "b": 1}, id="c2"),
            reply("never reached"),
        ]
    )
    a = agent(pipe, model, fake)

    @pipe.intercept("tool.before", tools=["add"], id="no-math")
    def no_math(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise AbortTurn("no arithmetic today")

    run = await a.run("go")

    assert run.aborted
    assert run.abort_reason == "no arithmetic today"
    assert run.stop_reason == "aborted"
    assert run.turn_id
    assert fake.calls == [("echo", {"text": "fine"})]
    assert [r.status for r in run.results] == ["ok", "aborted"]
    assert run.results[1].output == {
        "status": "aborted",
        "tool": "add",
        "reason": "no arithmetic today",
    }
    assert model.remaining == 1  # the loop stopped where it was


async def test_abort_turn_in_the_message_stage_skips_the_model(
    pipe: Pipeline, fake: FakeTools
) -> None:
    @pipe.intercept("message.before")
    def slash_abort(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        if out.message.startswith("/abort"):
            raise AbortTurn("user aborted")

    model = ScriptedModel([reply("unused")])
    run = await agent(pipe, model, fake).run("/abort")

    assert run.aborted
    assert run.abort_reason == "user aborted"
    assert run.steps == 0
    assert model.requests == []


async def test_hard_abort_propagates_to_the_caller(pipe: Pipeline, fake: FakeTools) -> None:
    model = ScriptedModel([tool_use("echo", {"text": "x"}, id="c1"), reply("unused")])
    a = agent(pipe, model, fake)

    @pipe.intercept("tool.before", tools=["echo"], id="kill")
    def kill(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise HardAbort("stop everything")

    with pytest.raises(HardAbort, match="stop everything"):
        await a.run("go")
    assert fake.calls == []


async def test_tool_events_carry_the_models_call_ids(pipe: Pipeline, fake: FakeTools) -> None:
    ends: list[ToolExecEnd] = []
    pipe.subscribe(ends.append, events={"tool_exec_end"})
    model = ScriptedModel([tool_use("echo", {"text": "x"}, id="call-42"), reply("ok")])
    async with pipe:
        run = await agent(pipe, model, fake, agent_id="coder").run("go", session_key="s1")

    assert [(e.tool_call_id, e.turn_id, e.agent_id, e.session_key) for e in ends] == [
        ("call-42", run.turn_id, "coder", "s1")
    ]


# -- the toolbox ------------------------------------------------------------------------


async def test_toolbox_reads_and_writes_inside_its_root(tmp_path: Path) -> None:
    box = Toolbox(tmp_path)
    written = await box.tools["write"]({"path": "notes/a.txt", "content": "héllo"})
    assert written == {"path": "notes/a.txt", "bytes": 6}
    assert (tmp_path / "notes" / "a.txt").read_text(encoding="utf-8") == "héllo"
    assert await box.tools["read"]({"file_path": "notes/a.txt"}) == "héllo"


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/hostname", "notes/../../x"])
async def test_toolbox_refuses_paths_outside_its_root(tmp_path: Path, path: str) -> None:
    (tmp_path / "root").mkdir()
    box = Toolbox(tmp_path / "root")
    with pytest.raises(PermissionError, match="outside the tool root"):
        await box.tools["read"]({"path": path})
    with pytest.raises(PermissionError):
        await box.tools["write"]({"path": path, "content": "x"})


async def test_toolbox_refuses_a_symlink_out_of_its_root(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "secret").write_text("s")
    (tmp_path / "root" / "link").symlink_to(tmp_path / "secret")
    with pytest.raises(PermissionError):
        await Toolbox(tmp_path / "root").tools["read"]({"path": "link"})


async def test_exec_runs_strings_and_argv_in_the_root(tmp_path: Path) -> None:
    box = Toolbox(tmp_path)
    shell = await box.tools["exec"]({"command": "pwd; echo oops >&2; exit 3"})
    assert shell == {"exit_code": 3, "stdout": f"{box.root}\n", "stderr": "oops\n"}
    argv = await box.tools["exec"]({"command": ["printf", "%s", "a b; rm x"]})
    assert argv["stdout"] == "a b; rm x"  # an argv list is never parsed by a shell
    home = await box.tools["exec"]({"command": "echo $HOME"})
    assert home["stdout"] == f"{box.root}\n"  # a minimal environment, HOME is the root


async def test_exec_truncates_output_and_kills_on_timeout(tmp_path: Path) -> None:
    box = Toolbox(tmp_path, timeout=0.5, max_output=10)
    long = await box.tools["exec"]({"command": "printf '%050d' 0"})
    assert long["stdout"] == "0" * 10 + "\n[… 40 more characters]"

    slow = await box.tools["exec"]({"command": "echo started; sleep 30 & wait"})
    assert slow["exit_code"] != 0
    assert slow["stdout"] == "started\n"
    assert "ran longer than 0.5s" in slow["stderr"]


async def test_exec_rejects_a_missing_command(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="non-empty string or list"):
        await Toolbox(tmp_path).tools["exec"]({"command": ""})


def test_toolbox_needs_an_existing_directory(tmp_path: Path) -> None:
    with pytest.raises(NotADirectoryError):
        Toolbox(tmp_path / "missing")
