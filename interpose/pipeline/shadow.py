"""Shadow mode: a registration that decides, is recorded, and is not enforced.

A registration with ``mode="shadow"`` is wrapped once, when it is added to a registry,
into a handler that looks like any enforcing one to the chain compiler and the per-call
loops: it runs the real handler on *copies* of what it would have changed (the output
struct, the arguments, the middleware context), reads the decision off the copies (or
off the handler's answer, its exception, its timeout), reports it, and then returns
as a handler that continued.  The loops in ``chain`` and ``tool_stage`` never test for
a mode, so a pipeline without shadow registrations pays nothing for the feature.

Where a decision goes: ``ShadowRecorder.record`` (one per registry) counts it, adds an
event (and ``interpose.shadow.would_block``) to the current span when one is
recording, and hands it to the pipelines entered on the registry, which publish it as
a ``shadow_decision`` event (``MetricsObserver`` counts those).  A registry shared by
several entered pipelines gives each decision to the pipeline whose turn it came from
(by turn id), or to all of them when that cannot be told.

The shadow handler's own time is bounded: its ``timeout``, else
``DEFAULT_SHADOW_TIMEOUT`` seconds; a shadow approver's ``ask`` never reaches the
human-approval handler.  An async handler is cancelled at its deadline.  A sync one
cannot be interrupted, so it runs in a thread of its own (``worker.Worker``) that the
call waits for at most the timeout: past it, the call goes on with a ``timeout``
decision recorded, and the handler finishes in its thread, unwaited for (while it does,
its next calls are recorded as timeouts without running it).  With ``timeout=math.inf``
a sync shadow handler runs inline, unbounded, as an enforcing one does.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from typing import Any

import anyio
import anyio.lowlevel
import msgspec
from opentelemetry import trace as otel_trace

from .._callables import is_async_callable
from .._registrations import Interceptor, Middleware
from ..errors import AbortTurn, HardAbort
from .hooks import HOOKS, MIDDLEWARE_DEFAULT_ON_ERROR, MODES, Mode, OnError
from .payloads import Approval, ToolResult
from .worker import Worker

__all__ = [
    "DEFAULT_SHADOW_TIMEOUT",
    "MODES",
    "Mode",
    "ShadowRecorder",
    "ShadowVerdict",
    "declared_policy",
    "shadowed",
]


#: how long (s) a shadow handler without a timeout of its own may take
DEFAULT_SHADOW_TIMEOUT = 5.0

#: decisions that would have refused the call (or ended the turn) had they been enforced
BLOCKING = frozenset({"block", "deny", "abort_turn", "hard_abort"})


@dataclasses.dataclass(frozen=True, slots=True)
class ShadowVerdict:
    """What a shadow handler would have done on one call."""

    registration_id: str
    hook: str
    decision: str
    reason: str = ""
    would_block: bool = False
    changed: tuple[str, ...] = ()
    error_type: str = ""
    turn_id: str = ""
    agent_id: str = ""
    session_key: str = ""
    tool_name: str = ""
    tool_call_id: str = ""
    source: str = ""


Sink = Callable[[ShadowVerdict], None]


class ShadowRecorder:
    """Where the shadow registrations of one registry report their decisions.

    Attributes:
        counts: (registration id, decision) -> how many times, ``continue`` included:
            the share of calls a shadow rule would have changed.
    """

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}
        self._sinks: list[tuple[str, Sink]] = []

    def __repr__(self) -> str:
        return f"<ShadowRecorder {sum(self.counts.values())} decisions>"

    def attach(self, turn_prefix: str, sink: Sink) -> None:
        """Deliver decisions to ``sink`` (a pipeline entered on this registry) from now
        on; ``turn_prefix`` starts the ids of that pipeline's turns."""
        self._sinks.append((turn_prefix, sink))

    def detach(self, sink: Sink) -> None:
        """Stop delivering to ``sink`` (no error if it was not attached)."""
        self._sinks = [(p, s) for p, s in self._sinks if s is not sink]

    def count(self, registration_id: str, decision: str) -> None:
        key = (registration_id, decision)
        self.counts[key] = self.counts.get(key, 0) + 1

    def record(self, verdict: ShadowVerdict) -> None:
        """Count ``verdict``, note it on the current span, hand it to the pipelines."""
        self.count(verdict.registration_id, verdict.decision)
        span = otel_trace.get_current_span()
        if span.is_recording():
            span.add_event(
                "interpose.shadow_decision",
                {
                    "interpose.interceptor.id": verdict.registration_id,
                    "interpose.hook": verdict.hook,
                    "interpose.shadow.decision": verdict.decision,
                    "interpose.shadow.reason": verdict.reason,
                    "interpose.shadow.would_block": verdict.would_block,
                },
            )
            if verdict.would_block:
                span.set_attribute("interpose.shadow.would_block", True)
        sinks = self._sinks
        if len(sinks) > 1 and verdict.turn_id:
            own = [s for prefix, s in sinks if verdict.turn_id.startswith(prefix + "-")]
            if own:
                for sink in own:
                    sink(verdict)
                return
        for _, sink in sinks:
            sink(verdict)


