"""Command hooks: a command per tool event, compatible with Claude Code hook scripts.

By mechanism: ``runner`` (``CommandHook``: run the command with the event on stdin,
read its exit code and stdout), ``verdict`` (what a command may print), ``filter`` (its
allow/deny lists as one tool matcher), ``tool_mapping`` (Claude Code's tool names and
fields <-> interpose's), ``claude_settings`` (the hooks of a ``.claude/settings.json``),
``claude_runner`` (running them for one pipeline) and ``http`` (their ``"http"`` hooks).
"""

from __future__ import annotations

from .claude_settings import (
    CLAUDE_EVENTS,
    SUPPORTED_EVENTS,
    ClaudeSettings,
    compile_matcher,
    is_claude_settings,
)
from .http import HttpHookError
from .runner import (
    CLAUDE_EVENT_NAMES,
    DEFAULT_MAX_OUTPUT_BYTES,
    PASSED_ENV_VARS,
    CommandHook,
    CommandHookError,
)
from .tool_mapping import ClaudeTool, ResponseBuilder, ToolMapping, default_tool_mapping, tool_event

__all__ = [
    "CLAUDE_EVENTS",
    "CLAUDE_EVENT_NAMES",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "PASSED_ENV_VARS",
    "SUPPORTED_EVENTS",
    "ClaudeSettings",
    "ClaudeTool",
    "CommandHook",
    "CommandHookError",
    "HttpHookError",
    "ResponseBuilder",
    "ToolMapping",
    "compile_matcher",
    "default_tool_mapping",
    "is_claude_settings",
    "tool_event",
]
