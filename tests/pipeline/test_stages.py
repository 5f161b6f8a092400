"""The non-tool stages (message, params, llm, command, compact, turn), sync and async
handlers on every hook, and re-entering a pipeline under a new event loop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

from interpose import (
    AbortTurn,
    Approval,
    ApprovalRequest,
    CommandBeforeInput,
    CommandBeforeOutput,
    CompactInput,
    CompactOutput,
    LLMAfterInput,
    LLMAfterOutput,
    LLMBeforeInput,
    LLMContext,
    LLMRequest,
    LLMResponse,
    MessageBeforeInput,
    MessageBeforeOutput,
    MessageContext,
    ParamsBeforeInput,
    ParamsBeforeOutput,
    ParamsContext,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolCall,
    ToolContext,
    ToolResult,
    Turn,
    TurnContext,
)

Next = Callable[[], Awaitable[None]]


class Model:
    """A scripted model that records the requests it sees."""

    def __init__(self, response: LLMResponse | None = None) -> None:
        self.requests: list[LLMRequest] = []
        self.response = response or LLMResponse(content="hello")

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        return self.response


# -- message / params ------------------------------------------------------------------


async def test_message_before_rewrites_text_and_metadata(pipe: Pipeline) -> None:
    inputs: list[MessageBeforeInput] = []

    @pipe.intercept("message.before", id="redact")
    def redact(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        inputs.append(inp)
        out.message = out.message.replace("hunter2", "[redacted]")
        out.metadata["redacted"] = True

    async with pipe.turn(
        agent_id="coder", session_key="s1", provider="anthropic", model="claude-x"
    ) as turn:
        out = await turn.message("my password is hunter2", {"channel": "cli"})

    assert out.message == "my password is [redacted]"
    assert out.metadata == {"channel": "cli", "redacted": True}
    [inp] = inputs
    assert (inp.agent_id, inp.session_key, inp.provider, inp.model) == (
        "coder",
        "s1",
        "anthropic",
        "claude-x",
    )


async def test_message_and_metadata_reach_params_before(pipe: Pipeline) -> None:
    seen: list[ParamsBeforeInput] = []

    @pipe.intercept("message.before", id="classify")
    def classify(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        out.metadata["complexity"] = "high" if "refactor" in out.message else "low"
        out.message = out.message.strip()

    @pipe.intercept("params.before", id="route")
    def route(inp: ParamsBeforeInput, out: ParamsBeforeOutput) -> None:
        seen.append(inp)

    async with pipe.turn(agent_id="coder", session_key="s1") as turn:
        await turn.message("  refactor the parser  ")
        await turn.params()

    [inp] = seen
    assert inp.message == "refactor the parser"
    assert inp.metadata == {"complexity": "high"}
    assert (inp.agent_id, inp.session_key) == ("coder", "s1")


async def test_params_override_changes_the_turns_provider_and_model(pipe: Pipeline) -> None:
    @pipe.intercept("params.before", id="route")
    def route(inp: ParamsBeforeInput, out: ParamsBeforeOutput) -> None:
        assert (out.provider, out.model) == ("anthropic", "claude-x")
        if inp.metadata.get("complexity") == "low":
            out.provider, out.model = "openai", "gpt-mini"
            out.temperature = 0.2
            out.think_level = "off"

    @pipe.intercept("message.before", id="classify")
    def classify(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        out.metadata["complexity"] = "low"

    async with pipe.turn(provider="anthropic", model="claude-x") as turn:
        await turn.message("hi")
        params = await turn.params()
        assert (turn.provider, turn.model) == ("openai", "gpt-mini")

    assert (params.provider, params.model) == ("openai", "gpt-mini")
    assert params.temperature == 0.2
    assert params.think_level == "off"


async def test_params_without_interceptors_keep_the_turns_choice(pipe: Pipeline) -> None:
    async with pipe.turn(provider="anthropic", model="claude-x") as turn:
        params = await turn.params()
    assert (params.provider, params.model) == ("anthropic", "claude-x")
    assert (turn.provider, turn.model) == ("anthropic", "claude-x")


async def test_message_and_params_middleware(pipe: Pipeline) -> None:
    @pipe.middleware("message", id="prefix")
    async def prefix(ctx: MessageContext, call_next: Next) -> None:
        ctx.message = "[cli] " + ctx.message
        await call_next()
        ctx.metadata["wrapped"] = True

    @pipe.middleware("params", id="pin")
    async def pin(ctx: ParamsContext, call_next: Next) -> None:
        await call_next()
        ctx.model = "pinned-model"

    async with pipe.turn(model="claude-x") as turn:
        msg = await turn.message("hello")
        params = await turn.params()

    assert msg.message == "[cli] hello"
    assert msg.metadata == {"wrapped": True}
    assert params.model == "pinned-model"
    assert turn.model == "pinned-model"


# -- llm ---------------------------------------------------------------------------------


async def test_llm_before_mutates_the_request_the_model_sees(pipe: Pipeline) -> None:
    inputs: list[LLMBeforeInput] = []

    @pipe.intercept("llm.before", id="inject")
    def inject(inp: LLMBeforeInput, req: LLMRequest) -> None:
        inputs.append(inp)
        req.system = "Be careful. " + req.system
        req.headers["x-trace"] = "t1"
        req.messages.append({"role": "user", "content": "(reminder)"})

    model = Model()
    async with pipe.turn(agent_id="coder", session_key="s1") as turn:
        await turn.call_llm(
            LLMRequest(system="You code.", messages=[{"role": "user", "content": "hi"}]),
            call=model,
        )

    [request] = model.requests
    assert request.system == "Be careful. You code."
    assert request.headers == {"x-trace": "t1"}
    assert request.messages[-1] == {"role": "user", "content": "(reminder)"}
    [inp] = inputs
    assert (inp.agent_id, inp.session_key, inp.turn_id, inp.attempt) == (
        "coder",
        "s1",
        turn.turn_id,
        1,
    )


async def test_llm_after_mutates_the_response(pipe: Pipeline) -> None:
    inputs: list[LLMAfterInput] = []

    @pipe.intercept("llm.after", id="strip-tools")
    def strip_tools(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        inputs.append(inp)
        out.response.tool_calls = [c for c in out.response.tool_calls if c.name != "exec"]
        out.response.content = out.response.content.upper()

    model = Model(
        LLMResponse(
            content="calling tools",
            tool_calls=[ToolCall(id="1", name="exec"), ToolCall(id="2", name="read")],
        )
    )
    request = LLMRequest(system="sys")
    async with pipe.turn() as turn:
        response = await turn.call_llm(request, call=model)

    assert response.content == "CALLING TOOLS"
    assert [c.name for c in response.tool_calls] == ["read"]
    assert inputs[0].request is request


async def test_llm_call_may_return_a_dict(pipe: Pipeline) -> None:
    async with pipe.turn() as turn:
        response = await turn.call_llm(
            LLMRequest(), call=lambda r: {"content": "from dict", "stop_reason": "max_tokens"}
        )
    assert response == LLMResponse(content="from dict", stop_reason="max_tokens")


async def test_llm_request_may_be_a_dict(pipe: Pipeline) -> None:
    seen: list[LLMRequest] = []

    @pipe.intercept("llm.before", id="sys")
    def add_system(inp: object, out: LLMRequest) -> None:
        out.system = "be brief"

    def model(request: LLMRequest) -> dict[str, object]:
        seen.append(request)
        return {"content": "ok"}

    async with pipe.turn() as turn:
        response = await turn.call_llm(
            {"messages": [{"role": "user", "content": "hi"}], "params": {"temperature": 0}},
            call=model,
        )
    assert response.content == "ok"
    assert seen == [
        LLMRequest(
            system="be brief",
            messages=[{"role": "user", "content": "hi"}],
            params={"temperature": 0},
        )
    ]


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        ({"mesages": []}, "unknown field 'mesages'"),
        ({"messages": "hi"}, r"Expected `array`, got `str` - at `\$.messages`"),
        (["hi"], "an LLMRequest or a dict of its fields, got list"),
    ],
)
async def test_llm_request_of_the_wrong_shape_is_a_type_error(
    pipe: Pipeline, request_: Any, message: str
) -> None:
    calls: list[LLMRequest] = []
    with pytest.raises(TypeError, match=message):
        async with pipe.turn() as turn:
            await turn.call_llm(request_, call=calls.append)
    assert calls == []


async def test_llm_middleware_sees_request_and_response(pipe: Pipeline) -> None:
    seen: list[tuple[str, str | None]] = []

    @pipe.middleware("llm", id="wrap")
    async def wrap(ctx: LLMContext, call_next: Next) -> None:
        ctx.request.params["temperature"] = 0
        await call_next()
        assert ctx.response is not None
        seen.append((ctx.request.system, ctx.response.content))
        ctx.response = LLMResponse(content="replaced")

    model = Model()
    async with pipe.turn() as turn:
        response = await turn.call_llm(LLMRequest(system="s"), call=model)

    assert model.requests[0].params == {"temperature": 0}
    assert seen == [("s", "hello")]
    assert response.content == "replaced"


async def test_llm_call_errors_propagate(pipe: Pipeline) -> None:
    def broken(request: LLMRequest) -> LLMResponse:
        raise ConnectionError("provider down")

    with pytest.raises(ConnectionError, match="provider down"):
        async with pipe.turn() as turn:
            await turn.call_llm(LLMRequest(), call=broken)


# -- command -------------------------------------------------------------------------------


async def test_command_before_blocks(pipe: Pipeline) -> None:
    inputs: list[CommandBeforeInput] = []

    @pipe.intercept("command.before", id="no-prod")
    def no_prod(inp: CommandBeforeInput, out: CommandBeforeOutput) -> None:
        inputs.append(inp)
        if out.args.get("env") == "prod":
            out.block = True
            out.block_reason = "no deploys to prod on Friday"

    ran: list[dict[str, Any]] = []
    async with pipe.turn(agent_id="ops", session_key="s9") as turn:
        blocked = await turn.run_command("deploy", {"env": "prod"}, call=ran.append)
        allowed = await turn.run_command("deploy", {"env": "staging"}, call=lambda a: "deployed")

    assert ran == []
    assert blocked.status == "blocked"
    assert blocked.is_error is True
    assert blocked.output == {
        "status": "blocked",
        "tool": "deploy",
        "reason": "no deploys to prod on Friday",
    }
    assert allowed.status == "ok"
    assert allowed.output == "deployed"
    assert [(i.command, i.agent_id, i.session_key) for i in inputs] == [("deploy", "ops", "s9")] * 2


async def test_command_before_modifies_args(pipe: Pipeline) -> None:
    @pipe.intercept("command.before", id="dry-run")
    def dry_run(inp: CommandBeforeInput, out: CommandBeforeOutput) -> None:
        out.args["dry_run"] = True

    async def deploy(args: dict[str, Any]) -> dict[str, Any]:
        return dict(args)

    async with pipe.turn() as turn:
        result = await turn.run_command("deploy", {"env": "prod"}, call=deploy)
    assert result.output == {"env": "prod", "dry_run": True}


async def test_command_middleware_can_short_circuit(pipe: Pipeline) -> None:
    @pipe.middleware("command", id="maintenance")
    async def maintenance(ctx: Any, call_next: Next) -> None:
        ctx.result = ToolResult(output="commands are disabled", is_error=True, status="error")

    ran: list[dict[str, Any]] = []
    async with pipe.turn() as turn:
        result = await turn.run_command("deploy", {}, call=ran.append)
    assert ran == []
    assert result.output == "commands are disabled"


# -- compact -------------------------------------------------------------------------------

HISTORY = [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}, {"n": 5}]


async def test_compact_summary_supplied_by_an_interceptor(pipe: Pipeline) -> None:
    inputs: list[CompactInput] = []

    @pipe.intercept("session.compact", id="cheap-summary")
    def cheap(inp: CompactInput, out: CompactOutput) -> None:
        inputs.append(inp)
        out.messages = inp.messages[-1:]
        out.summary = f"{len(inp.messages) - 1} earlier messages"

    calls: list[Any] = []
    async with pipe.turn(agent_id="coder", session_key="s1") as turn:
        result = await turn.compact(HISTORY, call=lambda msgs, instr: calls.append(msgs))

    assert calls == []
    assert result.summary == "4 earlier messages"
    assert result.messages == [{"n": 5}]
    [inp] = inputs
    assert inp.messages == HISTORY
    assert (inp.agent_id, inp.session_key) == ("coder", "s1")


async def test_compact_call_gets_the_non_kept_messages_and_instructions(
    pipe: Pipeline,
) -> None:
    @pipe.intercept("session.compact", id="keep-recent")
    def keep_recent(inp: CompactInput, out: CompactOutput) -> None:
        out.messages = inp.messages[-2:]
        out.instructions = "keep file names"

    calls: list[tuple[list[Any], str]] = []

    async def summarize(messages: list[Any], instructions: str) -> str:
        calls.append((messages, instructions))
        return "summary of 3"

    async with pipe.turn() as turn:
        result = await turn.compact(HISTORY, call=summarize, reason="context full")

    assert calls == [([{"n": 1}, {"n": 2}, {"n": 3}], "keep file names")]
    assert result.summary == "summary of 3"
    assert result.messages == [{"n": 4}, {"n": 5}]


async def test_compact_without_interceptors_summarizes_everything(pipe: Pipeline) -> None:
    calls: list[tuple[list[Any], str]] = []

    def summarize(messages: list[Any], instructions: str) -> str:
        calls.append((messages, instructions))
        return "all of it"

    async with pipe.turn() as turn:
        result = await turn.compact(HISTORY, call=summarize)
    assert calls == [(HISTORY, "")]
    assert result.summary == "all of it"
    assert result.messages == []


# -- turn stage ------------------------------------------------------------------------------


async def test_run_turn_is_wrapped_by_turn_middleware(pipe: Pipeline) -> None:
    log: list[str] = []

    @pipe.middleware("turn", priority=10, id="outer")
    async def outer(ctx: TurnContext, call_next: Next) -> None:
        assert ctx.turn is not None
        log.append(f"outer-in:{ctx.turn.agent_id}")
        await call_next()
        log.append(f"outer-out:{ctx.result}")

    @pipe.middleware("turn", priority=0, id="inner")
    async def inner(ctx: TurnContext, call_next: Next) -> None:
        log.append("inner-in")
        await call_next()
        log.append("inner-out")

    async def body(turn: Turn) -> str:
        log.append("body")
        result = await turn.call_tool("read", {"path": "x"}, call=lambda a: "contents")
        return f"read {result.output}"

    value = await pipe.run_turn(body, agent_id="coder", session_key="s1")

    assert value == "read contents"
    assert log == [
        "outer-in:coder",
        "inner-in",
        "body",
        "inner-out",
        "outer-out:read contents",
    ]


async def test_run_turn_middleware_can_replace_the_result(pipe: Pipeline) -> None:
    @pipe.middleware("turn", id="cached-turn")
    async def cached(ctx: TurnContext, call_next: Next) -> None:
        ctx.result = "from cache"

    ran: list[str] = []

    async def body(turn: Turn) -> str:
        ran.append("body")  # pragma: no cover - must not run
        return "fresh"  # pragma: no cover

    assert await pipe.run_turn(body) == "from cache"
    assert ran == []


async def test_run_turn_returns_none_when_aborted(pipe: Pipeline) -> None:
    @pipe.intercept("tool.before", tools=["exec"], id="stop")
    def stop(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise AbortTurn("stop")

    async def body(turn: Turn) -> str:
        await turn.call_tool("exec", {"command": "ls"}, call=lambda a: None)
        return "finished"  # pragma: no cover - must not run

    assert await pipe.run_turn(body) is None


# -- sync and async handlers on every hook ---------------------------------------------------


def mutate(hook: str, inp: Any, out: Any) -> Any:
    """What the handler under test does on ``hook``, visible in the turn's outcome."""
    if hook == "message.before":
        out.message = "handled"
    elif hook == "params.before":
        out.model = "handled"
    elif hook == "llm.before":
        out.system = "handled"
    elif hook == "llm.after":
        out.response.content = "handled"
    elif hook == "tool.before":
        out.args["by"] = "handled"
    elif hook == "tool.approve":
        return Approval.deny("handled")
    elif hook == "tool.after":
        out.result = ToolResult(output="handled")
    elif hook == "command.before":
        out.args["by"] = "handled"
    elif hook == "session.compact":
        out.summary = "handled"
    return None


