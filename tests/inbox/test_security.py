"""The inbox's security rules, each provoked on a real server: the Host check (DNS
rebinding), cross-site state changes without the token or the page's CSRF token, the
token (bearer header, the cookie ``/?token=`` sets), the approver's identity from the
token's name, and the command's refusal to serve a non-loopback address without one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import httpx2
import pytest
from inbox_helpers import TIMEOUT, ask, client, csrf_of_page, serving

from interpose.adapters.inbox.security import TOKEN_ENV, Tokens, read_tokens
from interpose.approvals import MemoryApprovalStore
from interpose.cli._main import parser

pytestmark = pytest.mark.integration

TOKEN = "t0ken-of-alice-0123456789"


async def test_a_host_header_that_is_not_the_inbox_gets_400_on_every_route() -> None:
    store = MemoryApprovalStore()
    pending = await store.submit(ask())
    with anyio.fail_after(TIMEOUT):
        async with serving(store, allowed=("inbox.internal",)) as url, client(url) as http:
            csrf = await csrf_of_page(http)
            port = url.rsplit(":", 1)[1].strip("/")
            rebound = {"host": f"evil.example:{port}", "x-interpose-csrf": csrf}
            answers = [
                await http.get("/", headers=rebound),
                await http.get("/api/requests", headers=rebound),
                await http.get(f"/api/requests/{pending.id}", headers=rebound),
                await http.post(
                    f"/api/requests/{pending.id}/decide",
                    json={"decision": "approve"},
                    headers=rebound,
                ),
            ]
            allowed = await http.get("/api/requests", headers={"host": f"inbox.internal:{port}"})
            localhost = await http.get("/api/requests", headers={"host": f"localhost:{port}"})
    for answer in answers:
        assert answer.status_code == 400
        assert "evil.example" in answer.json()["error"]
    assert allowed.status_code == 200
    assert localhost.status_code == 200
    assert (await store.get(pending.id)).state == "pending"


async def test_a_cross_site_post_is_refused_without_the_token_or_the_csrf_token() -> None:
    store = MemoryApprovalStore()
    pending = await store.submit(ask())
    with anyio.fail_after(TIMEOUT):
        async with serving(store) as url, client(url) as http:
            csrf = await csrf_of_page(http)
            path = f"/api/requests/{pending.id}/decide"
            body = {"decision": "approve"}
            same_origin = {"origin": url.rstrip("/"), "sec-fetch-site": "same-origin"}
            refused = {
                # a form or fetch of another site the person has open
                "cross-site, no csrf": {
                    "origin": "https://evil.example",
                    "sec-fetch-site": "cross-site",
                },
                "cross-site, stolen csrf": {
                    "origin": "https://evil.example",
                    "sec-fetch-site": "cross-site",
                    "x-interpose-csrf": csrf,
                },
                "other origin, csrf": {"origin": "http://127.0.0.1:1", "x-interpose-csrf": csrf},
                "same-site sibling": {"sec-fetch-site": "same-site", "x-interpose-csrf": csrf},
                "same origin, no csrf": same_origin,
                "forged csrf": {**same_origin, "x-interpose-csrf": "nonce.0123456789abcdef"},
                "no headers at all": {},
            }
            answers = {
                what: await http.post(path, json=body, headers=h) for what, h in refused.items()
            }
            for what, answer in answers.items():
                assert answer.status_code == 403, (what, answer.text)
                assert (await store.get(pending.id)).state == "pending", what
            accepted = await http.post(
                path, json=body, headers={**same_origin, "x-interpose-csrf": csrf}
            )
    assert accepted.status_code == 200, accepted.text
    assert (await store.get(pending.id)).state == "approved"


async def test_with_a_token_every_request_needs_it_and_the_approver_is_its_name(
    tmp_path: Path,
) -> None:
    file = tmp_path / "tokens"
    file.write_text(f"# who may decide\nalice {TOKEN}\n", encoding="utf-8")
    tokens = read_tokens(str(file), env={})
    store = MemoryApprovalStore()
    by_script = await store.submit(ask(call="script"))
    by_person = await store.submit(ask(call="person"))
    with anyio.fail_after(TIMEOUT):
        async with serving(store, tokens=tokens) as url, client(url) as http:
            # no token, a wrong one: nothing is readable, nothing decidable
            assert (await http.get("/")).status_code == 401
            assert (await http.get("/api/requests")).status_code == 401
            wrong = {"authorization": "Bearer not-the-token-at-all"}
            assert (await http.get("/api/requests", headers=wrong)).status_code == 401
            assert (await http.get("/?token=not-the-token-at-all")).status_code == 401
            assert (await http.get("/api/events", headers=wrong)).status_code == 401
            denied = await http.post(
                f"/api/requests/{by_script.id}/decide", json={"decision": "approve"}, headers=wrong
            )
            assert denied.status_code == 401
            # a script: the token in its Authorization header is enough
            bearer = {"authorization": f"Bearer {TOKEN}"}
            assert (await http.get("/api/requests", headers=bearer)).status_code == 200
            scripted = await http.post(
                f"/api/requests/{by_script.id}/decide",
                json={"decision": "deny", "reason": "scripted"},
                headers=bearer,
            )
            assert scripted.status_code == 200, scripted.text
            # a person: /?token= sets the cookie; a change also needs the page's CSRF token
            opened = await http.get(f"/?token={TOKEN}")
            assert opened.status_code == 303
            assert opened.headers["location"] == "/"
            cookie = opened.headers["set-cookie"]
            assert "HttpOnly" in cookie
            assert "SameSite=Strict" in cookie
            assert http.cookies.get("interpose_inbox") == TOKEN
            csrf = await csrf_of_page(http)
            path = f"/api/requests/{by_person.id}/decide"
            no_csrf = await http.post(path, json={"decision": "approve"})
            assert no_csrf.status_code == 403
            clicked = await http.post(
                path, json={"decision": "approve"}, headers={"x-interpose-csrf": csrf}
            )
            assert clicked.status_code == 200, clicked.text
    assert (await store.get(by_script.id)).decided_by == "alice@127.0.0.1"
    assert (await store.get(by_person.id)).decided_by == "alice@127.0.0.1"


def test_tokens_come_from_the_file_and_the_environment(tmp_path: Path) -> None:
    file = tmp_path / "tokens"
    file.write_text(f"ops-1 {TOKEN}\n\n{TOKEN[::-1]}  # unnamed\n", encoding="utf-8")
    tokens = read_tokens(str(file), env={TOKEN_ENV: "from-the-environment-123"})
    assert tokens.match(TOKEN) == "ops-1"
    assert tokens.match(TOKEN[::-1]) == "token"
    assert tokens.match("from-the-environment-123") == "token"
    assert tokens.match("x" * 24) is None
    assert not Tokens()


def inbox(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != TOKEN_ENV} | (env or {})
    return subprocess.run(
        [sys.executable, "-m", "interpose.cli", "inbox", *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        stdin=subprocess.DEVNULL,
        env=environ,
    )


def test_the_command_refuses_a_non_loopback_address_without_a_token(tmp_path: Path) -> None:
    exposed = inbox("--listen", "0.0.0.0:0", "--redis", "redis://127.0.0.1:1/0")
    assert exposed.returncode == 2
    assert exposed.stderr.startswith("interpose inbox: --listen 0.0.0.0: ")
    assert "token" in exposed.stderr
    assert "Traceback" not in exposed.stderr
    every = inbox("--listen", "0.0.0.0:0", env={TOKEN_ENV: TOKEN})
    assert every.returncode == 2
    assert "--allow-host" in every.stderr  # (else no Host header could be checked)
    short = inbox("--listen", "0.0.0.0:0", env={TOKEN_ENV: "short"})
    assert short.returncode == 2
    assert "16 characters" in short.stderr
    missing = inbox("--token-file", str(tmp_path / "nope"))
    assert missing.returncode == 2
    assert "nope" in missing.stderr
    bad_listen = inbox("--listen", "nowhere")
    assert bad_listen.returncode == 2
    assert "--listen" in bad_listen.stderr


async def test_the_server_binds_loopback_by_default() -> None:
    assert parser().parse_args(["inbox"]).listen == ("127.0.0.1", 8700)
    # bound there, nothing answers on another address of this machine
    with anyio.fail_after(TIMEOUT):
        async with serving(MemoryApprovalStore()) as url:
            assert url.startswith("http://127.0.0.1:")
            port = int(url.rsplit(":", 1)[1].strip("/"))
            with pytest.raises(httpx2.ConnectError):
                async with httpx2.AsyncClient(timeout=2) as http:
                    await http.get(f"http://127.0.0.2:{port}/api/requests")


async def test_the_page_cannot_be_framed_and_runs_only_its_own_script() -> None:
    with anyio.fail_after(TIMEOUT):
        async with serving(MemoryApprovalStore()) as url, client(url) as http:
            page = await http.get("/")
    policy = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy
    assert "default-src 'self'" in policy
    assert page.headers["x-frame-options"] == "DENY"
    assert page.headers["cache-control"] == "no-store"
