"""The MCP gateway: an MCP server toward the client, an MCP client toward each upstream.

Every ``tools/call`` runs interpose's tool stage (tool.before → tool.approve → the
upstream call → tool.after) under the name ``mcp__<server>__<tool>``; everything else
(resources, prompts, completion, logging, progress, cancellation, ``list_changed``,
resource subscriptions, and the upstream's own sampling, elicitation and roots requests)
passes through.

A tool call is relayed as JSON: the upstream's result is the raw JSON object it sent,
handed to ``tool.after`` as a dict and back to the client unchanged (nothing is decoded
into models and encoded again).  Over stdio, a handshake-era client's ``tools/call``
does not even go through the SDK's server: ``StdioFront`` (front.py) reads and writes
the JSON lines itself and sends everything else to the SDK's ``Server``.

Each downstream MCP session has its own upstream connections (``ProxySession``): over
stdio there is one session; over streamable HTTP each ``mcp-session-id`` gets its own
upstream processes or HTTP sessions, closed when the client's session ends, so one
client's subscriptions, log level, roots and elicitations never reach another.

Each upstream ``Client`` lives in one long-lived task (``Upstream.keep``): anyio cancel
scopes must be entered and left in the same task, so nothing but that task ever enters or
leaves the client.  A lost connection (the server crashed) fails the calls in flight
with a readable error and wakes that task, which connects again.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import logging
import math
import os
import socket
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio
import anyio.abc
import mcp_types as mt
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client, StdioServerParameters
from mcp.client.context import ClientRequestContext
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp_types.jsonrpc import (
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    REQUEST_TIMEOUT,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from opentelemetry import propagate, trace
from pydantic import BaseModel

from ...bus import events as ev
from ...errors import InterposeError, UsageError
from ...middleware.builtins import SECURITY_AUDIT_ID, TOOL_FILTER_ID, SecurityAudit
from ...pipeline.payloads import (
    Approval,
    ApprovalRequest,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
)
from ...pipeline.pipeline import Pipeline
from ...pipeline.registry import Interceptor
from ...pipeline.tools import normalize_tool_name
from .config import McpConfig, McpServerConfig, mcp_namespace, server_key
from .pipe import HttpLane, UpstreamPipe

__all__ = ["Downstream", "McpProxy", "ProxySession", "Upstream", "UpstreamError", "UpstreamSpec"]

log = logging.getLogger("interpose.mcp")

_R = TypeVar("_R")
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


# the downstream and request a tool call is served for: Approval.ask asks through it
_current: contextvars.ContextVar[tuple[Downstream, mt.RequestId | None] | None] = (
    contextvars.ContextVar("interpose_mcp_request", default=None)
)


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
        proxy: McpProxy,
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
                        await self._list_all(client)
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

    async def _list_all(self, client: Client) -> list[mt.Tool]:
        tools: list[mt.Tool] = []
        cursor: str | None = None
        for _ in range(_PAGE_LIMIT):
            page = await client.list_tools(cursor=cursor)
            tools += page.tools
            cursor = page.next_cursor
            if cursor is None:
                break
        self.tools = {tool.name: tool for tool in tools}
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

    def __init__(self, key: str | None, proxy: McpProxy, specs: list[UpstreamSpec]) -> None:
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


class McpProxy:
    """An MCP server that puts ``pipe`` in front of one or more upstream MCP servers.

    Args:
        pipe: the pipeline every tool call goes through.
        upstreams: the servers, by name (``mcp__<name>__<tool>`` in interceptors).
        config: the ``[mcp]`` options (tool filter in the listing, path guard, pinning).
        base_dir: what a relative ``pin_file`` resolves against.
        name: the proxy's server name toward the client.
    """

    def __init__(
        self,
        pipe: Pipeline,
        upstreams: list[UpstreamSpec],
        *,
        config: McpConfig | None = None,
        base_dir: Path | None = None,
        name: str = "interpose",
    ) -> None:
        if not upstreams:
            raise ValueError("McpProxy needs at least one upstream server")
        self.pipe = pipe
        self.config = config or McpConfig()
        self.name = name
        self.max_message = self.config.max_message_bytes
        self.connect_timeout = self.config.connect_timeout_ms / 1000
        self.call_timeout = (
            self.config.call_timeout_ms / 1000 if self.config.call_timeout_ms else None
        )
        self.headers = {spec.name: spec.headers for spec in upstreams if spec.headers}
        self.specs = list(upstreams)
        # the first session: connected at start (its capabilities are the proxy's)
        self.first = ProxySession(None, self, self.specs)
        self.upstreams = self.first.upstreams
        self._first_claimed = False
        self._per_session = False  # HTTP: one ProxySession per mcp-session-id
        self.sessions: dict[str | None, ProxySession] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._opening = anyio.Lock()
        self._prefixed = len(self.specs) > 1
        self._read_only: dict[str, bool] = {}
        self._pins: dict[str, str] = {}
        self._pin_path: Path | None = None
        self._changed: set[str] = set()  # tools whose description drifted
        self._pending_events: list[dict[str, Any]] = []  # published on the next call
        # 2026-07-28 clients get change notifications on subscriptions/listen streams
        self._changes = InMemorySubscriptionBus()
        if self.config.pin_file is not None:
            self._pin_path = (base_dir or Path.cwd()) / self.config.pin_file
            if self._pin_path.is_file():
                self._pins = json.loads(self._pin_path.read_text(encoding="utf-8"))
        for spec in self.specs:
            pipe.registry.register_tool_namespace(mcp_namespace(spec.name))
        self._install_path_guard()
        self._ask_fallback = pipe.human_approval
        pipe.human_approval = self._ask

    # -- names --------------------------------------------------------------------------

    def exposed(self, upstream: Upstream, tool: str) -> str:
        """The name the client sees: ``<server>__<tool>`` behind several upstreams."""
        return f"{upstream.key}__{tool}" if self._prefixed else tool

    def route(self, session: ProxySession, exposed: str) -> tuple[Upstream, str] | None:
        """The upstream and its tool name behind an exposed name, in ``session``."""
        for upstream in session.upstreams:
            prefix = f"{upstream.key}__" if self._prefixed else ""
            if exposed.startswith(prefix) and exposed[len(prefix) :] in upstream.tools:
                return upstream, exposed[len(prefix) :]
        return None

    @staticmethod
    def interpose_name(upstream: Upstream, tool: str) -> str:
        """The name interceptors and matchers see: ``mcp__<server>__<tool>``."""
        return f"mcp__{upstream.key}__{tool}"

    # -- sessions -------------------------------------------------------------------------

    async def session_for(self, key: str | None) -> ProxySession:
        """The session of ``key``: over stdio always the first; over HTTP the first
        goes to the first session seen, each further one gets its own connections.

        Raises:
            RuntimeError: the proxy is not running (``connect`` was not called).
        """
        if not self._per_session:
            return self.first
        found = self.sessions.get(key)
        if found is not None:
            return found
        async with self._opening:
            found = self.sessions.get(key)
            if found is not None:
                return found
            if not self._first_claimed:
                self._first_claimed = True
                found = self.first
                found.key = key
            else:
                if self._tg is None:
                    raise RuntimeError("McpProxy: connect() first")
                found = ProxySession(key, self, self.specs)
                await self._tg.start(found.run)
            self.sessions[key] = found
            log.info("downstream session %s: upstream connections opened", key)
            return found

    def end_session(self, key: str) -> None:
        """The client's session ended: close its upstream connections."""
        session = self.sessions.pop(key, None)
        if session is not None:
            log.info("downstream session %s ended: upstream connections closed", key)
            session.close()

    async def _session(self, ctx: ServerRequestContext[Any]) -> ProxySession:
        session = await self.session_for(self._http_session(ctx))
        if session.downstream is None or (
            isinstance(session.downstream, SdkDownstream)
            and session.downstream.session is not ctx.session
        ):
            session.downstream = SdkDownstream(ctx.session)
        return session

    @staticmethod
    def _http_session(ctx: ServerRequestContext[Any]) -> str | None:
        headers = getattr(ctx.request, "headers", None)
        if headers is not None:
            session = headers.get("mcp-session-id")
            if session:
                return str(session)
        return None

    @classmethod
    def _session_key(cls, ctx: ServerRequestContext[Any]) -> str:
        return cls._http_session(ctx) or "stdio"

    # -- the server toward the client --------------------------------------------------

    def server(self) -> Server[Any]:
        """The low-level MCP server; its capabilities follow the upstreams' (connect
        them first: ``run`` does)."""
        caps = [u.capabilities for u in self.upstreams if u.capabilities is not None]
        handlers: dict[str, Any] = {
            "on_list_tools": self._list_tools,
            "on_call_tool": self._call_tool,
            "on_subscriptions_listen": ListenHandler(self._changes),
        }
        if any(c.resources is not None for c in caps):
            handlers |= {
                "on_list_resources": self._list_resources,
                "on_list_resource_templates": self._list_resource_templates,
                "on_read_resource": self._read_resource,
            }
            if any(c.resources is not None and c.resources.subscribe for c in caps):
                handlers |= {
                    "on_subscribe_resource": self._subscribe,
                    "on_unsubscribe_resource": self._unsubscribe,
                }
        if any(c.prompts is not None for c in caps):
            handlers |= {"on_list_prompts": self._list_prompts, "on_get_prompt": self._get_prompt}
        if any(c.completions is not None for c in caps):
            handlers["on_completion"] = self._complete
        srv: Server[Any] = Server(self.name, version="interpose", **handlers)
        # the HTTP transport builds the handshake's options itself, with no listChanged:
        # make the default the upstreams' (what stdio passes explicitly)
        default_options = srv.create_initialization_options

        def initialization_options(
            notification_options: NotificationOptions | None = None, *args: Any, **kwargs: Any
        ) -> Any:
            options = notification_options or self.notification_options()
            return default_options(options, *args, **kwargs)

        srv.create_initialization_options = initialization_options  # type: ignore[method-assign]
        if any(c.logging is not None for c in caps):
            srv.add_request_handler("logging/setLevel", mt.SetLevelRequestParams, self._set_level)
        return srv

    def notification_options(self) -> NotificationOptions:
        """``listChanged`` as the upstreams advertise it (we forward their notifications)."""
        caps = [u.capabilities for u in self.upstreams if u.capabilities is not None]
        return NotificationOptions(
            prompts_changed=any(c.prompts is not None and c.prompts.list_changed for c in caps),
            resources_changed=any(
                c.resources is not None and c.resources.list_changed for c in caps
            ),
            tools_changed=any(c.tools is not None and c.tools.list_changed for c in caps),
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListToolsResult:
        session = await self._session(ctx)
        listed: list[mt.Tool] = []
        for upstream in session.upstreams:
            # a server that is down is an error, never a list without its tools
            try:
                client = await upstream.connected()
                tools = await upstream._list_all(client)
            except MCPError as exc:
                if exc.code == CONNECTION_CLOSED:
                    broke = await upstream.broke(exc.message, "during tools/list")
                    raise MCPError(CONNECTION_CLOSED, str(broke)) from None
                raise
            except UpstreamError as exc:
                raise MCPError(CONNECTION_CLOSED, str(exc)) from None
            for tool in tools:
                shown = self._admit(upstream, tool)
                if shown is not None:
                    listed.append(shown)
        return mt.ListToolsResult(tools=listed)

    def _admit(self, upstream: Upstream, tool: mt.Tool) -> mt.Tool | None:
        """Register the tool, check its pin and the tool filter; the tool as the client
        sees it, or None when it is hidden."""
        name = self.interpose_name(upstream, tool.name)
        normalized = self.pipe.register_tool(name)
        hints = tool.annotations
        self._read_only[normalized] = bool(hints is not None and hints.read_only_hint)
        exposed = self.exposed(upstream, tool.name)
        if (
            self.config.pin_descriptions != "off"
            and not self._pinned(name, tool)
            and self.config.pin_descriptions == "hide"
        ):
            return None
        if self.config.hide_denied and self._filtered(name):
            return None
        if exposed == tool.name:
            return tool
        return tool.model_copy(update={"name": exposed})

    def _filtered(self, name: str) -> bool:
        """Whether the tool filter blocks ``name`` whatever its arguments."""
        for reg in self.pipe.registry.get("tool.before", tool=name):
            if reg.id != TOOL_FILTER_ID or not isinstance(reg, Interceptor):
                continue
            out = ToolBeforeOutput(args={})
            reg.handler(ToolBeforeInput(tool_name=normalize_tool_name(name), raw_name=name), out)
            return out.block
        return False

    def _pinned(self, name: str, tool: mt.Tool) -> bool:
        """Trust on first use: False when the description or schema changed since it
        was first seen (reported as an ``interceptor_failed`` event, once)."""
        digest = hashlib.sha256(
            json.dumps(
                [tool.description or "", tool.input_schema], sort_keys=True, default=str
            ).encode()
        ).hexdigest()
        pinned = self._pins.get(name)
        if pinned is None:
            self._pins[name] = digest
            if self._pin_path is not None:
                self._pin_path.write_text(json.dumps(self._pins, indent=1), encoding="utf-8")
            return True
        if pinned == digest:
            return True
        if name not in self._changed:
            self._changed.add(name)
            log.warning("tool %s: its description changed since it was pinned", name)
            if "interceptor_failed" in self.pipe.bus.wanted:
                self._pending_events.append(
                    {
                        "hook": "tools/list",
                        "interceptor_id": "mcp:description-pin",
                        "error_type": "DescriptionChanged",
                        "error": f"the description or input schema of {name} changed since it "
                        "was pinned",
                        "policy": self.config.pin_descriptions,
                        "tool_name": normalize_tool_name(name),
                    }
                )
        return False

    async def _flush_events(self) -> None:
        while self._pending_events:
            fields = self._pending_events.pop(0)
            await self.pipe.emit(ev.InterceptorFailed, "", "mcp-proxy", "", **fields)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: mt.CallToolRequestParams
    ) -> dict[str, Any] | mt.CallToolResult:
        session = await self._session(ctx)
        downstream = session.downstream
        assert downstream is not None  # set by _session

        async def progress(value: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(value, total, message)

        result = await self.call_tool(
            session,
            params.name,
            dict(params.arguments or {}),
            params.meta,
            request_id=ctx.request_id,
            session_key=self._session_key(ctx),
            progress=progress,
            downstream=downstream,
        )
        if ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
            return result  # the upstream's JSON as it sent it
        # a 2026-07-28 result has fields of its own (resultType): the SDK's model adds them
        return mt.CallToolResult.model_validate(result, by_name=False)

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
    ) -> dict[str, Any]:
        """One ``tools/call`` of a client: the tool stage around the upstream call; the
        result as JSON (the upstream's own when the call went through).

        ``related``: an approval question goes out tied to the request (on its
        stream, over HTTP); False: on the session's own channel.

        Raises:
            MCPError: an unknown tool, or the upstream's protocol error (its code kept).
        """
        if self._pending_events:
            await self._flush_events()
        route = self.route(session, exposed)
        if route is None:
            # names that were never listed are refused, as the servers themselves do
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {exposed}")
        upstream, tool = route
        name = self.interpose_name(upstream, tool)
        failed: list[MCPError] = []
        # the client's own _meta (trace context, vendor keys) goes on; the protocol's
        # envelope keys and its progress token belong to the downstream hop only
        meta = (
            {
                key: value
                for key, value in client_meta.items()
                if key != "progressToken" and not key.startswith("io.modelcontextprotocol/")
            }
            if client_meta
            else None
        ) or None
        timeout = self.call_timeout

        async def call(args: dict[str, Any]) -> dict[str, Any]:
            span = trace.get_current_span()
            upstream_meta = meta
            if span.is_recording():
                span.set_attribute("mcp.server.name", upstream.name)
                carrier: dict[str, str] = {}
                propagate.inject(carrier)
                upstream_meta = {**(meta or {}), **carrier}
            try:
                return await upstream.call_raw(
                    tool, args, upstream_meta, read_timeout=timeout, progress=progress
                )
            except MCPError as exc:
                if exc.code == CONNECTION_CLOSED:
                    raise await upstream.broke(exc.message, "during the call") from None
                if exc.code == REQUEST_TIMEOUT and timeout is not None:
                    # our own limit ([mcp] call_timeout_ms), not the server's answer: the
                    # model reads why (the SDK has already cancelled the request upstream)
                    raise UpstreamError(
                        upstream.name, f"no answer within {timeout:g}s (call_timeout_ms)"
                    ) from None
                failed.append(exc)
                raise

        asking = (downstream, request_id if related else None) if downstream else None
        token = _current.set(asking)
        try:
            result = await self.pipe.call_tool(
                name,
                arguments,
                call=call,
                call_id=str(request_id) if request_id is not None else None,
                session_key=session_key,
            )
        finally:
            _current.reset(token)
        return self._to_mcp(result, failed)

    @staticmethod
    def _to_mcp(result: ToolResult, failed: list[MCPError]) -> dict[str, Any]:
        output = result.output
        if result.status == "error" and failed and output == f"MCPError: {failed[-1]}":
            # a protocol error of the upstream (-32602 ...) reaches the client as itself
            raise failed[-1]
        if (
            result.status in ("ok", "responded")
            and isinstance(output, dict)
            and isinstance(output.get("content"), list)
        ):
            # a CallToolResult (the upstream's, as it sent it, or a responder's)
            if result.is_error and not output.get("isError"):
                return {**output, "isError": True}
            return output
        text = output if isinstance(output, str) else json.dumps(output, default=str)
        built: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        if isinstance(output, dict):
            built["structuredContent"] = output
        if result.is_error:
            built["isError"] = True
        return built

    # -- pass-through ---------------------------------------------------------------------

    @staticmethod
    def _owner(session: ProxySession, kind: str) -> Upstream:
        """The upstream that serves ``kind`` (resources, prompts...): the first that
        advertises it."""
        for upstream in session.upstreams:
            caps = upstream.capabilities
            if caps is not None and getattr(caps, kind, None) is not None:
                return upstream
        return session.upstreams[0]

    async def _forward(
        self, ctx: ServerRequestContext[Any], kind: str, op: Callable[[Client], Awaitable[_R]]
    ) -> _R:
        upstream = self._owner(await self._session(ctx), kind)
        try:
            client = await upstream.connected()
        except UpstreamError as exc:
            raise MCPError(CONNECTION_CLOSED, str(exc)) from None
        try:
            return await op(client)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                broke = await upstream.broke(exc.message, f"during {kind}")
                raise MCPError(CONNECTION_CLOSED, str(broke)) from None
            raise

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourcesResult:
        cursor = params.cursor if params else None
        return await self._forward(ctx, "resources", lambda c: c.list_resources(cursor=cursor))

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListResourceTemplatesResult:
        cursor = params.cursor if params else None
        return await self._forward(
            ctx, "resources", lambda c: c.list_resource_templates(cursor=cursor)
        )

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: mt.ReadResourceRequestParams
    ) -> mt.ReadResourceResult:
        return await self._forward(ctx, "resources", lambda c: c.read_resource(params.uri))

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: mt.SubscribeRequestParams
    ) -> mt.EmptyResult:
        return await self._forward(ctx, "resources", lambda c: c.subscribe_resource(params.uri))

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: mt.UnsubscribeRequestParams
    ) -> mt.EmptyResult:
        return await self._forward(ctx, "resources", lambda c: c.unsubscribe_resource(params.uri))

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: mt.PaginatedRequestParams | None
    ) -> mt.ListPromptsResult:
        cursor = params.cursor if params else None
        return await self._forward(ctx, "prompts", lambda c: c.list_prompts(cursor=cursor))

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: mt.GetPromptRequestParams
    ) -> mt.GetPromptResult:
        return await self._forward(
            ctx, "prompts", lambda c: c.get_prompt(params.name, params.arguments)
        )

    async def _complete(
        self, ctx: ServerRequestContext[Any], params: mt.CompleteRequestParams
    ) -> mt.CompleteResult:
        context = params.context.arguments if params.context is not None else None
        argument = {"name": params.argument.name, "value": params.argument.value}
        return await self._forward(
            ctx, "completions", lambda c: c.complete(params.ref, argument, context)
        )

    async def _set_level(
        self, ctx: ServerRequestContext[Any], params: mt.SetLevelRequestParams
    ) -> mt.EmptyResult:
        async def op(client: Client) -> mt.EmptyResult:
            return await client.session.set_logging_level(params.level)

        return await self._forward(ctx, "logging", op)

    async def forward(self, upstream: Upstream, message: Any) -> None:
        """Send an upstream notification (logging, list_changed, resource updates) to
        the client of the session that owns the upstream connection (and list changes
        to 2026-07-28 listen streams)."""
        if isinstance(message, mt.ToolListChangedNotification):
            # re-read it now: the next tools/list must not route with the old names
            client = upstream.client
            if client is not None:
                with anyio.move_on_after(self.connect_timeout):
                    await upstream._list_all(client)
        event = _server_event(message)
        session = upstream.session
        if event is not None and (
            not isinstance(event, ResourceUpdated) or session is None or session.key is None
        ):
            # a subscription of an HTTP session is its own: its updates go to it only
            await self._changes.publish(event)
        downstream = session.downstream if session is not None else None
        if downstream is None:
            return
        try:
            await downstream.notify(message)
        except Exception as exc:  # that client went away
            log.info("downstream %s: notification not delivered: %s", session, exc)

    # -- Approval.ask through elicitation ---------------------------------------------------

    async def _ask(self, request: ApprovalRequest, reason: str) -> bool | Approval:
        """Ask the human through the client (MCP elicitation) when it can; else the
        pipeline's own human-approval handler, else deny."""
        current = _current.get()
        if current is not None and current[0].supports("elicitation"):
            downstream, related = current
            args = json.dumps(request.args, default=str)
            question = mt.ElicitRequestFormParams(
                message=f"interpose: {reason or 'approval required'}\n"
                f"tool: {request.tool_name}\narguments: {args}\nAllow this call?",
                requested_schema={
                    "type": "object",
                    "properties": {"allow": {"type": "boolean", "title": "Allow this call"}},
                    "required": ["allow"],
                },
            )
            answer = await downstream.request(
                "elicitation/create", question, mt.ElicitResult, related
            )
            allowed = answer.action == "accept" and bool((answer.content or {}).get("allow"))
            if allowed:
                return Approval.allow()
            return Approval.deny(f"{reason}: the user said no ({answer.action})")
        if self._ask_fallback is not None:
            answer_ = self._ask_fallback(request, reason)
            if not isinstance(answer_, bool | Approval):
                answer_ = await answer_
            return answer_
        return Approval.deny(f"approval required ({reason}): the MCP client cannot be asked")

    # -- the path guard on MCP file tools ---------------------------------------------------

    def _install_path_guard(self) -> None:
        if not self.config.path_guard:
            return
        audit = None
        for reg in self.pipe.registry.list():
            if reg.id == SECURITY_AUDIT_ID and isinstance(reg, Interceptor):
                audit = reg
        if audit is None or not isinstance(audit.handler, SecurityAudit):
            return  # the security audit is off: so is its MCP twin
        guard = McpPathGuard(audit.handler, self._read_only)
        for spec in self.specs:
            self.pipe.registry.add(
                Interceptor(
                    id=f"mcp:path-guard:{server_key(spec.name)}",
                    hook="tool.before",
                    handler=guard,
                    priority=audit.priority,
                    tool_matcher=f"^{mcp_namespace(spec.name).lower()}",
                    on_error="block",
                    source="mcp",
                )
            )

    # -- running --------------------------------------------------------------------------

    async def connect(self, tg: anyio.abc.TaskGroup) -> None:
        """Start the first session's connections in ``tg`` (further sessions start
        there too); return after each first attempt."""
        self._tg = tg
        await tg.start(self.first.run)

    def start_failure(self) -> UpstreamError | None:
        """The error of an upstream whose first connection attempt failed (after
        ``connect``): the command that cannot start or died during the handshake.  The
        first session's connections are then closed (no more attempts)."""
        for upstream in self.first.upstreams:
            if not upstream.connections:
                self.first.close()
                return UpstreamError(upstream.name, upstream.error)
        return None

    async def serve_stdio(self) -> None:
        """Serve the client on this process's stdin/stdout until it disconnects.

        Raises:
            UpstreamError: an upstream did not start (or died during its handshake):
                the client's first request (its ``initialize``) got this error.
        """
        from .front import StdioFront

        async with anyio.create_task_group() as tg:
            front = StdioFront.claim(self)
            if front is not None:
                with front:
                    await self.connect(tg)
                    if (failed := self.start_failure()) is not None:
                        await front.refuse(str(failed))
                        raise failed
                    await front.serve(self.server())
            else:  # stdin or stdout is a regular file: the SDK's own transport
                from mcp.server.stdio import stdio_server

                # claim stdin/stdout before the children start: nothing else may write there
                async with stdio_server() as (read, write):
                    await self.connect(tg)
                    if (failed := self.start_failure()) is not None:
                        await _refuse(read, write, str(failed))
                        raise failed
                    srv = self.server()
                    await srv.run(
                        read, write, srv.create_initialization_options(self.notification_options())
                    )
            tg.cancel_scope.cancel()

    async def serve_http(
        self, host: str, port: int, *, ready: Callable[[str], None] | None = None
    ) -> None:
        """Serve streamable HTTP on ``host:port`` (``/mcp``) until cancelled; ``ready``
        gets the URL once the socket listens (port 0: the port the system chose).

        Each MCP session gets its own upstream connections, closed with the session.

        Raises:
            UsageError: ``host:port`` cannot be listened on (in use, not an address
                of this machine).
            UpstreamError: an upstream did not start (or died during its handshake):
                nothing listens.
        """
        import uvicorn

        listening = _listen(host, port)
        async with anyio.create_task_group() as tg:
            self._per_session = True
            await self.connect(tg)
            if (failed := self.start_failure()) is not None:
                raise failed
            srv = self.server()
            from .front import HttpFront

            asgi = srv.streamable_http_app(host=host, max_request_body_size=self.max_message)
            app = HttpFront(asgi, self, srv.session_manager)
            self._watch_sessions(srv)
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
            await server.serve(sockets=[listening])
            tg.cancel_scope.cancel()

    def _watch_sessions(self, srv: Server[Any]) -> None:
        """Close a session's upstream connections when the SDK's session manager
        forgets the session (the client's DELETE, its idle timeout, a crash)."""
        manager: Any = srv.session_manager
        discard = getattr(manager, "_discard_session", None)
        if discard is None:  # another SDK layout: sessions then end with the proxy
            log.warning("mcp-proxy: cannot see HTTP sessions end; upstreams close on exit")
            return

        async def discard_and_close(session_id: str, transport: Any) -> None:
            self.end_session(session_id)
            await discard(session_id, transport)

        manager._discard_session = discard_and_close


