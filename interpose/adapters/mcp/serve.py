"""The fronts of ``interpose mcp-proxy``: serving the client on stdio or streamable HTTP.

``serve_stdio`` claims this process's stdin/stdout (the fast lane, ``StdioFront``, or the
SDK's own transport when a pipe cannot be taken); ``serve_http`` listens, sets uvicorn up
in front of the SDK's streamable-HTTP app (behind ``HttpFront``) and closes a session's
upstream connections when the SDK forgets the session.  Both take the proxy as a
``Served`` (what they need of it), so this module imports nothing from ``proxy.py``:
``McpProxy.serve_stdio`` / ``serve_http`` call in here.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
from collections.abc import Callable
from typing import Any, Protocol

import anyio
import anyio.abc
import mcp_types as mt
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import INTERNAL_ERROR

from ...errors import UsageError
from .bearer import BearerAuth, JwtVerifier
from .front import Gateway, HttpFront, StdioFront
from .upstream import UpstreamError

__all__ = ["Served", "refuse", "serve_http", "serve_stdio", "stderr_logging", "watch_sessions"]

log = logging.getLogger("interpose.mcp")


class Served(Gateway, Protocol):
    """What serving needs of the proxy beyond the fronts' ``Gateway``: starting the
    upstream connections, the SDK's server, and the per-session switch of HTTP."""

    per_session: bool  # HTTP: one ProxySession per mcp-session-id

    async def connect(self, tg: anyio.abc.TaskGroup) -> None: ...

    def start_failure(self) -> UpstreamError | None: ...

    def server(self) -> Server[Any]: ...

    def notification_options(self) -> NotificationOptions: ...

    def end_session(self, key: str) -> None: ...


async def serve_stdio(proxy: Served) -> None:
    """Serve the client on this process's stdin/stdout until it disconnects.

    Raises:
        UpstreamError: an upstream did not start (or died during its handshake):
            the client's first request (its ``initialize``) got this error.
    """

    async with anyio.create_task_group() as tg:
        front = StdioFront.claim(proxy)
        if front is not None:
            with front:
                await proxy.connect(tg)
                if (failed := proxy.start_failure()) is not None:
                    await front.refuse(str(failed))
                    raise failed
                await front.serve(proxy.server())
        else:  # stdin or stdout is a regular file: the SDK's own transport
            from mcp.server.stdio import stdio_server

            # claim stdin/stdout before the children start: nothing else may write there
            async with stdio_server() as (read, write):
                await proxy.connect(tg)
                if (failed := proxy.start_failure()) is not None:
                    await refuse(read, write, str(failed))
                    raise failed
                srv = proxy.server()
                await srv.run(
                    read, write, srv.create_initialization_options(proxy.notification_options())
                )
        tg.cancel_scope.cancel()


async def serve_http(
    proxy: Served,
    host: str,
    port: int,
    *,
    ready: Callable[[str], None] | None = None,
    auth: JwtVerifier | None = None,
) -> None:
    """Serve streamable HTTP on ``host:port`` (``/mcp``) until cancelled; ``ready``
    gets the URL once the socket listens (port 0: the port the system chose).

    Each MCP session gets its own upstream connections, closed with the session.
    With ``auth``, every request needs a valid bearer token (else 401), whose claims
    are the principal of the calls it makes (``bearer.py``).

    Raises:
        UsageError: ``host:port`` cannot be listened on (in use, not an address
            of this machine).
        UpstreamError: an upstream did not start (or died during its handshake):
            nothing listens.
    """
    import uvicorn

    listening = _listen(host, port)
    async with anyio.create_task_group() as tg:
        proxy.per_session = True
        await proxy.connect(tg)
        if (failed := proxy.start_failure()) is not None:
            raise failed
        srv = proxy.server()
        asgi = srv.streamable_http_app(host=host, max_request_body_size=proxy.max_message)
        app: Any = HttpFront(asgi, proxy, srv.session_manager)
        if auth is not None:
            app = BearerAuth(app, auth)
        watch_sessions(proxy, srv)
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="on",
            access_log=False,
            # X-Forwarded-* are not read (nothing here uses the client's address):
            # one ASGI layer less per request
            proxy_headers=False,
        )
        server = uvicorn.Server(config)

        async def announce() -> None:
            # uvicorn has no event for "listening": look every 10 ms (start-up only)
            while not server.started:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            sock = server.servers[0].sockets[0]
            url = f"http://{host}:{sock.getsockname()[1]}/mcp"
            log.info("serving MCP on %s", url)
            if ready is not None:
                ready(url)

        tg.start_soon(announce)
        try:
            await server.serve(sockets=[listening])
        finally:
            # cancelled (served in process, not stopped by a signal): uvicorn's shutdown
            # did not run, so stop listening here
            for running in server.servers:
                running.close()
            listening.close()
        tg.cancel_scope.cancel()


def watch_sessions(proxy: Served, srv: Server[Any]) -> None:
    """Close a session's upstream connections when the SDK's session manager
    forgets the session (the client's DELETE, its idle timeout, a crash)."""
    manager: Any = srv.session_manager
    discard = getattr(manager, "_discard_session", None)
    if discard is None:  # another SDK layout: sessions then end with the proxy
        log.warning("mcp-proxy: cannot see HTTP sessions end; upstreams close on exit")
        return

    async def discard_and_close(session_id: str, transport: Any) -> None:
        proxy.end_session(session_id)
        await discard(session_id, transport)

    manager._discard_session = discard_and_close


async def refuse(
    read: MemoryObjectReceiveStream[SessionMessage | Exception],
    write: MemoryObjectSendStream[SessionMessage],
    reason: str,
) -> None:
    """Answer the first request read with the error ``reason`` (the SDK's transport)."""
    async for item in read:
        if isinstance(item, SessionMessage) and isinstance(item.message, mt.JSONRPCRequest):
            error = mt.ErrorData(code=INTERNAL_ERROR, message=reason)
            answer = mt.JSONRPCError(jsonrpc="2.0", id=item.message.id, error=error)
            await write.send(SessionMessage(answer))
            # the transport's writer takes the next message once the answer is
            # written: then the answer is out (this log message may not be)
            params = {"level": "error", "logger": "interpose", "data": reason}
            said = mt.JSONRPCNotification(
                jsonrpc="2.0", method="notifications/message", params=params
            )
            await write.send(SessionMessage(said))
            return


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``.

    Raises:
        UsageError: it cannot be made (the port is in use, the host is unknown...).
    """
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        return socket.create_server(address, family=family)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


def stderr_logging(level: str, file: str | None) -> None:
    """Send the proxy's logs to stderr (or ``file``): stdout carries only MCP."""
    handler: logging.Handler = (
        logging.FileHandler(file, encoding="utf-8") if file else logging.StreamHandler(sys.stderr)
    )
    handler.setFormatter(logging.Formatter("interpose mcp-proxy: %(levelname)s %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
