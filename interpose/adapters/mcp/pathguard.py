"""``McpPathGuard``: the security audit's path rules on the tools of MCP upstreams."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ...middleware.builtins import SecurityAudit
from ...pipeline.payloads import ToolBeforeInput, ToolBeforeOutput

__all__ = ["McpPathGuard"]


class McpPathGuard:
    """The security audit's path rules on MCP tools: every path-like argument
    (``path``, ``paths``, ``source``, ``destination``, ...) is checked with the write
    rules too.  A server's ``readOnlyHint`` is not trusted: it is the server's own word,
    and a server that lies about it must not make a writing tool's paths exempt."""

    KEYS = ("path", "file_path", "file", "source", "destination", "paths", "files")

    def __init__(self, audit: SecurityAudit) -> None:
        self._audit = audit

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.block:
            return
        for path in _paths(out.args, self.KEYS):
            reason = self._audit.check(path, write=True)
            if reason is not None:
                out.block = True
                out.block_reason = reason
                return


def _paths(args: dict[str, Any], keys: tuple[str, ...]) -> Iterator[str]:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            yield value
        elif isinstance(value, list):
            yield from (item for item in value if isinstance(item, str) and item)
