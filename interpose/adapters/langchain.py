"""The LangChain v1 adapter: one ``AgentMiddleware`` that runs an agent through interpose.

::

    from langchain.agents import create_agent
    from interpose.adapters.langchain import InterposeMiddleware

    agent = create_agent(model, tools, middleware=[InterposeMiddleware(pipe)])

What each part of a ``create_agent`` run becomes (docs/adapters.md has the whole table):

- one invocation (``agent.invoke`` / ``agent.ainvoke``) is one interpose turn, its
  ``session_key`` the LangGraph ``thread_id`` when there is one; ``before_agent`` opens
  it and runs ``message.before`` (on the last human message) and ``params.before``;
  ``after_agent`` ends it;
- every model call (``wrap_model_call``) runs the llm stage: ``llm.before`` may rewrite
  the system prompt, the messages, the tools and the settings, ``llm.after`` the
  response, a retry calls the model again, an llm middleware that sets ``ctx.response``
  answers without calling it;
- every tool call (``wrap_tool_call``) runs the tool stage: rewritten arguments reach the
  tool, a block or a deny is an error ``ToolMessage`` the model reads, a respond is a
  ``ToolMessage`` without running the tool, ``tool.after`` may rewrite the result;
  what hooks of a Claude Code settings file said for the user (``systemMessage``) is
  in the ToolMessage's ``additional_kwargs["interpose_system_messages"]``;
- ``AbortTurn`` in a tool call sets a private state flag: the next model call answers
  "[turn aborted: <reason>]" without calling the model, so the invocation ends after the
  batch of tool calls in flight (the siblings that had not started yet are answered
  "aborted" without running); in a model call it gives that answer at once; in
  ``message.before``/``params.before`` it jumps to the end before any model call;
  ``HardAbort`` leaves ``invoke``/``ainvoke`` as itself;
- ``Approval.ask`` goes to the pipeline's ``human_approval``, or (``hitl="interrupt"``)
  pauses the graph with LangGraph's ``interrupt()``; ``Command(resume=...)`` answers it.

The turn of an invocation outlives the graph nodes it spans (each node runs in its own
task and context), so it lives in a small host task that enters ``async with turn`` and
waits for the end; every stage call makes the turn's ``invoke_agent`` span current, so
one trace holds the agent, its model calls and its tool calls.  The synchronous hooks
run the same coroutines on the middleware's own event loop thread (started on first use,
stopped by ``close()``), where the pipeline is entered; the model and the tools still run
in worker threads with the caller's context.

The conversions between LangChain's messages and interpose's payloads live in
``_langchain_messages.py``.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from inspect import isawaitable
from typing import Annotated, Any, Literal, TypeVar

import anyio.to_thread
from langchain.agents.middleware import AgentMiddleware, AgentState, hook_config
from langchain.agents.middleware.types import (
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    PrivateStateAttr,
)
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolMessage,
)
from langgraph.config import get_config
from langgraph.errors import GraphBubbleUp
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command, interrupt
from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span
from typing_extensions import NotRequired

from ..errors import AbortTurn, HardAbort
from ..pipeline.payloads import (
    Approval,
    ApprovalRequest,
    LLMRequest,
    LLMResponse,
    ParamsBeforeOutput,
    refusal,
)
from ..pipeline.pipeline import HumanApproval, Pipeline
from ..pipeline.tools import normalize_tool_name
from ..pipeline.turn import Turn
from ._langchain_messages import (
    apply_request,
    copy_payload,
    name_of_model,
    to_llm_request,
    to_llm_response,
    to_model_response,
    tool_content,
    tool_message,
    with_hook_messages,
)

__all__ = ["InterposeMiddleware", "InterposeState"]

log = logging.getLogger("interpose")
T = TypeVar("T")
Hitl = Literal["handler", "interrupt"]
_RUN_KEY = "interpose_run"
_ABORT_KEY = "interpose_abort"
#: how many invocations may be open at once before the oldest is given up as abandoned
#: (an invocation that raised somewhere the middleware does not see never ends)
_MAX_OPEN_RUNS = 1024

# set while a tool call of a ``hitl="interrupt"`` middleware runs its tool stage: the
# pipeline's human-approval handler then pauses the graph instead of asking anyone
_INTERRUPTING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "interpose_langchain_interrupting", default=False
)


class InterposeState(AgentState[Any]):
    """The agent state with the adapter's private keys: the invocation's run key (which
    interpose turn it belongs to) and the abort flag (``AbortTurn``'s reason)."""

    interpose_run: NotRequired[Annotated[str | None, PrivateStateAttr]]
    interpose_abort: NotRequired[Annotated[str | None, PrivateStateAttr]]


class _Bubble(BaseException):
    """Carries LangGraph control flow (``interrupt()``'s ``GraphInterrupt``, a
    ``GraphBubbleUp``) through the pipeline, whose error policies would otherwise turn
    that exception into an error result; unwrapped by the adapter."""

    def __init__(self, exc: GraphBubbleUp) -> None:
        super().__init__(exc)
        self.exc = exc


class _Run:
    """One invocation: its turn, held open by a host task until the invocation ends."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.span: Span | None = None
        self.abort: AbortTurn | None = None
        self.params: ParamsBeforeOutput | None = None
        self.ready = asyncio.Event()
        self.start_error: BaseException | None = None
        self._done = asyncio.Event()
        self._exc: BaseException | None = None
        self._host: asyncio.Task[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    async def start(self) -> None:
        """Enter the turn in the host task; returns when it is open.

        Raises:
            RuntimeError: the pipeline has observers or services but is not entered.
        """
        # a plain asyncio task: the turn must be entered and left in one task, and no
        # scope of ours encloses the invocation (LangGraph runs on asyncio only)
        self.loop = asyncio.get_running_loop()
        self._host = self.loop.create_task(self._hold())
        await self.ready.wait()
        if self.start_error is not None:
            raise self.start_error

    async def _hold(self) -> None:
        try:
            async with self.turn:
                span = otel_trace.get_current_span()
                self.span = span if span.get_span_context().is_valid else None
                self.ready.set()
                await self._done.wait()
                if self._exc is not None:
                    raise self._exc
        except HardAbort:
            pass  # the caller raises it; the turn has published turn_aborted
        except Exception as exc:
            if not self.ready.is_set():
                self.start_error = exc
        finally:
            self.ready.set()

    async def finish(self, exc: BaseException | None = None) -> None:
        """End the turn (``exc``: AbortTurn, HardAbort or the failure that ended the
        invocation); waits until turn_ended / turn_aborted is published."""
        if self._done.is_set():
            return
        self._exc = None if exc is None else _twin(exc)
        self._done.set()
        if self._host is not None:
            await self._host

    def current(self) -> AbstractContextManager[object]:
        """A context manager making the turn's ``invoke_agent`` span current."""
        if self.span is None:
            return nullcontext()
        return otel_trace.use_span(
            self.span, end_on_exit=False, record_exception=False, set_status_on_exception=False
        )


def _twin(exc: BaseException) -> Exception:
    """What the host task raises inside the turn for ``exc``, which its caller raises
    itself: a copy (same type, reason and source), so that the original's traceback
    is left alone; a cancellation (or KeyboardInterrupt) becomes a plain error, since
    only the invocation's own task may raise it."""
    if isinstance(exc, AbortTurn | HardAbort):
        twin = type(exc)(exc.reason)
        twin.source = exc.source
        return twin
    if isinstance(exc, Exception):
        try:
            copied = copy.copy(exc)
        except Exception:
            copied = RuntimeError(f"{type(exc).__name__}: {exc}")
        copied.__traceback__ = None
        return copied
    return RuntimeError(f"the invocation was interrupted ({type(exc).__name__})")


class _InterruptApproval:
    """The pipeline's human-approval handler under ``hitl="interrupt"``: inside a tool
    call of such a middleware, ``Approval.ask`` pauses the graph with ``interrupt()``
    and the value given to ``Command(resume=...)`` is the answer; anywhere else the
    handler that was set before (or none: deny) answers."""

    def __init__(self, previous: HumanApproval | None) -> None:
        self.previous = previous

    async def __call__(self, request: ApprovalRequest, reason: str) -> bool | Approval:
        if not _INTERRUPTING.get():
            if self.previous is None:
                return Approval.deny(
                    f"approval required ({reason}) but no human-approval handler is set"
                )
            answer = self.previous(request, reason)
            if isawaitable(answer):
                answer = await answer
            return answer
        payload = {
            "kind": "interpose.approval",
            "tool": request.tool_name,
            "tool_call_id": request.tool_call_id,
            "args": request.args,
            "reason": reason,
            "agent_id": request.agent_id,
            "session_key": request.session_key,
        }
        try:
            answer = interrupt(payload)
        except GraphBubbleUp as exc:  # the first run: pause here
            raise _Bubble(exc) from None
        return _resume_answer(answer)


def _resume_answer(answer: Any) -> Approval:
    """The ``Command(resume=...)`` value as an ``Approval``: True / "allow" / "approve"
    / ``{"decision": "allow"}`` allow; False / "deny" / "reject" / ``{"decision":
    "deny", "reason": ...}`` deny; an ``Approval`` is taken as it is; anything else
    denies, saying why."""
    if isinstance(answer, Approval):
        return answer
    reason = ""
    if isinstance(answer, dict):
        reason = str(answer.get("reason", ""))
        answer = answer.get("decision", answer.get("type"))
    if answer is True or answer in ("allow", "approve", "approved", "yes"):
        return Approval.allow(reason)
    if answer is False or answer in ("deny", "reject", "rejected", "no"):
        return Approval.deny(reason or "refused by the human reviewer")
    return Approval.deny(f"unrecognised resume value {answer!r}: expected allow or deny")


class _Loop:
    """The event loop thread of the synchronous hooks: the pipeline is entered on it
    (so observers and process hooks run), every sync hook runs its coroutine there."""

    def __init__(self, pipe: Pipeline) -> None:
        self.loop = asyncio.new_event_loop()
        self._stop = asyncio.Event()
        # a daemon thread: a middleware nobody closed never keeps the process alive
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="interpose-langchain", daemon=True
        )
        self.thread.start()
        entered: Future[None] = Future()
        self._host = asyncio.run_coroutine_threadsafe(self._hold(pipe, entered), self.loop)
        try:
            entered.result()
        except BaseException:
            self._halt()
            raise

    async def _hold(self, pipe: Pipeline, entered: Future[None]) -> None:
        """Keep the pipeline entered (in this one task, as anyio requires) until close."""
        try:
            await pipe.__aenter__()
        except Exception as exc:
            entered.set_exception(
                RuntimeError(
                    "the LangChain adapter enters the pipeline on its own event loop for "
                    f"agent.invoke, and could not: {exc}"
                )
            )
            return
        entered.set_result(None)
        try:
            await self._stop.wait()
        finally:
            await pipe.__aexit__(None, None, None)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        # the caller's context goes with the coroutine (call_soon_threadsafe copies it):
        # LangGraph's config (interrupt(), get_config()) stays visible
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        """Leave the pipeline (draining its observers), stop the loop and its thread."""
        try:
            self.loop.call_soon_threadsafe(self._stop.set)
            self._host.result()
        finally:
            self._halt()

    def _halt(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()
        self.loop.close()


class InterposeMiddleware(AgentMiddleware[InterposeState, Any, Any]):
    """Run a LangChain v1 ``create_agent`` agent through an interpose pipeline.

    Args:
        pipe: the pipeline.
        agent_id: the agent id interceptors see (``agent_matcher``); default "main".
        hitl: how ``Approval.ask`` is answered: "handler" (the pipeline's
            ``human_approval``; none set means deny) or "interrupt" (LangGraph's
            ``interrupt()`` pauses the graph; resume it with ``Command(resume=True |
            False | {"decision": "allow" | "deny", "reason": ...})``, which needs a
            checkpointer).  "interrupt" installs a human-approval handler on ``pipe``
            that pauses only inside this middleware's tool calls and defers to the one
            set before anywhere else.
        tool_names: the name interpose gives a LangChain tool, when it is not the
            tool's own, e.g. ``{"read_file": "read", "shell": "exec"}``: the built-in
            guards and the ``group:*`` matchers know the canonical names.  Other tools
            keep their names (normalized: ``bash`` is ``exec``); register those that
            matchers name with ``pipe.register_tool(name)``.

    Use it synchronously (``agent.invoke``) or asynchronously (``agent.ainvoke``).  With
    ``ainvoke``, a pipeline that has observers must be entered (``async with pipe``) on
    the caller's event loop, as for any call.  With ``invoke``, the middleware enters the
    pipeline on its own loop thread on first use; ``close()`` (or ``with``) leaves it,
    draining the observers.

    Raises:
        ValueError: ``hitl`` is neither "handler" nor "interrupt".
    """

    state_schema = InterposeState

    def __init__(
        self,
        pipe: Pipeline,
        *,
        agent_id: str | None = None,
        hitl: Hitl = "handler",
        tool_names: Mapping[str, str] | None = None,
    ) -> None:
        if hitl not in ("handler", "interrupt"):
            raise ValueError(f"hitl must be 'handler' or 'interrupt', got {hitl!r}")
        super().__init__()
        self.pipe = pipe
        self.agent_id = agent_id or "main"
        self.hitl = hitl
        self.tool_names = dict(tool_names or {})
        self.tools = []
        if hitl == "interrupt" and not isinstance(pipe.human_approval, _InterruptApproval):
            pipe.human_approval = _InterruptApproval(pipe.human_approval)
        self._runs: OrderedDict[str, _Run] = OrderedDict()
        self._loop: _Loop | None = None
        self._loop_lock = threading.Lock()
        self._hooked: tuple[int, bool, bool] = (-1, True, True)

    @property
    def name(self) -> str:
        return f"InterposeMiddleware[{self.agent_id}]"

    def __repr__(self) -> str:
        return f"<InterposeMiddleware agent={self.agent_id!r} hitl={self.hitl!r} {self.pipe!r}>"

    def __enter__(self) -> InterposeMiddleware:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the synchronous invocations still open (see ``aclose``), then stop the
        event loop thread of the synchronous hooks, leaving the pipeline it entered
        (which drains its observers).  Nothing to do after async use only."""
        with self._loop_lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            try:
                loop.run(self.aclose())
            finally:
                loop.close()

    async def aclose(self) -> None:
        """End the turns of the invocations on this event loop that are still open: paused
        and never resumed here, or cut short where the middleware could not see it.  Each
        ends as failed ("abandoned"), with its events and its span."""
        loop = asyncio.get_running_loop()
        for key, run in list(self._runs.items()):
            if run.loop is loop:
                await self._close(key, run, RuntimeError("the invocation was abandoned"))

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop thread (started, and the pipeline entered, on first
        use) and wait for it.

        Raises:
            RuntimeError: the pipeline could not be entered there.
        """
        loop = self._loop
        if loop is None:
            try:
                with self._loop_lock:
                    if self._loop is None:
                        self._loop = _Loop(self.pipe)
                    loop = self._loop
            except BaseException:
                coro.close()  # never started: no "never awaited" warning
                raise
        return loop.run(coro)

    # -- the invocation -------------------------------------------------------------

    @hook_config(can_jump_to=["end"])
    def before_agent(self, state: InterposeState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._sync(self._begin(state))

    @hook_config(can_jump_to=["end"])
    async def abefore_agent(
        self, state: InterposeState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        return await self._begin(state)

    def after_agent(self, state: InterposeState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._sync(self._end(state))

    async def aafter_agent(
        self, state: InterposeState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        return await self._end(state)

    async def _begin(self, state: InterposeState) -> dict[str, Any] | None:
        """Open the turn, run message.before on the last human message and
        params.before; an AbortTurn there ends the invocation before the model runs."""
        key = uuid.uuid4().hex
        run = await self._open(key)
        update: dict[str, Any] = {_RUN_KEY: key, _ABORT_KEY: None}
        turn = run.turn
        human = next((m for m in reversed(state["messages"]) if isinstance(m, HumanMessage)), None)
        try:
            with run.current():
                if human is not None:
                    text = str(human.text)
                    out = await turn.message(text)
                    if out.message != text:
                        # same id: add_messages replaces the message in place
                        update["messages"] = [human.model_copy(update={"content": out.message})]
                run.params = await turn.params()
        except AbortTurn as exc:
            run.abort = exc
            update[_ABORT_KEY] = exc.reason or "aborted"
            update["jump_to"] = "end"
        except BaseException as exc:
            await self._close(key, run, exc)
            raise
        return update

    async def _end(self, state: InterposeState) -> dict[str, Any] | None:
        key = state.get("interpose_run")
        run = self._runs.get(key) if key else None
        if key and run is not None:
            await self._close(key, run, run.abort)
        return None

    async def _open(self, key: str) -> _Run:
        """The run of ``key``: a new turn (its session the LangGraph thread id)."""
        session = ""
        try:
            session = str(get_config().get("configurable", {}).get("thread_id") or "")
        except RuntimeError:  # not inside a runnable context
            pass
        run = _Run(self.pipe.turn(agent_id=self.agent_id, session_key=session))
        self._runs[key] = run
        while len(self._runs) > _MAX_OPEN_RUNS:
            old_key, old = self._runs.popitem(last=False)
            log.warning("langchain adapter: invocation %s never ended; closing its turn", old_key)
            await old.finish(RuntimeError("the invocation was abandoned"))
        try:
            await run.start()
        except BaseException:
            self._runs.pop(key, None)
            raise
        return run

    async def _run_of(self, state: Any) -> tuple[str, _Run, bool]:
        """The run a model or tool call belongs to, and whether the call must end it.

        A run is opened when its invocation began elsewhere: resumed in another process
        (its after_agent ends it), or checkpointed before this middleware was added (no
        run key in the state: the turn is this one call)."""
        key = state.get(_RUN_KEY) if isinstance(state, dict) else None
        if not key:
            key = uuid.uuid4().hex
            return key, await self._open(key), True
        run = self._runs.get(key)
        if run is None:
            run = await self._open(key)
        else:
            await run.ready.wait()
        return key, run, False

    async def _in_run(self, state: Any, stage: Callable[[str, _Run], Awaitable[T]]) -> T:
        """``stage(key, run)`` in the run of ``state`` (see ``_run_of``), ending the run
        after it when the call must."""
        key, run, transient = await self._run_of(state)
        try:
            return await stage(key, run)
        finally:
            if transient:
                await self._close(key, run, run.abort)

    async def _close(self, key: str, run: _Run, exc: BaseException | None) -> None:
        self._runs.pop(key, None)
        await run.finish(exc)

    # -- the llm stage -------------------------------------------------------------

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        async def call(req: ModelRequest[Any]) -> ModelResponse[Any]:
            return await anyio.to_thread.run_sync(handler, req)

        return self._sync(self._model_call(request, call))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        return await self._model_call(request, handler)

    async def _model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        return await self._in_run(
            request.state, lambda key, run: self._model_stage(key, run, request, handler)
        )

    async def _model_stage(
        self,
        key: str,
        run: _Run,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        aborted = request.state.get("interpose_abort")
        if aborted:
            # a tool call of the last batch aborted the turn: the model is not called
            # again, and an answer without tool calls ends the invocation
            return ModelResponse(result=[AIMessage(content=f"[turn aborted: {aborted}]")])
        turn = run.turn
        if not turn.model:
            turn.model = name_of_model(request.model)
        before, after = self._llm_hooked()
        wanted = self.pipe.bus.wanted
        # the full view (messages and tools converted, a copy to see what changed) only
        # when a handler will read it: converting tools is the costly part of a call; the
        # messages also when the chat span records them
        read = before or after
        messages = read or "llm_request" in wanted or self.pipe.trace_content
        sent = to_llm_request(request, run.params, messages, read)
        original = copy_payload(sent) if before else sent
        last: list[tuple[LLMResponse, ModelResponse[Any]]] = []

        async def call(llm_request: LLMRequest) -> LLMResponse:
            response = await handler(apply_request(request, llm_request, original))
            converted = to_llm_response(response)
            last.append((copy_payload(converted) if after else converted, response))
            return converted

        try:
            with run.current():
                answer = await turn.call_llm(sent, call=call)
        except AbortTurn as exc:
            run.abort = run.abort or exc
            reason = exc.reason or "aborted"
            return ExtendedModelResponse(
                model_response=ModelResponse(
                    result=[AIMessage(content=f"[turn aborted: {reason}]")]
                ),
                command=Command(update={_ABORT_KEY: reason}),
            )
        except GraphBubbleUp:
            raise  # a pause: the invocation goes on when it is resumed
        except BaseException as exc:
            await self._close(key, run, exc)
            raise
        if last and (last[-1][0] is answer or last[-1][0] == answer):
            return last[-1][1]  # what the model said, untouched
        base = last[-1][1] if last else None
        return to_model_response(answer, base)

    def _llm_hooked(self) -> tuple[bool, bool]:
        """Whether anything reads or changes the llm stage's request (llm.before or
        llm middleware) and its response (llm.after or llm middleware), for this agent;
        recomputed when the registry changes."""
        registry = self.pipe.registry
        cached = self._hooked
        if cached[0] != registry.version:
            layers = bool(registry.entries("llm", agent=self.agent_id))
            cached = self._hooked = (
                registry.version,
                layers or bool(registry.entries("llm.before", agent=self.agent_id)),
                layers or bool(registry.entries("llm.after", agent=self.agent_id)),
            )
        return cached[1], cached[2]

    # -- the tool stage ------------------------------------------------------------

    def wrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]],
    ) -> ToolMessage | Command[Any]:
        async def call(req: ToolCallRequest) -> ToolMessage | Command[Any]:
            return await anyio.to_thread.run_sync(handler, req)

        async def guarded() -> ToolMessage | Command[Any] | GraphBubbleUp:
            # a BaseException must not leave a task of the loop thread (asyncio would
            # re-raise it in the loop): the pause comes back as a value
            try:
                return await self._tool_call(request, call)
            except _Bubble as carried:
                return carried.exc

        token = _INTERRUPTING.set(self.hitl == "interrupt")
        try:
            outcome = self._sync(guarded())
        finally:
            _INTERRUPTING.reset(token)
        if isinstance(outcome, GraphBubbleUp):
            raise outcome
        return outcome

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        token = _INTERRUPTING.set(self.hitl == "interrupt")
        try:
            return await self._tool_call(request, handler)
        except _Bubble as carried:
            raise carried.exc from None
        finally:
            _INTERRUPTING.reset(token)

    async def _tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        return await self._in_run(
            request.state, lambda key, run: self._tool_stage(key, run, request, handler)
        )

    async def _tool_stage(
        self,
        key: str,
        run: _Run,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        tool_call = request.tool_call
        name = tool_call["name"]
        seen_as = self.tool_names.get(name, name)
        call_id = tool_call.get("id") or ""
        if run.abort is not None:
            # a sibling of the call that aborted, which had not started yet
            return tool_message(
                refusal("aborted", normalize_tool_name(seen_as), run.abort.reason), name, call_id
            )
        ran: list[ToolMessage | Command[Any]] = []

        async def call(args: dict[str, Any]) -> Any:
            try:
                out = await handler(request.override(tool_call={**tool_call, "args": args}))
            except GraphBubbleUp as exc:  # an interrupt() inside the tool or a later layer
                raise _Bubble(exc) from None
            ran.append(out)
            return out.content if isinstance(out, ToolMessage) else out

        try:
            with run.current():
                result = await run.turn.call_tool(
                    seen_as, dict(tool_call.get("args") or {}), call=call, call_id=call_id
                )
        except AbortTurn as exc:
            run.abort = run.abort or exc
            reason = exc.reason or "aborted"
            message = tool_message(
                refusal("aborted", normalize_tool_name(seen_as), reason), name, call_id
            )
            return Command(update={"messages": [message], _ABORT_KEY: reason})
        except _Bubble:
            raise
        except BaseException as exc:
            await self._close(key, run, exc)
            raise
        if result.status == "ok" and ran:
            produced = ran[-1]
            if isinstance(produced, Command):
                return (
                    produced if result.output is produced else tool_message(result, name, call_id)
                )
            if result.output is produced.content:
                # the tool's own message, untouched (but for what hooks said to the user)
                return with_hook_messages(produced, result)
            changed = produced.model_copy(update={"content": tool_content(result.output)})
            return with_hook_messages(changed, result)
        return tool_message(result, name, call_id)
