"""``interpose tail`` and ``interpose audit``: the command line of the fleet bus.

``interpose tail --redis URL [--group G] [--events tool_exec_end,...] [--follow]`` prints
what a fleet's agents do as a live table (time, agent, tool, decision, duration,
reason).  Without ``--group`` it reads the whole retained stream through a group of its
own, removed when it exits; with ``--group`` it is one more consumer of that group (and
acks what it printed).  Without ``--follow`` it exits once caught up.

``interpose audit --redis URL --out audit.jsonl [--follow]`` is a durable consumer (group
``interpose-audit`` by default) that appends every event to a JSON Lines audit log, the
format of ``interpose.observers.AuditLog``.  Run again, it goes on where it stopped.

Both check their arguments, then PING Redis, before they print or create anything: a
bad argument is one line and exit 2, a Redis that does not answer one line naming its
URL and exit 1 (``EXIT_CODES``).

The ``interpose`` command (``interpose.cli``) adds these two subcommands with
``add_parsers``, passing the audit log writer (``AuditLog``, of the observers layer):
this module is of the bus layer and imports nothing above it.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from ..errors import UsageError

if TYPE_CHECKING:
    from .events import Event
    from .redis import RedisStreamConsumer

__all__ = ["add_parsers", "format_row", "run_audit", "run_tail"]

TAIL_EVENTS = ("tool_exec_end", "interceptor_failed", "turn_aborted")
EXIT_CODES = """exit codes:
  0  caught up (or --follow stopped with Ctrl-C)
  1  Redis cannot be reached (checked with PING before anything is printed or written),
     or the connection failed while reading
  2  a bad argument (an unknown event kind, a URL that is not redis://, rediss:// or
     unix://, a missing directory for the output file)"""
_COLUMNS = (("time", 12), ("agent", 14), ("tool", 16), ("decision", 10), ("duration", 10))


class EventLog(Protocol):
    """What ``interpose audit`` appends events to (``interpose.observers.AuditLog``): a
    callable taking an event, closed when the ``with`` block ends."""

    def __call__(self, event: Event, /) -> None: ...

    def __enter__(self) -> EventLog: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


def add_parsers(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    open_log: Callable[[Path], EventLog] | None = None,
) -> None:
    """The ``tail`` and ``audit`` subcommands.  ``open_log`` opens (creates) the file
    ``audit`` appends to, e.g. ``partial(AuditLog, max_bytes=None)``; without it
    ``audit`` refuses to run."""
    tail = sub.add_parser(
        "tail",
        help="print what a fleet's agents do, from a Redis Stream, as a live table",
        description="Print what a fleet's agents do, read from the Redis Stream their "
        "RedisStreamPublishers write to, one table row per event (time, agent, tool, "
        "decision, duration, reason). Without --follow it exits once caught up.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(tail)
    tail.add_argument(
        "--group",
        default=None,
        help="read as one consumer of this group, acking what is printed (default: a "
        "group of its own from the start of the stream, removed on exit)",
    )
    tail.add_argument(
        "--events",
        default=",".join(TAIL_EVENTS),
        help=f"the event kinds to show, comma-separated (default: {','.join(TAIL_EVENTS)})",
    )
    tail.set_defaults(func=run_tail)
    audit = sub.add_parser(
        "audit",
        help="append a fleet's events from a Redis Stream to a JSONL audit log",
        description="Append every event of a fleet's Redis Stream to a JSON Lines audit "
        "log (the format of the AuditLog observer), as a durable consumer: each line is "
        "acked once written, and a second run goes on where the first stopped. The file "
        "is created only once Redis answers.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(audit)
    audit.add_argument("--out", required=True, help="the JSON Lines file to append to")
    audit.add_argument(
        "--group", default="interpose-audit", help="the consumer group (default: interpose-audit)"
    )
    audit.add_argument(
        "--consumer",
        default=None,
        help="this consumer's name in the group (default: audit:<host>); keep it stable so "
        "that a restart finds what it had read and not acked",
    )
    audit.set_defaults(func=run_audit, open_log=open_log)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--redis", required=True, metavar="URL", help="redis://host:port/db")
    parser.add_argument(
        "--stream", default="interpose:events", help="the stream (default: interpose:events)"
    )
    parser.add_argument(
        "--follow", action="store_true", help="keep waiting for new events (Ctrl-C stops)"
    )


def format_row(event: Event) -> tuple[str, ...]:
    """The table row of ``event``: time, agent, tool, decision, duration, reason."""
    stamp = time.strftime("%H:%M:%S", time.localtime(event.ts / 1e9))
    stamp += f".{event.ts // 1_000_000 % 1000:03d}"
    tool = str(getattr(event, "tool_name", ""))
    duration_ns = int(getattr(event, "duration_ns", 0))
    if not duration_ns:
        duration = ""
    elif duration_ns < 1_000_000:
        duration = f"{duration_ns / 1e3:.0f}us"
    else:
        duration = f"{duration_ns / 1e6:.1f}ms"
    kind = event.kind
    reason = str(getattr(event, "reason", ""))
    by = str(getattr(event, "decided_by", ""))
    if kind == "tool_exec_end":
        decision = str(getattr(event, "status", ""))
    elif kind == "tool_exec_skipped":
        decision = str(getattr(event, "why", ""))
    elif kind == "interceptor_failed":
        decision = "failed"
        reason = (
            f"{getattr(event, 'hook', '')} {getattr(event, 'interceptor_id', '')}: "
            f"{getattr(event, 'error_type', '')}: {getattr(event, 'error', '')}"
        )
    elif kind == "turn_aborted":
        decision = "aborted"
    elif kind == "flow_flagged":
        decision = f"flow {getattr(event, 'decision', '')}"
    else:
        decision = kind
    if by and reason:
        reason = f"{reason} (by {by})"
    return stamp, event.agent_id, tool, decision, duration, reason


def _line(cells: tuple[str, ...]) -> str:
    fixed = [cell.ljust(width) for cell, (_, width) in zip(cells, _COLUMNS, strict=False)]
    return " ".join([*fixed, cells[-1]]).rstrip()


def _kinds(value: str) -> frozenset[str]:
    from .events import EVENT_KINDS

    kinds = frozenset(k.strip() for k in value.split(",") if k.strip())
    unknown = sorted(kinds - EVENT_KINDS)
    if unknown or not kinds:
        raise UsageError(
            f"--events: unknown event kind(s) {', '.join(unknown) or '(none)'}; "
            f"kinds: {', '.join(sorted(EVENT_KINDS))}"
        )
    return kinds


def run_tail(args: argparse.Namespace) -> int:
    """Exits 0 when caught up (or stopped with Ctrl-C), 1 when Redis cannot be reached,
    2 on a bad argument (``EXIT_CODES``)."""
    kinds = _kinds(args.events)
    group = (
        args.group or f"interpose-tail:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    )
    consumer = _consumer(
        args, group, f"tail:{socket.gethostname()}:{os.getpid()}", dedup=bool(args.group)
    )
    _ping(consumer.url)
    print(_line((*(name.upper() for name, _ in _COLUMNS), "REASON")), flush=True)

    def show(event: Event) -> None:
        print(_line(format_row(event)), flush=True)

    consumer.subscribe(show, events=kinds)
    return _run("tail", consumer, args.follow, temporary=None if args.group else group)


def run_audit(args: argparse.Namespace) -> int:
    """Exits 0 when caught up (or stopped with Ctrl-C), 1 when Redis cannot be reached,
    2 on a bad argument or an output file that cannot be opened (``EXIT_CODES``).  The
    file is opened (created) only once Redis answered; a run that failed before it
    appended anything removes the file it created."""
    open_log: Callable[[Path], EventLog] | None = getattr(args, "open_log", None)
    if open_log is None:
        raise UsageError("no audit log writer: add_parsers(sub, open_log=...) passes one")
    out = _out_path(args.out)
    consumer = _consumer(
        args, args.group, args.consumer or f"audit:{socket.gethostname()}", dedup=True
    )
    _ping(consumer.url)
    created = not out.exists()
    try:
        log = open_log(out)
    except OSError as exc:
        raise UsageError(f"--out: {exc}") from None
    with log:
        consumer.subscribe(log)
        code = _run("audit", consumer, args.follow, temporary=None)
    stats = consumer.stats
    if code and created and not stats.delivered:
        out.unlink(missing_ok=True)
    if not code:
        print(
            f"interpose audit: {stats.delivered} event(s) appended to {args.out} "
            f"({stats.duplicates} duplicate(s) dropped, {stats.dead_lettered} dead-lettered)",
            file=sys.stderr,
        )
    return code


def _out_path(value: str) -> Path:
    """``--out``, checked before anything connects: its directory exists, it is not one."""
    out = Path(value)
    if out.is_dir():
        raise UsageError(f"--out: {value} is a directory")
    if not out.parent.is_dir():
        raise UsageError(f"--out: the directory {out.parent} does not exist")
    return out


def _consumer(
    args: argparse.Namespace, group: str, name: str, *, dedup: bool
) -> RedisStreamConsumer:
    from .redis import RedisStreamConsumer

    try:
        return RedisStreamConsumer(
            args.redis,
            args.stream,
            group,
            name,
            dedup_window=3600.0 if dedup else None,
            observer_timeout=None,
        )
    except (ValueError, ImportError) as exc:
        raise UsageError(str(exc)) from None


def _shown(url: str) -> str:
    """``url`` without its password."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return parts._replace(netloc=netloc).geturl()


def _ping(url: str) -> None:
    """PING Redis once (5 s at most).

    Raises:
        UsageError: (exit 1) it did not answer, naming the URL and why.
    """
    import anyio
    from redis.exceptions import RedisError

    from .redis.common import connect

    async def ping() -> None:
        client = connect(url, 2, 5.0)
        try:
            with anyio.fail_after(5.0):
                await client.ping()
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    try:
        anyio.run(ping)
    except (RedisError, OSError) as exc:  # TimeoutError is an OSError
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise UsageError(f"cannot reach Redis at {_shown(url)}: {why}", exit_code=1) from None


def _run(command: str, consumer: RedisStreamConsumer, follow: bool, temporary: str | None) -> int:
    import anyio
    from redis.exceptions import RedisError

    async def main() -> None:
        try:
            await consumer.run(until_caught_up=not follow)
        finally:
            if temporary is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(5):
                    await _destroy_group(consumer, temporary)

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        return 0
    except (RedisError, OSError) as exc:
        print(
            f"interpose {command}: {_shown(consumer.url)}: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return 1
    return 0


async def _destroy_group(consumer: RedisStreamConsumer, group: str) -> None:
    from redis.exceptions import RedisError

    from .redis.common import connect

    client = connect(consumer.url, 2, 5.0)
    try:
        await client.xgroup_destroy(consumer.stream, group)
    except (RedisError, OSError):
        pass
    finally:
        await client.aclose()
