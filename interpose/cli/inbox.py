"""``interpose inbox``: serve the approvals inbox (the page and its JSON API) over the
fleet's approval store on Redis (``--redis``, or ``[approvals]`` of ``--config``)."""

from __future__ import annotations

import argparse
import logging
import sys

from ._common import Subparsers, command, existing, usage

__all__ = ["add_parser", "run"]

DESCRIPTION = """\
Serve the approvals inbox: a web page listing the requests waiting for a person
(newest first; filter by agent or tool), the exact call and why it was asked, approve /
deny / edit / grant buttons, the live stream of decisions and per-rule counters; and
the JSON API the page uses (GET /api/requests, GET /api/requests/ID, POST
/api/requests/ID/decide, GET /api/events, GET /api/counters). See docs/approvals.md.

It binds 127.0.0.1 by default. Any other address needs a token: $INTERPOSE_INBOX_TOKEN
or --token-file (lines of TOKEN or NAME TOKEN; NAME is the approver's identity).
Requests whose Host header is not the inbox's address are refused (DNS rebinding);
state-changing requests need the token or the page's same-origin proof (CSRF token)."""
EXITS = """\
  0  stopped (SIGTERM, SIGINT)
  2  bad arguments, a bad config file, no token for a non-loopback address, an
     address that cannot be listened on, no Redis store (--redis or [approvals] store =
     "redis" in --config) or a Redis server that does not answer"""


def _host_port(text: str) -> tuple[str, int]:
    """``--listen``: HOST:PORT with a port of 0-65535."""
    host, colon, port = text.rpartition(":")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT (port 0-65535), got {text!r}")
    return host.strip("[]"), int(port)


def add_parser(sub: Subparsers) -> None:
    """The ``inbox`` subcommand."""
    inbox = command(
        sub, "inbox", "serve the approvals inbox (web page + JSON API)", DESCRIPTION, EXITS
    )
    inbox.add_argument(
        "--listen",
        default=("127.0.0.1", 8700),
        type=_host_port,
        metavar="HOST:PORT",
        help="where to serve (default 127.0.0.1:8700; port 0: any free port)",
    )
    inbox.add_argument(
        "--redis", default=None, metavar="URL", help="the fleet's approval store on Redis"
    )
    inbox.add_argument(
        "--config",
        default=None,
        metavar="FILE",
        help='the agents\' interpose.toml: its [approvals] store = "redis" (url, prefix)',
    )
    inbox.add_argument(
        "--redis-prefix",
        default=None,
        metavar="PREFIX",
        help="the keys of the approval store on Redis (default interpose:approvals)",
    )
    inbox.add_argument(
        "--token-file",
        default=None,
        metavar="FILE",
        help="the tokens that may use the inbox (also $INTERPOSE_INBOX_TOKEN)",
    )
    inbox.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another name the inbox is reached by (a Host header to accept)",
    )
    inbox.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve the inbox until SIGTERM/SIGINT.

    Raises:
        UsageError: bad input (see EXITS).
    """
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise usage(
            "the inbox needs the mcp extra (Starlette, uvicorn): pip install 'interpose[mcp]'"
        ) from None
    from ..adapters.inbox.security import TOKEN_ENV, is_loopback, is_wildcard, read_tokens
    from ..adapters.inbox.serve import open_store, serve_inbox

    host, port = args.listen
    tokens = read_tokens(args.token_file)
    if not tokens and not is_loopback(host):
        raise usage(
            f"--listen {host}: an address other than loopback needs a token "
            f"(${TOKEN_ENV} or --token-file)"
        )
    if is_wildcard(host) and not args.allow_host:
        # every Host would be someone else's: the check needs the names it is reached by
        raise usage(
            f"--listen {host}: every address of this machine; name the ones the inbox is "
            "reached by with --allow-host NAME (each Host header is checked against them)"
        )
    redis, prefix = _store_of(args)
    backend = open_store(redis=redis, prefix=prefix)
    logging.basicConfig(format="interpose inbox: %(message)s", stream=sys.stderr)
    logging.getLogger("interpose.inbox").setLevel(logging.INFO)  # every decision, who made it
    serve_inbox(
        backend,
        host,
        port,
        tokens=tokens,
        allowed_hosts=tuple(args.allow_host),
        ready=lambda url: print(f"interpose inbox: serving on {url}", file=sys.stderr, flush=True),
    )
    return 0


def _store_of(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The Redis URL and key prefix of the store: ``--redis`` and ``--redis-prefix``
    over the ``[approvals]`` table of ``--config``.

    Raises:
        UsageError: the config file cannot be read or is invalid, or its approvals are
            not in Redis (a memory store is the agent process's own).
    """
    if args.config is None:
        return args.redis, args.redis_prefix
    from ..config import parse_config
    from ..errors import ConfigError

    existing(args.config)
    try:
        table = parse_config(args.config).approvals
    except ConfigError as exc:
        raise usage(str(exc)) from None
    if args.redis is None and (table is None or table.store != "redis"):
        raise usage(
            f"--config {args.config}: its approvals are not in Redis ([approvals] store = "
            '"redis"): an inbox cannot see another process\'s memory; or give --redis URL'
        )
    url = args.redis or (table.url if table is not None else None)
    return url, args.redis_prefix or (table.prefix if table is not None else None)
