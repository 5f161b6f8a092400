"""Decisions on the tool (and llm) stage: continue, modify, respond, block, deny, ask,
retry, abort turn, hard abort."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import (
    AbortTurn,
    Approval,
    ApprovalRequest,
    HardAbort,
    LLMAfterInput,
    LLMAfterOutput,
    LLMBeforeInput,
    LLMRequest,
    LLMResponse,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
)
from interpose.middleware.process import ProcessHook


class Tool:
    """A tool that records the args of every call."""

    def __init__(self, output: Any = "ran") -> None:
        self.calls: list[dict[str, Any]] = []
        self.output = output

    def __call__(self, args: dict[str, Any]) -> Any:
        self.calls.append(dict(args))
        return self.output


# -- continue / modify -----------------------------------------------------------------


async def test_continue_passes_the_call_through(pipe: Pipeline) -> None:
    @pipe.intercept("tool.before", id="look")
    def look(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        return None

    tool = Tool("listing")
    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    assert tool.calls == [{"command": "ls"}]
    assert result.output == "listing"
    assert result.status == "ok"
    assert result.is_error is False


async def test_modified_args_reach_the_next_interceptor_approvers_and_the_tool(
    pipe: Pipeline,
) -> None:
    seen_by_second: list[dict[str, Any]] = []
    seen_by_approver: list[dict[str, Any]] = []

    @pipe.intercept("tool.before", priority=20, id="inject")
    def inject(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.args["timeout"] = 30
        out.args["command"] = out.args["command"] + " -la"

    @pipe.intercept("tool.before", priority=10, id="second")
    def second(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        seen_by_second.append(dict(out.args))

    @pipe.approver(id="approver")
    def approver(req: ApprovalRequest) -> Approval:
        seen_by_approver.append(dict(req.args))
        return Approval.allow()

    tool = Tool()
    await pipe.call_tool("exec", {"command": "ls"}, call=tool)

    expected = {"command": "ls -la", "timeout": 30}
    assert seen_by_second == [expected]
    assert seen_by_approver == [expected]
    assert tool.calls == [expected]


async def test_args_can_be_replaced_with_a_new_dict(pipe: Pipeline) -> None:
    @pipe.intercept("tool.before", id="replace")
    def replace(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.args = {"path": "safe.txt"}

    tool = Tool()
    await pipe.call_tool("read", {"path": "x"}, call=tool)
    assert tool.calls == [{"path": "safe.txt"}]


# -- respond -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer", ["cached", ToolResult(output="cached"), {"k": "cached"}], ids=str
)
async def test_respond_skips_the_tool(pipe: Pipeline, answer: Any) -> None:
    @pipe.intercept("tool.before", id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = answer

    tool = Tool()
    result = await pipe.call_tool("read", {"path": "x"}, call=tool)

    assert tool.calls == []
    assert result.status == "responded"
    assert result.is_error is False
    expected = answer.output if isinstance(answer, ToolResult) else answer
    assert result.output == expected


async def test_after_a_respond_later_interceptors_still_run_and_may_block(
    pipe: Pipeline,
) -> None:
    order: list[str] = []

    @pipe.intercept("tool.before", priority=50, id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        order.append("cache")
        out.result = "cached"

    @pipe.intercept("tool.before", priority=10, id="gate")
    def gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        order.append("gate")
        out.block = True
        out.block_reason = "not today"

    tool = Tool()
    result = await pipe.call_tool("read", {"path": "x"}, call=tool)

    assert order == ["cache", "gate"]
    assert tool.calls == []
    assert result.status == "blocked"
    assert result.output == {"status": "blocked", "tool": "read", "reason": "not today"}


async def test_untrusted_respond_still_goes_through_approvers(pipe: Pipeline) -> None:
    asked: list[str] = []

    @pipe.intercept("tool.before", id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = "cached"

    @pipe.approver(id="approver")
    def approver(req: ApprovalRequest) -> Approval:
        asked.append(req.tool_name)
        return Approval.deny("no reads")

    tool = Tool()
    result = await pipe.call_tool("read", {"path": "x"}, call=tool)

    assert asked == ["read"]
    assert tool.calls == []
    assert result.status == "denied"
    assert result.output == {"status": "denied", "tool": "read", "reason": "no reads"}


async def test_untrusted_respond_approved_keeps_the_response(pipe: Pipeline) -> None:
    asked: list[str] = []

    @pipe.intercept("tool.before", id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = "cached"

    @pipe.approver(id="approver")
    def approver(req: ApprovalRequest) -> None:
        asked.append(req.tool_name)

    tool = Tool()
    result = await pipe.call_tool("read", {"path": "x"}, call=tool)

    assert asked == ["read"]
    assert tool.calls == []
    assert result.status == "responded"
    assert result.output == "cached"


async def test_trusted_respond_skips_approvers(pipe: Pipeline) -> None:
    asked: list[str] = []

    @pipe.intercept("tool.before", id="cache", trusted=True)
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = "cached"

    @pipe.approver(id="approver")
    def approver(req: ApprovalRequest) -> Approval:
        asked.append(req.tool_name)
        return Approval.deny("no reads")

    tool = Tool()
    result = await pipe.call_tool("read", {"path": "x"}, call=tool)

    assert asked == []
    assert tool.calls == []
    assert result.status == "responded"
    assert result.output == "cached"


async def test_tool_after_sees_a_responded_call(pipe: Pipeline) -> None:
    seen: list[tuple[str, bool]] = []

    @pipe.intercept("tool.before", id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = "cached"

    @pipe.intercept("tool.after", id="after")
    def after(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        seen.append((inp.status, inp.blocked))

    await pipe.call_tool("read", {}, call=Tool())
    assert seen == [("responded", False)]


# -- block / deny --------------------------------------------------------------------------


async def test_block_stops_everything_but_tool_after(pipe: Pipeline) -> None:
    ran: list[str] = []
    after_inputs: list[ToolAfterInput] = []

    @pipe.intercept("tool.before", priority=100, id="no-rm")
    def no_rm(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        ran.append("no-rm")
        if "rm" in out.args["command"]:
            out.block = True
            out.block_reason = "rm is not allowed"

    @pipe.intercept("tool.before", priority=0, id="later")
    def later(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        ran.append("later")

    @pipe.approver(id="approver")
    def approver(req: ApprovalRequest) -> None:
        ran.append("approver")

    @pipe.intercept("tool.after", id="after")
    def after(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        ran.append("after")
        after_inputs.append(inp)

    tool = Tool()
    result = await pipe.call_tool("Bash", {"command": "rm -rf build"}, call=tool, call_id="c1")

    assert tool.calls == []
    assert ran == ["no-rm", "after"]
    assert result.status == "blocked"
    assert result.is_error is True
    assert result.output == {"status": "blocked", "tool": "exec", "reason": "rm is not allowed"}
    assert result.details["decided_by"] == "no-rm"
    [inp] = after_inputs
    assert inp.blocked is True
    assert inp.is_error is True
    assert inp.status == "blocked"
    assert inp.tool_name == "exec"
    assert inp.tool_call_id == "c1"


async def test_block_without_reason_still_names_the_blocker(pipe: Pipeline) -> None:
    @pipe.intercept("tool.before", id="silent")
    def silent(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.block = True

    result = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())
    assert result.status == "blocked"
    assert result.details["decided_by"] == "silent"
    assert "silent" in result.output["reason"]


async def test_unblocked_calls_are_not_affected_by_a_guard(pipe: Pipeline) -> None:
    @pipe.intercept("tool.before", id="no-rm")
    def no_rm(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if "rm" in out.args["command"]:
            out.block = True

    tool = Tool()
    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert result.status == "ok"
    assert tool.calls == [{"command": "ls"}]


async def test_approver_deny(pipe: Pipeline) -> None:
    asked: list[str] = []
    after_inputs: list[ToolAfterInput] = []

    @pipe.approver(priority=10, id="first")
    def first(req: ApprovalRequest) -> Approval:
        asked.append("first")
        return Approval.deny("needs review")

    @pipe.approver(priority=0, id="second")
    def second(req: ApprovalRequest) -> Approval:
        asked.append("second")
        return Approval.allow()

    @pipe.intercept("tool.after", id="after")
    def after(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        after_inputs.append(inp)

    tool = Tool()
    result = await pipe.call_tool("write", {"path": "a"}, call=tool)

    assert tool.calls == []
    assert asked == ["first"]
    assert result.status == "denied"
    assert result.is_error is True
    assert result.output == {"status": "denied", "tool": "write", "reason": "needs review"}
    assert result.details["decided_by"] == "first"
    assert [i.blocked for i in after_inputs] == [True]


async def test_every_approver_must_allow(pipe: Pipeline) -> None:
    @pipe.approver(priority=10, id="yes")
    def yes(req: ApprovalRequest) -> Approval:
        return Approval.allow()

    @pipe.approver(priority=0, id="no")
    def no(req: ApprovalRequest) -> Approval:
        return Approval.deny("second opinion says no")

    tool = Tool()
    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert tool.calls == []
    assert result.status == "denied"
    assert result.details["decided_by"] == "no"


@pytest.mark.parametrize(
    ("answer", "status"),
    [(True, "ok"), (None, "ok"), (False, "denied"), (Approval.allow(), "ok")],
    ids=["true", "none", "false", "allow"],
)
async def test_approvers_may_return_bool_or_none(pipe: Pipeline, answer: Any, status: str) -> None:
    @pipe.approver(id="approver")
    def approver(req: ApprovalRequest) -> Any:
        return answer

    tool = Tool()
    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert result.status == status
    assert len(tool.calls) == (1 if status == "ok" else 0)


async def test_async_approver(pipe: Pipeline) -> None:
    @pipe.approver(tools="group:runtime", id="runtime")
    async def runtime(req: ApprovalRequest) -> Approval:
        await anyio.lowlevel.checkpoint()
        return Approval.deny("no runtime") if req.tool_name == "exec" else Approval.allow()

    assert (await pipe.call_tool("bash", {"command": "x"}, call=Tool())).status == "denied"
    assert (await pipe.call_tool("process", {}, call=Tool())).status == "ok"
    assert (await pipe.call_tool("read", {}, call=Tool())).status == "ok"


# -- ask ---------------------------------------------------------------------------------


def asking_pipeline(**kwargs: Any) -> Pipeline:
    pipe = Pipeline(builtins=False, **kwargs)

    @pipe.approver(id="asker")
    def asker(req: ApprovalRequest) -> Approval:
        return Approval.ask("deploys need a human")

    return pipe


@pytest.mark.parametrize("answer", [True, Approval.allow()], ids=["bool", "approval"])
async def test_ask_allowed_by_the_human(answer: Any) -> None:
    questions: list[tuple[str, dict[str, Any], str]] = []

    async def human(req: ApprovalRequest, reason: str) -> Any:
        questions.append((req.tool_name, dict(req.args), reason))
        return answer

    pipe = asking_pipeline(human_approval=human)
    tool = Tool()
    result = await pipe.call_tool("exec", {"command": "deploy"}, call=tool)

    assert questions == [("exec", {"command": "deploy"}, "deploys need a human")]
    assert result.status == "ok"
    assert tool.calls == [{"command": "deploy"}]


@pytest.mark.parametrize(
    "answer", [False, Approval.deny("the human said no")], ids=["bool", "approval"]
)
async def test_ask_denied_by_the_human(answer: Any) -> None:
    async def human(req: ApprovalRequest, reason: str) -> Any:
        return answer

    pipe = asking_pipeline(human_approval=human)
    tool = Tool()
    result = await pipe.call_tool("exec", {"command": "deploy"}, call=tool)

    assert result.status == "denied"
    assert result.is_error is True
    assert result.output["status"] == "denied"
    assert result.output["tool"] == "exec"
    assert result.output["reason"]
    assert tool.calls == []


async def test_ask_without_a_human_handler_is_a_deny() -> None:
    pipe = asking_pipeline()
    tool = Tool()
    result = await pipe.call_tool("exec", {"command": "deploy"}, call=tool)
    assert result.status == "denied"
    assert "deploys need a human" in result.output["reason"]
    assert tool.calls == []


async def test_ask_answered_too_late_is_a_deny() -> None:
    cancelled = anyio.Event()

    async def slow_human(req: ApprovalRequest, reason: str) -> bool:
        never = anyio.Event()
        try:
            await never.wait()
        except BaseException:
            cancelled.set()
            raise
        return True  # pragma: no cover - never reached

    pipe = asking_pipeline(human_approval=slow_human, approval_timeout=0.05)
    tool = Tool()
    result = await pipe.call_tool("exec", {"command": "deploy"}, call=tool)

    assert result.status == "denied"
    assert tool.calls == []
    assert cancelled.is_set()


# -- retry -------------------------------------------------------------------------------


class Flaky:
    """Fails ``failures`` times, then returns "ok"."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.calls = 0

    def __call__(self, args: dict[str, Any]) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise ConnectionError(f"attempt {self.calls} failed")
        return "ok"