class McpPathGuard:
    """The security audit's path rules on MCP tools: every path-like argument
    (``path``, ``paths``, ``source``, ``destination``, ...) is checked; a tool is a
    reader only when its listing says ``readOnlyHint``."""

    KEYS = ("path", "file_path", "file", "source", "destination", "paths", "files")

    def __init__(self, audit: SecurityAudit, read_only: dict[str, bool]) -> None:
        self._audit = audit
        self._read_only = read_only

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.block:
            return
        write = not self._read_only.get(inp.tool_name, False)
        for path in _paths(out.args, self.KEYS):
            reason = self._audit.check(path, write=write)
            if reason is not None:
                out.block = True
                out.block_reason = reason
                return


async def _refuse(
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


def _server_event(message: Any) -> ServerEvent | None:
    """The change event of an upstream notification, for 2026-07-28 listen streams."""
    if isinstance(message, mt.ToolListChangedNotification):
        return ToolsListChanged()
    if isinstance(message, mt.PromptListChangedNotification):
        return PromptsListChanged()
    if isinstance(message, mt.ResourceListChangedNotification):
        return ResourcesListChanged()
    if isinstance(message, mt.ResourceUpdatedNotification):
        return ResourceUpdated(uri=str(message.params.uri))
    return None


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


def _paths(args: dict[str, Any], keys: tuple[str, ...]) -> Iterator[str]:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value:
            yield value
        elif isinstance(value, list):
            yield from (item for item in value if isinstance(item, str) and item)


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
