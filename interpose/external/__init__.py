"""Handlers in another process: process hooks and command hooks.

- ``process/``: a long-lived child answering JSON-RPC 2.0 over its stdin/stdout
  (PicoClaw-compatible): ``wire`` (the structs), ``child`` (spawn, supervise, restart
  with backoff), ``rpc`` (requests multiplexed by id, timeouts), ``hook`` (the
  ``ProcessHook`` interceptor), ``picoclaw`` (PicoClaw's names and config forms).
- ``command/``: a command per event, Claude Code style: ``runner`` (the
  ``CommandHook``: run it, read its exit code and stdout), ``claude_settings``
  (``.claude/settings.json`` hooks), ``tool_mapping`` (Claude's tool names and fields),
  ``http`` (the settings file's ``"http"`` hooks).
- ``_process_group``: what both need to know about a child and its process group.

The stdio JSON-lines transport they share with the MCP gateway is ``interpose._jsonlines``.
This package imports from ``pipeline/``, ``bus/``, ``errors`` and leaf modules only.
"""

from __future__ import annotations

from .process import (
    INTERCEPT_POINTS,
    PROTOCOL_VERSION,
    ProcessHook,
    ProcessHookError,
    ProcessHookStats,
    ProcessHookTimeout,
)

__all__ = [
    "INTERCEPT_POINTS",
    "PROTOCOL_VERSION",
    "ProcessHook",
    "ProcessHookError",
    "ProcessHookStats",
    "ProcessHookTimeout",
]
