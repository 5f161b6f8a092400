"""PicoClaw's vocabulary, as far as process hooks and config files need it.

PicoClaw (sipeed/picoclaw) names its events two ways: the runtime names its hooks are
sent (``agent.tool.exec_start``) and the older names its config still accepts
(``tool_exec_start``).  A process hook's ``observe`` list may use either, or
interpose's own kinds; ``resolve_observe`` maps them onto interpose's event kinds, and
``event_names`` gives the names an interpose event is sent under.

The protocol itself (which fields each message carries in each dialect) lives in
``process.py``; docs/process-hooks.md#compatibility-with-picoclaw compares it with
upstream field by field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from ...bus.events import EVENT_KINDS
from ...errors import ConfigError

__all__ = [
    "EVENT_METHODS",
    "LEGACY_NAMES",
    "RUNTIME_NAMES",
    "UPSTREAM_KINDS",
    "event_names",
    "resolve_observe",
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
