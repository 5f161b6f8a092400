"""Replaying recorded traffic through another stack: what would a new policy change?

An audit log written with recording on (``AuditLog.attach(pipe, record_args=True)``,
``[observers.audit] record_args = true``) holds a ``call_recorded`` event per call: the
arguments as the agent sent them, what the tool got, the outcome and, optionally, the
result.  ``replay`` feeds each recorded call, in order, through a candidate pipeline --
the tool is never run: a stand-in answers with the recorded result -- and compares the
candidate's decision with the recorded one:

- ``allowed -> blocked``: the candidate refuses (blocks, denies, aborts) a call that
  the recorded run let through; the regression a policy change must not bring by
  surprise (``interpose replay`` exits 1);
- ``blocked -> allowed``: the reverse;
- ``now blocked by <rule>``: still refused, by another rule;
- ``args rewritten`` / ``result rewritten`` / ``request rewritten`` / ``response
  rewritten`` / ``message rewritten`` / ``params rewritten``: the call goes through,
  changed differently;
- ``status changed``: anything else (ok -> responded, ...).

Each change is attributed to the rules (registration ids) that made the candidate's
decision: the blocker, the responder, the handlers that rewrote (the candidate runs with
a probe in place of a tracer, which reads each handler's decision as spans would).
What shadow registrations of the candidate would have done is reported too.

Logs are read robustly: blank lines and events of kinds this version does not know are
skipped; a line that is not a JSON object, or an event whose fields have the wrong
types, is an error naming the file and line (a log cut short by a crash ends in such a
line).  A log from the Redis consumer (``interpose audit --redis``) has the same
format.

Logs are streamed: ``LogReader`` reads one line at a time and the replay runs each call
as it is read, so memory holds the report (the changed calls, or every call when asked
for), never the log.
"""

from __future__ import annotations

import os
import re
import shlex
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.lowlevel
import msgspec
from opentelemetry import trace as otel_trace
from opentelemetry.trace import INVALID_SPAN_CONTEXT, NonRecordingSpan

from .bus.events import (
    EVENT_KINDS,
    CallRecorded,
    ShadowDecision,
    ToolExecEnd,
    TurnAborted,
    TurnEnded,
    decode_event,
)
from .errors import AbortTurn, HardAbort, InterposeError
from .middleware.builtins.security_audit import SecurityAudit
from .pipeline.payloads import LLMRequest, LLMResponse, ToolResult

if TYPE_CHECKING:
    from .pipeline.pipeline import Pipeline
    from .pipeline.turn import Turn

__all__ = [
    "CallDiff",
    "LogError",
    "LogReader",
    "RecordedCall",
    "RecordedLog",
    "ReplayError",
    "ReplayReport",
    "build_candidate",
    "describe_call",
    "read_log",
    "replay",
    "replay_files",
]

REFUSED = frozenset({"blocked", "denied", "aborted"})
#: what the stand-in tool answers when the recorded run never ran the tool
NOT_RECORDED = "<not recorded: the tool did not run in the recorded session>"


class LogError(InterposeError, ValueError):
    """A log line that cannot be read: not JSON (a truncated or corrupt line), not an
    object, or an event whose fields have the wrong types.

    Attributes:
        path: the file.
        line: the line number (from 1).
    """

    def __init__(self, path: str, line: int, problem: str) -> None:
        super().__init__(f"{path}:{line}: {problem}")
        self.path = path
        self.line = line
        self.problem = problem


class ReplayError(InterposeError, RuntimeError):
    """The candidate stack raised on a recorded call (a handler whose policy is
    ``raise``, a middleware that broke the onion's contract): the replay stops there.

    Attributes:
        path: the file of the call's record.
        line: its line number.
        error: what was raised.
    """

    def __init__(self, call: RecordedCall, error: BaseException) -> None:
        super().__init__(
            f"{call.path}:{call.line}: the new stack raised on this call: "
            f"{type(error).__name__}: {error}"
        )
        self.path = call.path
        self.line = call.line
        self.error = error


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """A ``call_recorded`` event and where it was read."""

    event: CallRecorded
    path: str
    line: int


