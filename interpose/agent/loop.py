"""A small reference agent loop that runs every step through a ``Pipeline``.

One ``Agent.run(message)`` is one turn, run with ``pipeline.run_turn`` so that turn-stage
middleware wraps it.  Inside the turn::

    turn.message(message) → turn.params() → repeat up to max_steps:
        turn.call_llm(request)                 the model answers
        turn.call_tool(...) per tool call      its result goes back into the history
    until a response without tool calls (the final answer)

The agent keeps one history per session key, so consecutive runs on the same session
form a conversation.  Run at most one turn per session at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import msgspec

from ..errors import AbortTurn
from ..pipeline.payloads import LLMRequest, ParamsBeforeOutput, ToolCall, ToolResult, refusal
from ..pipeline.pipeline import Pipeline
from ..pipeline.tools import normalize_tool_name
from ..pipeline.turn import Turn
from .model import Model

__all__ = ["Agent", "AgentRun", "StopReason", "ToolRecord"]

StopReason = Literal["", "answer", "max_steps", "aborted"]
ToolFn = Callable[[dict[str, Any]], Any]


class ToolRecord(msgspec.Struct, kw_only=True):
    """One tool call of a run: what the model asked for and what it got back.

    ``call.args`` are the arguments as the model wrote them; interceptors may have
    rewritten what the tool actually received.  A call that an ``AbortTurn`` cut short
    has a ``status="aborted"`` result.
    """

    call: ToolCall
    result: ToolResult


class AgentRun(msgspec.Struct, kw_only=True):
    """What one ``Agent.run`` did.

    Attributes:
        message: the user message after the message stage (as the model saw it).
        answer: the final answer (the last response's text when ``max_steps`` ran out).
        steps: LLM calls made.
        calls: every tool call, in order, with its result.
        aborted, abort_reason: from the turn; an aborted run stops where it was.
        stop_reason: "answer", "max_steps", "aborted", or "" when the turn body never ran
            (a turn-stage middleware short-circuited it).
        turn_id: the turn's id, as carried by its bus events.
        history: the session's messages after this run (user, assistant, tool).
    """

    message: str = ""
    answer: str = ""
    steps: int = 0
    calls: list[ToolRecord] = msgspec.field(default_factory=list)
    aborted: bool = False
    abort_reason: str = ""
    stop_reason: StopReason = ""
    turn_id: str = ""
    history: list[dict[str, Any]] = msgspec.field(default_factory=list)

    @property
    def results(self) -> list[ToolResult]:
        """The tool results, in call order."""
        return [record.result for record in self.calls]


class Agent:
    """A tool-using agent whose every step goes through ``pipeline``.

    Args:
        pipeline: the pipeline whose stages wrap the turn, LLM calls and tool calls.
        model: answers each step (``ScriptedModel`` for demos and tests).
        tools: tool name → sync or async callable taking the args dict.  A name the
            model asks for is looked up as written, then normalized (``bash`` → exec).
        agent_id: the agent id the pipeline's matchers see.
        system: the system prompt of every request.
        max_steps: at most this many LLM calls per run.
        schemas: tool schemas (``name``/``description``/``parameters``) for requests;
            default one minimal schema per tool.
        provider, model_name: reported to the turn (params.before may override them).

    Raises:
        ValueError: ``max_steps`` is below 1.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        model: Model,
        tools: Mapping[str, ToolFn],
        *,
        agent_id: str = "main",
        system: str = "",
        max_steps: int = 8,
        schemas: Sequence[dict[str, Any]] | None = None,
        provider: str = "",
        model_name: str = "",
    ) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.pipeline = pipeline
        self.model = model
        self.tools = dict(tools)
        self.agent_id = agent_id
        self.system = system
        self.max_steps = max_steps
        self.schemas: list[dict[str, Any]] = (
            list(schemas)
            if schemas is not None
            else [
                {"name": name, "description": "", "parameters": {"type": "object"}}
                for name in self.tools
            ]
        )
        self.provider = provider
        self.model_name = model_name
        self._sessions: dict[str, list[dict[str, Any]]] = {}

    def __repr__(self) -> str:
        return f"<Agent {self.agent_id!r} tools={sorted(self.tools)} max_steps={self.max_steps}>"

    def history(self, session_key: str = "") -> list[dict[str, Any]]:
        """The messages of a session so far (the live list: copy it to keep a snapshot)."""
        return self._sessions.setdefault(session_key, [])

    async def run(self, message: str, *, session_key: str = "") -> AgentRun:
        """Run one turn on ``message`` and return what happened.

        An ``AbortTurn`` raised anywhere in the turn (message, params, llm or tool stage)
        ends it early; the returned run then has ``aborted=True``.

        Raises:
            HardAbort: raised by any handler; the loop stops and nothing is returned.
            RuntimeError: the pipeline has subscribers but is not entered.
            Exception: whatever the model or an interceptor with ``on_error="raise"``
                raises, unchanged.
        """
        run = AgentRun()
        history = self.history(session_key)
        body = _TurnBody(self, message, history, run)
        turns = body.turns
        await self.pipeline.run_turn(
            body,
            agent_id=self.agent_id,
            session_key=session_key,
            provider=self.provider,
            model=self.model_name,
        )
        if turns and turns[0].aborted:
            run.aborted, run.abort_reason = True, turns[0].abort_reason
            run.stop_reason = "aborted"
        run.history = list(history)
        return run

    async def _turn(
        self, turn: Turn, message: str, history: list[dict[str, Any]], run: AgentRun
    ) -> None:
        msg = await turn.message(message)
        run.message = msg.message
        history.append({"role": "user", "content": msg.message})
        await self._steps(turn, _request_params(await turn.params()), history, run)

    async def _steps(
        self, turn: Turn, params: dict[str, Any], history: list[dict[str, Any]], run: AgentRun
    ) -> None:
        """LLM calls and tool calls until an answer without tool calls, or max_steps."""
        while run.steps < self.max_steps:
            request = LLMRequest(
                system=self.system,
                # a copy: llm.before may edit the request without touching the session
                messages=list(history),
                tools=list(self.schemas),
                params=dict(params),
            )
            response = await turn.call_llm(request, call=self.model.complete)
            run.steps += 1
            run.answer = response.content
            history.append(_assistant_message(response.content, response.tool_calls))
            if not response.tool_calls:
                run.stop_reason = "answer"
                return
            for call in response.tool_calls:
                result = await self._call_tool(turn, call, run)
                history.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "name": call.name,
                        "content": result.output,
                        "status": result.status,
                        "is_error": result.is_error,
                    }
                )
        run.stop_reason = "max_steps"

    async def _call_tool(self, turn: Turn, call: ToolCall, run: AgentRun) -> ToolResult:
        fn = self.tools.get(call.name) or self.tools.get(normalize_tool_name(call.name))
        if fn is None:
            # still through the pipeline, so guards and observers see what the model asked
            fn = _unknown_tool(call.name, sorted(self.tools))
        try:
            # a copy: interceptors rewrite the args the tool gets, not the model's record
            result = await turn.call_tool(call.name, dict(call.args), call=fn, call_id=call.id)
        except AbortTurn as exc:
            aborted = refusal("aborted", normalize_tool_name(call.name), exc.reason)
            run.calls.append(ToolRecord(call=call, result=aborted))
            raise
        run.calls.append(ToolRecord(call=call, result=result))
        return result


