"""The stdio JSON-lines transport, sans-IO: cut bytes into bounded lines, match replies
to the requests waiting for them.

A process hook's child and an MCP server over stdio both speak JSON-RPC, one JSON object
per line, on a pipe.  What both sides need of that -- lines that may arrive in any
pieces, a bound on their length, and a table of the requests in flight by id -- lives
here once, with no I/O and no event loop (h11's way: fed bytes, it returns what they
complete).  Each side keeps only its thin I/O: the MCP stdio lanes hand each line to a
callback inside an asyncio protocol's ``data_received``; process hooks do the same on
asyncio and read anyio streams elsewhere (trio).

This module imports nothing from interpose: every layer may use it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Generic, NamedTuple, TypeVar

__all__ = ["LineSplitter", "Oversized", "ReplyTable"]

W = TypeVar("W")

KEPT = 4096  # bytes kept of each end of an over-long line (where its id is)
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


class LineSplitter:
    """Cut a byte stream into lines of at most ``max_line`` bytes.

    ``feed(data)`` returns what ``data`` completes, in order: each line (without its
    newline; blank ones too, the reader decides what they mean) as ``bytes``, and each
    line over the limit as an ``Oversized`` (its start, its end, its size) at the place
    it ended.  An over-long line is not kept: the rest of it is read and dropped, and
    then splitting goes on.  ``overflowing`` tells that an over-long line has begun and
    its end has not come yet (a reader that gives up on such a line need not wait for
    its end).

    The start of an unfinished line waits in a buffer; only the new piece is searched
    for the newline, so a long line arriving in many pieces costs no more than its
    length.
    """

    __slots__ = ("_head", "_partial", "_skipped", "_tail", "max_line")

    def __init__(self, max_line: int) -> None:
        self.max_line = max_line
        self._partial = bytearray()  # the start of a line whose end has not come yet
        self._skipped = 0  # bytes of an over-long line read and dropped so far (0: none)
        self._head = b""  # ... its first bytes
        self._tail = b""  # ... its last bytes

    @property
    def overflowing(self) -> bool:
        """Whether an over-long line has begun and not ended yet."""
        return self._skipped > 0

    @property
    def pending(self) -> int:
        """How many bytes of an unfinished line wait for its end."""
        return len(self._partial)

    def feed(self, data: bytes) -> Sequence[bytes | Oversized]:
        """The lines ``data`` completes (see the class)."""
        out: list[bytes | Oversized] = []
        if self._skipped:  # inside an over-long line: drop up to its end
            end = data.find(b"\n")
            self._skip(data if end < 0 else data[:end])
            if end < 0:
                return out
            out.append(self._ended())
            data = data[end + 1 :]
        elif self._partial:  # a line began in an earlier piece: only this one is searched
            end = data.find(b"\n")
            if end < 0:
                self._partial += data
                self._check_length()
                return out
            self._partial += data[:end]
            line, self._partial = bytes(self._partial), bytearray()
            data = data[end + 1 :]
            out.append(self._dropped(line) if len(line) > self.max_line else line)
        if not data:  # (the piece ended with the line begun earlier)
            return out
        lines = data.split(b"\n")
        rest = lines.pop()
        found: Sequence[bytes | Oversized] = lines
        if len(data) > self.max_line:  # (else no line in it can be over the limit)
            found = [self._dropped(line) if len(line) > self.max_line else line for line in lines]
        if out:
            out += found
            found = out
        if rest:
            self._partial += rest
            self._check_length()
        return found

    def _check_length(self) -> None:
        if len(self._partial) > self.max_line:
            partial, self._partial = bytes(self._partial), bytearray()
            self._skip(partial)

    def _skip(self, piece: bytes) -> None:
        """Drop ``piece`` of an over-long line, keeping its start and its end."""
        if not self._skipped:
            self._head = piece[:KEPT]
            self._tail = b""
        self._skipped += len(piece)
        self._tail = (self._tail + piece[-KEPT:])[-KEPT:]

    def _dropped(self, line: bytes) -> Oversized:
        """A whole line over the limit, found in one piece."""
        self._skip(line)
        return self._ended()

    def _ended(self) -> Oversized:
        """The over-long line has ended."""
        size, self._skipped = self._skipped, 0
        return Oversized(self._head, self._tail, size)


class ReplyTable(Generic[W]):
    """The requests in flight, by JSON-RPC id: who waits for each reply.

    A reply's id is looked up with ``take`` (an id that is neither an int nor a str,
    as a peer may send, never matches).  A request given up on (timed out, cancelled,
    failed) is ``abandon``-ed: its id is remembered (the last ``kept`` of them), so
    that its late reply is told from a reply to an id never sent (``is_late``).
    """

    __slots__ = ("_abandoned", "_kept", "_waiting")

    def __init__(self, kept: int = 1024) -> None:
        self._waiting: dict[int | str, W] = {}
        self._abandoned: dict[int | str, None] = {}
        self._kept = kept

    def __len__(self) -> int:
        return len(self._waiting)

    def __contains__(self, rid: object) -> bool:
        return rid in self._waiting

    def add(self, rid: int | str, waiter: W) -> None:
        """``waiter`` waits for the reply to ``rid``."""
        self._waiting[rid] = waiter

    def get(self, rid: int | str) -> W | None:
        """Who waits for ``rid`` (None: nobody), left in the table."""
        return self._waiting.get(rid)

    def take(self, rid: object) -> W | None:
        """Who waits for the reply ``rid`` (None: nobody), out of the table."""
        if type(rid) is int or type(rid) is str:
            return self._waiting.pop(rid, None)
        return None

    def abandon(self, rid: int | str) -> W | None:
        """Give up on ``rid``: who waited for it (None: nobody did any more)."""
        waiter = self._waiting.pop(rid, None)
        if waiter is not None:
            self._remember(rid)
        return waiter

    def is_late(self, rid: object) -> bool:
        """Whether ``rid`` was given up on (its reply comes too late)."""
        return (type(rid) is int or type(rid) is str) and rid in self._abandoned

    def drain(self) -> list[tuple[int | str, W]]:
        """Give up on every request: (id, who waited) of each, the table left empty."""
        drained = list(self._waiting.items())
        self._waiting.clear()
        for rid, _ in drained:
            self._remember(rid)
        return drained

    def _remember(self, rid: int | str) -> None:
        self._abandoned[rid] = None
        if len(self._abandoned) > self._kept:
            del self._abandoned[next(iter(self._abandoned))]