@dataclass(slots=True)
class RecordedLog:
    """What ``read_log`` found.

    Attributes:
        calls: the recorded calls, in log order.
        lines: how many non-blank lines were read.
        unknown: how many events of kinds this version does not know were skipped.
        unrecorded: tool calls the log has a ``tool_exec_end`` for but no recorded
            arguments (recording was off): they cannot be replayed.
        paths: the files read, in order.
    """

    calls: list[RecordedCall] = field(default_factory=list)
    lines: int = 0
    unknown: int = 0
    unrecorded: int = 0
    paths: list[str] = field(default_factory=list)

    def __iter__(self) -> Iterator[RecordedCall]:
        return iter(self.calls)

    @property
    def recorded(self) -> int:
        """How many ``call_recorded`` events were read."""
        return len(self.calls)


#: how many ended tool calls may wait for their recorded arguments; past it the
#: oldest turn's are counted as not recorded (a log filtered without turn events)
PENDING_LIMIT = 10_000


class LogReader:
    """The recorded calls of audit logs, read one line at a time as they are iterated.

    Iterate it once: it yields each ``call_recorded`` event (a ``RecordedCall``) as it
    reads it and counts the rest, so memory does not grow with the log.  The counts are
    final when the iteration ends.

    A tool call without recorded arguments shows as a ``tool_exec_end`` that no
    ``call_recorded`` follows (the recording layer publishes after the call ends, inside
    the turn): it is counted in ``unrecorded`` when its turn ends, or at the end of the
    logs.  Ended calls wait at most ``PENDING_LIMIT`` at a time (a log written without
    turn events); past it the oldest turn's are counted then.

    Args:
        paths: one log, or several in the order given (rotated files: oldest first).

    Attributes:
        paths: the files, in order.
        lines: non-blank lines read.
        unknown: events of kinds this version does not know, skipped.
        recorded: ``call_recorded`` events read.
        unrecorded: tool calls ended without recorded arguments: not replayable.
    """

    def __init__(self, paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> None:
        files = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
        self.paths = [os.fspath(file) for file in files]
        self.lines = 0
        self.unknown = 0
        self.recorded = 0
        self.unrecorded = 0
        # turn id -> call ids ended there and not recorded (yet), oldest turn first
        self._pending: OrderedDict[str, set[str]] = OrderedDict()
        self._waiting = 0

    def check(self) -> None:
        """Open and close every file: a missing or unreadable one fails before a replay
        starts rather than after the files before it.

        Raises:
            OSError: a file cannot be opened.
        """
        for path in self.paths:
            with open(path, "rb"):
                pass

    def __iter__(self) -> Iterator[RecordedCall]:
        """Raises:
        LogError: a line is not a JSON object, or is an event with fields of the
            wrong types; the message names the file and the line.
        OSError: a file cannot be read.
        """
        for name in self.paths:
            with open(name, "rb") as handle:
                for number, raw in enumerate(handle, start=1):
                    line = raw.strip()
                    if not line:
                        continue
                    self.lines += 1
                    event = _decode(line, name, number, complete=raw.endswith(b"\n"))
                    if isinstance(event, CallRecorded):
                        self.recorded += 1
                        if event.stage == "tool":
                            self._settle(event.turn_id, event.tool_call_id)
                        yield RecordedCall(event, name, number)
                    elif isinstance(event, ToolExecEnd):
                        if not event.retried:
                            self._ended(event.turn_id, event.tool_call_id)
                    elif isinstance(event, TurnEnded | TurnAborted):
                        self._close_turn(event.turn_id)
                    elif event is None:
                        self.unknown += 1
        while self._pending:
            self._close_turn(next(iter(self._pending)))

    def _ended(self, turn_id: str, call_id: str) -> None:
        calls = self._pending.setdefault(turn_id, set())
        if call_id not in calls:
            calls.add(call_id)
            self._waiting += 1
        while self._waiting > PENDING_LIMIT:
            self._close_turn(next(iter(self._pending)))

    def _settle(self, turn_id: str, call_id: str) -> None:
        calls = self._pending.get(turn_id)
        if calls is not None and call_id in calls:
            calls.discard(call_id)
            self._waiting -= 1
            if not calls:
                del self._pending[turn_id]

    def _close_turn(self, turn_id: str) -> None:
        left = self._pending.pop(turn_id, None)
        if left:
            self.unrecorded += len(left)
            self._waiting -= len(left)


def read_log(paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]) -> RecordedLog:
    """Read one audit log, or several in the order given (rotated files: oldest first),
    into memory.  ``LogReader`` streams them instead (what ``interpose replay`` does).

    Raises:
        LogError: a line is not a JSON object, or is an event with fields of the wrong
            types; the message names the file and the line.
        OSError: a file cannot be read.
    """
    reader = LogReader(paths)
    calls = list(reader)
    return RecordedLog(calls, reader.lines, reader.unknown, reader.unrecorded, reader.paths)


