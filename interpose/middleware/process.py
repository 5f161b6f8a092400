"""Process hooks; the code lives in ``interpose.external.process`` now (this path keeps
working)."""

from __future__ import annotations

from ..external.process import (
    INHERITED_ENV,
    INTERCEPT_POINTS,
    PROTOCOL_VERSION,
    ProcessHook,
    ProcessHookError,
    ProcessHookStats,
    ProcessHookTimeout,
)

__all__ = [
    "INHERITED_ENV",
    "INTERCEPT_POINTS",
    "PROTOCOL_VERSION",
    "ProcessHook",
    "ProcessHookError",
    "ProcessHookStats",
    "ProcessHookTimeout",
]
