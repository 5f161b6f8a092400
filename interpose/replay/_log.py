"""Reading audit logs: ``LogReader`` streams the recorded calls of one or more logs,
``read_log`` reads them into memory; a line that cannot be read is a ``LogError`` naming
the file and the line."""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from ..bus.events import (
    EVENT_KINDS,
    ApprovalDecided,
    ApprovalExpired,
    ApprovalRequested,
    CallRecorded,
    GrantUsed,
    ToolExecEnd,
    TurnAborted,
    TurnEnded,
    decode_event,
)
from ..errors import InterposeError

__all__ = ["PENDING_LIMIT", "LogError", "LogReader", "RecordedCall", "RecordedLog", "read_log"]


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


#: the events of a call's ask: its request, the person's decision, or the grant that
#: allowed it without asking (``interpose.approvals``)
AskEvent = ApprovalRequested | ApprovalDecided | ApprovalExpired | GrantUsed


@dataclass(frozen=True, slots=True)
class RecordedCall:
    """A ``call_recorded`` event and where it was read; ``asks``: the events of its asks
    that the log holds before it, in order (a tool call's)."""

    event: CallRecorded
    path: str
    line: int
    asks: tuple[AskEvent, ...] = ()


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
        # (turn id, call id) -> the events of its asks, until its call_recorded
        self._asks: OrderedDict[tuple[str, str], list[AskEvent]] = OrderedDict()

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
                        asks: tuple[AskEvent, ...] = ()
                        if event.stage == "tool":
                            self._settle(event.turn_id, event.tool_call_id)
                            key = (event.turn_id, event.tool_call_id)
                            asks = tuple(self._asks.pop(key, ()))
                        yield RecordedCall(event, name, number, asks)
                    elif isinstance(event, AskEvent):
                        self._asks.setdefault((event.turn_id, event.tool_call_id), []).append(event)
                        if len(self._asks) > PENDING_LIMIT:
                            self._asks.popitem(last=False)
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
