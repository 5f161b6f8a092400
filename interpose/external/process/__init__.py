"""Process hooks: a long-lived child process that answers hook calls over JSON-RPC 2.0
(one JSON object per line on its stdin/stdout), compatible with PicoClaw's process hooks.

By mechanism: ``wire`` (the JSON-RPC structs of both dialects, the errors and
counters), ``child`` (spawn, supervise, restart with backoff, the process group),
``rpc`` (the JSON-RPC client: requests multiplexed by id, timeouts), ``hook`` (the
``ProcessHook`` interceptor: what it registers and how replies map onto decisions) and
``picoclaw`` (PicoClaw's event names and config forms).  The protocol reference is
docs/process-hooks.md.
"""

from __future__ import annotations

from .child import INHERITED_ENV
from .hook import ProcessHook
from .wire import (
    INTERCEPT_POINTS,
    PROTOCOL_VERSION,
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
