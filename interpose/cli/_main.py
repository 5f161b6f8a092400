"""``main()``: the ``interpose`` parser with every subcommand in it, and the one rule for
bad input (a ``UsageError`` is one line on stderr and its exit code, 2 unless it says
otherwise; argparse's own refusals exit 2 as well)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from functools import partial
from typing import cast

from ..bus.fleet_cli import add_parsers as add_fleet_parsers
from ..errors import UsageError
from ..observers.audit import AuditLog
from . import bench, check, demo, explain, hook_test, inbox, mcp_proxy, replay
from ._common import Parser, Subparsers

__all__ = ["main", "parser"]


def version() -> str:
    """The installed package's version (``interpose.__version__`` when run from a source
    tree that is not installed)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("interpose")
    except PackageNotFoundError:
        from .._version import __version__

        return __version__


def parser() -> argparse.ArgumentParser:
    """The ``interpose`` command's parser, every subcommand in it."""
    top = Parser(
        prog="interpose",
        description="interpose: policy, telemetry and control between an AI agent and "
        "everything it touches. Bad input to any command: one line on stderr, exit code 2.",
        epilog="`interpose COMMAND --help` describes a command and its exit codes; "
        "docs/cli.md lists them all.",
    )
    top.add_argument("--version", action="version", version=f"interpose {version()}")
    # every subcommand's parser is a Parser too (argparse makes them of the top's class)
    sub = cast(Subparsers, top.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    demo.add_parser(sub)
    bench.add_parser(sub)
    check.add_parsers(sub)  # check, init, schema
    hook_test.add_parser(sub)
    explain.add_parser(sub)
    replay.add_parser(sub)
    mcp_proxy.add_parser(sub)
    inbox.add_parser(sub)
    # tail and audit: their parser is built beside what they run, in the bus layer
    # (``interpose.bus.fleet_cli.add_parsers`` is a public name; see that module), which
    # gets the audit log writer of the observers layer from here
    add_fleet_parsers(sub, open_log=partial(AuditLog, max_bytes=None))
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``interpose`` command with ``argv`` (default: ``sys.argv[1:]``); return its
    exit code."""
    args = parser().parse_args(argv)
    try:
        result: int = args.func(args)
    except UsageError as exc:
        # the one rule for bad input: one line naming what is wrong, no traceback
        print(f"interpose {args.command}: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        # the reader went away (`interpose demo | head`): stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return result