# -- wrapping -------------------------------------------------------------------------


def shadowed(reg: Interceptor | Middleware, recorder: ShadowRecorder) -> Interceptor | Middleware:
    """The registration the chains run for the shadow registration ``reg``: the same
    id, hook and priority, a recording handler that never refuses, fails or times out
    (it bounds its own time), ``on_error="skip"`` for interceptors and ``"raise"`` for
    middleware (whatever leaves it came from the layers inside it)."""
    timeout = DEFAULT_SHADOW_TIMEOUT if reg.timeout is None else reg.timeout
    if isinstance(reg, Interceptor):
        handler = _wrap_interceptor(reg, recorder, timeout)
        return dataclasses.replace(
            reg, handler=handler, on_error="skip", timeout=math.inf, trusted=False
        )
    return dataclasses.replace(
        reg, handler=_wrap_middleware(reg, recorder, timeout), on_error="raise", timeout=None
    )


def declared_policy(reg: Interceptor | Middleware) -> OnError:
    """The error policy ``reg`` declares (its hook's or stage's default when unset):
    what its failure would do if it were enforced."""
    if reg.on_error is not None:
        return reg.on_error
    if isinstance(reg, Interceptor):
        return HOOKS[reg.hook].default_on_error
    return MIDDLEWARE_DEFAULT_ON_ERROR[reg.stage]


_ATOMS = frozenset({str, int, float, bool, type(None), bytes})


def _copy(value: Any) -> Any:
    """A deep copy (what a shadow handler may change must not be the real thing).

    The payloads are JSON-like: dicts, lists and scalars in msgspec structs.  Those are
    copied here directly, several times faster than ``copy.deepcopy`` and its memo;
    anything else goes to ``copy.deepcopy``.
    """
    kind = type(value)
    if kind in _ATOMS:
        return value
    if kind is dict:
        return {key: _copy(item) for key, item in value.items()}
    if kind is list:
        return [_copy(item) for item in value]
    if kind is tuple:
        return tuple(_copy(item) for item in value)
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.replace(
            value, **{name: _copy(getattr(value, name)) for name in value.__struct_fields__}
        )
    return copy.deepcopy(value)


def _copy_input(inp: Any) -> Any:
    # inputs are frozen, but what they hold may not be: the dicts and lists of
    # ToolAfterInput.args, ApprovalRequest.args, CompactInput.messages, the mutable
    # LLMRequest of LLMAfterInput
    if isinstance(inp, msgspec.Struct):
        fields = {
            name: _copy(value)
            for name in inp.__struct_fields__
            if type(value := getattr(inp, name)) not in _ATOMS
        }
        return msgspec.structs.replace(inp, **fields) if fields else inp
    return _copy(inp)


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _changed_fields(before: Any, after: Any) -> tuple[str, ...]:
    """Names of the fields of two output structs of one type that differ."""
    if isinstance(before, msgspec.Struct) and type(before) is type(after):
        return tuple(
            name
            for name in before.__struct_fields__
            if not _same(getattr(before, name), getattr(after, name))
        )
    return () if _same(before, after) else ("value",)


