"""Plain HTTP/1.1 for the HTTP raw lane: keep-alive connections on anyio sockets.

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

import contextlib
import urllib.request
from collections.abc import Iterable
from urllib.parse import urlsplit

import anyio
import anyio.abc

__all__ = ["BadResponse", "Connection", "EventReader", "RawHttp", "Response"]

READ_SIZE = 1 << 16
READ_TIMEOUT = 300.0  # s: one read (as the lane's httpx2 client: a silent server fails)
CONNECT_TIMEOUT = 30.0  # s
MAX_HEAD = 1 << 16  # bytes: the status line and the headers of a response
MAX_LINE = 1 << 12  # bytes: a chunk-size line
MAX_IDLE = 8  # connections kept for the next calls


class BadResponse(Exception):
    """The server's bytes are not an HTTP/1.1 response this reader understands."""


class Connection:
    """One kept-alive connection: a socket stream and the bytes read ahead."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.buffer = b""
        self.received = False  # a byte of the current response arrived

    async def _fill(self) -> None:
        """Read more bytes into the buffer.

        Raises:
            anyio.EndOfStream: the server closed the connection.
            TimeoutError: nothing arrived in READ_TIMEOUT s.
        """
        with anyio.fail_after(READ_TIMEOUT):
            chunk = await self.stream.receive(READ_SIZE)
        self.buffer += chunk
        self.received = True

    async def read_until(self, delimiter: bytes, limit: int) -> bytes:
        """The bytes before ``delimiter`` (which is consumed).

        Raises:
            BadResponse: no delimiter within ``limit`` bytes.
        """
        start = 0
        while True:
            at = self.buffer.find(delimiter, start)
            if at >= 0:
                data, self.buffer = self.buffer[:at], self.buffer[at + len(delimiter) :]
                return data
            if len(self.buffer) > limit:
                raise BadResponse(f"no {delimiter!r} within {limit} bytes")
            start = max(0, len(self.buffer) - len(delimiter) + 1)
            await self._fill()

    async def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            await self._fill()
        data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data

    async def read_some(self, limit: int) -> bytes:
        """Up to ``limit`` bytes (at least one)."""
        if not self.buffer:
            await self._fill()
        data, self.buffer = self.buffer[:limit], self.buffer[limit:]
        return data

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await self.stream.aclose()


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

    async def read(self, limit: int) -> bytes:
        """The whole (remaining) body.

        Raises:
            BadResponse: it is longer than ``limit`` bytes, or malformed.
        """
        parts: list[bytes] = []
        size = 0
        while (chunk := await self.next_chunk()) is not None:
            parts.append(chunk)
            size += len(chunk)
            if size > limit:
                raise BadResponse(f"a body over {limit} bytes")
        return b"".join(parts)


class EventReader:
    """The data of the events of an event stream (``text/event-stream``), one at a time.

    Events whose data is empty are skipped; comments, ``event``, ``id`` and ``retry``
    fields are read and left out.
    """

    def __init__(self, response: Response) -> None:
        self.response = response
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
        for block in blocks:
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
        headers: sent with every request (the lane's client's own), before the
            request's; ``host``, ``content-length`` and ``accept-encoding`` are set here.
    """

    def __init__(self, url: str, headers: Iterable[tuple[str, str]]) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        target = parts.path or "/"
        if parts.query:
            target += "?" + parts.query
        authority = parts.netloc.rsplit("@", 1)[-1]
        skip = {"host", "content-length", "accept-encoding", "transfer-encoding"}
        fixed = [f"POST {target} HTTP/1.1", f"host: {authority}", "accept-encoding: identity"]
        fixed += [f"{name}: {value}" for name, value in headers if name.lower() not in skip]
        self._head = "\r\n".join(fixed).encode("latin-1")
        self._idle: list[Connection] = []
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

    def request_bytes(self, headers: dict[str, str], body: bytes) -> bytes:
        """The whole request: the fixed head, ``headers``, the length, ``body``."""
        extra = "".join(f"\r\n{name}: {value}" for name, value in headers.items())
        return b"".join(
            (
                self._head,
                extra.encode("latin-1"),
                b"\r\ncontent-length: ",
                str(len(body)).encode(),
                b"\r\n\r\n",
                body,
            )
        )

    async def _connect(self) -> Connection:
        with anyio.fail_after(CONNECT_TIMEOUT):
            stream = await anyio.connect_tcp(self.host, self.port)
        self.connects += 1
        return Connection(stream)

    async def send(self, data: bytes) -> Response:
        """Send a whole request; its response's head (read the body from it).

        A kept-alive connection the server closed meanwhile (before any byte of the
        response) is replaced once by a new one.

        Raises:
            OSError, anyio.EndOfStream, anyio.BrokenResourceError, TimeoutError:
                the connection failed.
            BadResponse: the response is not one this reader understands.
        """
        connection = self._idle.pop() if self._idle else None
        if connection is not None:
            try:
                return await self._exchange(connection, data)
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                if connection.received:
                    raise
            except OSError:  # a reset: the same
                if connection.received:
                    raise
        return await self._exchange(await self._connect(), data)

    async def _exchange(self, connection: Connection, data: bytes) -> Response:
        """Send ``data`` on ``connection``; the response's head (closed on failure)."""
        connection.received = False
        try:
            await connection.stream.send(data)
            head = await connection.read_until(b"\r\n\r\n", MAX_HEAD)
            status, headers, cookies = _parse_head(head)
            while status == 100:  # "continue": the real response follows
                head = await connection.read_until(b"\r\n\r\n", MAX_HEAD)
                status, headers, cookies = _parse_head(head)
            return Response(connection, status, headers, cookies)
        except BaseException:
            await connection.aclose()
            raise

    async def release(self, response: Response) -> None:
        """Keep the response's connection for the next request if its body was read to
        its end and the server keeps it open; else close it."""
        connection = response.connection
        keep = response.reusable and not connection.buffer and not self._closed
        if keep and len(self._idle) < MAX_IDLE:
            response.reusable = False  # released once
            self._idle.append(connection)
        else:
            await connection.aclose()

    async def aclose(self) -> None:
        """Close the kept connections (and, from now on, every released one)."""
        self._closed = True
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.aclose()
