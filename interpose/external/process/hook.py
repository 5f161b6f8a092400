"""Process hooks: a long-lived child process that answers hook calls over JSON-RPC 2.0.

``ProcessHook`` is what a user builds: it validates its arguments, registers one
interceptor per intercepted point, maps each reply onto the decision vocabulary and
sends observed events as notifications.  Beneath it: ``rpc.RpcClient`` (requests
multiplexed by id, timeouts), ``child.Supervisor`` (spawn, supervise, restart with
backoff, the process group) and ``wire`` (the JSON-RPC structs of both dialects).
The protocol reference, with every message and the comparison with upstream, is
docs/process-hooks.md.
"""

from __future__ import annotations

import logging
import math
import os
import re
import shutil
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from ...bus.events import Event, encode_event
from ...errors import AbortTurn, ConfigError, HardAbort
from ...pipeline.hooks import ON_ERROR_VALUES, OnError
from ...pipeline.payloads import (
    Approval,
    ApprovalRequest,
    LLMAfterInput,
    LLMAfterOutput,
    LLMBeforeInput,
    LLMRequest,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolCall,
    ToolResult,
)
from ...pipeline.registry import Interceptor
from ...pipeline.shadow import MODES, Mode
from ...pipeline.tools import ToolMatcher, normalize_tool_name
from .picoclaw import EVENT_METHODS, event_names, resolve_observe, uses_runtime_names
from .rpc import RpcClient
from .wire import (
    ACTIONS,
    AFTER_LLM,
    AFTER_TOOL,
    APPROVE_TOOL,
    BEFORE_LLM,
    BEFORE_TOOL,
    INTERCEPT_POINTS,
    AfterLLMParams,
    AfterResult,
    AfterToolParams,
    BeforeLLMParams,
    BeforeToolParams,
    Decision,
    FunctionView,
    HelloParams,
    HookResult,
    LLMResponseView,
    Meta,
    ProcessHookError,
    ProcessHookStats,
    R,
    Reply,
    ResponseView,
    ResultView,
    Scope,
    ToolCallView,
    ToolParams,
    encoder,
)

if TYPE_CHECKING:
    from ...pipeline.pipeline import Pipeline

__all__ = ["ProcessHook"]

_NAME = re.compile(r"[\w.-]+")


