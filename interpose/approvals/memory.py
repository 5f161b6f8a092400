"""The approval store of one process: dicts, and an event that wakes every waiter on
each change.  The default store; a fleet uses :class:`~.redis.RedisApprovalStore`."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from itertools import islice

import anyio
import msgspec

from .model import (
    Action,
    ApprovalRecord,
    Change,
    ChangeKind,
    Grant,
    GrantSpec,
    State,
    UnknownGrant,
    UnknownRequest,
)
from .store import COUNTS, counter_key, decided, due

__all__ = ["MemoryApprovalStore"]


class MemoryApprovalStore:
    """An :class:`~.store.ApprovalStore` in this process's memory (see there for each
    method).  ``history`` changes are kept for ``changes(since=...)``; ``clock`` gives
    the time in seconds since the epoch."""

    def __init__(self, *, history: int = 10_000, clock: Callable[[], float] = time.time) -> None:
        self._requests: dict[str, ApprovalRecord] = {}
        self._grants: dict[str, Grant] = {}
        self._counters: dict[str, dict[str, int]] = {}
        self._log: deque[Change] = deque(maxlen=history)
        self._seq = 0
        # who waits for a change: request id -> the events of its waiters; None -> the
        # readers of ``changes``.  One event per waiter, made in the waiter's own loop
        self._waiters: dict[str | None, set[anyio.Event]] = {}
        self.clock = clock

    def __repr__(self) -> str:
        return "MemoryApprovalStore()"

    # -- requests ----------------------------------------------------------------------

    async def submit(self, record: ApprovalRecord) -> ApprovalRecord:
        known = self._requests.get(record.id)
        if known is not None:
            return self._fresh(known)
        record = msgspec.structs.replace(record, state="pending")
        self._requests[record.id] = record
        self._count(record, "asked")
        self._emit("request_created", request=record)
        return record

    async def get(self, request_id: str) -> ApprovalRecord:
        return self._fresh(self._find(request_id))

    async def list_pending(
        self, *, agent: str | None = None, tool: str | None = None, limit: int | None = None
    ) -> list[ApprovalRecord]:
        return await self.list_requests(state="pending", agent=agent, tool=tool, limit=limit)

    async def list_requests(
        self,
        *,
        state: State | None = None,
        agent: str | None = None,
        tool: str | None = None,
        limit: int | None = None,
    ) -> list[ApprovalRecord]:
        found = [
            record
            for record in map(self._fresh, list(self._requests.values()))
            if record.matches(state, agent, tool)
        ]
        found.sort(key=lambda r: r.created, reverse=True)
        return found[:limit] if limit is not None else found

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
        record = self._fresh(self._find(request_id))
        record, made = decided(
            record,
            action,
            approver=approver,
            reason=reason,
            args=args,
            grant=grant,
            now=self.clock(),
        )
        self._requests[record.id] = record
        self._count(record, record.state)
        self._emit("request_decided", request=record)
        if made is not None:
            self._grants[made.id] = made
            self._emit("grant_added", grant=made)
        return record

    async def expire(self, request_id: str) -> ApprovalRecord:
        record = self._find(request_id)
        if record.state != "pending":
            return record
        return self._expired(record)

    async def wait(self, request_id: str) -> ApprovalRecord:
        while True:
            record = self._fresh(self._find(request_id))
            if record.state != "pending":
                return record
            with anyio.move_on_after(max(0.0, record.expires - self.clock())):
                await self._wait_for(request_id)

    # -- grants ------------------------------------------------------------------------

    async def grants(self, *, agent: str | None = None, live: bool = True) -> list[Grant]:
        now = self.clock()
        found = [
            g
            for g in self._grants.values()
            if (not live or g.live(now)) and (agent is None or g.agent_id == agent)
        ]
        found.sort(key=lambda g: g.created, reverse=True)
        return found

    async def get_grant(self, grant_id: str) -> Grant:
        grant = self._grants.get(grant_id)
        if grant is None:
            raise UnknownGrant(f"no grant has id {grant_id!r}")
        return grant

    async def add_grant(self, grant: Grant) -> Grant:
        if grant.id in self._grants:
            raise ValueError(f"a grant with id {grant.id} exists")
        self._grants[grant.id] = grant
        self._emit("grant_added", grant=grant)
        return grant

    async def revoke(self, grant_id: str, *, by: str) -> Grant:
        grant = await self.get_grant(grant_id)
        if grant.revoked_at is not None:
            return grant
        grant = msgspec.structs.replace(grant, revoked_at=self.clock(), revoked_by=by)
        self._grants[grant_id] = grant
        self._emit("grant_revoked", grant=grant)
        return grant

    async def match_grant(self, record: ApprovalRecord) -> Grant | None:
        now = self.clock()
        for grant in await self.grants(agent=record.agent_id):
            if grant.covers(record, now):
                self._count(record, "granted")
                self._emit("grant_used", grant=grant, request=record)
                return grant
        return None

    # -- the stream and the counters ---------------------------------------------------

    async def changes(self, since: str | None = None) -> AsyncIterator[Change]:
        seq = self._seq if since is None else int(since)
        while True:
            first = self._seq - len(self._log) + 1  # the oldest kept change's cursor
            fresh = list(islice(self._log, max(0, seq + 1 - first), None))
            for change in fresh:
                seq = int(change.cursor)
                yield change
            if not fresh:
                await self._wait_for(None)

    async def counters(self) -> dict[str, dict[str, int]]:
        return {key: dict(counts) for key, counts in self._counters.items()}

    async def aclose(self) -> None:
        return None

    # -- helpers -----------------------------------------------------------------------

    def _find(self, request_id: str) -> ApprovalRecord:
        record = self._requests.get(request_id)
        if record is None:
            raise UnknownRequest(f"no request has id {request_id!r}")
        return record

    def _fresh(self, record: ApprovalRecord) -> ApprovalRecord:
        """``record``, expired first when its time is up."""
        return self._expired(record) if due(record, self.clock()) else record

    def _expired(self, record: ApprovalRecord) -> ApprovalRecord:
        record = msgspec.structs.replace(
            record, state="expired", decided_at=self.clock(), decision_reason="expired"
        )
        self._requests[record.id] = record
        self._count(record, "expired")
        self._emit("request_expired", request=record)
        return record

    def _count(self, record: ApprovalRecord, what: str) -> None:
        counts = self._counters.setdefault(counter_key(record), dict.fromkeys(COUNTS, 0))
        counts[what] += 1

    async def _wait_for(self, key: str | None) -> None:
        """Until the next change of request ``key`` (None: of anything)."""
        event = anyio.Event()
        waiters = self._waiters.setdefault(key, set())
        waiters.add(event)
        try:
            await event.wait()
        finally:
            waiters.discard(event)
            if not waiters and self._waiters.get(key) is waiters:
                del self._waiters[key]

    def _emit(
        self,
        kind: ChangeKind,
        *,
        request: ApprovalRecord | None = None,
        grant: Grant | None = None,
    ) -> None:
        self._seq += 1
        self._log.append(
            Change(kind=kind, cursor=str(self._seq), ts=self.clock(), request=request, grant=grant)
        )
        for key in (None, request.id if request is not None else None):
            for event in self._waiters.pop(key, ()):
                event.set()
