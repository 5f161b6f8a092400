"""Each reply of a process hook maps onto the decision vocabulary, with a real child.

The child (children/gate.py) answers each method with the result given in its
environment, so every test states the exact JSON the hook sends back.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import (
    ApprovalRequest,
    HardAbort,
    LLMRequest,
    LLMResponse,
    Pipeline,
    ToolBeforeInput,
    ToolBeforeOutput,
)
from interpose.middleware.process import ProcessHook

pytestmark = pytest.mark.integration

CHILDREN = Path(__file__).parent / "children"
ARGS = {"command": "ls", "cwd": "/tmp"}


def gate(
    replies: dict[str, Any],
    *,
    intercept: tuple[str, ...] = ("before_tool",),
    record: Path | None = None,
    **options: Any,
) -> ProcessHook:
    env = {"REPLIES": json.dumps(replies)}
    if record is not None:
        env["RECORD"] = str(record)
    return ProcessHook(
        "gate",
        [sys.executable, str(CHILDREN / "gate.py")],
        intercept=intercept,
        env=env,
        **options,
    )


class Tool:
    """A tool that records the args it ran with."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, args: dict[str, Any]) -> str:
        self.calls.append(dict(args))
        return f"ran {args['command']}"


def read_record(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    "reply",
    [
        {},
        None,
        {"decision": {"action": "continue"}},
        # continue passes the call through: args sent alongside are not applied
        {"decision": {"action": "continue"}, "args": {"command": "rm -rf /"}},
        # a PicoClaw pass-through hook answers with the args it was given
        {"args": ARGS},
    ],
    ids=["empty", "null", "continue", "continue-with-args", "picoclaw-pass-through"],
)
async def test_continue_runs_the_tool_with_the_args_unchanged(reply: Any) -> None:
    pipe = Pipeline(builtins=False)
    gate({"hook.before_tool": reply}).install(pipe)
    tool = Tool()
    with anyio.fail_after(10):
        async with pipe:
            result = await pipe.call_tool("exec", dict(ARGS), call=tool)
    assert (result.status, result.output) == ("ok", "ran ls")
    assert tool.calls == [ARGS]