def _decode(line: bytes, path: str, number: int, *, complete: bool) -> Any:
    """The event on ``line``; None for a kind this version does not know."""
    try:
        return decode_event(line)
    except msgspec.DecodeError as exc:
        error = str(exc)
    # find out what is wrong, for a message that helps
    try:
        value = msgspec.json.decode(line)
    except msgspec.DecodeError:
        cut = "" if complete else " (the last line, without a newline: the log was cut short?)"
        raise LogError(
            path, number, f"not valid JSON: truncated or corrupt{cut}: {error}"
        ) from None
    if not isinstance(value, dict):
        raise LogError(
            path, number, f"expected an event (a JSON object), got {type(value).__name__}"
        )
    kind = value.get("kind")
    if not isinstance(kind, str):
        raise LogError(path, number, "an event without a `kind`")
    if kind not in EVENT_KINDS:
        return None  # a newer version's event: not ours to judge
    raise LogError(path, number, f"a {kind} event with invalid fields: {error}")


# -- the decision probe ---------------------------------------------------------------


class _ProbeSpan(NonRecordingSpan):
    """A span that is never exported; it notes the decision an instrumented handler
    reports (``interpose.decision``), with the handler's id and hook."""

    def __init__(self, attributes: Any, sink: list[tuple[str, str, str]]) -> None:
        super().__init__(INVALID_SPAN_CONTEXT)
        attributes = attributes or {}
        self._id = str(attributes.get("interpose.interceptor.id", ""))
        self._hook = str(attributes.get("interpose.hook", ""))
        self._sink = sink

    def set_attribute(self, key: str, value: Any) -> None:
        if key == "interpose.decision" and self._id:
            self._sink.append((self._id, self._hook, str(value)))


class _ProbeTracer(otel_trace.Tracer):
    def __init__(self, sink: list[tuple[str, str, str]]) -> None:
        self.sink = sink

    def start_span(self, name: str, *args: Any, **kwargs: Any) -> otel_trace.Span:
        return _ProbeSpan(kwargs.get("attributes"), self.sink)

    @contextmanager
    def start_as_current_span(  # type: ignore[override]
        self, name: str, *args: Any, **kwargs: Any
    ) -> Iterator[otel_trace.Span]:
        yield _ProbeSpan(kwargs.get("attributes"), self.sink)


class _ProbeProvider(otel_trace.TracerProvider):
    def __init__(self) -> None:
        self.decisions: list[tuple[str, str, str]] = []
        self.tracer = _ProbeTracer(self.decisions)

    def get_tracer(self, *args: Any, **kwargs: Any) -> otel_trace.Tracer:
        return self.tracer


# -- the candidate --------------------------------------------------------------------


def build_candidate(config_path: str | os.PathLike[str]) -> tuple[Pipeline, _ProbeProvider]:
    """The pipeline ``config_path`` builds, for a replay: without its observers (a
    replay writes no audit log and exports nothing) and with the decision probe.

    Raises:
        ConfigError: the file is invalid (the message names the field).
    """
    from .config import build_pipeline, load_config
    from .config.schema import ObserversConfig

    config = load_config(config_path)
    config = msgspec.structs.replace(config, observers=ObserversConfig())
    probe = _ProbeProvider()
    pipe = build_pipeline(
        config,
        base_dir=os.path.dirname(os.path.abspath(config_path)),
        source=os.fspath(config_path),
        tracing="interceptor",
        tracer_provider=probe,  # no span is exported: a replay only reads decisions
    )
    return pipe, probe


# -- the diff -------------------------------------------------------------------------


@dataclass(slots=True)
class Outcome:
    """What became of a call: its status, who decided and why."""

    status: str
    decided_by: str = ""
    reason: str = ""

    def describe(self) -> str:
        if self.decided_by and self.status != "ok":
            return f"{self.status} by {self.decided_by}"
        return self.status


