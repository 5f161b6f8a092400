"""The upstream side of ``interpose mcp-proxy``: one MCP server, its connection, its sessions.

``UpstreamSpec`` names a server (stdio parameters or a streamable-HTTP URL);
``Upstream`` starts it, keeps it connected in one long-lived task (``Upstream.keep``:
anyio cancel scopes must be entered and left in the same task, so nothing but that task
ever enters or leaves the client), restarts it with a backoff when it dies, keeps the end
of its stderr for the error it reports, and relays its own requests (sampling,
elicitation, roots) to the downstream client.  ``ProxySession`` is one downstream
session's set of upstream connections.  ``UpstreamHost`` is what an upstream needs of the
proxy (timeouts, size cap, headers, and where its notifications go), so this module
imports nothing from ``proxy.py``.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio
import anyio.abc
import mcp_types as mt
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND
from pydantic import BaseModel

from ...errors import InterposeError
from .config import McpServerConfig, server_key
from .pipe import HttpLane, UpstreamPipe

__all__ = [
    "RESTART_BACKOFF",
    "SERVER_REQUESTS",
    "Downstream",
    "ProgressFn",
    "ProxySession",
    "SdkDownstream",
    "Upstream",
    "UpstreamError",
    "UpstreamHost",
    "UpstreamSpec",
]

log = logging.getLogger("interpose.mcp")

_M = TypeVar("_M", bound=BaseModel)

RESTART_BACKOFF = (0.2, 0.5, 1.0, 2.0, 5.0)  # s: between failed connection attempts
_PAGE_LIMIT = 1000  # pages of one listing we follow before giving up (a looping cursor)

# the server->client requests an upstream may make, forwarded to its downstream client
SERVER_REQUESTS: dict[str, type[BaseModel]] = {
    "sampling/createMessage": mt.CreateMessageRequest,
    "elicitation/create": mt.ElicitRequest,
    "roots/list": mt.ListRootsRequest,
}
# ... and the client capability each one needs
_NEEDS = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation"}
_NEEDS["roots/list"] = "roots"

ProgressFn = Callable[[float, float | None, str | None], Awaitable[None]]


class Downstream(Protocol):
    """The client side of one downstream session, as the proxy talks to it: the SDK's
    ``ServerSession`` (``SdkDownstream``) or the stdio fast lane (``StdioFront``)."""

    def supports(self, capability: str) -> bool:
        """Whether the client declared ``capability`` (``sampling``, ``elicitation``,
        ``roots``) in its handshake."""
        ...

    async def request(
        self,
        method: str,
        params: BaseModel | None,
        result_type: type[_M],
        related: mt.RequestId | None = None,
    ) -> _M:
        """Send a server->client request; its result, validated.

        Raises:
            MCPError: the client answered with an error (or the connection closed).
        """
        ...

    async def notify(self, notification: BaseModel) -> None:
        """Send a server notification (logging, list_changed, a resource update)."""
        ...


class UpstreamHost(Protocol):
    """What an ``Upstream`` needs of the proxy in front of it."""

    connect_timeout: float  # s: one connection attempt, one listing
    max_message: int  # bytes: the largest message relayed either way
    headers: dict[str, dict[str, str]]  # an HTTP upstream's extra headers, by name

    async def forward(self, upstream: Upstream, message: Any) -> None:
        """Relay an upstream notification to the client of its session."""
        ...

    async def tools_listed(self, upstream: Upstream, tools: list[mt.Tool]) -> None:
        """Judge a fresh listing of the upstream's tools (the pinned tool set)."""
        ...


class UpstreamError(InterposeError):
    """An upstream MCP server cannot be reached: it did not start, or it exited.

    The tool call that met it gets an error result with this message; the proxy connects
    to the server again in the background.

    Attributes:
        server: the upstream's name.
    """

    def __init__(self, server: str, message: str) -> None:
        super().__init__(f"upstream MCP server {server!r}: {message}")
        self.server = server


@dataclass(frozen=True)
class UpstreamSpec:
    """One upstream server: ``target`` is stdio parameters or a streamable-HTTP URL."""

    name: str
    target: StdioServerParameters | str
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_config(cls, name: str, table: McpServerConfig, base_dir: Path) -> UpstreamSpec:
        """The spec of a ``[mcp.servers.<name>]`` table (relative ``cwd``: to base_dir)."""
        if table.url is not None:
            return cls(name, table.url, dict(table.headers))
        assert table.command is not None  # the config check requires command or url
        cwd = None if table.cwd is None else str(base_dir / table.cwd)
        params = StdioServerParameters(
            command=table.command, args=list(table.args), env=dict(table.env) or None, cwd=cwd
        )
        return cls(name, params)


