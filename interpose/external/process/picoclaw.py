"""PicoClaw's vocabulary, as far as process hooks and config files need it.

PicoClaw (sipeed/picoclaw) names its events two ways: the runtime names its hooks are
sent (``agent.tool.exec_start``) and the older names its config still accepts
(``tool_exec_start``).  A process hook's ``observe`` list may use either, or
interpose's own kinds; ``resolve_observe`` maps them onto interpose's event kinds, and
``event_names`` gives the names an interpose event is sent under.

PicoClaw's config files load verbatim: ``rewrite_config`` rewrites their forms to
interpose's before decoding, with notes on what is left out.  The config layer calls it
and passes what it needs of interpose's schema (the top-level sections, the builtins'
names), so that this module imports nothing from ``config``.

The protocol itself (which fields each message carries in each dialect) lives in
``wire.py``; docs/process-hooks.md#compatibility-with-picoclaw compares it with
upstream field by field.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Final

from ...bus.events import EVENT_KINDS
from ...errors import ConfigError, ConfigFileError, field_key

__all__ = [
    "EVENT_METHODS",
    "LEGACY_NAMES",
    "RUNTIME_NAMES",
    "UPSTREAM_KINDS",
    "event_names",
    "resolve_observe",
    "rewrite_config",
    "uses_runtime_names",
]

#: the notification methods an observed event can be sent as: ``hook.event`` (the
#: method of PicoClaw's first protocol and of its published ``review_gate.py``) and
#: ``hook.runtime_event`` (PicoClaw's current one)
EVENT_METHODS: Final = ("hook.event", "hook.runtime_event")

#: interpose event kind -> PicoClaw's runtime event name, where PicoClaw has the event
RUNTIME_NAMES: Final[Mapping[str, str]] = {
    "turn_started": "agent.turn.start",
    "turn_ended": "agent.turn.end",
    "llm_request": "agent.llm.request",
    "llm_response": "agent.llm.response",
    "tool_exec_start": "agent.tool.exec_start",
    "tool_exec_end": "agent.tool.exec_end",
    "tool_exec_skipped": "agent.tool.exec_skipped",
}

#: interpose event kind -> PicoClaw's older name of the same event
LEGACY_NAMES: Final[Mapping[str, str]] = {
    "turn_started": "turn_start",
    "turn_ended": "turn_end",
    "llm_request": "llm_request",
    "llm_response": "llm_response",
    "tool_exec_start": "tool_exec_start",
    "tool_exec_end": "tool_exec_end",
    "tool_exec_skipped": "tool_exec_skipped",
}

#: every event name PicoClaw's config accepts in ``observe`` (runtime and older names)
#: that interpose has no event for: accepted, but never sent
UPSTREAM_KINDS: Final = frozenset(
    {
        "agent.llm.delta",
        "agent.llm.retry",
        "agent.context.compress",
        "agent.session.summarize",
        "agent.steering.injected",
        "agent.follow_up.queued",
        "agent.interrupt.received",
        "agent.subturn.spawn",
        "agent.subturn.end",
        "agent.subturn.result_delivered",
        "agent.subturn.orphan",
        "agent.error",
        "agent.message.sent",
        "agent.message.delivered",
        "agent.message.received",
        "agent.message.reply",
        "agent.message.blocked",
        "agent.thread.closed",
        "channel.lifecycle.started",
        "channel.lifecycle.initialized",
        "channel.lifecycle.start_failed",
        "channel.lifecycle.stopped",
        "channel.webhook.registered",
        "channel.webhook.unregistered",
        "channel.message.outbound_queued",
        "channel.message.outbound_sent",
        "channel.message.outbound_failed",
        "channel.rate_limited",
        "bus.publish.failed",
        "bus.close.started",
        "bus.close.completed",
        "bus.close.drained",
        "gateway.start",
        "gateway.ready",
        "gateway.shutdown",
        "gateway.reload.started",
        "gateway.reload.completed",
        "gateway.reload.failed",
        "mcp.server.connected",
        "mcp.server.connecting",
        "mcp.server.failed",
        "mcp.tool.discovered",
        "mcp.tool.call.start",
        "mcp.tool.call.end",
        # the older names of the same events
        "llm_delta",
        "llm_retry",
        "context_compress",
        "session_summarize",
        "steering_injected",
        "follow_up_queued",
        "interrupt_received",
        "subturn_spawn",
        "subturn_end",
        "subturn_result_delivered",
        "subturn_orphan",
        "message_sent",
        "message_delivered",
        "message_reply",
        "message_blocked",
        "thread_closed",
        "error",
    }
)

_ALL: Final = frozenset({"*", "all", ""})
_BY_NAME: Final[Mapping[str, str]] = {
    **{kind: kind for kind in EVENT_KINDS},
    **{name: kind for kind, name in RUNTIME_NAMES.items()},
    **{name: kind for kind, name in LEGACY_NAMES.items()},
}


def resolve_observe(names: Iterable[str], where: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The interpose event kinds an ``observe`` list asks for, and the names in it that
    PicoClaw knows but interpose has no event for (they are never sent).

    Each name is an interpose kind (``tool_exec_start``), a PicoClaw runtime name
    (``agent.tool.exec_start``) or an older PicoClaw name (``turn_end``); ``*``, ``all``
    or ``""`` ask for every event, as in PicoClaw.  ``message_received`` is interpose's
    (a user message arrived), not PicoClaw's inter-agent message.

    Raises:
        ConfigError: a name neither interpose nor PicoClaw knows (``where`` names the
            hook in the message).
    """
    kinds: list[str] = []
    never: list[str] = []
    for name in names:
        if name in _ALL:
            return tuple(sorted(EVENT_KINDS)), ()
        kind = _BY_NAME.get(name)
        if kind is not None:
            if kind not in kinds:
                kinds.append(kind)
        elif name in UPSTREAM_KINDS:
            if name not in never:
                never.append(name)
        else:
            raise ConfigError(
                f"{where}: observe: unknown event kind {name!r}; expected one of "
                f"{', '.join(sorted(EVENT_KINDS))} (or PicoClaw's names of them, such as "
                "'agent.tool.exec_start', or '*' for every event)"
            )
    return tuple(kinds), tuple(never)


