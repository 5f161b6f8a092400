"""The report of a replay: each replayed call's ``CallDiff``, the ``ReplayReport`` that
counts them, and the report as text (``render``, ``describe_call``)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from ..bus.events import CallRecorded
from ..middleware.builtins.security_audit import SecurityAudit
from ._log import RecordedCall

__all__ = ["CALLED_WIDTH", "CallDiff", "Outcome", "ReplayReport", "describe_call", "render"]


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
    the changes listed in ``interpose.replay``'s docstring.  ``rules`` are the registrations the
    change is attributed to; ``shadow`` what the candidate's shadow registrations
    would have done (``"<id>: <decision>"``); ``asked``, how an ask of the candidate
    was answered from the recorded run (``grant <id> (granted by <who>)``, ``recorded
    decision: approved by <who>``), not asked anew.
    """

    call: RecordedCall
    recorded: Outcome
    new: Outcome
    change: str = ""
    rules: list[str] = field(default_factory=list)
    shadow: list[str] = field(default_factory=list)
    asked: str = ""

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
            "asked": self.asked,
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
        answered: how many replayed calls' asks were answered from the recorded run (a
            grant that allowed them, a person's decision) instead of being asked anew.
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
    answered: int = 0
    stages: dict[str, int] = field(default_factory=dict)
    recorded: int = 0
    paths: list[str] = field(default_factory=list)

    def add(self, diff: CallDiff) -> None:
        """Count a replayed call; keep it when it changed, or when keeping ``every``."""
        self.replayed += 1
        self.answered += bool(diff.asked)
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
        if self.answered:
            parts.append(f"{self.answered} asks answered as recorded (grants, decisions)")
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
                "answered": self.answered,
                "unknown_events": self.unknown,
                "text": self.summary(),
            },
        }


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
                d.new.describe() + (f" ({d.asked})" if d.asked else ""),
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
