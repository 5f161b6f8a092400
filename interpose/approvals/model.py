"""Approval requests, decisions and standing grants as data.

An ``ask`` becomes an :class:`ApprovalRecord` in an approval store: the exact call (its
arguments and their hash), who asked and why, when it expires, and, once decided, who
decided what and when.  A person's decision may add a :class:`Grant`, a standing allow
bound to the rule that asked (its pattern) or to the exact arguments, for one session
or one agent, for a while or until revoked; never wider than the request it was made
from.  Every change of a store is a :class:`Change` on its stream.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

import msgspec

from ..errors import InterposeError

__all__ = [
    "Action",
    "AlreadyDecided",
    "ApprovalError",
    "ApprovalRecord",
    "Change",
    "ChangeKind",
    "Grant",
    "GrantMatch",
    "GrantScope",
    "GrantSpec",
    "InvalidEdit",
    "State",
    "UnknownGrant",
    "UnknownRequest",
    "args_hash",
    "parse_edited_args",
    "principal_sub",
    "request_id",
]

State: TypeAlias = Literal["pending", "approved", "denied", "expired", "edited"]
#: what a person does with a pending request
Action: TypeAlias = Literal["approve", "deny", "edit"]
#: a grant matches the rule that asked (its pattern), or the exact arguments
GrantMatch: TypeAlias = Literal["rule", "args"]
#: a grant holds for the request's session, or for its agent (every session)
GrantScope: TypeAlias = Literal["session", "agent"]
ChangeKind: TypeAlias = Literal[
    "request_created",
    "request_decided",
    "request_expired",
    "grant_added",
    "grant_revoked",
    "grant_used",
]


# -- errors -------------------------------------------------------------------------------


class ApprovalError(InterposeError):
    """Base of what an approval store raises for a decision it refuses."""


class UnknownRequest(ApprovalError, KeyError):
    """No request has this id."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown request"


class AlreadyDecided(ApprovalError):
    """The request is no longer pending (decided, edited or expired)."""

    def __init__(self, record: ApprovalRecord) -> None:
        super().__init__(f"request {record.id} is already {record.state}")
        self.record = record


class InvalidEdit(ApprovalError, ValueError):
    """Edited arguments that do not parse as a JSON object, or an edit without them."""


class UnknownGrant(ApprovalError, KeyError):
    """No grant has this id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown grant"


# -- the data -----------------------------------------------------------------------------


class ApprovalRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One approval request: the call as asked, and its decision once made.

    Times are seconds since the epoch.  ``id`` is :func:`request_id` of (agent, session,
    call id, args hash): the same call asked again (a restarted agent) is the same
    request.  ``asked_by`` is the approver's id, ``rule`` the pattern of the rule that
    asked (``Bash(git push:*)``; "" when the approver named none), ``reason`` why.
    ``principal`` holds the claims of who the agent acts for (a JWT's), or None.
    Once decided: ``decided_by`` (the approver's identity), ``decided_at``,
    ``decision_reason`` (what the model sees of a deny), ``edited_args`` (state
    "edited": the arguments the person approved instead), ``grant_id`` (the grant the
    decision added, or the grant that allowed the call without asking).
    """

    id: str
    tool_name: str
    args: dict[str, Any]
    args_hash: str
    agent_id: str = ""
    session_key: str = ""
    turn_id: str = ""
    tool_call_id: str = ""
    asked_by: str = ""
    rule: str = ""
    reason: str = ""
    principal: dict[str, Any] | None = None
    created: float = 0.0
    expires: float = 0.0
    state: State = "pending"
    decided_by: str = ""
    decided_at: float | None = None
    decision_reason: str = ""
    edited_args: dict[str, Any] | None = None
    grant_id: str = ""

    @property
    def pending(self) -> bool:
        return self.state == "pending"

    @property
    def allowed(self) -> bool:
        """Approved as asked, or with the edited arguments."""
        return self.state in ("approved", "edited")

    def matches(self, state: State | None, agent: str | None, tool: str | None) -> bool:
        """Whether a store's listing filtered by ``state``, ``agent`` and ``tool`` (None:
        any) holds this request."""
        return (
            (state is None or self.state == state)
            and (agent is None or self.agent_id == agent)
            and (tool is None or self.tool_name == tool)
        )


