"""Who may read the inbox and who may decide through it (``InboxGuard``, ASGI middleware).

Every request:

- **Host** must name the address the inbox is bound to (or an ``--allow-host``; a
  loopback bind also answers to ``localhost``): a page of ``evil.example`` whose name
  was rebound to 127.0.0.1 sends ``Host: evil.example`` and gets 400 (DNS rebinding).
- **Token**: when one is configured (``INTERPOSE_INBOX_TOKEN`` or a token file; required
  for any address but loopback), every request needs it, as ``Authorization: Bearer T``
  (scripts) or the ``interpose_inbox`` cookie that ``/?token=T`` sets (people: the
  cookie is HttpOnly and SameSite=Strict); else 401.

Every state-changing request (anything but GET/HEAD) also needs one of:

- the token in ``Authorization`` (a page of another site cannot set that header on a
  request to us without a CORS preflight, which the inbox never answers), or
- a **same-origin proof**: ``X-Interpose-CSRF`` carrying a CSRF token this server made
  (in the page it served, or from ``GET /api/csrf``: both unreadable from another
  origin) and, when the browser sends them, ``Origin`` equal to the inbox's own and
  ``Sec-Fetch-Site`` ``same-origin``; else 403.

The approver's identity (``identity(scope)``) is the name of the token used (``NAME``
in a token file's ``NAME TOKEN`` line), else ``token``, else ``local`` on a loopback
inbox without a token; with the client's address, it is logged with every decision.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from ...errors import UsageError

__all__ = [
    "COOKIE",
    "CSRF_HEADER",
    "TOKEN_ENV",
    "InboxGuard",
    "Tokens",
    "identity",
    "is_loopback",
    "is_wildcard",
    "read_tokens",
]

TOKEN_ENV = "INTERPOSE_INBOX_TOKEN"
COOKIE = "interpose_inbox"
CSRF_HEADER = b"x-interpose-csrf"
_SAFE = frozenset(("GET", "HEAD"))


def is_wildcard(host: str) -> bool:
    """Whether ``host`` is every address of the machine (``0.0.0.0``, ``::``)."""
    try:
        return ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        return False


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is this machine's loopback."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Tokens:
    """The inbox's tokens by value: the name each stands for (its approver)."""

    names: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.names)

    def match(self, presented: str) -> str | None:
        """The name of the token ``presented`` is (compared in constant time); None."""
        found = None
        for token, name in self.names.items():
            if hmac.compare_digest(token.encode(), presented.encode()):
                found = name
        return found


def read_tokens(file: str | None, env: Mapping[str, str] = os.environ) -> Tokens:
    """The tokens of ``file`` (one a line: ``TOKEN`` or ``NAME TOKEN``; ``#`` comments)
    and of ``$INTERPOSE_INBOX_TOKEN``.

    Raises:
        UsageError: the file cannot be read, or a token is shorter than 16 characters.
    """
    lines: list[tuple[str, str]] = []  # (line, where it comes from)
    if file is not None:
        try:
            text = Path(file).read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"--token-file: {exc.strerror or exc}: {file}") from None
        lines += [(line, f"--token-file {file}") for line in text.splitlines()]
    if env.get(TOKEN_ENV):
        lines.append((env[TOKEN_ENV], f"${TOKEN_ENV}"))
    names: dict[str, str] = {}
    for line, where in lines:
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        name, token = (words[0], words[-1]) if len(words) > 1 else ("token", words[0])
        if len(token) < 16:
            raise UsageError(f"{where}: a token needs at least 16 characters")
        names[token] = name
    return Tokens(names)


def _headers(scope: Mapping[str, Any]) -> dict[bytes, bytes]:
    found: dict[bytes, bytes] = {}
    for key, value in scope["headers"]:
        found.setdefault(key, value)
    return found


def _hostname(host: str) -> str:
    """The name of a ``Host`` header without its port (``[::1]:80`` -> ``::1``)."""
    if host.startswith("["):
        return host[1 : host.find("]")].lower() if "]" in host else ""
    return host.rsplit(":", 1)[0].lower() if host.count(":") == 1 else host.lower()


def identity(scope: Mapping[str, Any]) -> str:
    """Who is deciding: what ``InboxGuard`` found (``"local"`` if it did not run)."""
    return str(scope.get("state", {}).get("approver", "local"))


