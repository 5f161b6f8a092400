"""Command hooks driven end to end: real bash scripts under scripts/, a real Pipeline.

Most tests use ``scripts/reply.sh``, whose answer (stdout, stderr, exit code) each test
chooses through the hook's ``env``; it also records the events it reads on stdin.  Every
call is bounded by ``LIMIT`` seconds, so a hook that never returns fails the test.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import ApprovalRequest, Pipeline, ToolResult
from interpose.bus.events import Event, InterceptorFailed
from interpose.middleware.command_hooks import CommandHook

pytestmark = pytest.mark.integration

SCRIPTS = Path(__file__).parent / "scripts"
REPLY = str(SCRIPTS / "reply.sh")
LIMIT = 10.0  # s: the most any call in these tests may take


class Tool:
    """A tool that records the arguments of each call and echoes them."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, args: dict[str, Any]) -> str:
        self.calls.append(dict(args))
        return f"ran {args}"


def reply(
    *,
    stdout: str = "",
    stderr: str = "",
    exit: int = 0,
    record: Path | None = None,
    **options: Any,
) -> CommandHook:
    """A hook running reply.sh that prints ``stdout``/``stderr`` and exits ``exit``."""
    env = {"HOOK_STDOUT": stdout, "HOOK_STDERR": stderr, "HOOK_EXIT": str(exit)}
    if record is not None:
        env["HOOK_RECORD"] = str(record)
    env.update(options.pop("env", {}))
    return CommandHook(REPLY, env=env, **options)


