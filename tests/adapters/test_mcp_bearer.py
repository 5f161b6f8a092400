"""Bearer JWTs on the HTTP front of ``interpose mcp-proxy`` (``--jwks``, ``[mcp.auth]``).

An RSA key is made here, its public half written as a JWKS file (or served as a JWKS URL
by a small HTTP server on 127.0.0.1); tokens are signed with PyJWT.  The proxy is the
real command (a child process) or ``McpProxy.serve_http`` in process, on a free port,
in front of the real mcp-server-time; the client is the SDK's (streamable HTTP) or plain
httpx2 POSTs for the refusals.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import CALL_TIMEOUT, HttpProxy, python_server
from test_mcp_inprocess import time_server

from interpose import Approval, ApprovalRequest, Pipeline
from interpose.adapters.inbox.backend import StoreBackend
from interpose.adapters.inbox.security import Tokens
from interpose.adapters.inbox.serve import running
from interpose.adapters.mcp.bearer import JwksKeys, JwtVerifier
from interpose.adapters.mcp.proxy import McpProxy
from interpose.approvals import MemoryApprovalStore
from interpose.approvals.waiting import DurableApprovals
from interpose.config.mcp import McpAuthConfig
from interpose.pipeline.context import current_principal

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ISSUER = "https://idp.test"
AUDIENCE = "interpose-gateway"
KID = "key-1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


KEY = new_key()
OTHER = new_key()  # not in the key set: its tokens are forged


def key_set(key: rsa.RSAPrivateKey, kid: str = KID) -> dict[str, Any]:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return {"keys": [{**public, "kid": kid, "alg": "RS256", "use": "sig"}]}


def token(key: rsa.RSAPrivateKey = KEY, *, kid: str = KID, **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 300}
    body.update(claims)
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, "RS256", {"kid": kid})


@pytest.fixture
def jwks_file(tmp_path: Path) -> Path:
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(key_set(KEY)), encoding="utf-8")
    return path


def initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }


async def post(url: str, bearer: str | None) -> httpx2.Response:
    headers = {"accept": "application/json, text/event-stream"}
    if bearer is not None:
        headers["authorization"] = f"Bearer {bearer}"
    async with httpx2.AsyncClient(timeout=CALL_TIMEOUT) as http:
        response: httpx2.Response = await http.post(url, json=initialize(), headers=headers)
        return response


@asynccontextmanager
async def client(url: str, bearer: str, mode: str = "legacy") -> AsyncIterator[Client]:
    http = httpx2.AsyncClient(headers={"authorization": f"Bearer {bearer}"}, timeout=30)
    async with http, Client(streamable_http_client(url, http_client=http), mode=mode) as c:
        yield c


# -- the real command: refusals and a call that goes through -----------------------------


async def test_the_command_refuses_bad_tokens_with_401_and_serves_a_valid_one(
    http_proxy: type[HttpProxy], jwks_file: Path
) -> None:
    upstream = python_server("mcp_server_time")
    argv = [sys.executable, "-m", "interpose.cli", "mcp-proxy", "--name", "time"]
    argv += ["--jwks", str(jwks_file), "--jwt-issuer", ISSUER, "--jwt-audience", AUDIENCE]
    proxy = http_proxy([*argv, "--", *upstream])
    url = proxy.url
    with anyio.fail_after(CALL_TIMEOUT * 2):
        now = int(time.time())
        refused = {
            "no token": None,
            "garbage": "not.a.jwt",
            "expired": token(exp=now - 120, iat=now - 600),
            "wrong audience": token(aud="someone-else"),
            "wrong issuer": token(iss="https://evil.test"),
            "bad signature": token(OTHER),
            "unknown key": token(kid="key-9"),
            "no exp": token(exp=None),
            "hmac": jwt.encode({"sub": "x", "exp": now + 60}, "s" * 32, "HS256"),
        }
        for what, bearer in refused.items():
            response = await post(url, bearer)
            assert response.status_code == 401, (what, response.text)
            assert response.headers["www-authenticate"].startswith("Bearer "), what
            assert response.json()["error"] == "invalid_token", what
        reasons = {what: (await post(url, bearer)).json() for what, bearer in refused.items()}
        assert "expired" in reasons["expired"]["error_description"]
        assert "audience" in reasons["wrong audience"]["error_description"].lower()
        assert "issuer" in reasons["wrong issuer"]["error_description"].lower()
        assert "signature" in reasons["bad signature"]["error_description"].lower()
        async with client(url, token()) as c:
            result = await c.call_tool("get_current_time", {"timezone": "UTC"})
    assert not result.is_error
    assert "UTC" in result.content[0].model_dump()["text"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "interpose.cli", "mcp-proxy", *args]
    argv += ["--", sys.executable, "-m", "mcp_server_time"]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=CALL_TIMEOUT, stdin=subprocess.DEVNULL
    )


def test_jwks_needs_listen_and_jwt_options_need_jwks(jwks_file: Path) -> None:
    stdio = _run("--jwks", str(jwks_file))
    assert stdio.returncode == 2
    assert "add --listen" in stdio.stderr
    alone = _run("--listen", "127.0.0.1:0", "--jwt-issuer", "x")
    assert alone.returncode == 2
    assert "need --jwks" in alone.stderr
    missing = _run("--listen", "127.0.0.1:0", "--jwks", str(jwks_file.with_name("nope.json")))
    assert missing.returncode == 2
    assert missing.stderr.startswith("interpose mcp-proxy: jwks ")
    assert "nope.json" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_check_shows_what_the_http_front_requires(tmp_path: Path) -> None:
    config = tmp_path / "interpose.toml"
    config.write_text(
        "[mcp.servers.time]\n"
        f'command = "{sys.executable}"\n'
        'args = ["-m", "mcp_server_time"]\n'
        "[mcp.auth]\n"
        'jwks = "https://idp.test/.well-known/jwks.json"\n'
        f'issuer = "{ISSUER}"\n'
        f'audience = ["{AUDIENCE}"]\n',
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "interpose.cli", "check", str(config)],
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "mcp bearer tokens (--listen): jwks https://idp.test/.well-known/jwks.json; "
        f"issuer {ISSUER}; audience {AUDIENCE}"
    ) in done.stdout


# -- in process: the claims are the call's principal, on both lanes ----------------------


@asynccontextmanager
async def serving(pipe: Pipeline, verifier: JwtVerifier) -> AsyncIterator[str]:
    """``McpProxy.serve_http`` on a free port with ``verifier``; its URL."""
    proxy = McpProxy(pipe, [time_server()])
    found: list[str] = []
    listening = anyio.Event()

    def ready(url: str) -> None:
        found.append(url)
        listening.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: proxy.serve_http("127.0.0.1", 0, ready=ready, auth=verifier))
        await listening.wait()
        yield found[0]
        tg.cancel_scope.cancel()


def inbox(store: MemoryApprovalStore) -> AbstractAsyncContextManager[str]:
    return running(StoreBackend(store), "127.0.0.1", 0, tokens=Tokens())


def recording(pipe: Pipeline) -> list[dict[str, Any] | None]:
    """What an approver of ``pipe`` reads as the principal of each call."""
    seen: list[dict[str, Any] | None] = []

    @pipe.approver(id="who")
    def who(request: ApprovalRequest) -> Approval:
        seen.append(current_principal())
        return Approval.allow()

    return seen


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_claims_are_the_principal_of_the_ask_the_inbox_shows(
    jwks_file: Path, mode: str
) -> None:
    """The token's claims reach the approval request the call's ask makes (in the store
    the inbox serves), and a decision there lets the call through."""
    pipe = Pipeline()
    store = MemoryApprovalStore()
    DurableApprovals(store).install(pipe)
    seen = recording(pipe)

    @pipe.approver(id="person")
    def person(request: ApprovalRequest) -> Approval:
        return Approval.ask("a person decides", rule="mcp__time__get_current_time")

    auth = McpAuthConfig(jwks=jwks_file.name, issuer=ISSUER, audience=[AUDIENCE])
    verifier = JwtVerifier.from_config(auth, jwks_file.parent)
    results: list[Any] = []
    with anyio.fail_after(CALL_TIMEOUT):
        async with (
            serving(pipe, verifier) as url,
            client(url, token(team="ops"), mode) as c,
            inbox(store) as inbox_url,
            httpx2.AsyncClient(base_url=inbox_url) as http,
            anyio.create_task_group() as tg,
        ):

            async def call() -> None:
                results.append(await c.call_tool("get_current_time", {"timezone": "UTC"}))

            tg.start_soon(call)
            async for change in store.changes(since="0"):  # (a memory store's)
                if change.kind == "request_created":
                    break
            (shown,) = (await http.get("/api/requests")).json()["requests"]
            page = (await http.get("/")).text
            csrf = page.split('name="csrf" content="', 1)[1].split('"', 1)[0]
            decided = await http.post(
                f"/api/requests/{shown['id']}/decide",
                json={"decision": "approve"},
                headers={"x-interpose-csrf": csrf},
            )
            assert decided.status_code == 200, decided.text
    principal = shown["principal"]
    assert (principal["sub"], principal["team"], principal["iss"]) == ("alice", "ops", ISSUER)
    assert shown["tool_name"] == "mcp__time__get_current_time"
    assert [p and p["sub"] for p in seen] == ["alice"]
    assert not results[0].is_error


async def test_a_session_answers_only_the_principal_that_opened_it(jwks_file: Path) -> None:
    """Another principal's valid token with a session id it did not open: 404 (the SDK's
    rule, kept on the fast lane too), and the call does not run."""
    pipe = Pipeline()
    seen = recording(pipe)
    auth = McpAuthConfig(jwks=jwks_file.name, issuer=ISSUER, audience=[AUDIENCE])
    verifier = JwtVerifier.from_config(auth, jwks_file.parent)
    alice, bob = token(sub="alice"), token(sub="bob")
    version = "2025-06-18"
    with anyio.fail_after(CALL_TIMEOUT):
        async with serving(pipe, verifier) as url, httpx2.AsyncClient(timeout=30) as http:

            async def post(bearer: str, message: dict[str, Any], sid: str = "") -> httpx2.Response:
                headers = {
                    "authorization": f"Bearer {bearer}",
                    "accept": "application/json, text/event-stream",
                    "mcp-protocol-version": version,
                }
                if sid:
                    headers["mcp-session-id"] = sid
                response: httpx2.Response = await http.post(url, json=message, headers=headers)
                return response

            opened = await post(alice, initialize())
            assert opened.status_code == 200, opened.text
            sid = opened.headers["mcp-session-id"]
            done = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await post(alice, done, sid)).status_code == 202
            call = {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "get_current_time", "arguments": {"timezone": "UTC"}},
            }
            own = await post(alice, call, sid)  # (then the fast lane knows the session)
            stolen = await post(bob, {**call, "id": 3}, sid)
    assert stolen.status_code == 404
    assert own.status_code == 200, own.text
    assert "UTC" in own.text
    assert [p and p["sub"] for p in seen] == ["alice"]  # bob's call never ran


class KeySetServer:
    """Serves a JWKS document at ``/jwks`` on 127.0.0.1 (a thread); counts the fetches."""

    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.fetches = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.fetches += 1
                body = json.dumps(outer.document).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/jwks"
        self.thread = Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def key_server() -> Iterator[KeySetServer]:
    served = KeySetServer(key_set(KEY))
    served.thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()
    served.thread.join(10)


async def test_a_jwks_url_is_fetched_and_a_rotated_key_is_found(key_server: KeySetServer) -> None:
    # reload_after=0: a token naming an unknown key reloads the set at once
    verifier = JwtVerifier(JwksKeys(key_server.url, reload_after=0), audience=[AUDIENCE])
    with anyio.fail_after(CALL_TIMEOUT):
        assert (await verifier.verify(token()))["sub"] == "alice"
        assert (await verifier.verify(token(sub="bob")))["sub"] == "bob"
        assert key_server.fetches == 1  # the set is kept
        # the issuer rotates to a new key: its first token makes the set load again
        key_server.document = key_set(OTHER, "key-2")
        assert (await verifier.verify(token(OTHER, kid="key-2")))["sub"] == "alice"
        assert key_server.fetches == 2

    pipe = Pipeline()
    seen = recording(pipe)
    with anyio.fail_after(CALL_TIMEOUT):
        async with serving(pipe, verifier) as url:
            assert (await post(url, token())).status_code == 401  # key-1 was withdrawn
            async with client(url, token(OTHER, kid="key-2", sub="carol")) as c:
                result = await c.call_tool("get_current_time", {"timezone": "UTC"})
    assert not result.is_error
    assert [p and p["sub"] for p in seen] == ["carol"]
