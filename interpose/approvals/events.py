"""The bus events of approvals: a store's requests, decisions and grants as
``interpose.bus.events`` structs, and :func:`publish_changes`, which puts a store's
changes (made in any process) on a bus."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypedDict

import msgspec

from ..bus import events as ev
from ..bus.memory import InMemoryBus
from .model import ApprovalRecord, Change, Grant, args_hash, principal_sub
from .store import ApprovalStore

__all__ = ["decided", "event_of", "grant_added", "grant_used", "publish_changes", "requested"]


class _About(TypedDict):
    """The fields every event of a request carries (typed: mypy checks them where they
    are unpacked into an event)."""

    ts: int
    turn_id: str
    agent_id: str
    session_key: str
    request_id: str
    tool_name: str
    tool_call_id: str


def _about(record: ApprovalRecord) -> _About:
    """When, and which call of which turn: the fields every event of a request carries."""
    return {
        "ts": time.time_ns(),
        "turn_id": record.turn_id,
        "agent_id": record.agent_id,
        "session_key": record.session_key,
        "request_id": record.id,
        "tool_name": record.tool_name,
        "tool_call_id": record.tool_call_id,
    }


def requested(record: ApprovalRecord, *, resumed: bool = False) -> ev.ApprovalRequested:
    return ev.ApprovalRequested(
        **_about(record),
        args_hash=record.args_hash,
        asked_by=record.asked_by,
        rule=record.rule,
        reason=record.reason,
        expires=record.expires,
        principal_sub=principal_sub(record.principal),
        resumed=resumed,
    )


def decided(record: ApprovalRecord) -> ev.ApprovalDecided | ev.ApprovalExpired:
    """The event of a request no longer pending: decided, or expired."""
    if record.state == "expired":
        return ev.ApprovalExpired(
            **_about(record),
            reason=record.decision_reason,
        )
    edited = record.edited_args
    return ev.ApprovalDecided(
        **_about(record),
        state=record.state,
        decided_by=record.decided_by,
        reason=record.decision_reason,
        edited_args_hash=args_hash(edited) if edited is not None else "",
        grant_id=record.grant_id,
    )


def grant_added(grant: Grant) -> ev.GrantAdded:
    return ev.GrantAdded(
        ts=time.time_ns(),
        agent_id=grant.agent_id,
        session_key=grant.session_key,
        grant_id=grant.id,
        granted_by=grant.granted_by,
        match=grant.match,
        scope=grant.scope,
        tool_name=grant.tool_name,
        rule=grant.rule,
        args_hash=grant.args_hash,
        expires=grant.expires or 0.0,
        request_id=grant.request_id,
    )


def grant_used(grant: Grant, record: ApprovalRecord) -> ev.GrantUsed:
    """The allow of the ask ``record`` by ``grant``, naming who granted it."""
    return ev.GrantUsed(
        **_about(record),
        grant_id=grant.id,
        granted_by=grant.granted_by,
        rule=record.rule,
        args_hash=record.args_hash,
    )


def event_of(change: Change) -> ev.Event | None:
    """The bus event of a store's change (None for a change without its data)."""
    request, grant = change.request, change.grant
    if change.kind == "request_created" and request is not None:
        return requested(request)
    if change.kind in ("request_decided", "request_expired") and request is not None:
        return decided(request)
    if change.kind == "grant_added" and grant is not None:
        return grant_added(grant)
    if change.kind == "grant_revoked" and grant is not None:
        return ev.GrantRevoked(
            ts=time.time_ns(),
            agent_id=grant.agent_id,
            session_key=grant.session_key,
            grant_id=grant.id,
            revoked_by=grant.revoked_by,
        )
    if change.kind == "grant_used" and grant is not None and request is not None:
        return grant_used(grant, request)
    return None


async def publish_changes(
    store: ApprovalStore,
    bus: InMemoryBus,
    *,
    since: str | None = None,
    seq: Callable[[], int] = lambda: 0,
) -> None:
    """Publish every change of ``store`` (from ``since``, as ``changes`` reads it) on
    ``bus`` as its event, until cancelled: an inbox's, or a fleet's audit of decisions
    made in other processes."""
    changes = store.changes(since)
    try:
        async for change in changes:
            event = event_of(change)
            if event is not None and event.kind in bus.wanted:
                await bus.publish(msgspec.structs.replace(event, seq=seq()))
    finally:
        close = getattr(changes, "aclose", None)
        if close is not None:
            await close()
