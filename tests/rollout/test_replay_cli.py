"""``interpose replay`` as a CI gate runs it: a real ``python -m interpose replay`` on real
audit logs written by the pipeline's audit observer, with and without recording.

A replay of nothing must fail (exit 3, saying why), ``--json`` must print what the text
prints, every row must say what was called, and a long log must be streamed: the report
holds the changed calls, not the log.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from interpose import Pipeline
from interpose.bus.events import CallRecorded, decode_event, encode_event
from interpose.observers.audit import AuditLog
from interpose.replay import (
    CALLED_WIDTH,
    CallDiff,
    LogReader,
    build_candidate,
    describe_call,
    replay,
)

ROOT = Path(__file__).resolve().parents[2]

# (call id, tool, arguments): the recorded session
SESSION: list[tuple[str, str, dict[str, Any]]] = [
    ("c0", "exec", {"command": "ls -la src"}),
    ("c1", "exec", {"command": "git push origin main"}),
    ("c2", "web_fetch", {"url": "https://example.com/docs"}),
    ("c3", "read", {"path": "~/.ssh/id_rsa"}),
    ("c4", "read", {"path": "README.md"}),
    ("c5", "write", {"file_path": "notes/plan.md", "content": "step one"}),
    ("c6", "exec", {"command": "rm", "args": ["-f", "build dir/out.o"]}),
]
CALLED = {
    "c0": "ls -la src",
    "c1": "git push origin main",
    "c2": "url=https://example.com/docs",
    "c3": "~/.ssh/id_rsa",
    "c4": "README.md",
    "c5": "notes/plan.md",
    "c6": "rm -f 'build dir/out.o'",
}

STRICT = """
[hooks.builtins.tool-filter]
deny = ["web_fetch"]
[hooks.builtins.command-safety-guard]
deny = ["^git push"]
"""


def run_tool(args: dict[str, Any]) -> str:
    return f"done ({len(args)} arguments)"


async def record(
    path: Path, session: Sequence[tuple[str, str, dict[str, Any]]], *, record_args: bool
) -> None:
    pipe = Pipeline()  # the default guards: c3 is refused
    log = AuditLog(path, max_bytes=None)
    log.attach(pipe, record_args=record_args, record_results=record_args)
    async with pipe, pipe.turn(agent_id="coder", session_key="s1", turn_id="t1") as turn:
        for call_id, tool, args in session:
            await turn.call_tool(tool, dict(args), call=run_tool, call_id=call_id)
    log.close()


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "audit.jsonl"
    anyio.run(lambda: record(path, SESSION, record_args=True))
    return path


@pytest.fixture
def strict(tmp_path: Path) -> Path:
    path = tmp_path / "strict.toml"
    path.write_text(STRICT, encoding="utf-8")
    return path


def interpose(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``python -m interpose ARGS`` in a child, as a CI job runs it."""
    return subprocess.run(
        [sys.executable, "-m", "interpose", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def table(text: str, title: str) -> list[dict[str, str]]:
    """The rows of the table under ``title``, cut at the header's column starts."""
    lines = text.split(f"{title}\n", 1)[1].split("\n\n", 1)[0].splitlines()
    header = lines[0]
    names = header.split()
    starts = [header.index(f" {name}") + 1 for name in names]
    ends = [*starts[1:], None]
    return [
        {
            name: line[start:end].strip()
            for name, start, end in zip(names, starts, ends, strict=True)
        }
        for line in lines[1:]
    ]


# -- replaying nothing is a failure, with its reason ------------------------------------------


@pytest.mark.parametrize("content", ["", "\n   \n\n"])
def test_an_empty_log_exits_3_saying_it_is_empty(
    tmp_path: Path, strict: Path, content: str
) -> None:
    log = tmp_path / "audit.jsonl"
    log.write_text(content, encoding="utf-8")
    run = interpose("replay", log, "--config", strict)
    assert run.returncode == 3, run.stderr
    assert run.stderr == f"interpose replay: no call in {log} could be replayed: the log is empty\n"
    assert "summary: 0 recorded calls replayed" in run.stdout
    as_json = interpose("replay", log, "--config", strict, "--json")
    assert as_json.returncode == 3
    assert json.loads(as_json.stdout)["summary"]["replayed"] == 0


def test_a_log_recorded_without_record_args_exits_3_saying_so(tmp_path: Path, strict: Path) -> None:
    log = tmp_path / "plain.jsonl"
    anyio.run(lambda: record(log, SESSION, record_args=False))
    kinds = {decode_event(line).kind for line in log.read_bytes().splitlines()}
    assert "tool_exec_end" in kinds  # a real plain log: calls, no recorded arguments
    assert "call_recorded" not in kinds
    run = interpose("replay", log, "--config", strict)
    assert run.returncode == 3, run.stderr
    assert run.stderr == (
        f"interpose replay: no call in {log} could be replayed: the log was recorded "
        f"without record_args=True; {len(SESSION)} calls seen, 0 with arguments\n"
    )


def test_a_log_of_events_without_calls_exits_3(tmp_path: Path, strict: Path) -> None:
    log = tmp_path / "turns.jsonl"

    async def turns_only() -> None:
        pipe = Pipeline()
        audit = AuditLog(log, max_bytes=None)
        audit.attach(pipe, record_args=True)
        async with pipe, pipe.turn(agent_id="coder") as turn:
            await turn.message("hello")  # events, but no call: messages are not recorded
        audit.close()

    anyio.run(turns_only)
    events = len(log.read_bytes().splitlines())
    assert events >= 2
    run = interpose("replay", log, "--config", strict)
    assert run.returncode == 3, run.stderr
    assert run.stderr.endswith(f"could be replayed: {events} events, none of them a call\n")


def test_a_missing_log_is_bad_input_before_anything_is_replayed(
    recorded: Path, tmp_path: Path, strict: Path
) -> None:
    missing = tmp_path / "audit.jsonl.0"
    run = interpose("replay", recorded, missing, "--config", strict)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.startswith("interpose replay: [Errno 2] No such file or directory")
    assert str(missing) in run.stderr


def test_the_help_lists_every_exit_status() -> None:
    run = interpose("replay", "--help")
    assert run.returncode == 0
    codes = run.stdout.split("exit codes:\n", 1)[1]
    starts = [line.split()[0] for line in codes.splitlines() if line[:3].strip()]
    assert starts == ["0", "1", "2", "3"]
    assert "record_args=True" in codes


def test_calls_replayed_with_a_regression_exit_1_and_without_one_exit_0(
    recorded: Path, strict: Path, tmp_path: Path
) -> None:
    assert interpose("replay", recorded, "--config", strict).returncode == 1
    same = tmp_path / "same.toml"
    same.write_text("", encoding="utf-8")
    assert interpose("replay", recorded, "--config", same).returncode == 0


# -- what the report shows ----------------------------------------------------------------------


def test_every_row_shows_what_was_called(recorded: Path, strict: Path) -> None:
    run = interpose("replay", recorded, "--config", strict, "--all")
    assert run.returncode == 1, run.stderr
    rows = table(run.stdout, "calls:")
    assert {row["call"]: row["called"] for row in rows} == CALLED
    changed = interpose("replay", recorded, "--config", strict)
    assert [(row["call"], row["called"]) for row in table(changed.stdout, "changed calls:")] == [
        ("c1", "git push origin main"),
        ("c2", "url=https://example.com/docs"),
    ]


@pytest.mark.parametrize("every", [False, True])
def test_json_prints_what_the_text_prints(recorded: Path, strict: Path, every: bool) -> None:
    extra = ["--all"] if every else []
    text = interpose("replay", recorded, "--config", strict, *extra)
    as_json = interpose("replay", recorded, "--config", strict, "--json", *extra)
    assert text.returncode == as_json.returncode == 1
    report = json.loads(as_json.stdout)
    rows = table(text.stdout, "calls:" if every else "changed calls:")
    assert len(rows) == (len(SESSION) if every else 2)
    assert [
        {
            "line": f"{Path(c['file']).name}:{c['line']}",
            "turn": c["turn_id"],
            "call": c["tool_call_id"],
            "tool": c["tool_name"],
            "called": c["called"],
            "recorded": c["recorded"]["status"]
            + (f" by {c['recorded']['decided_by']}" if c["recorded"]["status"] != "ok" else ""),
            "new": c["new"]["status"]
            + (f" by {c['new']['decided_by']}" if c["new"]["status"] != "ok" else ""),
            "change": c["change"] or "unchanged",
            "rules": ", ".join(c["rules"]) or "-",
        }
        for c in report["calls"]
    ] == rows
    assert text.stdout.rstrip().endswith(f"summary: {report['summary']['text']}")
    rules = table(text.stdout, "rules:")
    assert {r["rule"]: int(r["changed"]) for r in rules} == {
        rule: row["changed"] for rule, row in report["rules"].items()
    }


def test_called_is_one_short_line_that_cannot_drive_the_terminal() -> None:
    def call(args: dict[str, Any], stage: str = "tool") -> CallRecorded:
        return CallRecorded(stage=stage, tool_name="exec", input=args)

    assert describe_call(call({"command": "echo hi\nrm -rf ~\x1b[2J"})) == (
        "echo hi\\nrm -rf ~\\x1b[2J"
    )
    long = describe_call(call({"command": "x" * 500}))
    assert len(long) == CALLED_WIDTH
    assert long.endswith("…")
    assert describe_call(call({"argv": ["git", "commit", "-m", "a b"]})) == "git commit -m 'a b'"
    assert describe_call(call({"paths": ["a.py", "b.py"]})) == "a.py, b.py"
    assert describe_call(call({"query": "two words", "limit": 5})) == 'query="two words" limit=5'
    assert describe_call(call({})) == ""
    llm = {"model": "claude-x", "messages": [{"role": "user", "content": "hi"}] * 3}
    assert describe_call(call(llm, "llm")) == "claude-x, 3 messages"
    assert describe_call(call({"message": "deploy", "metadata": {}}, "message")) == "deploy"
    params = {"provider": "anthropic", "model": "claude-x", "message": "deploy"}
    assert describe_call(call(params, "params")) == "anthropic/claude-x"


async def test_shadow_decisions_of_the_new_stack_stay_with_their_rows(recorded: Path) -> None:
    candidate = Pipeline()

    @candidate.intercept("tool.before", tools=["exec"], id="no-exec", mode="shadow")
    def no_exec(inp: Any, out: Any) -> None:
        out.block = True

    report = await replay(LogReader(recorded), candidate, every=True)
    assert {d.call.event.tool_call_id: d.shadow for d in report.diffs} == {
        call_id: (["no-exec: block"] if tool == "exec" else []) for call_id, tool, _ in SESSION
    }


# -- streaming ---------------------------------------------------------------------------------


def cycled_log(recorded: Path, path: Path, cycles: int) -> int:
    """``cycles`` copies of the recorded session's calls that the strict config lets
    through (c0, c4: unchanged), each in a turn of its own, then the whole session once;
    returns the number of recorded calls written."""
    lines = recorded.read_bytes().splitlines()
    quiet = {"c0", "c4"}
    events = [decode_event(line) for line in lines]
    keep = [e for e in events if getattr(e, "tool_call_id", "") in quiet]
    calls = 0
    with path.open("wb") as out:
        for n in range(cycles):
            for event in keep:
                copy = msgspec.structs.replace(
                    event,
                    turn_id=f"cycle-{n}",
                    tool_call_id=f"{event.tool_call_id}-{n}",  # type: ignore[union-attr]
                )
                out.write(encode_event(copy) + b"\n")
                calls += isinstance(copy, CallRecorded)
        out.write(recorded.read_bytes())
    return calls + len(SESSION)


async def test_a_long_log_is_streamed_and_the_report_keeps_only_changed_calls(
    recorded: Path, strict: Path, tmp_path: Path
) -> None:
    path = tmp_path / "long.jsonl"
    calls = cycled_log(recorded, path, 25_000)
    assert calls == 50_007
    total_lines = len(path.read_bytes().splitlines())
    reader = LogReader(path)
    lines_at: list[int] = []

    def seen(diff: CallDiff) -> None:
        if len(lines_at) < 3:
            lines_at.append(reader.lines)

    pipe, probe = build_candidate(strict)
    with anyio.fail_after(600):
        report = await replay(reader, pipe, probe, on_call=seen)
    # the first calls were replayed after reading a handful of lines, not the log
    assert lines_at[-1] < 20 < total_lines
    assert report.replayed == calls
    assert report.stages == {"tool": calls}
    # the report holds the changed calls only: the session's two new blocks
    assert [d.call.event.tool_call_id for d in report.diffs] == ["c1", "c2"]
    assert report.regressions == 2
    assert report.summary() == (
        f"{calls} recorded calls replayed ({calls} tool); 2 would change: 2 allowed -> blocked"
    )


class Watched(LogReader):
    """A reader that notes the most ended calls it held waiting for their arguments."""

    peak = 0

    def _ended(self, turn_id: str, call_id: str) -> None:
        super()._ended(turn_id, call_id)
        self.peak = max(self.peak, self._waiting)


def plain_turns(tmp_path: Path, turns: int, *, turn_events: bool = True) -> Path:
    """A log recorded without arguments: ``turns`` turns of the session."""
    path = tmp_path / "plain.jsonl"
    anyio.run(lambda: record(path, SESSION, record_args=False))
    lines = path.read_bytes().splitlines(keepends=True)
    if not turn_events:
        lines = [line for line in lines if b'"turn_' not in line[:20]]
    with path.open("wb") as out:
        for n in range(turns):
            out.write(b"".join(lines).replace(b'"t1"', f'"t{n}"'.encode()))
    return path


def test_an_unrecorded_log_is_counted_turn_by_turn(tmp_path: Path) -> None:
    # each turn's unrecorded calls are counted when the turn ends: what waits never
    # exceeds one turn's calls, however long the log
    reader = Watched(plain_turns(tmp_path, 300))
    assert list(reader) == []
    assert reader.unrecorded == 300 * len(SESSION)
    assert (reader.recorded, reader.peak) == (0, len(SESSION))


def test_without_turn_events_what_waits_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("interpose.replay._log.PENDING_LIMIT", 20)
    reader = Watched(plain_turns(tmp_path, 300, turn_events=False))
    assert b"turn_ended" not in Path(reader.paths[0]).read_bytes()
    assert list(reader) == []
    assert reader.unrecorded == 300 * len(SESSION)  # every call counted, once
    assert reader.peak <= 20


def test_recorded_calls_none_of_which_replay_say_so(recorded: Path, tmp_path: Path) -> None:
    # calls recorded by a newer version, of a stage this one does not replay
    newer = tmp_path / "newer.jsonl"
    lines = [
        line.replace(b'"stage":"tool"', b'"stage":"embedding"')
        for line in recorded.read_bytes().splitlines(keepends=True)
        if b'"call_recorded"' in line
    ]
    newer.write_bytes(b"".join(lines))
    report = anyio.run(replay, LogReader([newer, newer]), Pipeline(builtins=False))
    assert (report.replayed, report.skipped) == (0, 2 * len(SESSION))
    assert report.nothing_replayed() == (
        f"no call in {newer}, {newer} could be replayed: {2 * len(SESSION)} recorded calls, "
        "none of a stage or shape this version replays (tool, llm, message, params with "
        "their input recorded)"
    )
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    report = anyio.run(replay, LogReader([empty, empty]), Pipeline(builtins=False))
    assert report.nothing_replayed().endswith("could be replayed: the logs are empty")
    report = anyio.run(replay, LogReader(recorded), Pipeline(builtins=False))
    assert report.nothing_replayed() == ""
