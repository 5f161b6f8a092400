"""A turn: one user message and everything the agent does about it.

``Turn`` runs the message, params, llm, command and compact stages (the tool stage lives
in ``tool_stage``, where the hot path is).  ``async with turn`` publishes turn_started /
turn_ended, absorbs ``AbortTurn`` (then ``turn.aborted`` is True) and lets ``HardAbort``
and every other exception through unchanged.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

import msgspec
from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span, Status, StatusCode

from ..bus import events as ev
from ..errors import AbortTurn, HardAbort, MiddlewareError
from .chain import invoke, run_gate, run_plain
from .context import (
    CommandContext,
    CompactContext,
    LLMContext,
    MessageContext,
    ParamsContext,
    ToolContext,
)
from .failures import blocked
from .payloads import (
    CommandBeforeInput,
    CommandBeforeOutput,
    CompactInput,
    CompactOutput,
    LLMAfterInput,
    LLMAfterOutput,
    LLMBeforeInput,
    LLMRequest,
    LLMResponse,
    MessageBeforeInput,
    MessageBeforeOutput,
    ParamsBeforeInput,
    ParamsBeforeOutput,
    ToolResult,
)
from .span_content import chat_content, turn_input
from .tool_stage import run_tool
from .tracing import (
    CLIENT,
    INTERNAL,
    chat_span_attributes,
    enter_span,
    exit_span,
    fail_span,
    turn_span_attributes,
)

if TYPE_CHECKING:
    from ..bus.memory import InMemoryBus
    from .chain import Step
    from .runtime import Runtime

__all__ = ["Turn", "TurnHost"]


class TurnHost(Protocol):
    """What a turn uses of its pipeline (a ``Pipeline``), typed here so that this
    module does not import the pipeline's."""

    bus: InMemoryBus
    runtime: Runtime
    max_retries: int

    def stage_app(
        self, stage: str, agent_id: str, core: Callable[[Any], Awaitable[None]]
    ) -> Callable[[Any], Awaitable[None]]: ...

    def hook_steps(
        self, hook: str, agent_id: str
    ) -> tuple[tuple[Callable[..., Any], ...], tuple[Step, ...]]: ...

    async def emit(
        self, cls: type[Any], turn_id: str, agent_id: str, session_key: str, **fields: Any
    ) -> None: ...


