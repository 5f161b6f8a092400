"""``builtin:tool-filter``: allow or deny tools by name, group or regex (:class:`ToolFilter`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import ClassVar, TypeAlias

from ....errors import ConfigError
from ....pipeline.payloads import ToolBeforeInput, ToolBeforeOutput
from ....pipeline.registry import Interceptor
from ....pipeline.tools import TOOL_ALIASES, TOOL_GROUPS, normalize_tool_name
from ._base import Policy
from ._helpers import check_id, check_priority

__all__ = ["TOOL_FILTER_ID", "ToolFilter", "ToolRule"]

TOOL_FILTER_ID = "builtin:tool-filter"

ToolRule: TypeAlias = "str | re.Pattern[str]"
"""A tool filter rule: a tool name (``"exec"``, aliases allowed: ``"bash"``), a group
(``"group:web"``) or a compiled regex (``re.compile(r"^mcp_")``, searched in the normalized
name and its aliases)."""

_NAME = re.compile(r"[\w.\-]+")

_ALIASES_OF: dict[str, tuple[str, ...]] = {}
for _alias, _canonical in TOOL_ALIASES.items():
    _ALIASES_OF[_canonical] = (*_ALIASES_OF.get(_canonical, ()), _alias)


def _compile_rule(rule: object, where: str) -> tuple[str, Callable[[str], bool]]:
    """(label for reasons, predicate over a normalized tool name)."""
    if isinstance(rule, re.Pattern):
        search = rule.search

        def matches(tool: str) -> bool:
            return search(tool) is not None or any(
                search(alias) is not None for alias in _ALIASES_OF.get(tool, ())
            )

        return f"/{rule.pattern}/", matches
    if not isinstance(rule, str):
        raise ConfigError(
            f"{where}: a rule is a tool name, a 'group:*' name or a compiled regex, "
            f"got {type(rule).__name__}"
        )
    if rule.startswith("group:"):
        members = TOOL_GROUPS.get(rule)
        if members is None:
            raise ConfigError(
                f"{where}: unknown tool group {rule!r}; groups: {', '.join(sorted(TOOL_GROUPS))}"
            )
        return rule, members.__contains__
    name = normalize_tool_name(rule)
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"{where}: {rule!r} is not a tool name; for a regex pass re.compile({rule!r})"
        )
    return rule, name.__eq__


class ToolFilter(Policy):
    """``builtin:tool-filter``: allow or deny tools by name, group or regex.

    Args:
        allow: rules (see :data:`ToolRule`); when given, every tool no rule matches is
            blocked.  ``None`` (the default) means no allow list; an empty list is
            refused, since it would block every tool.
        deny: rules; a tool one of them matches is blocked, whatever ``allow`` says.
        priority: default 120, ahead of the built-in guards.
        id: the registration id.

    Block reasons: ``tool filter: exec is denied by 'group:runtime'`` and
    ``tool filter: web_fetch is not on the allow list (read, group:memory)``.

    Raises:
        ConfigError: neither list given, an empty allow list, an unknown group, a rule
            that is neither a name nor a compiled regex (a string such as ``"^web_"`` is
            refused rather than silently matched as a name), a bad priority or id.
    """

    ID: ClassVar[str] = TOOL_FILTER_ID
    PRIORITY: ClassVar[int] = 120
    _MEMO_LIMIT: ClassVar[int] = 1024

    __slots__ = ("_allow", "_allow_label", "_deny", "_memo", "id", "priority")

    def __init__(
        self,
        *,
        allow: Iterable[ToolRule] | None = None,
        deny: Iterable[ToolRule] = (),
        priority: int = PRIORITY,
        id: str = ID,
    ) -> None:
        if isinstance(allow, str | re.Pattern) or isinstance(deny, str | re.Pattern):
            raise ConfigError("tool filter: allow and deny are lists of rules, not one rule")
        self._deny = tuple(_compile_rule(r, "tool filter deny") for r in deny)
        if allow is None:
            self._allow: tuple[tuple[str, Callable[[str], bool]], ...] | None = None
        else:
            self._allow = tuple(_compile_rule(r, "tool filter allow") for r in allow)
            if not self._allow:
                raise ConfigError(
                    "tool filter: an empty allow list would block every tool; "
                    "pass allow=None for no allow list"
                )
        if self._allow is None and not self._deny:
            raise ConfigError("tool filter: give an allow list, a deny list, or both")
        self._allow_label = ", ".join(label for label, _ in self._allow or ())
        # the decision depends on the tool name only: remember it per name
        self._memo: dict[str, str | None] = {}
        self.priority = check_priority(priority)
        self.id = check_id(id)

    def __repr__(self) -> str:
        allow = None if self._allow is None else [label for label, _ in self._allow]
        return f"ToolFilter(allow={allow!r}, deny={[label for label, _ in self._deny]!r})"

    def check(self, tool: str) -> str | None:
        """The block reason for ``tool`` (any spelling), or None when it may run."""
        name = normalize_tool_name(tool)
        try:
            return self._memo[name]
        except KeyError:
            pass
        reason = self._judge(name)
        if len(self._memo) < self._MEMO_LIMIT:
            self._memo[name] = reason
        return reason

    def _judge(self, name: str) -> str | None:
        for label, matches in self._deny:
            if matches(name):
                return f"tool filter: {name} is denied by {label!r}"
        if self._allow is not None and not any(matches(name) for _, matches in self._allow):
            return f"tool filter: {name} is not on the allow list ({self._allow_label})"
        return None

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.block:
            return
        try:
            reason = self._memo[inp.tool_name]
        except KeyError:
            reason = self.check(inp.tool_name)
        if reason is not None:
            out.block = True
            out.block_reason = reason

    def interceptors(self) -> list[Interceptor]:
        return [self._registration("tool.before", "block", None)]