class InboxGuard:
    """ASGI middleware enforcing the rules of this module's docstring."""

    def __init__(
        self, app: Any, *, host: str, tokens: Tokens, allowed_hosts: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.tokens = tokens
        named = {_hostname(name) or name.strip("[]").lower() for name in allowed_hosts}
        hosts = {_hostname(host) or host.strip("[]").lower()} | named
        if is_loopback(host):
            hosts |= {"localhost", "127.0.0.1", "::1"}
        self.hosts = frozenset(hosts)
        self._secret = secrets.token_bytes(32)

    # -- CSRF tokens: a nonce and its HMAC under this process's secret --------------------

    def csrf_token(self) -> str:
        """A new CSRF token (one per page served)."""
        nonce = secrets.token_urlsafe(16)
        return f"{nonce}.{self._sign(nonce)}"

    def _sign(self, nonce: str) -> str:
        return hmac.new(self._secret, nonce.encode(), hashlib.sha256).hexdigest()

    def _csrf_ok(self, presented: str) -> bool:
        nonce, _, mac = presented.partition(".")
        return bool(nonce) and hmac.compare_digest(mac, self._sign(nonce))

    # -- the checks ---------------------------------------------------------------------

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):  # (lifespan)
            await self.app(scope, receive, send)
            return
        headers = _headers(scope)
        host = headers.get(b"host", b"").decode("latin-1")
        if _hostname(host) not in self.hosts:
            await _refuse(send, 400, f"Host {host!r} is not this inbox's address")
            return
        bearer = _bearer(headers)
        if scope["path"] == "/" and scope["method"] == "GET" and scope.get("query_string"):
            query = parse_qs(scope["query_string"].decode("latin-1")).get("token")
            if query and self.tokens.match(query[0]) is not None:
                await _set_cookie(send, query[0])  # then the URL holds it no more
                return
        approver = self._authenticated(headers, bearer)
        if approver is None:
            if bearer is None and scope["method"] in _SAFE and scope["path"] == "/":
                await _refuse(send, 401, "this inbox needs its token: open /?token=TOKEN")
                return
            await _refuse(send, 401, "a valid token is required (Authorization: Bearer ...)")
            return
        # (authenticated with a bearer: the token was in the header, which no other
        # site's page can set)
        if scope["method"] not in _SAFE and bearer is None:
            problem = self._not_same_origin(headers, scope)
            if problem is not None:
                await _refuse(send, 403, problem)
                return
        client = scope.get("client")
        where = f"{client[0]}" if client else "?"
        scope.setdefault("state", {})["approver"] = f"{approver}@{where}"
        await self.app(scope, receive, send)

    def _authenticated(self, headers: Mapping[bytes, bytes], bearer: str | None) -> str | None:
        """The approver's name if the request carries a good token (or none is needed)."""
        if not self.tokens:
            return "local" if bearer is None else None
        if bearer is not None:
            return self.tokens.match(bearer)
        cookie = SimpleCookie(headers.get(b"cookie", b"").decode("latin-1"))
        morsel = cookie.get(COOKIE)
        return self.tokens.match(morsel.value) if morsel is not None else None

    def _not_same_origin(self, headers: Mapping[bytes, bytes], scope: Any) -> str | None:
        """Why a state-changing request without the token in its header is refused."""
        site = headers.get(b"sec-fetch-site")
        if site is not None and site not in (b"same-origin", b"none"):
            return f"cross-site request refused (Sec-Fetch-Site: {site.decode('latin-1')})"
        origin = headers.get(b"origin")
        if origin is not None:
            scheme = scope.get("scheme", "http")
            expected = f"{scheme}://{headers.get(b'host', b'').decode('latin-1')}"
            if origin.decode("latin-1") != expected:
                return f"cross-origin request refused (Origin: {origin.decode('latin-1')})"
        presented = headers.get(CSRF_HEADER)
        if presented is None or not self._csrf_ok(presented.decode("latin-1")):
            return "a state-changing request needs the token or the page's CSRF token"
        return None


async def _set_cookie(send: Any, token: str) -> None:
    """303 to ``/`` setting the token's cookie (HttpOnly: no script reads it; Strict:
    no other site's request carries it)."""
    cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", b"/"),
                (b"set-cookie", cookie.encode("latin-1")),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})


def _bearer(headers: Mapping[bytes, bytes]) -> str | None:
    scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


async def _refuse(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