class Turn:
    """One turn of one agent in one session.  Create it with ``pipe.turn(...)``."""

    # what a turn starts with, read from the class until set (``pipe.call_tool`` with
    # observers makes a turn per call: seven stores less on each)
    user_message: str = ""
    resolved: ParamsBeforeOutput | None = None
    aborted: bool = False
    abort_reason: str = ""
    _started: int = 0
    _span: Span | None = None
    _context_token: object = None

    def __init__(
        self,
        pipeline: TurnHost,
        *,
        turn_id: str,
        agent_id: str,
        session_key: str,
        provider: str,
        model: str,
    ) -> None:
        self.pipeline = pipeline
        self.turn_id = turn_id
        self.agent_id = agent_id
        self.session_key = session_key
        self.provider = provider
        self.model = model
        self.metadata: dict[str, Any] = {}

    def __repr__(self) -> str:
        state = f" aborted={self.abort_reason!r}" if self.aborted else ""
        return f"<Turn {self.turn_id} agent={self.agent_id!r} session={self.session_key!r}{state}>"

    # -- lifecycle ------------------------------------------------------------------

    async def __aenter__(self) -> Turn:
        rt = self.pipeline.runtime
        rt.check_running()
        self._started = time.perf_counter_ns()
        tracer = rt.trace.tracer()
        if tracer is not None:
            # current for the whole turn: the chat and execute_tool spans nest in it
            self._span = span = tracer.start_span(
                f"invoke_agent {self.agent_id}",
                kind=INTERNAL,
                attributes=turn_span_attributes(
                    self.agent_id, self.session_key, self.provider, self.model, self.turn_id
                ),
            )
            self._context_token = otel_context.attach(otel_trace.set_span_in_context(span))
        if "turn_started" in self.pipeline.bus.wanted:
            await self._emit(ev.TurnStarted, provider=self.provider, model=self.model)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        duration = time.perf_counter_ns() - self._started
        if self._span is not None:
            self._end_span(exc)
        wanted = self.pipeline.bus.wanted
        if isinstance(exc, AbortTurn | HardAbort):
            self.aborted = True
            self.abort_reason = exc.reason
            if "turn_aborted" in wanted:
                await self._emit(
                    ev.TurnAborted,
                    reason=exc.reason,
                    hard=isinstance(exc, HardAbort),
                    duration_ns=duration,
                )
            return isinstance(exc, AbortTurn)
        if "turn_ended" in wanted:
            await self._emit(ev.TurnEnded, duration_ns=duration)
        return False

    def _end_span(self, exc: BaseException | None) -> None:
        span, self._span = self._span, None
        assert span is not None
        otel_context.detach(self._context_token)  # type: ignore[arg-type]
        if self.model:
            span.set_attribute("gen_ai.request.model", self.model)
        trace = self.pipeline.runtime.trace
        if self.user_message and trace.content and span.is_recording():
            span.set_attributes(turn_input(self.user_message, trace.redactor))
        if isinstance(exc, AbortTurn | HardAbort):
            span.set_attribute("error.type", "turn_aborted")
            span.set_attribute("interpose.abort.hard", isinstance(exc, HardAbort))
            if exc.source:
                span.set_attribute("interpose.decided_by", exc.source)
            span.set_status(Status(StatusCode.ERROR, exc.reason))
        elif exc is not None:
            span.record_exception(exc)
            span.set_attribute("error.type", type(exc).__qualname__)
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        span.end()

    async def _emit(self, cls: type[Any], **fields: Any) -> None:
        await self.pipeline.emit(cls, self.turn_id, self.agent_id, self.session_key, **fields)

    # -- stages -----------------------------------------------------------------------

    async def message(
        self, text: str, metadata: dict[str, Any] | None = None
    ) -> MessageBeforeOutput:
        """Run the message stage on a user message; returns the (rewritten) output."""
        if not isinstance(text, str):
            raise TypeError(f"message must be a str, got {type(text).__name__}")
        self.pipeline.runtime.check_running()
        ctx = MessageContext(self, MessageBeforeOutput(message=text, metadata=dict(metadata or {})))
        await self.pipeline.stage_app("message", self.agent_id, _message_core)(ctx)
        self.user_message, self.metadata = ctx.result.message, ctx.result.metadata
        if "message_received" in self.pipeline.bus.wanted:
            await self._emit(ev.MessageReceived, message=self.user_message, metadata=self.metadata)
        return ctx.result

    async def params(self) -> ParamsBeforeOutput:
        """Run the params stage; provider/model overrides are applied to the turn."""
        self.pipeline.runtime.check_running()
        ctx = ParamsContext(self, ParamsBeforeOutput(provider=self.provider, model=self.model))
        await self.pipeline.stage_app("params", self.agent_id, _params_core)(ctx)
        out: ParamsBeforeOutput = ctx.result
        self.resolved, self.provider, self.model = out, out.provider, out.model
        if "params_resolved" in self.pipeline.bus.wanted:
            await self._emit(
                ev.ParamsResolved,
                provider=out.provider,
                model=out.model,
                params=msgspec.structs.asdict(out),
            )
        return out

    async def call_llm(
        self,
        request: LLMRequest | dict[str, Any],
        *,
        call: Callable[[LLMRequest], Any],
    ) -> LLMResponse:
        """Run the llm stage: llm.before → ``call(request)`` → llm.after (with retries).

        ``request`` is an ``LLMRequest`` or a dict of its fields (``system``, ``messages``,
        ``tools``, ``params``, ``headers``), converted once here, so that handlers and
        ``call`` always see an ``LLMRequest``.  ``call`` is sync or async and returns an
        ``LLMResponse`` (or a dict of its fields).  Its exceptions propagate unchanged.

        Raises:
            TypeError: ``request`` is neither, or a dict with an unknown field or a field
                of the wrong type (the message names it).
        """
        if not isinstance(request, LLMRequest):
            request = _llm_request(request)
        self.pipeline.runtime.check_running()
        ctx = LLMContext(self, request)
        ctx.state["call"] = call
        app = self.pipeline.stage_app("llm", self.agent_id, _llm_core)
        tracer = self.pipeline.runtime.trace.tracer()
        if tracer is None:
            await app(ctx)
        else:
            span, token = enter_span(
                tracer,
                f"chat {self.model}" if self.model else "chat",
                chat_span_attributes(self.agent_id, self.session_key, self.provider, self.model),
                CLIENT,
            )
            try:
                await app(ctx)
            except BaseException as exc:
                fail_span(span, exc, "turn_aborted")
                self._chat_content(span, ctx)
                exit_span(span, token, exc, status=False)  # fail_span set the status
                raise
            if ctx.response is not None:
                _end_chat_span(span, ctx.response, ctx.attempt)
            self._chat_content(span, ctx)
            exit_span(span, token)
        if ctx.response is None:
            raise MiddlewareError("llm")
        return ctx.response

    def _chat_content(self, span: Span, ctx: LLMContext) -> None:
        """The request and response on the chat span, when content is traced."""
        trace = self.pipeline.runtime.trace
        if trace.content and span.is_recording():
            span.set_attributes(chat_content(ctx.request, ctx.response, trace.redactor))

    async def call_tool(
        self,
        name: str,
        args: dict[str, Any],
        *,
        call: Callable[[dict[str, Any]], Any],
        call_id: str | None = None,
    ) -> ToolResult:
        """Run one tool call through the tool stage (see ``Pipeline.call_tool``)."""
        return await run_tool(
            self.pipeline.runtime,
            ToolContext(self, "", name, call_id or "", args, call, self.agent_id, self.session_key),
        )

    async def run_command(
        self, name: str, args: dict[str, Any], *, call: Callable[[dict[str, Any]], Any]
    ) -> ToolResult:
        """Run a slash command through the command stage (command.before may block it)."""
        if not isinstance(args, dict):
            raise TypeError(f"command arguments must be a dict, got {type(args).__name__}")
        self.pipeline.runtime.check_running()
        ctx = CommandContext(self, name, args, call)
        await self.pipeline.stage_app("command", self.agent_id, _command_core)(ctx)
        if ctx.result is None:
            raise MiddlewareError("command")
        return ctx.result

    async def compact(
        self,
        messages: list[Any],
        *,
        call: Callable[[list[Any], str], Any],
        reason: str = "",
    ) -> CompactOutput:
        """Run the compact stage.  session.compact may choose the messages to keep and
        supply the summary; otherwise ``call(messages_to_summarize, instructions)``
        writes it."""
        self.pipeline.runtime.check_running()
        ctx = CompactContext(self, list(messages), reason, call)
        await self.pipeline.stage_app("compact", self.agent_id, _compact_core)(ctx)
        if ctx.result is None:
            raise MiddlewareError("compact")
        return ctx.result


