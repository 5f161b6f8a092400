"""JSON lines on pipes, handled as they arrive: the stdio lanes' reading side.

A tool call relayed over stdio crosses two pipes each way.  Read with a stream reader
and a reading task, every line costs a task wake-up (an event-loop iteration) before
anything looks at it; ``LineProtocol`` hands each complete line to a callback inside
``data_received``, so a response can resolve its caller's future, or a request start
its task, at once.  What needs an ``await`` to be handled (a message for the SDK's
session, a progress report) goes to an ``Inbox``: handled in order by one task, the
pipe paused while too many wait.  The lines themselves are cut by the transport shared
with process hooks (``interpose._jsonlines``).

These are asyncio protocols: the stdio lanes run on asyncio's event loop (as the
``interpose mcp-proxy`` command does).
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

from ..._jsonlines import LineSplitter, Oversized

__all__ = ["Inbox", "LineProtocol", "Oversized"]

log = logging.getLogger("interpose.mcp")


class LineProtocol(asyncio.Protocol):
    """Split a pipe into lines; ``on_line`` gets each non-blank one (without its
    newline) as soon as its end arrives.

    A line longer than ``max_line`` bytes is not kept: the rest of it is read and
    dropped, and at its end ``on_too_long`` gets an ``Oversized`` (its start, its end,
    its size), so that the message's sender can be told; then reading goes on.
    ``on_close`` is called once, when the pipe is closed (EOF, an error, or closed here).
    The splitting is ``interpose._jsonlines.LineSplitter``'s, shared with process hooks.
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
        self._split = LineSplitter(max_line).feed
        self.transport: asyncio.ReadTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports do not derive from asyncio's classes: no isinstance)
        self.transport = cast(asyncio.ReadTransport, transport)

    def data_received(self, data: bytes) -> None:
        on_line = self._on_line
        for line in self._split(data):
            if isinstance(line, bytes):
                if line and not line.isspace():  # (blank lines are skipped)
                    on_line(line)
            else:
                self._too_long(line)

    def _too_long(self, over: Oversized) -> None:
        """An over-long line has ended: say so."""
        log.warning(
            "%s: a message of %d bytes, over the limit of %d: dropped",
            self._name,
            over.size,
            self._max_line,
        )
        if self._on_too_long is not None:
            self._on_too_long(over)

    def eof_received(self) -> bool:
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        if exc is not None:
            log.warning("%s: %s", self._name, exc)
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close()


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
