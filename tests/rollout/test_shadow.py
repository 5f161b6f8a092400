"""Shadow mode: every kind of handler registered with ``mode="shadow"`` runs, what it
decides is recorded (a ``shadow_decision`` event, the span, the metrics), and the call
ends exactly as it would without it."""

from __future__ import annotations

import contextvars
import json
import math
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from interpose import (
    AbortTurn,
    Approval,
    ApprovalRequest,
    CommandHook,
    HardAbort,
    Interceptor,
    LLMRequest,
    LLMResponse,
    Pipeline,
    ProcessHook,
    RegistrationError,
    ToolResult,
)
from interpose.bus.events import ShadowDecision
from interpose.cli import main
from interpose.observers.metrics import MetricsObserver

TESTS = Path(__file__).resolve().parents[1]
GATE = TESTS / "process_hooks" / "children" / "gate.py"
REPLY = TESTS / "command_hooks" / "scripts" / "reply.sh"

Tool = Callable[[dict[str, Any]], Any]


class Ran:
    """A tool that notes the arguments of every run."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, args: dict[str, Any]) -> str:
        self.calls.append(dict(args))
        return f"ran {args.get('command', '')}"


async def call(
    pipe: Pipeline, args: dict[str, Any] | None = None, tool: str = "exec"
) -> tuple[ToolResult, Ran, list[ShadowDecision]]:
    """One call through ``pipe`` with a recorder of shadow decisions; the tool, and the
    decisions, once the bus has drained."""
    seen: list[ShadowDecision] = []
    pipe.subscribe(seen.append, events={"shadow_decision"})
    ran = Ran()
    async with pipe:
        result = await pipe.call_tool(tool, dict(args or {"command": "ls"}), call=ran)
    return result, ran, seen


def only(decisions: list[ShadowDecision]) -> ShadowDecision:
    assert len(decisions) == 1, decisions
    return decisions[0]


def unchanged(result: ToolResult, ran: Ran, args: dict[str, Any] | None = None) -> None:
    """The call ended as if no shadow handler were there."""
    assert result == ToolResult(output=f"ran {(args or {'command': 'ls'})['command']}")
    assert ran.calls == [args or {"command": "ls"}]


# -- interceptors -------------------------------------------------------------------------


def blocker(inp: Any, out: Any) -> None:
    out.block, out.block_reason = True, "no ls here"


def responder(inp: Any, out: Any) -> None:
    out.result = "cached"


def rewriter(inp: Any, out: Any) -> None:
    out.args["command"] = "ls -la"  # in place: must not reach the real args


def replacer(inp: Any, out: Any) -> None:
    out.args = {"command": "rm -r build"}


def crasher(inp: Any, out: Any) -> None:
    raise RuntimeError("bug in the new rule")


def aborter(inp: Any, out: Any) -> None:
    raise AbortTurn("stop the turn")


def hard_aborter(inp: Any, out: Any) -> None:
    raise HardAbort("stop everything")


BEFORE_CASES = [
    (blocker, "block", "no ls here", True, ()),
    (responder, "respond", "", False, ()),
    (rewriter, "modify", "", False, ("args",)),
    (replacer, "modify", "", False, ("args",)),
    (crasher, "error", "RuntimeError: bug in the new rule", True, ()),
    (aborter, "abort_turn", "stop the turn", True, ()),
    (hard_aborter, "hard_abort", "stop everything", True, ()),
]


def as_async(fn: Callable[[Any, Any], None]) -> Callable[[Any, Any], Awaitable[None]]:
    async def handler(inp: Any, out: Any) -> None:
        await anyio.lowlevel.checkpoint()  # really suspends
        fn(inp, out)

    handler.__qualname__ = f"async_{fn.__name__}"
    return handler


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize(("handler", "decision", "reason", "would_block", "changed"), BEFORE_CASES)
async def test_a_shadow_before_interceptor_never_changes_the_call(
    kind: str,
    handler: Callable[[Any, Any], None],
    decision: str,
    reason: str,
    would_block: bool,
    changed: tuple[str, ...],
) -> None:
    pipe = Pipeline(builtins=False)
    fn = handler if kind == "sync" else as_async(handler)
    pipe.intercept("tool.before", tools="exec", id="new-rule", mode="shadow")(fn)
    result, ran, seen = await call(pipe)
    unchanged(result, ran)
    event = only(seen)
    assert (event.decision, event.reason, event.would_block, event.changed) == (
        decision,
        reason,
        would_block,
        changed,
    )
    assert (event.hook, event.interceptor_id, event.tool_name) == (
        "tool.before",
        "new-rule",
        "exec",
    )
    assert event.tool_call_id
    assert event.turn_id
    assert pipe.registry.shadow.counts == {("new-rule", decision): 1}


async def test_a_shadow_interceptor_that_continues_publishes_nothing_but_is_counted() -> None:
    pipe = Pipeline(builtins=False)
    pipe.intercept("tool.before", id="quiet", mode="shadow")(lambda inp, out: None)
    result, ran, seen = await call(pipe)
    unchanged(result, ran)
    assert seen == []
    assert pipe.registry.shadow.counts == {("quiet", "continue"): 1}


async def test_a_shadow_interceptor_that_hangs_times_out_without_holding_the_call() -> None:
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", id="slow", mode="shadow", timeout=0.05)
    async def slow(inp: Any, out: Any) -> None:
        await anyio.sleep(30)

    with anyio.fail_after(5):
        result, ran, seen = await call(pipe)
    unchanged(result, ran)
    event = only(seen)
    assert (event.decision, event.error_type, event.would_block) == (
        "timeout",
        "TimeoutError",
        True,  # tool.before fails closed: this timeout would have blocked
    )


async def test_a_sync_shadow_interceptor_past_its_timeout_does_not_hold_the_call() -> None:
    pipe = Pipeline(builtins=False)
    runs: list[int] = []
    finished = threading.Event()

    @pipe.intercept("tool.before", id="slow-sync", mode="shadow", timeout=0.05)
    def slow_sync(inp: Any, out: Any) -> None:
        runs.append(threading.get_ident())
        if len(runs) == 1:
            time.sleep(1.0)  # Python cannot interrupt this
            out.block = True  # decided too late: never recorded
            finished.set()

    seen: list[ShadowDecision] = []
    pipe.subscribe(seen.append, events={"shadow_decision"})
    ran = Ran()
    async with pipe:
        start = time.perf_counter()
        first = await pipe.call_tool("exec", {"command": "ls"}, call=ran)
        took = time.perf_counter() - start
        # while that run goes on in its thread, the next call does not run it again
        second = await pipe.call_tool("exec", {"command": "ls"}, call=ran)
        assert len(runs) == 1
        threads = [t for t in threading.enumerate() if t.name == "interpose-shadow slow-sync"]
        # the thread finishes the run (its decision dropped); then the handler runs again
        assert finished.wait(5)
        with anyio.fail_after(5):
            while pipe.registry.shadow.counts.get(("slow-sync", "continue"), 0) == 0:
                await pipe.call_tool("exec", {"command": "ls"}, call=ran)
                await anyio.sleep(0.01)

    assert took < 0.5  # the call waited the timeout, not the handler's second
    assert first == second == ToolResult(output="ran ls")  # neither changed
    assert runs[0] != threading.get_ident()  # it ran in a thread
    assert len(threads) == 1  # one thread per handler, however many calls time out
    not_run = "not run: its run for an earlier call has not returned (timeout 0.05s)"
    assert [(e.decision, e.error_type, e.reason, e.would_block) for e in seen[:2]] == [
        # recorded as an enforced handler's timeout is: tool.before fails closed, so
        # enforced, it would have blocked
        ("timeout", "TimeoutError", "timed out after 0.05s", True),
        ("timeout", "TimeoutError", not_run, True),
    ]
    # (a call in the instant between the run's end and its thread's freeing is one more)
    assert all(e.reason == not_run for e in seen[2:])
    assert pipe.registry.shadow.counts[("slow-sync", "timeout")] == len(seen)
    assert "block" not in {decision for _, decision in pipe.registry.shadow.counts}


async def test_a_sync_shadow_approver_past_its_timeout_does_not_hold_the_call() -> None:
    pipe = Pipeline(builtins=False)
    release = threading.Event()

    @pipe.approver(id="slow-approver", mode="shadow", timeout=0.05)
    def slow_approver(request: ApprovalRequest) -> Approval:
        release.wait(1.0)
        return Approval.deny("too late")

    try:
        with anyio.fail_after(0.5):
            result, ran, seen = await call(pipe)
    finally:
        release.set()
    unchanged(result, ran)
    event = only(seen)
    assert (event.hook, event.decision, event.error_type) == (
        "tool.approve",
        "timeout",
        "TimeoutError",
    )


async def test_a_sync_shadow_handler_runs_in_the_callers_context() -> None:
    where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")
    seen_there: list[str] = []
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", id="reads-context", mode="shadow")
    def reads(inp: Any, out: Any) -> None:
        seen_there.append(where.get())

    where.set("the caller's")
    result, ran, seen = await call(pipe)

    unchanged(result, ran)
    assert seen_there == ["the caller's"]
    assert seen == []  # it continued


async def test_a_sync_shadow_handler_without_a_timeout_runs_inline() -> None:
    threads: list[int] = []
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", id="inline", mode="shadow", timeout=math.inf)
    def inline(inp: Any, out: Any) -> None:
        threads.append(threading.get_ident())

    result, ran, seen = await call(pipe)

    unchanged(result, ran)
    assert threads == [threading.get_ident()]
    assert seen == []


async def test_shadow_runs_alongside_enforcing_handlers_which_still_decide() -> None:
    pipe = Pipeline(builtins=False)
    pipe.intercept("tool.before", id="shadow-block", priority=10, mode="shadow")(blocker)
    seen_args: list[dict[str, Any]] = []

    @pipe.intercept("tool.before", id="enforced-rewrite", priority=5)
    def rewrite(inp: Any, out: Any) -> None:
        seen_args.append(dict(out.args))
        out.args["command"] = "ls -1"

    result, ran, seen = await call(pipe)
    assert ran.calls == [{"command": "ls -1"}]  # the enforcing rewrite applies
    assert result.output == "ran ls -1"
    assert seen_args == [{"command": "ls"}]  # after the shadow block: the call went on
    assert only(seen).decision == "block"


async def test_a_sync_only_chain_with_a_shadow_handler_keeps_the_quiet_path() -> None:
    # nobody listens: the chain of sync handlers takes the quiet path, and the shadow
    # handler is one of its plain sync callables (it is counted, not published)
    pipe = Pipeline(builtins=False)
    pipe.intercept("tool.before", id="shadow-block", mode="shadow")(blocker)
    ran = Ran()
    result = await pipe.call_tool("exec", {"command": "ls"}, call=ran)
    unchanged(result, ran)
    chain = pipe._tool_chains["main"]["exec"]
    assert chain.quiet
    assert pipe.registry.shadow.counts == {("shadow-block", "block"): 1}


async def test_enforcing_registrations_run_their_own_handler_untouched() -> None:
    # the wrapping happens at registration, for shadow registrations only: an
    # all-enforce pipeline compiles exactly the handlers it was given
    pipe = Pipeline(builtins=False)
    pipe.intercept("tool.before", id="enforced")(blocker)
    pipe.intercept("tool.before", id="shadowed", mode="shadow")(blocker)
    enforced, shadowed = pipe.registry.entries("tool.before", tool="exec")
    assert enforced.reg.handler is blocker
    assert enforced.declared is None
    assert shadowed.reg.handler is not blocker
    assert shadowed.registration.handler is blocker
    assert shadowed.registration.mode == "shadow"
    # the registry reports what was registered
    assert pipe.registry["shadowed"].handler is blocker
    assert [r.id for r in pipe.registry.get("tool.before", tool="exec")] == [
        "enforced",
        "shadowed",
    ]


def test_an_unknown_mode_is_rejected() -> None:
    pipe = Pipeline(builtins=False)
    with pytest.raises(RegistrationError, match="mode must be 'enforce' or 'shadow'"):
        pipe.registry.add(
            Interceptor(id="x", hook="tool.before", handler=blocker, mode="dry-run")  # type: ignore[arg-type]
        )
    assert len(pipe.registry) == 0


async def test_set_mode_switches_in_place_and_keeps_the_order() -> None:
    pipe = Pipeline(builtins=False)
    pipe.intercept("tool.before", id="first")(lambda inp, out: None)
    pipe.intercept("tool.before", id="rule", mode="shadow")(blocker)
    pipe.intercept("tool.before", id="last")(lambda inp, out: None)
    result, ran, _ = await call(pipe)
    unchanged(result, ran)
    reg = pipe.registry.set_mode("rule", "enforce")  # the rollout's last step
    assert reg.mode == "enforce"
    assert [r.id for r in pipe.registry.list()] == ["first", "rule", "last"]
    async with pipe:
        result = await pipe.call_tool("exec", {"command": "ls"}, call=Ran())
        assert (result.status, result.details["decided_by"]) == ("blocked", "rule")
        pipe.registry.set_mode("rule", "shadow")
        assert (await pipe.call_tool("exec", {"command": "ls"}, call=Ran())).status == "ok"


# -- approvers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "decision", "reason"),
    [
        (Approval.deny("not today"), "deny", "not today"),
        (False, "deny", ""),
        (Approval.ask("a human should look"), "ask", "a human should look"),
    ],
)
async def test_a_shadow_approver_never_denies_and_never_asks_a_human(
    answer: Any, decision: str, reason: str
) -> None:
    asked: list[str] = []

    async def human(request: ApprovalRequest, why: str) -> bool:
        asked.append(why)
        return False

    pipe = Pipeline(builtins=False, human_approval=human)

    @pipe.approver(id="new-approver", mode="shadow")
    async def approve(request: ApprovalRequest) -> Any:
        request.args["command"] = "tampered"  # its copy only
        return answer

    result, ran, seen = await call(pipe)
    unchanged(result, ran)
    assert asked == []
    event = only(seen)
    assert (event.hook, event.decision, event.reason) == ("tool.approve", decision, reason)
    assert event.would_block is (decision == "deny")


async def test_a_failing_shadow_approver_is_recorded_and_the_call_proceeds() -> None:
    pipe = Pipeline(builtins=False)

    @pipe.approver(id="broken", mode="shadow")
    def approve(request: ApprovalRequest) -> Any:
        return "yes"  # not an answer an approver may give

    result, ran, seen = await call(pipe)
    unchanged(result, ran)
    assert only(seen).decision == "error"


# -- tool.after --------------------------------------------------------------------------------


async def test_a_shadow_after_interceptor_cannot_rewrite_the_result_or_retry() -> None:
    pipe = Pipeline(builtins=False, max_retries=3)

    @pipe.intercept("tool.after", id="scrub", mode="shadow")
    def scrub(inp: Any, out: Any) -> None:
        out.result.output = "[scrubbed]"
        inp.args["command"] = "tampered"

    @pipe.intercept("tool.after", id="again", mode="shadow")
    def again(inp: Any, out: Any) -> None:
        out.retry = True

    seen: list[ShadowDecision] = []
    pipe.subscribe(seen.append, events={"shadow_decision"})
    ran, args = Ran(), {"command": "ls"}
    async with pipe:
        result = await pipe.call_tool("exec", args, call=ran)
    unchanged(result, ran)  # ran once, result as the tool gave it
    assert args == {"command": "ls"}  # the agent's own arguments, untouched
    by_id = {e.interceptor_id: e for e in seen}
    assert (by_id["scrub"].decision, by_id["scrub"].changed) == ("modify", ("result",))
    assert by_id["again"].decision == "retry"


# -- middleware --------------------------------------------------------------------------------


async def test_a_shadow_middleware_that_short_circuits_still_lets_the_call_run_once() -> None:
    pipe = Pipeline(builtins=False)

    @pipe.middleware("tool", id="gatekeeper", mode="shadow")
    async def gatekeeper(ctx: Any, call_next: Any) -> None:
        ctx.result = ToolResult(output="from the cache", status="responded")

    result, ran, seen = await call(pipe)
    unchanged(result, ran)
    event = only(seen)
    assert (event.hook, event.decision, event.changed) == ("tool", "respond", ("result",))


async def test_a_shadow_middleware_that_blocks_is_a_would_block() -> None:
    pipe = Pipeline(builtins=False)

    @pipe.middleware("tool", id="wall", mode="shadow")
    async def wall(ctx: Any, call_next: Any) -> None:
        ctx.result = ToolResult(
            output={"status": "blocked", "tool": "exec", "reason": "walled"},
            is_error=True,
            status="blocked",
        )

    result, ran, seen = await call(pipe)
    unchanged(result, ran)
    event = only(seen)
    assert (event.decision, event.reason, event.would_block) == ("block", "walled", True)


async def test_a_shadow_middleware_that_rewrites_ctx_and_result_changes_nothing() -> None:
    pipe = Pipeline(builtins=False)
    inner_saw: list[dict[str, Any]] = []

    @pipe.middleware("tool", id="rewriter", priority=10, mode="shadow")
    async def rewriter_mw(ctx: Any, call_next: Any) -> None:
        ctx.args["command"] = "ls -la"
        ctx.state["mine"] = True
        await call_next()
        await call_next()  # a second call does not run the inner chain again
        assert ctx.result.output == "ran ls"  # it sees the real outcome
        ctx.result.output = "rewritten"

    @pipe.middleware("tool", id="inner", priority=0)
    async def inner(ctx: Any, call_next: Any) -> None:
        inner_saw.append(dict(ctx.args))
        assert "mine" not in ctx.state
        await call_next()

    result, ran, seen = await call(pipe)
    unchanged(result, ran)
    assert inner_saw == [{"command": "ls"}]
    event = only(seen)
    assert (event.decision, event.changed) == ("modify", ("args", "result"))


@pytest.mark.parametrize("where", ["before", "after"])
async def test_a_failing_shadow_middleware_never_affects_the_call(where: str) -> None:
    pipe = Pipeline(builtins=False)

    @pipe.middleware("tool", id="fragile", mode="shadow")
    async def fragile(ctx: Any, call_next: Any) -> None:
        if where == "after":
            await call_next()
        raise ValueError(f"fails {where}")

    result, ran, seen = await call(pipe)
    unchanged(result, ran)
    event = only(seen)
    assert (event.decision, event.reason, event.would_block) == (
        "error",
        f"ValueError: fails {where}",
        True,  # tool middleware fails closed
    )


async def test_a_shadow_middleware_timeout_never_cuts_the_real_inner_chain() -> None:
    pipe = Pipeline(builtins=False)

    @pipe.middleware("tool", id="slowpoke", mode="shadow", timeout=0.2)
    async def slowpoke(ctx: Any, call_next: Any) -> None:
        await call_next()
        await anyio.sleep(30)

    async def slow_tool(args: dict[str, Any]) -> str:
        await anyio.sleep(0.4)  # longer than the shadow layer's timeout
        return "done"

    seen: list[ShadowDecision] = []
    pipe.subscribe(seen.append, events={"shadow_decision"})
    with anyio.fail_after(5):
        async with pipe:
            result = await pipe.call_tool("exec", {"command": "ls"}, call=slow_tool)
    assert result == ToolResult(output="done")
    assert only(seen).decision == "timeout"


async def test_the_inner_chains_own_exception_passes_a_shadow_layer_unchanged() -> None:
    pipe = Pipeline(builtins=False)
    boom = RuntimeError("inner raised")

    @pipe.middleware("tool", id="watcher", priority=10, mode="shadow")
    async def watcher(ctx: Any, call_next: Any) -> None:
        await call_next()

    @pipe.intercept("tool.before", id="strict", on_error="raise")
    def strict(inp: Any, out: Any) -> None:
        raise boom

    pipe.subscribe(lambda e: None)
    with pytest.raises(RuntimeError) as caught:
        async with pipe:
            await pipe.call_tool("exec", {"command": "ls"}, call=Ran())
    assert caught.value is boom


# -- the other stages --------------------------------------------------------------------------


async def test_shadow_handlers_of_the_message_llm_and_command_stages() -> None:
    pipe = Pipeline(builtins=False)
    pipe.intercept("message.before", id="msg", mode="shadow")(
        lambda inp, out: setattr(out, "message", "censored")
    )
    pipe.intercept("llm.before", id="sys", mode="shadow")(
        lambda inp, out: setattr(out, "system", "be terse")
    )

    @pipe.middleware("llm", id="llm-cache", mode="shadow")
    async def llm_cache(ctx: Any, call_next: Any) -> None:
        ctx.response = LLMResponse(content="cached")

    pipe.intercept("command.before", id="no-deploy", mode="shadow")(blocker)
    seen: list[ShadowDecision] = []
    pipe.subscribe(seen.append, events={"shadow_decision"})
    requests: list[str] = []

    def model(request: LLMRequest) -> LLMResponse:
        requests.append(request.system)
        return LLMResponse(content="live")

    async with pipe, pipe.turn() as turn:
        assert (await turn.message("hello")).message == "hello"
        assert (await turn.call_llm({"system": "sys"}, call=model)).content == "live"
        result = await turn.run_command("deploy", {}, call=lambda args: "deployed")
    assert result.output == "deployed"
    assert requests == ["sys"]
    assert {(e.interceptor_id, e.decision) for e in seen} == {
        ("msg", "modify"),
        ("sys", "modify"),
        ("llm-cache", "respond"),
        ("no-deploy", "block"),
    }
    assert next(e for e in seen if e.interceptor_id == "no-deploy").tool_name == "deploy"


# -- out-of-process hooks -----------------------------------------------------------------------


@pytest.mark.integration
async def test_a_shadow_process_hook_child_is_asked_but_not_obeyed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    replies = (
        '{"hook.before_tool": {"decision": {"action": "deny_tool", "reason": "child says no"}},'
        ' "hook.approve_tool": {"allow": false, "reason": "child denies"}}'
    )
    hook = ProcessHook(
        "gate",
        [sys.executable, str(GATE)],
        intercept=["before_tool", "approve_tool"],
        env={"REPLIES": replies},
        mode="shadow",
        timeout=10.0,
    )
    pipe = Pipeline(builtins=False)
    hook.install(pipe)
    with anyio.fail_after(30):
        result, ran, seen = await call(pipe)
    unchanged(result, ran)
    assert {(e.interceptor_id, e.decision, e.reason, e.source) for e in seen} == {
        ("process:gate:before_tool", "block", "child says no", "process:gate"),
        ("process:gate:approve_tool", "deny", "child denies", "process:gate"),
    }


@pytest.mark.integration
async def test_a_shadow_process_hook_that_cannot_start_never_blocks(tmp_path: Path) -> None:
    dead = tmp_path / "dead.py"
    dead.write_text("import sys\nsys.exit(3)\n")
    hook = ProcessHook(
        "dead", [sys.executable, str(dead)], mode="shadow", timeout=0.5, handshake_timeout=0.5
    )
    pipe = Pipeline(builtins=False)
    hook.install(pipe)
    with anyio.fail_after(30):
        result, ran, seen = await call(pipe)
    unchanged(result, ran)
    event = only(seen)
    assert event.decision in ("error", "timeout")
    assert event.would_block  # on_error="block": enforced, it would have blocked


@pytest.mark.integration
@pytest.mark.parametrize(
    ("env", "decision", "reason"),
    [
        ({"HOOK_EXIT": "2", "HOOK_STDERR": "script says no"}, "block", "script says no"),
        (
            {"HOOK_STDOUT": '{"hookSpecificOutput": {"updatedInput": {"command": "ls -R"}}}'},
            "modify",
            "",
        ),
        ({"HOOK_EXIT": "7"}, "error", None),
    ],
)
async def test_a_shadow_command_hook_script_runs_but_is_not_obeyed(
    env: dict[str, str], decision: str, reason: str | None
) -> None:
    hook = CommandHook(str(REPLY), allow=["exec"], env=env, mode="shadow", timeout=20)
    pipe = Pipeline(builtins=False)
    reg = hook.install(pipe)
    assert reg.mode == "shadow"
    with anyio.fail_after(30):
        result, ran, seen = await call(pipe)
    unchanged(result, ran)
    event = only(seen)
    assert (event.decision, event.source) == (decision, "command")
    if reason is not None:
        assert event.reason == reason


# -- telemetry ----------------------------------------------------------------------------------


async def test_a_shadow_decision_is_an_event_of_the_span(
    exporter: InMemorySpanExporter, provider: TracerProvider
) -> None:
    pipe = Pipeline(builtins=False, tracing="interceptor", tracer_provider=provider)
    pipe.intercept("tool.before", id="new-rule", mode="shadow")(blocker)
    result = await pipe.call_tool("exec", {"command": "ls"}, call=Ran())
    assert result.status == "ok"
    (handler_span,) = [s for s in exporter.get_finished_spans() if s.name.endswith("new-rule")]
    (event,) = handler_span.events
    assert event.name == "interpose.shadow_decision"
    assert event.attributes is not None
    assert event.attributes["interpose.shadow.decision"] == "block"
    assert event.attributes["interpose.interceptor.id"] == "new-rule"
    assert handler_span.attributes is not None
    assert handler_span.attributes["interpose.shadow.would_block"] is True


async def test_the_metrics_count_shadow_decisions() -> None:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    pipe = Pipeline(builtins=False)
    pipe.intercept("tool.before", id="new-rule", mode="shadow")(blocker)
    MetricsObserver(provider).attach(pipe)
    async with pipe:
        for _ in range(3):
            await pipe.call_tool("exec", {"command": "ls"}, call=Ran())
    data = reader.get_metrics_data()
    assert data is not None
    points = [
        point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for m in scope.metrics
        if m.name == "interpose.shadow.decisions"
        for point in m.data.data_points
    ]
    provider.shutdown()
    assert len(points) == 1
    assert isinstance(points[0], NumberDataPoint)
    assert points[0].value == 3
    assert dict(points[0].attributes or {}) == {
        "interpose.interceptor.id": "new-rule",
        "interpose.hook": "tool.before",
        "interpose.shadow.decision": "block",
        "interpose.shadow.would_block": True,
    }


# -- the config file and `interpose check` ------------------------------------------------------


@pytest.mark.integration
async def test_the_config_file_puts_any_registration_in_shadow_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "interpose.toml"
    deny = json.dumps({"hook.before_tool": {"decision": {"action": "deny_tool", "reason": "no"}}})
    config.write_text(
        f"""
