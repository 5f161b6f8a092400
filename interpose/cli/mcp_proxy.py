"""``interpose mcp-proxy``: its arguments; the pipeline and the proxy built from the command
line and the config file, then run by ``interpose.adapters.mcp.launch`` (stdio or
streamable HTTP)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import Subparsers, usage

if TYPE_CHECKING:
    from ..adapters.mcp.bearer import JwtVerifier
    from ..config import Config

__all__ = ["add_parser", "run"]

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DESCRIPTION = """\
Put interpose's pipeline between an MCP client and its MCP servers: the client starts
the proxy instead of the server, the proxy starts the server (-- COMMAND) or connects
to it (--upstream-url), and every tools/call goes through the hooks of --config.
Serves MCP on stdin/stdout, or streamable HTTP with --listen. See docs/mcp.md."""
EPILOG = """\
exit codes:
  0  the client disconnected (stdio), or the proxy was stopped (SIGTERM, SIGINT)
  1  an upstream server did not start or died during its handshake: the client's
     initialize got an error naming the command, its exit status and its stderr
  2  bad arguments, a bad config file, a --listen address that cannot be listened on
     (one line on stderr says what)"""


def _host_port(text: str) -> str:
    """``--listen``: HOST:PORT with a port of 0-65535."""
    _host, colon, port = text.rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (port 0-65535), got {text!r}")
    return text


def _log_file(text: str) -> str:
    """``--log-file``: a file whose directory exists."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory")
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"no directory {path.parent} for {text}")
    return text


