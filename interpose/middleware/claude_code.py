"""Claude Code compatibility (its tool names and fields, its ``.claude/settings.json``);
the code lives in ``interpose.external.command`` now (``tool_mapping``,
``claude_settings``, ``claude_runner``, ``http``; this path keeps working)."""

from __future__ import annotations

from ..external.command.claude_runner import MAX_STOP_CONTINUES
from ..external.command.claude_settings import (
    CLAUDE_EVENTS,
    SUPPORTED_EVENTS,
    ClaudeSettings,
    compile_matcher,
    is_claude_settings,
)
from ..external.command.http import HttpHookError
from ..external.command.tool_mapping import (
    ClaudeTool,
    ResponseBuilder,
    ToolMapping,
    default_tool_mapping,
    tool_event,
)

__all__ = [
    "CLAUDE_EVENTS",
    "MAX_STOP_CONTINUES",
    "SUPPORTED_EVENTS",
    "ClaudeSettings",
    "ClaudeTool",
    "HttpHookError",
    "ResponseBuilder",
    "ToolMapping",
    "compile_matcher",
    "default_tool_mapping",
    "is_claude_settings",
    "tool_event",
]