def _verdict_of_output(hook: str, before: Any, after: Any) -> tuple[str, str, tuple[str, ...]]:
    """(decision, reason, changed fields) of a handler that left ``after`` from a copy
    of ``before``."""
    if getattr(after, "block", False):
        return "block", str(getattr(after, "block_reason", "") or ""), ()
    if getattr(after, "retry", False):
        return "retry", "", ()
    changed = tuple(
        f for f in _changed_fields(before, after) if f not in ("block", "block_reason", "retry")
    )
    if hook == "tool.before" and "result" in changed:
        return "respond", "", tuple(f for f in changed if f != "result")
    if changed:
        return "modify", "", changed
    return "continue", "", ()


def _verdict_of_answer(answer: Any) -> tuple[str, str]:
    if answer is None or answer is True:
        return "continue", ""
    if answer is False:
        return "deny", ""
    if isinstance(answer, Approval):
        return ("continue" if answer.decision == "allow" else answer.decision), answer.reason
    return "error", f"an approver must return Approval, bool or None, got {type(answer).__name__}"


def _identity(inp: Any) -> dict[str, str]:
    return {
        "turn_id": getattr(inp, "turn_id", ""),
        "agent_id": getattr(inp, "agent_id", ""),
        "session_key": getattr(inp, "session_key", ""),
        "tool_name": str(getattr(inp, "tool_name", None) or getattr(inp, "command", "")),
        "tool_call_id": getattr(inp, "tool_call_id", ""),
    }


class _Reporter:
    """Turns what one shadow registration did into verdicts."""

    __slots__ = ("hook", "id", "policy", "recorder", "source", "timeout")

    def __init__(
        self, reg: Interceptor | Middleware, recorder: ShadowRecorder, timeout: float
    ) -> None:
        self.id = reg.id
        self.hook = getattr(reg, "hook", "") or getattr(reg, "stage", "")
        self.policy: str = declared_policy(reg)
        self.recorder = recorder
        self.source = reg.source
        self.timeout = timeout

    def report(
        self,
        who: dict[str, str],
        decision: str,
        reason: str = "",
        changed: tuple[str, ...] = (),
        error_type: str = "",
    ) -> None:
        if decision == "continue":
            self.recorder.count(self.id, decision)
            return
        would_block = decision in BLOCKING or (
            decision in ("error", "timeout") and self.policy == "block"
        )
        self.recorder.record(
            ShadowVerdict(
                registration_id=self.id,
                hook=self.hook,
                decision=decision,
                reason=reason,
                would_block=would_block,
                changed=changed,
                error_type=error_type,
                source=self.source,
                **who,
            )
        )

    def failed(self, who: dict[str, str], exc: BaseException) -> None:
        if isinstance(exc, AbortTurn):
            self.report(who, "abort_turn", exc.reason)
        elif isinstance(exc, HardAbort):
            self.report(who, "hard_abort", exc.reason)
        elif isinstance(exc, TimeoutError):
            # its own deadline (an empty TimeoutError), or one it keeps itself (a
            # process hook's, with a message)
            text = str(exc) or f"timed out after {self.timeout}s"
            self.report(who, "timeout", text, (), type(exc).__name__)
        else:
            text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            self.report(who, "error", text, (), type(exc).__name__)


