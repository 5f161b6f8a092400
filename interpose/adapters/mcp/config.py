"""The ``[mcp]`` table of the config file: the upstream servers of ``interpose mcp-proxy``.

Kept apart from the proxy (and free of the ``mcp`` SDK) so that ``interpose.config`` can
decode and check it without the ``mcp`` extra installed.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec

__all__ = ["McpConfig", "McpServerConfig", "mcp_namespace", "server_key"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def server_key(name: str) -> str:
    """The server part of ``mcp__<server>__<tool>``: Claude Code's spelling (characters
    outside ``A-Za-z0-9_-`` become ``_``)."""
    return _UNSAFE.sub("_", name)


def mcp_namespace(name: str) -> str:
    """The tool namespace of a server, ``mcp__<server>__``."""
    return f"mcp__{server_key(name)}__"


class McpServerConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``[mcp.servers.<name>]``: one upstream MCP server, a command (stdio) or a URL."""

    command: Annotated[
        str | None, msgspec.Meta(description="the server's executable (stdio); or set `url`")
    ] = None
    args: Annotated[list[str], msgspec.Meta(description="its arguments")] = []
    env: Annotated[
        dict[str, str],
        msgspec.Meta(
            description="environment variables it gets (besides HOME, PATH, SHELL, TERM, "
            "USER, LOGNAME): nothing else of the proxy's environment is passed on"
        ),
    ] = {}
    cwd: Annotated[
        str | None,
        msgspec.Meta(description="its working directory; relative: to the config file's"),
    ] = None
    url: Annotated[
        str | None,
        msgspec.Meta(description="a streamable-HTTP server's URL (`http://host:port/mcp`)"),
    ] = None
    headers: Annotated[
        dict[str, str], msgspec.Meta(description="HTTP headers sent to a `url` server")
    ] = {}


class McpConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``[mcp]``: the MCP gateway (``interpose mcp-proxy``)."""

    # the upstream servers; with more than one, each tool is exposed as `<name>__<tool>`
    servers: dict[str, McpServerConfig] = {}
    hide_denied: Annotated[
        bool,
        msgspec.Meta(description="leave tools that the tool filter blocks out of `tools/list`"),
    ] = True
    path_guard: Annotated[
        bool,
        msgspec.Meta(
            description="run the security audit's path rules on MCP tools that take a "
            "path (`path`, `paths`, `source`, `destination`, ...)"
        ),
    ] = True
    pin_descriptions: Annotated[
        Literal["off", "warn", "hide"],
        msgspec.Meta(
            description="trust on first use of tool descriptions: `warn` reports a changed "
            "description as an `interceptor_failed` event, `hide` also hides the tool"
        ),
    ] = "off"
    pin_file: Annotated[
        str | None,
        msgspec.Meta(
            description="where pinned descriptions are kept (JSON); relative: to the "
            "config file's directory; unset: in memory, for the proxy's lifetime"
        ),
    ] = None
    call_timeout_ms: Annotated[
        int,
        msgspec.Meta(description="how long one upstream tool call may take; 0: no limit", ge=0),
    ] = 0
    connect_timeout_ms: Annotated[
        int,
        msgspec.Meta(
            description="how long an upstream may take to answer the handshake and the "
            "first tools/list (at start and at each restart); a call waits as long for a "
            "restarting upstream",
            ge=1,
        ),
    ] = 30000
    max_message_bytes: Annotated[
        int,
        msgspec.Meta(
            description="the largest JSON-RPC message (one line on stdio) the proxy reads "
            "from the client or a stdio upstream, in bytes; a larger one is answered with "
            "an error that says the limit (`--max-message-bytes` overrides it)",
            ge=1024,
        ),
    ] = 16 << 20