class GrantSpec(msgspec.Struct, frozen=True, kw_only=True):
    """The standing grant a decision adds: ``match`` "rule" (the rule's pattern, for
    this tool) or "args" (these exact arguments), ``scope`` "session" or "agent",
    ``ttl`` seconds (None: until revoked)."""

    match: GrantMatch = "rule"
    scope: GrantScope = "session"
    ttl: float | None = None


class Grant(msgspec.Struct, frozen=True, kw_only=True):
    """A standing allow, made from request ``request_id`` by ``granted_by``.

    It lets a later ask pass without asking when the ask is for the same tool and
    agent (and session, for scope "session"), for the same principal subject (none when
    the request had none), asked by the same approver (``asked_by``), and either by the
    same rule (``match`` "rule") or with the same arguments (``match`` "args":
    ``args_hash``), before ``expires`` (None: until revoked) and not revoked.
    """

    id: str
    match: GrantMatch
    scope: GrantScope
    tool_name: str
    agent_id: str
    session_key: str = ""
    rule: str = ""
    args_hash: str = ""
    principal_sub: str = ""
    asked_by: str = ""
    request_id: str = ""
    granted_by: str = ""
    created: float = 0.0
    expires: float | None = None
    revoked_at: float | None = None
    revoked_by: str = ""

    def live(self, now: float) -> bool:
        """Not revoked and not expired at ``now``."""
        return self.revoked_at is None and (self.expires is None or now < self.expires)

    def covers(self, record: ApprovalRecord, now: float) -> bool:
        """Whether this grant allows the ask ``record`` at ``now`` (see the class)."""
        if not self.live(now) or record.tool_name != self.tool_name:
            return False
        if record.agent_id != self.agent_id:
            return False
        if self.scope == "session" and record.session_key != self.session_key:
            return False
        if principal_sub(record.principal) != self.principal_sub:
            return False
        if record.asked_by != self.asked_by:
            return False
        if self.match == "args":
            return record.args_hash == self.args_hash
        return bool(self.rule) and record.rule == self.rule


class Change(msgspec.Struct, frozen=True, kw_only=True):
    """One change of a store, as its stream gives it: ``cursor`` orders the changes
    (pass it as ``since`` to read on from there), ``ts`` is when it happened; a request
    change carries the request as it became, a grant change the grant (``grant_used``
    both: the grant and the ask it allowed)."""

    kind: ChangeKind
    cursor: str = ""
    ts: float = 0.0
    request: ApprovalRecord | None = None
    grant: Grant | None = None


# -- identity -----------------------------------------------------------------------------


def _canonical(value: object) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr
    ).encode()


def args_hash(args: Mapping[str, Any]) -> str:
    """``sha256:`` and the hex SHA-256 of ``args`` as canonical JSON (keys sorted, no
    spaces, UTF-8; a value JSON cannot hold is written as its ``repr``)."""
    return "sha256:" + hashlib.sha256(_canonical(args)).hexdigest()


def request_id(agent_id: str, session_key: str, tool_call_id: str, hashed: str) -> str:
    """The id of the request for this call: the same (agent, session, call id, args
    hash) gives the same id in any process."""
    digest = hashlib.sha256(_canonical([agent_id, session_key, tool_call_id, hashed]))
    return "apr_" + digest.hexdigest()[:24]


def principal_sub(principal: Mapping[str, Any] | None) -> str:
    """The subject (``sub`` claim) of a principal, "" without one."""
    if not principal:
        return ""
    sub = principal.get("sub")
    return sub if isinstance(sub, str) else ""


def parse_edited_args(args: object) -> dict[str, Any]:
    """The edited arguments as a dict: a mapping (JSON-encodable) or a JSON object text.

    Raises:
        InvalidEdit: no arguments, text that is not JSON, JSON that is not an object, or
            values JSON cannot hold.
    """
    if args is None:
        raise InvalidEdit("an edit needs the edited arguments")
    if isinstance(args, str | bytes):
        try:
            value = json.loads(args)
        except ValueError as exc:
            raise InvalidEdit(f"the edited arguments are not JSON: {exc}") from None
    else:
        value = args
    if not isinstance(value, Mapping):
        raise InvalidEdit(f"the edited arguments must be a JSON object, got {type(value).__name__}")
    try:
        return dict(json.loads(json.dumps(dict(value), ensure_ascii=False)))
    except (TypeError, ValueError) as exc:
        raise InvalidEdit(f"the edited arguments are not JSON values: {exc}") from None
