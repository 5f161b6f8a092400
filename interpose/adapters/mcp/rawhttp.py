"""Plain HTTP/1.1 for the HTTP raw lane: kept-alive connections, read by hand.

A tool call relayed over HTTP is one small POST and one small answer (JSON, or a short
event stream).  Through ``httpx2`` that costs the proxy more CPU than the upstream
server spends on the call itself (URL and header models, the connection pool, h11's
state machine, the event-stream decoder): on a loaded machine every process competes
for the same cores, so that CPU is the proxy's overhead.  ``RawHttp`` writes the
request's bytes in one send on a kept-alive connection and reads the status line,
the headers and the body (``Content-Length``, chunked, or up to the close) itself;
``EventReader`` splits an event stream into its events' data.

Only plain ``http://`` URLs without a proxy are served here (``RawHttp.serves``); the
lane uses ``httpx2`` for everything else.
"""

from __future__ import annotations

import asyncio
import urllib.request
from collections.abc import Iterable
from typing import cast
from urllib.parse import urlsplit

import anyio
import anyio.lowlevel

__all__ = ["BadResponse", "Connection", "EventReader", "RawHttp", "Response"]

READ_SIZE = 1 << 16
READ_TIMEOUT = 300.0  # s: one read (as the lane's httpx2 client: a silent server fails)
CONNECT_TIMEOUT = 30.0  # s
MAX_HEAD = 1 << 16  # bytes: the status line and the headers of a response
MAX_LINE = 1 << 12  # bytes: a chunk-size line
MAX_IDLE = 8  # connections kept for the next calls (and as many being drained)
MAX_BUFFER = 1 << 20  # bytes read ahead before the socket is left unread
DRAIN_TIMEOUT = 1.0  # s: an answered response's end, before its connection is dropped
# headers a request sets itself (``head``): the client's defaults give way
PER_CALL = frozenset(
    ("accept", "content-type", "mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name")
)


class TooLarge(Exception):
    """A body or an event over the size limit (``size``: the bytes read so far)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"at least {size} bytes, over the limit of {limit}")
        self.size = size
        self.limit = limit


class BadResponse(Exception):
    """The server's bytes are not an HTTP/1.1 response this reader understands."""


class Connection(asyncio.Protocol):
    """One kept-alive connection: an asyncio protocol that gathers what arrives.

    A plain protocol rather than an anyio socket stream: that one stops and restarts
    reading the socket around every read, two ``epoll`` changes a time, and each read
    here would also need its own timeout scope; here a read waits on one future with
    one timer.  Bytes that arrive while nobody reads are kept (up to MAX_BUFFER, then
    the socket is not read until they are), and a response being drained
    (``draining``) is read to its end as its bytes arrive.
    """

    def __init__(self, pool: RawHttp) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.received = False  # a byte of the current response arrived
        self.closed = False  # the server closed it, or it broke
        self.error: BaseException | None = None
        self.draining: Response | None = None  # answered: read to its end, then kept
        self.drain_until = 0.0  # loop time: a drain not over by then closes it
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    # -- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports do not derive from asyncio's classes: no isinstance)
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > MAX_BUFFER and not self._paused and self.transport is not None:
            self.transport.pause_reading()
            self._paused = True
        if self.draining is not None:
            self.pool.drained(self)
        self._wake()

    def eof_received(self) -> bool | None:
        self.closed = True
        if self.draining is not None:
            self.pool.drained(self)
        self._wake()
        return None  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.error = exc
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- reading -------------------------------------------------------------------------

    async def _fill(self) -> None:
        """Wait for more bytes (at most READ_TIMEOUT s).

        Raises:
            anyio.EndOfStream: the server closed the connection.
            anyio.BrokenResourceError: it broke (a reset).
            TimeoutError: nothing arrived in READ_TIMEOUT s.
        """
        size = len(self.buffer)
        if self._paused and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        while len(self.buffer) == size:
            if self.closed:
                if self.error is not None:
                    raise anyio.BrokenResourceError(str(self.error)) from self.error
                raise anyio.EndOfStream
            loop = asyncio.get_running_loop()
            waiter = self._waiter = loop.create_future()
            timer = loop.call_later(READ_TIMEOUT, _expire, waiter)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None
        self.received = True

    def take(self, size: int) -> bytes:
        """The first ``size`` bytes of the buffer (removed from it)."""
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    async def read_until(self, delimiter: bytes, limit: int) -> bytes:
        """The bytes before ``delimiter`` (which is consumed).

        Raises:
            BadResponse: no delimiter within ``limit`` bytes.
        """
        start = 0
        while True:
            at = self.buffer.find(delimiter, start)
            if at >= 0:
                data = self.take(at)
                del self.buffer[: len(delimiter)]
                return data
            if len(self.buffer) > limit:
                raise BadResponse(f"no {delimiter!r} within {limit} bytes")
            start = max(0, len(self.buffer) - len(delimiter) + 1)
            await self._fill()

    async def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            await self._fill()
        return self.take(size)

    async def read_some(self, limit: int) -> bytes:
        """Up to ``limit`` bytes (at least one)."""
        if not self.buffer:
            await self._fill()
        return self.take(limit)

    def send(self, data: bytes) -> None:
        """Write ``data`` (the transport sends what the socket does not take at once).

        Raises:
            anyio.BrokenResourceError: the connection is closed.
        """
        if self.closed or self.transport is None or self.transport.is_closing():
            raise anyio.BrokenResourceError("the connection is closed")
        self.transport.write(data)

    def consumed(self) -> None:
        """Bytes were taken from the buffer outside a read: read the socket again."""
        if self._paused and len(self.buffer) <= MAX_BUFFER and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()

    def close(self) -> None:
        self.closed = True
        self.draining = None
        if self.transport is not None:
            self.transport.close()


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError(f"nothing read in {READ_TIMEOUT} s"))