class _TurnBody:
    """The work of one ``Agent.run`` turn, as ``pipeline.run_turn`` calls it.

    ``resume(turn, message)`` goes on with the same turn, ``message`` being the user's
    next message (sharing the run's ``max_steps``): a turn-stage middleware that finds a
    ``resume`` on its context's body may continue a turn that was about to end (a
    Claude Code Stop hook's ``decision: "block"`` does).
    """

    __slots__ = ("agent", "history", "message", "run", "turns")

    def __init__(
        self, agent: Agent, message: str, history: list[dict[str, Any]], run: AgentRun
    ) -> None:
        self.agent = agent
        self.message = message
        self.history = history
        self.run = run
        self.turns: list[Turn] = []

    async def __call__(self, turn: Turn) -> AgentRun:
        self.turns.append(turn)
        self.run.turn_id = turn.turn_id
        await self.agent._turn(turn, self.message, self.history, self.run)
        return self.run

    async def resume(self, turn: Turn, message: str) -> AgentRun:
        self.history.append({"role": "user", "content": message})
        params = _request_params(turn.resolved) if turn.resolved is not None else {}
        await self.agent._steps(turn, params, self.history, self.run)
        return self.run


def _request_params(params: ParamsBeforeOutput) -> dict[str, Any]:
    """The LLM request parameters resolved by the params stage (unset ones left out)."""
    out: dict[str, Any] = {"model": params.model} if params.model else {}
    for name in ("temperature", "top_p", "max_tokens", "think_level", "reasoning_level"):
        value = getattr(params, name)
        if value is not None:
            out[name] = value
    out.update(params.extra)
    return out


def _assistant_message(content: str, calls: list[ToolCall]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": call.id, "name": call.name, "args": dict(call.args)} for call in calls
        ]
    return message


def _unknown_tool(name: str, known: list[str]) -> ToolFn:
    def missing(args: dict[str, Any]) -> Any:
        raise LookupError(f"unknown tool {name!r}; available: {', '.join(known) or 'none'}")

    return missing
