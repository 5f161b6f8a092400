"""What the inbox's HTTP layer does with an approval store: JSON in, JSON out.

``StoreBackend`` wraps any ``ApprovalStore`` (memory, Redis): it lists, reads and decides
requests, lists and revokes grants, counts, and follows the store's change stream; the
store's refusals become ``DecisionError`` with the HTTP status that says what was wrong
(400 malformed, 404 unknown, 409 no longer pending), and nothing changes.
``parse_decision`` reads a decision's JSON body strictly.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from types import TracebackType
from typing import Any, Literal

import msgspec

from ...approvals import (
    AlreadyDecided,
    ApprovalStore,
    Change,
    GrantSpec,
    InvalidEdit,
    UnknownGrant,
    UnknownRequest,
)
from ...errors import UsageError

__all__ = [
    "Decision",
    "DecisionError",
    "StoreBackend",
    "change_json",
    "open_store",
    "parse_decision",
    "reachable",
]

_STATES = frozenset(("pending", "approved", "denied", "expired", "edited"))


class DecisionError(Exception):
    """A request the inbox refuses, with its HTTP ``status`` (the message says why)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Decision(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The body of ``POST /api/requests/{id}/decide``: ``decision`` approve / deny /
    edit, the ``reason`` the model sees of a deny, the edited ``args`` (a JSON object),
    and with approve an optional standing ``grant`` (match, scope, ttl seconds)."""

    decision: Literal["approve", "deny", "edit"]
    reason: str = ""
    args: Any = None
    grant: GrantSpec | None = None


_convert = msgspec.convert


def parse_decision(body: object) -> Decision:
    """The decision in a request's JSON ``body``.

    Raises:
        DecisionError: 400, the body is not a decision (the message says where).
    """
    try:
        decision = _convert(body, Decision)
    except msgspec.ValidationError as exc:
        raise DecisionError(400, f"not a decision: {exc}") from None
    if decision.args is not None and decision.decision != "edit":
        # (approving or denying other arguments than those shown is an edit)
        raise DecisionError(400, f"args go with an edit, not with {decision.decision!r}")
    return decision


def _json(value: msgspec.Struct) -> dict[str, Any]:
    built: dict[str, Any] = msgspec.to_builtins(value)
    return built


def change_json(change: Change) -> dict[str, Any]:
    """A change as the event stream sends it."""
    return _json(change)


class StoreBackend:
    """The inbox's operations on ``store`` (``async with``: closes the store after)."""

    def __init__(self, store: ApprovalStore) -> None:
        self.store = store

    async def __aenter__(self) -> StoreBackend:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.store.aclose()

    async def requests(
        self, *, state: str | None, agent: str | None, tool: str | None, limit: int
    ) -> list[dict[str, Any]]:
        """Requests newest first (``state`` None: any).

        Raises:
            DecisionError: 400, an unknown state.
        """
        if state is not None and state not in _STATES:
            raise DecisionError(400, f"state: one of {', '.join(sorted(_STATES))} or all")
        found = await self.store.list_requests(
            state=state,  # type: ignore[arg-type]  # (checked above)
            agent=agent,
            tool=tool,
            limit=limit,
        )
        return [_json(record) for record in found]

    async def get(self, request_id: str) -> dict[str, Any] | None:
        try:
            return _json(await self.store.get(request_id))
        except UnknownRequest:
            return None

    async def decide(self, request_id: str, decision: Decision, approver: str) -> dict[str, Any]:
        """Decide the pending request; the request as decided.

        Raises:
            DecisionError: 404 unknown, 409 no longer pending, 400 a decision the store
                refuses (edited arguments that are not a JSON object, a grant with deny...).
        """
        try:
            record = await self.store.decide(
                request_id,
                decision.decision,
                approver=approver,
                reason=decision.reason,
                args=decision.args,
                grant=decision.grant,
            )
        except UnknownRequest:
            raise DecisionError(404, f"no approval request {request_id!r}") from None
        except AlreadyDecided as exc:
            raise DecisionError(409, str(exc)) from None
        except (InvalidEdit, ValueError) as exc:
            raise DecisionError(400, str(exc)) from None
        return _json(record)

    async def grants(self, *, agent: str | None, live: bool) -> list[dict[str, Any]]:
        return [_json(grant) for grant in await self.store.grants(agent=agent, live=live)]

    async def revoke(self, grant_id: str, by: str) -> dict[str, Any]:
        """Revoke a grant; the grant as revoked.

        Raises:
            DecisionError: 404, no such grant.
        """
        try:
            return _json(await self.store.revoke(grant_id, by=by))
        except UnknownGrant:
            raise DecisionError(404, f"no grant {grant_id!r}") from None

    async def counters(self) -> dict[str, dict[str, int]]:
        return await self.store.counters()

    async def changes(self) -> AsyncGenerator[dict[str, Any], None]:
        """The store's changes from now on, as JSON (the store's iterator is closed
        when this one is)."""
        changes = self.store.changes()
        try:
            async for change in changes:
                yield change_json(change)
        finally:
            close = getattr(changes, "aclose", None)  # (an async generator: most are)
            if close is not None:
                await close()


def open_store(*, redis: str | None, prefix: str | None = None) -> StoreBackend:
    """The store ``interpose inbox`` serves: the fleet's, on the Redis server at
    ``redis`` under the keys ``prefix`` (an inbox in its own process would only ever see
    its own, empty, memory store).

    Raises:
        UsageError: no URL, not a Redis URL, or redis-py is not installed.
    """
    if redis is None:
        raise UsageError(
            '--redis URL (or --config with [approvals] store = "redis") is needed: the '
            "agents' approval requests are in their Redis"
        )
    try:
        from ...approvals.redis import DEFAULT_PREFIX, RedisApprovalStore

        return StoreBackend(RedisApprovalStore(redis, prefix=prefix or DEFAULT_PREFIX))
    except ImportError:
        raise UsageError("--redis needs the redis extra: pip install 'interpose[redis]'") from None
    except ValueError as exc:
        raise UsageError(f"--redis: {exc}") from None


async def reachable(backend: StoreBackend) -> None:
    """Read the store once (its counters).

    Raises:
        UsageError: it does not answer.
    """
    try:
        await backend.counters()
    except Exception as exc:
        raise UsageError(f"{backend.store!r} does not answer: {exc}") from None