async def outcome(pipe: Pipeline, hook: str) -> Any:
    """Run the part of a turn that goes through ``hook`` and return what it produced."""
    model = Model()
    async with pipe.turn() as turn:
        if hook == "message.before":
            return (await turn.message("original")).message
        if hook == "params.before":
            return (await turn.params()).model
        if hook in ("llm.before", "llm.after"):
            response = await turn.call_llm(LLMRequest(system="original"), call=model)
            return model.requests[0].system if hook == "llm.before" else response.content
        if hook in ("tool.before", "tool.approve", "tool.after"):
            result = await turn.call_tool("read", {}, call=lambda args: args.get("by", "tool"))
            if hook == "tool.approve":
                return result.output["reason"] if result.status == "denied" else result.status
            return result.output
        if hook == "command.before":
            return (await turn.run_command("c", {}, call=lambda a: a.get("by"))).output
        assert hook == "session.compact"
        return (await turn.compact([1], call=lambda msgs, instr: "original")).summary


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(
    "hook",
    [
        "message.before",
        "params.before",
        "llm.before",
        "llm.after",
        "tool.before",
        "tool.approve",
        "tool.after",
        "command.before",
        "session.compact",
    ],
)
async def test_sync_and_async_handlers_work_on_every_hook(
    pipe: Pipeline, hook: str, is_async: bool
) -> None:
    handler: Callable[..., Any]
    if hook == "tool.approve":
        if is_async:

            async def handler(req: ApprovalRequest) -> Any:
                await anyio.lowlevel.checkpoint()
                return mutate(hook, req, None)
        else:

            def handler(req: ApprovalRequest) -> Any:
                return mutate(hook, req, None)
    elif is_async:

        async def handler(inp: Any, out: Any) -> None:
            await anyio.lowlevel.checkpoint()
            mutate(hook, inp, out)
    else:

        def handler(inp: Any, out: Any) -> None:
            mutate(hook, inp, out)

    # without the handler, the outcome is something else
    assert await outcome(pipe, hook) != "handled"
    pipe.intercept(hook, id="h")(handler)
    assert await outcome(pipe, hook) == "handled"