class Response:
    """A response's status and headers; its body is read with ``next_chunk``.

    Attributes:
        status: the status code.
        headers: lower-case names; a repeated header's values joined with ``, ``
            (but ``set-cookie``).
        cookies: the ``set-cookie`` values.
        reusable: the body was read to its end and the connection stays open.
    """

    def __init__(
        self,
        connection: Connection,
        status: int,
        headers: dict[str, str],
        cookies: list[str] | None = None,
    ) -> None:
        self.connection = connection
        self.status = status
        self.headers = headers
        self.cookies = cookies or []
        self.done = False
        self.reusable = False
        encoding = headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        self._keep = "close" not in headers.get("connection", "").lower()
        self._chunked = encoding.endswith("chunked")
        self._left: int | None = None
        if encoding and not self._chunked:
            raise BadResponse(f"transfer-encoding {encoding!r}")
        if headers.get("content-encoding", "identity").lower() != "identity":
            raise BadResponse(f"content-encoding {headers['content-encoding']!r}")
        if self._chunked:
            pass
        elif length is not None:
            if not length.strip().isdigit():
                raise BadResponse(f"content-length {length!r}")
            self._left = int(length)
        elif status in (204, 304) or 100 <= status < 200:
            self._left = 0
        else:
            self._keep = False  # the body ends when the connection does
        if self._left == 0:
            self._end()

    def _end(self) -> None:
        self.done = True
        self.reusable = self._keep

    async def next_chunk(self) -> bytes | None:
        """The next bytes of the body; None at its end.

        Raises:
            BadResponse: a malformed chunk.
            anyio.EndOfStream: the connection closed before the body's end.
        """
        if self.done:
            return None
        connection = self.connection
        if self._chunked:
            while True:
                line = await connection.read_until(b"\r\n", MAX_LINE)
                size_text = line.split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise BadResponse(f"chunk size {size_text[:20]!r}") from None
                if size == 0:
                    while await connection.read_until(b"\r\n", MAX_HEAD):
                        pass  # trailers: ignored
                    self._end()
                    return None
                data = await connection.read_exactly(size + 2)
                if data[-2:] != b"\r\n":
                    raise BadResponse("a chunk does not end with CRLF")
                return data[:-2]
        if self._left is None:  # up to the close
            try:
                return await connection.read_some(READ_SIZE)
            except anyio.EndOfStream:
                self._end()
                return None
        data = await connection.read_some(self._left)
        self._left -= len(data)
        if not self._left:
            self._end()
        return data

    def skip_buffered(self) -> bool:
        """Consume the part of the body that has arrived (without waiting); True: the
        body has ended.

        Raises:
            BadResponse: a malformed chunk.
        """
        if self.done:
            return True
        connection = self.connection
        buffer = connection.buffer
        if self._chunked:
            while True:
                at = buffer.find(b"\r\n")
                if at < 0:
                    if len(buffer) > MAX_LINE:
                        raise BadResponse("a chunk-size line too long")
                    return False
                size_text = bytes(buffer[:at]).split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise BadResponse(f"chunk size {size_text[:20]!r}") from None
                if size == 0:
                    end = buffer.find(b"\r\n\r\n", at)  # after the trailers, if any
                    if end < 0:
                        return False
                    del buffer[: end + 4]
                    self._end()
                    return True
                need = at + 2 + size + 2
                if len(buffer) < need:
                    return False
                if buffer[need - 2 : need] != b"\r\n":
                    raise BadResponse("a chunk does not end with CRLF")
                del buffer[:need]
        if self._left is None:  # up to the close
            del buffer[:]
            if connection.closed:
                self._end()
            return connection.closed
        taken = min(self._left, len(buffer))
        del buffer[:taken]
        self._left -= taken
        if not self._left:
            self._end()
        return self.done

    async def read(self, limit: int) -> bytes:
        """The whole (remaining) body.

        Raises:
            TooLarge: it is longer than ``limit`` bytes.
            BadResponse: it is malformed.
        """
        parts: list[bytes] = []
        size = 0
        while (chunk := await self.next_chunk()) is not None:
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                raise TooLarge(size, limit)
        return b"".join(parts)