class SdkDownstream:
    """A downstream session served by the SDK's ``Server`` (HTTP, 2026-07-28 clients,
    stdio when the fast lane cannot take the pipes)."""

    def __init__(self, session: ServerSession) -> None:
        self.session = session

    def supports(self, capability: str) -> bool:
        caps = self.session.client_capabilities
        return caps is not None and getattr(caps, capability, None) is not None

    async def request(
        self,
        method: str,
        params: BaseModel | None,
        result_type: type[_M],
        related: mt.RequestId | None = None,
    ) -> _M:
        request: Any = SERVER_REQUESTS[method](params=params)
        metadata = ServerMessageMetadata(related_request_id=related) if related else None
        return await self.session.send_request(request, result_type, metadata=metadata)

    async def notify(self, notification: BaseModel) -> None:
        await self.session.send_notification(notification)  # type: ignore[arg-type]


class Upstream:
    """One upstream server: its connection (kept by ``keep``) and its latest tool list.

    Sampling, elicitation and roots requests of the server go to the client of the
    session that owns this connection (``session.downstream``)."""

    def __init__(
        self,
        spec: StdioServerParameters | str,
        name: str,
        proxy: UpstreamHost,
        session: ProxySession | None = None,
    ) -> None:
        self.name = name
        self.key = server_key(name)
        self.target = spec
        self.session = session
        self._proxy = proxy
        self.client: Client | None = None
        self.pipe: UpstreamPipe | None = None  # a stdio server's transport (the raw lane)
        self.lane: HttpLane | None = None  # an HTTP server's raw lane
        self.error = "not connected yet"
        self.tools: dict[str, mt.Tool] = {}  # upstream tool name -> its listing
        self.capabilities: mt.ServerCapabilities | None = None
        self._ready = anyio.Event()
        self._lost = anyio.Event()
        self.connections = 0

    def lost(self, why: str) -> None:
        """The connection broke: fail fast until ``keep`` has connected again."""
        if self.client is not None:
            log.warning("upstream %r: %s; connecting again", self.name, why)
            self.error = f"{why}; it is being restarted"
            self.client = None
            self._ready = anyio.Event()
            self._lost.set()

    async def broke(self, message: str, when: str) -> UpstreamError:
        """The connection broke (``message``: the transport's word) ``when`` ("during
        the call"...): restart it; the error that says why (how the server's process
        ended and the end of its stderr, for a stdio server)."""
        pipe = self.pipe
        if pipe is not None and pipe.ended:
            why = await pipe.why_closed(when)
        else:
            why = f"the connection was lost {when} ({message})"
        self.lost(why)
        return UpstreamError(self.name, f"{why}; it is being restarted")

    async def _why_not(self, exc: Exception) -> str:
        """Why a connection attempt failed, in a sentence."""
        pipe = self.pipe
        gone = pipe is not None and (pipe.start_error is not None or pipe.ended)
        if pipe is not None and gone and not isinstance(exc, TimeoutError):
            return await pipe.why_closed("before answering initialize")
        target = f"`{pipe.command}`" if pipe is not None else self.target
        said = pipe.stderr_said() if pipe is not None else ""
        return f"no MCP handshake with {target}: {_leaf(exc)}{said}"

    async def connected(self) -> Client:
        """The live client, waiting (at most ``[mcp] connect_timeout_ms``) while it
        (re)connects.

        Raises:
            UpstreamError: not connected in time, or the last attempt failed.
        """
        if self.client is not None:
            return self.client
        with anyio.move_on_after(self._proxy.connect_timeout):
            await self._ready.wait()
        if self.client is None:
            raise UpstreamError(self.name, self.error)
        return self.client

    async def keep(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Connect, serve until the connection is lost, connect again; forever.

        ``task_status.started()`` is called after the first attempt, whether it succeeded.
        """
        started = False
        failures = 0
        timeout = self._proxy.connect_timeout
        while True:
            try:
                # the handshake and the listing within the timeout: a server that never
                # answers is an error, not a hang
                with anyio.CancelScope(deadline=anyio.current_time() + timeout) as handshake:
                    async with self._client() as client:
                        if self.lane is not None:
                            self.lane.version = client.protocol_version
                        await self.list_all(client)
                        handshake.deadline = math.inf
                        self.capabilities = client.server_capabilities
                        lane = self.lane
                        async with anyio.create_task_group() as drains:
                            if lane is not None:
                                lane.drains = drains  # answered calls' streams end here
                            try:
                                self.client = client
                                self.connections += 1
                                self._lost = anyio.Event()
                                failures = 0
                                self._ready.set()
                                if not started:
                                    started = True
                                    task_status.started()
                                log.info(
                                    "upstream %r connected (%s)",
                                    self.name,
                                    client.protocol_version,
                                )
                                await self._lost.wait()
                            finally:
                                if lane is not None:
                                    lane.drains = None
                if handshake.cancelled_caught:
                    raise TimeoutError(
                        f"no answer to initialize and tools/list within {timeout:g}s "
                        "([mcp] connect_timeout_ms)"
                    )
            except Exception as exc:  # the server did not start, or died during the handshake
                self.client = None
                why = await self._why_not(exc)
                self.error = f"restarting it failed: {why}" if self.connections else why
                # (a first attempt's failure is reported by whoever waits for it: the
                # command line's exit, the client's error)
                level = logging.WARNING if started else logging.INFO
                log.log(level, "upstream %r: %s", self.name, self.error)
                ready, self._ready = self._ready, anyio.Event()
                ready.set()  # wake the waiters: they report the error
            if not started:
                started = True
                task_status.started()
            await anyio.sleep(RESTART_BACKOFF[min(failures, len(RESTART_BACKOFF) - 1)])
            failures += 1

    def _client(self) -> Client:
        target: Any = self.target
        self.pipe = None
        self.lane = None
        if isinstance(target, StdioServerParameters):
            target = self.pipe = UpstreamPipe(target, self.name, self._proxy.max_message)
        else:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            self.lane = lane = HttpLane(target, name=self.name, max_message=self._proxy.max_message)
            http = lane.http = httpx2.AsyncClient(
                headers=self._proxy.headers.get(self.name) or {},
                timeout=httpx2.Timeout(30.0, read=300.0),
                event_hooks={"response": [lane.saw]},
            )
            target = _closing(streamable_http_client(target, http_client=http), http, lane)
        return Client(
            target,
            # legacy: pushed notifications (logging, list_changed) and server-initiated
            # requests reach us only on a handshake-era connection
            mode="legacy",
            # the proxy must never serve a stale listing after list_changed
            cache=None,
            message_handler=self._on_message,
            # forwarded to the downstream client (declared whatever it supports: a
            # client without the capability answers the server with an error)
            sampling_callback=self._sample,
            elicitation_callback=self._elicit,
            list_roots_callback=self._roots,
        )

    async def list_all(self, client: Client) -> list[mt.Tool]:
        tools: list[mt.Tool] = []
        cursor: str | None = None
        for _ in range(_PAGE_LIMIT):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        self.tools = {tool.name: tool for tool in tools}
        await self._proxy.tools_listed(self, tools)
        return tools

    async def call_raw(
        self,
        tool: str,
        args: dict[str, Any],
        meta: dict[str, Any] | None,
        *,
        read_timeout: float | None,
        progress: ProgressFn | None,
    ) -> dict[str, Any]:
        """``tools/call`` upstream; the raw JSON result (no model is built).

        Raises:
            UpstreamError: not connected.
            MCPError: the server answered with an error, the call timed out or the
                connection closed.
        """
        client = await self.connected()
        params: dict[str, Any] = {"name": tool, "arguments": args}
        if meta:
            params["_meta"] = meta
        if self.pipe is not None:  # stdio: the pipe's raw lane
            return await self.pipe.request(
                "tools/call", params, read_timeout=read_timeout, progress=progress
            )
        if self.lane is not None:  # HTTP: POSTed by the proxy, in the client's session
            return await self.lane.request(
                params,
                read_timeout=read_timeout,
                progress=progress,
                on_request=self._server_request,
                on_notification=self._server_notification,
            )
        # (every target _client builds has a raw lane; anything else: the typed call)
        typed = await client.call_tool(
            tool,
            args,
            read_timeout_seconds=read_timeout,
            progress_callback=progress,  # type: ignore[arg-type]
            meta=meta,  # type: ignore[arg-type]
        )
        return typed.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _server_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A request the server made on a raw-lane POST: answered like the client's.

        Raises:
            MCPError: unknown, malformed, or refused by the client.
        """
        model = SERVER_REQUESTS.get(method)
        if model is None:
            raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")
        try:
            typed: Any = model.model_validate({"method": method, "params": params}, by_name=False)
        except ValueError as exc:
            raise MCPError(INVALID_PARAMS, f"{method}: {exc}") from None
        result_type = _RESULTS[method]
        answer = await self._ask_downstream(method, typed.params, result_type)
        if isinstance(answer, mt.ErrorData):
            raise MCPError(answer.code, answer.message, answer.data)
        return answer.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def _server_notification(self, message: dict[str, Any]) -> None:
        try:
            notification = mt.server_notification_adapter.validate_python(message, by_name=False)
        except ValueError as exc:
            log.warning("upstream %r: a notification the SDK does not know: %s", self.name, exc)
            return
        await self._on_message(notification)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            log.warning("upstream %r: %s: %s", self.name, type(message).__name__, message)
            return
        if isinstance(message, mt.ProgressNotification):
            # progress the proxy asked for goes to its call's callback, never here:
            # this one is for no call in flight (a stray or stale token): dropped
            log.debug("upstream %r: progress for no call in flight: dropped", self.name)
            return
        await self._proxy.forward(self, message)

    async def _ask_downstream(
        self, method: str, params: BaseModel | None, result_type: type[_M]
    ) -> _M | mt.ErrorData:
        downstream = self.session.downstream if self.session is not None else None
        if downstream is None or not downstream.supports(_NEEDS[method]):
            return mt.ErrorData(
                code=METHOD_NOT_FOUND,
                message=f"{method}: the MCP client behind interpose does not support "
                f"{_NEEDS[method]}",
            )
        try:
            return await downstream.request(method, params, result_type)
        except MCPError as exc:
            return mt.ErrorData(code=exc.code, message=exc.message, data=exc.data)

    async def _sample(
        self, context: ClientRequestContext, params: mt.CreateMessageRequestParams
    ) -> mt.CreateMessageResult | mt.ErrorData:
        return await self._ask_downstream("sampling/createMessage", params, mt.CreateMessageResult)

    async def _elicit(
        self, context: ClientRequestContext, params: mt.ElicitRequestParams
    ) -> mt.ElicitResult | mt.ErrorData:
        return await self._ask_downstream("elicitation/create", params, mt.ElicitResult)

    async def _roots(self, context: ClientRequestContext) -> mt.ListRootsResult | mt.ErrorData:
        return await self._ask_downstream("roots/list", None, mt.ListRootsResult)


def _leaf(exc: BaseException) -> str:
    """The first exception inside ``exc``'s groups, as ``Type: message``."""
    while inner := getattr(exc, "exceptions", None):  # an exception group
        exc = inner[0]
    return f"{type(exc).__name__}: {exc}"


_RESULTS: dict[str, type[BaseModel]] = {
    "sampling/createMessage": mt.CreateMessageResult,
    "elicitation/create": mt.ElicitResult,
    "roots/list": mt.ListRootsResult,
}


@contextlib.asynccontextmanager
async def _closing(transport: Any, http: Any, lane: HttpLane) -> AsyncIterator[Any]:
    """``transport``, then close the ``httpx2`` client it was given (it does not) and
    the raw lane's connections."""
    try:
        async with transport as streams:
            yield streams
    finally:
        with anyio.CancelScope(shield=True):
            await lane.aclose()
            await http.aclose()


class ProxySession:
    """One downstream MCP session and its own upstream connections.

    Attributes:
        key: the ``mcp-session-id`` (HTTP), or None (stdio; HTTP requests of the
            2026-07-28 era, which carry no session).
        upstreams: one ``Upstream`` per configured server.
        downstream: how to reach the client (set by its first request).
    """

    def __init__(self, key: str | None, proxy: UpstreamHost, specs: list[UpstreamSpec]) -> None:
        self.key = key
        self.upstreams = [Upstream(spec.target, spec.name, proxy, self) for spec in specs]
        self.downstream: Downstream | None = None
        self._scope: anyio.CancelScope | None = None
        self._closed = False

    def close(self) -> None:
        """Close the upstream connections (``run`` returns)."""
        self._closed = True
        if self._scope is not None:
            self._scope.cancel()

    async def run(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Keep every upstream connected until ``scope`` is cancelled; ``started``
        after each first connection attempt."""
        started = False
        with anyio.CancelScope() as self._scope:
            if self._closed:
                self._scope.cancel()
            async with anyio.create_task_group() as tg:
                for upstream in self.upstreams:
                    await tg.start(upstream.keep)
                task_status.started()
                started = True
        if not started:  # cancelled before it started: the waiter must not hang
            task_status.started()
