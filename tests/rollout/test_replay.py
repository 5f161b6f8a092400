"""Recording calls and replaying them through another stack (``interpose replay``).

A session is recorded through the default guards with the audit log's recording on;
replaying it through a stricter config must report exactly the calls that config
refuses, through a looser one exactly those it lets through, and nothing through the
same stack.  Recorded values are redacted; a bad log line is an error naming its line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import AbortTurn, HardAbort, LLMRequest, LLMResponse, Pipeline
from interpose.bus.events import CallRecorded, decode_event
from interpose.cli import main
from interpose.observers.audit import AuditLog
from interpose.replay import (
    NOT_RECORDED,
    LogError,
    ReplayError,
    ReplayReport,
    read_log,
    replay,
    replay_files,
)

TESTS = Path(__file__).resolve().parents[1]
REPLY = TESTS / "command_hooks" / "scripts" / "reply.sh"

API_KEY = "k3y-0f-the-fetch-service-1234"
OPENAI_KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9abcdefgh"

# (call id, tool, arguments): what the agent did in the recorded session
SESSION: list[tuple[str, str, dict[str, Any]]] = [
    ("c0", "exec", {"command": "ls"}),
    ("c1", "exec", {"command": "git push origin main"}),
    ("c2", "web_fetch", {"url": "https://example.com", "api_key": API_KEY}),
    ("c3", "read", {"path": "~/.ssh/id_rsa"}),
    ("c4", "read", {"path": "README.md"}),
    ("c5", "exec", {"command": f"curl -H 'Authorization: {BEARER}' https://api.test"}),
    ("c6", "write", {"path": "notes.txt", "content": f"OPENAI_API_KEY={OPENAI_KEY}"}),
]


def run_tool(args: dict[str, Any]) -> str:
    """The recorded session's tools: they only say what they were given."""
    return f"output of {sorted(args)}"


async def record(path: Path, pipe: Pipeline | None = None, *, results: bool = True) -> None:
    pipe = pipe or Pipeline()
    log = AuditLog(path)
    log.attach(pipe, record_args=True, record_results=results)
    async with pipe, pipe.turn(agent_id="coder", session_key="s1") as turn:
        for call_id, tool, args in SESSION:
            await turn.call_tool(tool, dict(args), call=run_tool, call_id=call_id)
    log.close()


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "audit.jsonl"
    anyio.run(record, path)
    return path


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


STRICT = """
[hooks.builtins.tool-filter]
deny = ["web_fetch"]
[hooks.builtins.command-safety-guard]
deny = ["^git push"]
"""
LOOSE = """
[hooks.builtins.security-audit]
enabled = false
"""


def changes(report: ReplayReport) -> dict[str, tuple[str, str, str, list[str]]]:
    """call id -> (recorded, new, change, rules) of every changed call."""
    return {
        d.call.event.tool_call_id: (d.recorded.describe(), d.new.describe(), d.change, d.rules)
        for d in report.changed
    }


# -- the recording ----------------------------------------------------------------------------


def test_the_recorded_session_is_faithful_and_redacted(session: Path) -> None:
    text = session.read_text(encoding="utf-8")
    for secret in (API_KEY, OPENAI_KEY, BEARER.split()[1]):
        assert secret not in text
    log = read_log(session)
    calls = {c.event.tool_call_id: c.event for c in log.calls}
    assert list(calls) == [call_id for call_id, _, _ in SESSION]
    fetch = calls["c2"]
    assert fetch.input == {"url": "https://example.com", "api_key": "[REDACTED]"}
    assert fetch.applied == fetch.input  # what the tool got
    assert fetch.output == "output of ['api_key', 'url']"
    assert (fetch.status, fetch.recorded) == ("ok", ("args", "results"))
    assert calls["c5"].input == {
        "command": "curl -H 'Authorization: Bearer [REDACTED]' https://api.test"
    }
    assert calls["c6"].input["content"] == "OPENAI_API_KEY=[REDACTED]"
    refused = calls["c3"]
    assert (refused.status, refused.decided_by, refused.applied) == (
        "blocked",
        "builtin:security-audit",
        None,  # the tool never ran
    )
    assert "ssh" in refused.reason
    assert log.unrecorded == 0


