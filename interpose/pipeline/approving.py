"""The tool stage's approval step (``tool.approve``): the approvers, the human's answer to
an ``ask``, and edit-then-approve.

``approve`` runs the approvers on the call's final arguments; an ``Approval.ask`` goes
to the pipeline's human-approval handler (none, a failing one, a late one or another
"ask" mean deny).  A human who edits the arguments (``Approval.edited(args)``) allows
the call with those only after it is judged again: the tool stage's ``rejudge`` runs
the tool.before handlers (guards, permission rules) on them, then the approvers run
again, an "ask" for exactly the arguments the person approved being allowed without
asking twice.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from ..errors import AbortTurn, HardAbort
from .context import ToolContext, current_principal
from .failures import Failures, Fault
from .payloads import Approval, ApprovalRequest, ToolResult, refusal

if TYPE_CHECKING:
    from .runtime import Host, Runtime
    from .tool_chain import ToolChain

__all__ = ["MAX_EDITS", "Rejudge", "approve", "ask_human", "decision_of"]

log = logging.getLogger("interpose")
_ABORTS = (AbortTurn, HardAbort)
#: how many times a person may edit one call's arguments before it is denied
MAX_EDITS = 3
#: the tool stage's judgement of edited arguments: the result when the tool.before
#: handlers blocked or answered the call, None to go on (the call now has them)
Rejudge = Callable[
    ["Runtime", "ToolChain", ToolContext, dict[str, Any]], Awaitable[ToolResult | None]
]


async def approve(
    rt: Runtime,
    chain: ToolChain,
    ctx: ToolContext,
    rejudge: Rejudge,
    approved: dict[str, Any] | None = None,
    edits: int = 0,
) -> ToolResult | None:
    """Run the approvers; None if all allow, else the refusal (noting who decided on
    ``ctx``): "denied" for a deny or a late answer, "blocked" for an approver that
    failed closed (its details hold the failure) or for edited arguments the
    tool.before handlers blocked.  ``approved``: arguments a person approved by editing
    them (an ask for exactly these is an allow), the ``edits``-th edit of the call.

    One coroutine for the approvers (the "approvers" rows of the benchmarks); an edit
    judges the call again and runs them again, in another.

    Raises:
        AbortTurn, HardAbort: from an approver.
        Exception: an approver's failure, when its policy is "raise".
    """
    inp, times, name = ctx._inp, ctx._times, chain.tool_name
    request = ApprovalRequest(
        turn_id=inp.turn_id,
        tool_name=name,
        tool_call_id=inp.tool_call_id,
        args=ctx._out.args,
        agent_id=inp.agent_id,
        session_key=inp.session_key,
    )
    for fn, step in zip(chain.approvers, chain.approver_steps, strict=True):
        start = perf_counter_ns() if times is not None else 0
        try:
            try:
                answer = fn(request)
                if answer is not None and isawaitable(answer):
                    answer = await answer
            finally:
                if times is not None:
                    times.append((step.id, perf_counter_ns() - start))
            if answer is None:  # no opinion: the usual answer
                continue
            decision, reason = decision_of(answer)
        except _ABORTS as exc:
            exc.source = exc.source or step.id
            raise
        except Exception as exc:
            fault = await rt.failures.record(step, exc, request)
            if isinstance(exc, TimeoutError):  # a late approver is a deny, whatever the policy
                late = (
                    f"approver '{step.id}' did not answer within {step.timeout}s"
                    if step.timeout is not None
                    else f"approver '{step.id}' timed out: {fault.error}"
                )
                ctx._decider, ctx._reason = step, late
                return refusal("denied", name, late, decided_by=step.id)
            if step.on_error == "raise":
                raise
            if step.on_error == "skip":
                continue
            ctx._decider = step
            ctx._reason = f"interceptor '{step.id}' failed: {fault.error}"
            return refusal(
                "blocked", name, ctx._reason, decided_by=step.id, failure=fault.details()
            )
        if decision == "ask" and approved is not None and request.args == approved:
            decision = "allow"  # the person approved exactly these arguments
        elif decision == "ask":
            asked = msgspec.structs.replace(
                request,
                asked_by=step.id,
                rule=answer.rule if isinstance(answer, Approval) else "",
                principal=current_principal(),
            )
            decision, reason, edited = await ask_human(rt.host, rt.failures, asked, reason)
            if edited is not None and decision == "allow":
                return await _edited(rt, chain, ctx, rejudge, edited, edits + 1)
        if decision == "deny":
            ctx._decider = step
            ctx._reason = reason or f"denied by {step.id}"
            return refusal("denied", name, ctx._reason, decided_by=step.id)
    return None


async def _edited(
    rt: Runtime,
    chain: ToolChain,
    ctx: ToolContext,
    rejudge: Rejudge,
    args: dict[str, Any],
    edits: int,
) -> ToolResult | None:
    """The call with the arguments a person edited: judged again by the tool.before
    handlers (``rejudge``), then by the approvers; denied past ``MAX_EDITS`` edits."""
    if edits > MAX_EDITS:
        ctx._reason = f"the arguments were edited more than {MAX_EDITS} times"
        return refusal("denied", chain.tool_name, ctx._reason)
    result = await rejudge(rt, chain, ctx, args)
    if result is not None:
        return result
    return await approve(rt, chain, ctx, rejudge, args, edits)


async def ask_human(
    host: Host, failures: Failures, request: ApprovalRequest, reason: str
) -> tuple[str, str, dict[str, Any] | None]:
    """The human's answer to an approver's "ask", as (decision, reason, edited
    arguments or None); no handler, a failing one, a late one or another "ask" mean
    deny."""
    if host.human_approval is None:
        return "deny", f"approval required ({reason}) but no human-approval handler is set", None
    try:
        with anyio.fail_after(host.approval_timeout):
            answer = host.human_approval(request, reason)
            if isawaitable(answer):
                answer = await answer
        decision, why = decision_of(answer)
        edited = answer.args if isinstance(answer, Approval) else None
        if edited is not None and not isinstance(edited, dict):
            raise TypeError(f"edited arguments must be a dict, got {type(edited).__name__}")
    except TimeoutError:
        late = f"approval required ({reason}): no answer within {host.approval_timeout}s"
        return "deny", late, None
    except Exception as exc:
        fault = Fault.of(host.human_approval, exc, f"{type(exc).__name__}: {exc}", deadline=False)
        log.warning(
            "human-approval handler failed: %s [%s]",
            fault.error,
            fault.where(),
            exc_info=exc if failures.debugging() else None,
        )
        return "deny", f"approval required ({reason}): the handler failed: {exc!r}", None
    if decision == "ask":
        return "deny", f"approval required ({reason}): the handler answered 'ask' again", None
    return decision, why or reason, edited


def decision_of(answer: Any) -> tuple[str, str]:
    """(decision, reason) of an approver's answer.

    Raises:
        TypeError: the answer is not an Approval, a bool or None.
    """
    if answer is None or answer is True:
        return "allow", ""
    if answer is False:
        return "deny", ""
    if isinstance(answer, Approval):
        return answer.decision, answer.reason
    raise TypeError(f"an approver must return Approval, bool or None, got {type(answer).__name__}")