def _wrap_interceptor(
    reg: Interceptor, recorder: ShadowRecorder, timeout: float
) -> Callable[..., Any]:
    fn = reg.handler
    reporter = _Reporter(reg, recorder, timeout)
    hook = reg.hook
    bounded = timeout != math.inf
    # how a sync handler is called: in its own thread, waited for within the timeout
    run_sync: Callable[..., Any] = (
        functools.partial(Worker(f"interpose-shadow {reg.id}").call, timeout, fn)
        if bounded and not is_async_callable(fn)
        else fn
    )

    if hook == "tool.approve":

        def decide_answer(request: Any, answer: Any) -> None:
            decision, reason = _verdict_of_answer(answer)
            reporter.report(_identity(request), decision, reason)

        if is_async_callable(fn):

            async def shadow_approver(request: Any) -> None:
                try:
                    mine = _copy_input(request)
                    if bounded:
                        with anyio.fail_after(timeout):
                            answer = await fn(mine)
                    else:
                        answer = await fn(mine)
                except Exception as exc:  # AbortTurn and HardAbort included
                    reporter.failed(_identity(request), exc)
                else:
                    decide_answer(request, answer)
                return

            return _named(shadow_approver, fn)

        def shadow_approver_sync(request: Any) -> None:
            try:
                answer = run_sync(_copy_input(request))
                if isawaitable(answer):  # a sync callable handing back an awaitable
                    _close(answer)
                    raise TypeError("a sync approver returned an awaitable")
            except (Exception, AbortTurn, HardAbort) as exc:
                reporter.failed(_identity(request), exc)
            else:
                decide_answer(request, answer)
            return

        return _named(shadow_approver_sync, fn)

    def settle(inp: Any, before: Any, after: Any) -> None:
        decision, reason, changed = _verdict_of_output(hook, before, after)
        if decision == "continue":  # the common case: counted, nothing to build
            reporter.recorder.count(reporter.id, decision)
        else:
            reporter.report(_identity(inp), decision, reason, changed)

    if is_async_callable(fn):

        async def shadow_interceptor(inp: Any, out: Any) -> None:
            try:
                mine, theirs = _copy_input(inp), _copy(out)
                if bounded:
                    with anyio.fail_after(timeout):
                        await fn(mine, theirs)
                else:
                    await fn(mine, theirs)
            except (Exception, AbortTurn, HardAbort) as exc:
                reporter.failed(_identity(inp), exc)
            else:
                settle(inp, out, theirs)

        return _named(shadow_interceptor, fn)

    def shadow_interceptor_sync(inp: Any, out: Any) -> None:
        try:
            theirs = _copy(out)
            answer = run_sync(_copy_input(inp), theirs)
            if answer is not None:
                if isawaitable(answer):
                    _close(answer)
                raise TypeError(
                    "a sync handler returned a value; interceptors mutate their output "
                    "and return None (declare it `async def` if it awaits)"
                )
        except (Exception, AbortTurn, HardAbort) as exc:
            reporter.failed(_identity(inp), exc)
        else:
            settle(inp, out, theirs)

    return _named(shadow_interceptor_sync, fn)


def _close(awaitable: Any) -> None:
    close = getattr(awaitable, "close", None)
    if close is not None:
        close()


def _named(wrapper: Callable[..., Any], fn: Callable[..., Any]) -> Callable[..., Any]:
    name = getattr(fn, "__qualname__", type(fn).__qualname__)
    wrapper.__qualname__ = wrapper.__name__ = f"shadow({name})"
    wrapper.__wrapped__ = fn  # type: ignore[attr-defined]
    return wrapper


# -- middleware -----------------------------------------------------------------------

# what a context holds that is not data: shared as it is with the shadow's copy
_SHARED_SLOTS = frozenset({"turn", "call", "body"})
# where a stage's context keeps what the stage returns
_RESULT_SLOTS = {"llm": "response"}


def _slots(ctx: Any) -> list[str]:
    """The public fields of a context: a struct's (the tool's) or its slots."""
    fields = getattr(type(ctx), "__struct_fields__", None)
    if fields is not None:
        return [name for name in fields if not name.startswith("_")]
    return [
        name
        for cls in type(ctx).__mro__
        for name in getattr(cls, "__slots__", ())
        if not name.startswith("_")
    ]


def _data(ctx: Any) -> dict[str, Any]:
    return {
        name: getattr(ctx, name, None)
        for name in _slots(ctx)
        if name not in _SHARED_SLOTS and name != "state"
    }


def _clone(ctx: Any) -> Any:
    """A copy of the context ``ctx`` whose data the shadow layer may change freely: the
    turn is shared, the operation is not callable from it, the scratch state is its own."""
    twin = copy.copy(ctx) if isinstance(ctx, msgspec.Struct) else object.__new__(type(ctx))
    setattr_ = _setter(ctx)
    setattr_(twin, "_state", None)
    if isinstance(ctx, msgspec.Struct):
        setattr_(twin, "_escaping", None)  # a copy: whatever was passing through is not
    for name in _slots(ctx):
        if name == "state":
            continue
        value = getattr(ctx, name, None)
        if name == "call":
            value = _no_operation
        elif name not in _SHARED_SLOTS:
            value = _copy(value)
        setattr_(twin, name, value)
    return twin


