"""Permission rules in a pipeline: a deny blocks in ``tool.before``; an ask goes through
the approval path (``tool.approve``).

:class:`PermissionPolicy` registers two handlers built from one :class:`.engine.Permissions`:

- ``permissions`` on ``tool.before``: a call a deny rule matches is blocked, the reason
  naming the rule, its source and the command or path it matched;
- ``permissions.ask`` on ``tool.approve``, when there are ask rules: the call is judged
  again on its final arguments (interceptors of lower priority may have rewritten them);
  an ask rule answers ``Approval.ask(reason)``, so the pipeline's human-approval handler
  decides (an MCP elicitation under ``interpose mcp-proxy``, LangGraph's interrupt under
  the LangChain adapter; none set means deny); a deny answers ``Approval.deny``.  Without
  ask rules there is no approver (it would cost every call the approval step), so
  arguments rewritten after ``tool.before``'s priority (110) are judged by the guards
  only.

An allow (or no rule) lets the call go on: the built-in guards (the command guard, the
security audit) and every other interceptor still judge it.  A rule allows what the
user's policy allows, it never overrides a guard.  With ``mode="shadow"`` both handlers
only record what they would have decided (a ``shadow_decision`` event).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import Any

from ..middleware.builtins.command_safety import share_analyses
from ..middleware.builtins.policies._base import Policy
from ..pipeline.hooks import Mode
from ..pipeline.payloads import Approval, ApprovalRequest, ToolBeforeInput, ToolBeforeOutput
from ..pipeline.registry import Interceptor
from .engine import Permissions
from .model import Judgement
from .view import view_of

__all__ = ["PERMISSIONS_PRIORITY", "PermissionPolicy"]

PERMISSIONS_PRIORITY = 110
"""Before the built-in guards (100): a user's deny names the user's rule."""


class PermissionPolicy(Policy):
    """The rules of ``permissions`` as a ``tool.before`` interceptor and an approver.

    ``cwd`` and ``home`` anchor the relative paths of a call (a shell command's
    ``cat .env``, a file tool's ``src/x.py``); by default the process's working
    directory at the time of the call (a call's own ``cwd`` argument wins) and ``$HOME``
    when the policy is made.
    """

    __slots__ = ("_asks", "_cwd", "_home", "_last", "id", "mode", "permissions", "priority")

    def __init__(
        self,
        permissions: Permissions,
        *,
        id: str = "permissions",
        priority: int = PERMISSIONS_PRIORITY,
        mode: Mode = "enforce",
        cwd: str | None = None,
        home: str | None = None,
    ) -> None:
        self.permissions = permissions
        self.id = id
        self.priority = priority
        self.mode = mode
        self._cwd = cwd
        self._home = home or os.path.expanduser("~")  # read once: 0.9 us a call otherwise
        self._asks = any(rule.decision == "ask" for rule in permissions.rules)
        # (call id, tool, args as judged, judgement) of the last tool.before, which the
        # approver takes when its call comes with the same arguments
        self._last: tuple[str, str, dict[str, Any], Judgement] | None = None
        share_analyses()  # the guard leaves what it parses for view_of, from the first call

    def judge(self, tool: str, args: Mapping[str, Any]) -> Judgement:
        """The rules' judgement of one call."""
        # cwd None: the process's, read only for a relative path (most calls have none)
        return self.permissions.judge(view_of(tool, args, cwd=self._cwd, home=self._home))

    def before(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        """``tool.before``: block what a deny rule matches."""
        if out.block:
            return
        judgement = self.judge(inp.tool_name, out.args)
        if self._asks:
            self._last = (inp.tool_call_id, inp.tool_name, _snapshot(out.args), judgement)
        if judgement.decision == "deny":
            out.block = True
            out.block_reason = f"permissions: {judgement.reason}"

    def approve(self, request: ApprovalRequest) -> Approval | None:
        """``tool.approve``: an ask rule asks the human-approval handler; a deny (of
        arguments rewritten since ``tool.before``) denies."""
        last = self._last
        if (
            last is not None
            and last[0] == request.tool_call_id
            and last[1] == request.tool_name
            and last[2] == request.args
        ):
            judgement = last[3]  # judged in tool.before, on the same arguments
        else:
            judgement = self.judge(request.tool_name, request.args)
        if judgement.decision == "ask":
            return Approval.ask(f"permissions: {judgement.reason}", rule=_asking(judgement))
        if judgement.decision == "deny" and self.mode == "enforce":  # shadow: recorded once
            return Approval.deny(f"permissions: {judgement.reason}")
        return None

    def interceptors(self) -> list[Interceptor]:
        """The registrations, ready for ``Registry.add``: the approver only when there
        are ask rules (an approver puts every call through the approval step)."""
        regs = [self._registration("tool.before", "block", handler=self.before, mode=self.mode)]
        if self._asks:
            regs.append(
                self._registration(
                    "tool.approve", "block", handler=self.approve, suffix=".ask", mode=self.mode
                )
            )
        return regs


_PLAIN = (str, int, float, bool, type(None))


def _asking(judgement: Judgement) -> str:
    """The rules that asked, as written (``Bash(git push:*)``; several joined by `` + ``):
    what a standing grant made from the ask is bound to."""
    texts = dict.fromkeys(m.rule.text for m in judgement.matches if m.rule.decision == "ask")
    return " + ".join(texts)


def _snapshot(args: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``args`` that later changes to them, in place or not, do not reach (the
    values of a shell call are strings: a shallow copy; anything else is copied deep)."""
    for value in args.values():
        if type(value) not in _PLAIN:
            return {k: v if type(v) in _PLAIN else copy.deepcopy(v) for k, v in args.items()}
    return dict(args)