@dataclass(slots=True)
class CallDiff:
    """One recorded call, replayed.

    ``change`` is "" when the candidate decides as the recorded run did; else one of
    the changes listed in the module docstring.  ``rules`` are the registrations the
    change is attributed to; ``shadow`` what the candidate's shadow registrations
    would have done (``"<id>: <decision>"``).
    """

    call: RecordedCall
    recorded: Outcome
    new: Outcome
    change: str = ""
    rules: list[str] = field(default_factory=list)
    shadow: list[str] = field(default_factory=list)

    @property
    def regression(self) -> bool:
        """The candidate refuses what the recorded run allowed."""
        return self.change == "allowed -> blocked"

    @property
    def called(self) -> str:
        """What was called, short (``describe_call``)."""
        return describe_call(self.call.event)

    def as_json(self) -> dict[str, Any]:
        event = self.call.event
        return {
            "file": self.call.path,
            "line": self.call.line,
            "stage": event.stage,
            "turn_id": event.turn_id,
            "agent_id": event.agent_id,
            "session_key": event.session_key,
            "tool_name": event.tool_name,
            "tool_call_id": event.tool_call_id,
            "called": self.called,
            "recorded": {
                "status": self.recorded.status,
                "decided_by": self.recorded.decided_by,
                "reason": self.recorded.reason,
            },
            "new": {
                "status": self.new.status,
                "decided_by": self.new.decided_by,
                "reason": self.new.reason,
            },
            "change": self.change,
            "rules": self.rules,
            "shadow": self.shadow,
        }


@dataclass(slots=True)
class ReplayReport:
    """The rows of a replay (``diffs``) and counts over every replayed call.

    ``diffs`` holds the changed calls, or every replayed call when the replay was asked
    for ``every`` call: what the report shows, in log order.  The counts cover every
    call, kept or not.

    Attributes:
        diffs: the rows.
        every: whether ``diffs`` holds every replayed call (else the changed ones).
        replayed: how many calls were replayed.
        stages: stage -> how many calls of it were replayed.
        recorded: how many ``call_recorded`` events the logs hold.
        skipped: calls that could not be replayed: tool calls whose arguments were not
            recorded, recorded calls of a stage or shape this version does not replay.
        unknown: events of kinds this version does not know, skipped.
        lines: non-blank lines read.
        paths: the logs read.
    """

    diffs: list[CallDiff] = field(default_factory=list)
    skipped: int = 0
    unknown: int = 0
    lines: int = 0
    every: bool = False
    replayed: int = 0
    stages: dict[str, int] = field(default_factory=dict)
    recorded: int = 0
    paths: list[str] = field(default_factory=list)

    def add(self, diff: CallDiff) -> None:
        """Count a replayed call; keep it when it changed, or when keeping ``every``."""
        self.replayed += 1
        stage = diff.call.event.stage
        self.stages[stage] = self.stages.get(stage, 0) + 1
        if self.every or diff.change:
            self.diffs.append(diff)

    @property
    def changed(self) -> list[CallDiff]:
        return [d for d in self.diffs if d.change]

    @property
    def regressions(self) -> int:
        """How many calls the candidate would block that the recorded run allowed."""
        return sum(1 for d in self.diffs if d.regression)

    def counts(self) -> dict[str, int]:
        """Change -> how many calls."""
        found: dict[str, int] = {}
        for diff in self.changed:
            found[diff.change] = found.get(diff.change, 0) + 1
        return found

    def rules(self) -> dict[str, dict[str, int]]:
        """Rule id -> change -> how many calls it changed (``changed``: in all)."""
        table: dict[str, dict[str, int]] = {}
        for diff in self.changed:
            for rule in diff.rules or ["(unattributed)"]:
                row = table.setdefault(rule, {"changed": 0})
                row["changed"] += 1
                row[diff.change] = row.get(diff.change, 0) + 1
        return dict(sorted(table.items(), key=lambda item: (-item[1]["changed"], item[0])))

    def summary(self) -> str:
        stages = ", ".join(f"{n} {stage}" for stage, n in self.stages.items())
        counts = self.counts()
        parts = [
            f"{self.replayed} recorded calls replayed" + (f" ({stages})" if stages else ""),
            f"{len(self.changed)} would change"
            + (": " + ", ".join(f"{n} {change}" for change, n in counts.items()) if counts else ""),
        ]
        if self.skipped:
            parts.append(f"{self.skipped} tool calls not replayable (arguments not recorded)")
        return "; ".join(parts)

    def nothing_replayed(self) -> str:
        """Why no call was replayed ("" when some were): a gate must not pass on nothing."""
        if self.replayed:
            return ""
        logs = ", ".join(self.paths) or "the log"
        if not self.lines:
            why = "the log is empty" if len(self.paths) < 2 else "the logs are empty"
        elif self.recorded:
            why = (
                f"{self.recorded} recorded calls, none of a stage or shape this version "
                "replays (tool, llm, message, params with their input recorded)"
            )
        elif self.skipped:
            why = (
                "the log was recorded without record_args=True; "
                f"{self.skipped} calls seen, 0 with arguments"
            )
        else:
            why = f"{self.lines} events, none of them a call"
        return f"no call in {logs} could be replayed: {why}"

    def as_json(self) -> dict[str, Any]:
        """What ``render`` prints, as one object: ``calls`` are the same rows."""
        return {
            "calls": [d.as_json() for d in self.diffs],
            "rules": self.rules(),
            "summary": {
                "replayed": self.replayed,
                "changed": len(self.changed),
                "regressions": self.regressions,
                "changes": self.counts(),
                "skipped": self.skipped,
                "unknown_events": self.unknown,
                "text": self.summary(),
            },
        }


