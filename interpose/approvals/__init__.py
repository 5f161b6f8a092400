"""Durable approvals: an ``ask`` as an approval request in a store, decided by a person
in any process (approve, deny with a reason, edit then approve, standing grants), and
the waiting call that resumes when it is decided.

The store's interface is :class:`ApprovalStore`; :class:`MemoryApprovalStore` keeps one
process's requests, ``interpose.approvals.redis.RedisApprovalStore`` a fleet's (the
``redis`` extra).
"""

from __future__ import annotations

from .memory import MemoryApprovalStore
from .model import (
    Action,
    AlreadyDecided,
    ApprovalError,
    ApprovalRecord,
    Change,
    ChangeKind,
    Grant,
    GrantMatch,
    GrantScope,
    GrantSpec,
    InvalidEdit,
    State,
    UnknownGrant,
    UnknownRequest,
    args_hash,
    parse_edited_args,
    principal_sub,
    request_id,
)
from .store import COUNTS, ApprovalStore

__all__ = [
    "COUNTS",
    "Action",
    "AlreadyDecided",
    "ApprovalError",
    "ApprovalRecord",
    "ApprovalStore",
    "Change",
    "ChangeKind",
    "Grant",
    "GrantMatch",
    "GrantScope",
    "GrantSpec",
    "InvalidEdit",
    "MemoryApprovalStore",
    "State",
    "UnknownGrant",
    "UnknownRequest",
    "args_hash",
    "parse_edited_args",
    "principal_sub",
    "request_id",
]
