"""The JSONL audit log as its reader relies on it: one decodable line per event, in
order, nothing lost under load, nothing lost or split by rotation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from interpose import Approval, ApprovalRequest, Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.bus import events as ev
from interpose.bus.events import Event, decode_event
from interpose.observers import AuditLog


def run(args: dict[str, Any]) -> str:
    return "ran"


def fail(args: dict[str, Any]) -> str:
    raise OSError("disk full")


def guard(pipe: Pipeline) -> None:
    """Register interceptors that block, answer, deny, and fail (policy skip)."""

    @pipe.intercept("tool.before", tools=["exec"], id="no-rm")
    def no_rm(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if "rm" in out.args["command"]:
            out.block, out.block_reason = True, "rm is not allowed"

    @pipe.intercept("tool.before", tools=["read"], id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.args["path"] == "cached":
            out.result = "from the cache"

    @pipe.intercept("tool.before", tools=["write"], id="buggy", on_error="skip")
    def buggy(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise KeyError("path")

    @pipe.approver(tools=["write"], id="no-etc")
    def no_etc(request: ApprovalRequest) -> Approval | None:
        return Approval.deny("not under /etc") if request.args["path"][:5] == "/etc/" else None


async def one_turn(pipe: Pipeline) -> None:
    """A turn with an allowed, a blocked, a responded, a denied and an erroring call."""
    async with pipe.turn(agent_id="coder", session_key="s1") as turn:
        await turn.message("tidy up")
        await turn.call_tool("exec", {"command": "ls"}, call=run, call_id="c1")
        await turn.call_tool("exec", {"command": "rm -rf /"}, call=run, call_id="c2")
        await turn.call_tool("read", {"path": "cached"}, call=run, call_id="c3")
        await turn.call_tool("write", {"path": "/etc/passwd"}, call=run, call_id="c4")
        await turn.call_tool("write", {"path": "/tmp/x"}, call=fail, call_id="c5")


def read_lines(*files: Path) -> list[bytes]:
    return [line for f in files for line in f.read_bytes().splitlines(keepends=True)]


def file_names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def log_files(path: Path) -> list[Path]:
    """``path`` and its rotated files, oldest first."""
    rotated = sorted(path.parent.glob(path.name + ".*"), key=lambda p: -int(p.suffix[1:]))
    return [*rotated, path]


# -- what gets written -----------------------------------------------------------------


async def test_one_decodable_line_per_event_in_seq_order(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    guard(pipe)
    recorded: list[Event] = []
    pipe.subscribe(recorded.append)
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as audit:
        sub = audit.attach(pipe)
        async with pipe:
            await one_turn(pipe)
        lines = read_lines(path)  # flushed line by line: readable while the log is open

    assert all(line.endswith(b"\n") for line in lines)
    decoded = [decode_event(line) for line in lines]
    assert decoded == recorded
    assert [e.seq for e in decoded] == sorted(e.seq for e in decoded)
    assert sub.overflow == "block"
    assert sub.stats.published == sub.stats.delivered == len(lines)
    kinds = {e.kind for e in decoded}
    assert {"tool_exec_skipped", "interceptor_failed", "turn_ended"} <= kinds
    ends = {e.tool_call_id: e.status for e in decoded if isinstance(e, ev.ToolExecEnd)}
    assert ends == {"c1": "ok", "c2": "blocked", "c3": "responded", "c4": "denied", "c5": "error"}


async def test_attach_can_narrow_the_kinds(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    guard(pipe)
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as audit:
        audit.attach(pipe, events={"tool_exec_skipped"})
        async with pipe:
            await one_turn(pipe)

    skipped = [decode_event(line) for line in read_lines(path)]
    assert [(e.kind, e.tool_call_id) for e in skipped if isinstance(e, ev.ToolExecSkipped)] == [
        ("tool_exec_skipped", "c2"),
        ("tool_exec_skipped", "c3"),
        ("tool_exec_skipped", "c4"),
    ]
    assert len(skipped) == 3


async def test_a_flood_into_a_small_buffer_loses_nothing(tmp_path: Path) -> None:
    # 10,000 calls publish 20,000 tool events; the 8-event buffer fills again and again,
    # and "block" makes the calls wait for the writer instead of dropping lines
    pipe = Pipeline(builtins=False)
    path = tmp_path / "audit.jsonl"
    with AuditLog(path) as audit:
        sub = audit.attach(pipe, events={"tool_exec_start", "tool_exec_end"}, buffer=8)
        async with pipe, pipe.turn() as turn:
            for i in range(10_000):
                await turn.call_tool("read", {"path": "x"}, call=run, call_id=f"c{i}")

    lines = read_lines(path)
    assert len(lines) == 20_000
    seqs = [decode_event(line).seq for line in lines]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == 20_000
    assert sub.stats.dropped == 0
    assert sub.stats.delivered == 20_000
    assert sub.stats.high_water == 8  # it did fill up


async def test_an_existing_log_is_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    for session in ("first", "second"):
        pipe = Pipeline(builtins=False)
        with AuditLog(path) as audit:
            audit.attach(pipe, events={"tool_exec_end"})
            async with pipe:
                await pipe.call_tool("read", {}, call=run, session_key=session)

    assert [decode_event(line).session_key for line in read_lines(path)] == ["first", "second"]


# -- rotation ------------------------------------------------------------------------


async def test_rotation_keeps_every_line_whole_and_in_order(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    guard(pipe)
    recorded: list[Event] = []
    pipe.subscribe(recorded.append)
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, max_bytes=1000, backups=50) as audit:
        audit.attach(pipe)
        async with pipe:
            for _ in range(5):
                await one_turn(pipe)

    files = log_files(path)
    assert len(files) > 5, "the test should rotate several times"
    for f in files:
        size = f.stat().st_size
        assert size <= 1000 or len(read_lines(f)) == 1, f"{f.name} holds {size} bytes"
    lines = read_lines(*files)
    assert len(lines) == len(recorded)
    assert [decode_event(line) for line in lines] == recorded


async def test_rotation_keeps_only_the_newest_backups(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    recorded: list[Event] = []
    pipe.subscribe(recorded.append, events={"tool_exec_end"})
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, max_bytes=600, backups=2) as audit:
        audit.attach(pipe, events={"tool_exec_end"})
        async with pipe, pipe.turn() as turn:
            for i in range(100):
                await turn.call_tool("read", {}, call=run, call_id=f"c{i}")

    assert file_names(tmp_path) == [
        "audit.jsonl",
        "audit.jsonl.1",
        "audit.jsonl.2",
    ]
    kept = [decode_event(line) for line in read_lines(*log_files(path))]
    # the files hold the newest events, without a gap
    assert kept == recorded[-len(kept) :]
    assert len(kept) < len(recorded)


def test_a_line_longer_than_max_bytes_gets_a_file_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    short = ev.TurnStarted(seq=1)
    long = ev.MessageReceived(seq=2, message="x" * 500)
    with AuditLog(path, max_bytes=100, backups=3) as audit:
        audit(short)
        audit(long)
        audit(short)

    assert [[decode_event(x) for x in read_lines(f)] for f in log_files(path)] == [
        [short],
        [long],
        [short],
    ]


def test_a_failed_rotation_keeps_the_line_and_reports(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    # a directory where the first backup should go: the rename onto it fails
    (tmp_path / "audit.jsonl.1").mkdir()
    (tmp_path / "audit.jsonl.1" / "keep").touch()
    events = [ev.TurnStarted(seq=n) for n in range(1, 4)]
    with AuditLog(path, max_bytes=30, backups=1) as audit:
        audit(events[0])
        with pytest.raises(OSError):  # noqa: PT011 - the platform picks the subclass
            audit(events[1])
        with pytest.raises(OSError):  # noqa: PT011
            audit(events[2])

    assert [decode_event(line) for line in read_lines(path)] == events


# -- arguments and lifecycle -----------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_bytes": 0}, "max_bytes"),
        ({"max_bytes": -5}, "max_bytes"),
        ({"max_bytes": 1.5}, "max_bytes"),
        ({"backups": 0}, "backups"),
        ({"backups": "3"}, "backups"),
    ],
)
def test_bad_arguments_are_refused(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AuditLog(tmp_path / "audit.jsonl", **kwargs)
    assert not (tmp_path / "audit.jsonl").exists()


def test_a_missing_directory_fails_at_construction(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        AuditLog(tmp_path / "no-such-dir" / "audit.jsonl")


def test_max_bytes_none_never_rotates(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    with AuditLog(path, max_bytes=None) as audit:
        for n in range(200):
            audit(ev.TurnStarted(seq=n))
    assert file_names(tmp_path) == ["audit.jsonl"]
    assert len(read_lines(path)) == 200


def test_close_is_idempotent_and_writing_after_it_raises(tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    with audit:
        audit(ev.TurnStarted(seq=1))
    assert audit.closed
    audit.close()
    with pytest.raises(ValueError, match="closed"):
        audit(ev.TurnStarted(seq=2))
    assert len(read_lines(tmp_path / "audit.jsonl")) == 1


async def test_a_closed_log_is_reported_as_a_failing_observer(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    failures: list[Event] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    audit = AuditLog(tmp_path / "audit.jsonl")
    audit.attach(pipe, events={"tool_exec_end"}, name="audit")
    audit.close()
    async with pipe:
        await pipe.call_tool("read", {}, call=run)

    assert pipe.stats.failures == {"observer:audit": 1}
    assert [(e.hook, e.interceptor_id, e.error_type) for e in failures] == [  # type: ignore[union-attr]
        ("observer", "audit", "ValueError")
    ]
