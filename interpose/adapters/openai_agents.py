"""Run an OpenAI Agents SDK agent through interpose (the ``openai-agents`` extra).

One line of set-up::

    runner = InterposeRunner(pipe)
    result = await runner.run(agent, "what changed?")   # the arguments of Runner.run

``runner.run`` opens one interpose turn per run (an ``invoke_agent`` span, turn_started
/ turn_ended), runs the message and params stages on the input, and runs the agent with

- every function tool wrapped (``interpose_agent``): each invocation is a call of the
  tool stage (``tool.before`` → approvers → the tool → ``tool.after``, an
  ``execute_tool`` span, the tool_exec_* events);
- every model wrapped (``InterposeModel``, and ``InterposeModelProvider`` for models
  named by a string): each model call is a call of the llm stage (``llm.before`` may
  rewrite the system prompt, the input items, the tools offered and the settings;
  ``llm.after`` sees and may rewrite the response, including hosted tool calls; a
  ``chat`` span; llm_request / llm_response events).

``AbortTurn`` ends the run with a final message (the calls already running finish; the
model is not called again); ``HardAbort`` reaches the caller as itself, unwrapped from
the SDK's exception.  See docs/adapters.md for the whole mapping and its limits.

The conversions between the SDK's items, events and tool results and interpose's
payloads live in ``_openai_agents_items.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any, cast

from agents import (
    Agent,
    AgentsException,
    FunctionTool,
    Handoff,
    Model,
    ModelProvider,
    ModelResponse,
    ModelSettings,
    RunConfig,
    RunContextWrapper,
    Runner,
    RunResult,
    Tool,
    Usage,
)
from agents.agent_output import AgentOutputSchemaBase
from agents.items import TResponseInputItem, TResponseStreamEvent
from agents.models.interface import ModelTracing
from agents.models.multi_provider import MultiProvider
from agents.tool_context import ToolContext
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
)
from openai.types.responses.response_prompt_param import ResponsePromptParam

from ..errors import AbortTurn, HardAbort
from ..pipeline.payloads import (
    LLMRequest,
    LLMResponse,
)
from ..pipeline.pipeline import Pipeline
from ..pipeline.turn import Turn
from ._openai_agents_items import (
    aborted_result,
    completed_event,
    failure_output,
    output_message,
    parse_args,
    rebuild_response,
    to_llm_response,
    tool_output,
    tool_spec,
    unchanged_error,
)

__all__ = [
    "InterposeModel",
    "InterposeModelProvider",
    "InterposeRunner",
    "interpose_agent",
]

#: the text of the final message of a run that a handler aborted
ABORTED_MESSAGE = "[turn aborted: {reason}]"
_PROVIDER = "openai"


class _Run:
    """What one ``InterposeRunner.run`` shares with the wrapped tools and models: its
    turn, and how it is ending (the first ``AbortTurn``, a ``HardAbort``)."""

    __slots__ = ("abort", "hard", "message", "turn")

    def __init__(self, turn: Turn, message: str) -> None:
        self.turn = turn
        self.message = message
        self.abort: AbortTurn | None = None
        self.hard: HardAbort | None = None

    def aborted_text(self) -> str:
        assert self.abort is not None
        return self.message.format(reason=self.abort.reason)


# Set by InterposeRunner.run around Runner.run: the SDK runs tools in tasks that copy the
# context, and calls models in the runner's own task, so every wrapper sees its run.
_current: ContextVar[_Run | None] = ContextVar("interpose_openai_agents_run", default=None)


class _ToolHardAbort(HardAbort, AgentsException):
    """A ``HardAbort`` raised in a tool call, as an ``AgentsException`` so that the SDK
    lets it through instead of wrapping it in a ``UserError``.  ``InterposeRunner.run``
    re-raises the original; a plain ``Runner.run`` raises this (still a ``HardAbort``)."""

    def __init__(self, original: HardAbort) -> None:
        super().__init__(original.reason)
        self.source = original.source
        self.original = original


# -- tools ----------------------------------------------------------------------------------


def interpose_agent(
    agent: Agent[Any],
    pipe: Pipeline,
    *,
    tool_names: Mapping[str, str] | None = None,
) -> Agent[Any]:
    """A copy of ``agent`` whose function tools run through ``pipe``'s tool stage and
    whose model (when it is a ``Model`` object) runs through its llm stage; the agents it
    hands off to are wrapped the same way.  ``agent`` itself is not changed; wrapping a
    wrapped agent returns it as it is.

    ``tool_names`` maps an SDK tool name to the name interceptors see (``{"shell":
    "exec"}`` puts the command guard in front of a tool called ``shell``); other names
    are normalized as usual (``bash`` is ``exec``).

    An agent made into a tool (``agent.as_tool(...)``) is one tool call of the tool
    stage; its own tools and model go through interpose too when it was wrapped before
    ``as_tool`` (``interpose_agent(sub, pipe).as_tool(...)``).
    """
    names = dict(tool_names or {})
    return _wrap_agent(agent, pipe, names, {})


def _wrap_agent(
    agent: Agent[Any], pipe: Pipeline, names: dict[str, str], done: dict[int, Agent[Any]]
) -> Agent[Any]:
    if getattr(agent, "_interpose_pipe", None) is pipe:
        return agent
    seen = done.get(id(agent))
    if seen is not None:  # handoff cycles: A -> B -> A
        return seen
    model = agent.model
    if isinstance(model, Model) and not isinstance(model, InterposeModel):
        model = InterposeModel(model, pipe, agent_id=agent.name)
    wrapped = agent.clone(
        model=model,
        tools=[_wrap_tool(tool, pipe, names) for tool in agent.tools],
        handoffs=[],
    )
    done[id(agent)] = wrapped
    wrapped.handoffs = [
        _wrap_agent(h, pipe, names, done)
        if isinstance(h, Agent)
        else _wrap_handoff(h, pipe, names, done)
        for h in agent.handoffs
    ]
    wrapped._interpose_pipe = pipe
    return wrapped


def _wrap_handoff(
    handoff: Handoff[Any, Any],
    pipe: Pipeline,
    names: dict[str, str],
    done: dict[int, Agent[Any]],
) -> Handoff[Any, Any]:
    """A ``Handoff`` whose target agent is wrapped when the handoff happens."""
    invoke = handoff.on_invoke_handoff

    async def on_invoke_handoff(ctx: RunContextWrapper[Any], args_json: str) -> Any:
        target = await invoke(ctx, args_json)
        return _wrap_agent(target, pipe, names, done) if isinstance(target, Agent) else target

    return dataclasses.replace(handoff, on_invoke_handoff=on_invoke_handoff)


def _wrap_tool(tool: Tool, pipe: Pipeline, names: dict[str, str]) -> Tool:
    if not isinstance(tool, FunctionTool) or getattr(tool.on_invoke_tool, "_interpose", False):
        return tool  # hosted tools run at the provider: see InterposeModel for those
    invoke = tool.on_invoke_tool
    # The SDK's function tools (``@function_tool``, ``as_tool``) catch what their body
    # raises and return the tool's failure message instead: the tool stage would see a
    # tool that answered.  Run the body itself, so that a raise is an error result
    # (status "error", events, spans), then give the model the SDK's message for it.
    # (The body is an attribute of the SDK's invoker in 0.24, the version the extra
    # pins; a tool without one is run as it is, and what it raises is an error too.)
    body: Callable[[ToolContext[Any], str], Awaitable[Any]] | None = getattr(
        invoke, "_invoke_tool_impl", None
    )
    name = names.get(tool.name, tool.name)

    async def on_invoke_tool(ctx: ToolContext[Any], args_json: str) -> Any:
        run = _current.get()
        if run is not None and run.abort is not None:
            # the turn is ending: a call that starts now does not run
            return tool_output(aborted_result(name, run.abort.reason))
        call: Callable[[dict[str, Any]], Any]
        raised: Exception | None = None  # what the tool's body raised, when it did
        try:
            args = parse_args(args_json)
        except ValueError as exc:
            bad = exc

            def refuse(_: dict[str, Any]) -> Any:
                raise bad  # the tool stage reports it: an error result, tool_exec_end

            args, call = {}, refuse
        else:

            async def run_tool(final: dict[str, Any]) -> Any:
                nonlocal raised
                raised = None  # of this run (tool.after may retry)
                if body is None:
                    return await invoke(ctx, json.dumps(final))
                try:
                    return await body(ctx, json.dumps(final))
                except Exception as exc:
                    raised = exc
                    raise

            call = run_tool

        try:
            if run is None:  # no InterposeRunner: a one-call turn
                agent_id = ctx.agent.name if ctx.agent is not None else "main"
                result = await pipe.call_tool(
                    name, args, call=call, call_id=ctx.tool_call_id, agent_id=agent_id
                )
            else:
                result = await run.turn.call_tool(name, args, call=call, call_id=ctx.tool_call_id)
        except AbortTurn as exc:
            assert run is not None  # pipe.call_tool absorbs it
            if run.abort is None:
                run.abort = exc
            result = aborted_result(name, exc.reason)
        except HardAbort as exc:
            if run is not None:
                run.hard = exc
            raise _ToolHardAbort(exc) from exc
        if raised is not None and result.status == "error" and unchanged_error(result, raised):
            return await failure_output(tool, invoke, ctx, args_json, raised)
        return tool_output(result)

    on_invoke_tool._interpose = True  # type: ignore[attr-defined]
    return dataclasses.replace(tool, on_invoke_tool=on_invoke_tool)


# -- models ---------------------------------------------------------------------------------


class InterposeModel(Model):
    """A ``Model`` whose every call runs ``pipe``'s llm stage around ``inner``.

    The request handlers see: ``system`` (the instructions), ``messages`` (the input
    items, a plain string input as one user message), ``tools`` (``{"name", "type",
    "description"}`` per tool and handoff: type ``function``, ``handoff`` or ``hosted``),
    ``params`` (the model settings that are set; a key that is not a setting goes to
    ``extra_args``) and ``headers`` (``extra_headers``).  Removing a tool from
    ``tools`` stops it being offered to the model.

    The response handlers see ``content`` (the assistant text), ``tool_calls`` (function
    calls, and hosted tool calls under the tool's name, e.g. ``web_search``), ``usage``
    and ``stop_reason`` (``tool_use`` or ``end_turn``).  Removing a call from
    ``tool_calls`` drops it from the response (a hosted tool has already run at the
    provider by then: its result is dropped, its side effects are not undone); changing
    ``content`` replaces the assistant message; changed arguments are what the tool gets.
    """

    def __init__(
        self, inner: Model, pipe: Pipeline, *, name: str = "", agent_id: str = "main"
    ) -> None:
        self.inner = inner
        self.pipe = pipe
        self.name = name or str(getattr(inner, "model", "") or "")
        #: the agent id of the turn a call opens when no InterposeRunner runs it
        self.agent_id = agent_id

    def __repr__(self) -> str:
        return f"InterposeModel({self.inner!r})"

    async def close(self) -> None:
        await self.inner.close()

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> ModelResponse:
        call = _ModelCall(system_instructions, input, model_settings, tools, handoffs)

        async def ask(request: LLMRequest) -> LLMResponse:
            system, items, settings, offered, targets = call.apply(request)
            got = await self.inner.get_response(
                system,
                items,
                settings,
                offered,
                output_schema,
                targets,
                tracing,
                previous_response_id=previous_response_id,
                conversation_id=conversation_id,
                prompt=prompt,
            )
            return call.received(got)

        response = await self._stage(call, ask)
        return call.to_model_response(response)

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: ModelSettings,
        tools: list[Tool],
        output_schema: AgentOutputSchemaBase | None,
        handoffs: list[Handoff[Any, Any]],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: ResponsePromptParam | None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        """The llm stage around a streamed call: the stream is held back until the
        response is complete and ``llm.after`` has seen it (a handler can then still
        rewrite or drop what it says); then its events are passed on, or, when the
        response was changed, only the completed event carrying the new output."""
        call = _ModelCall(system_instructions, input, model_settings, tools, handoffs)
        held: list[TResponseStreamEvent] = []

        async def ask(request: LLMRequest) -> LLMResponse:
            system, items, settings, offered, targets = call.apply(request)
            held.clear()
            completed: Response | None = None
            async for event in self.inner.stream_response(
                system,
                items,
                settings,
                offered,
                output_schema,
                targets,
                tracing,
                previous_response_id=previous_response_id,
                conversation_id=conversation_id,
                prompt=prompt,
            ):
                held.append(event)
                if isinstance(event, ResponseCompletedEvent):
                    completed = event.response
            if completed is None:
                raise RuntimeError("the model's stream ended without a response.completed event")
            usage = completed.usage
            return call.received(
                ModelResponse(
                    output=list(completed.output),
                    usage=Usage(
                        requests=1,
                        input_tokens=usage.input_tokens if usage else 0,
                        output_tokens=usage.output_tokens if usage else 0,
                        total_tokens=usage.total_tokens if usage else 0,
                    ),
                    response_id=completed.id,
                )
            )

        response = await self._stage(call, ask)
        final = call.to_model_response(response)
        if call.original is not None and final is call.original:
            for event in held:
                yield event
            return
        yield completed_event(final, held)

    async def _stage(
        self, call: _ModelCall, ask: Callable[[LLMRequest], Awaitable[LLMResponse]]
    ) -> LLMResponse | None:
        """Run the llm stage in the current run's turn (or a one-call turn); returns
        the final response, or None when the turn is ending (aborted)."""
        run = _current.get()
        if run is None:  # no InterposeRunner: this call is a turn of its own
            turn = self.pipe.turn(agent_id=self.agent_id, provider=_PROVIDER, model=self.name)
            async with turn:
                return await turn.call_llm(call.request(), call=ask)
            return None  # an AbortTurn, absorbed by the turn
        if run.abort is not None:
            return None
        try:
            return await run.turn.call_llm(call.request(), call=ask)
        except AbortTurn as exc:
            run.abort = exc
            return None
        except HardAbort as exc:
            run.hard = exc
            raise


class InterposeModelProvider(ModelProvider):
    """A ``ModelProvider`` whose models are ``InterposeModel``s around ``inner``'s
    (default: the SDK's ``MultiProvider``), for ``RunConfig(model_provider=...)``."""

    def __init__(self, pipe: Pipeline, inner: ModelProvider | None = None) -> None:
        self.pipe = pipe
        self.inner = inner if inner is not None else MultiProvider()
        self._models: dict[str | None, InterposeModel] = {}

    def get_model(self, model_name: str | None) -> Model:
        model = self._models.get(model_name)
        if model is None:
            inner = self.inner.get_model(model_name)
            model = InterposeModel(inner, self.pipe, name=model_name or "")
            self._models[model_name] = model
        return model

    async def aclose(self) -> None:
        await self.inner.aclose()


_SETTINGS = tuple(f.name for f in dataclasses.fields(ModelSettings))


class _ModelCall:
    """One model call: the SDK's arguments, the ``LLMRequest`` made of them, what the
    model answered, and the conversions both ways."""

    __slots__ = (
        "handoffs",
        "input",
        "items",
        "original",
        "original_llm",
        "settings",
        "settings_dict",
        "system",
        "tools",
    )

    def __init__(
        self,
        system: str | None,
        input: str | list[TResponseInputItem],
        settings: ModelSettings,
        tools: list[Tool],
        handoffs: list[Handoff[Any, Any]],
    ) -> None:
        self.system = system
        self.input = input
        self.settings = settings
        self.tools = tools
        self.handoffs = handoffs
        self.items: list[dict[str, Any]] = (
            [{"role": "user", "content": input}]
            if isinstance(input, str)
            else [cast(dict[str, Any], item) for item in input]
        )
        # the settings that are set, as they are (a Reasoning stays a Reasoning)
        self.settings_dict = {
            key: value
            for key in _SETTINGS
            if (value := getattr(settings, key)) is not None and key != "extra_headers"
        }
        self.original: ModelResponse | None = None
        self.original_llm: LLMResponse | None = None

    def request(self) -> LLMRequest:
        return LLMRequest(
            system=self.system or "",
            messages=list(self.items),
            tools=[tool_spec(tool) for tool in self.tools]
            + [
                {"name": h.tool_name, "type": "handoff", "description": h.tool_description}
                for h in self.handoffs
            ],
            params=dict(self.settings_dict),
            headers={str(k): str(v) for k, v in (self.settings.extra_headers or {}).items()},
        )

    def apply(
        self, request: LLMRequest
    ) -> tuple[
        str | None,
        str | list[TResponseInputItem],
        ModelSettings,
        list[Tool],
        list[Handoff[Any, Any]],
    ]:
        """The SDK's arguments after the request handlers: what they left unchanged is
        passed on as it came."""
        system = self.system if request.system == (self.system or "") else request.system
        items: str | list[TResponseInputItem] = (
            self.input
            if request.messages == self.items
            else cast(list[TResponseInputItem], request.messages)
        )
        offered = {str(spec.get("name", "")) for spec in request.tools}
        tools = [tool for tool in self.tools if tool.name in offered]
        handoffs = [h for h in self.handoffs if h.tool_name in offered]
        return system, items, self._settings(request), tools, handoffs

    def _settings(self, request: LLMRequest) -> ModelSettings:
        headers = {str(k): str(v) for k, v in (self.settings.extra_headers or {}).items()}
        if request.params == self.settings_dict and request.headers == headers:
            return self.settings
        changes: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        for key, value in request.params.items():
            if self.settings_dict.get(key, None) == value and key in self.settings_dict:
                continue
            if key in _SETTINGS:
                changes[key] = value
            else:
                extra[key] = value
        for key in self.settings_dict.keys() - request.params.keys():
            changes[key] = None  # a handler removed a setting: back to the default
        if extra:
            changes["extra_args"] = {**(self.settings.extra_args or {}), **extra}
        if request.headers != headers:
            changes["extra_headers"] = dict(request.headers) or None
        return dataclasses.replace(self.settings, **changes)

    def received(self, response: ModelResponse) -> LLMResponse:
        """Remember the model's own response; return it as an ``LLMResponse``."""
        self.original = response
        self.original_llm = to_llm_response(response)
        # the handlers get a copy: the comparison at the end needs the original intact
        return to_llm_response(response)

    def to_model_response(self, response: LLMResponse | None) -> ModelResponse:
        """The ``ModelResponse`` the SDK gets: the model's own when the handlers left it
        as it was; else rebuilt from the final ``LLMResponse``; a final message when the
        turn is ending."""
        if response is None:
            run = _current.get()
            text = run.aborted_text() if run is not None and run.abort is not None else ""
            return ModelResponse(
                output=[output_message(text or ABORTED_MESSAGE.format(reason="aborted"))],
                usage=Usage(),
                response_id=None,
            )
        original, before = self.original, self.original_llm
        if original is not None and before is not None and response == before:
            return original
        return ModelResponse(
            output=rebuild_response(response, original, before),
            usage=original.usage if original is not None else Usage(),
            response_id=original.response_id if original is not None else None,
        )


# -- the runner -----------------------------------------------------------------------------


class InterposeRunner:
    """Runs agents like ``agents.Runner``, each run one interpose turn.

    Args:
        pipe: the pipeline every tool call and model call goes through.
        agent_id: the turn's agent id (default: the starting agent's name).
        tool_names: SDK tool name → interpose name (see ``interpose_agent``).
        aborted_message: the final output of an aborted run; ``{reason}`` is the
            abort's reason.
    """

    def __init__(
        self,
        pipe: Pipeline,
        *,
        agent_id: str | None = None,
        tool_names: Mapping[str, str] | None = None,
        aborted_message: str = ABORTED_MESSAGE,
    ) -> None:
        self.pipe = pipe
        self.agent_id = agent_id
        self.tool_names = dict(tool_names or {})
        self.aborted_message = aborted_message

    async def run(
        self,
        starting_agent: Agent[Any],
        input: str | list[TResponseInputItem],
        *,
        session_key: str | None = None,
        run_config: RunConfig | dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> RunResult:
        """``Runner.run(starting_agent, input, run_config=..., **kwargs)`` as one turn.

        The message stage sees the input's text (a string input, or the last user
        message of a list) and may rewrite it; the params stage may set temperature,
        top_p and max_tokens for the run.  ``session_key`` defaults to the id of the
        ``session`` passed, else ``conversation_id``, else "".

        Returns:
            The SDK's ``RunResult``.  When a handler raised ``AbortTurn``, the run ends
            with ``aborted_message`` as its final output.

        Raises:
            HardAbort: a handler raised it (the SDK's wrapping removed).
            Whatever ``Runner.run`` raises otherwise.
        """
        pipe = self.pipe
        agent = _wrap_agent(starting_agent, pipe, self.tool_names, {})
        if isinstance(run_config, dict):
            config = RunConfig(**run_config)  # as Runner.run accepts it
        else:
            config = run_config if run_config is not None else RunConfig()
        owns_provider = run_config is None or (
            isinstance(run_config, dict) and "model_provider" not in run_config
        )
        provider = config.model_provider
        if not isinstance(provider, InterposeModelProvider):
            provider = InterposeModelProvider(pipe, provider)
        model = config.model
        if isinstance(model, Model) and not isinstance(model, InterposeModel):
            model = InterposeModel(model, pipe)
        config = dataclasses.replace(config, model_provider=provider, model=model)
        if session_key is None:
            session = kwargs.get("session")
            session_key = str(
                getattr(session, "session_id", None) or kwargs.get("conversation_id") or ""
            )
        turn = pipe.turn(
            agent_id=self.agent_id or agent.name,
            session_key=session_key,
            provider=_PROVIDER,
            model=_model_name(agent.model) or _model_name(config.model),
        )
        run = _Run(turn, self.aborted_message)
        token = _current.set(run)
        result: RunResult | None = None
        try:
            async with turn:
                try:
                    input = await _message_stage(turn, input)
                    config = await _params_stage(turn, config)
                except AbortTurn as exc:
                    run.abort = exc  # the run still happens: it answers the abort message
                try:
                    result = await Runner.run(agent, input, run_config=config, **kwargs)
                except BaseException as exc:
                    if run.hard is not None:
                        raise run.hard from None
                    if isinstance(exc, _ToolHardAbort):
                        raise exc.original from None
                    raise
                if run.abort is not None:
                    raise run.abort  # ends the turn as aborted (absorbed by `async with`)
        finally:
            _current.reset(token)
            if owns_provider:  # made here: closed here, as Runner.run does with its own
                await provider.aclose()
        assert result is not None
        return result

    def run_sync(
        self,
        starting_agent: Agent[Any],
        input: str | list[TResponseInputItem],
        **kwargs: Any,
    ) -> RunResult:
        """``run`` in a new event loop, with the pipeline entered for the run (its
        observers and services started and drained).

        Raises:
            RuntimeError: called from a running event loop (use ``await run(...)``).
        """

        async def main() -> RunResult:
            async with self.pipe:
                return await self.run(starting_agent, input, **kwargs)

        return asyncio.run(main())


async def _message_stage(
    turn: Turn, input: str | list[TResponseInputItem]
) -> str | list[TResponseInputItem]:
    if isinstance(input, str):
        return (await turn.message(input)).message
    for index in range(len(input) - 1, -1, -1):
        item = cast(dict[str, Any], input[index])
        if item.get("role") == "user" and isinstance(item.get("content"), str):
            text = (await turn.message(item["content"])).message
            if text == item["content"]:
                return input
            items = list(input)
            items[index] = cast(TResponseInputItem, {**item, "content": text})
            return items
    await turn.message("")
    return input


async def _params_stage(turn: Turn, config: RunConfig) -> RunConfig:
    out = await turn.params()
    changes: dict[str, Any] = {
        key: value
        for key, value in (
            ("temperature", out.temperature),
            ("top_p", out.top_p),
            ("max_tokens", out.max_tokens),
        )
        if value is not None
    }
    if not changes:
        return config
    settings = config.model_settings or ModelSettings()
    return dataclasses.replace(config, model_settings=dataclasses.replace(settings, **changes))


def _model_name(model: object) -> str:
    if isinstance(model, str):
        return model
    if isinstance(model, InterposeModel):
        return model.name
    return str(getattr(model, "model", "") or "")