def recorded(path: Path) -> list[dict[str, Any]]:
    """The events reply.sh read on stdin, in order ([] if it never ran)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def decision(**fields: Any) -> str:
    return json.dumps(fields)


async def call(
    pipe: Pipeline, tool: str = "exec", args: dict[str, Any] | None = None, run: Tool | None = None
) -> ToolResult:
    with anyio.fail_after(LIMIT):
        return await pipe.call_tool(
            tool, {"command": "ls"} if args is None else args, call=run or Tool()
        )


# -- exit 0 -------------------------------------------------------------------------------


async def test_exit_0_without_output_lets_the_call_run(pipe: Pipeline, tmp_path: Path) -> None:
    reply(record=tmp_path / "events").install(pipe)
    tool = Tool()
    result = await call(pipe, "exec", {"command": "ls"}, tool)
    assert (result.status, tool.calls) == ("ok", [{"command": "ls"}])
    assert [e["tool_input"] for e in recorded(tmp_path / "events")] == [{"command": "ls"}]


async def test_plain_text_on_stdout_is_not_a_decision(pipe: Pipeline) -> None:
    reply(stdout="checked: nothing to say {not json}").install(pipe)
    reply(stdout="{this is not json either", id="braces").install(pipe)
    tool = Tool()
    assert (await call(pipe, run=tool)).status == "ok"
    assert len(tool.calls) == 1


@pytest.mark.parametrize(
    ("said", "status"),
    [("block", "blocked"), ("deny", "blocked"), ("approve", "ok"), ("allow", "ok")],
)
async def test_json_decision_blocks_or_approves(pipe: Pipeline, said: str, status: str) -> None:
    hook = reply(stdout=decision(decision=said, reason="policy says so"))
    hook.install(pipe)
    tool = Tool()
    result = await call(pipe, run=tool)
    assert result.status == status
    if status == "blocked":
        assert result.output == {"status": "blocked", "tool": "exec", "reason": "policy says so"}
        assert result.details["decided_by"] == hook.id
        assert tool.calls == []
    else:
        assert tool.calls == [{"command": "ls"}]


async def test_permission_decision_deny_on_tool_before_blocks(pipe: Pipeline) -> None:
    out = {
        "decision": "approve",  # the legacy field loses to hookSpecificOutput
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": "not on the production host",
        },
    }
    reply(stdout=json.dumps(out)).install(pipe)
    result = await call(pipe)
    assert result.status == "blocked"
    assert result.output["reason"] == "not on the production host"


async def test_permission_decision_ask_on_tool_before_fails_closed(pipe: Pipeline) -> None:
    out = {"hookSpecificOutput": {"permissionDecision": "ask", "permissionDecisionReason": "x"}}
    reply(stdout=json.dumps(out)).install(pipe)
    tool = Tool()
    result = await call(pipe, run=tool)
    assert (result.status, tool.calls) == ("blocked", [])
    assert result.output["reason"].startswith("approval required (x): a tool.before command hook")
    assert "event='tool.approve'" in result.output["reason"]


@pytest.mark.parametrize("where", ["top level", "hookSpecificOutput"])
async def test_updated_input_replaces_the_arguments(pipe: Pipeline, where: str) -> None:
    new = {"command": "ls --color=never", "timeout": 30}
    out: dict[str, Any] = (
        {"updatedInput": new}
        if where == "top level"
        else {"hookSpecificOutput": {"permissionDecision": "allow", "updatedInput": new}}
    )
    reply(stdout=json.dumps(out)).install(pipe)
    tool = Tool()
    result = await call(pipe, args={"command": "ls"}, run=tool)
    assert (result.status, tool.calls) == ("ok", [new])


async def test_approvers_see_the_updated_input(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    reply(stdout=decision(updatedInput={"command": "ls -a"})).install(pipe)
    reply(event="tool.approve", record=tmp_path / "events").install(pipe)
    await call(pipe)
    assert [e["tool_input"] for e in recorded(tmp_path / "events")] == [{"command": "ls -a"}]


async def test_additional_context_is_appended_to_the_result_details(pipe: Pipeline) -> None:
    context = "the tests in tests/unit are known to be flaky"
    first = {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": context}}
    reply(event="tool.after", stdout=json.dumps(first), priority=1, id="first").install(pipe)
    reply(event="tool.after", stdout=decision(additionalContext="second"), id="second").install(
        pipe
    )
    result = await call(pipe)
    assert result.status == "ok"
    assert result.output == "ran {'command': 'ls'}"
    assert result.details["additional_context"] == [context, "second"]


async def test_fields_an_event_cannot_use_are_ignored_with_a_warning(
    pipe: Pipeline, caplog: pytest.LogCaptureFixture
) -> None:
    out = decision(updatedInput={"command": "rm -rf /"}, additionalContext="note")
    hook = reply(event="tool.approve", stdout=out)
    hook.install(pipe)
    tool = Tool()
    with caplog.at_level("WARNING", logger="interpose.command_hooks"):
        result = await call(pipe, run=tool)
    assert (result.status, tool.calls) == ("ok", [{"command": "ls"}])
    assert [r.getMessage() for r in caplog.records] == [
        f"command hook {hook.id!r}: updatedInput is ignored on tool.approve (approvers "
        "cannot rewrite arguments; use event='tool.before')",
        f"command hook {hook.id!r}: additionalContext is only used on tool.after; ignored",
    ]


# -- continue: false ----------------------------------------------------------------------


@pytest.mark.parametrize("event", ["tool.before", "tool.approve", "tool.after"])
async def test_continue_false_aborts_the_turn(pipe: Pipeline, event: str) -> None:
    stop = decision(**{"continue": False, "stopReason": "budget spent"})
    reply(event=event, stdout=stop).install(pipe)
    tool = Tool()
    with anyio.fail_after(LIMIT):
        async with pipe.turn(agent_id="coder", session_key="s1") as turn:
            await turn.call_tool("exec", {"command": "ls"}, call=tool)
            raise AssertionError("the turn went on after the hook stopped it")
    assert (turn.aborted, turn.abort_reason) == (True, "budget spent")
    assert len(tool.calls) == (1 if event == "tool.after" else 0)


async def test_continue_false_in_a_one_call_turn_is_an_aborted_result(pipe: Pipeline) -> None:
    reply(stdout=decision(**{"continue": False})).install(pipe)
    result = await call(pipe)
    assert result.status == "aborted"
    assert result.output["reason"] == f"stopped by command hook {REPLY!r}"


# -- exit 2 -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        str(SCRIPTS / "guard_rm.sh"),  # a command line, run by /bin/sh -c
        ["bash", str(SCRIPTS / "guard_rm.sh")],  # an argv list
    ],
    ids=["line", "argv"],
)
async def test_exit_2_blocks_with_stderr_as_the_reason(
    pipe: Pipeline, command: str | list[str]
) -> None:
    CommandHook(command).install(pipe)
    tool = Tool()
    blocked = await call(pipe, args={"command": "rm -rf build"}, run=tool)
    assert blocked.output == {
        "status": "blocked",
        "tool": "exec",
        "reason": "rm -rf is not allowed here",
    }
    assert (await call(pipe, args={"command": "make"}, run=tool)).status == "ok"
    assert tool.calls == [{"command": "make"}]


async def test_exit_2_ignores_stdout_and_has_a_default_reason(pipe: Pipeline) -> None:
    reply(exit=2, stdout=decision(decision="approve")).install(pipe)
    result = await call(pipe)
    assert result.output["reason"] == f"blocked by command hook {REPLY!r}"


async def test_exit_2_after_the_tool_replaces_the_result(pipe: Pipeline) -> None:
    hook = reply(event="tool.after", exit=2, stderr="the output contains a token")
    hook.install(pipe)
    tool = Tool()
    result = await call(pipe, run=tool)
    assert len(tool.calls) == 1  # it ran; the agent gets the refusal instead of its output
    assert result.output == {
        "status": "blocked",
        "tool": "exec",
        "reason": "the output contains a token",
    }
    assert (result.is_error, result.details["decided_by"]) == (True, hook.id)


async def test_decision_block_after_the_tool_replaces_the_result(pipe: Pipeline) -> None:
    reply(event="tool.after", stdout=decision(decision="block", reason="too long")).install(pipe)
    result = await call(pipe)
    assert (result.status, result.output["reason"]) == ("blocked", "too long")


# -- tool.approve -------------------------------------------------------------------------


def asked(decision_: str, reason: str) -> str:
    return json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PermissionRequest",
                "permissionDecision": decision_,
                "permissionDecisionReason": reason,
            }
        }
    )


async def test_approve_allow_and_no_opinion_let_the_call_run(pipe: Pipeline) -> None:
    reply(event="tool.approve", stdout=asked("allow", "fine"), id="allows").install(pipe)
    reply(event="tool.approve", id="silent").install(pipe)
    tool = Tool()
    assert (await call(pipe, run=tool)).status == "ok"
    assert len(tool.calls) == 1


async def test_approve_deny_denies(pipe: Pipeline) -> None:
    hook = reply(event="tool.approve", stdout=asked("deny", "not during the freeze"))
    hook.install(pipe)
    tool = Tool()
    result = await call(pipe, run=tool)
    assert result.output == {"status": "denied", "tool": "exec", "reason": "not during the freeze"}
    assert (result.details["decided_by"], tool.calls) == (hook.id, [])


@pytest.mark.parametrize("human_says", [True, False])
async def test_approve_ask_hands_the_call_to_the_human(human_says: bool) -> None:
    questions: list[tuple[str, dict[str, Any], str]] = []

    async def human(request: ApprovalRequest, reason: str) -> bool:
        questions.append((request.tool_name, dict(request.args), reason))
        return human_says

    pipe = Pipeline(builtins=False, human_approval=human)
    reply(event="tool.approve", stdout=asked("ask", "deploys need a person")).install(pipe)
    tool = Tool()
    result = await call(pipe, args={"command": "deploy"}, run=tool)
    assert questions == [("exec", {"command": "deploy"}, "deploys need a person")]
    assert result.status == ("ok" if human_says else "denied")
    assert len(tool.calls) == (1 if human_says else 0)


async def test_approve_understands_the_permission_request_form(pipe: Pipeline) -> None:
    out = {"hookSpecificOutput": {"decision": {"behavior": "deny", "message": "no network"}}}
    reply(event="tool.approve", stdout=json.dumps(out)).install(pipe)
    result = await call(pipe, "web_fetch", {"url": "https://example.net"})
    assert (result.status, result.output["reason"]) == ("denied", "no network")


async def test_approve_interrupt_aborts_the_turn(pipe: Pipeline) -> None:
    out = {"hookSpecificOutput": {"decision": {"behavior": "deny", "interrupt": True}}}
    reply(event="PermissionRequest", stdout=json.dumps(out)).install(pipe)
    assert (await call(pipe)).status == "aborted"


async def test_approve_exit_2_denies_with_stderr(pipe: Pipeline) -> None:
    reply(event="tool.approve", exit=2, stderr="ask in #ops first\n").install(pipe)
    result = await call(pipe)
    assert (result.status, result.output["reason"]) == ("denied", "ask in #ops first")


# -- failures -----------------------------------------------------------------------------


async def test_exit_1_fails_closed_by_default(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    failures: list[Event] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    hook = reply(exit=1, stderr="jq: command not found")
    hook.install(pipe)
    tool = Tool()
    async with pipe:
        result = await call(pipe, run=tool)
    message = f"command hook {REPLY!r} exited 1: jq: command not found"
    assert result.output == {
        "status": "blocked",
        "tool": "exec",
        "reason": f"interceptor '{hook.id}' failed: CommandHookError: {message}",
    }
    assert tool.calls == []
    (event,) = failures
    assert isinstance(event, InterceptorFailed)
    assert (event.interceptor_id, event.hook, event.policy) == (hook.id, "tool.before", "block")
    assert (event.error_type, event.timed_out, event.tool_name) == (
        "CommandHookError",
        False,
        "exec",
    )
    assert event.error == f"CommandHookError: {message}"
    assert pipe.stats.failures == {hook.id: 1}


async def test_exit_1_with_on_error_skip_lets_the_call_run(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    failures: list[Event] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    hook = reply(exit=1, stderr="oops", on_error="skip")
    hook.install(pipe)
    tool = Tool()
    async with pipe:
        result = await call(pipe, run=tool)
    assert (result.status, len(tool.calls)) == ("ok", 1)
    assert [(e.interceptor_id, e.policy) for e in failures if isinstance(e, InterceptorFailed)] == [
        (hook.id, "skip")
    ]


async def test_a_failing_after_hook_keeps_the_result(pipe: Pipeline) -> None:
    reply(event="tool.after", exit=3).install(pipe)  # after-hooks default to skip
    result = await call(pipe)
    assert (result.status, result.output) == ("ok", "ran {'command': 'ls'}")
    assert pipe.stats.failures == {f"command:{REPLY}": 1}


async def test_a_failing_approver_blocks(pipe: Pipeline) -> None:
    reply(event="tool.approve", exit=127, stderr="x: not found").install(pipe)
    result = await call(pipe)
    assert result.status == "blocked"
    assert "exited 127: x: not found" in result.output["reason"]


async def test_json_of_the_wrong_shape_is_a_failure(pipe: Pipeline) -> None:
    reply(stdout=decision(decision="maybe")).install(pipe)
    result = await call(pipe)
    assert result.status == "blocked"
    reason = result.output["reason"]
    assert f"command hook {REPLY!r} printed a JSON object of the wrong shape" in reason
    assert "`$.decision`" in reason


async def test_a_long_stderr_is_quoted_by_its_end(pipe: Pipeline) -> None:
    reply(exit=1, stderr="x" * 5000 + " the actual error").install(pipe)
    reason = (await call(pipe)).output["reason"]
    assert reason.endswith("x the actual error")
    assert len(reason) < 700


async def wait_gone(pid: int) -> None:
    """Return once process ``pid`` has exited (a zombie counts), woken by its pidfd.

    Raises:
        TimeoutError: it is still running after ``LIMIT`` seconds.
    """
    with anyio.fail_after(LIMIT):
        if not hasattr(os, "pidfd_open"):  # not Linux: no exit notification to wait on
            while _running(pid):  # noqa: ASYNC110
                await anyio.sleep(0.01)
            return
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return  # exited and reaped already
        try:
            await anyio.wait_readable(fd)  # readable once the process has exited
        finally:
            os.close(fd)


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_timeout_kills_the_hook_and_what_it_started(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    failures: list[Event] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    pids = tmp_path / "pids"
    hook = CommandHook(str(SCRIPTS / "sleep.sh"), timeout=0.5, env={"HOOK_PIDS": str(pids)})
    hook.install(pipe)
    tool = Tool()
    start = time.monotonic()
    async with pipe:
        result = await call(pipe, run=tool)
    elapsed = time.monotonic() - start
    assert result.output == {
        "status": "blocked",
        "tool": "exec",
        "reason": f"interceptor '{hook.id}' failed: TimeoutError: timed out after 0.5s",
    }
    assert tool.calls == []
    assert 0.5 <= elapsed < 5
    assert pipe.stats.timeouts == {hook.id: 1}
    assert [(e.timed_out, e.policy) for e in failures if isinstance(e, InterceptorFailed)] == [
        (True, "block")
    ]
    # the script and its child got SIGKILL with the rest of the process group; `sh -c`
    # may have forked the script, so neither need be the process the call reaped, and a
    # signal takes effect asynchronously: wait (bounded) until both are gone
    for pid in (int(line) for line in pids.read_text().split()):
        await wait_gone(pid)


BLOCK = """echo '{"decision": "block", "reason": "decided before exiting"}'"""


@pytest.mark.parametrize(
    ("line", "status", "reason"),
    [
        pytest.param(
            f'sleep 600 & echo $! >"$HOOK_PIDS"; {BLOCK}; exit 0',
            "blocked",
            "decided before exiting",
            id="job-holding-the-pipes",
        ),
        pytest.param(
            f'(sleep 600 & echo $! >"$HOOK_PIDS"); {BLOCK}; exit 0',
            "blocked",
            "decided before exiting",
            id="subshell-holding-the-pipes",
        ),
        pytest.param(
            'sleep 600 >/dev/null & echo $! >"$HOOK_PIDS"; echo "not that" >&2; exit 2',
            "blocked",
            "not that",
            id="holding-stderr-exit-2",
        ),
        pytest.param(
            'sleep 600 >/dev/null 2>&1 </dev/null & echo $! >"$HOOK_PIDS"; exit 0',
            "ok",
            None,
            id="detached-from-the-pipes",
        ),
    ],
)
async def test_a_hook_that_leaves_a_process_in_the_background_ends_at_its_exit(
    tmp_path: Path, wait_gone: Any, line: str, status: str, reason: str | None
) -> None:
    pipe = Pipeline(builtins=False)
    failures: list[Event] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    pids = tmp_path / "pids"
    CommandHook(line, env={"HOOK_PIDS": str(pids)}).install(pipe)  # the default 60 s timeout
    async with pipe:
        # the background process holds the pipes the script had (or none of them): the
        # call still ends when the script exits, with what it wrote before exiting
        with anyio.fail_after(5):
            result = await pipe.call_tool("exec", {"command": "ls"}, call=Tool())
    assert result.status == status
    if reason is not None:
        assert result.output["reason"] == reason
    assert failures == []
    # and the background process died with the script's process group
    await wait_gone([int(pids.read_text())])


async def test_a_late_approver_is_a_deny(pipe: Pipeline, tmp_path: Path) -> None:
    CommandHook(
        str(SCRIPTS / "sleep.sh"),
        event="tool.approve",
        timeout=0.3,
        env={"HOOK_PIDS": str(tmp_path / "pids")},
    ).install(pipe)
    result = await call(pipe)
    assert result.status == "denied"
    reason = f"approver 'command:{SCRIPTS}/sleep.sh' did not answer within 0.3s"
    assert result.output["reason"] == reason


async def test_a_hook_flooding_stdout_is_killed(pipe: Pipeline) -> None:
    CommandHook(str(SCRIPTS / "flood.sh"), max_output_bytes=65536).install(pipe)
    result = await call(pipe)
    assert result.status == "blocked"
    assert result.output["reason"].endswith(
        f"{SCRIPTS}/flood.sh' wrote more than 65536 bytes to stdout and was killed"
    )


# -- what the hook reads ------------------------------------------------------------------


async def test_stdin_carries_the_claude_code_event(pipe: Pipeline, tmp_path: Path) -> None:
    events = tmp_path / "events"
    reply(record=events, cwd=tmp_path).install(pipe)
    reply(record=events, event="tool.approve", cwd=tmp_path).install(pipe)
    reply(record=events, event="tool.after", cwd=tmp_path).install(pipe)
    with anyio.fail_after(LIMIT):
        async with pipe.turn(agent_id="coder", session_key="s1") as turn:
            await turn.call_tool("Bash", {"command": "ls"}, call=Tool(), call_id="c1")
    common = {
        "session_id": "s1",
        "transcript_path": None,
        "cwd": str(tmp_path),
        "tool_name": "exec",
        "tool_input": {"command": "ls"},
        "tool_use_id": "c1",
        "tool_call_id": "c1",
        "agent_id": "coder",
        "turn_id": turn.turn_id,
    }
    before, approve, after = recorded(events)
    assert before == {
        **common,
        "hook_event_name": "PreToolUse",
        "raw_tool_name": "Bash",
        "interpose_hook": "tool.before",
    }
    assert approve == {
        **common,
        "hook_event_name": "PermissionRequest",
        "raw_tool_name": "exec",  # approvers see the normalized name only
        "interpose_hook": "tool.approve",
    }
    duration = after.pop("duration_ms")
    assert isinstance(duration, float)
    assert duration >= 0
    assert after == {
        **common,
        "hook_event_name": "PostToolUse",
        "raw_tool_name": "Bash",
        "interpose_hook": "tool.after",
        "tool_response": {"output": "ran {'command': 'ls'}", "is_error": False, "status": "ok"},
    }


async def test_values_json_cannot_carry_are_sent_as_text(pipe: Pipeline, tmp_path: Path) -> None:
    reply(record=tmp_path / "events").install(pipe)
    await call(pipe, "write", {"path": Path("/tmp/x"), "data": b"\x00\x01"})
    (event,) = recorded(tmp_path / "events")
    assert event["tool_input"] == {"path": "/tmp/x", "data": "AAE="}  # bytes are base64


async def test_the_hook_gets_a_minimal_environment(
    pipe: Pipeline, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("INTERPOSE_TEST_SECRET", "hunter2")
    monkeypatch.setenv("LANG", "C.UTF-8")
    record = tmp_path / "env"
    reply(cwd=tmp_path, env={"HOOK_ENV_RECORD": str(record), "TEAM": "infra"}).install(pipe)
    await call(pipe)
    env = dict(line.split("=", 1) for line in record.read_text().splitlines() if "=" in line)
    assert "INTERPOSE_TEST_SECRET" not in env
    assert "hunter2" not in record.read_text()
    assert env["PATH"] == os.environ["PATH"]
    assert env["LANG"] == "C.UTF-8"
    assert env["TEAM"] == "infra"
    assert env["CLAUDE_PROJECT_DIR"] == str(tmp_path)
    assert env["PWD"] == str(tmp_path)  # it runs in cwd


# -- registration and concurrency ---------------------------------------------------------


async def test_one_script_on_several_events_gets_distinct_ids(pipe: Pipeline) -> None:
    first = CommandHook(REPLY).install(pipe)
    second = CommandHook(REPLY, event="PostToolUse").install(pipe)
    assert (first.id, second.id) == (f"command:{REPLY}", f"command:{REPLY}#2")
    assert (first.hook, second.hook) == ("tool.before", "tool.after")
    assert (first.source, first.timeout) == ("command", 60.0)
    assert (await call(pipe)).status == "ok"


async def test_concurrent_calls_each_get_their_own_answer(pipe: Pipeline) -> None:
    CommandHook(str(SCRIPTS / "guard_rm.sh")).install(pipe)
    commands = ["ls", "rm -rf /tmp/a", "make", "rm -rf /tmp/b", "pytest", "git status"]
    results: dict[str, str] = {}

    async def one(command: str) -> None:
        results[command] = (await call(pipe, args={"command": command})).status

    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            for command in commands:
                tg.start_soon(one, command)
    assert results == {c: "blocked" if c.startswith("rm") else "ok" for c in commands}


# -- filters ------------------------------------------------------------------------------


async def test_allow_and_deny_select_the_tools_that_run_the_hook(
    pipe: Pipeline, tmp_path: Path
) -> None:
    for name in ("mcp__github__create_issue", "mcp__github__delete_repo"):
        pipe.register_tool(name)
    events = tmp_path / "events"
    reply(
        record=events,
        allow=["bash", "group:fs", r"^mcp__github__"],
        deny=["write", r"_repo$"],
    ).install(pipe)
    tools = [
        "exec",
        "read",
        "write",
        "web_fetch",
        "mcp__github__create_issue",
        "mcp__github__delete_repo",
        "apply-patch",
    ]
    for tool in tools:
        assert (await call(pipe, tool, {"x": 1})).status == "ok"
    assert [e["tool_name"] for e in recorded(events)] == [
        "exec",
        "read",
        "mcp__github__create_issue",
        "apply_patch",
    ]


async def test_deny_alone_runs_the_hook_for_every_other_tool(
    pipe: Pipeline, tmp_path: Path
) -> None:
    events = tmp_path / "events"
    reply(record=events, deny=["group:web", r"^bash$"]).install(pipe)  # aliases are denied too
    for tool in ("web_search", "bash", "exec", "read", "tts"):
        await call(pipe, tool, {})
    assert [e["tool_name"] for e in recorded(events)] == ["read", "tts"]
