"""Bearer tokens on the HTTP front of ``interpose mcp-proxy`` (``[mcp.auth]``, ``--jwks``).

``BearerAuth`` is the outermost ASGI layer of ``serve_http``: a request without a valid
JWT gets 401 (with ``WWW-Authenticate: Bearer error=...``) before anything reads its
body.  A valid token's claims go on the ASGI scope as the SDK's own ``AuthenticatedUser``
(so the SDK binds each MCP session to its principal: another token cannot use it), and
``principal_of(scope)`` reads them back for the call's ``principal``.

Tokens are checked by PyJWT against a JSON Web Key Set read from a file or fetched from a
URL: the signature with the key the token's ``kid`` names (asymmetric algorithms only:
never ``none`` or HMAC, whose "key" would be public), ``exp`` required, ``nbf``, ``iss``
and ``aud`` when configured.  An unknown ``kid`` reloads the set, at most every
``RELOAD_AFTER`` seconds (a key rotated in at the issuer is found; a stream of made-up
ids costs nothing); a set fetched from a URL is fetched again after ``MAX_AGE`` seconds
(a key the issuer withdrew stops working).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import jwt
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, authorization_context
from mcp.server.auth.provider import AccessToken
from starlette.authentication import AuthCredentials

from ...config.mcp import McpAuthConfig
from ...errors import UsageError

__all__ = [
    "ALGORITHMS",
    "BearerAuth",
    "InvalidToken",
    "JwksKeys",
    "JwtVerifier",
    "owned_by",
    "principal_of",
]

log = logging.getLogger("interpose.mcp")

#: the signature algorithms a token may use: public-key ones only
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
RELOAD_AFTER = 30.0  # s: the least time between two reloads for an unknown kid
MAX_AGE = 300.0  # s: a key set fetched from a URL is fetched again after this long
FETCH_TIMEOUT = 10.0  # s: fetching a key set from its URL


class InvalidToken(Exception):
    """A bearer token that is missing, malformed, badly signed, expired or not ours;
    the message says which (it goes back to the client in the 401)."""


class JwksKeys:
    """The keys of a JWKS file or URL, by key id."""

    def __init__(
        self, source: str, *, base_dir: Path | None = None, reload_after: float = RELOAD_AFTER
    ) -> None:
        self.reload_after = reload_after
        self.url = source if source.startswith(("https://", "http://")) else None
        self.path = None if self.url else (base_dir or Path.cwd()) / source
        self._keys: dict[str, jwt.PyJWK] = {}
        self._loaded = -MAX_AGE  # monotonic time of the last (re)load
        self._lock = anyio.Lock()

    def load_file(self) -> None:
        """Read the set from its file now.

        Raises:
            UsageError: the file cannot be read or holds no usable key.
        """
        assert self.path is not None
        try:
            self._keys = _parse(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError, jwt.PyJWKSetError) as exc:
            raise UsageError(f"jwks {self.path}: {getattr(exc, 'strerror', None) or exc}") from None
        self._loaded = time.monotonic()

    async def key(self, kid: str | None) -> jwt.PyJWK:
        """The key named ``kid`` (the only key of the set when the token names none).

        Raises:
            InvalidToken: the set has no such key, even reloaded.
        """
        found = self._pick(kid)
        if found is None or (self.url and time.monotonic() - self._loaded >= MAX_AGE):
            async with self._lock:  # one reload at a time; the others wait for it
                found = self._pick(kid)
                age = time.monotonic() - self._loaded
                if (found is None and age >= self.reload_after) or (self.url and age >= MAX_AGE):
                    await self._reload()
                    found = self._pick(kid)
        if found is None:
            raise InvalidToken(f"no key {kid!r} in the key set" if kid else "the token has no kid")
        return found

    def _pick(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _reload(self) -> None:
        self._loaded = time.monotonic()
        try:
            if self.url is None:
                assert self.path is not None
                text = self.path.read_text(encoding="utf-8")
            else:
                import httpx2

                async with httpx2.AsyncClient(timeout=FETCH_TIMEOUT) as http:
                    response = await http.get(self.url)
                    response.raise_for_status()
                    text = response.text
            self._keys = _parse(text)
        except Exception as exc:  # the old keys stay; the token is refused with why
            log.error("cannot load the key set %s: %s", self.url or self.path, exc)
            raise InvalidToken("the key set cannot be loaded") from None


def _parse(text: str) -> dict[str, jwt.PyJWK]:
    """The keys of a JWKS document by ``kid`` (a key without one: by its index)."""
    keys = jwt.PyJWKSet.from_dict(json.loads(text)).keys
    return {key.key_id or str(index): key for index, key in enumerate(keys)}


class JwtVerifier:
    """Checks a JWT against a key set, issuer and audience; returns its claims."""

    def __init__(
        self,
        keys: JwksKeys,
        *,
        issuer: str | None = None,
        audience: Sequence[str] = (),
        leeway: float = 30.0,
    ) -> None:
        self.keys = keys
        self.issuer = issuer
        self.audience = list(audience) or None
        self.leeway = leeway
        self._options: Any = {"require": ["exp"], "verify_aud": bool(audience)}

    @classmethod
    def from_config(cls, auth: McpAuthConfig, base_dir: Path) -> JwtVerifier:
        """The verifier of ``[mcp.auth]`` (a file's keys read now).

        Raises:
            UsageError: the key file cannot be read or holds no usable key.
        """
        keys = JwksKeys(auth.jwks, base_dir=base_dir)
        if keys.url is None:
            keys.load_file()
        return cls(keys, issuer=auth.issuer, audience=auth.audience, leeway=auth.leeway_s)

    async def verify(self, token: str) -> dict[str, Any]:
        """The claims of ``token``.

        Raises:
            InvalidToken: it is not a valid token for this server (the message says why).
        """
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise InvalidToken(f"malformed token: {exc}") from None
        if header.get("alg") not in ALGORITHMS:
            raise InvalidToken(f"algorithm {header.get('alg')!r} is not accepted")
        key = await self.keys.key(header.get("kid"))
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[header["alg"]],
                audience=self.audience,
                issuer=self.issuer,
                leeway=self.leeway,
                options=self._options,
            )
        except jwt.PyJWTError as exc:
            raise InvalidToken(str(exc) or type(exc).__name__) from None
        return claims


class BearerAuth:
    """ASGI middleware: every HTTP request needs ``Authorization: Bearer <JWT>``."""

    def __init__(self, app: Any, verifier: JwtVerifier) -> None:
        self.app = app
        self.verifier = verifier

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # (lifespan)
            await self.app(scope, receive, send)
            return
        header = next((v for k, v in scope["headers"] if k == b"authorization"), b"")
        scheme, _, token = header.decode("latin-1").partition(" ")
        try:
            if scheme.lower() != "bearer" or not token.strip():
                raise InvalidToken("a bearer token is required")
            claims = await self.verifier.verify(token.strip())
        except InvalidToken as exc:
            await _refuse(send, str(exc))
            return
        scopes = claims.get("scope")
        granted = scopes.split() if isinstance(scopes, str) else []
        expires = claims.get("exp")
        scope["user"] = AuthenticatedUser(
            AccessToken(
                token=token.strip(),
                client_id=str(claims.get("client_id") or claims.get("azp") or claims.get("sub")),
                scopes=granted,
                expires_at=int(expires) if isinstance(expires, int | float) else None,
                subject=str(claims["sub"]) if "sub" in claims else None,
                claims=claims,
            )
        )
        scope["auth"] = AuthCredentials(granted)
        await self.app(scope, receive, send)


def owned_by(manager: Any, session_id: str | None, scope: Mapping[str, Any]) -> bool:
    """Whether the request of ``scope`` comes from the principal that opened the SDK
    session ``session_id`` (the SDK's own rule, applied where a front serves a request
    without the SDK: another token must not use a session it did not open)."""
    owners = getattr(manager, "_session_owners", None)
    if owners is None or session_id is None:
        return True  # (no auth: the SDK keeps no owners)
    user = scope.get("user")
    requestor = authorization_context(user) if isinstance(user, AuthenticatedUser) else None
    return bool(requestor == owners.get(session_id))


def principal_of(scope: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The verified claims of the request whose ASGI scope this is; None: no token
    was checked (no ``[mcp.auth]``)."""
    user = scope.get("user") if scope is not None else None
    if isinstance(user, AuthenticatedUser):
        return user.access_token.claims
    return None


async def _refuse(send: Any, reason: str) -> None:
    """401 with RFC 6750's ``WWW-Authenticate`` and a JSON body saying why."""
    body = json.dumps({"error": "invalid_token", "error_description": reason}).encode()
    quoted = reason.replace("\\", "\\\\").replace('"', "'")
    challenge = f'Bearer realm="interpose", error="invalid_token", error_description="{quoted}"'
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", challenge.encode("latin-1", "replace")),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