def _outcome(event: CallRecorded) -> Outcome:
    return Outcome(event.status, event.decided_by, event.reason)


def _classify(
    recorded: Outcome, new: Outcome, rewritten: str, result_changed: bool, stage: str
) -> str:
    was, now = recorded.status in REFUSED, new.status in REFUSED
    if now and not was:
        return "allowed -> blocked"
    if was and not now:
        return "blocked -> allowed"
    if was and now:
        if (recorded.status, recorded.decided_by) != (new.status, new.decided_by):
            return f"now {new.status} by {new.decided_by or '?'}"
        return ""
    if recorded.status != new.status:
        return f"status changed ({recorded.status} -> {new.status})"
    if rewritten:
        return f"{rewritten} rewritten"
    if result_changed:
        return "response rewritten" if stage == "llm" else "result rewritten"
    return ""


class _RecordedFailure(Exception):
    """Raised by the stand-in tool to give back a recorded error result."""


def _stand_in_error(output: Any) -> Exception:
    """An exception whose error result reads as the recorded ``output``
    (``"<ExcType>: <message>"``)."""
    text = output if isinstance(output, str) else str(output)
    name, sep, message = text.partition(": ")
    if sep and name.isidentifier():
        cls: type[Exception] = type(name, (_RecordedFailure,), {})
        return cls(message)
    return _RecordedFailure(text)


async def replay(
    log: RecordedLog | LogReader,
    pipe: Pipeline,
    probe: _ProbeProvider | None = None,
    *,
    every: bool = False,
    on_call: Callable[[CallDiff], None] | None = None,
) -> ReplayReport:
    """Run every recorded call of ``log`` through ``pipe``, in order, never running a
    tool or a model, and compare each outcome with the recorded one.

    A ``LogReader`` is read as the replay goes: the report keeps the changed calls (with
    ``every``, every replayed call) and counts the rest, so memory holds the report, not
    the log.  ``on_call`` sees every replayed call, kept or not, as it is replayed.

    ``pipe`` must not be entered (the replay enters it: its process hooks start).
    While it runs, its tracing goes to the decision probe (``probe``, from
    ``build_candidate``, or one made here), which attributes rewrites to the handlers
    that made them; its own tracing settings are restored afterwards.

    Raises:
        ReplayError: the pipeline raised on a call (not a refusal, not an abort: a
            handler whose policy is ``raise``, say); the replay stops there.
        LogError: a line of a ``LogReader``'s logs cannot be read; the replay stops there.
    """
    if probe is None:
        probe = _ProbeProvider()
    trace = pipe._trace
    saved = (trace.explicit, trace.level)
    trace.explicit, trace.level = probe, "interceptor"
    try:
        report = ReplayReport(every=every)
        await _replay(log, pipe, probe, report, on_call)
    finally:
        trace.explicit, trace.level = saved
    # the reader's counts are final now that it has been read to its end
    report.skipped += log.unrecorded
    report.unknown, report.lines, report.paths = log.unknown, log.lines, list(log.paths)
    report.recorded = log.recorded
    return report