# -- a pipeline outlives its event loop ----------------------------------------------------


def test_pipeline_can_be_reentered_under_a_new_event_loop() -> None:
    pipe = Pipeline(builtins=False)
    seen: list[str] = []

    @pipe.intercept("tool.before", id="slow-ok", timeout=5)
    async def slow_ok(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        await anyio.lowlevel.checkpoint()
        out.args["checked"] = True

    @pipe.middleware("tool", id="mw", timeout=5)
    async def mw(ctx: ToolContext, call_next: Next) -> None:
        await call_next()

    @pipe.intercept("tool.after", id="after")
    def after(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.result.output = f"{out.result.output}!"

    async def observer(event: Any) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(event.tool_call_id)

    pipe.subscribe(observer, events={"tool_exec_end"}, buffer=2)

    async def session(tag: str) -> list[Any]:
        outputs = []
        async with pipe:
            for i in range(5):
                result = await pipe.call_tool(
                    "read", {}, call=lambda a: a["checked"], call_id=f"{tag}{i}"
                )
                outputs.append(result.output)
        return outputs

    assert anyio.run(session, "a") == ["True!"] * 5
    assert anyio.run(session, "b") == ["True!"] * 5
    assert seen == [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)]


async def test_pipeline_can_be_entered_again_after_exit(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    pipe.subscribe(recorder.append, events={"tool_exec_end"})
    for _ in range(2):
        async with pipe:
            await pipe.call_tool("read", {}, call=lambda a: None)
    assert len(recorder) == 2


async def test_entering_twice_at_once_is_an_error(pipe: Pipeline) -> None:
    async with pipe:
        with pytest.raises(RuntimeError, match="already"):
            async with pipe:
                pass  # pragma: no cover
