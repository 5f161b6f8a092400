"""The ``if`` field of Claude Code hooks: one permission rule scoping when a hook runs.

A hook with ``"if": "Bash(git commit *)"`` runs only for the calls that rule matches:
for a command line, when one of its simple commands does (as the shell model finds them,
wrappers and substitutions included).  It fails open, as Claude Code's does: a line the
model cannot read, or one with a word known only at run time (``$CMD``, ``git $SUB``,
an unknown ``$(...)``), runs the hook.  Claude Code evaluates ``if`` on tool events
only; on any other event a hook with ``if`` never runs (:data:`TOOL_EVENTS`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..external.command.tool_mapping import ToolMapping
from .claude import parse_claude_rule
from .model import Rule
from .view import view_of

__all__ = ["TOOL_EVENTS", "hook_condition"]

TOOL_EVENTS = frozenset({"PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest"})
"""The events whose hooks' ``if`` is evaluated."""


def hook_condition(
    text: str, mapping: ToolMapping, *, source: str, base: Path
) -> Callable[[Mapping[str, Any]], bool]:
    """Whether a hook with ``"if": text`` runs for a Claude Code tool event (the JSON
    the hook is sent: ``tool_name``, ``tool_input``, ``cwd``).  ``base`` anchors
    ``/path`` patterns (the project directory).

    Raises:
        ConfigError: ``text`` is not a permission rule.
    """
    rule = parse_claude_rule(text, "ask", source=source, base=base, cwd=base)
    return lambda event: _runs(rule, mapping, event)


def _runs(rule: Rule, mapping: ToolMapping, event: Mapping[str, Any]) -> bool:
    claude_name = event.get("tool_name")
    tool_input = event.get("tool_input")
    if not isinstance(claude_name, str) or not isinstance(tool_input, Mapping):
        return True  # nothing to judge: open
    tool, args = mapping.to_interpose(claude_name, tool_input)
    cwd = event.get("cwd")
    view = view_of(
        tool,
        args,
        cwd=cwd if isinstance(cwd, str) and cwd else os.getcwd(),
        home=os.path.expanduser("~"),
    )
    if view.unparsed or any(c.argv is None or "$" in c.text for c in view.commands):
        return True  # what runs is known only at run time: open, as in Claude Code
    return bool(rule.matcher.match(view, "ask"))