def _no_operation(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("a shadow middleware cannot run the operation itself (use call_next)")


def _refresh(twin: Any, ctx: Any) -> None:
    setattr_ = _setter(ctx)
    for name, value in _data(ctx).items():
        setattr_(twin, name, _copy(value))


def _setter(ctx: Any) -> Callable[[Any, str, Any], None]:
    """The plain attribute store of a context, past its own ``__setattr__`` (the params
    stage's forwards to its output): a struct's (the tool's context) or an object's."""
    return msgspec.Struct.__setattr__ if isinstance(ctx, msgspec.Struct) else object.__setattr__


def _diff(twin: Any, ctx: Any) -> tuple[str, ...]:
    real = _data(ctx)
    return tuple(name for name, value in _data(twin).items() if not _same(value, real[name]))


def _wrap_middleware(
    reg: Middleware, recorder: ShadowRecorder, timeout: float
) -> Callable[..., Awaitable[None]]:
    fn = reg.handler
    reporter = _Reporter(reg, recorder, timeout)
    result_slot = _RESULT_SLOTS.get(reg.stage, "result")
    bounded = timeout != math.inf

    async def shadow_layer(ctx: Any, call_next: Callable[[], Awaitable[None]]) -> None:
        twin = _clone(ctx)
        inner_ran = False
        inner_exc: BaseException | None = None
        rewrote: tuple[str, ...] = ()
        scope = anyio.CancelScope(deadline=anyio.current_time() + timeout if bounded else math.inf)

        async def shadow_next() -> None:
            # the real inner chain runs once, on the real context, never on the clock
            # of the shadow layer; the layer then sees (a copy of) what it left
            nonlocal inner_ran, inner_exc, rewrote
            if not inner_ran and scope.cancel_called:
                # the shadow layer's time ran out just now: let its own cancellation
                # end it here, and run the inner layers after it, outside its scope
                await anyio.lowlevel.checkpoint()
            if not inner_ran:
                inner_ran = True
                rewrote = _diff(twin, ctx)
                remaining = scope.deadline - anyio.current_time()
                scope.deadline = math.inf
                try:
                    await call_next()
                except BaseException as exc:
                    inner_exc = exc
                finally:
                    scope.deadline = anyio.current_time() + remaining
            _refresh(twin, ctx)
            if inner_exc is not None:
                raise inner_exc

        who = _who(ctx)
        failure: BaseException | None = None
        try:
            with scope:
                await fn(twin, shadow_next)
        except BaseException as exc:
            if exc is inner_exc:
                pass  # the inner chain's own exception, back out through the layer
            elif isinstance(exc, anyio.get_cancelled_exc_class()):
                raise  # not ours: the caller is being cancelled
            elif isinstance(exc, Exception | AbortTurn | HardAbort):
                failure = exc
            else:
                raise
        if scope.cancelled_caught:
            failure = TimeoutError()
        if failure is not None:
            reporter.failed(who, failure)
        elif not inner_ran:
            value = getattr(twin, result_slot, None)
            blocked = isinstance(value, ToolResult) and value.status in ("blocked", "denied")
            if blocked:
                assert isinstance(value, ToolResult)
                reason = value.output.get("reason", "") if isinstance(value.output, dict) else ""
                reporter.report(who, "block", str(reason))
            else:
                reporter.report(who, "respond", "", (result_slot,))
        else:
            changed = tuple(dict.fromkeys((*rewrote, *_diff(twin, ctx))))
            reporter.report(who, "modify" if changed else "continue", "", changed)
        if not inner_ran:
            await call_next()
        elif inner_exc is not None:
            raise inner_exc

    return _named(shadow_layer, fn)


def _who(ctx: Any) -> dict[str, str]:
    turn = ctx.turn
    return {
        "turn_id": turn.turn_id if turn is not None else "",
        "agent_id": turn.agent_id if turn is not None else getattr(ctx, "agent_id", ""),
        "session_key": turn.session_key if turn is not None else getattr(ctx, "session_key", ""),
        "tool_name": str(getattr(ctx, "tool_name", None) or getattr(ctx, "command", "")),
        "tool_call_id": getattr(ctx, "call_id", ""),
    }
