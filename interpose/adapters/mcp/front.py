"""The stdio fast lane of ``interpose mcp-proxy``: the proxy's own stdin/stdout.

The SDK's stdio transport reads and writes through worker threads and turns every line
into pydantic models, and its server dispatches each request through several tasks and
streams before a handler runs: for a tool call relayed to another process, that costs
more than the server at the other end.  ``StdioFront`` reads the client's JSON lines on
the event loop's own pipe (no thread; each line decoded with msgspec as it arrives, in
``LineProtocol``) and serves a handshake-era client's ``tools/call`` itself, in a task
started on the spot: the tool stage around the upstream call, the upstream's raw result
written back.  Every other message (the handshake, listings,
resources, prompts, the 2026-07-28 era...) goes on to the SDK's ``Server`` through
memory streams, as the SDK's own stdio transport would hand it over.

The front is also the ``Downstream`` of the stdio session: the upstream's sampling,
elicitation and roots requests, the approval questions (``Approval.ask``) and the
upstream's notifications are written to the client from here.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import logging
import math
import os
import selectors
import stat
from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol, TypeVar

import anyio
import anyio.abc
import mcp_types as mt
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from opentelemetry import context as otel_context
from opentelemetry import propagate
from pydantic import BaseModel
from starlette.requests import Request

from .bearer import owned_by, principal_of
from .lines import Inbox, LineProtocol, Oversized
from .messages import cancelled, error_answer, forward, hand_over, raise_error, too_long
from .upstream import Downstream, ProgressFn, ProxySession

__all__ = ["Gateway", "HttpFront", "StdioFront", "answer_call"]

log = logging.getLogger("interpose.mcp")

_M = TypeVar("_M", bound=BaseModel)

BUFFER = 16  # messages waiting for the SDK's server, or for stdout
MAX_BODY = 1 << 20  # bytes: larger POSTs go to the SDK's app (and its body limit)
MAX_SEEN = 256  # sets of security-relevant header values remembered by HttpFront
_CHECKED = frozenset((b"content-type", b"host", b"origin"))
_encode = msgspec.json.Encoder().encode
_decode = msgspec.json.Decoder().decode

_Id = str | int


class Gateway(Protocol):
    """What the fronts need of the proxy (``McpProxy`` is one): its sessions, its size
    cap and listChanged options, and the tool stage of one ``tools/call``.  Typed here so
    that the fronts import nothing from ``proxy.py``."""

    first: ProxySession  # the stdio session (the first HTTP one too)
    sessions: dict[str | None, ProxySession]  # HTTP sessions by mcp-session-id
    max_message: int  # bytes

    def notification_options(self) -> NotificationOptions: ...

    async def call_tool(
        self,
        session: ProxySession,
        exposed: str,
        arguments: dict[str, Any],
        client_meta: Any,
        *,
        request_id: mt.RequestId | None,
        session_key: str,
        progress: ProgressFn | None,
        downstream: Downstream | None,
        related: bool = True,
        principal: dict[str, Any] | None = None,
    ) -> dict[str, Any]: ...


def _key(request_id: Any) -> _Id | None:
    """The id of a request as a dict key (JSON-RPC ids are strings or integers)."""
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        return None
    return request_id


async def answer_call(
    proxy: Gateway,
    session: ProxySession,
    message: dict[str, Any],
    request_id: _Id,
    *,
    downstream: Downstream | None,
    session_key: str,
    progress: ProgressFn | None,
    related: bool = True,
    principal: dict[str, Any] | None = None,
) -> bytes:
    """The JSON-RPC response (encoded) to one ``tools/call`` request of the fast lane
    (``principal``: the claims of the caller's bearer token)."""
    params = message.get("params")
    name = params.get("name") if isinstance(params, dict) else None
    arguments = params.get("arguments") if isinstance(params, dict) else None
    if not isinstance(name, str) or not isinstance(arguments, dict | None):
        return _error(request_id, INVALID_PARAMS, "tools/call: params need a name and an object")
    assert isinstance(params, dict)
    meta = params.get("_meta")
    if not isinstance(meta, dict):
        meta = None
    attached = None
    if meta and "traceparent" in meta:  # the client's trace continues here
        attached = otel_context.attach(propagate.extract(meta))
    try:
        result = await proxy.call_tool(
            session,
            name,
            dict(arguments or {}),
            meta,
            request_id=request_id,
            session_key=session_key,
            progress=progress,
            downstream=downstream,
            related=related,
            principal=principal,
        )
    except MCPError as exc:
        return _error(request_id, exc.code, exc.message, exc.data)
    except Exception:
        log.exception("tools/call %s failed", name)
        return _error(request_id, INTERNAL_ERROR, "Internal error")
    finally:
        if attached is not None:
            otel_context.detach(attached)
    return _encode({"jsonrpc": "2.0", "id": request_id, "result": result})


def _error(request_id: Any, code: int, message: str, data: Any = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return _encode({"jsonrpc": "2.0", "id": request_id, "error": error})


def _watchable(fd: int, event: int) -> bool:
    """Whether the event loop's selector accepts ``fd`` (epoll refuses ``/dev/null``)."""
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, event)
        except (OSError, ValueError):
            return False
    return True


class StdioFront:
    """The proxy's stdin/stdout: a fast lane for ``tools/call``, the SDK for the rest.

    Use ``StdioFront.claim(proxy)`` (it takes fds 0 and 1 over: while it serves, fd 0
    reads the null device and fd 1 writes to stderr, so a hook or a library that prints
    cannot corrupt the MCP stream), then ``with front: await front.serve(server)``.
    """

    def __init__(self, proxy: Gateway, in_fd: int, out_fd: int) -> None:
        self.proxy = proxy
        self.session = proxy.first
        self._in_fd = in_fd
        self._out_fd = out_fd
        self.handshake = False  # the client opened with initialize (the handshake era)
        self._capabilities: dict[str, Any] = {}
        self._calls: dict[_Id, asyncio.Task[None]] = {}  # fast-lane tools/call in flight
        self._asked: dict[str, asyncio.Future[dict[str, Any]]] = {}  # our requests' answers
        self._asked_count = 0
        self._writer: asyncio.StreamWriter | None = None
        self._inbox: Inbox | None = None

    @classmethod
    def claim(cls, proxy: Gateway) -> StdioFront | None:
        """Take stdin and stdout over; None when the event loop cannot watch either (a
        regular file, or a character device epoll refuses such as ``/dev/null``: the
        SDK's threaded transport serves them)."""
        for fd, event in ((0, selectors.EVENT_READ), (1, selectors.EVENT_WRITE)):
            try:
                mode = os.fstat(fd).st_mode
            except OSError:
                return None
            if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
                return None
            if stat.S_ISCHR(mode) and not _watchable(fd, event):
                return None
        in_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        out_fd = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        os.dup2(2, 1)
        return cls(proxy, in_fd, out_fd)

    def __enter__(self) -> StdioFront:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Give fds 0 and 1 back."""
        for private, fd in ((self._in_fd, 0), (self._out_fd, 1)):
            try:
                os.dup2(private, fd)
                os.close(private)
            except OSError:
                pass

    # -- serving ------------------------------------------------------------------------

    async def _open(
        self, on_line: Callable[[bytes], None], on_close: Callable[[], None]
    ) -> tuple[asyncio.ReadTransport, asyncio.WriteTransport]:
        """Read the client's lines (``on_line``; ``on_close`` at EOF) and make the
        writer to the client."""
        loop = asyncio.get_running_loop()
        read_pipe = os.fdopen(self._in_fd, "rb", buffering=0, closefd=False)
        write_pipe = os.fdopen(self._out_fd, "wb", buffering=0, closefd=False)
        # the writer first: a line read may be answered at once (a parse error)
        write_transport, write_protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, write_pipe
        )
        self._writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: LineProtocol(
                on_line,
                on_close,
                max_line=self.proxy.max_message,
                name="stdin",
                on_too_long=self._too_long,
            ),
            read_pipe,
        )
        return read_transport, write_transport

    async def refuse(self, reason: str) -> None:
        """Answer the client's requests with the error ``reason`` (an upstream did not
        start) until one has been answered or the client closes stdin."""
        done = asyncio.get_running_loop().create_future()

        def finish() -> None:
            if not done.done():
                done.set_result(None)

        def on_line(line: bytes) -> None:
            message = self._message(line)
            if isinstance(message, dict) and "method" in message and "id" in message:
                self._write(_error(message["id"], INTERNAL_ERROR, reason))
                finish()

        read_transport, write_transport = await self._open(on_line, finish)
        try:
            await done
            assert self._writer is not None
            with contextlib.suppress(OSError):
                await self._writer.drain()
        finally:
            read_transport.close()
            write_transport.close()

    async def serve(self, srv: Server[Any]) -> None:
        """Serve the client until it closes stdin."""
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](
            BUFFER
        )
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](BUFFER)
        inbox = self._inbox = Inbox(functools.partial(forward, to=to_server), BUFFER)
        read_transport, write_transport = await self._open(self._on_line, inbox.end)
        inbox.transport = read_transport
        self.session.downstream = self
        options = srv.create_initialization_options(self.proxy.notification_options())
        try:
            async with anyio.create_task_group() as tg:

                async def run_server() -> None:
                    async with server_writes:
                        await srv.run(server_reads, server_writes, options)

                tg.start_soon(run_server)
                tg.start_soon(self._relay, from_server)
                async with to_server:
                    await inbox.pump()  # until EOF: the client closed stdin
                tg.cancel_scope.cancel()  # the client is gone: so are its calls
        finally:
            calls, self._calls = self._calls, {}
            for task in calls.values():
                task.cancel()
            self.session.downstream = None
            read_transport.close()
            write_transport.close()
            if calls:
                with anyio.CancelScope(shield=True):
                    await asyncio.wait(calls.values())

    def _on_line(self, line: bytes) -> None:
        """A line of the client's: served here when it is the fast lane's (a
        ``tools/call`` starts its task at once), else queued for the SDK's server."""
        assert self._inbox is not None
        try:
            message = _decode(line)
        except msgspec.DecodeError as exc:
            self._not_a_request(exc)
            return
        if not isinstance(message, dict):
            self._not_a_request(None)
        elif not self._take(message):
            self._inbox.put(message)

    def _message(self, line: bytes) -> dict[str, Any] | None:
        """The JSON object of a line; None: it is not one (answered: ``_not_a_request``)."""
        try:
            message = _decode(line)
        except msgspec.DecodeError as exc:
            self._not_a_request(exc)
            return None
        if not isinstance(message, dict):
            self._not_a_request(None)
            return None
        return message

    def _not_a_request(self, error: msgspec.DecodeError | None) -> None:
        """Answer a line that is not JSON (``error``), or not a JSON object, as JSON-RPC
        says: -32700 Parse error, -32600 Invalid Request; id null."""
        if error is not None:
            self._write(_error(None, PARSE_ERROR, f"Parse error: {error}"))
        else:
            self._write(_error(None, INVALID_REQUEST, "Invalid Request: not a JSON object"))

    def _too_long(self, over: Oversized) -> None:
        """A line of the client's over the limit: its request gets an error that says
        the limit (an answer to one of our questions: that question fails)."""
        request_id, is_request = over.identify()
        reason = too_long("the client sent", over.size, self.proxy.max_message)
        if not is_request and isinstance(request_id, str) and request_id in self._asked:
            hand_over(self._asked, error_answer(request_id, INVALID_REQUEST, reason))
        elif request_id is not None or not is_request:  # (a notification: not answered)
            self._write(_error(request_id, INVALID_REQUEST, reason))

    def _write(self, line: bytes) -> None:
        """Write a line to the client now (from ``data_received``: no await)."""
        writer = self._writer
        if writer is not None and not writer.is_closing():
            writer.write(line + b"\n")

    def _take(self, message: dict[str, Any]) -> bool:
        """Serve ``message`` here if it is the fast lane's; False: the SDK's."""
        method = message.get("method")
        if method is None:  # a response: to one of our requests, or to the SDK's
            return hand_over(self._asked, message)
        if method == "tools/call":
            key = _key(message.get("id"))
            if not self.handshake or key is None or key in self._calls:
                return False  # the SDK answers (and refuses what it must)
            # a task of its own, not of a task group: started here, with no task switch
            # (this runs inside the pipe's data_received); serve() cancels what is left
            self._calls[key] = asyncio.get_running_loop().create_task(self._call(message, key))
            return True
        if method == "notifications/cancelled":
            params = message.get("params")
            key = _key(params.get("requestId")) if isinstance(params, dict) else None
            running = self._calls.get(key) if key is not None else None
            if running is None:
                return False
            running.cancel()
            return True
        if method == "initialize":
            params = message.get("params")
            capabilities = params.get("capabilities") if isinstance(params, dict) else None
            self._capabilities = capabilities if isinstance(capabilities, dict) else {}
            self.handshake = True
        return False

    async def _relay(self, from_server: MemoryObjectReceiveStream[SessionMessage]) -> None:
        """Write what the SDK's server sends."""
        async with from_server:
            async for item in from_server:
                await self._send(
                    item.message.model_dump_json(by_alias=True, exclude_unset=True).encode()
                )

    async def _send(self, line: bytes) -> None:
        writer = self._writer
        if writer is None or writer.is_closing():
            return
        writer.write(line + b"\n")
        try:
            await writer.drain()
        except OSError as exc:  # the client closed stdout
            log.info("stdout: %s", exc)

    # -- the fast lane: tools/call ------------------------------------------------------

    async def _call(self, message: dict[str, Any], key: _Id) -> None:
        try:
            answer = await self._answer(message, key)
        except asyncio.CancelledError:
            return  # the client cancelled the request (or left): it gets no answer
        finally:
            self._calls.pop(key, None)
        await self._send(answer)

    async def _answer(self, message: dict[str, Any], request_id: _Id) -> bytes:
        params = message.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        return await answer_call(
            self.proxy,
            self.session,
            message,
            request_id,
            downstream=self,
            session_key="stdio",
            progress=self._progress(token),
        )

    def _progress(self, token: Any) -> ProgressFn | None:
        if _key(token) is None:
            return None

        async def progress(value: float, total: float | None, message: str | None) -> None:
            params: dict[str, Any] = {"progressToken": token, "progress": value}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            await self._send(
                _encode({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})
            )

        return progress

    # -- Downstream: requests and notifications to the client ----------------------------

    def supports(self, capability: str) -> bool:
        """Whether the client declared ``capability`` (handshake era only: the
        2026-07-28 era has no server-to-client requests)."""
        return self.handshake and self._capabilities.get(capability) is not None

    async def request(
        self,
        method: str,
        params: BaseModel | None,
        result_type: type[_M],
        related: Any = None,
    ) -> _M:
        """Send a server->client request, wait for the answer (cancelled: the client
        is told with ``notifications/cancelled``).

        Raises:
            MCPError: the client answered with an error.
        """
        self._asked_count += 1
        request_id = f"interpose-{self._asked_count}"
        answered = self._asked[request_id] = asyncio.get_running_loop().create_future()
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        try:
            await self._send(_encode(body))
            answer = await answered
        except BaseException:
            if self._asked.pop(request_id, None) is not None:
                with anyio.CancelScope(shield=True):
                    await self._send(_encode(cancelled(request_id, "not needed")))
            raise
        raise_error(answer)
        return result_type.model_validate(answer.get("result") or {}, by_name=False)

    async def notify(self, notification: BaseModel) -> None:
        """Write a notification (handshake era: the 2026-07-28 era has no push channel)."""
        if not self.handshake:
            return
        body = notification.model_dump(by_alias=True, mode="json", exclude_none=True)
        body["jsonrpc"] = "2.0"
        await self._send(_encode(body))


