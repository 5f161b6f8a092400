"""The inbox's ASGI app (Starlette): the page, its static files and the JSON API.

=========================================  ============================================
``GET /``                                  the page (a fresh CSRF token in it)
``GET /static/{inbox.js,inbox.css}``       its script and style
``GET /api/requests``                      requests, newest first: ``?state=pending``
                                           (default; ``all``), ``agent=``, ``tool=``,
                                           ``limit=`` (default 200)
``GET /api/requests/{id}``                 one request (404: unknown)
``POST /api/requests/{id}/decide``         ``{"decision": "approve"}``,
                                           ``{"decision": "deny", "reason": ...}``,
                                           ``{"decision": "edit", "args": {...}}``,
                                           ``{"decision": "grant", "scope": "session" |
                                           "agent", "ttl_s": 3600 | null}``: 200 and
                                           the request as decided; 400 malformed, 404
                                           unknown, 409 already decided (nothing changed)
``GET /api/counters``                      ``{"rules": {rule: {state: count}}}``
``GET /api/events``                        server-sent events: one ``data:`` line of JSON
                                           ``{"request": {...}}`` per change in the store
``GET /api/csrf``                          ``{"csrf": ...}``: a CSRF token for scripts
=========================================  ============================================

Who may call what is ``security.InboxGuard``'s (the outermost layer); every decision is
logged (logger ``interpose.inbox``) with the approver it found.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from importlib.resources import files

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from .backend import Backend, DecisionError, parse_decision
from .security import InboxGuard, Tokens, identity

__all__ = ["KEEPALIVE", "build_app"]

log = logging.getLogger("interpose.inbox")

KEEPALIVE = 15.0  # s: a comment line on an idle event stream (proxies close silent ones)
MAX_LIST = 1000  # requests in one listing, at most
_STATIC = files(__package__) / "static"
_TYPES = {"inbox.js": "text/javascript; charset=utf-8", "inbox.css": "text/css; charset=utf-8"}


def build_app(
    backend: Backend, *, host: str, tokens: Tokens, allowed_hosts: tuple[str, ...] = ()
) -> InboxGuard:
    """The inbox for ``backend``, behind its guard (``host``: the address it is bound
    to, checked against every request's ``Host``)."""
    page = (_STATIC / "index.html").read_text(encoding="utf-8")
    assets = {name: (_STATIC / name).read_bytes() for name in _TYPES}
    guard: InboxGuard

    async def index(request: Request) -> Response:
        html = page.replace("{{csrf}}", guard.csrf_token())
        return HTMLResponse(html, headers=_NO_STORE)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            return _error(404, f"no static file {name}")
        return Response(assets[name], media_type=_TYPES[name])

    async def csrf(request: Request) -> Response:
        return JSONResponse({"csrf": guard.csrf_token()}, headers=_NO_STORE)

    async def listing(request: Request) -> Response:
        query = request.query_params
        state = query.get("state", "pending")
        try:
            limit = min(int(query.get("limit", "200")), MAX_LIST)
        except ValueError:
            return _error(400, "limit: expected a number")
        views = await backend.list(
            state=None if state == "all" else state,
            agent=query.get("agent") or None,
            tool=query.get("tool") or None,
            limit=limit,
        )
        return JSONResponse({"requests": views}, headers=_NO_STORE)

    async def one(request: Request) -> Response:
        view = await backend.get(request.path_params["id"])
        if view is None:
            return _error(404, f"no approval request {request.path_params['id']!r}")
        return JSONResponse(view, headers=_NO_STORE)

    async def decide(request: Request) -> Response:
        request_id = request.path_params["id"]
        approver = identity(request.scope)
        try:
            body = json.loads(await request.body())
            decision = parse_decision(body)
            view = await backend.decide(request_id, decision, approver)
        except json.JSONDecodeError as exc:
            return _error(400, f"the body is not JSON: {exc}")
        except DecisionError as exc:
            log.warning("refused decision on %s by %s: %s", request_id, approver, exc)
            return _error(exc.status, str(exc))
        log.info(
            "decision on %s (%s): %s by %s",
            request_id,
            view.get("tool_name"),
            view.get("state"),
            approver,
        )
        return JSONResponse(view)

    async def counters(request: Request) -> Response:
        return JSONResponse({"rules": await backend.counters()}, headers=_NO_STORE)

    async def events(request: Request) -> Response:
        return StreamingResponse(
            _stream(backend),
            media_type="text/event-stream",
            headers={**_NO_STORE, "x-accel-buffering": "no"},
        )

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/static/{name}", static),
            Route("/api/csrf", csrf),
            Route("/api/requests", listing),
            Route("/api/requests/{id}", one),
            Route("/api/requests/{id}/decide", decide, methods=["POST"]),
            Route("/api/counters", counters),
            Route("/api/events", events),
        ]
    )
    guard = InboxGuard(app, host=host, tokens=tokens, allowed_hosts=allowed_hosts)
    return guard


_NO_STORE = {"cache-control": "no-store"}


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": message}, status_code=status)


async def _stream(backend: Backend) -> AsyncIterator[str]:
    """The event stream: a comment at once (the browser then knows it is open), one
    event per change, a keep-alive comment after ``KEEPALIVE`` s of silence."""
    yield ": interpose inbox\n\n"
    async with backend.changes() as changes:
        while True:
            view = None
            with anyio.move_on_after(KEEPALIVE):  # (never yield inside a cancel scope)
                view = await changes.receive()
            if view is None:
                yield ": keep-alive\n\n"
            else:
                yield f"data: {json.dumps({'request': view}, default=str)}\n\n"