class EventReader:
    """The data of the events of an event stream (``text/event-stream``), one at a time.

    Events whose data is empty are skipped; comments, ``event``, ``id`` and ``retry``
    fields are read and left out.  An event over ``limit`` bytes raises ``TooLarge``.
    """

    def __init__(self, response: Response, limit: int = 1 << 28) -> None:
        self.response = response
        self.limit = limit
        self._pending = b""
        self._events: list[bytes] = []
        self._ended = False

    async def next(self) -> bytes | None:
        """The next event's data (UTF-8 bytes); None at the end of the stream."""
        while not self._events:
            if self._ended:
                return None
            chunk = await self.response.next_chunk()
            if chunk is None:  # an unterminated last event is dropped (as the spec says)
                self._ended = True
                self._pending = b""
                continue
            self._split(chunk)
        return self._events.pop(0)

    def _split(self, chunk: bytes) -> None:
        text = self._pending + chunk
        hold = b""
        if text.endswith(b"\r"):  # its "\n" may come with the next chunk
            text, hold = text[:-1], b"\r"
        text = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        *blocks, rest = text.split(b"\n\n")
        self._pending = rest + hold
        if len(self._pending) > self.limit:
            raise TooLarge(len(self._pending), self.limit)
        for block in blocks:
            if len(block) > self.limit:
                raise TooLarge(len(block), self.limit)
            data = _data_of(block.split(b"\n"))
            if data:
                self._events.append(data)


def _data_of(lines: Iterable[bytes]) -> bytes:
    parts: list[bytes] = []
    for line in lines:
        if line.startswith(b"data"):
            name, _, value = line.partition(b":")
            if name != b"data":
                continue
            parts.append(value[1:] if value.startswith(b" ") else value)
    return b"\n".join(parts)


def _parse_head(head: bytes) -> tuple[int, dict[str, str], list[str]]:
    """The status code, the headers and the ``set-cookie`` values of a response head.

    Raises:
        BadResponse: it is not an HTTP/1.x status line with headers.
    """
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise BadResponse(f"status line {lines[0][:60]!r}")
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name != name.strip():
            raise BadResponse(f"header line {line[:60]!r}")
        key = name.decode("latin-1").lower()
        text = value.strip().decode("latin-1")
        if key == "set-cookie":
            cookies.append(text)
        else:
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
    return int(parts[1]), headers, cookies