class HttpFront:
    """The HTTP fast lane: an ASGI app in front of the SDK's streamable-HTTP app.

    A POST of one ``tools/call`` request from a handshake-era session the proxy already
    serves (a live ``mcp-session-id``, a handshake ``mcp-protocol-version``, no progress
    token) is answered here with a plain JSON response; a ``notifications/cancelled``
    for such a call cancels it.  Everything else (the handshake, every other message,
    calls that want progress, the 2026-07-28 era, anything malformed) goes to the SDK's
    app unchanged, which also answers what it must refuse.
    """

    def __init__(self, app: Any, proxy: Gateway, manager: Any, path: str = "/mcp") -> None:
        self.app = app
        self.proxy = proxy
        self.manager = manager
        self.path = path
        self._calls: dict[tuple[str, _Id], anyio.CancelScope] = {}
        self._security: dict[tuple[bytes | None, ...], bool] = {}  # header values -> admitted

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != self.path:
            await self.app(scope, receive, send)
            return
        sid = version = accept = None
        length = -1
        checked: dict[bytes, bytes] = {}  # what the SDK's transport security reads
        for key, value in scope["headers"]:
            if key == b"mcp-session-id":
                sid = value.decode("latin-1")
            elif key == b"mcp-protocol-version":
                version = value.decode("latin-1")
            elif key == b"accept":
                accept = value
            elif key == b"content-length" and value.isdigit():
                length = int(value)
            elif key in _CHECKED:
                checked.setdefault(key, value)
        if length > self.proxy.max_message:  # (the SDK's app also stops longer bodies)
            reason = too_long("the client sent", length, self.proxy.max_message)
            await _respond(send, 413, _error(None, INVALID_REQUEST, reason), sid)
            return
        instances = getattr(self.manager, "_server_instances", {})
        transport = instances.get(sid) if sid is not None else None
        if transport is not None and not owned_by(self.manager, sid, scope):
            transport = None  # another principal's session: the SDK answers 404
        session = self.proxy.sessions.get(sid) if transport is not None else None
        if (
            session is None
            or version not in HANDSHAKE_PROTOCOL_VERSIONS
            or accept is None
            or b"application/json" not in accept
            or not 0 < length <= MAX_BODY  # the SDK's app enforces its own limit
        ):
            await self.app(scope, receive, send)
            return
        assert sid is not None
        body = await _body(receive)
        replay = _replay(body)
        try:
            message = _decode(body)
        except msgspec.DecodeError:
            await self.app(scope, replay, send)
            return
        method = message.get("method") if isinstance(message, dict) else None
        if method == "notifications/cancelled":
            params = message.get("params")
            key = _key(params.get("requestId")) if isinstance(params, dict) else None
            running = self._calls.get((sid, key)) if key is not None else None
            if running is None:
                await self.app(scope, replay, send)
                return
            running.cancel()
            await _respond(send, 202, b"", sid)
            return
        key = _key(message.get("id")) if method == "tools/call" else None
        params = message.get("params") if key is not None else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        wants_progress = isinstance(meta, dict) and meta.get("progressToken") is not None
        if key is None or (sid, key) in self._calls or wants_progress:
            await self.app(scope, replay, send)
            return
        if not await self._admitted(scope, replay, checked):
            await self.app(scope, replay, send)  # it refuses the request itself
            return
        scope_ = anyio.CancelScope()
        self._calls[(sid, key)] = scope_
        _hold(transport)
        try:
            with scope_:
                answer = await answer_call(
                    self.proxy,
                    session,
                    message,
                    key,
                    downstream=session.downstream,
                    session_key=sid,
                    progress=None,
                    related=False,  # the SDK has no stream for this request
                    principal=principal_of(scope),
                )
        finally:
            self._calls.pop((sid, key), None)
            _release(transport)
        if scope_.cancelled_caught:
            await _respond(send, 202, b"", sid)  # the client gave up on it: no result
            return
        await _respond(send, 200, answer, sid)

    async def _admitted(self, scope: Any, receive: Any, checked: dict[bytes, bytes]) -> bool:
        """Whether the SDK's transport security (content type; host and origin, against
        DNS rebinding) admits a request with these headers: asked once per set of
        their values."""
        key = (checked.get(b"content-type"), checked.get(b"host"), checked.get(b"origin"))
        admitted = self._security.get(key)
        if admitted is None:
            security = TransportSecurityMiddleware(self.manager.security_settings)
            refused = await security.validate_request(Request(scope, receive), is_post=True)
            if len(self._security) >= MAX_SEEN:
                self._security.clear()
            admitted = self._security[key] = refused is None
        return admitted


