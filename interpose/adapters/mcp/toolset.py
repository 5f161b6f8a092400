"""``ToolSetGuard``: what the MCP gateway decides about a server's tool set.

Each listing of a server is judged against its pins (``pins.ToolPins``) and for
lookalike names: a changed, added, renamed or lookalike tool gets a decision (``warn``,
``hide``, ``ask``, ``block``, from ``[mcp]``), held until the next listing.  The guard's
``tool.before`` interceptor refuses calls of tools that are hidden or blocked (a client
that cached an earlier listing still calls them); its ``tool.approve`` interceptor asks
for those marked ``ask``.  Each finding is one ``tool_set_changed`` event.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import mcp_types as mt

from ...config.mcp import McpConfig
from ...flows import ToolInfo
from ...flows.policy import installed
from ...permissions.policy import PermissionPolicy
from ...pipeline.payloads import Approval, ApprovalRequest, ToolBeforeInput, ToolBeforeOutput
from ...pipeline.registry import Registry
from ...pipeline.tools import normalize_tool_name
from .pins import Change, ToolPin, ToolPins

__all__ = ["ToolSetGuard", "Verdict", "describe_tools", "permissions_deny"]


class Verdict(NamedTuple):
    decision: str  # warn, hide, ask, block
    reason: str


class ToolSetGuard:
    """The pins, the lookalike check and the decisions they lead to.

    Raises:
        ConfigError: the pin file exists and is not one (the message names it).
    """

    def __init__(self, config: McpConfig, pin_path: Path | None) -> None:
        pinning = config.pin_descriptions != "off" or config.pin_file is not None
        self.update = config.pin_mode == "update"
        self.pins = ToolPins(pin_path) if pinning or self.update else None
        self.on_change = config.pin_changed
        self.on_added = config.pin_added
        self.on_lookalike = config.pin_lookalikes
        self.verdicts: dict[str, Verdict] = {}  # by the listed name, mcp__<server>__<tool>
        self.asks: dict[str, str] = {}  # normalized name -> why each call asks
        self._reported: set[tuple[str, str, str, str | None]] = set()

    @property
    def may_ask(self) -> bool:
        """Whether a decision can be ``ask`` (then the ``tool.approve`` step is needed)."""
        pinned = (self.on_change, self.on_added) if self.pins is not None else ()
        return "ask" in (*pinned, self.on_lookalike)

    def hidden(self, name: str) -> bool:
        """Whether ``name`` is left out of ``tools/list``."""
        verdict = self.verdicts.get(name)
        return verdict is not None and verdict.decision == "hide"

    def judge(
        self,
        namespace: str,
        tools: list[tuple[str, mt.Tool]],
        denied: Callable[[str], bool],
    ) -> list[dict[str, Any]]:
        """Judge one listing of the server of ``namespace`` (``tools``: by their
        ``mcp__<server>__<tool>`` names); the fields of the events it leads to (what
        an earlier listing found already is not reported again).
        ``denied``: whether a deny rule (the tool filter, a permission rule) names a
        tool whatever its arguments."""
        for name in [n for n in self.verdicts if n.startswith(namespace)]:
            self.asks.pop(normalize_tool_name(name), None)
            del self.verdicts[name]
        found: list[dict[str, Any]] = []
        if self.pins is not None:
            listed = {name: ToolPin.of(tool) for name, tool in tools}
            changes = self.pins.compare(namespace, listed)
            if self.update and changes:
                self.pins.accept(namespace, listed)
            found += [self._pinned(change) for change in changes]
        found += self._lookalikes([name for name, _ in tools], denied)
        # each finding is reported once, not at every listing that finds it again
        fresh = []
        for fields in found:
            key = (
                fields["tool_name"],
                fields["change"],
                fields["detail"],
                fields.get("new_digest"),
            )
            if key not in self._reported:
                self._reported.add(key)
                fresh.append(fields)
        return fresh

    def _pinned(self, change: Change) -> dict[str, Any]:
        decision: str
        if change.kind == "changed":
            reason = f"tool {change.tool} changed since it was pinned: {change.detail}"
            decision = self.on_change
        elif change.kind == "removed":
            reason = f"tool {change.tool} was removed since the tool set was pinned"
            decision = "warn"
        else:
            reason = f"tool {change.tool} is new since the tool set was pinned ({change.detail})"
            decision = self.on_added
        if self.update:
            decision = "update"
        elif change.kind != "removed":
            self._decide(change.tool, Verdict(decision, reason))
        return {
            "tool_name": change.tool,
            "change": change.kind,
            "detail": change.detail,
            "decision": decision,
            "reason": reason,
            "old_digest": change.old,
            "new_digest": change.new,
        }

    def _lookalikes(self, names: list[str], denied: Callable[[str], bool]) -> list[dict[str, Any]]:
        """Names whose lookalike characters fold them onto another listed name or onto
        a name a deny rule names."""
        folded: dict[str, list[str]] = {}
        for name in names:
            folded.setdefault(normalize_tool_name(name), []).append(name)
        found = []
        for name in names:
            canonical = normalize_tool_name(name)
            if canonical == name.strip().lower():
                continue  # nothing was folded
            twins = [other for other in folded[canonical] if other != name]
            if not twins and not denied(name):
                continue
            like = twins[0] if twins else canonical
            reason = f"tool {name!a} looks like {like!r}: lookalike characters in its name" + (
                "" if twins else " (a name a deny rule names)"
            )
            self._decide(name, Verdict(self.on_lookalike, reason))
            found.append(
                {
                    "tool_name": name,
                    "change": "lookalike",
                    "detail": f"folds to {canonical}",
                    "decision": self.on_lookalike,
                    "reason": reason,
                }
            )
        return found

    def _decide(self, name: str, verdict: Verdict) -> None:
        known = self.verdicts.get(name)
        if known is not None and _RANK[known.decision] >= _RANK[verdict.decision]:
            return  # the stronger decision stands
        self.verdicts[name] = verdict
        if verdict.decision == "ask":
            self.asks[normalize_tool_name(name)] = verdict.reason

    # -- the interceptors ---------------------------------------------------------------

    def before(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        """``tool.before``: refuse a hidden or blocked tool, naming why."""
        verdict = self.verdicts.get(inp.raw_name)
        if verdict is not None and verdict.decision in ("hide", "block"):
            out.block = True
            out.block_reason = verdict.reason

    def approve(self, request: ApprovalRequest) -> Approval | None:
        """``tool.approve``: ask for a tool marked ``ask``."""
        reason = self.asks.get(request.tool_name)
        return Approval.ask(reason) if reason is not None else None


_RANK = {"warn": 0, "ask": 1, "hide": 2, "block": 3}


def permissions_deny(registry: Registry, name: str) -> bool:
    """Whether a permission rule denies every call of ``name`` (``mcp__git__git_push``
    in ``[permissions] deny``), whatever its arguments."""
    for reg in registry.get("tool.before", tool=name):
        policy = getattr(reg.handler, "__self__", None)
        denied = isinstance(policy, PermissionPolicy) and (
            policy.judge(normalize_tool_name(name), {}).decision == "deny"
        )
        if denied:
            return True
    return False


def describe_tools(registry: Registry, server: str, tools: list[tuple[str, mt.Tool]]) -> None:
    """Tell the flow policies in ``registry`` what each listed tool of ``server`` says
    about itself (description, input schema, annotations), by its interpose name."""
    policies = installed(registry)
    if not policies:
        return
    infos = [
        ToolInfo(
            name=name,
            description=tool.description or "",
            input_schema=tool.input_schema or {},
            annotations=None
            if tool.annotations is None
            else tool.annotations.model_dump(by_alias=True, exclude_none=True),
            server=server,
        )
        for name, tool in tools
    ]
    for policy in policies:
        policy.describe(*infos)
