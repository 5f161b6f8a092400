"""The ``[mcp]`` table of the config file: the upstream servers of ``interpose mcp-proxy``.

Kept apart from the proxy (and free of the ``mcp`` SDK) so that ``interpose.config`` can
decode and check it without the ``mcp`` extra installed; in the config layer, so that
the config imports nothing from the adapters (``interpose.adapters.mcp.config``
re-exports it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Literal

import msgspec

__all__ = [
    "McpAuthConfig",
    "McpConfig",
    "McpServerConfig",
    "check_servers",
    "describe_server",
    "mcp_namespace",
    "server_key",
]

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


class McpAuthConfig(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """``[mcp.auth]``: bearer tokens (JWTs) required on every HTTP request of
    ``interpose mcp-proxy --listen`` (else 401); a token's claims are the principal of
    the calls it makes (docs/mcp.md)."""

    jwks: Annotated[
        str,
        msgspec.Meta(
            description="the JSON Web Key Set that signs the tokens: a file (relative: to "
            "the config file's directory) or an `https://` URL"
        ),
    ]
    issuer: Annotated[
        str | None, msgspec.Meta(description="the `iss` a token must have; unset: any")
    ] = None
    audience: Annotated[
        list[str],
        msgspec.Meta(description="a token's `aud` must name one of these; empty: no `aud` check"),
    ] = []
    leeway_s: Annotated[
        float, msgspec.Meta(description="clock skew allowed on `exp` and `nbf`", ge=0)
    ] = 30.0


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
        Literal["off", "warn", "hide", "ask", "block"],
        msgspec.Meta(
            description="pin the tool set (trust on first use): what a pinned tool whose "
            "description, input schema or annotations changed gets; `warn`: an event only, "
            "`hide`: left out of `tools/list` and refused when called, `ask`: each call "
            "asks the user, `block`: listed but refused when called; `off`: no pinning "
            "(unless `pin_file` is set: then `hide`)"
        ),
    ] = "off"
    pin_added: Annotated[
        Literal["warn", "hide", "ask", "block"],
        msgspec.Meta(
            description="what a tool that appears after the tool set was pinned gets "
            "(added or renamed), as `pin_descriptions`"
        ),
    ] = "ask"
    pin_lookalikes: Annotated[
        Literal["warn", "hide", "ask", "block"],
        msgspec.Meta(
            description="what a tool gets whose name folds (NFKC, lookalike letters, "
            "zero-width characters) onto another tool's name or onto a name a deny rule "
            "names (the tool filter, a permission rule); checked with or without pinning"
        ),
    ] = "block"
    pin_mode: Annotated[
        Literal["check", "update"],
        msgspec.Meta(
            description="`check`: changes against the pins are decided; `update`: the "
            "tool set as listed now is accepted and written to `pin_file` "
            "(`interpose mcp-proxy --update-pins`)"
        ),
    ] = "check"
    pin_file: Annotated[
        str | None,
        msgspec.Meta(
            description="where the pinned tool set is kept (reviewable JSON, one entry "
            "per tool); relative: to the config file's directory; unset: in memory, for "
            "the proxy's lifetime"
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
    # bearer tokens (JWT) required on every HTTP request (`--listen`); their claims are
    # the calls' principal (a table of its own: its struct is documented)
    auth: McpAuthConfig | None = None

    @property
    def pin_changed(self) -> Literal["warn", "hide", "ask", "block"]:
        """What a pinned tool whose description, input schema or annotations changed
        gets: ``pin_descriptions``, or ``hide`` when that is ``off`` (a pin file pins)."""
        return "hide" if self.pin_descriptions == "off" else self.pin_descriptions


def _field(name: str) -> str:
    """``mcp.servers.<name>``, the name quoted when it is not a bare TOML key."""
    return f"mcp.servers.{name if not _UNSAFE.search(name) else json.dumps(name)}"


def _resolve(table: McpServerConfig, base_dir: Path) -> str:
    """The executable of a stdio server, found as the proxy will start it: a name without
    a slash on the ``PATH`` it gets (its ``env``'s, else the proxy's), a path relative to
    its working directory (``cwd``, else the directory the proxy runs in).

    Raises:
        ValueError: it does not resolve (the message says why).
    """
    assert table.command is not None
    program = table.command
    if os.sep in program or (os.altsep is not None and os.altsep in program):
        where = base_dir / table.cwd if table.cwd is not None else Path.cwd()
        path = Path(os.path.normpath(where / program))
        if not path.is_file():
            raise ValueError(f"{path} does not exist")
        if not os.access(path, os.X_OK):
            raise ValueError(f"{path} is not executable")
        return str(path)
    search = table.env.get("PATH") or os.environ.get("PATH") or os.defpath
    found = shutil.which(program, path=search)
    if found is None:
        raise ValueError(f"{program!r} not found on PATH ({search})")
    return found


def describe_server(table: McpServerConfig, base_dir: Path) -> str:
    """How a server is reached: ``stdio: <program as resolved> <args>`` or ``http: <url>``."""
    if table.url is not None:
        return f"http: {table.url}"
    try:
        program = _resolve(table, base_dir)
    except ValueError:
        program = f"{table.command} (not found)"
    return " ".join(["stdio:", program, *table.args])


def check_servers(
    servers: Mapping[str, McpServerConfig], base_dir: Path, *, name: str | None = None
) -> list[str]:
    """What would keep ``interpose mcp-proxy`` from starting these servers, found without
    starting one, one line per problem, each naming its field: a command that does not
    resolve (not on the ``PATH``, a path that is not an executable file), a ``cwd`` that
    is not a directory, two servers whose tools share a namespace; and ``name``, the
    server the command line adds (``--name``), naming one the file already has.
    """
    problems = []
    owners: dict[str, str] = {}  # server key -> the first server with it
    for server, table in servers.items():
        field = _field(server)
        key = server_key(server)
        if key in owners:
            problems.append(
                f"{field}: its tools would be {mcp_namespace(server)}*, as those of "
                f"{owners[key]}; rename one of them"
            )
        owners.setdefault(key, field)
        if table.cwd is not None and not (base_dir / table.cwd).is_dir():
            problems.append(f"{field}.cwd: {base_dir / table.cwd} is not a directory")
        elif table.command is not None:
            try:
                _resolve(table, base_dir)
            except ValueError as exc:
                problems.append(f"{field}.command: {exc}")
    if name is not None and server_key(name) in owners:
        problems.append(
            f"--name {name}: the file has this server already ({owners[server_key(name)]}); "
            "choose another name"
        )
    return problems
