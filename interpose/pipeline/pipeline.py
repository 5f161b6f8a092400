"""The Pipeline: registration API, compiled-chain cache, bus lifecycle, failure policies.

A tool call goes from ``Pipeline.call_tool`` / ``Turn.call_tool`` to
``tool_stage.run_tool``, where its whole path reads top to bottom.
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from inspect import isawaitable
from types import CoroutineType, TracebackType
from typing import TYPE_CHECKING, Any, TypeVar, overload

import anyio
import anyio.abc

from ..bus import events as ev
from ..bus.host import Service
from ..bus.memory import InMemoryBus, Overflow, Subscription
from ..errors import AbortTurn, HardAbort, MiddlewareError, RegistrationError
from . import defaults
from .chain import Step, callables, compile_steps
from .context import ToolContext, TurnContext
from .failures import PipelineStats
from .hooks import HOOKS, STAGES, OnError
from .onion import build_onion
from .payloads import (
    Approval,
    ApprovalRequest,
    ToolBeforeInput,
    ToolResult,
    error_result,
    refusal,
)
from .redaction import Redactor
from .registry import Interceptor, Middleware, Registry
from .runtime import Runtime, event_loop_running
from .shadow import Mode, ShadowVerdict
from .tool_stage import ToolCallable, full_path, quiet_path, run_tool
from .tools import ToolMatcher, normalize_tool_name
from .tracing import (
    Tracing,
    TracingLevel,
    instrument,
)
from .turn import Turn

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

__all__ = ["HumanApproval", "Pipeline", "PipelineStats", "Service"]

log = logging.getLogger("interpose")

F = TypeVar("F", bound=Callable[..., Any])
HumanApproval = Callable[[ApprovalRequest, str], "bool | Approval | Awaitable[bool | Approval]"]
_ABORTS = (AbortTurn, HardAbort)
_CACHE_LIMIT = 4096


class Pipeline:
    """A stack of interceptors and middleware between an agent and what it touches.

    Args:
        registry: share a registry (e.g. ``initialize_global_interceptors()``); default
            is a fresh one.
        builtins: register the built-in guards in a fresh registry.
        interceptor_timeout: default timeout (s) of async interceptors.
        approval_timeout: default timeout (s) of approvers and of the human approval;
            past it, the call is denied.
        observer_timeout: default timeout (s) of async observers.
        drain_grace: how long (s) a *cancelled* exit from ``async with pipe`` (a
            deadline, a cancelled task) still delivers the events already published,
            shielded from the cancellation; what is left after it is dropped (counted
            and logged).  An exit that is not cancelled waits until the bus is quiet.
            ``math.inf``: always deliver everything; 0: deliver nothing more.
        max_retries: how often a ``retry`` from an after-hook may re-run the operation.
        human_approval: ``(request, reason) -> bool | Approval``, sync or async,
            answers ``Approval.ask``; without one, or when it fails, ``ask`` means deny.
        tracing: "off" | "tool" (a span per turn, LLM call and tool call) |
            "interceptor" (and one per interceptor and middleware that ran).  Spans are
            made only while a real tracer provider is installed: the global one, or
            ``tracer_provider``.
        tracer_provider: trace to this provider instead of the global one.
        trace_content: record tool arguments and results in spans, redacted.
        redactor: the redaction rules for recorded content (default ``Redactor()``).
        debug: log the full traceback of every handler failure (as does the
            environment variable ``INTERPOSE_DEBUG=1``); the one warning line of a
            failure names the handler, its ``file:line`` and where it raised either way.
    """

    def __init__(
        self,
        registry: Registry | None = None,
        *,
        builtins: bool = True,
        interceptor_timeout: float | None = 5.0,
        approval_timeout: float | None = 60.0,
        observer_timeout: float | None = 0.5,
        drain_grace: float = 5.0,
        max_retries: int = 0,
        human_approval: HumanApproval | None = None,
        tracing: TracingLevel = "tool",
        tracer_provider: TracerProvider | None = None,
        trace_content: bool = False,
        redactor: Redactor | None = None,
        debug: bool = False,
    ) -> None:
        self._trace = Tracing(tracing, tracer_provider, trace_content, redactor or Redactor())
        if not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be an int >= 0, got {max_retries!r}")
        for name, value in (
            ("interceptor_timeout", interceptor_timeout),
            ("approval_timeout", approval_timeout),
            ("observer_timeout", observer_timeout),
        ):
            if value is not None and (not isinstance(value, int | float) or value <= 0):
                raise ValueError(f"{name} must be a positive number of seconds or None")
        if not isinstance(drain_grace, int | float) or not drain_grace >= 0:
            raise ValueError(f"drain_grace must be a number of seconds >= 0, got {drain_grace!r}")
        if registry is None:
            registry = Registry()
            if builtins:
                # installed by the package (interpose/__init__.py): the builtins are
                # a layer above this one
                defaults.register_builtins(registry)
        self.registry = registry
        self.interceptor_timeout = interceptor_timeout
        self.approval_timeout = approval_timeout
        self.observer_timeout = observer_timeout
        self.drain_grace = drain_grace
        self.max_retries = max_retries
        self.human_approval = human_approval
        self.bus = InMemoryBus(observer_timeout=observer_timeout)
        self._services: list[Service] = []
        # normalized tool name -> what runs it when call_tool gets no call=
        self.executors: dict[str, ToolCallable] = {}
        # what the stages read: the bus, the failure policy and counters, the caches
        self.runtime = Runtime(self, self.bus, self._trace, self._services)
        self.runtime.failures.debug = debug
        self.bus.failure_hook = self.runtime.failures.observer_failed
        # agent id -> tool name as called -> its compiled chain (no key tuple per call)
        self._tool_chains = self.runtime.chains
        # keyed by (stage or hook, agent id, the tracer when interceptors get spans)
        self._stage_apps: dict[
            tuple[str, str, Tracer | None], tuple[int, Callable[[Any], Awaitable[None]]]
        ] = {}
        self._hook_steps: dict[
            tuple[str, str, Tracer | None],
            tuple[int, tuple[Callable[..., Any], ...], tuple[Step, ...]],
        ] = {}
        self._prefix = secrets.token_hex(3)
        self._turn_ids = itertools.count(1)
        self._seq = self.runtime.seq  # the events' sequence numbers
        self._tg: anyio.abc.TaskGroup | None = None

    def __repr__(self) -> str:
        return f"<Pipeline {len(self.registry)} registrations, tracing={self.tracing!r}>"

    @property
    def tracing(self) -> TracingLevel:
        """The tracing level: "off" | "tool" | "interceptor" (may be changed)."""
        return self._trace.level

    @tracing.setter
    def tracing(self, level: TracingLevel) -> None:
        self._trace.level = level  # raises ValueError for an unknown level

    @property
    def stats(self) -> PipelineStats:
        """Failure counters of the handlers and observers (per id, and timeouts)."""
        return self.runtime.failures.stats

    @property
    def debug(self) -> bool:
        """Whether every handler failure is logged with its traceback."""
        return self.runtime.failures.debug

    @debug.setter
    def debug(self, value: bool) -> None:
        self.runtime.failures.debug = value

    @property
    def redactor(self) -> Redactor:
        """The redaction rules applied to content recorded in spans."""
        return self._trace.redactor

    @property
    def trace_content(self) -> bool:
        """Whether spans record messages, tool arguments and results
        (``Pipeline(trace_content=True)``); an adapter then hands the llm stage the
        whole conversation even when no handler reads it."""
        return self._trace.content

    # -- registration -------------------------------------------------------------

    def register_tool(self, name: str) -> str:
        """Add an application tool name to the known set (so matchers may name it)."""
        return self.registry.register_tool(name)

    def add(self, reg: Interceptor | Middleware) -> Interceptor | Middleware:
        """Shorthand for ``pipe.registry.add(reg)``."""
        return self.registry.add(reg)

    def intercept(
        self,
        hook: str,
        *,
        tools: ToolMatcher | None = None,
        agents: str | re.Pattern[str] | None = None,
        priority: int = 0,
        id: str | None = None,
        on_error: OnError | None = None,
        timeout: float | None = None,
        trusted: bool = False,
        mode: Mode = "enforce",
    ) -> Callable[[F], F]:
        """Register the decorated ``handler(input, output)`` on ``hook``; with
        ``mode="shadow"`` its decisions are recorded, not enforced."""
        if hook not in HOOKS:
            raise RegistrationError(f"unknown hook {hook!r}; hooks: {', '.join(HOOKS)}")

        def decorate(fn: F) -> F:
            self.registry.add(
                Interceptor(
                    id=id or self.registry.unique_id(_qualname(fn)),
                    hook=hook,
                    handler=fn,
                    priority=priority,
                    tool_matcher=tools,
                    agent_matcher=agents,
                    on_error=on_error,
                    timeout=timeout,
                    trusted=trusted,
                    mode=mode,
                )
            )
            return fn

        return decorate

    def middleware(
        self,
        stage: str,
        *,
        tools: ToolMatcher | None = None,
        agents: str | re.Pattern[str] | None = None,
        priority: int = 0,
        id: str | None = None,
        on_error: OnError | None = None,
        timeout: float | None = None,
        mode: Mode = "enforce",
    ) -> Callable[[F], F]:
        """Register the decorated ``async mw(ctx, call_next)`` as a layer of ``stage``;
        with ``mode="shadow"`` what it would change is recorded, not applied."""
        if stage not in STAGES:
            raise RegistrationError(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")

        def decorate(fn: F) -> F:
            self.registry.add(
                Middleware(
                    id=id or self.registry.unique_id(_qualname(fn)),
                    stage=stage,
                    handler=fn,
                    priority=priority,
                    tool_matcher=tools,
                    agent_matcher=agents,
                    on_error=on_error,
                    timeout=timeout,
                    mode=mode,
                )
            )
            return fn

        return decorate

    @overload
    def approver(self, fn: F, /) -> F: ...
    @overload
    def approver(
        self,
        fn: None = None,
        /,
        *,
        tools: ToolMatcher | None = None,
        agents: str | re.Pattern[str] | None = None,
        priority: int = 0,
        id: str | None = None,
        timeout: float | None = None,
        mode: Mode = "enforce",
    ) -> Callable[[F], F]: ...
    def approver(
        self,
        fn: F | None = None,
        /,
        *,
        tools: ToolMatcher | None = None,
        agents: str | re.Pattern[str] | None = None,
        priority: int = 0,
        id: str | None = None,
        timeout: float | None = None,
        mode: Mode = "enforce",
    ) -> F | Callable[[F], F]:
        """Register the decorated ``approver(request) -> Approval | bool | None`` on
        ``tool.approve``.  Usable bare (``@pipe.approver``) or with arguments; with
        ``mode="shadow"`` its answers are recorded, never enforced (an ``ask`` does not
        reach the human-approval handler)."""

        def decorate(handler: F) -> F:
            self.registry.add(
                Interceptor(
                    id=id or self.registry.unique_id(_qualname(handler)),
                    hook="tool.approve",
                    handler=handler,
                    priority=priority,
                    tool_matcher=tools,
                    agent_matcher=agents,
                    timeout=timeout,
                    mode=mode,
                )
            )
            return handler

        return decorate if fn is None else decorate(fn)

    def subscribe(
        self,
        observer: Callable[[Any], Any],
        *,
        events: Iterable[str] | None = None,
        buffer: int = 1024,
        overflow: Overflow = "block",
        timeout: float | None = None,
        name: str | None = None,
    ) -> Subscription:
        """Subscribe ``observer`` (sync or async, takes an event) to the bus.

        ``name`` labels its statistics (default: the observer's qualified name).

        Raises:
            ValueError: unknown event kind, non-positive buffer or unknown overflow.
        """
        return self.bus.subscribe(
            observer, events=events, buffer=buffer, overflow=overflow, timeout=timeout, name=name
        )

    # -- lifecycle ----------------------------------------------------------------

    def add_service(self, service: Service) -> None:
        """Run ``service`` while the pipeline is entered: ``await service.start(tg)`` on
        ``async with pipe`` (in the order added, with the pipeline's task group for its
        background tasks) and ``await service.aclose()`` on exit (in reverse order,
        after the bus has drained).  Process hooks use this for their child processes.

        Raises:
            RuntimeError: the pipeline is already entered.
        """
        if self._tg is not None:
            raise RuntimeError("add services before entering the pipeline (`async with pipe`)")
        self._services.append(service)

    async def __aenter__(self) -> Pipeline:
        if self._tg is not None:
            raise RuntimeError("this pipeline is already entered")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        self.runtime.entered = True
        self.bus.start(tg)
        self.registry.shadow.attach(self._prefix, self._shadow_decided)
        started: list[Service] = []
        try:
            for service in self._services:
                await service.start(tg)
                started.append(service)
        except BaseException:
            await self._shutdown(tg, started)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        tg = self._tg
        assert tg is not None
        cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
        await self._shutdown(tg, self._services, drain=True, cancelled=cancelled)

    async def _shutdown(
        self,
        tg: anyio.abc.TaskGroup,
        services: list[Service],
        *,
        drain: bool = False,
        cancelled: bool = False,
    ) -> None:
        """Drain the bus (``drain``), close the services, stop the observers, leave
        ``tg``.  Whatever happens on the way (a cancellation, a service that fails to
        close), every service is closed and the pipeline can be entered again.

        Raises:
            The cancellation that arrived, or the first error of a service's aclose().
        """
        try:
            if drain:
                await self._drain(cancelled)
        finally:
            try:
                await _close_all(services)
            finally:
                self.registry.shadow.detach(self._shadow_decided)
                self._tg = None
                self.runtime.entered = False
                if drain and not self.bus.idle:
                    # what a service reported while closing (a Redis publisher's lost
                    # events) still reaches the other observers, within the grace
                    with anyio.move_on_after(self.drain_grace, shield=True):
                        await self.bus.drain()
                self.bus.close()
                if not self.bus.idle:
                    # the grace ran out, or the drain was skipped: stop the observers
                    # where they are (what was left is counted as dropped)
                    self.bus.abort()
                # The body's exception (if any) propagates by itself after we return,
                # unwrapped: the task group holds observer consumers, which never raise,
                # and services' tasks, which aclose() has ended.
                await tg.__aexit__(None, None, None)

    async def _drain(self, cancelled: bool) -> None:
        """Wait until the bus is quiet.  Once cancelled (before or while waiting), keep
        waiting shielded for at most ``drain_grace`` seconds, then let the cancellation
        through: events already published are not lost to a deadline around the
        pipeline, and a stuck observer cannot hold the exit for longer than that."""
        if not cancelled:
            try:
                await self.bus.drain()
                return
            except anyio.get_cancelled_exc_class():
                with anyio.move_on_after(self.drain_grace, shield=True):
                    await self.bus.drain()
                raise
        with anyio.move_on_after(self.drain_grace, shield=True):
            await self.bus.drain()

    # -- turns --------------------------------------------------------------------

    def turn(
        self,
        *,
        agent_id: str = "main",
        session_key: str = "",
        provider: str = "",
        model: str = "",
        turn_id: str | None = None,
    ) -> Turn:
        """A turn: ``async with pipe.turn(...) as turn:`` then ``turn.message/params/
        call_llm/call_tool/run_command/compact``."""
        return Turn(
            self,
            turn_id=turn_id or f"{self._prefix}-{next(self._turn_ids)}",
            agent_id=agent_id,
            session_key=session_key,
            provider=provider,
            model=model,
        )

    async def run_turn(
        self,
        body: Callable[[Turn], Awaitable[Any]],
        *,
        agent_id: str = "main",
        session_key: str = "",
        provider: str = "",
        model: str = "",
    ) -> Any:
        """Run ``await body(turn)`` as a turn wrapped by the ``turn``-stage middleware.

        Returns the body's return value, or None when the turn was aborted.
        """
        turn = self.turn(agent_id=agent_id, session_key=session_key, provider=provider, model=model)
        ctx = TurnContext(turn, body)
        async with turn:
            await self.stage_app("turn", agent_id, _turn_core)(ctx)
        return None if turn.aborted else ctx.result

    # -- the tool stage -------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        args: dict[str, Any],
        *,
        call: ToolCallable | None = None,
        call_id: str | None = None,
        agent_id: str = "main",
        session_key: str = "",
    ) -> ToolResult:
        """Run one tool call through the tool stage as a one-call turn.

        ``call`` is a sync or async callable taking the (possibly rewritten) args; its
        return value becomes ``ToolResult.output``; an exception becomes an error result.
        Without it, the tool's built-in executor runs (``executors``: ``exec`` in the
        sandbox when one is configured, docs/sandbox.md).  An ``AbortTurn`` becomes a
        ``status="aborted"`` result; ``HardAbort`` propagates.

        Raises:
            TypeError: ``args`` is not a dict, ``call`` is not callable, or there is no
                ``call`` and no executor for the tool.
            RuntimeError: the pipeline has subscribers but is not entered.
        """
        if not self.bus.wanted:
            # nobody listens: no turn object, no events
            chains = self._tool_chains.get(agent_id)
            chain = chains.get(name) if chains is not None else None
            try:
                if (
                    chain is not None
                    and chain.version == self.registry.version
                    and type(args) is dict
                    and self._trace.tracer() is None
                    and callable(call)  # None (the built-in executor) is not
                ):
                    # the two cheapest paths of run_tool without its coroutine frame
                    # and its lookups: nothing registered for this tool (inlined: the
                    # "empty pipeline" row, no record built), or only sync tool.before
                    # and tool.after handlers (the quiet path)
                    if chain.empty:
                        try:
                            value = call(args)
                            if type(value) is CoroutineType or isawaitable(value):
                                value = await value
                        except _ABORTS:
                            raise
                        except Exception as exc:
                            return error_result(exc)
                        return ToolResult(output=value)
                    rt = self.runtime
                    if chain.quiet:
                        inp = ToolBeforeInput(
                            tool_name=chain.tool_name,
                            turn_id="",
                            raw_name=name,
                            tool_call_id=f"call-{next(rt.call_ids)}"
                            if call_id is None
                            else call_id,
                            agent_id=agent_id,
                            session_key=session_key,
                        )
                        return await quiet_path(rt, chain, inp, args, call)
                    # the middleware onion, or the full path, without run_tool's lookups
                    rt.check_running()  # services need the pipeline entered
                    ctx = ToolContext(
                        None,
                        chain.tool_name,
                        name,
                        call_id or f"call-{next(rt.call_ids)}",
                        args,
                        call,
                        agent_id,
                        session_key,
                    )
                    if chain.app is None:
                        return await full_path(rt, chain, ctx)
                    await chain.app(ctx)
                    if ctx.result is None:  # a plain layer returned without one
                        raise MiddlewareError("tool")
                    return ctx.result
                call = self.executor(name) if call is None else call
                ctx = ToolContext(None, "", name, call_id or "", args, call, agent_id, session_key)
                return await run_tool(self.runtime, ctx)
            except AbortTurn as exc:
                return refusal(
                    "aborted", normalize_tool_name(name), exc.reason, decided_by=exc.source
                )
        call = self.executor(name) if call is None else call
        turn = self.turn(agent_id=agent_id, session_key=session_key)
        async with turn:
            result = await turn.call_tool(name, args, call=call, call_id=call_id)
        if turn.aborted:
            return refusal("aborted", normalize_tool_name(name), turn.abort_reason)
        return result

    def call_tool_sync(
        self,
        name: str,
        args: dict[str, Any],
        *,
        call: ToolCallable | None = None,
        call_id: str | None = None,
        agent_id: str = "main",
        session_key: str = "",
    ) -> ToolResult:
        """``call_tool`` for sync code: runs the call in a new event loop
        (``anyio.run``, asyncio) and returns its result.  The parameters and the result
        are ``call_tool``'s; ``call`` may be sync or async.

        A pipeline that must be entered (it has subscribers or services) is entered for
        this one call and left after it, as ``async with pipe:`` would: its observers
        get the call's events and are drained before this returns, its services
        (process hooks...) are started and closed around the call.

        Raises:
            RuntimeError: an event loop runs in this thread (``await
                pipe.call_tool(...)`` there), or the pipeline, with subscribers or
                services, is entered in another thread's event loop.
            TypeError: as ``call_tool``.
        """
        if event_loop_running():
            raise RuntimeError(
                "call_tool_sync() cannot run inside a running event loop: use "
                "`await pipe.call_tool(...)` there"
            )
        one_call = functools.partial(
            self.call_tool,
            name,
            args,
            call=call,
            call_id=call_id,
            agent_id=agent_id,
            session_key=session_key,
        )
        if not (self.bus.subscriptions or self._services):
            return anyio.run(one_call)
        if self._tg is not None:
            raise RuntimeError(
                "this pipeline is entered in an event loop of another thread: call it "
                "there (`await pipe.call_tool(...)`), or from that loop's worker threads "
                "with `anyio.from_thread.run(pipe.call_tool, ...)`"
            )

        async def entered() -> ToolResult:
            async with self:
                return await one_call()

        return anyio.run(entered)

    def executor(self, name: str) -> ToolCallable:
        """The built-in executor of tool ``name``; TypeError when there is none."""
        found = self.executors.get(normalize_tool_name(name))
        if found is None:
            raise TypeError(
                f"call_tool({name!r}) needs call=: no executor runs it (docs/sandbox.md)"
            )
        return found

    def stage_app(
        self, stage: str, agent_id: str, core: Callable[[Any], Awaitable[None]]
    ) -> Callable[[Any], Awaitable[None]]:
        """The ``stage`` middleware onion for ``agent_id`` around ``core`` (one fixed
        function per stage), compiled once per registry version (and interceptor tracer)."""
        spans = self._trace.interceptor_tracer()
        key = (stage, agent_id, spans)
        cached = self._stage_apps.get(key)
        if cached is None or cached[0] != self.registry.version:
            _, layers = compile_steps(
                self.registry.entries(stage, agent=agent_id), None, wrap=False
            )
            if spans is not None:
                layers = tuple(instrument(s, spans, layer=True) for s in layers)
            failed = self.runtime.failures.layer_failed
            app = build_onion(layers, core, failed) if layers else core
            cached = (self.registry.version, app)
            if len(self._stage_apps) >= _CACHE_LIMIT:
                self._stage_apps.clear()
            self._stage_apps[key] = cached
        return cached[1]

    def hook_steps(
        self, hook: str, agent_id: str
    ) -> tuple[tuple[Callable[..., Any], ...], tuple[Step, ...]]:
        """Compiled (callables, steps) of a non-tool hook for ``agent_id``, cached."""
        spans = self._trace.interceptor_tracer()
        key = (hook, agent_id, spans)
        cached = self._hook_steps.get(key)
        if cached is None or cached[0] != self.registry.version:
            fns, steps = compile_steps(
                self.registry.entries(hook, agent=agent_id), self.interceptor_timeout
            )
            if spans is not None:
                steps = tuple(instrument(s, spans) for s in steps)
                fns = callables(steps)
            cached = (self.registry.version, fns, steps)
            if len(self._hook_steps) >= _CACHE_LIMIT:
                self._hook_steps.clear()
            self._hook_steps[key] = cached
        return cached[1], cached[2]

    # -- events -------------------------------------------------------------------

    def _shadow_decided(self, verdict: ShadowVerdict) -> None:
        """A shadow registration decided something (see ``interpose.pipeline.shadow``):
        publish it, at once (a sync handler reports from a sync call)."""
        if "shadow_decision" in self.bus.wanted:
            self.bus.publish_now(
                ev.ShadowDecision(
                    ts=time.time_ns(),
                    seq=next(self._seq),
                    turn_id=verdict.turn_id,
                    agent_id=verdict.agent_id,
                    session_key=verdict.session_key,
                    hook=verdict.hook,
                    interceptor_id=verdict.registration_id,
                    decision=verdict.decision,
                    reason=verdict.reason,
                    would_block=verdict.would_block,
                    changed=verdict.changed,
                    error_type=verdict.error_type,
                    tool_name=verdict.tool_name,
                    tool_call_id=verdict.tool_call_id,
                    source=verdict.source,
                )
            )

    async def emit(
        self,
        cls: type[Any],
        turn_id: str,
        agent_id: str,
        session_key: str,
        **fields: Any,
    ) -> None:
        """Build and publish one event; callers check ``kind in bus.wanted`` first, so
        nothing is built when nobody listens.  (The tool events, one per call, are built
        in place instead: passing ``**fields`` through costs ~0.8 us an event.)"""
        await self.bus.publish(
            cls(
                ts=time.time_ns(),
                seq=next(self._seq),
                turn_id=turn_id,
                agent_id=agent_id,
                session_key=session_key,
                **fields,
            )
        )

    # -- from a config file -------------------------------------------------------------

    @classmethod
    def from_config(cls, path: str | os.PathLike[str]) -> Pipeline:
        """Build the pipeline an ``interpose.toml`` (or ``.json``) file describes; relative
        commands and paths in it resolve against the file's directory.  See
        ``interpose.config`` and docs/config.md.  A Claude Code settings file
        (``.claude/settings.json``) is accepted too: its hooks run behind the default
        guards (docs/command-hooks.md).

        When the file configures observers or process hooks, enter the pipeline
        (``async with pipe:``) before calling it.

        Raises:
            ConfigError: the file is invalid; the message names the file, the field and
                what was expected (``interpose.toml: hooks.processes.gate.priority:
                expected int, got str``).
        """
        # the config layer, above this one, installs the builder (interpose/__init__.py)
        pipe: Pipeline = defaults.build_from_config(path)
        return pipe


# -- helpers ------------------------------------------------------------------------------


async def _close_all(services: list[Service]) -> None:
    """``aclose()`` every service, in reverse order, each shielded from cancellation
    (they bound their own time): one that fails does not keep the others running.

    Raises:
        The first failure, once all were closed (the others are logged).
    """
    first: BaseException | None = None
    for service in reversed(services):
        try:
            with anyio.CancelScope(shield=True):
                await service.aclose()
        except BaseException as exc:
            if first is None:
                first = exc
            else:
                log.warning("closing %r failed too: %s: %s", service, type(exc).__name__, exc)
    if first is not None:
        raise first


def _qualname(fn: object) -> str:
    return getattr(fn, "__qualname__", None) or type(fn).__qualname__


async def _turn_core(ctx: TurnContext) -> None:
    assert ctx.turn is not None
    ctx.result = await ctx.body(ctx.turn)