async def _replay(
    log: Iterable[RecordedCall],
    pipe: Pipeline,
    probe: _ProbeProvider,
    report: ReplayReport,
    on_call: Callable[[CallDiff], None] | None,
) -> None:
    shadows: dict[tuple[str, str], list[str]] = {}

    def on_shadow(event: ShadowDecision) -> None:
        key = (event.turn_id, event.tool_call_id)
        shadows.setdefault(key, []).append(f"{event.interceptor_id}: {event.decision}")

    watch = pipe.subscribe(on_shadow, events={"shadow_decision"}, name="replay: shadow decisions")
    async with pipe:
        for call in log:
            stage = call.event.stage
            probe.decisions.clear()
            if not isinstance(call.event.input, dict) or stage not in _REPLAYERS:
                report.skipped += 1
                continue
            try:
                diff = await _REPLAYERS[stage](pipe, call, probe)
            except Exception as exc:
                raise ReplayError(call, exc) from exc
            # the call's shadow decisions are on their way to on_shadow: let them
            # arrive, so that they are this call's and none are kept for later
            while not watch.idle:
                await anyio.lowlevel.checkpoint()
            if shadows:
                if stage == "tool":
                    diff.shadow = shadows.get((call.event.turn_id, call.event.tool_call_id), [])
                shadows.clear()
            report.add(diff)
            if on_call is not None:
                on_call(diff)


def _attribute(
    diff: CallDiff, probe: _ProbeProvider | None, hooks: Iterable[str], rewritten: bool
) -> None:
    """Name the rules behind ``diff.change``."""
    if not diff.change:
        return
    if diff.change == "blocked -> allowed":
        diff.rules = [diff.recorded.decided_by] if diff.recorded.decided_by else []
        return
    if diff.new.decided_by:
        diff.rules = [diff.new.decided_by]
        return
    if probe is not None and rewritten:
        wanted = set(hooks)
        diff.rules = list(
            dict.fromkeys(
                rid
                for rid, hook, decision in probe.decisions
                if hook in wanted and decision in ("modify", "respond", "retry")
            )
        )


def _turn(pipe: Pipeline, event: CallRecorded, *, provider: str = "", model: str = "") -> Turn:
    """A turn carrying the ids of the turn ``event`` was recorded in."""
    return pipe.turn(
        agent_id=event.agent_id or "main",
        session_key=event.session_key,
        provider=provider,
        model=model,
        turn_id=event.turn_id or None,
    )


def _setup_diff(
    call: RecordedCall,
    recorded: Outcome,
    new: Outcome,
    left: Any,
    stage: str,
    probe: _ProbeProvider | None,
) -> CallDiff:
    """The diff of a ``message`` or ``params`` call: ``left`` is what the stage's hooks
    left of its input now (None when the turn aborted)."""
    applied = call.event.applied
    rewritten = stage if left is not None and applied is not None and left != applied else ""
    diff = CallDiff(call, recorded, new, _classify(recorded, new, rewritten, False, stage))
    _attribute(diff, probe, (f"{stage}.before", stage), bool(rewritten))
    return diff


async def _replay_tool(
    pipe: Pipeline, call: RecordedCall, probe: _ProbeProvider | None
) -> CallDiff:
    event = call.event
    recorded = _outcome(event)
    applied: list[Any] = []
    has_output = "results" in event.recorded

    def stand_in(args: dict[str, Any]) -> Any:
        applied.append(msgspec.json.decode(msgspec.json.encode(args)))
        if event.applied is None and recorded.status not in ("ok", "error"):
            return NOT_RECORDED
        if recorded.status == "error":
            raise _stand_in_error(event.output)
        return event.output if has_output else None

    args = msgspec.json.decode(msgspec.json.encode(event.input))
    turn = _turn(pipe, event)
    result: ToolResult | None = None
    aborted: Outcome | None = None
    async with turn:
        try:
            result = await turn.call_tool(
                event.raw_name or event.tool_name,
                args,
                call=stand_in,
                call_id=event.tool_call_id or None,
            )
        except (AbortTurn, HardAbort) as exc:
            aborted = Outcome("aborted", exc.source, exc.reason)
    if aborted is not None or result is None:
        new = aborted or Outcome("aborted", "", turn.abort_reason)
    else:
        output = result.output
        reason = output.get("reason", "") if isinstance(output, dict) and result.is_error else ""
        new = Outcome(result.status, str(result.details.get("decided_by", "") or ""), str(reason))
    ran_both = bool(applied) and event.applied is not None
    rewritten = "args" if ran_both and applied[-1] != event.applied else ""
    result_changed = (
        has_output
        and result is not None
        and new.status == recorded.status
        and not _same_output(result.output, event.output)
    )
    diff = CallDiff(
        call, recorded, new, _classify(recorded, new, rewritten, result_changed, "tool")
    )
    _attribute(
        diff,
        probe,
        ("tool.after", "tool") if result_changed and not rewritten else ("tool.before", "tool"),
        bool(rewritten or result_changed),
    )
    return diff