async def _body(receive: Any) -> bytes:
    chunks: list[bytes] = []
    while True:
        event = await receive()
        if event["type"] != "http.request":
            break
        chunks.append(event.get("body", b""))
        if not event.get("more_body"):
            break
    return b"".join(chunks)


def _replay(body: bytes) -> Any:
    """An ASGI ``receive`` that gives ``body`` again, then waits like a live one."""
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return receive


async def _respond(send: Any, status: int, body: bytes, sid: str | None) -> None:
    headers = [(b"mcp-session-id", sid.encode("latin-1"))] if sid is not None else []
    if body:
        headers.append((b"content-type", b"application/json"))
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _hold(transport: Any) -> None:
    """A request in flight holds the SDK session against its idle timeout (as the
    SDK's own ``handle_request`` does)."""
    idle = getattr(transport, "idle_scope", None)
    if idle is not None and hasattr(transport, "_requests_in_flight"):
        transport._requests_in_flight += 1
        idle.deadline = math.inf


def _release(transport: Any) -> None:
    idle = getattr(transport, "idle_scope", None)
    timeout = getattr(transport, "_idle_timeout", None)
    if idle is not None and timeout is not None and hasattr(transport, "_requests_in_flight"):
        transport._requests_in_flight -= 1
        if not transport._requests_in_flight:
            idle.deadline = anyio.current_time() + timeout