# -- stage cores: fixed functions, so the onion around each is compiled once ----------------


async def _message_core(ctx: MessageContext) -> None:
    turn = _turn(ctx)
    pipe = turn.pipeline
    fns, steps = pipe.hook_steps("message.before", turn.agent_id)
    if fns:
        inp = MessageBeforeInput(
            turn_id=turn.turn_id,
            agent_id=turn.agent_id,
            session_key=turn.session_key,
            provider=turn.provider,
            model=turn.model,
        )
        await run_plain(fns, steps, inp, ctx.result, pipe.runtime.hook_failed)


async def _params_core(ctx: ParamsContext) -> None:
    turn = _turn(ctx)
    pipe = turn.pipeline
    fns, steps = pipe.hook_steps("params.before", turn.agent_id)
    if fns:
        inp = ParamsBeforeInput(
            turn_id=turn.turn_id,
            agent_id=turn.agent_id,
            session_key=turn.session_key,
            message=turn.user_message,
            metadata=turn.metadata,
        )
        await run_plain(fns, steps, inp, ctx.result, pipe.runtime.hook_failed)


async def _llm_core(ctx: LLMContext) -> None:
    turn = _turn(ctx)
    pipe = turn.pipeline
    call = ctx.state["call"]
    failed = pipe.runtime.hook_failed
    fns, steps = pipe.hook_steps("llm.before", turn.agent_id)
    if fns:
        inp = LLMBeforeInput(
            agent_id=turn.agent_id, session_key=turn.session_key, turn_id=turn.turn_id, attempt=1
        )
        await run_plain(fns, steps, inp, ctx.request, failed)
    after_fns, after_steps = pipe.hook_steps("llm.after", turn.agent_id)
    wanted = pipe.bus.wanted
    for attempt in range(1, pipe.max_retries + 2):
        ctx.attempt = attempt
        if "llm_request" in wanted:
            await turn._emit(
                ev.LLMRequestSent,
                attempt=attempt,
                model=turn.model,
                messages=len(ctx.request.messages),
            )
        start = time.perf_counter_ns()
        response = call(ctx.request)
        if isawaitable(response):
            response = await response
        if not isinstance(response, LLMResponse):
            response = msgspec.convert(response, LLMResponse)
        if "llm_response" in wanted:
            await turn._emit(
                ev.LLMResponseReceived,
                attempt=attempt,
                model=turn.model,
                duration_ns=time.perf_counter_ns() - start,
                stop_reason=response.stop_reason,
                tool_calls=len(response.tool_calls),
            )
        out = LLMAfterOutput(response=response)
        if after_fns:
            inp_after = LLMAfterInput(
                agent_id=turn.agent_id,
                session_key=turn.session_key,
                turn_id=turn.turn_id,
                attempt=attempt,
                request=ctx.request,
            )
            await run_plain(after_fns, after_steps, inp_after, out, failed)
        ctx.response = out.response
        if not out.retry:
            return


