"""The waiting call: a pipeline's human-approval handler that makes each ``ask`` an
approval request in a store and resumes when a person decides it, in any process.

``DurableApprovals(store).install(pipe)`` sets it as ``pipe.human_approval``.  For each
ask it first looks for a standing grant that covers the call (an allow, published as
``grant_used`` naming who granted it); else it submits the request (the same call asked
again, by a restarted agent, finds the same request) and waits for its decision:
approve (allow), deny (the person's reason is what the model sees), edit (an allow of
the edited arguments, which the pipeline judges again before the tool runs).  A request
nobody decided in time expires: a deny, never a hang.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import msgspec

from ..bus import events as ev
from ..pipeline.payloads import Approval, ApprovalRequest
from . import events
from .model import ApprovalRecord, args_hash, request_id
from .store import ApprovalStore

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline

__all__ = ["DEFAULT_TIMEOUT", "DurableApprovals", "answer_of"]

#: how long a request waits for a person when neither the handler nor the pipeline
#: (``approval_timeout``) says (seconds)
DEFAULT_TIMEOUT = 3600.0


class DurableApprovals:
    """A human-approval handler backed by the approval store ``store``.

    ``timeout`` (seconds) is how long a request waits for a decision, never longer than
    the pipeline's ``approval_timeout`` (the declared bound of every human answer; a
    request past it is denied); None: the pipeline's, or ``DEFAULT_TIMEOUT`` when that
    is None too.  ``clock`` gives seconds since the epoch.
    """

    def __init__(
        self,
        store: ApprovalStore,
        *,
        timeout: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be above 0 seconds, got {timeout}")
        self.store = store
        self.timeout = timeout
        self.clock = clock
        self.pipeline: Pipeline | None = None

    def install(self, pipe: Pipeline) -> DurableApprovals:
        """Answer ``pipe``'s asks (``pipe.human_approval``) and publish on its bus."""
        pipe.human_approval = self
        self.pipeline = pipe
        return self

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """A pipeline service (``pipe.add_service``): nothing to start."""

    async def aclose(self) -> None:
        """A pipeline service: close the store's connections when the pipeline exits."""
        await self.store.aclose()

    def describe(self) -> str:
        """One line for ``interpose check``: the store and how long a request waits."""
        return f"approvals: store={self.store!r} request timeout={self.wait_seconds():g}s"

    def wait_seconds(self) -> float:
        """How long a new request waits for a decision."""
        bound = self.pipeline.approval_timeout if self.pipeline is not None else None
        if self.timeout is None:
            return bound if bound is not None else DEFAULT_TIMEOUT
        return self.timeout if bound is None else min(self.timeout, bound)

    def record_of(self, request: ApprovalRequest, reason: str) -> ApprovalRecord:
        """The approval request of the ask ``request`` (not stored)."""
        args: dict[str, Any] = json.loads(json.dumps(request.args, default=repr))
        hashed = args_hash(args)
        now = self.clock()
        return ApprovalRecord(
            id=request_id(request.agent_id, request.session_key, request.tool_call_id, hashed),
            tool_name=request.tool_name,
            args=args,
            args_hash=hashed,
            agent_id=request.agent_id,
            session_key=request.session_key,
            turn_id=request.turn_id,
            tool_call_id=request.tool_call_id,
            asked_by=request.asked_by,
            rule=request.rule,
            reason=reason,
            principal=request.principal,
            created=now,
            expires=now + self.wait_seconds(),
        )

    async def __call__(self, request: ApprovalRequest, reason: str) -> Approval:
        """The answer to one ask: a grant's allow, or the person's decision, waited for."""
        record = self.record_of(request, reason)
        grant = await self.store.match_grant(record)
        if grant is not None:
            await self._publish(events.grant_used(grant, record))
            return Approval.allow(f"granted by {grant.granted_by} (grant {grant.id})")
        stored = await self.store.submit(record)
        await self._publish(events.requested(stored, resumed=stored.created != record.created))
        if stored.pending:
            stored = await self._wait(stored)
        await self._publish(events.decided(stored))
        if stored.grant_id:
            await self._publish(events.grant_added(await self.store.get_grant(stored.grant_id)))
        return answer_of(stored)

    async def _wait(self, record: ApprovalRecord) -> ApprovalRecord:
        """The request's decision; when the pipeline's own bound cuts the wait at the
        request's expiry, the request is expired on the way out (a cancellation sooner,
        of a stopping agent, leaves it pending: a restart finds it)."""
        try:
            return await self.store.wait(record.id)
        except BaseException:
            if self.clock() >= record.expires - 1.0:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5.0):
                    expired = await self.store.expire(record.id)
                    await self._publish(events.decided(expired))
            raise

    async def _publish(self, event: ev.Event) -> None:
        """Publish ``event`` on the pipeline's bus (numbered there) when someone listens."""
        pipe = self.pipeline
        if pipe is not None and event.kind in pipe.bus.wanted:
            await pipe.bus.publish(msgspec.structs.replace(event, seq=next(pipe.runtime.seq)))


def answer_of(record: ApprovalRecord) -> Approval:
    """What a request, no longer pending, answers the pipeline: approved: allow; edited:
    an allow of the edited arguments (judged again); denied: a deny with the person's
    reason; expired: a deny."""
    if record.state == "approved":
        return Approval.allow(f"approved by {record.decided_by}")
    if record.state == "edited" and record.edited_args is not None:
        return Approval.edited(record.edited_args, f"edited by {record.decided_by}")
    if record.state == "denied":
        return Approval.deny(record.decision_reason or f"denied by {record.decided_by}")
    return Approval.deny(f"approval request {record.id} expired without a decision")