def event_names(kind: str) -> tuple[str, str]:
    """(runtime name, older name) an interpose event kind is sent under; interpose's
    own kind for both where PicoClaw has no such event."""
    return RUNTIME_NAMES.get(kind, kind), LEGACY_NAMES.get(kind, kind)


def uses_runtime_names(names: Iterable[str]) -> bool:
    """Whether an ``observe`` list is written in PicoClaw's runtime names (then its
    events are sent as ``hook.runtime_event``, as current PicoClaw sends them)."""
    return any("." in name for name in names)


# -- PicoClaw's config files -------------------------------------------------------------

_PICOCLAW_PROCESS_KEYS = ("transport", "dir", "trusted")


def _picoclaw_shaped(data: dict[str, Any]) -> bool:
    """Whether parsed data is a PicoClaw config: a process hook with one of PicoClaw's
    own keys (``transport``, ``dir``, ``trusted``), or a builtin with a ``config``."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    processes = hooks.get("processes")
    if isinstance(processes, dict) and any(
        isinstance(table, dict) and any(key in table for key in _PICOCLAW_PROCESS_KEYS)
        for table in processes.values()
    ):
        return True
    builtins = hooks.get("builtins")
    return isinstance(builtins, dict) and any(
        isinstance(table, dict) and "config" in table for table in builtins.values()
    )


def rewrite_config(
    data: Any,
    file: str,
    *,
    json: bool,
    sections: Collection[str],
    builtins: Sequence[str],
) -> tuple[Any, list[str], dict[str, str]]:
    """Parsed data with PicoClaw's forms rewritten to interpose's; the notes on what
    was left out, and {flat field: the field it came from} for error messages.

    - ``hooks.builtins.<name>.config`` (PicoClaw's options of a builtin) is merged into
      its table;
    - a builtin interpose does not have is left out with a note when it is not enabled
      (PicoClaw does not look it up either), an error when it is;
    - in a PicoClaw-shaped file (JSON only: PicoClaw's config is ``config.json``, and an
      ``interpose.toml`` that uses ``dir`` or ``transport`` stays interpose's),
      ``hooks.priority_order`` defaults to ``picoclaw`` and top-level sections other than
      interpose's (``agents``, ``channels``, ...) are left out with a note.

    ``sections`` are interpose's top-level sections, ``builtins`` the names of its
    builtins (the config layer's schema).

    Raises:
        ConfigFileError: an enabled builtin interpose does not have; a key given both in
            a builtin's ``config`` and in its table.
    """
    notes: list[str] = []
    moved: dict[str, str] = {}
    if not isinstance(data, dict):
        return data, notes, moved
    data = dict(data)
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        hooks = data["hooks"] = dict(hooks)
        if json and _picoclaw_shaped(data):
            hooks.setdefault("priority_order", "picoclaw")
            _picoclaw_processes(hooks, notes)
            defaults = hooks.get("defaults")
            if isinstance(defaults, dict):
                # PicoClaw reads a timeout of 0 (Go's zero value) as "the default"
                hooks["defaults"] = {
                    key: value
                    for key, value in defaults.items()
                    if not (key.endswith("_timeout_ms") and value == 0 and value is not False)
                }
            foreign = [key for key in data if key not in sections]
            for key in foreign:
                del data[key]
            if foreign:
                notes.append(
                    "PicoClaw settings interpose has no use for were left out: "
                    + ", ".join(foreign)
                )
        table_of_builtins = hooks.get("builtins")
        if isinstance(table_of_builtins, dict):
            hooks["builtins"] = _picoclaw_builtins(
                table_of_builtins,
                file,
                notes,
                moved,
                known=builtins,
                shaped=hooks.get("priority_order") == "picoclaw",
            )
    return data, notes, moved


def _picoclaw_processes(hooks: dict[str, Any], notes: list[str]) -> None:
    """PicoClaw starts a process hook only when it says ``"enabled": true`` and so does
    ``hooks`` (Go's zero value is false); interpose's default is on.  In a PicoClaw
    file, the hooks PicoClaw would not start are not started here either."""
    processes = hooks.get("processes")
    if not isinstance(processes, dict):
        return
    hooks["processes"] = processes = dict(processes)
    for name, table in processes.items():
        if not isinstance(table, dict) or ("enabled" in table and table["enabled"] is not True):
            continue  # a wrong type is the schema's to report; false stays false
        if table.get("enabled") is not True or hooks.get("enabled") is not True:
            why = "it" if table.get("enabled") is not True else "hooks"
            processes[name] = {**table, "enabled": False}
            notes.append(
                f"hooks.processes.{field_key(name)}: not started: PicoClaw starts a process hook "
                f'only when it and hooks say "enabled": true ({why} does not)'
            )


def _picoclaw_builtins(
    builtins: dict[str, Any],
    file: str,
    notes: list[str],
    moved: dict[str, str],
    *,
    known: Sequence[str],
    shaped: bool,
) -> dict[str, Any]:
    """``hooks.builtins`` with each ``config`` merged; in a PicoClaw-ordered file, the
    builtins interpose does not have are left out when disabled, an error when enabled
    (elsewhere the schema reports them: a misspelt name must not pass)."""
    result: dict[str, Any] = {}
    for name, table in builtins.items():
        where = f"hooks.builtins.{field_key(name)}"
        if name not in known and shaped:
            if isinstance(table, dict) and table.get("enabled") is not True:
                notes.append(f"{where}: not an interpose builtin; left out (it is not enabled)")
                continue
            raise ConfigFileError(
                file,
                where,
                "not an interpose builtin (a PicoClaw builtin is Go code compiled into "
                "PicoClaw: run it as a process hook or a plugin instead, or disable it); "
                f"interpose's builtins: {', '.join(known)}",
            )
        if isinstance(table, dict) and isinstance(table.get("config"), dict):
            table = dict(table)
            options = table.pop("config")
            for key, value in options.items():
                if key in table:
                    raise ConfigFileError(
                        file,
                        f"{where}.config.{field_key(str(key))}",
                        f"also given as {where}.{field_key(str(key))}: give it once",
                    )
                table[key] = value
                moved[f"{where}.{field_key(str(key))}"] = f"{where}.config.{field_key(str(key))}"
        result[name] = table
    return result
