"""Recording calls faithfully enough to replay them: ``call_recorded`` events.

The events of the bus say what happened to a call (``tool_exec_end``: its status, who
decided) but not what it was: the arguments, the result, the LLM request.  A
``CallRecorder`` adds that, opt-in, as one ``call_recorded`` event per call, published
by the outermost middleware layer of each recorded stage (``audit:record:<stage>``:
tool, llm, message, params),
which sees the call as the agent made it and, on the way out, what became of it.
Everything recorded goes through the pipeline's ``Redactor`` first (secret patterns in
strings, the values of sensitive keys), so the audit log is a privacy-safe record.

``interpose replay`` reads these events back (``interpose.replay``).

The layers cost a middleware layer per call (and a redaction of what is recorded)
only while someone subscribes to ``call_recorded``; with nobody listening they pass
the call straight on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import msgspec

from .._registrations import Middleware
from ..bus import events as ev
from ..bus.host import Host
from ..errors import AbortTurn, HardAbort

__all__ = ["RECORD_PRIORITY", "CallRecorder", "RecordingHost", "Redacting"]


class Redacting(Protocol):
    """What recording needs of a redaction (``interpose.pipeline.redaction.Redactor``)."""

    mask: str

    def redact(self, value: Any) -> Any: ...


class Registrations(Protocol):
    """Where the recording layers are registered (a pipeline's ``Registry``)."""

    def add(self, reg: Middleware) -> object: ...

    def remove(self, id: str) -> object: ...


class RecordingHost(Host, Protocol):
    """A pipeline, as the recording layers see it: a ``Host`` with a registry, a
    redaction and ``emit`` (which stamps ``ts`` and ``seq`` and publishes)."""

    @property
    def registry(self) -> Registrations: ...

    @property
    def redactor(self) -> Redacting: ...

    async def emit(
        self, cls: type[Any], turn_id: str, agent_id: str, session_key: str, **fields: Any
    ) -> None: ...


#: the recording layers wrap every other layer: they see the call as the agent made it
RECORD_PRIORITY = 1 << 40


class CallRecorder:
    """Publishes a ``call_recorded`` event per call of the stages it records.

    Args:
        args: record tool calls: the arguments as sent and as the tool got them, and
            the outcome (status, who decided, why).
        results: with them, the result's output (of tools; of the LLM with ``llm``).
        llm: record LLM requests (as sent, and as the model got them).
        messages: record user messages and the turn's params (provider, model,
            temperature...), as they arrived and as the stack left them.
        redactor: the redaction applied to everything recorded; default the
            pipeline's (``pipe.redactor``).
    """

    def __init__(
        self,
        *,
        args: bool = True,
        results: bool = False,
        llm: bool = False,
        messages: bool = False,
        redactor: Redacting | None = None,
    ) -> None:
        self.args = args
        self.results = results
        self.llm = llm
        self.messages = messages
        self.redactor = redactor

    def __repr__(self) -> str:
        return f"<CallRecorder {', '.join(self.recorded) or 'nothing'}>"

    @property
    def recorded(self) -> tuple[str, ...]:
        """What is recorded: ``args``, ``results``, ``llm``, ``messages``."""
        return tuple(
            name
            for name, on in (
                ("args", self.args),
                ("results", self.results),
                ("llm", self.llm),
                ("messages", self.messages),
            )
            if on
        )

    def middleware(self, pipe: RecordingHost) -> list[Middleware]:
        """The recording layers for ``pipe``, ids ``audit:record:<stage>``."""
        redactor = self.redactor or pipe.redactor
        recorded = self.recorded
        layers: list[Middleware] = []
        if self.args:
            layers.append(_layer("tool", _tool_layer(pipe, redactor, self.results, recorded)))
        if self.llm:
            layers.append(_layer("llm", _llm_layer(pipe, redactor, self.results, recorded)))
        if self.messages:
            layers.append(_layer("message", _message_layer(pipe, redactor, recorded)))
            layers.append(_layer("params", _message_layer(pipe, redactor, recorded)))
        return layers

    def install(self, pipe: RecordingHost) -> list[Middleware]:
        """Register the recording layers on ``pipe``; returns them.

        Raises:
            RegistrationError: a recording layer is registered on ``pipe`` already.
        """
        added: list[Middleware] = []
        try:
            for reg in self.middleware(pipe):
                pipe.registry.add(reg)
                added.append(reg)
        except BaseException:
            for reg in added:
                pipe.registry.remove(reg.id)
            raise
        return added


Layer = Callable[[Any, Callable[[], Awaitable[None]]], Awaitable[None]]


def _layer(stage: str, handler: Layer) -> Middleware:
    return Middleware(
        id=f"audit:record:{stage}",
        stage=stage,
        handler=handler,
        priority=RECORD_PRIORITY,
        on_error="raise",
        source="audit",
    )


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value) if isinstance(value, msgspec.Struct) else value


_SCALARS = (str, int, float, bool, type(None))


def _unchanged(args: dict[str, Any], before: dict[str, Any]) -> bool:
    """Whether ``args`` still hold the very values ``before`` (a shallow copy) held, all
    of them immutable (a container may have been changed in place: not unchanged)."""
    if len(args) != len(before):
        return False
    for key, value in args.items():
        if before.get(key, _MISSING) is not value or not isinstance(value, _SCALARS):
            return False
    return True


_MISSING = object()