async def test_recording_sees_the_call_as_sent_and_as_the_tool_got_it(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", id="add-flag")
    def add_flag(inp: Any, out: Any) -> None:
        out.args["command"] += " -la"

    path = tmp_path / "audit.jsonl"
    await record(path, pipe, results=False)
    event = next(c.event for c in read_log(path).calls if c.event.tool_call_id == "c0")
    assert (event.input, event.applied, event.output) == (
        {"command": "ls"},
        {"command": "ls -la"},
        None,  # results were not asked for
    )


async def test_without_listeners_the_recording_layer_passes_calls_straight_on() -> None:
    pipe = Pipeline(builtins=False)
    log_events: list[Any] = []
    from interpose.observers.recording import CallRecorder

    CallRecorder().install(pipe)
    pipe.subscribe(log_events.append, events={"tool_exec_end"})
    async with pipe:
        result = await pipe.call_tool("exec", {"command": "ls"}, call=run_tool)
    assert result.output == "output of ['command']"
    assert [e.kind for e in log_events] == ["tool_exec_end"]


# -- replaying ---------------------------------------------------------------------------------


async def test_a_stricter_config_reports_exactly_the_calls_it_would_block(
    session: Path, tmp_path: Path
) -> None:
    report = await replay_files([session], write(tmp_path, "strict.toml", STRICT))
    assert changes(report) == {
        "c1": (
            "ok",
            "blocked by builtin:command-safety-guard",
            "allowed -> blocked",
            ["builtin:command-safety-guard"],
        ),
        "c2": (
            "ok",
            "blocked by builtin:tool-filter",
            "allowed -> blocked",
            ["builtin:tool-filter"],
        ),
    }
    assert report.regressions == 2
    assert report.rules() == {
        "builtin:command-safety-guard": {"changed": 1, "allowed -> blocked": 1},
        "builtin:tool-filter": {"changed": 1, "allowed -> blocked": 1},
    }
    assert (
        report.summary()
        == "7 recorded calls replayed (7 tool); 2 would change: 2 allowed -> blocked"
    )


async def test_a_looser_config_reports_exactly_the_calls_it_would_let_through(
    session: Path, tmp_path: Path
) -> None:
    report = await replay_files([session], write(tmp_path, "loose.toml", LOOSE))
    assert changes(report) == {
        "c3": (
            "blocked by builtin:security-audit",
            "ok",
            "blocked -> allowed",
            ["builtin:security-audit"],
        ),
    }
    assert report.regressions == 0


async def test_the_same_stack_changes_nothing(session: Path, tmp_path: Path) -> None:
    report = await replay_files([session], write(tmp_path, "same.toml", ""))
    assert report.changed == []
    assert report.diffs == []  # the report keeps the changed calls: none
    assert report.replayed == len(SESSION)
    every = await replay_files([session], write(tmp_path, "same.toml", ""), every=True)
    assert [d.call.event.tool_call_id for d in every.diffs] == [c for c, _, _ in SESSION]
    assert every.changed == []


async def test_results_come_from_the_record_and_tools_never_run(session: Path) -> None:
    pipe = Pipeline(builtins=False)  # looser: nothing refuses c3 now
    outputs: dict[str, Any] = {}

    @pipe.intercept("tool.after", id="spy")
    def spy(inp: Any, out: Any) -> None:
        outputs[inp.tool_call_id] = out.result.output

    report = await replay(read_log(session), pipe)
    assert outputs["c3"] == NOT_RECORDED  # it never ran in the recorded session
    assert outputs["c2"] == "output of ['api_key', 'url']"  # the recorded result
    assert changes(report)["c3"][2] == "blocked -> allowed"


@pytest.mark.integration
async def test_rewrites_are_attributed_to_the_handler_that_made_them(
    session: Path, tmp_path: Path
) -> None:
    updated = json.dumps({"hookSpecificOutput": {"updatedInput": {"command": "ls -R"}}})
    config = write(
        tmp_path,
        "rewrite.toml",
        f"""
[hooks.builtins.output-cap]
max_chars = 12
tools = ["read"]
[[hooks.commands]]
command = "{REPLY}"
id = "normalize-exec"
env = {{ HOOK_STDOUT = '{updated}' }}
filter.tool.allow = ["exec"]
""",
    )
    with anyio.fail_after(60):
        report = await replay_files([session], config)
    assert changes(report) == {
        "c0": ("ok", "ok", "args rewritten", ["normalize-exec"]),
        "c1": ("ok", "ok", "args rewritten", ["normalize-exec"]),
        "c4": ("ok", "ok", "result rewritten", ["builtin:output-cap"]),
        "c5": ("ok", "ok", "args rewritten", ["normalize-exec"]),
    }
    assert report.regressions == 0


async def test_message_params_and_llm_stages_are_replayed(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    recorded = Pipeline(builtins=False)
    log = AuditLog(path)
    log.attach(recorded, record_llm=True, record_messages=True, record_results=True)
    async with recorded, recorded.turn(agent_id="coder", provider="anthropic") as turn:
        await turn.message("deploy to prod, key sk-ant-abcdefghijklmnopqrstu")
        await turn.params()
        await turn.call_llm(
            {"system": "be helpful", "headers": {"x-api-key": "abc"}},
            call=lambda request: LLMResponse(content="sure"),
        )
    log.close()
    calls = [c.event for c in read_log(path).calls]
    assert [c.stage for c in calls] == ["message", "params", "llm"]
    message, params, llm = calls
    assert message.input == {"message": "deploy to prod, key [REDACTED]", "metadata": {}}
    assert (params.input["provider"], params.input["message"]) == (
        "anthropic",
        "deploy to prod, key [REDACTED]",
    )
    assert llm.input["headers"] == {"x-api-key": "[REDACTED]"}
    assert llm.output["content"] == "sure"

    candidate = Pipeline(builtins=False)

    @candidate.intercept("message.before", id="polite")
    def polite(inp: Any, out: Any) -> None:
        out.message = "please " + out.message

    @candidate.intercept("params.before", id="cool-down")
    def cool_down(inp: Any, out: Any) -> None:
        if "prod" in inp.message:  # the params hooks see the turn's recorded message
            out.temperature = 0.0

    @candidate.intercept("llm.before", id="no-prod")
    def no_prod(inp: Any, out: LLMRequest) -> None:
        raise AbortTurn("no prod deploys from agents")

    report = await replay(read_log(path), candidate)
    assert [(d.call.event.stage, d.change, d.new.describe(), d.rules) for d in report.diffs] == [
        ("message", "message rewritten", "ok", ["polite"]),
        ("params", "params rewritten", "ok", ["cool-down"]),
        ("llm", "allowed -> blocked", "aborted by no-prod", ["no-prod"]),
    ]
    assert report.regressions == 1


# -- the command -------------------------------------------------------------------------------


def test_the_cli_prints_the_diff_table_and_exits_1_on_new_blocks(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    strict = write(tmp_path, "strict.toml", STRICT)
    assert main(["replay", str(session), "--config", str(strict)]) == 1
    out = capsys.readouterr().out
    table = out.split("changed calls:\n")[1].split("\n\n")[0].splitlines()
    assert table[0].split() == [
        "line",
        "turn",
        "call",
        "tool",
        "called",
        "recorded",
        "new",
        "change",
        "rules",
    ]
    assert [line.split()[2] for line in table[1:]] == ["c1", "c2"]
    assert "allowed -> blocked" in table[1]
    assert out.rstrip().endswith(
        "summary: 7 recorded calls replayed (7 tool); 2 would change: 2 allowed -> blocked"
    )


def test_the_cli_exits_0_when_nothing_new_is_blocked(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    loose = write(tmp_path, "loose.toml", LOOSE)
    assert main(["replay", str(session), "--config", str(loose), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["summary"]["regressions"] == 0
    assert report["summary"]["changes"] == {"blocked -> allowed": 1}
    (changed,) = [c for c in report["calls"] if c["change"]]
    assert changed["tool_call_id"] == "c3"
    assert changed["recorded"]["decided_by"] == "builtin:security-audit"
    assert changed["new"]["status"] == "ok"
    assert report["rules"] == {"builtin:security-audit": {"changed": 1, "blocked -> allowed": 1}}


def test_the_installed_command_runs_a_replay(session: Path, tmp_path: Path) -> None:
    strict = write(tmp_path, "strict.toml", STRICT)
    run = subprocess.run(
        [sys.executable, "-m", "interpose.cli", "replay", str(session), "--config", str(strict)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 1, run.stderr
    assert "2 allowed -> blocked" in run.stdout


# -- reading logs --------------------------------------------------------------------------------


def lines_of(session: Path) -> list[str]:
    return session.read_text(encoding="utf-8").splitlines(keepends=True)


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ('{"kind": "call_recorded", "stage": "tool", "input": {"com\n', "not valid JSON"),
        ("this is not json\n", "not valid JSON"),
        ("[1, 2, 3]\n", "expected an event (a JSON object), got list"),
        ('{"no_kind": 1}\n', "an event without a `kind`"),
        (
            '{"kind": "tool_exec_end", "duration_ns": "slow"}\n',
            "a tool_exec_end event with invalid",
        ),
    ],
)
def test_a_corrupt_line_is_an_error_naming_its_line(
    session: Path, tmp_path: Path, bad: str, problem: str
) -> None:
    lines = lines_of(session)
    lines.insert(2, bad)
    path = write(tmp_path, "corrupt.jsonl", "".join(lines))
    with pytest.raises(LogError) as caught:
        read_log(path)
    assert caught.value.line == 3
    assert str(caught.value).startswith(f"{path}:3: {problem}")


def test_a_truncated_last_line_says_the_log_was_cut_short(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = lines_of(session)
    cut = "".join(lines[:-1]) + lines[-1][: len(lines[-1]) // 2]
    path = write(tmp_path, "truncated.jsonl", cut)
    with pytest.raises(LogError, match=r"cut short") as caught:
        read_log(path)
    assert caught.value.line == len(lines)
    strict = write(tmp_path, "strict.toml", STRICT)
    assert main(["replay", str(path), "--config", str(strict)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"interpose replay: {path}:{len(lines)}: not valid JSON")


def test_unknown_kinds_and_blank_lines_are_skipped(session: Path, tmp_path: Path) -> None:
    lines = lines_of(session)
    lines[1:1] = ["\n", '{"kind": "from_a_newer_version", "x": 1}\n', "   \n"]
    log = read_log(write(tmp_path, "newer.jsonl", "".join(lines)))
    assert log.unknown == 1
    assert len(log.calls) == len(SESSION)


async def test_a_log_recorded_without_arguments_says_what_it_cannot_replay(
    tmp_path: Path,
) -> None:
    path = tmp_path / "plain.jsonl"
    pipe = Pipeline()
    log = AuditLog(path)
    log.attach(pipe)  # recording off: events only
    async with pipe, pipe.turn() as turn:
        for call_id, tool, args in SESSION:
            await turn.call_tool(tool, dict(args), call=run_tool, call_id=call_id)
    log.close()
    report = await replay_files([path], write(tmp_path, "strict.toml", STRICT))
    assert report.diffs == []
    assert report.summary() == (
        "0 recorded calls replayed; 0 would change; "
        "7 tool calls not replayable (arguments not recorded)"
    )


def test_rotated_logs_are_read_in_the_order_given(session: Path, tmp_path: Path) -> None:
    lines = lines_of(session)
    middle = len(lines) // 2
    older = write(tmp_path, "audit.jsonl.1", "".join(lines[:middle]))
    newer = write(tmp_path, "audit.jsonl", "".join(lines[middle:]))
    log = read_log([older, newer])
    assert [c.event.tool_call_id for c in log.calls] == [call_id for call_id, _, _ in SESSION]
    assert {c.path for c in log.calls} == {str(older), str(newer)}


def test_every_recorded_line_decodes_as_a_call_recorded_event(session: Path) -> None:
    events = [decode_event(line) for line in lines_of(session)]
    recorded = [e for e in events if isinstance(e, CallRecorded)]
    assert len(recorded) == len(SESSION)


async def test_arguments_changed_in_place_are_recorded_as_the_tool_got_them(
    tmp_path: Path,
) -> None:
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", id="add-path")
    def add_path(inp: Any, out: Any) -> None:
        out.args["paths"].append("docs/")  # a nested value, changed in place

    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    log.attach(pipe, record_args=True)
    async with pipe:
        await pipe.call_tool("read", {"paths": ["src/"]}, call=run_tool, call_id="r1")
    log.close()
    (call,) = read_log(path).calls
    assert call.event.input == {"paths": ["src/"]}
    assert call.event.applied == {"paths": ["src/", "docs/"]}


def test_fields_this_version_does_not_know_are_ignored(session: Path, tmp_path: Path) -> None:
    # a consumer of another process's stream (or a newer version) may add fields
    lines = []
    for line in lines_of(session):
        record = json.loads(line)
        record["stream_id"] = "1764000000000-0"
        lines.append(json.dumps(record) + "\n")
    log = read_log(write(tmp_path, "from_redis.jsonl", "".join(lines)))
    assert [c.event.tool_call_id for c in log.calls] == [call_id for call_id, _, _ in SESSION]


async def test_a_hard_abort_in_the_new_stack_is_an_aborted_call_naming_its_rule(
    session: Path,
) -> None:
    candidate = Pipeline(builtins=False)

    @candidate.intercept("tool.before", tools=["web_fetch"], id="kill-switch")
    def kill_switch(inp: Any, out: Any) -> None:
        raise HardAbort("no network today")

    report = await replay(read_log(session), candidate)
    changed = changes(report)
    assert changed["c2"] == ("ok", "aborted by kill-switch", "allowed -> blocked", ["kill-switch"])
    assert changed["c3"][2] == "blocked -> allowed"  # no path guard in this stack
    assert report.regressions == 1


def test_a_new_stack_that_raises_stops_the_replay_naming_the_line(session: Path) -> None:
    candidate = Pipeline(builtins=False)
    boom = RuntimeError("a bug in the new rule")

    @candidate.intercept("tool.before", tools=["read"], id="buggy", on_error="raise")
    def buggy(inp: Any, out: Any) -> None:
        raise boom

    log = read_log(session)
    with pytest.raises(ReplayError) as caught:
        anyio.run(replay, log, candidate)
    first_read = next(c for c in log.calls if c.event.tool_name == "read")
    assert (caught.value.line, caught.value.error) == (first_read.line, boom)
    assert str(caught.value) == (
        f"{session}:{first_read.line}: the new stack raised on this call: "
        "RuntimeError: a bug in the new rule"
    )
