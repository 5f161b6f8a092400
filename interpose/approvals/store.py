"""The approval store's interface, and the rules every store applies the same way.

:class:`ApprovalStore` is what an agent process (the waiting call), the inbox and a
script use; :class:`~.memory.MemoryApprovalStore` (one process) and
:class:`~.redis.RedisApprovalStore` (a fleet) implement it.  The functions here are the
decisions' rules, written once: what a decision makes of a request
(:func:`decided`), the grant it adds (:func:`grant_from`), when a pending request has
expired (:func:`due`), and the counter a request counts under (:func:`counter_key`).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Protocol

import msgspec

from .model import (
    Action,
    AlreadyDecided,
    ApprovalRecord,
    Change,
    Grant,
    GrantSpec,
    State,
    parse_edited_args,
    principal_sub,
)

__all__ = [
    "COUNTS",
    "ApprovalStore",
    "counter_key",
    "decided",
    "due",
    "grant_from",
    "new_grant_id",
]

#: the counters kept per rule (``counters()``): asks made, their outcomes, and asks a
#: grant allowed without asking
COUNTS = ("asked", "approved", "denied", "edited", "expired", "granted")


class ApprovalStore(Protocol):
    """Where approval requests and grants live, and how they change.

    Every method is async and safe to call from several tasks; a Redis store is also
    shared by every process that points at the same server and prefix.  A pending
    request past its ``expires`` is expired (state "expired", a ``request_expired``
    change) by the first read, wait or decision that sees it.
    """

    async def submit(self, record: ApprovalRecord) -> ApprovalRecord:
        """Store the new request ``record`` (state "pending") and return it, with a
        ``request_created`` change; when a request with its id exists already (the same
        call asked again, by a restarted agent), return the stored one unchanged (it
        may be decided or expired by now) and change nothing."""
        ...

    async def get(self, request_id: str) -> ApprovalRecord:
        """The request ``request_id`` as it is now.

        Raises:
            UnknownRequest: no request has this id.
        """
        ...

    async def list_pending(
        self, *, agent: str | None = None, tool: str | None = None, limit: int | None = None
    ) -> list[ApprovalRecord]:
        """The pending requests, newest first (by ``created``), only those of agent id
        ``agent`` and tool ``tool`` when given, at most ``limit``."""
        ...

    async def list_requests(
        self,
        *,
        state: State | None = None,
        agent: str | None = None,
        tool: str | None = None,
        limit: int | None = None,
    ) -> list[ApprovalRecord]:
        """Every request (any state, or only ``state``), newest first, filtered like
        ``list_pending``."""
        ...

    async def decide(
        self,
        request_id: str,
        action: Action,
        *,
        approver: str,
        reason: str = "",
        args: object = None,
        grant: GrantSpec | None = None,
    ) -> ApprovalRecord:
        """Decide the pending request ``request_id`` and return it as decided:
        "approve" (state "approved"), "deny" (state "denied"; ``reason`` is what the
        model sees), "edit" (state "edited": ``args``, a mapping or a JSON object text,
        replace the call's arguments; the pipeline judges the edited call again before
        it runs).  ``approver`` is who decided (recorded).  ``grant`` (with "approve"
        only) also adds the standing grant it describes, made from this request
        (:func:`grant_from`; its id in the record's ``grant_id``).  Publishes a
        ``request_decided`` change (and a ``grant_added`` one).  Atomic: of two
        decisions racing, one wins and the other raises ``AlreadyDecided``.

        Raises:
            UnknownRequest: no request has this id.
            AlreadyDecided: the request is decided or expired (its ``record`` attached).
            InvalidEdit: "edit" without arguments, or arguments that do not parse as a
                JSON object.
            ValueError: an unknown action, an empty ``approver``, a grant with another
                action than "approve", or a "rule" grant for a request no rule asked.
        """
        ...

    async def expire(self, request_id: str) -> ApprovalRecord:
        """Expire the request now if it is still pending (state "expired", a
        ``request_expired`` change); return it as it is after (a decided request is
        returned unchanged: the decision won).

        Raises:
            UnknownRequest: no request has this id.
        """
        ...

    async def wait(self, request_id: str) -> ApprovalRecord:
        """Wait until the request is no longer pending, whichever process decides it,
        and return it; at its ``expires`` it is expired (``expire``) and returned, so a
        wait never outlasts the request (bound it sooner with ``anyio.fail_after``).

        Raises:
            UnknownRequest: no request has this id.
        """
        ...

    async def grants(self, *, agent: str | None = None, live: bool = True) -> list[Grant]:
        """The grants, newest first: only the live ones (not revoked, not expired) unless
        ``live`` is False, only agent ``agent``'s when given."""
        ...

    async def get_grant(self, grant_id: str) -> Grant:
        """The grant ``grant_id`` as it is now (live, expired or revoked).

        Raises:
            UnknownGrant: no grant has this id.
        """
        ...

    async def add_grant(self, grant: Grant) -> Grant:
        """Store ``grant`` (its id must be new) with a ``grant_added`` change; return it.

        Raises:
            ValueError: a grant with this id exists.
        """
        ...

    async def revoke(self, grant_id: str, *, by: str) -> Grant:
        """Revoke the grant ``grant_id`` (``revoked_at`` now, ``revoked_by`` ``by``), with
        a ``grant_revoked`` change; return it.  Revoking a revoked grant returns it as it
        was.

        Raises:
            UnknownGrant: no grant has this id.
        """
        ...

    async def match_grant(self, record: ApprovalRecord) -> Grant | None:
        """The live grant that allows the ask ``record`` without asking (``Grant.covers``),
        or None.  A match is recorded: a ``grant_used`` change (the grant and the ask)
        and the rule's "granted" counter.  ``record`` is not stored."""
        ...

    def changes(self, since: str | None = None) -> AsyncIterator[Change]:
        """The store's changes as they happen, oldest first, without end: those after
        the cursor ``since`` ("0": from the oldest kept), or from the moment of the
        first ``__anext__`` when None.  Close the iterator (``aclose``) to stop."""
        ...

    async def counters(self) -> dict[str, dict[str, int]]:
        """Per rule (``counter_key``), how many asks (``COUNTS``): asked, approved,
        denied, edited, expired, granted."""
        ...

    async def aclose(self) -> None:
        """Release connections; the store is not used after."""
        ...


# -- the rules ----------------------------------------------------------------------------


def counter_key(record: ApprovalRecord) -> str:
    """The counter a request counts under: its rule, else its approver, else its tool."""
    return record.rule or record.asked_by or record.tool_name


def due(record: ApprovalRecord, now: float) -> bool:
    """A pending request whose time is up at ``now``."""
    return record.state == "pending" and now >= record.expires


def new_grant_id() -> str:
    return "grt_" + secrets.token_hex(12)


def decided(
    record: ApprovalRecord,
    action: str,
    *,
    approver: str,
    reason: str,
    args: object,
    grant: GrantSpec | None,
    now: float,
) -> tuple[ApprovalRecord, Grant | None]:
    """``record`` decided by ``approver`` at ``now``, and the grant the decision adds.

    Raises:
        AlreadyDecided, InvalidEdit, ValueError: as ``ApprovalStore.decide`` says.
    """
    if action not in ("approve", "deny", "edit"):
        raise ValueError(f"unknown action {action!r}: approve, deny or edit")
    if not approver:
        raise ValueError("a decision needs the approver's identity")
    if record.state != "pending" or due(record, now):
        raise AlreadyDecided(
            record
            if record.state != "pending"
            else msgspec.structs.replace(record, state="expired")
        )
    if grant is not None and action != "approve":
        raise ValueError(f"a standing grant comes with 'approve', not {action!r}")
    edited = parse_edited_args(args) if action == "edit" else None
    made = grant_from(record, grant, approver, now) if grant is not None else None
    state: State = {"approve": "approved", "deny": "denied", "edit": "edited"}[action]  # type: ignore[assignment]
    if action == "deny" and not reason:
        reason = f"denied by {approver}"
    out = msgspec.structs.replace(
        record,
        state=state,
        decided_by=approver,
        decided_at=now,
        decision_reason=reason,
        edited_args=edited,
        grant_id=made.id if made is not None else "",
    )
    return out, made


def grant_from(record: ApprovalRecord, spec: GrantSpec, granted_by: str, now: float) -> Grant:
    """The grant ``spec`` made from ``record``: bound to its tool and agent, its session
    (scope "session"), its principal's subject, its approver, and its rule or its exact
    arguments.

    Raises:
        ValueError: a "rule" grant for a request no rule asked, or a ttl not above 0.
    """
    if spec.match == "rule" and not record.rule:
        raise ValueError(
            f"request {record.id} names no rule: grant its exact arguments (match 'args')"
        )
    if spec.ttl is not None and not spec.ttl > 0:
        raise ValueError(f"a grant's ttl must be above 0 seconds, got {spec.ttl}")
    return Grant(
        id=new_grant_id(),
        match=spec.match,
        scope=spec.scope,
        tool_name=record.tool_name,
        agent_id=record.agent_id,
        session_key=record.session_key if spec.scope == "session" else "",
        rule=record.rule if spec.match == "rule" else "",
        args_hash=record.args_hash if spec.match == "args" else "",
        principal_sub=principal_sub(record.principal),
        asked_by=record.asked_by,
        request_id=record.id,
        granted_by=granted_by,
        created=now,
        expires=now + spec.ttl if spec.ttl is not None else None,
    )