def retrying_pipeline(max_retries: int, counts: dict[str, int]) -> Pipeline:
    pipe = Pipeline(builtins=False, max_retries=max_retries)

    @pipe.intercept("tool.before", id="before")
    def before(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        counts["before"] = counts.get("before", 0) + 1

    @pipe.approver(id="approver")
    def approver(req: ApprovalRequest) -> None:
        counts["approver"] = counts.get("approver", 0) + 1

    @pipe.intercept("tool.after", id="retry-on-error")
    def retry_on_error(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        counts["after"] = counts.get("after", 0) + 1
        out.retry = inp.is_error

    return pipe


async def test_tool_after_retry_reruns_the_tool_and_after_hooks_only() -> None:
    counts: dict[str, int] = {}
    pipe = retrying_pipeline(3, counts)
    tool = Flaky(failures=2)

    result = await pipe.call_tool("web_fetch", {"url": "u"}, call=tool)

    assert result.status == "ok"
    assert result.output == "ok"
    assert tool.calls == 3
    assert counts == {"before": 1, "approver": 1, "after": 3}


async def test_tool_retry_is_bounded_by_max_retries() -> None:
    counts: dict[str, int] = {}
    pipe = retrying_pipeline(2, counts)
    tool = Flaky(failures=100)

    result = await pipe.call_tool("web_fetch", {"url": "u"}, call=tool)

    assert tool.calls == 3  # the first run and two retries
    assert result.status == "error"
    assert result.output == "ConnectionError: attempt 3 failed"
    assert counts["after"] == 3


async def test_tool_retry_is_off_by_default() -> None:
    counts: dict[str, int] = {}
    pipe = retrying_pipeline(0, counts)
    tool = Flaky(failures=1)

    result = await pipe.call_tool("web_fetch", {"url": "u"}, call=tool)

    assert tool.calls == 1
    assert result.status == "error"
    assert counts == {"before": 1, "approver": 1, "after": 1}


async def test_tool_after_retry_does_not_run_a_blocked_tool() -> None:
    pipe = Pipeline(builtins=False, max_retries=3)

    @pipe.intercept("tool.before", id="block")
    def block(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.block = True

    @pipe.intercept("tool.after", id="retry")
    def retry(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.retry = True

    tool = Tool()
    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert tool.calls == []
    assert result.status == "blocked"


def llm_pipeline(max_retries: int, record: dict[str, list[int]]) -> Pipeline:
    pipe = Pipeline(builtins=False, max_retries=max_retries)

    @pipe.intercept("llm.before", id="before")
    def before(inp: LLMBeforeInput, req: LLMRequest) -> None:
        record.setdefault("before", []).append(inp.attempt)

    @pipe.intercept("llm.after", id="retry-empty")
    def retry_empty(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        record.setdefault("after", []).append(inp.attempt)
        out.retry = out.response.content == ""

    return pipe


class Model:
    """Answers with empty content ``empty`` times, then "done"."""

    def __init__(self, empty: int) -> None:
        self.empty = empty
        self.calls = 0

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        return LLMResponse(content="" if self.calls <= self.empty else "done")


async def test_llm_after_retry_counts_attempts_from_one() -> None:
    record: dict[str, list[int]] = {}
    pipe = llm_pipeline(3, record)
    model = Model(empty=2)

    async with pipe.turn() as turn:
        response = await turn.call_llm(LLMRequest(messages=[{"role": "user"}]), call=model)

    assert response.content == "done"
    assert model.calls == 3
    assert record == {"before": [1], "after": [1, 2, 3]}


async def test_llm_retry_is_bounded_and_off_by_default() -> None:
    record: dict[str, list[int]] = {}
    model = Model(empty=100)
    async with llm_pipeline(1, record).turn() as turn:
        response = await turn.call_llm(LLMRequest(), call=model)
    assert model.calls == 2
    assert response.content == ""
    assert record["after"] == [1, 2]

    record = {}
    model = Model(empty=100)
    async with llm_pipeline(0, record).turn() as turn:
        await turn.call_llm(LLMRequest(), call=model)
    assert model.calls == 1
    assert record["after"] == [1]


# -- abort turn / hard abort ---------------------------------------------------------------


def aborting_pipeline(exc: BaseException, **reg: Any) -> Pipeline:
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", tools="group:runtime", id="stopper", **reg)
    def stopper(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise exc

    return pipe


@pytest.mark.parametrize("on_error", [None, "skip", "block", "raise"])
async def test_abort_turn_ends_the_turn_cleanly(on_error: str | None) -> None:
    pipe = aborting_pipeline(AbortTurn("user pressed stop"), on_error=on_error)
    tool = Tool()
    reached: list[str] = []

    async with pipe.turn(agent_id="coder") as turn:
        await turn.call_tool("read", {"path": "x"}, call=tool)
        reached.append("before abort")
        await turn.call_tool("exec", {"command": "ls"}, call=tool)
        reached.append("after abort")  # pragma: no cover - must not run

    assert reached == ["before abort"]
    assert turn.aborted is True
    assert turn.abort_reason == "user pressed stop"
    assert tool.calls == [{"path": "x"}]


async def test_a_turn_that_finishes_is_not_aborted(pipe: Pipeline) -> None:
    async with pipe.turn() as turn:
        await turn.call_tool("read", {}, call=Tool())
    assert turn.aborted is False
    assert turn.abort_reason == ""


async def test_abort_turn_with_subscribers(recorder: list[Any]) -> None:
    pipe = aborting_pipeline(AbortTurn("stop"))
    pipe.subscribe(recorder.append, events={"turn_aborted", "turn_ended"})

    async with pipe, pipe.turn() as turn:
        await turn.call_tool("exec", {"command": "ls"}, call=Tool())

    assert turn.aborted is True
    assert [(e.kind, e.reason, e.hard) for e in recorder] == [("turn_aborted", "stop", False)]


@pytest.mark.parametrize("subscribed", [False, True])
async def test_call_tool_turns_abort_turn_into_an_aborted_result(
    subscribed: bool, recorder: list[Any]
) -> None:
    pipe = aborting_pipeline(AbortTurn("enough"))
    if subscribed:
        pipe.subscribe(recorder.append)
    tool = Tool()

    async with pipe:
        result = await pipe.call_tool("bash", {"command": "ls"}, call=tool)

    assert tool.calls == []
    assert result.status == "aborted"
    assert result.is_error is True
    assert result.output == {"status": "aborted", "tool": "exec", "reason": "enough"}


async def test_abort_turn_raised_by_an_approver_or_the_tool(pipe: Pipeline) -> None:
    @pipe.approver(tools=["exec"], id="approver")
    def approver(req: ApprovalRequest) -> None:
        raise AbortTurn("approver stops")

    def tool(args: dict[str, Any]) -> None:
        raise AbortTurn("tool stops")

    assert (await pipe.call_tool("exec", {}, call=Tool())).output["reason"] == "approver stops"
    assert (await pipe.call_tool("read", {}, call=tool)).output["reason"] == "tool stops"


async def test_hard_abort_leaves_the_turn_as_itself() -> None:
    pipe = aborting_pipeline(HardAbort("kill switch"), on_error="skip")
    tool = Tool()
    with pytest.raises(HardAbort, match="kill switch") as info:
        async with pipe.turn() as turn:
            await turn.call_tool("exec", {"command": "ls"}, call=tool)
    assert type(info.value) is HardAbort
    assert info.value.reason == "kill switch"
    assert turn.aborted is True
    assert tool.calls == []


async def test_hard_abort_leaves_call_tool_as_itself() -> None:
    pipe = aborting_pipeline(HardAbort("kill switch"))
    with pytest.raises(HardAbort) as info:
        await pipe.call_tool("exec", {"command": "ls"}, call=Tool())
    assert type(info.value) is HardAbort


async def test_hard_abort_leaves_async_with_pipe_as_itself(recorder: list[Any]) -> None:
    pipe = aborting_pipeline(HardAbort("kill switch"))
    pipe.subscribe(recorder.append)

    with pytest.raises(HardAbort) as info:
        async with pipe:
            await pipe.call_tool("exec", {"command": "ls"}, call=Tool())
    assert type(info.value) is HardAbort

    with pytest.raises(HardAbort) as info:
        async with pipe, pipe.turn() as turn:
            await turn.call_tool("exec", {"command": "ls"}, call=Tool())
    assert type(info.value) is HardAbort
    assert "turn_aborted" in [e.kind for e in recorder]


async def test_hard_abort_from_tool_after_bypasses_skip(pipe: Pipeline) -> None:
    @pipe.intercept("tool.after", id="after")
    def after(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        raise HardAbort("stop everything")

    with pytest.raises(HardAbort):
        await pipe.call_tool("read", {}, call=Tool())


async def test_abort_turn_from_a_middleware_or_message_before(pipe: Pipeline) -> None:
    @pipe.middleware("tool", id="stop-mw", on_error="skip")
    async def stop_mw(ctx: Any, call_next: Any) -> None:
        raise AbortTurn("middleware stops")

    @pipe.intercept("message.before", id="stop-msg", on_error="skip")
    def stop_msg(inp: Any, out: Any) -> None:
        if out.message == "stop":
            raise AbortTurn("message stops")

    tool = Tool()
    result = await pipe.call_tool("read", {}, call=tool)
    assert (result.status, result.output["reason"]) == ("aborted", "middleware stops")
    assert tool.calls == []

    async with pipe.turn() as turn:
        await turn.message("stop")
    assert (turn.aborted, turn.abort_reason) == (True, "message stops")


async def test_llm_retry_attempts_are_published(recorder: list[Any]) -> None:
    record: dict[str, list[int]] = {}
    pipe = llm_pipeline(2, record)
    pipe.subscribe(recorder.append, events={"llm_request", "llm_response"})

    async with pipe, pipe.turn() as turn:
        await turn.call_llm(LLMRequest(), call=Model(empty=1))

    assert [(e.kind, e.attempt) for e in recorder] == [
        ("llm_request", 1),
        ("llm_response", 1),
        ("llm_request", 2),
        ("llm_response", 2),
    ]


async def test_tool_after_may_replace_the_result(pipe: Pipeline) -> None:
    @pipe.intercept("tool.after", priority=10, id="redact")
    def redact(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.result = ToolResult(output=out.result.output.replace("s3cr3t", "***"))

    @pipe.intercept("tool.after", priority=0, id="audit")
    def audit(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.result.details["audited"] = True

    result = await pipe.call_tool("read", {}, call=lambda a: "token=s3cr3t")
    assert result.output == "token=***"
    assert result.details == {"audited": True}


async def test_an_aborted_call_is_reported_with_who_aborted_and_what_ran(
    pipe: Pipeline, recorder: list[Any]
) -> None:
    pipe.intercept("tool.before", id="first", priority=10)(lambda inp, out: None)

    @pipe.intercept("tool.before", id="stopper")
    def stopper(inp: Any, out: Any) -> None:
        raise AbortTurn("not today")

    pipe.intercept("tool.before", id="never", priority=-10)(lambda inp, out: None)
    pipe.subscribe(recorder.append, events={"tool_exec_end"})
    async with pipe, pipe.turn() as turn:
        await turn.call_tool("exec", {"command": "ls"}, call=lambda a: "ran", call_id="c9")
    assert turn.aborted
    assert turn.abort_reason == "not today"
    [end] = recorder
    assert (end.status, end.tool_call_id, end.reason) == ("aborted", "c9", "not today")
    assert end.decided_by == "stopper"
    assert end.interceptors == ("first", "stopper")


# -- tool events: one start and one end per run, whatever ends it ------------------------------


def starts_and_ends(events: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (e.kind, e.tool_call_id, e.attempt)
        + ((e.status, e.retried) if e.kind == "tool_exec_end" else ())
        for e in events
        if e.kind in ("tool_exec_start", "tool_exec_end")
    ]


async def test_every_run_of_a_retried_tool_has_its_own_start_and_end(
    recorder: list[Any],
) -> None:
    counts: dict[str, int] = {}
    pipe = retrying_pipeline(3, counts)
    pipe.subscribe(recorder.append, events={"tool_exec_start", "tool_exec_end"})
    async with pipe:
        result = await pipe.call_tool("web_fetch", {"url": "u"}, call=Flaky(2), call_id="c1")
    assert result.status == "ok"
    assert starts_and_ends(recorder) == [
        ("tool_exec_start", "c1", 1),
        ("tool_exec_end", "c1", 1, "error", True),
        ("tool_exec_start", "c1", 2),
        ("tool_exec_end", "c1", 2, "error", True),
        ("tool_exec_start", "c1", 3),
        ("tool_exec_end", "c1", 3, "ok", False),
    ]
    # each end lists what ran since the previous one: the first has the before-phase
    ends = [e for e in recorder if e.kind == "tool_exec_end"]
    assert [e.interceptors for e in ends] == [
        ("before", "approver", "retry-on-error"),
        ("retry-on-error",),
        ("retry-on-error",),
    ]
    assert all(e.duration_ns > 0 for e in ends)


class Hangs:
    """A tool that never finishes; ``running`` is set once it has started."""

    def __init__(self) -> None:
        self.running = anyio.Event()

    async def __call__(self, args: dict[str, Any]) -> str:
        self.running.set()
        await anyio.Event().wait()
        raise AssertionError("never set")  # pragma: no cover


async def test_a_cancelled_tool_call_still_publishes_its_end(recorder: list[Any]) -> None:
    pipe = Pipeline(builtins=False)
    # the observer holds the only slot of its buffer: the end has to get past a full
    # `block` buffer, which a cancelled caller cannot wait on
    gate = anyio.Event()

    async def slow(event: Any) -> None:
        await gate.wait()
        recorder.append(event)

    pipe.subscribe(slow, events={"tool_exec_start", "tool_exec_end"}, buffer=1)
    hangs = Hangs()
    with anyio.fail_after(5):
        async with pipe:
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    lambda: pipe.call_tool("exec", {"command": "sleep"}, call=hangs, call_id="c1")
                )
                await hangs.running.wait()
                tg.cancel_scope.cancel()
            gate.set()
    assert starts_and_ends(recorder) == [
        ("tool_exec_start", "c1", 1),
        ("tool_exec_end", "c1", 1, "aborted", False),
    ]
    end = recorder[-1]
    assert (end.is_error, end.reason, end.decided_by) == (True, "cancelled", "")


async def test_a_call_cancelled_during_a_retry_ends_its_last_run(recorder: list[Any]) -> None:
    pipe = Pipeline(builtins=False, max_retries=5)
    hangs = Hangs()
    runs = 0

    async def tool(args: dict[str, Any]) -> str:
        nonlocal runs
        runs += 1
        if runs == 2:
            return await hangs(args)
        return "try again"

    @pipe.intercept("tool.after", id="again")
    def again(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.retry = True

    pipe.subscribe(recorder.append, events={"tool_exec_start", "tool_exec_end"})
    with anyio.fail_after(5):
        async with pipe, anyio.create_task_group() as tg:
            tg.start_soon(lambda: pipe.call_tool("exec", {}, call=tool, call_id="c1"))
            await hangs.running.wait()
            tg.cancel_scope.cancel()
    assert starts_and_ends(recorder) == [
        ("tool_exec_start", "c1", 1),
        ("tool_exec_end", "c1", 1, "ok", True),
        ("tool_exec_start", "c1", 2),
        ("tool_exec_end", "c1", 2, "aborted", False),
    ]


def hard_abort_in_the_tool(pipe: Pipeline) -> Any:
    def tool(args: dict[str, Any]) -> str:
        raise HardAbort("stop everything")

    return tool


def strict_after_hook(pipe: Pipeline) -> Any:
    @pipe.intercept("tool.after", id="strict", on_error="raise")
    def strict(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        raise LookupError("no such record")

    return lambda args: "ran"


@pytest.mark.parametrize(
    ("setup", "raised", "status", "reason"),
    [
        (hard_abort_in_the_tool, HardAbort, "aborted", "stop everything"),
        (strict_after_hook, LookupError, "error", "LookupError: no such record"),
    ],
    ids=["hard-abort", "raise-policy"],
)
async def test_an_exception_that_reaches_the_caller_after_the_start_still_ends_the_run(
    recorder: list[Any], setup: Any, raised: type[BaseException], status: str, reason: str
) -> None:
    pipe = Pipeline(builtins=False)
    tool = setup(pipe)
    pipe.subscribe(recorder.append, events={"tool_exec_start", "tool_exec_end"})
    with pytest.raises(raised):
        async with pipe:
            await pipe.call_tool("exec", {}, call=tool, call_id="c1")
    assert starts_and_ends(recorder) == [
        ("tool_exec_start", "c1", 1),
        ("tool_exec_end", "c1", 1, status, False),
    ]
    assert (recorder[-1].is_error, recorder[-1].reason) == (True, reason)


# -- a plain value from tool.after ---------------------------------------------------------------


def refuse_by_blocking(pipe: Pipeline) -> None:
    @pipe.intercept("tool.before", id="guard")
    def guard(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.block, out.block_reason = True, "not here"


def refuse_by_denying(pipe: Pipeline) -> None:
    pipe.approver(id="guard")(lambda req: Approval.deny("not now"))


def answer_in_place(pipe: Pipeline) -> None:
    @pipe.intercept("tool.before", id="guard")
    def guard(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = "from the cache"


def let_it_run(pipe: Pipeline) -> None:
    pass


@pytest.mark.parametrize(
    ("setup", "tool_raises", "status", "is_error"),
    [
        (refuse_by_blocking, False, "blocked", True),
        (refuse_by_denying, False, "denied", True),
        (answer_in_place, False, "responded", False),
        (let_it_run, True, "error", True),
        (let_it_run, False, "ok", False),
    ],
    ids=["blocked", "denied", "responded", "error", "ok"],
)
async def test_a_plain_value_from_tool_after_keeps_the_status_of_the_result_it_replaces(
    setup: Any, tool_raises: bool, status: str, is_error: bool
) -> None:
    pipe = Pipeline(builtins=False)
    setup(pipe)
    seen: list[tuple[str, bool, Any]] = []

    @pipe.intercept("tool.after", priority=10, id="summarize")
    def summarize(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.result = "[summary]"  # type: ignore[assignment]  # a plain value: the new output

    @pipe.intercept("tool.after", id="audit")
    def audit(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        # a later interceptor sees a ToolResult, with the status it replaced
        seen.append((out.result.status, out.result.is_error, out.result.output))

    def tool(args: dict[str, Any]) -> str:
        if tool_raises:
            raise OSError("disk on fire")
        return "ran"

    result = await pipe.call_tool("exec", {"command": "ls"}, call=tool)
    assert (result.status, result.is_error, result.output) == (status, is_error, "[summary]")
    assert seen == [(status, is_error, "[summary]")]
    if status in ("blocked", "denied"):
        assert result.details["decided_by"] == "guard"  # the details are kept too


async def test_a_plain_value_after_a_new_result_keeps_the_new_results_status() -> None:
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.after", priority=10, id="recover")
    def recover(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.result = ToolResult(output="fallback", details={"recovered": True})

    @pipe.intercept("tool.after", id="shorten")
    def shorten(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.result = out.result.output[:4]

    def broken(args: dict[str, Any]) -> str:
        raise OSError("down")

    result = await pipe.call_tool("read", {}, call=broken)
    assert result == ToolResult(output="fall", status="ok", details={"recovered": True})


CHILDREN = Path(__file__).resolve().parents[1] / "process_hooks" / "children"


def after_tool_hook(reply: dict[str, Any], record: Path) -> ProcessHook:
    """A process hook (a real child) answering every hook.after_tool with ``reply`` and
    recording what it was sent."""
    return ProcessHook(
        "after",
        [sys.executable, str(CHILDREN / "gate.py")],
        intercept=("after_tool",),
        env={"REPLIES": json.dumps({"hook.after_tool": reply}), "RECORD": str(record)},
    )


def results_sent(record: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    return [m["params"]["result"] for m in lines if m.get("method") == "hook.after_tool"]


@pytest.mark.integration
async def test_a_process_hook_reply_on_a_blocked_call_keeps_the_status_too(
    tmp_path: Path,
) -> None:
    pipe = Pipeline(builtins=False)
    refuse_by_blocking(pipe)
    record = tmp_path / "record.jsonl"
    after_tool_hook({"result": {"for_llm": "[withheld]"}}, record).install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            result = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())
    assert (result.status, result.is_error, result.output) == ("blocked", True, "[withheld]")
    assert result.details["decided_by"] == "guard"


@pytest.mark.integration
async def test_a_process_hook_sees_the_status_a_plain_value_kept(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    refuse_by_blocking(pipe)

    @pipe.intercept("tool.after", priority=10, id="summarize")
    def summarize(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        out.result = "[summary]"  # type: ignore[assignment]

    record = tmp_path / "record.jsonl"
    after_tool_hook({}, record).install(pipe)  # priority 0: after `summarize`
    with anyio.fail_after(10):
        async with pipe:
            result = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())
    assert results_sent(record) == [{"for_llm": "[summary]", "is_error": True, "status": "blocked"}]
    assert (result.status, result.is_error, result.output) == ("blocked", True, "[summary]")
