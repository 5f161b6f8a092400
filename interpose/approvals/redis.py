"""The approval store of a fleet: one Redis server shared by every agent process, the
inbox and scripts (the ``redis`` extra).

Keys, under ``prefix`` (default ``interpose:approvals``)::

    {prefix}:req:<id>        a request, as JSON
    {prefix}:requests        every request id, scored by its creation time
    {prefix}:pending         the pending ones, likewise
    {prefix}:grant:<id>      a grant, as JSON
    {prefix}:grants          every grant id, scored by its creation time
    {prefix}:count:<what>    a hash per counter (asked, approved...): rule -> count
    {prefix}:wake:<id>       a list pushed to when the request is decided or expires
    {prefix}:changes         the stream of changes: one entry per change, its id the
                             change's cursor

Every change of a request is a check-and-set in one Lua script (the stored JSON must
still be what the decision was made from), so of two decisions racing in two
processes one wins and the other is told the request is already decided.  A waiting
call blocks on the request's wake list (at most a second at a time, then it reads the
request again: a wake that went to another waiter of the same request is not missed).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

import msgspec

from ..bus.redis.common import DEFAULT_URL, as_bytes, check_url, connect, read_entries
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

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = ["DEFAULT_PREFIX", "RedisApprovalStore", "shown_url"]

DEFAULT_PREFIX = "interpose:approvals"
_STREAM_MAXLEN = 100_000
_WAKE_TTL = 60  # s: a wake list nobody popped goes away
_record = msgspec.json.Decoder(ApprovalRecord)
_grant = msgspec.json.Decoder(Grant)
_change = msgspec.json.Decoder(Change)
_encode = msgspec.json.encode

# KEYS: req, requests, pending, count:asked, changes; ARGV: json, created, id, counter
# key, change json, maxlen.  Returns {1, json} when stored, {0, stored json} when the
# id exists.
_SUBMIT = """
local old = redis.call('GET', KEYS[1])
if old then return {0, old} end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
redis.call('HINCRBY', KEYS[4], ARGV[4], 1)
redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[6], '*', 'change', ARGV[5])
return {1, ARGV[1]}
"""

# KEYS: req, pending, count:<state>, changes, wake, grant (or ""), grants;
# ARGV: old json, new json, id, counter key, change json, maxlen, wake ttl, grant json
# (or ""), grant created, grant id, grant change json.  Returns 1 when the request
# was still the old json (and is now the new one), else 0.
_SWAP = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[3])
redis.call('HINCRBY', KEYS[3], ARGV[4], 1)
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[6], '*', 'change', ARGV[5])
if ARGV[8] ~= '' then
  redis.call('SET', KEYS[6], ARGV[8])
  redis.call('ZADD', KEYS[7], ARGV[9], ARGV[10])
  redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[6], '*', 'change', ARGV[11])
end
redis.call('RPUSH', KEYS[5], '1')
redis.call('EXPIRE', KEYS[5], ARGV[7])
return 1
"""