def _same_output(new: Any, recorded: Any) -> bool:
    try:
        return bool(msgspec.json.decode(msgspec.json.encode(new)) == recorded)
    except (TypeError, msgspec.EncodeError):
        return False


async def _replay_llm(pipe: Pipeline, call: RecordedCall, probe: _ProbeProvider | None) -> CallDiff:
    event = call.event
    recorded = _outcome(event)
    sent: list[Any] = []
    has_output = "results" in event.recorded and isinstance(event.output, dict)

    def stand_in(request: LLMRequest) -> LLMResponse:
        sent.append(msgspec.to_builtins(request))
        if has_output:
            return msgspec.convert(event.output, LLMResponse)
        return LLMResponse(content="", stop_reason="end_turn")

    request = msgspec.convert(event.input, LLMRequest)
    turn = _turn(pipe, event)
    response: LLMResponse | None = None
    status, reason, source = "ok", "", ""
    async with turn:
        try:
            response = await turn.call_llm(request, call=stand_in)
        except (AbortTurn, HardAbort) as exc:
            status, reason, source = "aborted", exc.reason, exc.source
        except Exception as exc:
            status, reason = "error", f"{type(exc).__name__}: {exc}"
    new = Outcome(status, source, reason)
    rewritten = (
        "request" if sent and event.applied is not None and sent[-1] != event.applied else ""
    )
    changed = has_output and response is not None and not _same_output(response, event.output)
    diff = CallDiff(call, recorded, new, _classify(recorded, new, rewritten, changed, "llm"))
    _attribute(diff, probe, ("llm.before", "llm.after", "llm"), bool(rewritten or changed))
    return diff


async def _replay_message(
    pipe: Pipeline, call: RecordedCall, probe: _ProbeProvider | None
) -> CallDiff:
    event = call.event
    recorded = _outcome(event)
    given = event.input
    turn = _turn(pipe, event)
    left: Any = None
    new = Outcome("ok")
    async with turn:
        try:
            out = await turn.message(
                str(given.get("message", "")), dict(given.get("metadata") or {})
            )
            left = msgspec.to_builtins(out)
        except (AbortTurn, HardAbort) as exc:
            new = Outcome("aborted", exc.source, exc.reason)
    return _setup_diff(call, recorded, new, left, "message", probe)


async def _replay_params(
    pipe: Pipeline, call: RecordedCall, probe: _ProbeProvider | None
) -> CallDiff:
    event = call.event
    recorded = _outcome(event)
    given = event.input
    turn = _turn(
        pipe,
        event,
        provider=str(given.get("provider") or ""),
        model=str(given.get("model") or ""),
    )
    # what the params hooks see of the turn: its message, as recorded
    turn.user_message = str(given.get("message") or "")
    turn.metadata = dict(given.get("metadata") or {})
    left: Any = None
    new = Outcome("ok")
    async with turn:
        try:
            left = msgspec.to_builtins(await turn.params())
        except (AbortTurn, HardAbort) as exc:
            new = Outcome("aborted", exc.source, exc.reason)
    return _setup_diff(call, recorded, new, left, "params", probe)


_REPLAYERS: dict[str, Callable[[Pipeline, RecordedCall, _ProbeProvider | None], Any]] = {
    "tool": _replay_tool,
    "llm": _replay_llm,
    "message": _replay_message,
    "params": _replay_params,
}


async def replay_files(
    logs: Sequence[str | os.PathLike[str]],
    config_path: str | os.PathLike[str],
    *,
    every: bool = False,
) -> ReplayReport:
    """The logs, streamed (``LogReader``), replayed through the stack ``config_path``
    builds; the report keeps the changed calls, or ``every`` call.

    Raises:
        LogError: a line of a log cannot be read.
        ConfigError: the config is invalid.
        OSError: a log cannot be opened (checked before the replay starts).
    """
    reader = LogReader(logs)
    reader.check()
    pipe, probe = build_candidate(config_path)
    return await replay(reader, pipe, probe, every=every)


# -- the report as text -----------------------------------------------------------------

