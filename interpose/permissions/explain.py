"""What the rules and the guards make of one call, without running it (``interpose
explain``).

:func:`explain_call` reads the call into a :class:`.model.CallView` (every simple command
the shell model finds, the paths read and written, the domains), lists every permission
rule that matches it (whatever its decision), runs the pipeline's in-process
``tool.before`` guards and policies on a copy of the call -- the tool itself never runs,
and out-of-process hooks (process, command and Claude Code hooks, which run programs) are
only listed -- and states the decision the pipeline would reach, in its order: the first
``tool.before`` step that blocks (the rules' registration, at priority 110, runs before
the built-in guards and after a tool filter), else a built-in approver that asks (the
command guard's rules that ask a person: cloud destruction...), else an ask rule (the
approval path), else an allow.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..pipeline.payloads import Approval, ApprovalRequest, ToolBeforeInput, ToolBeforeOutput
from ..pipeline.pipeline import Pipeline
from ..pipeline.tools import normalize_tool_name
from .engine import Permissions
from .model import CallView, Decision, Judgement, Match
from .policy import PermissionPolicy
from .view import view_of

__all__ = ["Explanation", "GuardOutcome", "explain_call"]

Outcome = Literal["allow", "ask", "deny", "none"]


@dataclass(frozen=True, slots=True)
class GuardOutcome:
    """What one ``tool.before`` registration did with the call: ``blocked``,
    ``responded`` (answered without the tool), ``rewrote`` (changed the arguments),
    ``passed``, ``failed`` (``on_error`` then decides); or ``not run`` (an out-of-process
    hook).  A built-in approver of ``tool.approve`` (the command guard's) ``asks``,
    ``blocked`` or ``passed``.  ``mode`` is its own: a shadow registration is run and
    reported, never enforced."""

    id: str
    priority: int
    source: str
    mode: str
    on_error: str
    outcome: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class Explanation:
    """One call explained: the view, every rule that matched, the rules' judgement, each
    guard's outcome, and the decision with its reason."""

    view: CallView
    matches: tuple[Match, ...]
    judgement: Judgement
    enforced: bool  # the rules are registered in enforce mode
    guards: tuple[GuardOutcome, ...]
    decision: Outcome
    reason: str

    def to_json(self) -> dict[str, Any]:
        """The explanation as JSON-ready data (``interpose explain --json``)."""
        view = self.view
        return {
            "tool": view.tool,
            "args": dict(view.args),
            "commands": [
                {
                    "text": c.text,
                    "argv": None if c.argv is None else list(c.argv),
                    "wrappers": [list(layer) for layer in c.layers],
                }
                for c in view.commands
            ],
            "reads": list(view.reads),
            "writes": list(view.writes),
            "domains": list(view.domains),
            "unparsed": view.unparsed,
            "rules": [
                {
                    "decision": m.rule.decision,
                    "rule": m.rule.text,
                    "source": m.rule.source,
                    "subject": m.subject,
                    "justification": m.rule.justification,
                }
                for m in self.matches
            ],
            "permissions": {
                "decision": self.judgement.decision,
                "reason": self.judgement.reason,
                "enforced": self.enforced,
            },
            "guards": [
                {
                    "id": g.id,
                    "priority": g.priority,
                    "source": g.source,
                    "mode": g.mode,
                    "on_error": g.on_error,
                    "outcome": g.outcome,
                    "reason": g.reason,
                }
                for g in self.guards
            ],
            "decision": self.decision,
            "reason": self.reason,
        }


async def explain_call(
    pipe: Pipeline,
    permissions: Permissions | None,
    tool: str,
    args: Mapping[str, Any],
    *,
    cwd: str,
    home: str,
) -> Explanation:
    """Explain a call of ``tool`` with ``args`` in ``pipe`` (see the module docstring).
    ``permissions``: the rules to judge with (``Built.permissions``), registered in
    ``pipe`` or not; ``cwd``/``home`` anchor relative paths."""
    view = view_of(tool, args, cwd=cwd, home=home)
    rules = permissions.rules if permissions is not None else ()
    matches = tuple(
        Match(rule, subject)
        for rule in rules
        for subject in dict.fromkeys(rule.matcher.match(view, rule.decision))
    )
    judgement = (
        permissions.judge(view)
        if permissions is not None
        else Judgement(None, (), "no permission rules are configured")
    )
    steps = await _before(pipe, tool, args, judgement)
    enforced = any(s.id == _RULES and s.mode == "enforce" for s in steps)
    decision, reason = _decide(judgement, enforced, steps)
    guards = tuple(s for s in steps if s.id != _RULES)
    return Explanation(view, matches, judgement, enforced, guards, decision, reason)


_RULES = "\0permissions"  # the rules' own step, in the order of tool.before


async def _before(
    pipe: Pipeline, tool: str, args: Mapping[str, Any], judgement: Judgement
) -> list[GuardOutcome]:
    """Each ``tool.before`` registration in the pipeline's order: the in-process ones run
    on a copy of the call (the arguments one of them rewrites are the next one's), the
    rules' own registration stands for the judgement, the out-of-process ones are
    listed."""
    found: list[GuardOutcome] = []
    name = normalize_tool_name(tool)
    inp = ToolBeforeInput(tool_name=name, raw_name=tool)
    current = dict(args)
    for entry in pipe.registry.entries("tool.before", tool=tool):
        reg = entry.registration
        handler = reg.handler
        row = (reg.id, reg.priority, reg.source, str(reg.mode), str(entry.on_error))
        if isinstance(getattr(handler, "__self__", None), PermissionPolicy):
            blocked = judgement.decision == "deny"
            found.append(
                GuardOutcome(_RULES, *row[1:], "blocked" if blocked else "passed", judgement.reason)
            )
            continue
        if reg.source != "builtin":
            found.append(GuardOutcome(*row, "not run", "out of process or the application's"))
            continue
        out = ToolBeforeOutput(args=dict(current))
        try:
            value = handler(inp, out)
            if inspect.isawaitable(value):
                await value
        except Exception as exc:  # a guard that fails: its on_error decides in the pipeline
            found.append(GuardOutcome(*row, "failed", f"{type(exc).__name__}: {exc}"))
            continue
        if out.block:
            found.append(GuardOutcome(*row, "blocked", out.block_reason))
        elif out.result is not None:
            found.append(GuardOutcome(*row, "responded", "answered without running the tool"))
        elif out.args != current:
            found.append(GuardOutcome(*row, "rewrote", "changed the arguments"))
            if reg.mode == "enforce":
                current = dict(out.args)
        else:
            found.append(GuardOutcome(*row, "passed"))
    if any(s.outcome == "blocked" and s.mode == "enforce" for s in found):
        return found  # the call never reaches the approval step
    return found + _approvers(pipe, tool, ApprovalRequest(tool_name=name, args=current))


def _approvers(pipe: Pipeline, tool: str, request: ApprovalRequest) -> list[GuardOutcome]:
    """The built-in approvers of ``tool.approve`` (the command guard's, for a rule that
    asks), run on the arguments ``tool.before`` left: ``asks``, ``blocked`` (a deny) or
    ``passed``.  The rules' own approver is the judgement already shown."""
    found: list[GuardOutcome] = []
    for entry in pipe.registry.entries("tool.approve", tool=tool):
        reg = entry.registration
        if reg.source != "builtin" or isinstance(
            getattr(reg.handler, "__self__", None), PermissionPolicy
        ):
            continue
        row = (reg.id, reg.priority, reg.source, str(reg.mode), str(entry.on_error))
        try:
            answer = reg.handler(request)
        except Exception as exc:  # its on_error decides in the pipeline
            found.append(GuardOutcome(*row, "failed", f"{type(exc).__name__}: {exc}"))
            continue
        if isinstance(answer, Approval) and answer.decision == "ask":
            found.append(GuardOutcome(*row, "asks", answer.reason))
        elif answer is False or (isinstance(answer, Approval) and answer.decision == "deny"):
            reason = answer.reason if isinstance(answer, Approval) else ""
            found.append(GuardOutcome(*row, "blocked", reason))
        else:
            found.append(GuardOutcome(*row, "passed"))
    return found


def _decide(judgement: Judgement, enforced: bool, steps: list[GuardOutcome]) -> tuple[Outcome, str]:
    """The pipeline's order: the first enforced step of ``tool.before`` that blocks (a
    deny rule, a guard, one that fails closed), else an ask rule, an allow rule,
    nothing."""
    for step in steps:
        if step.mode != "enforce":
            continue
        closed = step.outcome == "failed" and step.on_error == "block"
        if step.outcome == "blocked" or closed:
            if step.id == _RULES:
                return "deny", step.reason
            return "deny", f"{step.id}: {step.reason}"
    for step in steps:  # a guard that asks: a person decides, whatever the rules allow
        if step.mode == "enforce" and step.outcome == "asks":
            return "ask", f"{step.id}: {step.reason}"
    rules: Decision | None = judgement.decision if enforced else None
    if rules in ("ask", "allow"):
        return rules, judgement.reason
    if judgement.decision is not None and not enforced:
        return "none", f"the rules would decide {judgement.decision} but are not enforced"
    return "none", f"{judgement.reason}; no guard objects: the call goes on"