class RawHttp:
    """POSTs to one ``http://`` URL on kept-alive connections (at most MAX_IDLE idle).

    Args:
        url: the server's URL.
        headers: sent with every request (the lane's client's own, those of the
            configuration among them), but those named in PER_CALL, which each
            request sets itself; ``host``, ``content-length`` and ``accept-encoding``
            are set here.
    """

    def __init__(self, url: str, headers: Iterable[tuple[str, str]]) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        authority = parts.netloc.rsplit("@", 1)[-1]
        skip = {"host", "content-length", "accept-encoding", "transfer-encoding", *PER_CALL}
        fixed = [f"POST {target} HTTP/1.1", f"host: {authority}", "accept-encoding: identity"]
        fixed += [f"{name}: {value}" for name, value in headers if name.lower() not in skip]
        self._head = "\r\n".join(fixed).encode("latin-1")
        self._idle: list[Connection] = []
        self._draining: list[Connection] = []  # answered, their bodies' ends to come
        self._closed = False
        self.connects = 0

    @staticmethod
    def serves(url: str) -> bool:
        """Whether ``url`` is plain HTTP that no proxy of the environment applies to."""
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname or parts.username:
            return False
        proxies = urllib.request.getproxies_environment()
        if not any(key in proxies for key in ("http", "all")):
            return True
        return bool(urllib.request.proxy_bypass(parts.hostname))

    def head(self, headers: dict[str, str]) -> bytes:
        """A request's bytes up to its length: the fixed head, then ``headers``."""
        extra = "".join(f"\r\n{name}: {value}" for name, value in headers.items())
        return b"".join((self._head, extra.encode("latin-1"), b"\r\ncontent-length: "))

    @staticmethod
    def request(head: bytes, body: bytes) -> bytes:
        """The whole request: ``head`` (from ``head()``), the length, ``body``."""
        return b"".join((head, str(len(body)).encode(), b"\r\n\r\n", body))

    def request_bytes(self, headers: dict[str, str], body: bytes) -> bytes:
        """The whole request: the fixed head, ``headers``, the length, ``body``."""
        return self.request(self.head(headers), body)

    async def _connect(self) -> Connection:
        loop = asyncio.get_running_loop()
        with anyio.fail_after(CONNECT_TIMEOUT):
            _, connection = await loop.create_connection(
                lambda: Connection(self), self.host, self.port
            )
        self.connects += 1
        return connection

    def _idle_one(self) -> Connection | None:
        """A kept connection (those whose drain is over its time are closed first)."""
        if self._draining:
            now = asyncio.get_running_loop().time()
            for connection in [c for c in self._draining if c.drain_until < now]:
                self._draining.remove(connection)
                connection.close()
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:  # (the server may have closed it meanwhile)
                return connection
            connection.close()
        return None

    async def send(self, data: bytes) -> Response:
        """Send a whole request; its response's head (read the body from it).

        A kept-alive connection the server closed meanwhile (before any byte of the
        response) is replaced once by a new one.

        Raises:
            OSError, anyio.EndOfStream, anyio.BrokenResourceError, TimeoutError:
                the connection failed.
            BadResponse: the response is not one this reader understands.
        """
        connection = self._idle_one()
        if connection is not None:
            try:
                return await self._exchange(connection, data)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                if connection.received:
                    raise
        return await self._exchange(await self._connect(), data)

    async def _exchange(self, connection: Connection, data: bytes) -> Response:
        """Send ``data`` on ``connection``; the response's head (closed on failure)."""
        connection.received = False
        try:
            connection.send(data)
            head = await connection.read_until(b"\r\n\r\n", MAX_HEAD)
            status, headers, cookies = _parse_head(head)
            while status == 100:  # "continue": the real response follows
                head = await connection.read_until(b"\r\n\r\n", MAX_HEAD)
                status, headers, cookies = _parse_head(head)
            return Response(connection, status, headers, cookies)
        except BaseException:
            connection.close()
            raise

    def release(self, response: Response) -> None:
        """Keep the response's connection for the next request if its body was read to
        its end and the server keeps it open; else close it."""
        connection = response.connection
        keep = response.reusable and not connection.buffer and not connection.closed
        response.reusable = False  # released once
        if keep and not self._closed and len(self._idle) < MAX_IDLE:
            connection.draining = None
            self._idle.append(connection)
        else:
            connection.close()

    def finish(self, response: Response) -> None:
        """The caller has its answer: keep the connection once the rest of the body has
        arrived (read as it arrives, for at most DRAIN_TIMEOUT s)."""
        connection = response.connection
        try:
            ended = response.skip_buffered()
        except BadResponse:
            connection.close()
            return
        connection.consumed()
        if ended or connection.closed:
            self.release(response)
        elif self._closed or len(self._draining) >= MAX_IDLE:
            connection.close()
        else:
            connection.draining = response
            connection.drain_until = asyncio.get_running_loop().time() + DRAIN_TIMEOUT
            self._draining.append(connection)

    def drained(self, connection: Connection) -> None:
        """More of a drained response arrived (``Connection`` calls this)."""
        response = connection.draining
        assert response is not None
        try:
            ended: bool | None = response.skip_buffered()
        except BadResponse:
            ended = None
        connection.consumed()
        if ended is False and not connection.closed:
            return
        connection.draining = None
        if connection in self._draining:
            self._draining.remove(connection)
        if ended:
            self.release(response)
        else:
            connection.close()

    async def aclose(self) -> None:
        """Close the kept connections (and, from now on, every released one)."""
        self._closed = True
        kept, self._idle, self._draining = [*self._idle, *self._draining], [], []
        for connection in kept:
            connection.close()
        await anyio.lowlevel.checkpoint()  # their transports close on the next loop turn
