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

import contextvars
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.abc
import mcp_types as mt
from mcp import Client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ServerEvent,
    ToolsListChanged,
)
from mcp_types.jsonrpc import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    REQUEST_TIMEOUT,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from opentelemetry import propagate, trace
from pydantic import BaseModel

from ...bus import events as ev
from ...middleware.builtins import SECURITY_AUDIT_ID, TOOL_FILTER_ID, SecurityAudit
from ...pipeline.context import acting_as
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
from . import serve
from .bearer import JwtVerifier, principal_of
from .config import McpConfig, mcp_namespace, server_key
from .pathguard import McpPathGuard

# importable from here as before the split (interpose mcp-proxy's argument handling
# imports it from this module); it lives in serve.py
from .serve import stderr_logging as stderr_logging
from .toolset import ToolSetGuard, describe_tools, permissions_deny
from .upstream import (
    Downstream,
    ProgressFn,
    ProxySession,
    SdkDownstream,
    Upstream,
    UpstreamError,
    UpstreamSpec,
)

__all__ = ["Downstream", "McpProxy", "ProxySession", "Upstream", "UpstreamError", "UpstreamSpec"]

log = logging.getLogger("interpose.mcp")

_R = TypeVar("_R")
_M = TypeVar("_M", bound=BaseModel)

TOOL_PIN_PRIORITY = 130  # ahead of the tool filter (120): a refused tool says why

# the downstream and request a tool call is served for: Approval.ask asks through it
_current: contextvars.ContextVar[tuple[Downstream, mt.RequestId | None] | None] = (
    contextvars.ContextVar("interpose_mcp_request", default=None)
)


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
        self.per_session = False  # HTTP: one ProxySession per mcp-session-id
        self.sessions: dict[str | None, ProxySession] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._opening = anyio.Lock()
        self._prefixed = len(self.specs) > 1
        # 2026-07-28 clients get change notifications on subscriptions/listen streams
        self._changes = InMemorySubscriptionBus()
        pin_file = self.config.pin_file
        # the pinned tool set (raises ConfigError for a pin file that is not one)
        self.toolset = ToolSetGuard(
            self.config, (base_dir or Path.cwd()) / pin_file if pin_file is not None else None
        )
        for spec in self.specs:
            pipe.registry.register_tool_namespace(mcp_namespace(spec.name))
        self._install_path_guard()
        self._install_toolset_guard()
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
        if not self.per_session:
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
                tools = await upstream.list_all(client)
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
        self.pipe.register_tool(name)
        exposed = self.exposed(upstream, tool.name)
        if self.toolset.hidden(name):
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

    def _denied(self, name: str) -> bool:
        """Whether the tool filter or a permission rule denies ``name`` outright."""
        return self._filtered(name) or permissions_deny(self.pipe.registry, name)

    async def tools_listed(self, upstream: Upstream, tools: list[mt.Tool]) -> None:
        """Judge each listing of an upstream (at connect, ``tools/list``,
        ``list_changed``) against the pinned tool set; publish what it finds."""
        names = [(self.interpose_name(upstream, tool.name), tool) for tool in tools]
        for name, _ in names:
            self.pipe.register_tool(name)
        describe_tools(self.pipe.registry, upstream.name, names)
        found = self.toolset.judge(mcp_namespace(upstream.name), names, self._denied)
        for fields in found:
            log.warning("%s (%s)", fields["reason"], fields["decision"])
            if "tool_set_changed" in self.pipe.bus.wanted:
                await self.pipe.emit(
                    ev.ToolSetChanged, "", "mcp-proxy", "", server=upstream.name, **fields
                )

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
            principal=principal_of(getattr(ctx.request, "scope", None)),
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
        principal: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """One ``tools/call`` of a client: the tool stage around the upstream call; the
        result as JSON (the upstream's own when the call went through).

        ``related``: an approval question goes out tied to the request (on its
        stream, over HTTP); False: on the session's own channel.  ``principal``: the
        claims of the client's bearer token (``[mcp.auth]``), the call's principal.

        Raises:
            MCPError: an unknown tool, or the upstream's protocol error (its code kept).
        """
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
            with acting_as(principal):
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
        built = McpProxy._result_of(result, failed)
        messages = result.details.get("system_messages")
        if messages:
            # what hooks of a Claude Code settings file said for the user
            meta = built.get("_meta")
            known = dict(meta) if isinstance(meta, dict) else {}
            built = {**built, "_meta": {**known, "interpose/system_messages": list(messages)}}
        return built

    @staticmethod
    def _result_of(result: ToolResult, failed: list[MCPError]) -> dict[str, Any]:
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
                    await upstream.list_all(client)
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
        guard = McpPathGuard(audit.handler)
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

    def _install_toolset_guard(self) -> None:
        """Calls of hidden or blocked tools are refused, ``ask`` ones asked (a client may
        call what an earlier listing showed it)."""
        guard = self.toolset
        for spec in self.specs:
            key, matcher = server_key(spec.name), f"^{mcp_namespace(spec.name).lower()}"
            hooks: list[tuple[str, str, Callable[..., Any]]] = [("tool.before", "", guard.before)]
            if guard.may_ask:  # an approver puts every call through the approval step
                hooks.append(("tool.approve", ".ask", guard.approve))
            for hook, suffix, handler in hooks:
                self.pipe.registry.add(
                    Interceptor(
                        id=f"mcp:tool-pin:{key}{suffix}",
                        hook=hook,
                        handler=handler,
                        priority=TOOL_PIN_PRIORITY,
                        tool_matcher=matcher,
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
        """Serve the client on this process's stdin/stdout until it disconnects
        (``serve.serve_stdio``).

        Raises:
            UpstreamError: an upstream did not start (or died during its handshake):
                the client's first request (its ``initialize``) got this error.
        """
        await serve.serve_stdio(self)

    async def serve_http(
        self,
        host: str,
        port: int,
        *,
        ready: Callable[[str], None] | None = None,
        auth: JwtVerifier | None = None,
    ) -> None:
        """Serve streamable HTTP on ``host:port`` (``/mcp``) until cancelled; ``ready``
        gets the URL once the socket listens (port 0: the port the system chose)
        (``serve.serve_http``).

        Each MCP session gets its own upstream connections, closed with the session;
        ``auth``: every request needs a bearer token it accepts (else 401).

        Raises:
            UsageError: ``host:port`` cannot be listened on (in use, not an address
                of this machine).
            UpstreamError: an upstream did not start (or died during its handshake):
                nothing listens.
        """
        await serve.serve_http(self, host, port, ready=ready, auth=auth)


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
