"""An observer that writes each event as one readable line to a stdlib logger.

A line reads ``<kind> [<subject>] key=value ...``, e.g.::

    tool_exec_end exec call=c1 status=blocked decided_by=no-rm reason='rm is not allowed'

Fields left at their default value are omitted; durations are shown in milliseconds.
The event's fields also travel with the record as a plain dict, ``record.event`` (with
``"kind"``), for handlers that write structured logs.

Levels: an event that reports a call that did not go through (blocked, denied,
aborted) or a tool that raised is a WARNING; ``interceptor_failed`` is an ERROR when the
failure reached the caller (policy ``raise``), a WARNING otherwise; every other event is
logged at the observer's ``level``.  Nothing is formatted when the logger would discard
the record (``logger.isEnabledFor``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from .._locations import relative_location
from ..bus.events import Event, InterceptorFailed, ToolExecEnd, ToolExecSkipped, TurnAborted

if TYPE_CHECKING:
    from ..bus.host import Host
    from ..bus.memory import Overflow, Subscription

__all__ = ["LoggingObserver"]

DEFAULT_LOGGER = "interpose.events"

# fields every event has: only the turn id goes into the line (logging has its own time)
_COMMON = ("ts", "seq", "turn_id", "agent_id", "session_key")
# fields named positionally, right after the kind: the first of these sets a class has
_SUBJECTS = (("hook", "interceptor_id"), ("tool_name",))
# free text goes last, so that the short fields line up at the start (then where a
# failed handler is: its name and file:line, interceptor_failed's last fields)
_LAST = ("reason", "error", "handler", "defined_at", "raised_at")
# file:line fields, shown relative to the working directory when under it
_LOCATIONS = frozenset({"defined_at", "raised_at"})
# shown only on turn_started (the other lines carry the turn id)
_TURN_ONLY = ("agent_id", "session_key")
# redundant in a line: is_error follows from status, error usually starts with error_type
# (and the recorded content of call_recorded: for the audit log, not for log lines)
_HIDDEN = frozenset({"is_error", "interceptor_ns", "error_type", "input", "applied", "output"})
# user content: only with content=True
_CONTENT = ("message", "metadata")
_LABELS = {
    "tool_name": "tool",
    "tool_call_id": "call",
    "duration_ns": "duration",
    "agent_id": "agent",
    "session_key": "session",
    "turn_id": "turn",
}
# shown even at their default value
_ALWAYS = frozenset({"status", "why"})
_BAD_OUTCOMES = frozenset({"blocked", "denied", "aborted", "error"})
_NO_DEFAULT = object()


class _Plan(msgspec.Struct, frozen=True):
    """How to write one event class: subject fields, then (name, label, default)."""

    subject: tuple[str, ...]
    fields: tuple[tuple[str, str, Any], ...]


class LoggingObserver:
    """Log each event it receives as one line.

    Args:
        logger: a ``logging.Logger``, a logger name, or None for ``"interpose.events"``.
        level: the level of ordinary events (an int or a level name such as "DEBUG").
        content: include the user's message and its metadata (``message_received``);
            off by default, so conversations do not end up in logs.  Without it the
            line says how long the message was (``chars=``).

    Raises:
        TypeError: ``logger`` is not a Logger, a str or None.
        ValueError: ``level`` is not a known level.
    """

    def __init__(
        self,
        logger: logging.Logger | str | None = None,
        *,
        level: int | str = logging.INFO,
        content: bool = False,
    ) -> None:
        if logger is None or isinstance(logger, str):
            logger = logging.getLogger(logger or DEFAULT_LOGGER)
        elif not isinstance(logger, logging.Logger):
            raise TypeError(
                f"logger must be a logging.Logger, a logger name or None, got "
                f"{type(logger).__name__}"
            )
        self.logger = logger
        self.level = _check_level(level)
        self.content = content
        self._plans: dict[type[Any], _Plan] = {}

    def __repr__(self) -> str:
        return f"<LoggingObserver {self.logger.name!r} level={logging.getLevelName(self.level)}>"

    def __call__(self, event: Event, /) -> None:
        """Log ``event`` if the logger is enabled for its level.

        Raises:
            Exception: whatever the logger's handlers raise (``logging`` normally
                reports handler errors itself and raises nothing).
        """
        level = self.level_of(event)
        logger = self.logger
        if not logger.isEnabledFor(level):
            return
        logger.log(level, self.format(event), extra={"event": self.fields(event)})

    def level_of(self, event: Event) -> int:
        """The level ``event`` is logged at (see the module docstring)."""
        if isinstance(event, ToolExecEnd):
            return logging.WARNING if event.status in _BAD_OUTCOMES else self.level
        if isinstance(event, ToolExecSkipped):
            return logging.WARNING if event.why in _BAD_OUTCOMES else self.level
        if isinstance(event, InterceptorFailed):
            return logging.ERROR if event.policy == "raise" else logging.WARNING
        if isinstance(event, TurnAborted):
            return logging.WARNING
        return self.level

    def format(self, event: Event) -> str:
        """The readable line for ``event``."""
        plan = self._plans.get(type(event))
        if plan is None:
            plan = self._plans[type(event)] = _plan(type(event), self.content)
        parts = [event.kind]
        for name in plan.subject:
            value = getattr(event, name)
            if value:
                parts.append(_text(value))
        tool_name = getattr(event, "tool_name", None)
        for name, label, default in plan.fields:
            value = getattr(event, name)
            if name == "params":
                value = _set_params(value, event)
            if value == default or (name == "raw_name" and value == tool_name):
                continue
            if (
                name == "error"
                and isinstance(event, InterceptorFailed)
                and not value.startswith(event.error_type)
            ):
                # a handler's error reads "KeyError: 'x'", an observer's only "'x'"
                value = f"{event.error_type}: {value}"
            if name in _LOCATIONS:
                value = relative_location(value)
            if label == "chars":
                parts.append(f"chars={len(value)}")
            elif name.endswith("_ns"):
                parts.append(f"{label}={value / 1e6:.3f}ms")
            elif isinstance(value, tuple):
                parts.append(f"{label}={','.join(map(str, value))}")
            elif isinstance(value, dict):
                parts.append(f"{label}={value!r}")
            elif value is True:
                parts.append(label)
            else:
                parts.append(f"{label}={_text(value)}")
        return " ".join(parts)

    def fields(self, event: Event) -> dict[str, Any]:
        """``event`` as a plain dict with its ``kind`` (user content only if enabled)."""
        fields: dict[str, Any] = {"kind": event.kind}
        fields.update(msgspec.structs.asdict(event))
        if not self.content:
            for name in _CONTENT:
                fields.pop(name, None)
        return fields

    def attach(
        self,
        pipe: Host,
        *,
        events: Iterable[str] | None = None,
        buffer: int = 1024,
        overflow: Overflow = "block",
        name: str = "logging",
    ) -> Subscription:
        """Subscribe this observer to ``pipe`` (every kind unless ``events`` narrows it).

        Raises:
            ValueError: an unknown event kind, a non-positive buffer or an unknown
                overflow policy.
        """
        return pipe.subscribe(self, events=events, buffer=buffer, overflow=overflow, name=name)


def _plan(cls: type[Any], content: bool) -> _Plan:
    """Work out once per event class which fields a line shows, in which order."""
    fields = msgspec.structs.fields(cls)
    names = {f.name for f in fields}
    subject = next((s for s in _SUBJECTS if names.issuperset(s)), ())
    turn_started = cls.__struct_config__.tag == "turn_started"
    shown: list[tuple[str, str, Any]] = []
    for f in sorted(fields, key=lambda f: f.name in _LAST):
        name = f.name
        if name in subject or name in _HIDDEN or (name == "metadata" and not content):
            continue
        if name in _COMMON and not (turn_started and name in _TURN_ONLY):
            continue
        if name in _ALWAYS:
            default: Any = _NO_DEFAULT
        elif f.default_factory is not msgspec.NODEFAULT:
            default = f.default_factory()
        else:
            default = f.default
        label = "chars" if name == "message" and not content else _LABELS.get(name, name)
        shown.append((name, label, default))
    # the turn id closes every line, so that the lines of concurrent turns can be told apart
    shown.append(("turn_id", "turn", ""))
    return _Plan(subject, tuple(shown))


def _set_params(params: dict[str, Any], event: Event) -> dict[str, Any]:
    """The model parameters that were set, less those the line already shows
    (``provider`` and ``model``)."""
    return {
        key: value
        for key, value in params.items()
        if value is not None and value != {} and getattr(event, key, None) != value
    }


def _text(value: Any) -> str:
    """A value as it reads in a line: bare when it is one plain word, else its repr."""
    if isinstance(value, str):
        if value and not any(c.isspace() or c in "'\"=\\" for c in value):
            return value
        return repr(value)
    return str(value)


def _check_level(level: int | str) -> int:
    """``level`` as an int.

    Raises:
        ValueError: an unknown level name, or not an int or str.
    """
    if isinstance(level, bool) or not isinstance(level, int | str):
        raise ValueError(f"level must be an int or a level name, got {level!r}")
    if isinstance(level, str):
        number = logging.getLevelName(level.upper())
        if not isinstance(number, int):
            raise ValueError(f"unknown logging level {level!r}")
        return number
    return level
