"""What the Redis publisher and consumer share: connecting, raw commands and Lua
scripts, the shapes of stream replies, and argument checks.

Nothing here imports redis-py at import time: ``interpose.bus.redis`` imports without
the ``redis`` extra, and redis-py is imported when a publisher or consumer is made.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

import anyio

if TYPE_CHECKING:
    from redis.asyncio import Redis

__all__ = [
    "DEFAULT_STREAM",
    "DEFAULT_URL",
    "Entry",
    "RespVersion",
    "Script",
    "as_bytes",
    "as_fields",
    "backoff_delay",
    "check_name",
    "check_url",
    "connect",
    "positive_int",
    "raw_command",
    "raw_entries",
    "read_entries",
    "redis_errors",
]

Entry: TypeAlias = tuple[bytes, dict[bytes, bytes]]
#: the RESP version a client speaks (``protocol=`` of the publisher and the consumer)
RespVersion: TypeAlias = Literal[2, 3]
DEFAULT_URL = "redis://127.0.0.1:6379/0"
DEFAULT_STREAM = "interpose:events"


# -- connecting -------------------------------------------------------------------------


def _redis_module() -> Any:
    try:
        import redis.asyncio
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ImportError(
            "the Redis Streams bus needs redis-py: pip install 'interpose[redis]'"
        ) from exc
    return redis.asyncio


def check_url(url: object) -> None:
    """Raises ValueError unless ``url`` is a redis://, rediss:// or unix:// URL that
    redis-py can parse; ImportError without redis-py."""
    _redis_module()
    from redis.asyncio.connection import parse_url

    if not isinstance(url, str) or not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"not a Redis URL (redis://host:port/db): {url!r}")
    try:
        parse_url(url)
    except ValueError as exc:
        raise ValueError(f"not a valid Redis URL: {url!r}: {exc}") from None


def connect(url: str, protocol: RespVersion, socket_timeout: float | None) -> Redis:
    """A client for ``url`` without redis-py's own retries: the callers retry with their
    own backoff, and a hidden retry would stretch their timeouts.  It connects on its
    first command."""
    module = _redis_module()
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    client: Redis = module.Redis.from_url(
        url,
        protocol=protocol,
        socket_timeout=socket_timeout,
        socket_connect_timeout=min(socket_timeout or 5.0, 5.0),
        retry=Retry(NoBackoff(), 0),
    )
    return client


def redis_errors() -> tuple[type[Exception], ...]:
    """What a lost or refused connection raises (plus OSError underneath)."""
    from redis.exceptions import ConnectionError, TimeoutError

    return (ConnectionError, TimeoutError, OSError)


def backoff_delay(attempt: int, base: float, cap: float) -> float:
    """Exponential backoff with full jitter (never more than ``cap`` seconds)."""
    return random.uniform(base / 2, min(cap, base * 2.0**attempt))


# -- raw commands -----------------------------------------------------------------------


def _pack(args: Sequence[bytes]) -> bytes:
    """One command in RESP, as redis-py would send it."""
    parts = [b"*%d\r\n" % len(args)]
    parts += [b"$%d\r\n%s\r\n" % (len(arg), arg) for arg in args]
    return b"".join(parts)


async def raw_command(client: Redis, *args: bytes) -> Any:
    """Send one command packed by ``_pack`` on a connection of ``client``'s pool and
    return its reply (an error reply raises ``ResponseError``, as redis-py does).

    A failure or a cancellation in the middle disconnects the connection: a reply left
    unread must not be taken for the next command's.
    """
    pool = client.connection_pool
    connection = await pool.get_connection()  # type: ignore[no-untyped-call]
    try:
        await connection.send_packed_command(_pack(args), check_health=False)
        reply = await connection.read_response()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await connection.disconnect()
        raise
    finally:
        await pool.release(connection)
    from redis.exceptions import ResponseError

    if isinstance(reply, ResponseError):
        raise reply
    return reply


class Script:
    """A Lua script called with ``EVALSHA`` through ``raw_command``, loaded on first use and
    again after ``NOSCRIPT`` (a restarted Redis has forgotten it)."""

    def __init__(self, source: bytes) -> None:
        self.source = source
        self.sha: bytes | None = None

    async def __call__(self, client: Redis, keys: Sequence[bytes], args: Sequence[bytes]) -> Any:
        from redis.exceptions import NoScriptError

        if self.sha is None:
            self.sha = await raw_command(client, b"SCRIPT", b"LOAD", self.source)
        head = (b"EVALSHA", self.sha, str(len(keys)).encode(), *keys)
        try:
            return await raw_command(client, *head, *args)
        except NoScriptError:  # redis-py's class for a NOSCRIPT error reply
            pass
        self.sha = await raw_command(client, b"SCRIPT", b"LOAD", self.source)
        return await raw_command(client, b"EVALSHA", self.sha, *head[2:], *args)


def raw_entries(reply: Any) -> list[Entry]:
    """The entries of a raw ``XREADGROUP`` reply for one stream (``raw_command``: no redis-py
    response callbacks): ``[[stream, [[id, [f, v, ...]], ...]]]`` (RESP2) or
    ``{stream: [[id, [f, v, ...]], ...]}`` (RESP3); nothing: None, ``[]`` or ``{}``."""
    if not reply:
        return []
    raw = next(iter(reply.values())) if isinstance(reply, Mapping) else reply[0][1]
    entries: list[Entry] = []
    for entry_id, flat in raw:
        if flat and type(flat[0]) is bytes:
            it = iter(flat)
            entries.append((entry_id, dict(zip(it, it, strict=True))))
        else:
            entries.append((as_bytes(entry_id), as_fields(flat)))
    return entries


# -- reply shapes -----------------------------------------------------------------------


def read_entries(reply: Any) -> list[Entry]:
    """The entries of an ``XREADGROUP``/``XREAD`` reply for one stream, in either shape.

    RESP2 (``protocol=2``, redis-py's default against Redis 7.0) gives
    ``[[stream, [(id, {field: value}), ...]]]``; RESP3 gives
    ``{stream: [[(id, {field: value}), ...]]}``.  No reply (a ``BLOCK`` that ran out) is
    ``[]``, ``{}`` or ``None``.  A pending entry that was trimmed away has no fields
    (``{}`` or ``None``): it is kept, with ``{}``.

    Raises:
        ValueError: the reply has neither shape.
    """
    if not reply:
        return []
    if isinstance(reply, Mapping):
        groups: Iterable[Any] = reply.values()
        batches = [batch for value in groups for batch in value]
    elif isinstance(reply, list | tuple):
        batches = []
        for item in reply:
            if not isinstance(item, list | tuple) or len(item) != 2:
                raise ValueError(f"unexpected XREADGROUP reply item: {item!r}")
            batches.append(item[1])
    else:
        raise ValueError(f"unexpected XREADGROUP reply: {type(reply).__name__}")
    entries: list[Entry] = []
    for batch in batches:
        for entry in batch or ():
            if not isinstance(entry, list | tuple) or len(entry) != 2:
                raise ValueError(f"unexpected stream entry: {entry!r}")
            entry_id, fields = entry
            if type(entry_id) is not bytes or type(fields) is not dict:
                entry_id, fields = as_bytes(entry_id), as_fields(fields)
            # else: what redis-py gives without decode_responses, kept as it is
            entries.append((entry_id, fields))
    return entries


def as_bytes(value: Any) -> bytes:
    return value if isinstance(value, bytes) else str(value).encode()


def as_fields(fields: Any) -> dict[bytes, bytes]:
    if not fields:
        return {}
    if isinstance(fields, Mapping):
        return {as_bytes(k): as_bytes(v) for k, v in fields.items()}
    # a flat [field, value, ...] list (a raw reply)
    flat = list(fields)
    return {as_bytes(flat[i]): as_bytes(flat[i + 1]) for i in range(0, len(flat) - 1, 2)}


# -- checks -----------------------------------------------------------------------------


def positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_name(field: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{field} must be a non-empty string, got {value!r}")
