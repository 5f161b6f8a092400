"""The asks of a replay: the candidate's human-approval handler while it replays.

A replay asks no one and never waits.  An ask of the candidate for a call whose
recorded run answered the same ask (the same arguments, by their hash) is answered as
it was, and reported as such, not as a new ask: a standing grant that allowed it
(``grant_used``: allowed again, naming the grant and who granted it), or a person's
decision (``approval_decided``: approved, denied with its reason, or edited: the
arguments the tool got in the recorded run, judged again).  Any other ask is denied,
saying so.
"""

from __future__ import annotations

from typing import Any

from ..approvals.model import args_hash
from ..bus.events import ApprovalDecided, ApprovalRequested, GrantUsed
from ..pipeline.payloads import Approval, ApprovalRequest
from ._log import RecordedCall

__all__ = ["RecordedAsks"]


class RecordedAsks:
    """Answers the asks of the call being replayed (``start``) from its recorded asks;
    ``answered`` says how, for the report ("" when nothing was asked or it was
    denied as a new ask)."""

    def __init__(self) -> None:
        self.call: RecordedCall | None = None
        self.answered = ""

    def start(self, call: RecordedCall) -> None:
        self.call, self.answered = call, ""

    def __call__(self, request: ApprovalRequest, reason: str) -> Approval:
        hashed = args_hash(request.args)
        call = self.call
        for event in call.asks if call is not None else ():
            if isinstance(event, GrantUsed) and event.args_hash == hashed:
                self.answered = f"grant {event.grant_id} (granted by {event.granted_by})"
                return Approval.allow(f"allowed by the recorded {self.answered}")
        decision = _recorded_decision(call, hashed) if call is not None else None
        if decision is not None:
            self.answered = f"recorded decision: {decision.state} by {decision.decided_by}"
            return _as_decided(decision, call.event.applied if call is not None else None)
        return Approval.deny(f"approval required ({reason}): a replay asks no one")


def _recorded_decision(call: RecordedCall, hashed: str) -> ApprovalDecided | None:
    """The person's recorded decision of the request for these arguments, if any."""
    asked = {
        e.request_id
        for e in call.asks
        if isinstance(e, ApprovalRequested) and e.args_hash == hashed
    }
    for event in call.asks:
        if isinstance(event, ApprovalDecided) and event.request_id in asked:
            return event
    return None


def _as_decided(decision: ApprovalDecided, applied: Any) -> Approval:
    if decision.state == "approved":
        return Approval.allow(f"approved by {decision.decided_by} (recorded)")
    if decision.state == "edited" and isinstance(applied, dict):
        return Approval.edited(applied, f"edited by {decision.decided_by} (recorded)")
    return Approval.deny(decision.reason or f"{decision.state} by {decision.decided_by} (recorded)")