def shown_url(url: str) -> str:
    """``url`` with its password, if any, replaced by ``***`` (for showing it)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


class RedisApprovalStore:
    """An :class:`~.store.ApprovalStore` on the Redis server at ``url`` (see the module
    and ``ApprovalStore`` for each method).  Connects on first use; ``aclose`` when
    done.  ``clock`` gives seconds since the epoch (the processes sharing a store
    should agree on the time: expiry is judged on it).

    Raises:
        ValueError: ``url`` is not a Redis URL, or ``prefix`` is empty.
        ImportError: redis-py is not installed (the ``redis`` extra).
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Callable[[], float] = time.time,
        socket_timeout: float = 10.0,
    ) -> None:
        check_url(url)
        if not prefix:
            raise ValueError("prefix must be a non-empty string")
        self.url = url
        self.prefix = prefix
        self.clock = clock
        self._client: Redis = connect(url, 2, socket_timeout)
        self._submit = self._client.register_script(_SUBMIT)
        self._swap = self._client.register_script(_SWAP)

    def __repr__(self) -> str:
        return f"RedisApprovalStore({shown_url(self.url)!r}, prefix={self.prefix!r})"

    def _key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    # -- requests ----------------------------------------------------------------------

    async def submit(self, record: ApprovalRecord) -> ApprovalRecord:
        record = msgspec.structs.replace(record, state="pending")
        data = _encode(record)
        change = _encode(Change(kind="request_created", ts=self.clock(), request=record))
        stored, raw = await self._submit(
            keys=[
                self._key("req", record.id),
                self._key("requests"),
                self._key("pending"),
                self._key("count", "asked"),
                self._key("changes"),
            ],
            args=[data, record.created, record.id, counter_key(record), change, _STREAM_MAXLEN],
        )
        return record if int(stored) else await self._fresh(_record.decode(raw), raw)

    async def get(self, request_id: str) -> ApprovalRecord:
        raw = await self._raw(request_id)
        return await self._fresh(_record.decode(raw), raw)

    async def list_pending(
        self, *, agent: str | None = None, tool: str | None = None, limit: int | None = None
    ) -> list[ApprovalRecord]:
        return await self._list("pending", "pending", agent, tool, limit)

    async def list_requests(
        self,
        *,
        state: State | None = None,
        agent: str | None = None,
        tool: str | None = None,
        limit: int | None = None,
    ) -> list[ApprovalRecord]:
        return await self._list("requests", state, agent, tool, limit)

    async def _list(
        self,
        index: str,
        state: State | None,
        agent: str | None,
        tool: str | None,
        limit: int | None,
    ) -> list[ApprovalRecord]:
        ids = await self._client.zrevrange(self._key(index), 0, -1)
        found: list[ApprovalRecord] = []
        for start in range(0, len(ids), 500):
            keys = [self._key("req", as_bytes(i).decode()) for i in ids[start : start + 500]]
            for raw in await self._client.mget(keys):
                if raw is None:
                    continue
                record = await self._fresh(_record.decode(raw), as_bytes(raw))
                if record.matches(state, agent, tool):
                    found.append(record)
                    if limit is not None and len(found) >= limit:
                        return found
        return found

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
        while True:
            raw = await self._raw(request_id)
            record = await self._fresh(_record.decode(raw), raw)
            new, made = decided(
                record,
                action,
                approver=approver,
                reason=reason,
                args=args,
                grant=grant,
                now=self.clock(),
            )
            if await self._store(raw, new, "request_decided", made):
                return new

    async def expire(self, request_id: str) -> ApprovalRecord:
        while True:
            raw = await self._raw(request_id)
            record = _record.decode(raw)
            if record.state != "pending":
                return record
            expired = self._expired(record)
            if await self._store(raw, expired, "request_expired"):
                return expired

    async def wait(self, request_id: str) -> ApprovalRecord:
        wake = self._key("wake", request_id)
        while True:
            record = await self.get(request_id)
            if record.state != "pending":
                return record
            left = record.expires - self.clock()
            if left > 0:
                # BLPOP's timeout is whole seconds (0 = forever): at most 1 s a round
                await self._client.blpop([wake], timeout=min(1.0, max(left, 0.01)))

    # -- grants ------------------------------------------------------------------------

    async def grants(self, *, agent: str | None = None, live: bool = True) -> list[Grant]:
        ids = await self._client.zrevrange(self._key("grants"), 0, -1)
        if not ids:
            return []
        keys = [self._key("grant", as_bytes(i).decode()) for i in ids]
        now = self.clock()
        found = []
        for raw in await self._client.mget(keys):
            if raw is None:
                continue
            g = _grant.decode(raw)
            if (not live or g.live(now)) and (agent is None or g.agent_id == agent):
                found.append(g)
        return found

    async def get_grant(self, grant_id: str) -> Grant:
        raw = await self._client.get(self._key("grant", grant_id))
        if raw is None:
            raise UnknownGrant(f"no grant has id {grant_id!r}")
        return _grant.decode(raw)

    async def add_grant(self, grant: Grant) -> Grant:
        added = await self._client.set(self._key("grant", grant.id), _encode(grant), nx=True)
        if not added:
            raise ValueError(f"a grant with id {grant.id} exists")
        await self._client.zadd(self._key("grants"), {grant.id: grant.created})
        await self._change("grant_added", grant=grant)
        return grant

    async def revoke(self, grant_id: str, *, by: str) -> Grant:
        grant = await self.get_grant(grant_id)
        if grant.revoked_at is not None:
            return grant
        grant = msgspec.structs.replace(grant, revoked_at=self.clock(), revoked_by=by)
        await self._client.set(self._key("grant", grant_id), _encode(grant))
        await self._change("grant_revoked", grant=grant)
        return grant

    async def match_grant(self, record: ApprovalRecord) -> Grant | None:
        now = self.clock()
        for grant in await self.grants(agent=record.agent_id):
            if grant.covers(record, now):
                await self._client.hincrby(self._key("count", "granted"), counter_key(record), 1)
                await self._change("grant_used", grant=grant, request=record)
                return grant
        return None

    # -- the stream and the counters ---------------------------------------------------

    async def changes(self, since: str | None = None) -> AsyncIterator[Change]:
        stream = self._key("changes")
        cursor = "$" if since is None else since
        while True:
            reply = await self._client.xread({stream: cursor}, block=1000, count=500)
            for entry_id, fields in read_entries(reply):
                cursor = entry_id.decode()
                change = _change.decode(fields[b"change"])
                yield msgspec.structs.replace(change, cursor=cursor)

    async def counters(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for what in COUNTS:
            for key, count in (await self._client.hgetall(self._key("count", what))).items():
                counts = out.setdefault(as_bytes(key).decode(), dict.fromkeys(COUNTS, 0))
                counts[what] = int(count)
        return out

    async def aclose(self) -> None:
        await self._client.aclose()

    # -- helpers -----------------------------------------------------------------------

    async def _raw(self, request_id: str) -> bytes:
        raw = await self._client.get(self._key("req", request_id))
        if raw is None:
            raise UnknownRequest(f"no request has id {request_id!r}")
        return as_bytes(raw)

    async def _fresh(self, record: ApprovalRecord, raw: bytes) -> ApprovalRecord:
        """``record`` (stored as ``raw``), expired first when its time is up."""
        if not due(record, self.clock()):
            return record
        expired = self._expired(record)
        if await self._store(raw, expired, "request_expired"):
            return expired
        return await self.get(record.id)  # another process changed it first

    def _expired(self, record: ApprovalRecord) -> ApprovalRecord:
        return msgspec.structs.replace(
            record, state="expired", decided_at=self.clock(), decision_reason="expired"
        )

    async def _store(
        self, old: bytes, new: ApprovalRecord, kind: ChangeKind, grant: Grant | None = None
    ) -> bool:
        """Swap the request stored as ``old`` for ``new`` with its change (and the grant
        the decision made); False when it was changed in between."""
        now = self.clock()
        grant_change = (
            _encode(Change(kind="grant_added", ts=now, grant=grant)) if grant is not None else b""
        )
        done = await self._swap(
            keys=[
                self._key("req", new.id),
                self._key("pending"),
                self._key("count", new.state),
                self._key("changes"),
                self._key("wake", new.id),
                self._key("grant", grant.id) if grant is not None else self._key("grant", ""),
                self._key("grants"),
            ],
            args=[
                old,
                _encode(new),
                new.id,
                counter_key(new),
                _encode(Change(kind=kind, ts=now, request=new)),
                _STREAM_MAXLEN,
                _WAKE_TTL,
                _encode(grant) if grant is not None else b"",
                grant.created if grant is not None else 0,
                grant.id if grant is not None else "",
                grant_change,
            ],
        )
        return bool(int(done))

    async def _change(
        self, kind: ChangeKind, *, grant: Grant | None = None, request: ApprovalRecord | None = None
    ) -> None:
        change = Change(kind=kind, ts=self.clock(), grant=grant, request=request)
        await self._client.xadd(
            self._key("changes"),
            {"change": _encode(change)},
            maxlen=_STREAM_MAXLEN,
            approximate=True,
        )