def _size(text: str) -> int:
    """``--max-message-bytes``: bytes, or with a K, M or G suffix (KiB, MiB, GiB)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    digits, unit = text.upper().removesuffix("IB").removesuffix("B"), 1
    if digits[-1:] in units:
        digits, unit = digits[:-1], units[digits[-1]]
    if not digits.isdigit() or int(digits) * unit < 1024:
        raise argparse.ArgumentTypeError(
            f"expected a size of at least 1024 bytes (16M), got {text!r}"
        )
    return int(digits) * unit


def add_parser(sub: Subparsers) -> None:
    """The ``mcp-proxy`` subcommand."""
    proxy = sub.add_parser(
        "mcp-proxy",
        help="put the pipeline in front of MCP servers (stdio or streamable HTTP)",
        usage="interpose mcp-proxy [--config FILE] [--name NAME] [--upstream-url URL] "
        "[--listen HOST:PORT] [--jwks FILE|URL [--jwt-issuer ISS] [--jwt-audience AUD]] "
        "[--loop auto|asyncio|uvloop] [--max-message-bytes SIZE] "
        "[--sandbox] [-- COMMAND [ARGS...]]",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    proxy.add_argument("--config", default=None, help="interpose.toml (hooks, [mcp.servers])")
    proxy.add_argument(
        "--name",
        default=None,
        help="the upstream's server name: its tools are mcp__<name>__<tool> in matchers "
        "(default: the command's file name, or 'upstream' for a URL)",
    )
    proxy.add_argument("--upstream-url", default=None, help="a streamable-HTTP upstream server")
    proxy.add_argument(
        "--listen",
        default=None,
        type=_host_port,
        metavar="HOST:PORT",
        help="serve streamable HTTP (at /mcp) instead of stdio; port 0: any free port",
    )
    proxy.add_argument(
        "--jwks",
        default=None,
        metavar="FILE|URL",
        help="with --listen: every request needs a bearer JWT signed by a key of this "
        "JSON Web Key Set (else 401); its claims are the calls' principal "
        "(default: [mcp.auth] jwks)",
    )
    proxy.add_argument(
        "--jwt-issuer", default=None, metavar="ISS", help="the iss a token must have"
    )
    proxy.add_argument(
        "--jwt-audience",
        action="append",
        default=None,
        metavar="AUD",
        help="a token's aud must name this (repeat for several)",
    )
    proxy.add_argument(
        "--loop",
        choices=("auto", "asyncio", "uvloop"),
        default="auto",
        help="the event loop: uvloop when it is installed (the mcp extra installs it), "
        "else asyncio's own",
    )
    proxy.add_argument(
        "--max-message-bytes",
        type=_size,
        default=None,
        metavar="SIZE",
        help="the largest JSON-RPC message read from the client or an upstream "
        "(bytes, or 512K, 16M, 1G); larger ones are answered with an error "
        "(default: [mcp] max_message_bytes, 16M)",
    )
    proxy.add_argument(
        "--sandbox",
        action="store_true",
        help="run the stdio servers in the sandbox of [sandbox] in --config (its defaults "
        "without one): read-only root, writable working directory, no network (docs/sandbox.md)",
    )
    proxy.add_argument(
        "--log-level",
        default="WARNING",
        type=str.upper,
        choices=LEVELS,
        help="the proxy's log level (its logs go to stderr)",
    )
    proxy.add_argument(
        "--log-file", default=None, type=_log_file, help="log to this file instead of stderr"
    )
    proxy.add_argument(
        "--pin-file",
        default=None,
        metavar="FILE",
        help="pin the tool set in FILE (JSON to commit and review): a tool added, "
        "removed, renamed or changed since is reported and decided by [mcp] pin_* "
        "(default: [mcp] pin_file)",
    )
    proxy.add_argument(
        "--update-pins",
        action="store_true",
        help="accept the tool set as the servers list it now: write it to the pin file",
    )
    # (dest: not "command", which names the subcommand in interpose's own error lines)
    proxy.add_argument(
        "upstream",
        metavar="command",
        nargs=argparse.REMAINDER,
        help="-- COMMAND [ARGS...]: the upstream stdio server",
    )
    proxy.set_defaults(func=run)


def _default_name(command: list[str]) -> str:
    return Path(command[0]).stem or "upstream"


def run(args: argparse.Namespace) -> int:
    """Build the pipeline and the proxy from the command line and the config file, then
    run the proxy until the client disconnects (stdio) or the process is stopped.

    Exits 2 on a usage or config error, 1 when an upstream did not start (both said
    in one line on stderr), 0 otherwise.
    """
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise usage("the mcp extra is not installed: pip install 'interpose[mcp]'") from None
    from ..adapters.mcp.launch import find_uvloop, run_proxy
    from ..adapters.mcp.proxy import McpProxy, UpstreamSpec
    from ..adapters.mcp.serve import stderr_logging
    from ..config import Config, build_pipeline, parse_config
    from ..errors import ConfigError

    try:
        stderr_logging(args.log_level, args.log_file)
    except OSError as exc:
        raise usage(f"--log-file: {exc.strerror}: {args.log_file}") from None
    command = args.upstream[1:] if args.upstream[:1] == ["--"] else args.upstream
    if command and args.upstream_url:
        raise usage("give either -- COMMAND or --upstream-url, not both")
    if args.config and not os.access(args.config, os.R_OK) and Path(args.config).exists():
        raise usage(f"--config: cannot read {args.config} (permission denied)")
    try:
        # checked by build_pipeline below, once the command line's server is in it
        config = parse_config(args.config) if args.config else Config()
    except ConfigError as exc:
        raise usage(str(exc)) from None
    base_dir = Path(args.config).resolve().parent if args.config else Path.cwd()
    _add_command_line_server(args, command, config)
    try:
        pipe = build_pipeline(config, base_dir=base_dir, source=args.config or "<command line>")
    except ConfigError as exc:
        raise usage(str(exc)) from None
    if args.max_message_bytes is not None:
        config.mcp.max_message_bytes = args.max_message_bytes
    if args.sandbox:
        from ..adapters.mcp.sandboxed import sandbox_servers
        from ..errors import SandboxUnavailable

        try:
            sandbox_servers(pipe, config, base_dir)
        except (SandboxUnavailable, ValueError) as exc:
            raise usage(f"--sandbox: {exc}") from None
    specs = [
        UpstreamSpec.from_config(name, table, base_dir)
        for name, table in config.mcp.servers.items()
    ]
    if args.pin_file is not None:
        config.mcp.pin_file = str(Path(args.pin_file).resolve())
    if args.update_pins:
        if config.mcp.pin_file is None:
            raise usage("--update-pins: no pin file (give --pin-file or [mcp] pin_file)")
        config.mcp.pin_mode = "update"
    try:
        proxy = McpProxy(pipe, specs, config=config.mcp, base_dir=base_dir)
    except ConfigError as exc:  # the pin file is not one
        raise usage(str(exc)) from None
    uvloop = find_uvloop(args.loop)
    if uvloop is None:
        raise usage("--loop uvloop: uvloop is not installed (pip install uvloop)")
    auth = _auth(args, config, base_dir)
    return run_proxy(pipe, proxy, listen=args.listen, uvloop=uvloop, auth=auth)


def _auth(args: argparse.Namespace, config: Config, base_dir: Path) -> JwtVerifier | None:
    """The bearer-token check of the HTTP front: ``[mcp.auth]`` with the command line's
    ``--jwks``, ``--jwt-issuer`` and ``--jwt-audience`` over it; None: no check.

    Raises:
        UsageError: a --jwt option without a key set, --jwks without --listen, a key
            file that cannot be read.
    """
    from msgspec.structs import replace

    from ..adapters.mcp.bearer import JwtVerifier
    from ..config.mcp import McpAuthConfig

    auth = config.mcp.auth
    if args.jwks is not None:
        # a path on the command line: from where it is run
        url = args.jwks.startswith(("https://", "http://"))
        jwks = args.jwks if url else str(Path(args.jwks).resolve())
        auth = McpAuthConfig(jwks=jwks) if auth is None else replace(auth, jwks=jwks)
    if auth is None:
        if args.jwt_issuer is not None or args.jwt_audience:
            raise usage("--jwt-issuer and --jwt-audience need --jwks (or [mcp.auth])")
        return None
    if args.listen is None:
        if args.jwks is not None:
            raise usage("--jwks: bearer tokens are checked on HTTP only; add --listen HOST:PORT")
        return None  # [mcp.auth] of a file shared with a stdio proxy: nothing to check
    if args.jwt_issuer is not None:
        auth = replace(auth, issuer=args.jwt_issuer)
    if args.jwt_audience:
        auth = replace(auth, audience=list(args.jwt_audience))
    return JwtVerifier.from_config(auth, base_dir)


def _add_command_line_server(args: argparse.Namespace, command: list[str], config: Config) -> None:
    """Add the server of ``-- COMMAND`` or ``--upstream-url`` to ``config``'s servers.

    Raises:
        UsageError: the name is one the file has already, or there is no server at all.
    """
    from ..config.mcp import McpServerConfig, server_key

    if command or args.upstream_url:
        name = args.name or (_default_name(command) if command else "upstream")
        if any(server_key(name) == server_key(known) for known in config.mcp.servers):
            raise usage(f"--name {name}: {args.config} has this server already; choose another")
        config.mcp.servers[name] = (
            McpServerConfig(url=args.upstream_url)
            if args.upstream_url
            else McpServerConfig(command=command[0], args=command[1:], cwd=str(Path.cwd()))
        )
    if not config.mcp.servers:
        raise usage("no upstream: give -- COMMAND, --upstream-url or [mcp.servers] in --config")
