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

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..middleware.builtins.command_safety import share_analyses
from ..pipeline.hooks import Mode
from ..pipeline.payloads import Approval, ApprovalRequest, ToolBeforeInput, ToolBeforeOutput
from ..pipeline.registry import Interceptor, Registry
from .engine import Permissions
from .model import Judgement
from .view import view_of

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline

__all__ = ["PERMISSIONS_PRIORITY", "PermissionPolicy"]

PERMISSIONS_PRIORITY = 110
"""Before the built-in guards (100): a user's deny names the user's rule."""


class PermissionPolicy:
    """The rules of ``permissions`` as a ``tool.before`` interceptor and an approver.

    ``cwd`` and ``home`` anchor the relative paths of a call (a shell command's
    ``cat .env``, a file tool's ``src/x.py``); by default the process's working
    directory and ``$HOME`` at the time of the call (a call's own ``cwd`` argument
    wins).
    """

    __slots__ = ("_cwd", "_home", "id", "mode", "permissions", "priority")

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
        self._home = home
        share_analyses()  # the guard leaves what it parses for view_of, from the first call

    def judge(self, tool: str, args: Mapping[str, Any]) -> Judgement:
        """The rules' judgement of one call."""
        cwd = self._cwd or os.getcwd()
        home = self._home or os.path.expanduser("~")
        return self.permissions.judge(view_of(tool, args, cwd=cwd, home=home))

    def before(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        """``tool.before``: block what a deny rule matches."""
        if out.block:
            return
        judgement = self.judge(inp.tool_name, out.args)
        if judgement.decision == "deny":
            out.block = True
            out.block_reason = f"permissions: {judgement.reason}"

    def approve(self, request: ApprovalRequest) -> Approval | None:
        """``tool.approve``: an ask rule asks the human-approval handler; a deny (of
        arguments rewritten since ``tool.before``) denies."""
        judgement = self.judge(request.tool_name, request.args)
        if judgement.decision == "ask":
            return Approval.ask(f"permissions: {judgement.reason}")
        if judgement.decision == "deny" and self.mode == "enforce":  # shadow: recorded once
            return Approval.deny(f"permissions: {judgement.reason}")
        return None

    def interceptors(self) -> list[Interceptor]:
        """The registrations, ready for ``Registry.add``: the approver only when there
        are ask rules (an approver puts every call through the approval step)."""
        regs = [self._registration("tool.before", self.id, self.before)]
        if any(rule.decision == "ask" for rule in self.permissions.rules):
            regs.append(self._registration("tool.approve", self.id + ".ask", self.approve))
        return regs

    def install(self, target: Pipeline | Registry) -> list[Interceptor]:
        """Add both registrations to ``target`` (a ``Pipeline`` or a ``Registry``); all
        or nothing.

        Raises:
            RegistrationError: a registration was rejected (an id already taken).
        """
        registry = target if isinstance(target, Registry) else target.registry
        added: list[Interceptor] = []
        try:
            for reg in self.interceptors():
                registry.add(reg)
                added.append(reg)
        except BaseException:
            for reg in reversed(added):
                registry.remove(reg.id)
            raise
        return added

    def _registration(self, hook: str, id: str, handler: Callable[..., Any]) -> Interceptor:
        return Interceptor(
            id=id,
            hook=hook,
            handler=handler,
            priority=self.priority,
            on_error="block",
            source="builtin",
            mode=self.mode,
        )
