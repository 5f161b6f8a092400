"""OpenTelemetry tracing, inline in the pipeline (``opentelemetry-api`` only).

Spans follow the GenAI semantic conventions::

    invoke_agent {agent}            INTERNAL, one per turn
    ├── chat {model}                CLIENT, one per turn.call_llm
    │   └── llm.before {id} ...     one per interceptor that ran (tracing="interceptor")
    └── execute_tool {tool}         INTERNAL, one per tool call; current while the tool runs
        ├── tool {middleware id}    a middleware layer; the layers inside it nest in it
        ├── tool.before {id}
        ├── tool.approve {id}
        └── tool.after {id}

A blocked or denied call ends its ``execute_tool`` span with status ERROR, ``error.type``
``tool_blocked`` / ``tool_denied`` and the reason as the status description.

Nothing here runs unless tracing is on *and* a real tracer provider is installed (an SDK
one, set globally or passed as ``Pipeline(tracer_provider=...)``): until then the
pipeline makes no OpenTelemetry call at all.  Finding out costs one attribute read.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from inspect import isawaitable
from types import CoroutineType
from typing import Any, Literal

import msgspec
from opentelemetry import context as _context
from opentelemetry import trace as _api
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from ..errors import AbortTurn, HardAbort
from .chain import Step
from .payloads import Approval, ToolResult
from .redaction import Redactor

__all__ = [
    "TracingLevel",
    "Tracing",
    "instrument",
    "tool_span_attributes",
    "tool_span_base",
    "end_tool_span",
    "fail_span",
    "enter_span",
    "exit_span",
]

TracingLevel = Literal["off", "tool", "interceptor"]

_ABORTS = (AbortTurn, HardAbort)
_NO_PROVIDER = (_api.ProxyTracerProvider, _api.NoOpTracerProvider)


# ``get_tracer_provider()`` reads the environment on every call while no provider is set
# (~300 ns); the module global it checks first costs one attribute read.  An API
# version without that global gets the public call.
_READS_GLOBAL = hasattr(_api, "_TRACER_PROVIDER")


def _global_provider() -> TracerProvider | None:
    """The provider installed with ``set_tracer_provider``, or None."""
    provider = _api._TRACER_PROVIDER if _READS_GLOBAL else _api.get_tracer_provider()
    return None if isinstance(provider, _NO_PROVIDER) else provider


class Tracing:
    """A pipeline's tracing settings, and the tracer they resolve to right now.

    ``tracer()`` is None while tracing is off or no real provider is installed; it
    follows the global provider, so ``configure()`` may run after the pipeline is built.
    ``tracer`` is the check for the current level and provider, chosen when the level is
    set (swapped, not tested per call): with tracing off it returns None; with no
    provider passed it compares the API's global provider with the one it saw last.
    """

    __slots__ = ("_level", "_provider", "_tracer", "content", "explicit", "redactor", "tracer")

    def __init__(
        self,
        level: TracingLevel,
        provider: TracerProvider | None,
        content: bool,
        redactor: Redactor,
    ) -> None:
        self.explicit = provider
        self.content = content
        self.redactor = redactor
        self._provider: TracerProvider | None = None
        self._tracer: Tracer | None = None
        self.level = level
        if provider is None and "OTEL_PYTHON_TRACER_PROVIDER" in os.environ:
            _api.get_tracer_provider()  # loads the configured provider into the global

    @property
    def level(self) -> TracingLevel:
        return self._level

    @level.setter
    def level(self, level: TracingLevel) -> None:
        if level not in ("off", "tool", "interceptor"):
            raise ValueError(f"tracing must be 'off', 'tool' or 'interceptor', got {level!r}")
        self._level = level
        self.tracer: Callable[[], Tracer | None]
        if level == "off":
            self.tracer = _off
        elif self.explicit is not None:
            self.tracer = self._explicit
        elif _READS_GLOBAL:
            self.tracer = self._global
        else:  # pragma: no cover - an API version without the module global
            self.tracer = self._public

    def _global(self) -> Tracer | None:
        # every call pays this while no provider is installed: one read and a compare
        provider = _api._TRACER_PROVIDER
        if provider is self._provider:
            return self._tracer
        return self._resolve(provider)

    def _explicit(self) -> Tracer | None:
        provider = self.explicit
        if provider is self._provider:
            return self._tracer
        return self._resolve(provider)

    def _public(self) -> Tracer | None:  # pragma: no cover - see _READS_GLOBAL
        provider = _global_provider()
        if provider is self._provider:
            return self._tracer
        return self._resolve(provider)

    def _resolve(self, provider: TracerProvider | None) -> Tracer | None:
        self._provider = provider
        self._tracer = (
            None
            if provider is None or isinstance(provider, _NO_PROVIDER)
            else provider.get_tracer("interpose", _version())
        )
        return self._tracer

    def interceptor_tracer(self) -> Tracer | None:
        """The tracer when every interceptor gets a span, else None."""
        return self.tracer() if self._level == "interceptor" else None


def _off() -> None:
    return None


def _version() -> str:
    from .._version import __version__

    return __version__


# -- spans of a tool call -----------------------------------------------------------------


def tool_span_base(tool_name: str, raw_name: str, agent_id: str) -> dict[str, Any]:
    """The attributes every ``execute_tool`` span of one chain shares."""
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool_name,
        "gen_ai.tool.type": "function",
        "gen_ai.agent.id": agent_id,
    }
    if raw_name != tool_name:
        attrs["interpose.tool.raw_name"] = raw_name
    return attrs


def tool_span_attributes(
    base: dict[str, Any], call_id: str, session_key: str, provider: str, model: str
) -> dict[str, Any]:
    """``base`` plus what varies per call."""
    attrs = {**base, "gen_ai.tool.call.id": call_id}
    if session_key:
        attrs["gen_ai.conversation.id"] = session_key
    if provider:
        attrs["gen_ai.provider.name"] = provider
    if model:
        attrs["gen_ai.request.model"] = model
    return attrs


def end_tool_span(span: Span, result: ToolResult, tracing: Tracing) -> None:
    """Record how a call ended: its status (unless "ok"), who decided, and ERROR for a
    refusal or a failure."""
    status = result.status
    if status == "ok":
        # the common case costs nothing here: an SDK set_attribute is ~1.3 us, and an
        # unset status with no interpose.tool.status already says "it ran, it worked"
        if tracing.content and span.is_recording():
            span.set_attribute("gen_ai.tool.call.result", tracing.redactor.to_json(result.output))
        return
    span.set_attribute("interpose.tool.status", status)
    decided_by = result.details.get("decided_by")
    if decided_by:
        span.set_attribute("interpose.decided_by", str(decided_by))
    if status in ("blocked", "denied", "aborted"):
        output = result.output
        reason = str(output.get("reason", "")) if isinstance(output, dict) else ""
        span.set_attribute("error.type", f"tool_{status}")
        span.set_status(Status(StatusCode.ERROR, reason))
    elif status == "error":
        span.set_attribute("error.type", str(result.details.get("error_type", "tool_error")))
        span.set_status(Status(StatusCode.ERROR, str(result.output)))
    if tracing.content and span.is_recording():
        span.set_attribute("gen_ai.tool.call.result", tracing.redactor.to_json(result.output))


# -- one span (and/or a timing) per step ---------------------------------------------------


def instrument(step: Step, tracer: Tracer, *, layer: bool = False) -> Step:
    """A copy of ``step`` whose callable runs the handler inside its own span.

    ``layer`` marks a middleware layer ``fn(ctx, call_next)``: its span stays open
    around everything inside it, as the onion nests.
    """
    new = copy.copy(step)
    fn = step.call
    if layer:
        new.call = _traced_layer(fn, step, tracer)
    elif step.is_async:
        new.call = _traced_async(fn, step, tracer)
        # a watched handler's span encloses what bounds it elsewhere (see chain._Watch)
        new.portable = (
            _traced_async(step.portable, step, tracer) if step.portable is not fn else new.call
        )
    else:
        new.call = _traced_sync(fn, step, tracer)
    return new


def _span_attributes(step: Step) -> dict[str, Any]:
    return {
        "interpose.hook": step.hook,
        "interpose.interceptor.id": step.id,
        "interpose.priority": step.priority,
        "interpose.on_error": step.on_error,
    }


# How a handler's decision is read: ``snap(args)`` before the call keeps what the
# handler may change; ``decide(args, snap, answer)`` after it names the decision:
# continue, modify, block, respond, retry, allow, deny or ask.  The tool hooks compare
# identities and shallow copies; the other hooks compare a builtins snapshot.
Snap = Callable[[tuple[Any, ...]], Any]
Decide = Callable[[tuple[Any, ...], Any, Any], str]


def _builtins(out: Any) -> Any:
    try:
        return msgspec.to_builtins(out)
    except (TypeError, msgspec.EncodeError):
        return msgspec.structs.astuple(out) if isinstance(out, msgspec.Struct) else out


def _snap_generic(args: tuple[Any, ...]) -> Any:
    return _builtins(args[-1])


def _decide_generic(args: tuple[Any, ...], before: Any, answer: Any) -> str:
    out = args[-1]
    if getattr(out, "block", False):
        return "block"
    if getattr(out, "retry", False):
        return "retry"
    return "modify" if _builtins(out) != before else "continue"


def _snap_tool_before(args: tuple[Any, ...]) -> Any:
    out = args[-1]
    return out.result, out.args, dict(out.args)


def _decide_tool_before(args: tuple[Any, ...], before: Any, answer: Any) -> str:
    out = args[-1]
    if out.block:
        return "block"
    result, args_obj, args_copy = before
    if out.result is not result:
        return "respond"
    return "modify" if out.args is not args_obj or out.args != args_copy else "continue"


def _snap_tool_after(args: tuple[Any, ...]) -> Any:
    result = args[-1].result
    output = getattr(result, "output", None)
    return (
        result,
        output,
        dict(output) if type(output) is dict else None,
        getattr(result, "status", None),
        getattr(result, "is_error", None),
    )


def _decide_tool_after(args: tuple[Any, ...], before: Any, answer: Any) -> str:
    out = args[-1]
    if out.retry:
        return "retry"
    result = out.result
    output = getattr(result, "output", None)
    if (
        result is not before[0]
        or output is not before[1]
        or (before[2] is not None and output != before[2])
        or getattr(result, "status", None) != before[3]
        or getattr(result, "is_error", None) != before[4]
    ):
        return "modify"
    return "continue"


def _snap_nothing(args: tuple[Any, ...]) -> Any:
    return None


def _decide_approval(args: tuple[Any, ...], before: Any, answer: Any) -> str:
    if answer is None or answer is True:
        return "allow"
    if answer is False:
        return "deny"
    if isinstance(answer, Approval):
        return answer.decision
    return "invalid"


_PROBES: dict[str, tuple[Snap, Decide]] = {
    "tool.before": (_snap_tool_before, _decide_tool_before),
    "tool.approve": (_snap_nothing, _decide_approval),  # approvers answer by returning
    "tool.after": (_snap_tool_after, _decide_tool_after),
}
_GENERIC: tuple[Snap, Decide] = (_snap_generic, _decide_generic)


def _traced_sync(fn: Callable[..., Any], step: Step, tracer: Tracer) -> Callable[..., Any]:
    name, attrs = f"{step.hook} {step.id}", _span_attributes(step)
    snap, decide = _PROBES.get(step.hook, _GENERIC)

    def traced(*args: Any) -> Any:
        span, token = enter_span(tracer, name, attrs)
        try:
            before = snap(args)
            answer = fn(*args)
            decision = decide(args, before, answer)
        except BaseException as exc:
            _failed(span, exc)
            exit_span(span, token, exc)
            raise
        span.set_attribute("interpose.decision", decision)
        exit_span(span, token)
        return answer

    return traced


def _traced_async(fn: Callable[..., Any], step: Step, tracer: Tracer) -> Callable[..., Any]:
    name, attrs = f"{step.hook} {step.id}", _span_attributes(step)
    snap, decide = _PROBES.get(step.hook, _GENERIC)

    async def traced(*args: Any) -> Any:
        span, token = enter_span(tracer, name, attrs)
        try:
            before = snap(args)
            # a handler with a timeout that finished without suspending has run
            # already and returned its answer (or None): see chain.Step
            answer = fn(*args)
            if type(answer) is CoroutineType or isawaitable(answer):
                answer = await answer
            decision = decide(args, before, answer)
        except BaseException as exc:
            _failed(span, exc)
            exit_span(span, token, exc)
            raise
        span.set_attribute("interpose.decision", decision)
        exit_span(span, token)
        return answer

    return traced


def _traced_layer(fn: Callable[..., Any], step: Step, tracer: Tracer) -> Callable[..., Any]:
    name = f"{step.hook} {step.id}"
    attrs = {**_span_attributes(step), "interpose.middleware": True}

    async def traced(ctx: Any, call_next: Callable[[], Any]) -> None:
        called = False

        def spy() -> Any:
            nonlocal called
            called = True
            return call_next()

        span, token = enter_span(tracer, name, attrs)
        try:
            await fn(ctx, spy)
        except BaseException as exc:
            _failed(span, exc)
            exit_span(span, token, exc)
            raise
        span.set_attribute("interpose.decision", "continue" if called else "respond")
        exit_span(span, token)

    return traced


def enter_span(
    tracer: Tracer, name: str, attributes: dict[str, Any], kind: SpanKind = SpanKind.INTERNAL
) -> tuple[Span, object]:
    """Start a span and make it current: ``start_as_current_span`` without its two
    generator-based context managers (~4 us a span here).  Pair it with
    :func:`exit_span` on every way out."""
    span = tracer.start_span(name, kind=kind, attributes=attributes)
    return span, _context.attach(_api.set_span_in_context(span))


def exit_span(
    span: Span, token: object, exc: BaseException | None = None, status: bool = True
) -> None:
    """Leave and end a span from :func:`enter_span` as ``use_span`` would: an
    ``Exception`` on the way out is recorded (and, with ``status``, sets status ERROR);
    other ``BaseException``s (cancellation) are not."""
    _context.detach(token)  # type: ignore[arg-type]
    if isinstance(exc, Exception) and span.is_recording():
        span.record_exception(exc)
        if status:
            span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
    span.end()


def _failed(span: Span, exc: BaseException) -> None:
    # the span's own exit records the exception and sets status ERROR
    aborted = isinstance(exc, AbortTurn | HardAbort)
    span.set_attribute("interpose.decision", "abort" if aborted else "failed")
    span.set_attribute("error.type", "turn_aborted" if aborted else type(exc).__qualname__)


def fail_span(span: Span, exc: BaseException, aborted: str = "tool_aborted") -> None:
    """End-of-span record for an exception leaving a tool or LLM call: an abort is
    ``error.type=aborted`` and names who aborted and why; anything else is an error of
    its type."""
    if isinstance(exc, AbortTurn | HardAbort):
        span.set_attribute("error.type", aborted)
        if exc.source:
            span.set_attribute("interpose.decided_by", exc.source)
        span.set_status(Status(StatusCode.ERROR, exc.reason))
    else:
        span.set_attribute("error.type", type(exc).__qualname__)
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))


# -- turn and chat spans ------------------------------------------------------------------


def turn_span_attributes(
    agent_id: str, session_key: str, provider: str, model: str, turn_id: str
) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": agent_id,
        "gen_ai.agent.name": agent_id,
        "interpose.turn.id": turn_id,
    }
    if session_key:
        attrs["gen_ai.conversation.id"] = session_key
    if provider:
        attrs["gen_ai.provider.name"] = provider
    if model:
        attrs["gen_ai.request.model"] = model
    return attrs


def chat_span_attributes(
    agent_id: str, session_key: str, provider: str, model: str
) -> dict[str, Any]:
    attrs: dict[str, Any] = {"gen_ai.operation.name": "chat", "gen_ai.agent.id": agent_id}
    if session_key:
        attrs["gen_ai.conversation.id"] = session_key
    if provider:
        attrs["gen_ai.provider.name"] = provider
    if model:
        attrs["gen_ai.request.model"] = model
    return attrs


CLIENT = SpanKind.CLIENT
INTERNAL = SpanKind.INTERNAL