def _request(redactor: Redacting, request: Any) -> Any:
    """An LLM request as recorded: redacted, and every header's value masked (the
    default keys know ``x-api-key`` and its kin, but a gateway's header can be named
    anything)."""
    record = redactor.redact(_plain(request))
    headers = record.get("headers") if isinstance(record, dict) else None
    if isinstance(headers, dict):
        record["headers"] = dict.fromkeys(headers, redactor.mask)
    return record


async def _publish(pipe: RecordingHost, ctx: Any, **fields: Any) -> None:
    turn = ctx.turn
    await pipe.emit(
        ev.CallRecorded,
        turn.turn_id if turn is not None else "",
        turn.agent_id if turn is not None else getattr(ctx, "agent_id", ""),
        turn.session_key if turn is not None else getattr(ctx, "session_key", ""),
        **fields,
    )


async def _run_and_publish(
    call_next: Callable[[], Awaitable[None]],
    publish: Callable[..., Awaitable[None]],
    *,
    errors: bool,
    restore: Callable[[], None] | None = None,
) -> None:
    """Run the rest of the stack, ``restore``, then publish how the call ended:
    ``aborted``, ``error`` (only with ``errors``) or ``ok``."""
    try:
        await call_next()
    except (AbortTurn, HardAbort) as exc:
        await publish("aborted", exc.reason, exc.source)
        raise
    except Exception as exc:
        if errors:
            await publish("error", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        if restore is not None:
            restore()
    await publish("ok")


def _tool_layer(
    pipe: RecordingHost, redactor: Redacting, results: bool, recorded: tuple[str, ...]
) -> Layer:
    async def record_tool(ctx: Any, call_next: Callable[[], Awaitable[None]]) -> None:
        if "call_recorded" not in pipe.bus.wanted:
            await call_next()
            return
        given = ctx.args
        before = dict(given)  # the handlers may change the dict in place
        sent = redactor.redact(given)
        applied: Any = None
        real = ctx.call

        def spy(args: dict[str, Any]) -> Any:
            nonlocal applied
            # unchanged arguments (the usual case) are not redacted twice
            applied = sent if _unchanged(args, before) else redactor.redact(args)
            return real(args)

        ctx.call = spy
        try:
            await call_next()
        except (AbortTurn, HardAbort) as exc:
            await _publish(
                pipe,
                ctx,
                stage="tool",
                tool_name=ctx.tool_name,
                raw_name=ctx.raw_name,
                tool_call_id=ctx.call_id,
                status="aborted",
                decided_by=exc.source,
                reason=exc.reason,
                input=sent,
                applied=applied,
                recorded=recorded,
            )
            raise
        finally:
            ctx.call = real
        result = ctx.result
        if result is None:
            return
        output = result.output
        reason = output.get("reason", "") if isinstance(output, dict) and result.is_error else ""
        await _publish(
            pipe,
            ctx,
            stage="tool",
            tool_name=ctx.tool_name,
            raw_name=ctx.raw_name,
            tool_call_id=ctx.call_id,
            status=result.status,
            decided_by=str(result.details.get("decided_by", "") or ""),
            reason=str(reason),
            input=sent,
            applied=applied,
            output=redactor.redact(output) if results else None,
            recorded=recorded,
        )

    return record_tool


def _llm_layer(
    pipe: RecordingHost, redactor: Redacting, results: bool, recorded: tuple[str, ...]
) -> Layer:
    async def record_llm(ctx: Any, call_next: Callable[[], Awaitable[None]]) -> None:
        if "call_recorded" not in pipe.bus.wanted:
            await call_next()
            return
        sent = _request(redactor, ctx.request)
        applied: Any = None
        real = ctx.state["call"]

        def spy(request: Any) -> Any:
            nonlocal applied
            applied = _request(redactor, request)
            return real(request)

        ctx.state["call"] = spy

        async def publish(status: str, reason: str = "", source: str = "") -> None:
            response = ctx.response
            await _publish(
                pipe,
                ctx,
                stage="llm",
                status=status,
                decided_by=source,
                reason=reason,
                input=sent,
                applied=applied,
                output=redactor.redact(_plain(response))
                if results and response is not None
                else None,
                recorded=recorded,
            )

        def restore() -> None:
            ctx.state["call"] = real

        await _run_and_publish(call_next, publish, errors=True, restore=restore)

    return record_llm


def _message_layer(pipe: RecordingHost, redactor: Redacting, recorded: tuple[str, ...]) -> Layer:
    """The message stage and the params stage alike: their context's ``result`` is the
    output the stack rewrites in place (the params stage records the turn's message
    too, which its hooks see)."""

    async def record_turn_setup(ctx: Any, call_next: Callable[[], Awaitable[None]]) -> None:
        if "call_recorded" not in pipe.bus.wanted:
            await call_next()
            return
        stage = ctx.stage
        sent = redactor.redact(_plain(ctx.result))
        if stage == "params" and ctx.turn is not None:
            sent["message"] = redactor.redact(ctx.turn.user_message)
            sent["metadata"] = redactor.redact(ctx.turn.metadata)

        async def publish(status: str, reason: str = "", source: str = "") -> None:
            await _publish(
                pipe,
                ctx,
                stage=stage,
                status=status,
                decided_by=source,
                reason=reason,
                input=sent,
                applied=redactor.redact(_plain(ctx.result)) if status == "ok" else None,
                recorded=recorded,
            )

        await _run_and_publish(call_next, publish, errors=False)

    return record_turn_setup
