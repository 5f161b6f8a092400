"""``interpose replay AUDIT.jsonl... --config NEW.toml``: what a new stack would change
in recorded calls (the replay itself is ``interpose.replay``)."""

from __future__ import annotations

import argparse
import json
import sys
from functools import partial

from ._common import Subparsers

__all__ = ["EXIT_CODES", "add_parser", "run"]

EXIT_CODES = """\
exit codes:
  0  calls were replayed and the new stack blocks nothing the recorded run allowed
  1  the new stack would block a call the recorded run allowed (a regression)
  2  bad input: a log or the config cannot be read, a log line is not an event, or
     the new stack raised on a call instead of deciding (the message names the line)
  3  no call could be replayed: the logs are empty, hold no call, or were recorded
     without record_args=True (the message says which); a gate never passes on nothing
"""


def run(args: argparse.Namespace) -> int:
    """``interpose replay LOG... --config NEW.toml [--json] [--all]``: run the recorded
    calls of audit logs through the stack NEW.toml builds (never running a tool) and
    print what it would change.

    The logs are streamed; the report holds the changed calls (``--all``: every call).
    ``--json`` prints the same rows as the text.  Exit status: ``EXIT_CODES``
    (1 on a regression, 2 on bad input, 3 when no call could be replayed, else 0).
    """
    import anyio

    from ..errors import ConfigError
    from ..replay import LogError, ReplayError, render, replay_files

    try:
        report = anyio.run(partial(replay_files, args.logs, args.config, every=args.all))
    except (LogError, ReplayError, ConfigError, OSError) as exc:
        print(f"interpose replay: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_json(), indent=2, default=str))
    else:
        for line in render(report):
            print(line)
    nothing = report.nothing_replayed()
    if nothing:
        print(f"interpose replay: {nothing}", file=sys.stderr)
        return 3
    return 1 if report.regressions else 0


def add_parser(sub: Subparsers) -> None:
    """The ``replay`` subcommand."""
    replay = sub.add_parser(
        "replay",
        help="replay recorded calls of audit logs through a new config's stack, "
        "never running a tool, and print what it would change",
        description="Replay the calls recorded in audit logs (written with record_args=True)\n"
        "through the stack NEW.toml builds, never running a tool or a model, and print\n"
        "the calls whose outcome would change, the rules that change them and a summary.\n"
        "The logs are read as a stream: memory holds the report, not the logs.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.add_argument(
        "logs",
        nargs="+",
        metavar="AUDIT.jsonl",
        help="audit logs written with recording on (rotated files: oldest first)",
    )
    replay.add_argument(
        "--config", required=True, metavar="NEW.toml", help="the config of the stack to try"
    )
    replay.add_argument(
        "--json",
        action="store_true",
        help="print the report as one JSON object: the same rows as the text",
    )
    replay.add_argument(
        "--all", action="store_true", help="list every replayed call, not only the changed ones"
    )
    replay.set_defaults(func=run)