async def _command_core(ctx: CommandContext) -> None:
    turn = _turn(ctx)
    pipe = turn.pipeline
    fns, steps = pipe.hook_steps("command.before", turn.agent_id)
    out = CommandBeforeOutput(args=ctx.args)
    if fns:
        inp = CommandBeforeInput(
            turn_id=turn.turn_id,
            command=ctx.command,
            agent_id=turn.agent_id,
            session_key=turn.session_key,
        )
        blocker, _ = await run_gate(fns, steps, inp, out, pipe.runtime.hook_failed)
        if blocker is not None:
            reason = out.block_reason or f"blocked by {blocker.id}"
            ctx.result = blocked(ctx.command, reason, blocker.id)
            return
    if not isinstance(out.args, dict):
        who = (
            "command middleware left ctx.args"
            if out.args is ctx.args
            else "command.before interceptors left args"
        )
        raise TypeError(f"{who} as {type(out.args).__name__}, not a dict")
    ctx.result, _ = await invoke(ctx.call, out.args)


async def _compact_core(ctx: CompactContext) -> None:
    turn = _turn(ctx)
    pipe = turn.pipeline
    out = CompactOutput()
    fns, steps = pipe.hook_steps("session.compact", turn.agent_id)
    if fns:
        inp = CompactInput(
            turn_id=turn.turn_id,
            agent_id=turn.agent_id,
            session_key=turn.session_key,
            reason=ctx.reason,
            messages=ctx.messages,
        )
        await run_plain(fns, steps, inp, out, pipe.runtime.hook_failed)
    if out.summary is None:
        kept = out.messages
        rest = [m for m in ctx.messages if m not in kept]
        summary = ctx.call(rest, out.instructions)
        if isawaitable(summary):
            summary = await summary
        out.summary = summary if isinstance(summary, str) else str(summary)
    ctx.result = out


def _end_chat_span(span: Span, response: LLMResponse, attempts: int) -> None:
    span.set_attribute("gen_ai.response.finish_reasons", [response.stop_reason])
    if attempts > 1:
        span.set_attribute("interpose.llm.attempts", attempts)
    usage = response.usage
    for key, attr in (
        ("input_tokens", "gen_ai.usage.input_tokens"),
        ("output_tokens", "gen_ai.usage.output_tokens"),
    ):
        if key in usage:
            span.set_attribute(attr, usage[key])


def _turn(ctx: Any) -> Turn:
    turn: Turn = ctx.turn  # a stage of a turn: its context holds the Turn
    return turn


def _llm_request(request: object) -> LLMRequest:
    """An ``LLMRequest`` from a dict of its fields.

    Raises:
        TypeError: ``request`` is not a dict, or does not fit ``LLMRequest``.
    """
    if not isinstance(request, dict):
        raise TypeError(
            f"request must be an LLMRequest or a dict of its fields, got {type(request).__name__}"
        )
    unknown = sorted(set(request) - set(LLMRequest.__struct_fields__), key=str)
    if unknown:
        raise TypeError(
            f"request: unknown field {unknown[0]!r}; "
            f"expected {', '.join(LLMRequest.__struct_fields__)}"
        )
    try:
        return msgspec.convert(request, LLMRequest)
    except msgspec.ValidationError as exc:
        raise TypeError(f"request: {exc}") from None
