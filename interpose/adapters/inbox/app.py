"""The inbox's ASGI app (Starlette): the page, its static files and the JSON API.

=========================================  ============================================
``GET /``                                  the page (a fresh CSRF token in it)
``GET /static/{inbox.js,inbox.css}``       its script and style
``GET /api/requests``                      ``{"requests": [...]}``, newest first:
                                           ``?state=pending`` (the default; ``all``, or
                                           another state), ``agent=``, ``tool=``,
                                           ``limit=`` (default 200, at most 1000)
``GET /api/requests/{id}``                 one request (404: unknown)
``POST /api/requests/{id}/decide``         ``{"decision": "approve" | "deny" | "edit",
                                           "reason": ..., "args": {...}, "grant":
                                           {"match", "scope", "ttl"}}``: 200 and the
                                           request as decided; 400 malformed, 404
                                           unknown, 409 no longer pending
``GET /api/grants``                        ``{"grants": [...]}`` (``?all=1``: revoked and
                                           expired too; ``agent=``)
``POST /api/grants/{id}/revoke``           200 and the grant as revoked; 404 unknown
``GET /api/counters``                      ``{"rules": {rule: {count: n}}}``
``GET /api/events``                        server-sent events: one ``data:`` line of JSON
                                           per change of the store (``kind``,
                                           ``request`` or ``grant``)
``GET /api/csrf``                          ``{"csrf": ...}``: a CSRF token for scripts
=========================================  ============================================

Who may call what is ``security.InboxGuard``'s (the outermost layer); every decision is
logged (logger ``interpose.inbox``) with the approver it found, who is also the
``decided_by`` of the request in the store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from contextlib import aclosing
from importlib.resources import files
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from .backend import DecisionError, StoreBackend, parse_decision
from .security import InboxGuard, Tokens, identity

__all__ = ["KEEPALIVE", "EventStream", "build_app"]

log = logging.getLogger("interpose.inbox")

KEEPALIVE = 15.0  # s: a comment line on an idle event stream (proxies close silent ones)
MAX_LIST = 1000  # requests in one listing, at most
_STATIC = files(__package__) / "static"
_TYPES = {"inbox.js": "text/javascript; charset=utf-8", "inbox.css": "text/css; charset=utf-8"}
_NO_STORE = {"cache-control": "no-store"}
# the page runs only its own script and style, and no other site may frame it (a click
# on "approve" through a transparent frame: clickjacking)
_PAGE_HEADERS = {
    **_NO_STORE,
    "content-security-policy": "default-src 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'",
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}

Endpoint = Callable[[Request], Awaitable[Response]]


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


def _refusing(endpoint: Endpoint) -> Endpoint:
    """``endpoint`` with a ``DecisionError`` answered as its status and message."""

    async def answer(request: Request) -> Response:
        try:
            return await endpoint(request)
        except DecisionError as exc:
            return _error(exc.status, str(exc))

    return answer


async def _json_body(request: Request) -> object:
    try:
        return json.loads(await request.body())
    except ValueError as exc:
        raise DecisionError(400, f"the body is not JSON: {exc}") from None


def build_app(
    backend: StoreBackend,
    *,
    host: str,
    tokens: Tokens,
    allowed_hosts: tuple[str, ...] = (),
    events: EventStream | None = None,
) -> InboxGuard:
    """The inbox for ``backend``, behind its guard (``host``: the address it is bound
    to, checked against every request's ``Host``; ``events``: the event stream
    endpoint, to close its streams when the server stops)."""
    page = (_STATIC / "index.html").read_text(encoding="utf-8")
    assets = {name: (_STATIC / name).read_bytes() for name in _TYPES}
    guard: InboxGuard

    async def index(request: Request) -> Response:
        return HTMLResponse(page.replace("{{csrf}}", guard.csrf_token()), headers=_PAGE_HEADERS)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            return _error(404, f"no static file {name}")
        return Response(
            assets[name], media_type=_TYPES[name], headers={"x-content-type-options": "nosniff"}
        )

    async def csrf(request: Request) -> Response:
        return JSONResponse({"csrf": guard.csrf_token()}, headers=_NO_STORE)

    async def listing(request: Request) -> Response:
        query = request.query_params
        state = query.get("state", "pending")
        try:
            limit = max(1, min(int(query.get("limit", "200")), MAX_LIST))
        except ValueError:
            raise DecisionError(400, "limit: expected a number") from None
        found = await backend.requests(
            state=None if state == "all" else state,
            agent=query.get("agent") or None,
            tool=query.get("tool") or None,
            limit=limit,
        )
        return JSONResponse({"requests": found}, headers=_NO_STORE)

    async def one(request: Request) -> Response:
        found = await backend.get(request.path_params["id"])
        if found is None:
            raise DecisionError(404, f"no approval request {request.path_params['id']!r}")
        return JSONResponse(found, headers=_NO_STORE)

    async def decide(request: Request) -> Response:
        request_id = request.path_params["id"]
        approver = identity(request.scope)
        try:
            decision = parse_decision(await _json_body(request))
            decided = await backend.decide(request_id, decision, approver)
        except DecisionError as exc:
            log.warning("decision on %s by %s refused: %s", request_id, approver, exc)
            raise
        log.info(
            "request %s (%s): %s by %s%s",
            request_id,
            decided["tool_name"],
            decided["state"],
            approver,
            f", grant {decided['grant_id']}" if decided.get("grant_id") else "",
        )
        return JSONResponse(decided)

    async def grants(request: Request) -> Response:
        query = request.query_params
        found = await backend.grants(agent=query.get("agent") or None, live=not query.get("all"))
        return JSONResponse({"grants": found}, headers=_NO_STORE)

    async def revoke(request: Request) -> Response:
        approver = identity(request.scope)
        revoked = await backend.revoke(request.path_params["id"], approver)
        log.info("grant %s revoked by %s", revoked["id"], approver)
        return JSONResponse(revoked)

    async def counters(request: Request) -> Response:
        return JSONResponse({"rules": await backend.counters()}, headers=_NO_STORE)

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/static/{name}", static),
            Route("/api/csrf", csrf),
            Route("/api/requests", _refusing(listing)),
            Route("/api/requests/{id}", _refusing(one)),
            Route("/api/requests/{id}/decide", _refusing(decide), methods=["POST"]),
            Route("/api/grants", grants),
            Route("/api/grants/{id}/revoke", _refusing(revoke), methods=["POST"]),
            Route("/api/counters", counters),
            Route("/api/events", events or EventStream(backend)),
        ]
    )
    guard = InboxGuard(app, host=host, tokens=tokens, allowed_hosts=allowed_hosts)
    return guard


class EventStream:
    """``GET /api/events`` (a plain ASGI app): the store's changes as server-sent events,
    a keep-alive comment after ``KEEPALIVE`` s of silence, until the client leaves.

    Three tasks of one task group (no generator holds a cancel scope across a yield):
    the relay of the store's changes, the keep-alive, and the watch for the client's
    disconnect, which ends the other two."""

    def __init__(self, backend: StoreBackend) -> None:
        self.backend = backend
        self._open: set[anyio.CancelScope] = set()

    def close(self) -> None:
        """End every open stream (the server is stopping: its clients reconnect)."""
        for scope in self._open:
            scope.cancel()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        lock = anyio.Lock()  # one message at a time on the connection
        last = anyio.current_time()

        async def write(chunk: str) -> None:
            nonlocal last
            async with lock:
                await send(
                    {"type": "http.response.body", "body": chunk.encode(), "more_body": True}
                )
                last = anyio.current_time()

        async def start() -> None:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [
                        (b"content-type", b"text/event-stream; charset=utf-8"),
                        (b"cache-control", b"no-store"),
                        (b"x-accel-buffering", b"no"),
                    ],
                }
            )
            await write(": interpose inbox\n\n")
            opened.set()

        opened = anyio.Event()
        async with anyio.create_task_group() as tg:
            self._open.add(tg.cancel_scope)

            async def relay() -> None:
                async with aclosing(self.backend.changes()) as changes:
                    # the response starts once this task waits for the first change
                    # (the store follows from then): a client that reads what is there
                    # when the stream opens misses nothing
                    tg.start_soon(start)
                    async for change in changes:
                        await opened.wait()
                        await write(f"data: {json.dumps(change, default=str)}\n\n")

            async def keep_alive() -> None:
                await opened.wait()
                while True:
                    await anyio.sleep(max(0.0, last + KEEPALIVE - anyio.current_time()))
                    if anyio.current_time() >= last + KEEPALIVE:
                        await write(": keep-alive\n\n")

            async def until_gone() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                tg.cancel_scope.cancel()

            tg.start_soon(until_gone)
            tg.start_soon(keep_alive)
            tg.start_soon(relay)
        self._open.discard(tg.cancel_scope)
        if opened.is_set():
            with anyio.CancelScope(shield=True):
                try:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                except OSError:
                    pass  # (the client is gone)
