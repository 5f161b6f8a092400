"""Command hooks; the code lives in ``interpose.external.command`` now (``runner``; this
path keeps working)."""

from __future__ import annotations

from ..external.command.runner import (
    CLAUDE_EVENT_NAMES,
    DEFAULT_MAX_OUTPUT_BYTES,
    PASSED_ENV_VARS,
    CommandHook,
    CommandHookError,
)

__all__ = [
    "CLAUDE_EVENT_NAMES",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "PASSED_ENV_VARS",
    "CommandHook",
    "CommandHookError",
]