[hooks.builtins.tool-filter]
deny = ["web_fetch"]
mode = "shadow"
[hooks.builtins.command-safety-guard]
mode = "shadow"
[hooks.processes.gate]
command = ["{sys.executable}", "{GATE}"]
env = {{ REPLIES = '{deny}' }}
mode = "shadow"
[[hooks.commands]]
command = "{REPLY}"
env = {{ HOOK_EXIT = "2", HOOK_STDERR = "nope" }}
filter.tool.allow = ["web_fetch"]
mode = "shadow"
""",
        encoding="utf-8",
    )
    assert main(["check", str(config)]) == 0
    out = capsys.readouterr().out
    table = out.split("stack (execution order):\n")[1].split("\n\n")[0].splitlines()
    assert table[0].split()[-2:] == ["mode", "source"]
    modes = {line.split()[3]: line.split()[-2] for line in table[1:]}
    assert modes == {
        "builtin:tool-filter": "shadow",
        "builtin:command-safety-guard": "shadow",
        "builtin:command-safety-guard.ask": "shadow",  # its approver goes with it
        "builtin:security-audit": "enforce",
        "process:gate:before_tool": "shadow",
        f"command:{REPLY}": "shadow",
    }
    pipe = Pipeline.from_config(config)
    seen: list[ShadowDecision] = []
    pipe.subscribe(seen.append, events={"shadow_decision"})
    with anyio.fail_after(30):
        async with pipe:
            fetched = await pipe.call_tool("web_fetch", {"url": "https://x.test"}, call=Ran())
            blocked = await pipe.call_tool("read", {"path": "~/.ssh/id_rsa"}, call=Ran())
    assert fetched.status == "ok"
    assert blocked.status == "blocked"  # security-audit still enforces
    assert {(e.interceptor_id, e.decision) for e in seen} == {
        ("builtin:tool-filter", "block"),
        ("process:gate:before_tool", "block"),
        (f"command:{REPLY}", "block"),
    }


async def test_pipelines_sharing_a_registry_each_publish_their_own_decisions() -> None:
    first = Pipeline(builtins=False)
    second = Pipeline(registry=first.registry)
    first.intercept("tool.before", id="new-rule", mode="shadow")(blocker)
    seen: dict[str, list[ShadowDecision]] = {"first": [], "second": []}
    first.subscribe(seen["first"].append, events={"shadow_decision"})
    second.subscribe(seen["second"].append, events={"shadow_decision"})
    async with first, second:
        await first.call_tool("exec", {"command": "ls"}, call=Ran())
        await second.call_tool("exec", {"command": "ls"}, call=Ran())
        await second.call_tool("exec", {"command": "ls"}, call=Ran())
    assert [len(seen["first"]), len(seen["second"])] == [1, 2]


def test_an_unknown_mode_in_the_config_file_names_the_field(tmp_path: Path) -> None:
    from interpose import ConfigError

    config = tmp_path / "interpose.toml"
    config.write_text('[hooks.builtins.tool-filter]\nmode = "dry-run"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        Pipeline.from_config(config)
    assert "hooks.builtins.tool-filter.mode" in str(caught.value)
    assert "'enforce'" in str(caught.value)
    assert "'shadow'" in str(caught.value)


async def test_a_shadow_llm_after_hook_cannot_touch_the_request_it_reads() -> None:
    pipe = Pipeline(builtins=False)

    @pipe.intercept("llm.after", id="nosy", mode="shadow")
    def nosy(inp: Any, out: Any) -> None:
        inp.request.system = "changed"  # a mutable struct inside the frozen input
        out.response.content = "rewritten"

    request = LLMRequest(system="be brief")
    async with pipe, pipe.turn() as turn:
        response = await turn.call_llm(request, call=lambda r: LLMResponse(content="hi"))
    assert request.system == "be brief"
    assert response.content == "hi"
    assert pipe.registry.shadow.counts == {("nosy", "modify"): 1}
