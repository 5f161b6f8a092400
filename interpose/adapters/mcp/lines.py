"""JSON lines on pipes, handled as they arrive: the stdio lanes' reading side.

A tool call relayed over stdio crosses two pipes each way.  Read with a stream reader
and a reading task, every line costs a task wake-up (an event-loop iteration) before
anything looks at it; ``LineProtocol`` hands each complete line to a callback inside
``data_received``, so a response can resolve its caller's future, or a request start
its task, at once.  What needs an ``await`` to be handled (a message for the SDK's
session, a progress report) goes to an ``Inbox``: handled in order by one task, the
pipe paused while too many wait.

These are asyncio protocols: the stdio lanes run on asyncio's event loop (as the
``interpose mcp-proxy`` command does).
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, NamedTuple, cast

__all__ = ["Inbox", "LineProtocol", "Oversized"]

log = logging.getLogger("interpose.mcp")


class LineProtocol(asyncio.Protocol):
    """Split a pipe into lines; ``on_line`` gets each non-blank one (without its
    newline) as soon as its end arrives.

    A line longer than ``max_line`` bytes is not kept: the rest of it is read and
    dropped, and at its end ``on_too_long`` gets an ``Oversized`` (its start, its end,
    its size), so that the message's sender can be told; then reading goes on.
    ``on_close`` is called once, when the pipe is closed (EOF, an error, or closed here).
    """

    def __init__(
        self,
        on_line: Callable[[bytes], None],
        on_close: Callable[[], None],
        *,
        max_line: int,
        name: str,
        on_too_long: Callable[[Oversized], None] | None = None,
    ) -> None:
        self._on_line = on_line
        self._on_close: Callable[[], None] | None = on_close
        self._on_too_long = on_too_long
        self._max_line = max_line
        self._name = name
        self._partial = bytearray()  # the start of a line whose end has not come yet
        self._skipped = 0  # bytes of an over-long line read and dropped so far (0: none)
        self._head = b""  # ... its first bytes
        self._tail = b""  # ... its last bytes
        self.transport: asyncio.ReadTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports do not derive from asyncio's classes: no isinstance)
        self.transport = cast(asyncio.ReadTransport, transport)

    def data_received(self, data: bytes) -> None:
        if self._skipped:  # inside an over-long line: drop up to its end
            end = data.find(b"\n")
            self._skip(data if end < 0 else data[:end])
            if end < 0:
                return
            self._too_long()
            data = data[end + 1 :]
        elif self._partial:  # a line began in an earlier piece: only this one is searched
            end = data.find(b"\n")
            if end < 0:
                self._partial += data
                self._check_length()
                return
            self._partial += data[:end]
            line, self._partial = bytes(self._partial), bytearray()
            data = data[end + 1 :]
            if len(line) > self._max_line:
                self._skip(line)
                self._too_long()
            elif not line.isspace():
                self._on_line(line)
        start = 0
        on_line = self._on_line
        if len(data) > self._max_line:  # (else no line in it can be over the limit)
            on_line = self._checked
        while (end := data.find(b"\n", start)) >= 0:
            line = data[start:end]
            start = end + 1
            if line and not line.isspace():
                on_line(line)
        if start < len(data):
            self._partial += data[start:]
            self._check_length()

    def _checked(self, line: bytes) -> None:
        """``on_line``, for a line that may be over the limit."""
        if len(line) > self._max_line:
            self._skip(line)
            self._too_long()
        else:
            self._on_line(line)

    def _check_length(self) -> None:
        if len(self._partial) > self._max_line:
            partial, self._partial = bytes(self._partial), bytearray()
            self._skip(partial)

    def _skip(self, piece: bytes) -> None:
        """Drop ``piece`` of an over-long line, keeping its start and its end."""
        if not self._skipped:
            self._head = piece[:_KEPT]
            self._tail = b""
        self._skipped += len(piece)
        self._tail = (self._tail + piece[-_KEPT:])[-_KEPT:]

    def _too_long(self) -> None:
        """The over-long line has ended: say so."""
        size, self._skipped = self._skipped, 0
        log.warning(
            "%s: a message of %d bytes, over the limit of %d: dropped",
            self._name,
            size,
            self._max_line,
        )
        if self._on_too_long is not None:
            self._on_too_long(Oversized(self._head, self._tail, size))

    def eof_received(self) -> bool:
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            log.warning("%s: %s", self._name, exc)
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


_KEPT = 4096  # bytes kept of each end of an over-long line (where its id is)
# a top-level key and, when it is a scalar, its value
_KEY = re.compile(rb'\s*"([^"\\]*)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+|true|false|null)?\s*,?')
# the id as the last top-level member (`{"result": ..., "jsonrpc": "2.0", "id": 7}`)
_LAST_ID = re.compile(rb'[,{]\s*"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+)\s*\}\s*$')


class Oversized(NamedTuple):
    """A line over the limit: its first and last bytes and its size."""

    head: bytes
    tail: bytes
    size: int

    def identify(self) -> tuple[str | int | None, bool]:
        """The message's JSON-RPC id (None: not found) and whether it is a request or
        a notification (it has a ``method``), from the top-level members at its start
        (before the first object or array) or the id at its very end."""
        keys: set[bytes] = set()
        found: bytes | None = None
        head = self.head.lstrip()
        at = 1 if head[:1] == b"{" else len(head)
        while at < len(head) and (match := _KEY.match(head, at)) is not None:
            keys.add(match[1])
            if match[1] == b"id" and match[2] is not None:
                found = match[2]
            if match[2] is None:
                break  # an object or an array: where the scan ends
            at = match.end()
        if found is None and (last := _LAST_ID.search(self.tail)) is not None:
            found = last[1]
        request = b"method" in keys
        if found is None:
            return None, request
        try:
            value = json.loads(found)
        except ValueError:
            return None, request
        return (value if isinstance(value, str | int) else None), request


_END = object()


class Inbox:
    """Items that take an ``await`` to handle, handled one at a time, in arrival order,
    by ``pump`` (a task); while more than ``limit`` wait, the pipe they come from is
    paused.  ``end()`` lets ``pump`` return once everything before it is handled.  An
    inbox is true while an item waits or is being handled (what comes next must not
    overtake it)."""

    def __init__(self, handle: Callable[[Any], Awaitable[None]], limit: int) -> None:
        self._handle = handle
        self._limit = limit
        self._items: collections.deque[Any] = collections.deque()
        self._arrived = asyncio.Event()
        self._paused = False
        self._busy = False
        self.transport: asyncio.ReadTransport | None = None

    def __bool__(self) -> bool:
        return self._busy or bool(self._items)

    def put(self, item: Any) -> None:
        self._items.append(item)
        self._arrived.set()
        if len(self._items) > self._limit and not self._paused and self.transport is not None:
            self._paused = True
            self.transport.pause_reading()

    def end(self) -> None:
        self.put(_END)

    async def pump(self) -> None:
        """Handle the items as they arrive, until ``end()``'s turn comes."""
        items = self._items
        while True:
            if not items:
                self._arrived.clear()
                await self._arrived.wait()
                continue
            item = items.popleft()
            if self._paused and len(items) <= self._limit // 2 and self.transport is not None:
                self._paused = False
                if not self.transport.is_closing():
                    self.transport.resume_reading()
            if item is _END:
                return
            self._busy = True
            try:
                await self._handle(item)
            except Exception:  # one bad message does not stop the pipe
                log.exception("a message could not be handled")
            finally:
                self._busy = False
