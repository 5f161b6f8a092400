"""A stdio upstream's process and pipes, with a raw lane for ``tools/call``.

``UpstreamPipe`` is the transport of the SDK ``Client`` that talks to a stdio upstream
(the handshake, listings, resources, notifications, the server's own requests: all as
the SDK's stdio transport would carry them), and it also sends the proxy's tool calls
itself: the request is written to the server's stdin from the caller's task, the
response line is matched by its id as soon as it is read and handed to the waiting
caller as the JSON object the server sent.  Neither goes through a model, a memory
stream or the client's dispatcher.

Ids of the raw lane are strings (``interpose-1``...) and the SDK's are integers: the
two never collide.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shlex
import signal
from collections.abc import AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import Any, NamedTuple

import anyio
import anyio.abc
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_REQUEST, REQUEST_TIMEOUT

from ..._jsonlines import ReplyTable
from .lines import Inbox, LineProtocol, Oversized
from .messages import (
    asking_progress,
    cancelled,
    error_answer,
    forward,
    hand_over,
    result_of,
    too_long,
)
from .rawhttp import BadResponse, EventReader, RawHttp, TooLarge

try:  # trio requires sniffio: without it, asyncio is the one event loop anyio runs on
    from sniffio import current_async_library
except ImportError:  # pragma: no cover - an install without trio

    def current_async_library() -> str:
        return "asyncio"


__all__ = ["UpstreamPipe"]

log = logging.getLogger("interpose.mcp")

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]
Streams = tuple[
    MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]
]

STOP_TIMEOUT = 2.0  # s: after stdin closes, before the process group is terminated
KILL_TIMEOUT = 2.0  # s: after SIGTERM, before SIGKILL
MAX_MESSAGE = 16 << 20  # bytes: one JSON-RPC message, by default ([mcp] max_message_bytes)
STDERR_TAIL = 2048  # bytes of the server's stderr kept, to say why it stopped
EXIT_WAIT = 1.0  # s: how long a failed call waits for the server's exit status
INBOX_LIMIT = 16  # the server's messages waiting for the SDK client before its stdout pauses
DRAIN_TIMEOUT = 1.0  # s: an HTTP answer's stream, read to its end after the answer
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode
_CLOSED = {"error": {"code": CONNECTION_CLOSED, "message": "Connection closed"}}


class StderrTail(asyncio.Protocol):
    """The server's stderr: passed on to the proxy's own stderr as it comes, and its
    last ``STDERR_TAIL`` bytes kept (what an error says of why the server stopped)."""

    def __init__(self) -> None:
        self.tail = b""
        self.closed = asyncio.get_running_loop().create_future()

    def data_received(self, data: bytes) -> None:
        self.tail = (self.tail + data)[-STDERR_TAIL:]
        with contextlib.suppress(OSError):  # (blocking, as the proxy's own log lines are)
            view = memoryview(data)
            while view:
                view = view[os.write(2, view) :]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)

    def last_lines(self, count: int = 5) -> str:
        """The last ``count`` non-blank lines, joined with `` | ``."""
        lines = [
            line.strip() for line in self.tail.decode(errors="replace").splitlines() if line.strip()
        ]
        return " | ".join(lines[-count:])


class UpstreamPipe:
    """One run of a stdio upstream server (a transport: ``Client(UpstreamPipe(...))``).

    The server's stdin and stdout are pipes of the proxy's own, on asyncio's event loop:
    a request is written from the caller's task with no await, and a response line is
    matched by its id inside ``data_received`` and resolves the caller's future; lines
    that need an ``await`` (the SDK client's messages, progress reports) are handled in
    order by one task.

    A response line over ``max_message`` bytes fails the call it answers (an error that
    says the limit); progress notifications are passed on only for a call in flight
    that asked for them (the others are dropped and counted in ``dropped_progress``).

    Args:
        params: the command, its arguments, environment and working directory; the
            server inherits only the SDK's default environment plus ``params.env``.
        name: the server's name, in errors.
        max_message: the longest line read from the server, in bytes.
    """

    def __init__(
        self, params: StdioServerParameters, name: str = "", max_message: int = MAX_MESSAGE
    ) -> None:
        self.params = params
        self.name = name or params.command
        self.max_message = max_message
        self.command = shlex.join([params.command, *params.args])
        self.start_error: str | None = None  # why the process could not be started
        self.dropped_progress = 0
        self.ended = False  # the server closed its stdout (it exited, most likely)
        self._stopping = False  # the proxy is stopping it (an EOF then is ours)
        self._stderr: StderrTail | None = None
        self._process: anyio.abc.Process | None = None
        self._stdin: asyncio.StreamWriter | None = None
        self._inbox: Inbox | None = None
        # the raw lane's calls in flight, by their (string) id
        self._pending: ReplyTable[asyncio.Future[dict[str, Any]]] = ReplyTable()
        self._progress: dict[str, ProgressFn] = {}
        self._count = 0
        self._exit: contextlib.AbstractAsyncContextManager[Streams] | None = None

    # -- the transport ----------------------------------------------------------------------

    async def __aenter__(self) -> Streams:
        self._exit = self._open()
        return await self._exit.__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._exit is not None
        return await self._exit.__aexit__(exc_type, exc, tb)

    @contextlib.asynccontextmanager
    async def _open(self) -> AsyncIterator[Streams]:
        params = self.params
        loop = asyncio.get_running_loop()
        stdin_child, stdin_ours = os.pipe2(os.O_CLOEXEC)
        stdout_ours, stdout_child = os.pipe2(os.O_CLOEXEC)
        stderr_ours, stderr_child = os.pipe2(os.O_CLOEXEC)
        try:
            process = await anyio.open_process(
                [params.command, *params.args],
                stdin=stdin_child,
                stdout=stdout_child,
                stderr=stderr_child,  # passed on to the proxy's stderr by StderrTail
                env=get_default_environment() | (params.env or {}),
                cwd=params.cwd,
                start_new_session=True,  # its own process group: stopped as a whole
            )
        except BaseException as exc:
            for fd in (stdin_ours, stdout_ours, stderr_ours):
                os.close(fd)
            if isinstance(exc, OSError):
                self.start_error = self._cannot_start(exc)
            raise
        finally:
            for fd in (stdin_child, stdout_child, stderr_child):
                os.close(fd)
        self._process = process
        stderr, self._stderr = await loop.connect_read_pipe(
            StderrTail, os.fdopen(stderr_ours, "rb", buffering=0)
        )
        to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        client_writes, from_client = anyio.create_memory_object_stream[SessionMessage](0)
        inbox = self._inbox = Inbox(functools.partial(self._dispatch, to_client), INBOX_LIMIT)
        name = f"upstream {params.command}"
        reading, _ = await loop.connect_read_pipe(
            lambda: LineProtocol(
                self._on_line,
                inbox.end,
                max_line=self.max_message,
                name=name,
                on_too_long=self._too_long,
            ),
            os.fdopen(stdout_ours, "rb", buffering=0),
        )
        inbox.transport = reading
        writing, flow = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(stdin_ours, "wb", buffering=0)
        )
        self._stdin = asyncio.StreamWriter(writing, flow, None, loop)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._pump, inbox, to_client)
                tg.start_soon(self._write, from_client)
                try:
                    yield client_reads, client_writes
                finally:
                    with anyio.CancelScope(shield=True):
                        self._fail_pending()
                        await self._stop(process, writing)
                    tg.cancel_scope.cancel()
                    client_reads.close()
                    client_writes.close()
        finally:
            writing.close()
            reading.close()
            stderr.close()

    def _on_line(self, line: bytes) -> None:
        """A line of the server's: a response to a raw-lane call with nothing queued
        before it is handed to its caller here; anything else goes to the inbox."""
        inbox = self._inbox
        assert inbox is not None
        try:
            message = _decode(line)
        except msgspec.DecodeError as exc:
            log.warning("upstream %s: not JSON: %r", self.params.command, line[:200])
            inbox.put(exc)
            return
        # (a busy inbox keeps the order: an answer waits its turn there)
        if (inbox or not self._answered(message)) and not self._stray_progress(message):
            inbox.put(message)

    def _stray_progress(self, message: Any) -> bool:
        """Whether ``message`` is progress for no call in flight that asked for it
        (a token the proxy never sent, a call already answered): dropped, counted."""
        if not (isinstance(message, dict) and message.get("method") == "notifications/progress"):
            return False
        params = message.get("params")
        token = params.get("progressToken") if isinstance(params, dict) else None
        if isinstance(token, str) and token in self._progress:
            return False
        self.dropped_progress += 1
        if self.dropped_progress == 1:
            log.warning(
                "upstream %r: progress for a token no call in flight asked for (%r): "
                "dropped (and any more such)",
                self.name,
                token,
            )
        return True

    def _too_long(self, over: Oversized) -> None:
        """A line of the server's over the limit: the call it answers fails with an
        error that says so; a request of the server's is refused."""
        request_id, is_request = over.identify()
        reason = too_long(f"upstream MCP server {self.name!r} sent", over.size, self.max_message)
        if request_id is None:
            return  # a notification (or no id to be found): logged by LineProtocol
        if is_request:  # the server's own request (sampling...): it gets the error
            if self._stdin is not None and not self._stdin.is_closing():
                refusal = error_answer(request_id, INVALID_REQUEST, reason)
                self._stdin.write(_encode(refusal) + b"\n")
            return
        self._on_message(error_answer(request_id, INTERNAL_ERROR, reason))

    def _on_message(self, message: Any) -> None:
        assert self._inbox is not None
        if self._inbox or not self._answered(message):
            self._inbox.put(message)

    def _answered(self, message: Any) -> bool:
        """Hand ``message`` to its raw-lane caller if it is the answer one waits for
        (its progress ends here: what comes after the answer is dropped)."""
        if not (
            isinstance(message, dict)
            and "method" not in message
            and hand_over(self._pending, message)
        ):
            return False
        if self._progress:
            self._progress.pop(message["id"], None)  # (a string: it had a waiter)
        return True

    async def _pump(
        self, inbox: Inbox, to_client: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        async with to_client:
            try:
                await inbox.pump()
                self.ended = not self._stopping
            finally:
                self._fail_pending()  # the server's stdout is closed: nothing more comes

    async def _dispatch(
        self, to_client: MemoryObjectSendStream[SessionMessage | Exception], message: Any
    ) -> None:
        """Handle one message of the server's, in order (a task: it may wait)."""
        if self._answered(message):
            return
        if isinstance(message, dict) and message.get("method") == "notifications/progress":
            params = message.get("params")
            token = params.get("progressToken") if isinstance(params, dict) else None
            report = self._progress.get(token) if isinstance(token, str) else None
            if report is not None:  # (else: its call has ended meanwhile: dropped)
                assert isinstance(params, dict)
                try:
                    await report(params["progress"], params.get("total"), params.get("message"))
                except Exception:
                    log.exception("progress of %s", token)
            return
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            await forward(message, to_client)  # (a line that was not JSON: as its error)

    async def _write(self, from_client: MemoryObjectReceiveStream[SessionMessage]) -> None:
        stdin = self._stdin
        assert stdin is not None
        async with from_client:
            async for item in from_client:
                data = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    stdin.write(data.encode() + b"\n")
                    await stdin.drain()
                except (ConnectionError, RuntimeError):  # the server closed its stdin
                    return

    def _cannot_start(self, exc: OSError) -> str:
        if isinstance(exc, FileNotFoundError):
            where = "on PATH" if os.sep not in self.params.command else ""
            if self.params.cwd is not None and not os.path.isdir(self.params.cwd):
                return f"cannot start `{self.command}`: no directory {self.params.cwd}"
            return f"cannot start `{self.command}`: {self.params.command} not found {where}".strip()
        if isinstance(exc, PermissionError):
            return f"cannot start `{self.command}`: permission denied (is it executable?)"
        return f"cannot start `{self.command}`: {exc.strerror or exc}"

    async def why_closed(self, when: str) -> str:
        """Why the connection is gone: the process could not start, or how it ended
        (``when``: "before answering initialize", "during the call"...), waiting up to
        EXIT_WAIT s for its exit status, and the end of its stderr."""
        if self.start_error is not None:
            return self.start_error
        process = self._process
        if process is None:
            return "not started"
        if process.returncode is None:
            with anyio.move_on_after(EXIT_WAIT):
                await process.wait()
        code = process.returncode
        if code is None:
            how = "closed its stdout"
        elif code < 0:
            how = f"was killed by signal {-code} ({_signal_name(-code)})"
        else:
            how = f"exited with status {code}"
        if self._stderr is not None:
            with anyio.move_on_after(0.2):  # what it wrote before it ended
                await asyncio.shield(self._stderr.closed)
        return f"`{self.command}` {how} {when}{self.stderr_said()}"

    def stderr_said(self) -> str:
        """``; its stderr ends: <its last lines>`` (or that it was empty)."""
        if self._stderr is None:
            return ""
        tail = self._stderr.last_lines()
        return f"; its stderr ends: {tail}" if tail else "; its stderr was empty"

    def _fail_pending(self) -> None:
        for _, waiter in self._pending.drain():
            if not waiter.done():
                waiter.set_result(_CLOSED)

    async def _stop(self, process: anyio.abc.Process, stdin: asyncio.WriteTransport) -> None:
        """Close stdin, give it STOP_TIMEOUT s, then terminate its process group."""
        self._stopping = True
        stdin.close()
        with anyio.move_on_after(STOP_TIMEOUT):
            await process.wait()
        for sig, wait in ((signal.SIGTERM, KILL_TIMEOUT), (signal.SIGKILL, KILL_TIMEOUT)):
            if process.returncode is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
            with anyio.move_on_after(wait):
                await process.wait()

    # -- the raw lane ----------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any],
        *,
        read_timeout: float | None = None,
        progress: ProgressFn | None = None,
    ) -> dict[str, Any]:
        """Send a request and wait for its result, as JSON.

        A timeout or a cancellation tells the server (``notifications/cancelled``).

        Raises:
            MCPError: the server's error; ``REQUEST_TIMEOUT`` after ``read_timeout`` s;
                ``CONNECTION_CLOSED`` when the server is gone.
        """
        process, stdin = self._process, self._stdin
        if stdin is None or stdin.is_closing() or process is None or process.returncode is not None:
            raise MCPError(CONNECTION_CLOSED, "Connection closed")
        self._count += 1
        request_id = f"interpose-{self._count}"
        if progress is not None:
            params = asking_progress(params, request_id)
            self._progress[request_id] = progress
        waiter = asyncio.get_running_loop().create_future()
        self._pending.add(request_id, waiter)
        answer: dict[str, Any] | None = None
        try:
            body = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            stdin.write(_encode(body) + b"\n")
            if read_timeout is None:
                if stdin.transport.get_write_buffer_size():
                    await stdin.drain()
                answer = await waiter
            else:
                with anyio.move_on_after(read_timeout):
                    await stdin.drain()
                    answer = await waiter
                if answer is None:
                    raise MCPError(REQUEST_TIMEOUT, f"Request {method!r} timed out")
        except (ConnectionError, RuntimeError):  # the server closed its stdin
            raise MCPError(CONNECTION_CLOSED, "Connection closed") from None
        finally:
            self._progress.pop(request_id, None)
            abandoned = self._pending.abandon(request_id) is not None and answer is None
            if abandoned and not stdin.is_closing():
                # a timeout, a cancelled caller: the server may stop working
                note = cancelled(request_id, "the caller gave up")
                stdin.write(_encode(note) + b"\n")
        assert answer is not None
        return result_of(answer)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


ServerRequestFn = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
NotificationFn = Callable[[Any], Awaitable[None]]
MAX_HEADS = 256  # request heads kept by the HTTP lane (one per session and tool)
_RAW_FAILURES = (
    OSError,  # a refused or reset connection; TimeoutError: a read or connect timeout
    anyio.EndOfStream,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    BadResponse,
)


class _Call(NamedTuple):
    """What handling one call's event stream needs."""

    request_id: str
    progress: ProgressFn | None
    on_request: ServerRequestFn
    on_notification: NotificationFn


def _status_answer(status: int, raw: bytes) -> dict[str, Any]:
    """The answer to a POST the server refused (or answered 202): the JSON-RPC error
    its body carries, if any.

    Raises:
        MCPError: ``CONNECTION_CLOSED`` for 404 (the server forgot the session), else
            ``INTERNAL_ERROR``.
    """
    if status == 404:
        raise MCPError(CONNECTION_CLOSED, "the server forgot the session (HTTP 404)")
    with contextlib.suppress(msgspec.DecodeError):
        message = _decode(raw)
        if isinstance(message, dict) and isinstance(message.get("error"), dict):
            return message
    raise MCPError(INTERNAL_ERROR, f"the server answered HTTP {status}")


def _json_answer(raw: bytes) -> dict[str, Any]:
    """Raises MCPError: the body is not a JSON object."""
    try:
        message = _decode(raw)
    except msgspec.DecodeError:
        raise MCPError(INTERNAL_ERROR, "the server's answer is not JSON") from None
    if not isinstance(message, dict):
        raise MCPError(INTERNAL_ERROR, "the server's answer is not a JSON object")
    return message


class HttpLane:
    """The raw lane of a streamable-HTTP upstream: the proxy POSTs ``tools/call`` itself.

    The SDK ``Client`` keeps the session (the handshake, the GET stream, every other
    message); this lane uses the session id the handshake answered with (``saw`` is the
    client's response hook) and the negotiated protocol version.  A plain ``http://``
    URL without a proxy is served on the lane's own kept-alive connections
    (``RawHttp``: the request's bytes written at once, the response read by hand); any
    other, or while the ``httpx2`` client holds cookies, goes through that client.  The
    answer is read as JSON, or from the POST's event stream, where the server may also
    send progress, notifications and its own requests (sampling, elicitation, roots:
    answered through ``on_request`` and POSTed back).
    """

    def __init__(
        self, url: str, http: Any = None, *, name: str = "", max_message: int = MAX_MESSAGE
    ) -> None:
        self.url = url
        self.name = name or url
        self.max_message = max_message  # bytes: a JSON answer, an event (on the raw way)
        self.http = http  # the SDK transport's httpx2 client (set before connecting)
        self.session_id: str | None = None
        self.version: str | None = None
        # set while connected: an answered call's stream ends after the answer has
        # gone back to the caller (through httpx2: read to its end in this group; on
        # the raw way: as its bytes arrive); None: read before the call returns
        self.drains: anyio.abc.TaskGroup | None = None
        self.raw: RawHttp | None = None  # made at the first call the raw way can serve
        self._raw_ok = RawHttp.serves(url)
        self._heads: dict[tuple[str | None, str | None, Any], bytes] = {}  # raw.head()s
        self._count = 0

    async def saw(self, response: Any) -> None:
        """The ``httpx2`` response hook: remember the session the server assigned."""
        session = response.headers.get("mcp-session-id")
        if session:
            self.session_id = session

    def _headers(self, tool: str | None = None) -> dict[str, str]:
        headers = {"accept": "application/json, text/event-stream"}
        headers["content-type"] = "application/json"
        if self.session_id:
            headers["mcp-session-id"] = self.session_id
        if self.version:
            headers["mcp-protocol-version"] = self.version
        if tool is not None:
            from mcp.shared.inbound import encode_header_value

            headers["mcp-method"] = "tools/call"
            headers["mcp-name"] = str(encode_header_value(tool))
        return headers

    async def _post(self, body: dict[str, Any]) -> None:
        """POST a notification or a response (the server answers 202)."""
        await self.http.post(self.url, content=_encode(body), headers=self._headers())

    def _raw(self) -> RawHttp | None:
        """The raw way, when it serves this call (plain HTTP, no proxy, no cookies, on
        asyncio's event loop: its connections are asyncio protocols)."""
        if self.raw is not None:  # (made on asyncio; a lane lives in one event loop)
            return None if self.http.cookies else self.raw
        if not self._raw_ok or self.http is None or self.http.cookies:
            return None
        if current_async_library() != "asyncio":  # on trio: httpx2
            return None
        self.raw = RawHttp(self.url, self.http.headers.multi_items())
        return self.raw

    async def aclose(self) -> None:
        """Close the raw way's kept connections."""
        if self.raw is not None:
            await self.raw.aclose()

    async def request(
        self,
        params: dict[str, Any],
        *,
        read_timeout: float | None,
        progress: ProgressFn | None,
        on_request: ServerRequestFn,
        on_notification: NotificationFn,
    ) -> dict[str, Any]:
        """``tools/call`` with ``params``; the result as JSON.

        Raises:
            MCPError: the server's error; ``REQUEST_TIMEOUT`` after ``read_timeout`` s;
                ``CONNECTION_CLOSED`` when the server cannot be reached or forgot the
                session.
        """
        import httpx2

        self._count += 1
        request_id = f"interpose-{self._count}"
        if progress is not None:
            params = asking_progress(params, request_id)
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        call = _Call(request_id, progress, on_request, on_notification)
        answer: dict[str, Any] | None = None
        raw = self._raw()
        try:
            if read_timeout is None:
                answer = await self._exchange_on(raw, body, call)
            else:
                with anyio.move_on_after(read_timeout):
                    answer = await self._exchange_on(raw, body, call)
        except TooLarge as exc:
            who = f"upstream MCP server {self.name!r} sent"
            reason = too_long(who, exc.size, exc.limit, at_least=True)
            raise MCPError(INTERNAL_ERROR, reason) from None
        except (httpx2.TransportError, *_RAW_FAILURES) as exc:
            raise MCPError(CONNECTION_CLOSED, f"Connection closed: {exc!r}") from None
        finally:
            if answer is None:  # a timeout, a cancelled caller: the server may stop
                note = cancelled(request_id, "the caller gave up")
                with (
                    anyio.CancelScope(shield=True),
                    anyio.move_on_after(KILL_TIMEOUT),
                    contextlib.suppress(Exception),
                ):
                    await self._post(note)
        if answer is None:
            raise MCPError(REQUEST_TIMEOUT, "Request 'tools/call' timed out")
        return result_of(answer)

    def _exchange_on(
        self, raw: RawHttp | None, body: dict[str, Any], call: _Call
    ) -> Awaitable[dict[str, Any]]:
        """The call on the raw way when it serves, else through ``httpx2``."""
        return self._exchange(body, call) if raw is None else self._exchange_raw(raw, body, call)

    async def _exchange(self, body: dict[str, Any], call: _Call) -> dict[str, Any]:
        """The call through the ``httpx2`` client."""
        import httpx2

        tool = body["params"].get("name")
        request = self.http.build_request(
            "POST", self.url, content=_encode(body), headers=self._headers(tool)
        )
        response = await self.http.send(request, stream=True)
        handed_over = False
        try:
            kind = response.headers.get("content-type", "").lower()
            if response.status_code >= 400 or response.status_code == 202:
                return _status_answer(response.status_code, await response.aread())
            if kind.startswith("application/json"):
                return _json_answer(await response.aread())
            if not kind.startswith("text/event-stream"):
                raise MCPError(INTERNAL_ERROR, f"unexpected content type: {kind!r}")
            events = httpx2.EventSource(response).__aiter__()
            while True:
                event = await anext(events, None)
                if event is None:
                    break
                if not event.data:
                    continue
                message = _decode(event.data)
                if isinstance(message, dict) and await self._event(message, call):
                    if self.drains is None:
                        await self._drain(response, events)
                    else:  # the caller has its answer now; the stream ends meanwhile
                        self.drains.start_soon(self._drain, response, events)
                        handed_over = True
                    return message
        finally:
            if not handed_over:
                await response.aclose()
        raise MCPError(CONNECTION_CLOSED, "the server closed the stream without an answer")

    async def _exchange_raw(
        self, raw: RawHttp, body: dict[str, Any], call: _Call
    ) -> dict[str, Any]:
        """The call on the raw way's own connection."""
        tool = body["params"].get("name")
        key = (self.session_id, self.version, tool)
        head = self._heads.get(key)
        if head is None:  # once per session and tool
            if len(self._heads) >= MAX_HEADS:
                self._heads.clear()
            head = self._heads[key] = raw.head(self._headers(tool))
        response = await raw.send(raw.request(head, _encode(body)))
        handed_over = False
        try:
            session = response.headers.get("mcp-session-id")
            if session:
                self.session_id = session
            if response.cookies:
                self._keep_cookies(response.cookies)
            kind = response.headers.get("content-type", "").lower()
            if response.status >= 400 or response.status == 202:
                return _status_answer(response.status, await response.read(self.max_message))
            if kind.startswith("application/json"):
                return _json_answer(await response.read(self.max_message))
            if not kind.startswith("text/event-stream"):
                raise MCPError(INTERNAL_ERROR, f"unexpected content type: {kind!r}")
            events = EventReader(response, self.max_message)
            while (data := await events.next()) is not None:
                message = _decode(data)
                if isinstance(message, dict) and await self._event(message, call):
                    if self.drains is None:  # not connected: read the stream's end here
                        with anyio.move_on_after(DRAIN_TIMEOUT), contextlib.suppress(Exception):
                            while await events.next() is not None:
                                pass
                    else:  # the caller has its answer now; the stream ends meanwhile,
                        # read as it arrives, then its connection serves the next call
                        handed_over = True
                        raw.finish(response)
                    return message
        finally:
            if not handed_over:
                raw.release(response)
        raise MCPError(CONNECTION_CLOSED, "the server closed the stream without an answer")

    def _keep_cookies(self, cookies: list[str]) -> None:
        """Give the cookies a raw response set to the ``httpx2`` client (whose requests
        then carry them; and the lane's go through it)."""
        import httpx2

        response = httpx2.Response(
            200,
            headers=[("set-cookie", value) for value in cookies],
            request=httpx2.Request("POST", self.url),
        )
        self.http.cookies.extract_cookies(response)

    async def _event(self, message: dict[str, Any], call: _Call) -> bool:
        """Handle one message of the call's event stream; True: it is the answer."""
        method = message.get("method")
        if method is None:
            return bool(message.get("id") == call.request_id)
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" in message:  # the server's own request, during the call
            await self._answer(message["id"], method, params, call.on_request)
        elif method == "notifications/progress":
            if call.progress is not None and params.get("progressToken") == call.request_id:
                await call.progress(params["progress"], params.get("total"), params.get("message"))
        else:
            await call.on_notification(message)
        return False

    @staticmethod
    async def _drain(response: Any, events: AsyncIterator[Any]) -> None:
        """Read an answered call's event stream to its end (the server ends it after
        the answer; briefly: DRAIN_TIMEOUT s), so that its connection serves the next
        call, then close it."""
        try:
            with anyio.move_on_after(DRAIN_TIMEOUT), contextlib.suppress(Exception):
                while await anext(events, None) is not None:
                    pass
        finally:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await response.aclose()

    async def _answer(
        self, server_id: Any, method: str, params: dict[str, Any], on_request: ServerRequestFn
    ) -> None:
        try:
            reply = {"jsonrpc": "2.0", "id": server_id, "result": await on_request(method, params)}
        except MCPError as exc:
            error = {"code": exc.code, "message": exc.message}
            reply = {"jsonrpc": "2.0", "id": server_id, "error": error}
        await self._post(reply)