@pytest.mark.parametrize(
    "reply",
    [
        {"args": {"command": "ls -la"}},
        {"decision": {"action": "modify"}, "args": {"command": "ls -la"}},
    ],
    ids=["args-only", "modify"],
)
async def test_modify_replaces_the_args_for_later_interceptors_and_the_tool(
    reply: dict[str, Any],
) -> None:
    pipe = Pipeline(builtins=False)
    gate({"hook.before_tool": reply}, priority=50).install(pipe)
    seen_later: list[dict[str, Any]] = []

    @pipe.intercept("tool.before", priority=0)
    def audit(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        seen_later.append(dict(out.args))

    tool = Tool()
    with anyio.fail_after(10):
        async with pipe:
            result = await pipe.call_tool("exec", dict(ARGS), call=tool)
    assert result.output == "ran ls -la"
    assert seen_later == tool.calls == [{"command": "ls -la"}]


@pytest.mark.parametrize(
    ("hook_result", "output", "is_error"),
    [
        (
            {"for_llm": "Plugin tool executed successfully", "is_error": False},
            "Plugin tool executed successfully",
            False,
        ),
        ({"for_llm": {"rows": 3}}, {"rows": 3}, False),
        ({"output": "no such table", "is_error": True}, "no such table", True),
    ],
    ids=["picoclaw", "structured", "output-alias-error"],
)
async def test_respond_answers_in_place_of_the_tool(
    hook_result: dict[str, Any], output: Any, is_error: bool
) -> None:
    pipe = Pipeline(builtins=False)
    reply = {"decision": {"action": "respond"}, "hook_result": hook_result}
    gate({"hook.before_tool": reply}).install(pipe)
    skipped: list[Any] = []
    pipe.subscribe(skipped.append, events={"tool_exec_skipped"})
    tool = Tool()
    with anyio.fail_after(10):
        async with pipe:
            result = await pipe.call_tool("exec", dict(ARGS), call=tool)
    assert (result.status, result.output, result.is_error) == ("responded", output, is_error)
    assert result.details["decided_by"] == "process:gate:before_tool"
    assert tool.calls == []
    assert [(e.why, e.decided_by) for e in skipped] == [("responded", "process:gate:before_tool")]


@pytest.mark.parametrize(
    ("decision", "reason"),
    [
        ({"action": "deny_tool", "reason": "no shell on Fridays"}, "no shell on Fridays"),
        ({"action": "deny", "reason": "no shell on Fridays"}, "no shell on Fridays"),
        ({"action": "deny_tool"}, "denied by process hook 'gate'"),
    ],
    ids=["deny_tool", "deny", "no-reason"],
)
async def test_deny_tool_blocks_the_call_with_the_reason(
    decision: dict[str, Any], reason: str
) -> None:
    pipe = Pipeline(builtins=False)
    gate({"hook.before_tool": {"decision": decision}}).install(pipe)
    later: list[str] = []

    @pipe.intercept("tool.before", priority=-10)
    def after_the_gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        later.append(inp.tool_name)

    tool = Tool()
    with anyio.fail_after(10):
        async with pipe:
            result = await pipe.call_tool("exec", dict(ARGS), call=tool)
    assert result.status == "blocked"
    assert result.output == {"status": "blocked", "tool": "exec", "reason": reason}
    assert result.details["decided_by"] == "process:gate:before_tool"
    assert tool.calls == []
    assert later == []


async def test_abort_turn_ends_the_turn_marked_aborted() -> None:
    pipe = Pipeline(builtins=False)
    reply = {"decision": {"action": "abort_turn", "reason": "budget spent"}}
    gate({"hook.before_tool": reply}).install(pipe)
    tool = Tool()
    with anyio.fail_after(10):
        async with pipe:
            async with pipe.turn(agent_id="coder") as turn:
                await turn.call_tool("exec", dict(ARGS), call=tool)
                pytest.fail("the turn went on after abort_turn")  # pragma: no cover
            one_call = await pipe.call_tool("exec", dict(ARGS), call=tool)
    assert (turn.aborted, turn.abort_reason) == (True, "budget spent")
    assert one_call.status == "aborted"
    assert one_call.output == {"status": "aborted", "tool": "exec", "reason": "budget spent"}
    assert tool.calls == []


async def test_hard_abort_reaches_the_caller() -> None:
    pipe = Pipeline(builtins=False)
    reply = {"decision": {"action": "hard_abort", "reason": "operator pressed stop"}}
    gate({"hook.before_tool": reply}).install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            with pytest.raises(HardAbort) as caught:
                await pipe.call_tool("exec", dict(ARGS), call=Tool())
    assert caught.value.reason == "operator pressed stop"
    assert caught.value.source == "process:gate:before_tool"


@pytest.mark.parametrize(
    ("reply", "status", "reason"),
    [
        ({"allow": True}, "ok", None),
        ({"allow": False, "reason": "prod needs a ticket"}, "denied", "prod needs a ticket"),
        ({"allow": False}, "denied", "denied by process hook 'gate'"),
    ],
    ids=["allow", "deny", "deny-no-reason"],
)
async def test_approve_tool_allows_or_denies(
    reply: dict[str, Any], status: str, reason: str | None
) -> None:
    pipe = Pipeline(builtins=False)
    gate({"hook.approve_tool": reply}, intercept=("approve_tool",)).install(pipe)
    tool = Tool()
    with anyio.fail_after(10):
        async with pipe:
            result = await pipe.call_tool("exec", {"command": "deploy prod"}, call=tool)
    assert result.status == status
    if reason is None:
        assert tool.calls == [{"command": "deploy prod"}]
    else:
        assert result.output == {"status": "denied", "tool": "exec", "reason": reason}
        assert result.details["decided_by"] == "process:gate:approve_tool"
        assert tool.calls == []


async def test_approve_tool_ask_hands_the_call_to_the_human() -> None:
    asked: list[tuple[str, str]] = []

    def human(request: ApprovalRequest, reason: str) -> bool:
        asked.append((request.tool_name, reason))
        return bool(request.args["command"] == "deploy staging")

    pipe = Pipeline(builtins=False, human_approval=human)
    reply = {"allow": False, "ask": True, "reason": "deploys need a human"}
    gate({"hook.approve_tool": reply}, intercept=("approve_tool",)).install(pipe)
    tool = Tool()
    with anyio.fail_after(10):
        async with pipe:
            staging = await pipe.call_tool("exec", {"command": "deploy staging"}, call=tool)
            prod = await pipe.call_tool("exec", {"command": "deploy prod"}, call=tool)
    assert (staging.status, prod.status) == ("ok", "denied")
    assert asked == [("exec", "deploys need a human")] * 2
    assert tool.calls == [{"command": "deploy staging"}]


async def test_after_tool_replaces_the_result_and_sees_the_original(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    pipe = Pipeline(builtins=False)
    replies = {
        "hook.after_tool:exec": {"result": {"for_llm": "[output withheld]"}},
        "hook.after_tool:read": {"result": {"output": "file is binary", "is_error": True}},
    }
    gate(replies, intercept=("after_tool",), record=record).install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            shell = await pipe.call_tool("exec", dict(ARGS), call=Tool())
            read = await pipe.call_tool("read", {"path": "a.bin"}, call=lambda args: "\x00\x01")
    assert (shell.status, shell.output, shell.is_error) == ("ok", "[output withheld]", False)
    assert (read.status, read.output, read.is_error) == ("error", "file is binary", True)
    sent = [m["params"] for m in read_record(record) if m.get("method") == "hook.after_tool"]
    assert [(p["name"], p["args"], p["result"]) for p in sent] == [
        ("exec", ARGS, {"for_llm": "ran ls", "is_error": False, "status": "ok"}),
        ("read", {"path": "a.bin"}, {"for_llm": "\x00\x01", "is_error": False, "status": "ok"}),
    ]


async def test_after_tool_retry_runs_the_tool_again() -> None:
    pipe = Pipeline(builtins=False, max_retries=1)
    gate({"hook.after_tool": {"retry": True}}, intercept=("after_tool",)).install(pipe)
    tool = Tool()
    with anyio.fail_after(10):
        async with pipe:
            result = await pipe.call_tool("exec", dict(ARGS), call=tool)
    assert result.status == "ok"
    assert tool.calls == [ARGS, ARGS]  # one retry: max_retries=1


async def test_before_llm_rewrites_the_request_and_after_llm_the_response(
    tmp_path: Path,
) -> None:
    record = tmp_path / "record.jsonl"
    pipe = Pipeline(builtins=False)
    replies = {
        "hook.before_llm": {
            "system": "Answer in one sentence.",
            "messages": [{"role": "user", "content": "hi (redacted)"}],
        },
        "hook.after_llm": {"content": "Hello.", "stop_reason": "end_turn"},
    }
    gate(replies, intercept=("before_llm", "after_llm"), record=record).install(pipe)
    seen: list[LLMRequest] = []

    def model(request: LLMRequest) -> LLMResponse:
        seen.append(request)
        return LLMResponse(content="Hello there, how can I help you today?", stop_reason="length")

    with anyio.fail_after(10):
        async with pipe, pipe.turn(agent_id="coder", session_key="s1") as turn:
            request = LLMRequest(messages=[{"role": "user", "content": "hi, I am Bob"}])
            response = await turn.call_llm(request, call=model)
    assert seen[0].system == "Answer in one sentence."
    assert seen[0].messages == [{"role": "user", "content": "hi (redacted)"}]
    assert (response.content, response.stop_reason) == ("Hello.", "end_turn")
    sent = {m["method"]: m["params"] for m in read_record(record) if "params" in m}
    assert sent["hook.before_llm"]["request"]["messages"] == [
        {"role": "user", "content": "hi, I am Bob"}
    ]
    assert sent["hook.after_llm"]["response"]["content"] == "Hello there, how can I help you today?"
    assert sent["hook.after_llm"]["request"]["system"] == "Answer in one sentence."
    assert (sent["hook.after_llm"]["agent_id"], sent["hook.after_llm"]["attempt"]) == ("coder", 1)


async def test_before_llm_abort_turn_ends_the_turn_before_the_model_is_called() -> None:
    pipe = Pipeline(builtins=False)
    reply = {"decision": {"action": "abort_turn", "reason": "prompt injection suspected"}}
    gate({"hook.before_llm": reply}, intercept=("before_llm",)).install(pipe)
    calls: list[LLMRequest] = []

    def model(request: LLMRequest) -> LLMResponse:
        calls.append(request)
        return LLMResponse()

    with anyio.fail_after(10):
        async with pipe, pipe.turn() as turn:
            await turn.call_llm(LLMRequest(), call=model)
    assert (turn.aborted, turn.abort_reason) == (True, "prompt injection suspected")
    assert calls == []


async def test_requests_carry_the_documented_fields(tmp_path: Path) -> None:
    record = tmp_path / "record.jsonl"
    pipe = Pipeline(builtins=False)
    gate({}, intercept=("before_tool", "approve_tool"), record=record).install(pipe)
    with anyio.fail_after(10):
        async with pipe:
            await pipe.call_tool(
                "Bash", dict(ARGS), call=Tool(), call_id="c7", agent_id="coder", session_key="s1"
            )
    messages = read_record(record)[1:]  # after the environment line
    hello, before, approve = messages
    assert hello == {
        "jsonrpc": "2.0",
        "id": hello["id"],
        "method": "hook.hello",
        # interpose's field, then PicoClaw's: the hook's name, version and modes
        "params": {
            "protocol_version": 1,
            "name": "gate",
            "version": 1,
            "modes": ["tool", "approve"],
        },
    }
    turn_id = before["params"]["turn_id"]
    meta = {"AgentID": "coder", "TurnID": turn_id, "SessionKey": "s1"}
    assert before["params"] == {
        "name": "exec",
        "args": ARGS,
        "call_id": "c7",
        "agent_id": "coder",
        "session_key": "s1",
        "turn_id": turn_id,
        "tool": "exec",
        "arguments": ARGS,
        "meta": meta,
        "raw_name": "Bash",
    }
    assert approve["params"] == {
        "name": "exec",
        "args": ARGS,
        "call_id": "c7",
        "agent_id": "coder",
        "session_key": "s1",
        "turn_id": turn_id,
        "tool": "exec",
        "arguments": ARGS,
        "meta": meta,
    }
    assert [m["jsonrpc"] for m in messages] == ["2.0"] * 3
    assert len({m["id"] for m in messages}) == 3  # every request has its own id