class ProcessHook(RpcClient):
    """A hook served by a long-lived child process over JSON-RPC 2.0 (one JSON object per
    line on its stdin/stdout), compatible with PicoClaw's process hooks.

    ``install(pipe)`` registers one interceptor per intercepted point (ids
    ``process:<name>:<point>``), subscribes the child to the observed events and adds the
    hook as a pipeline service: the child starts with ``async with pipe`` and stops when
    it ends.

    Args:
        name: the hook's name (letters, digits, ``_ . -``); it names the interceptors,
            the logger ``interpose.process.<name>`` and every error.
        command: the program and its arguments (not a shell string).
        intercept: hook points served: before_tool, after_tool, approve_tool,
            before_llm, after_llm.
        observe: events sent to the child as notifications: interpose's event kinds,
            PicoClaw's names of them (``agent.tool.exec_start``, ``turn_end``), or
            ``*`` for every event; PicoClaw events interpose does not have are accepted
            and listed in ``never_observed``.
        tools: tool matcher of the tool points (as ``Interceptor.tool_matcher``).
        agents: agent matcher (a regex on agent_id).
        priority: priority of every interceptor (higher runs first).
        on_error: policy when the child fails to answer: "block" (fail closed; on the
            llm points, which cannot block, the error propagates as with "raise"),
            "skip" (fail open) or "raise".
        timeout: seconds to wait for each reply.
        handshake_timeout: seconds to wait for the reply to ``hook.hello``.
        max_line: longest stdout line accepted, in bytes.
        env: variables added to the child's minimal environment (see ``INHERITED_ENV``).
        cwd: the child's working directory.
        restart_backoff: (first, longest) delay in seconds before restarting a child
            that died; it doubles per consecutive restart.
        event_method: ``"hook.event"`` or ``"hook.runtime_event"`` (PicoClaw's current
            method); unset: ``hook.runtime_event`` when ``observe`` is written in
            PicoClaw's runtime names (``agent.*``), else ``hook.event``.
        trusted: a ``respond`` from its before_tool skips the approvers (see
            ``Interceptor.trusted``).
        mode: ``"shadow"``: the child is asked as usual, its answers are recorded
            (``shadow_decision`` events) and not enforced; its failures never affect
            the call.

    Raises:
        ConfigError: (a ``ValueError``) an invalid argument: unknown intercept point or
            event kind, empty command, a command that cannot be found, a non-positive
            timeout, and so on; the message names the hook and the argument.
    """

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        *,
        intercept: Iterable[str] = ("before_tool",),
        observe: Iterable[str] = (),
        tools: ToolMatcher | None = None,
        agents: str | None = None,
        priority: int = 0,
        on_error: OnError = "block",
        timeout: float = 5.0,
        handshake_timeout: float = 5.0,
        max_line: int = 1 << 20,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        restart_backoff: tuple[float, float] = (0.1, 5.0),
        event_method: str | None = None,
        trusted: bool = False,
        mode: Mode = "enforce",
    ) -> None:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigError(
                f"process hook name must be letters, digits, '_', '.' or '-', got {name!r}"
            )
        where = f"process hook {name!r}"
        self.name = name
        if env is not None and not (
            isinstance(env, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        ):
            raise ConfigError(f"{where}: env must map str to str")
        self.env: dict[str, str] = dict(env or {})
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{where}: cwd must be a str, got {cwd!r}")
        self.cwd = cwd
        self.command = _check_command(where, command, self.env, cwd)
        points = _names(intercept, where, "intercept")
        for point in points:
            if point not in INTERCEPT_POINTS:
                raise ConfigError(
                    f"{where}: intercept: unknown hook point {point!r}; "
                    f"expected one of {', '.join(INTERCEPT_POINTS)}"
                )
        names = _names(observe, where, "observe")
        kinds, never = resolve_observe(names, where)
        if not points and not names:
            raise ConfigError(f"{where}: it neither intercepts nor observes anything")
        self.intercept: tuple[str, ...] = points
        #: the interpose event kinds sent to the child
        self.observe: tuple[str, ...] = kinds
        #: names in ``observe`` PicoClaw knows but interpose has no event for: never sent
        self.never_observed: tuple[str, ...] = never
        if event_method is None:
            event_method = "hook.runtime_event" if uses_runtime_names(names) else "hook.event"
        if event_method not in EVENT_METHODS:
            raise ConfigError(
                f"{where}: event_method must be one of {', '.join(EVENT_METHODS)}, "
                f"got {event_method!r}"
            )
        self.event_method: str = event_method
        self._event_method = event_method.encode()
        if not isinstance(trusted, bool):
            raise ConfigError(f"{where}: trusted must be a bool, got {trusted!r}")
        self.trusted = trusted
        if mode not in MODES:
            raise ConfigError(f"{where}: mode must be 'enforce' or 'shadow', got {mode!r}")
        self.mode: Mode = mode
        if on_error not in ON_ERROR_VALUES:
            raise ConfigError(
                f"{where}: on_error must be 'block', 'skip' or 'raise', got {on_error!r}"
            )
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise ConfigError(f"{where}: priority must be an int, got {priority!r}")
        if agents is not None and not isinstance(agents, str):
            raise ConfigError(f"{where}: agents must be a regex string, got {agents!r}")
        self.tools = tools
        self.agents = agents
        self.priority = priority
        self.on_error: OnError = on_error
        self.timeout = _positive(where, "timeout", timeout)
        self.handshake_timeout = _positive(where, "handshake_timeout", handshake_timeout)
        if not isinstance(max_line, int) or isinstance(max_line, bool) or max_line < 64:
            raise ConfigError(
                f"{where}: max_line must be an int of at least 64 bytes, got {max_line!r}"
            )
        self.max_line = max_line
        self.restart_backoff = _backoff(where, restart_backoff)
        self.stats = ProcessHookStats()
        self._hello = HelloParams(name=name, modes=_modes(points, observes=bool(kinds)))
        #: the name the child gave in its handshake reply ("" before the first one)
        self.child_name = ""
        self._log = logging.getLogger(f"interpose.process.{name}")
        super().__init__()

    def __repr__(self) -> str:
        state = "running" if self.running else self._why_down()
        return f"<ProcessHook {self.name!r} {self.command!r} {state}>"

    # -- registration -------------------------------------------------------------

    def interceptors(self) -> list[Interceptor]:
        """The registrations of the intercepted points, ids ``process:<name>:<point>``,
        ``source="process:<name>"``.

        The hook bounds its own waits (its timer task, and the deadline of each write),
        so the registrations have no pipeline timeout (``math.inf``): no cancel scope per
        call.  On approve_tool the pipeline's timeout is ``timeout``, so that a late
        answer is a deny that names the approver (the pipeline's rule for late
        approvers); the hook's own timer backs it up a second later.
        """
        handlers: dict[str, Callable[..., Awaitable[Any]]] = {
            "before_tool": self._before_tool,
            "after_tool": self._after_tool,
            "approve_tool": self._approve_tool,
            "before_llm": self._before_llm,
            "after_llm": self._after_llm,
        }
        regs = []
        for point in self.intercept:
            hook = INTERCEPT_POINTS[point]
            tool_point = hook.startswith("tool.")
            on_error: OnError = self.on_error
            if not tool_point and on_error == "block":
                on_error = "raise"  # the llm points cannot block: fail closed by raising
            regs.append(
                Interceptor(
                    id=f"process:{self.name}:{point}",
                    hook=hook,
                    handler=handlers[point],
                    priority=self.priority,
                    tool_matcher=self.tools if tool_point else None,
                    agent_matcher=self.agents,
                    on_error=on_error,
                    timeout=self.timeout if point == "approve_tool" else math.inf,
                    trusted=self.trusted and point == "before_tool",
                    source=f"process:{self.name}",
                    mode=self.mode,
                )
            )
        return regs

    def install(self, pipe: Pipeline) -> None:
        """Register the interceptors on ``pipe``, subscribe the child to the observed
        events, and add the hook as a service (started and closed with the pipeline).

        Raises:
            RegistrationError: an interceptor was rejected (e.g. a tool matcher that
                matches no known tool, an id already taken); nothing is left registered.
            RuntimeError: the pipeline is already entered.
        """
        added: list[str] = []
        try:
            for reg in self.interceptors():
                pipe.registry.add(reg)
                added.append(reg.id)
            pipe.add_service(self)
        except BaseException:
            for id in added:
                pipe.registry.remove(id)
            raise
        if self.observe:
            pipe.subscribe(self._observe, events=self.observe, name=f"process:{self.name}")

    def _check_action(self, method: str, decision: Decision) -> str:
        action = decision.action or "continue"  # PicoClaw: an empty action continues
        if action not in ACTIONS[method]:
            raise self._fail(method, f"action {action!r} does not apply to {method}")
        if action == "abort_turn":
            raise AbortTurn(decision.reason or f"turn aborted by process hook {self.name!r}")
        if action == "hard_abort":
            raise HardAbort(decision.reason or f"stopped by process hook {self.name!r}")
        return action

    def _decision(self, method: str, reply: Reply) -> tuple[str | None, bool]:
        """(the reply's action after _check_action, or None when it gives none; whether
        it is PicoClaw's flat shape, whose data sent alongside ``continue`` applies too,
        as in PicoClaw)."""
        if reply.decision is not None and reply.action is not None:
            raise self._fail(method, "give decision or action, not both")
        if reply.action is not None:
            return self._check_action(method, Decision(reply.action, reply.reason)), True
        if reply.decision is not None:
            return self._check_action(method, reply.decision), False
        return None, False

    def _one(self, method: str, what: str, first: R | None, second: R | None) -> R | None:
        """Of two fields that say the same thing in the two dialects, the one given."""
        if first is not None and second is not None:
            raise self._fail(method, f"give {what}, not both")
        return first if first is not None else second

    # -- the handlers -----------------------------------------------------------------

    async def _before_tool(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        method = "hook.before_tool"
        meta = Meta(agent_id=inp.agent_id, turn_id=inp.turn_id, session_key=inp.session_key)
        params = BeforeToolParams(
            name=inp.tool_name,
            args=out.args,
            call_id=inp.tool_call_id,
            agent_id=inp.agent_id,
            session_key=inp.session_key,
            turn_id=inp.turn_id,
            raw_name=inp.raw_name,
            tool=inp.tool_name,
            arguments=out.args,
            meta=meta,
        )
        reply = await self._ask(method, params, BEFORE_TOOL)
        action, flat = self._decision(method, reply)
        call = reply.call
        if call is not None and call.tool is not None:
            tool = normalize_tool_name(call.tool)
            if tool not in (inp.tool_name, normalize_tool_name(inp.raw_name)):
                raise self._fail(
                    method,
                    f"call.tool {call.tool!r}: a hook cannot turn a call of "
                    f"{inp.tool_name!r} into a call of another tool",
                )
        args = self._one(
            method, "args or call.arguments", reply.args, None if call is None else call.arguments
        )
        # {"args": ...} alone is the seed's pass-through or rewrite; interpose's nested
        # continue ignores args sent alongside, PicoClaw's flat one applies them
        applies = action not in ("deny_tool", "deny") and (flat or action != "continue")
        if args is not None and applies:
            out.args = args
        if action == "respond":
            result = self._one(method, "hook_result or result", reply.hook_result, reply.result)
            if result is None:
                raise self._fail(method, "action 'respond' needs a hook_result (or result)")
            output, is_error = self._result(method, result)
            out.result = ToolResult(output=output, is_error=bool(is_error), status="responded")
        elif action in ("deny_tool", "deny"):
            out.block = True
            reason = reply.reason if flat else (reply.decision or Decision()).reason
            out.block_reason = reason or f"denied by process hook {self.name!r}"

    async def _after_tool(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        method = "hook.after_tool"
        current = (
            out.result if isinstance(out.result, ToolResult) else ToolResult(output=out.result)
        )
        params = AfterToolParams(
            name=inp.tool_name,
            args=inp.args,
            call_id=inp.tool_call_id,
            agent_id=inp.agent_id,
            session_key=inp.session_key,
            turn_id=inp.turn_id,
            raw_name=inp.raw_name,
            result=ResultView(current.output, current.is_error, current.status),
            duration_ns=inp.duration_ns,
            tool=inp.tool_name,
            arguments=inp.args,
            meta=Meta(agent_id=inp.agent_id, turn_id=inp.turn_id, session_key=inp.session_key),
            duration=inp.duration_ns,
        )
        reply = await self._ask(method, params, AFTER_TOOL)
        action, flat = self._decision(method, reply)
        if action is None or flat:
            action = "modify"  # a result given alongside PicoClaw's continue applies too
        new: HookResult | None = self._one(
            method, "result or hook_result", reply.result, reply.hook_result
        )
        if isinstance(new, AfterResult) and new.result is not None:
            # PicoClaw's whole record: the tool result is inside it
            if new.for_llm is not msgspec.UNSET or new.output is not msgspec.UNSET:
                raise self._fail(method, "give result.for_llm or result.result, not both")
            new = new.result
        if action == "modify" and new is not None:
            output, is_error = self._result(method, new)
            if is_error is msgspec.UNSET:
                is_error = current.is_error
            status = current.status
            if status in ("ok", "error"):
                status = "error" if is_error else "ok"
            out.result = ToolResult(
                output=output, is_error=bool(is_error), status=status, details=dict(current.details)
            )
        if reply.retry:
            out.retry = True

    async def _approve_tool(self, request: ApprovalRequest) -> Approval:
        method = "hook.approve_tool"
        params = ToolParams(
            name=request.tool_name,
            args=request.args,
            call_id=request.tool_call_id,
            agent_id=request.agent_id,
            session_key=request.session_key,
            turn_id=request.turn_id,
            tool=request.tool_name,
            arguments=request.args,
            meta=Meta(
                agent_id=request.agent_id,
                turn_id=request.turn_id,
                session_key=request.session_key,
            ),
        )
        reply = await self._ask(method, params, APPROVE_TOOL)
        if reply.ask:
            return Approval.ask(reply.reason)
        if None not in (reply.allow, reply.approved) and reply.allow != reply.approved:
            raise self._fail(method, "allow and approved disagree")
        allowed = reply.allow if reply.allow is not None else reply.approved
        if allowed:
            return Approval.allow(reply.reason)
        if allowed is None and not reply.reason:
            # as in PicoClaw, a reply without a decision is a deny
            return Approval.deny(f"process hook {self.name!r} gave no decision (allow/approved)")
        return Approval.deny(reply.reason or f"denied by process hook {self.name!r}")

    async def _before_llm(self, inp: LLMBeforeInput, out: LLMRequest) -> None:
        method = "hook.before_llm"
        model = out.params.get("model", "")
        params = BeforeLLMParams(
            agent_id=inp.agent_id,
            session_key=inp.session_key,
            turn_id=inp.turn_id,
            attempt=inp.attempt,
            meta=Meta(agent_id=inp.agent_id, turn_id=inp.turn_id, session_key=inp.session_key),
            model=model if isinstance(model, str) else str(model),
            request=out,
            messages=out.messages,
            tools=out.tools,
            options=out.params,
        )
        reply = await self._ask(method, params, BEFORE_LLM)
        action, flat = self._decision(method, reply)
        if action == "continue" and not flat:
            return
        view = reply.request
        if view is not None:
            if any(
                value is not None
                for value in (reply.system, reply.messages, reply.tools, reply.params)
            ):
                raise self._fail(method, "give request or its fields at the top level, not both")
            system, messages, tools = view.system, view.messages, view.tools
            new_params = view.options
            if view.model and view.model != params.model:
                new_params = {**(out.params if new_params is None else new_params)}
                new_params["model"] = view.model
        else:
            system, messages, tools = reply.system, reply.messages, reply.tools
            new_params = reply.params
        if system is not None:
            out.system = system
        if messages is not None:
            out.messages = messages
        if tools is not None:
            out.tools = tools
        if new_params is not None:
            out.params = new_params
        if reply.headers is not None:
            out.headers = reply.headers

    async def _after_llm(self, inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        method = "hook.after_llm"
        response = out.response
        model = inp.request.params.get("model", "")
        params = AfterLLMParams(
            agent_id=inp.agent_id,
            session_key=inp.session_key,
            turn_id=inp.turn_id,
            attempt=inp.attempt,
            meta=Meta(agent_id=inp.agent_id, turn_id=inp.turn_id, session_key=inp.session_key),
            model=model if isinstance(model, str) else str(model),
            request=inp.request,
            response=ResponseView(
                content=response.content,
                tool_calls=[
                    ToolCallView(
                        id=call.id,
                        name=call.name,
                        args=call.args,
                        function=FunctionView(call.name, encoder.encode(call.args).decode()),
                    )
                    for call in response.tool_calls
                ],
                usage=response.usage,
                stop_reason=response.stop_reason,
                finish_reason=response.stop_reason,
            ),
        )
        reply = await self._ask(method, params, AFTER_LLM)
        action, flat = self._decision(method, reply)
        if action is None or action == "modify" or flat:
            view = reply.response
            if view is not None and view.response is not None:
                view = view.response  # PicoClaw's whole record: the response is inside
            if view is not None:
                if any(
                    value is not None
                    for value in (reply.content, reply.tool_calls, reply.usage, reply.stop_reason)
                ):
                    raise self._fail(
                        method, "give response or its fields at the top level, not both"
                    )
                content, calls, usage = view.content, view.tool_calls, view.usage
                stop = self._stop_reason(method, view, response.stop_reason)
            else:
                content, calls, usage = reply.content, reply.tool_calls, reply.usage
                stop = reply.stop_reason
            if content is not None:
                response.content = content
            if calls is not None:
                response.tool_calls = self._tool_calls(method, calls)
            if usage is not None:
                response.usage = usage
            if stop is not None:
                response.stop_reason = stop
        if reply.retry:
            out.retry = True

    def _stop_reason(self, method: str, view: LLMResponseView, sent: str) -> str | None:
        """The stop reason of a response in a reply: an echoed record carries both
        names (as sent); the one the hook changed wins."""
        changed = {
            value for value in (view.stop_reason, view.finish_reason) if value not in (None, sent)
        }
        if len(changed) > 1:
            raise self._fail(method, "stop_reason and finish_reason disagree")
        if changed:
            return changed.pop()
        return view.stop_reason if view.stop_reason is not None else view.finish_reason

    def _tool_calls(self, method: str, calls: list[dict[str, Any]]) -> list[ToolCall]:
        """Tool calls of a reply, in interpose's shape (``{id, name, args}``) or
        OpenAI's (``{id, type, function: {name, arguments}}``, arguments a JSON string
        or an object)."""
        converted = []
        for i, call in enumerate(calls):
            function = call.get("function")
            try:
                if isinstance(function, dict):
                    arguments = function.get("arguments", {})
                    if isinstance(arguments, str):
                        arguments = msgspec.json.decode(arguments) if arguments.strip() else {}
                    name = function.get("name")
                    call = {"id": call.get("id", ""), "name": name, "args": arguments}
                converted.append(msgspec.convert(call, ToolCall))
            except (msgspec.ValidationError, msgspec.DecodeError) as exc:
                raise self._fail(method, f"tool_calls[{i}]: {exc}") from None
        return converted

    def _result(self, method: str, result: HookResult) -> tuple[Any, bool | msgspec.UnsetType]:
        """(output, is_error) of a hook_result: ``for_llm`` (PicoClaw's name) or ``output``."""
        if result.for_llm is not msgspec.UNSET and result.output is not msgspec.UNSET:
            raise self._fail(method, "give for_llm or output in a result, not both")
        if result.for_llm is not msgspec.UNSET:
            return result.for_llm, result.is_error
        if result.output is not msgspec.UNSET:
            return result.output, result.is_error
        raise self._fail(method, "a result needs for_llm (or output)")

    def _fail(self, method: str, detail: str) -> ProcessHookError:
        """A reply that decodes but makes no sense: counted as a failed call."""
        self.stats.failed += 1
        return self._error(method, f"invalid reply: {detail}")

    # -- observed events ------------------------------------------------------------

    async def _observe(self, event: Event) -> None:
        """Send one event to the child as a notification (no reply), ``hook.event`` or
        ``hook.runtime_event`` (``event_method``), its fields under every name a hook
        of either dialect reads: ``type``/``data`` (interpose's and the seed's),
        ``kind``/``scope``/``payload`` (PicoClaw's runtime event), ``Kind``/``Meta``/
        ``Payload`` (PicoClaw's first hook.event)."""
        child = self._child
        if child is None or not child.ready:
            self.stats.events_dropped += 1
            return
        data = encode_event(event)
        runtime, legacy = event_names(event.kind)
        scope = encoder.encode(
            Scope(agent_id=event.agent_id, session_key=event.session_key, turn_id=event.turn_id)
        )
        meta = encoder.encode(
            Meta(agent_id=event.agent_id, turn_id=event.turn_id, session_key=event.session_key)
        )
        line = (
            b'{"jsonrpc":"2.0","method":"%s","params":{"type":"%s","data":%s,"kind":"%s",'
            b'"scope":%s,"payload":%s,"Kind":"%s","Meta":%s,"Payload":%s}}\n'
            % (
                self._event_method,
                event.kind.encode(),
                data,
                runtime.encode(),
                scope,
                data,
                legacy.encode(),
                meta,
                data,
            )
        )
        try:
            await child.send(line, anyio.current_time() + self.timeout, self.name, "hook.event")
        except (ProcessHookError, TimeoutError):
            self.stats.events_dropped += 1  # the reader sees the exit and restarts it
            return
        self.stats.events_sent += 1


def _names(values: Iterable[str], where: str, what: str) -> tuple[str, ...]:
    if isinstance(values, str):
        raise ConfigError(f"{where}: {what} must be a list of names, not the string {values!r}")
    names: list[str] = []
    for value in values:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {what}: expected names, got {value!r}")
        if value not in names:
            names.append(value)
    return tuple(names)


def _backoff(where: str, restart_backoff: Any) -> tuple[float, float]:
    try:
        low, high = restart_backoff
    except (TypeError, ValueError):
        raise ConfigError(
            f"{where}: restart_backoff must be (first, longest) seconds, got {restart_backoff!r}"
        ) from None
    _positive(where, "restart_backoff[0]", low)
    _positive(where, "restart_backoff[1]", high)
    if low > high:
        raise ConfigError(f"{where}: restart_backoff: first delay {low} exceeds longest {high}")
    return float(low), float(high)


def _modes(points: Sequence[str], *, observes: bool) -> list[str]:
    """What the hook serves, as PicoClaw's hello names it."""
    modes = [] if not observes else ["observe"]
    for served_mode, served in (
        ("llm", ("before_llm", "after_llm")),
        ("tool", ("before_tool", "after_tool")),
        ("approve", ("approve_tool",)),
    ):
        if any(point in points for point in served):
            modes.append(served_mode)
    return modes


def _positive(where: str, what: str, value: object) -> float:
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{where}: {what} must be a positive number of seconds, got {value!r}")
    return float(value)


def _check_command(
    where: str, command: Sequence[str], env: Mapping[str, str] | None, cwd: str | None
) -> tuple[str, ...]:
    """Validate the argv and that its program exists (on the child's PATH, or as a path
    relative to ``cwd``)."""
    if isinstance(command, str | bytes):
        raise ConfigError(
            f"{where}: command must be a list of arguments (the program first), "
            f"not the string {command!r}"
        )
    argv = tuple(command)
    if not argv:
        raise ConfigError(f"{where}: command is empty")
    if not all(isinstance(arg, str) for arg in argv):
        raise ConfigError(f"{where}: command arguments must be strings, got {argv!r}")
    program = argv[0]
    if os.sep in program or (os.altsep is not None and os.altsep in program):
        path = os.path.join(cwd or os.curdir, program)  # as the OS will resolve it
        if not os.path.isfile(path):
            raise ConfigError(f"{where}: command {program!r} not found ({path} is not a file)")
        if not os.access(path, os.X_OK):
            raise ConfigError(f"{where}: command {program!r} is not executable ({path})")
    else:
        search = (env or {}).get("PATH") or os.environ.get("PATH") or os.defpath
        if shutil.which(program, path=search) is None:
            raise ConfigError(f"{where}: command {program!r} not found on PATH ({search})")
    return argv