#: the longest ``describe_call`` answer, in characters
CALLED_WIDTH = 60
# the keys a file tool names its files by: those the security audit reads
_PATH_KEYS = SecurityAudit.PATH_KEYS
_PATH_LIST_KEYS = SecurityAudit.PATH_LIST_KEYS
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_QUOTE = re.compile(r"[\s\"'=]")


def describe_call(event: CallRecorded, width: int = CALLED_WIDTH) -> str:
    """What a recorded call called, on one line of at most ``width`` characters (cut
    with ``…``): a tool's command (``command``, with ``args`` / ``argv``), else its file
    (``path``, ``file_path``..., ``paths``), else its arguments as ``key=value`` pairs
    (a value in JSON unless it is a string without spaces, quotes or ``=``); an LLM
    call's model and message count; a user message; the params' provider and model.
    Control characters are escaped (``\\n``, ``\\x1b``): a logged command cannot
    break the table or drive the terminal.
    """
    given = event.input if isinstance(event.input, dict) else {}
    if event.stage == "tool":
        text = _tool_call(given)
    elif event.stage == "llm":
        model = given.get("model") or "?"
        messages = given.get("messages")
        text = f"{model}, {len(messages) if isinstance(messages, list) else 0} messages"
    elif event.stage == "message":
        text = str(given.get("message", ""))
    else:
        text = "/".join(str(given.get(key) or "?") for key in ("provider", "model"))
    text = _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
    return text if len(text) <= width else text[: width - 1] + "…"


def _tool_call(args: dict[str, Any]) -> str:
    command = args.get("command")
    extra = args.get("args", args.get("argv"))
    if isinstance(extra, list) and all(isinstance(a, str) for a in extra):
        if isinstance(command, str):
            return shlex.join([command, *extra])
        if command is None and extra:
            return shlex.join(extra)
    if isinstance(command, str):
        return command
    if isinstance(command, list) and all(isinstance(a, str) for a in command):
        return shlex.join(command)
    for key in _PATH_KEYS:
        if isinstance(args.get(key), str):
            return str(args[key])
    for key in _PATH_LIST_KEYS:
        paths = args.get(key)
        if isinstance(paths, list) and paths and all(isinstance(p, str) for p in paths):
            return ", ".join(paths)
    return " ".join(f"{key}={_value(value)}" for key, value in args.items())


def _value(value: Any) -> str:
    """A string as it is when it reads unambiguously (no space, no quote), else JSON."""
    if isinstance(value, str) and value and not _QUOTE.search(value):
        return value
    return msgspec.json.encode(value).decode()


def render(report: ReplayReport) -> list[str]:
    """The diff table (the report's rows: changed calls, or every call), the shadow
    decisions of those rows, the rules table, the summary."""
    lines: list[str] = []
    shown = report.diffs
    if shown:
        header: tuple[str, ...] = (
            "line",
            "turn",
            "call",
            "tool",
            "called",
            "recorded",
            "new",
            "change",
            "rules",
        )
        rows: list[tuple[str, ...]] = [
            (
                f"{Path(d.call.path).name}:{d.call.line}",
                d.call.event.turn_id or "-",
                d.call.event.tool_call_id or "-",
                d.call.event.tool_name or d.call.event.stage,
                d.called or "-",
                d.recorded.describe(),
                d.new.describe(),
                d.change or "unchanged",
                ", ".join(d.rules) or "-",
            )
            for d in shown
        ]
        lines.append("calls:" if report.every else "changed calls:")
        lines += _table(header, rows)
        shadowed = [d for d in shown if d.shadow]
        if shadowed:
            lines.append("")
            lines.append("shadow decisions of the new stack:")
            for d in shadowed:
                lines.append(f"  {Path(d.call.path).name}:{d.call.line}  {'; '.join(d.shadow)}")
    else:
        lines.append("calls: none" if report.every else "changed calls: none")
    lines.append("")
    rules = report.rules()
    if rules:
        changes = sorted({c for row in rules.values() for c in row if c != "changed"})
        header = ("rule", "changed", *changes)
        rows = [
            (rule, *(str(row.get(c, 0)) for c in ("changed", *changes)))
            for rule, row in rules.items()
        ]
        lines.append("rules:")
        lines += _table(header, rows)
        lines.append("")
    lines.append(f"summary: {report.summary()}")
    return lines


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    return [
        "  "
        + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in (header, *rows)
    ]
