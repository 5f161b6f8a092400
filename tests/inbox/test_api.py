"""The inbox's JSON API over a real server (uvicorn on 127.0.0.1, a free port) and the
in-memory approval store: list, get, decide (approve, deny, edit, grant), grants and
their revocation, counters, the event stream; and the refusals that change nothing
(unknown id, already decided, malformed decisions)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from inbox_helpers import (
    TIMEOUT,
    agent,
    ask,
    asked,
    client,
    csrf_of_page,
    run_command,
    serving,
)

from interpose import ToolResult
from interpose.approvals import MemoryApprovalStore

pytestmark = pytest.mark.integration


async def test_the_pending_requests_are_listed_newest_first_and_filtered() -> None:
    store = MemoryApprovalStore()
    older = await store.submit(ask(created=1000.0))
    newer = await store.submit(ask("read", {"path": ".env"}, call="c2", rule="Read(./.env)"))
    other = await store.submit(ask(agent="agent-2", call="c3", created=2000.0))
    done = await store.submit(ask(call="c4", created=3000.0))
    await store.decide(done.id, "deny", approver="test", reason="no")
    with anyio.fail_after(TIMEOUT):
        async with serving(store) as url, client(url) as http:
            listed = (await http.get("/api/requests")).json()["requests"]
            by_agent = (await http.get("/api/requests", params={"agent": "agent-2"})).json()
            by_tool = (await http.get("/api/requests", params={"tool": "read"})).json()
            everything = (await http.get("/api/requests", params={"state": "all"})).json()
            one = await http.get(f"/api/requests/{newer.id}")
            unknown = await http.get("/api/requests/apr_nothing")
            bad_state = await http.get("/api/requests", params={"state": "maybe"})
    assert [r["id"] for r in listed] == [newer.id, other.id, older.id]
    assert [r["id"] for r in by_agent["requests"]] == [other.id]
    assert [r["id"] for r in by_tool["requests"]] == [newer.id]
    assert done.id in [r["id"] for r in everything["requests"]]
    assert one.status_code == 200
    shown = one.json()
    assert (shown["tool_name"], shown["args"], shown["rule"]) == (
        "read",
        {"path": ".env"},
        "Read(./.env)",
    )
    assert shown["args_hash"] == newer.args_hash
    assert shown["state"] == "pending"
    assert unknown.status_code == 404
    assert "apr_nothing" in unknown.json()["error"]
    assert bad_state.status_code == 400


async def decide(http: httpx2.AsyncClient, csrf: str, request: str, **body: Any) -> httpx2.Response:
    return await http.post(
        f"/api/requests/{request}/decide", json=body, headers={"x-interpose-csrf": csrf}
    )


async def test_each_decision_is_recorded_with_the_approver_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryApprovalStore()
    approved = await store.submit(ask(call="a"))
    denied = await store.submit(ask(call="d"))
    edited = await store.submit(ask(call="e"))
    granted = await store.submit(ask(call="g"))
    caplog.set_level(logging.INFO, "interpose.inbox")
    with anyio.fail_after(TIMEOUT):
        async with serving(store) as url, client(url) as http:
            csrf = await csrf_of_page(http)
            answers = [
                await decide(http, csrf, approved.id, decision="approve"),
                await decide(http, csrf, denied.id, decision="deny", reason="not on main"),
                await decide(
                    http, csrf, edited.id, decision="edit", args={"command": "git push origin dev"}
                ),
                await decide(
                    http,
                    csrf,
                    granted.id,
                    decision="approve",
                    grant={"match": "rule", "scope": "session", "ttl": 3600},
                ),
            ]
            assert [a.status_code for a in answers] == [200] * 4, [a.text for a in answers]
            grants = (await http.get("/api/grants")).json()["grants"]
            revoked = await http.post(
                f"/api/grants/{grants[0]['id']}/revoke", headers={"x-interpose-csrf": csrf}
            )
            live = (await http.get("/api/grants")).json()["grants"]
            counters = (await http.get("/api/counters")).json()["rules"]
    records = [await store.get(r.id) for r in (approved, denied, edited, granted)]
    assert [r.state for r in records] == ["approved", "denied", "edited", "approved"]
    assert {r.decided_by for r in records} == {"local@127.0.0.1"}
    assert records[1].decision_reason == "not on main"
    assert records[2].edited_args == {"command": "git push origin dev"}
    assert [(g["rule"], g["scope"], g["granted_by"]) for g in grants] == [
        ("Bash(git push:*)", "session", "local@127.0.0.1")
    ]
    assert records[3].grant_id == grants[0]["id"]
    assert revoked.status_code == 200
    assert revoked.json()["revoked_by"] == "local@127.0.0.1"
    assert live == []
    assert counters["Bash(git push:*)"]["approved"] == 2
    assert counters["Bash(git push:*)"]["denied"] == 1
    logged = [r.getMessage() for r in caplog.records if r.name == "interpose.inbox"]
    for record in records:
        assert any(record.id in line and "by local@127.0.0.1" in line for line in logged)


async def test_stale_or_malformed_decisions_get_a_4xx_and_change_nothing() -> None:
    store = MemoryApprovalStore()
    pending = await store.submit(ask(call="p"))
    done = await store.submit(ask(call="x"))
    await store.decide(done.id, "approve", approver="first")
    nobody_asked = await store.submit(ask(call="n", rule=""))
    with anyio.fail_after(TIMEOUT):
        async with serving(store) as url, client(url) as http:
            csrf = await csrf_of_page(http)
            headers = {"x-interpose-csrf": csrf, "content-type": "application/json"}

            async def post(request: str, body: bytes) -> httpx2.Response:
                path = f"/api/requests/{request}/decide"
                response: httpx2.Response = await http.post(path, content=body, headers=headers)
                return response

            def js(value: object) -> bytes:
                return json.dumps(value).encode()

            refused = {
                "unknown id": (await post("apr_unknown", js({"decision": "approve"})), 404),
                "already decided": (await post(done.id, js({"decision": "deny"})), 409),
                "not JSON": (await post(pending.id, b"{approve"), 400),
                "not an object": (await post(pending.id, js(["approve"])), 400),
                "unknown decision": (await post(pending.id, js({"decision": "maybe"})), 400),
                "unknown field": (await post(pending.id, js({"decision": "approve", "x": 1})), 400),
                "edit without args": (await post(pending.id, js({"decision": "edit"})), 400),
                "edit, args a list": (
                    await post(pending.id, js({"decision": "edit", "args": [1, 2]})),
                    400,
                ),
                "edit, args not JSON": (
                    await post(pending.id, js({"decision": "edit", "args": "{'command': 1"})),
                    400,
                ),
                "approve with args": (
                    await post(pending.id, js({"decision": "approve", "args": {"command": "x"}})),
                    400,
                ),
                "grant with deny": (
                    await post(pending.id, js({"decision": "deny", "grant": {"scope": "agent"}})),
                    400,
                ),
                "grant, bad ttl": (
                    await post(pending.id, js({"decision": "approve", "grant": {"ttl": -5}})),
                    400,
                ),
                "rule grant, no rule": (
                    await post(nobody_asked.id, js({"decision": "approve", "grant": {}})),
                    400,
                ),
            }
            unknown_grant = await http.post(
                "/api/grants/grt_none/revoke", headers={"x-interpose-csrf": csrf}
            )
    for what, (answer, status) in refused.items():
        assert answer.status_code == status, (what, answer.text)
        assert answer.json()["error"], what
    assert "already approved" in refused["already decided"][0].json()["error"]
    assert "JSON" in refused["edit, args not JSON"][0].json()["error"]
    assert unknown_grant.status_code == 404
    # nothing changed
    assert (await store.get(pending.id)).state == "pending"
    assert (await store.get(nobody_asked.id)).state == "pending"
    still = await store.get(done.id)
    assert (still.state, still.decided_by) == ("approved", "first")
    assert await store.grants(live=False) == []


async def test_the_event_stream_sends_each_change_as_it_happens() -> None:
    store = MemoryApprovalStore()
    first = await store.submit(ask(call="1"))
    with anyio.fail_after(TIMEOUT):
        async with (
            serving(store) as url,
            client(url) as http,
            http.stream("GET", "/api/events") as events,
        ):
            assert events.status_code == 200
            assert events.headers["content-type"].startswith("text/event-stream")
            lines = events.aiter_lines()
            assert (await anext(lines)).startswith(":")  # open: the store is followed
            csrf = await csrf_of_page(http)
            await decide(http, csrf, first.id, decision="deny", reason="later")
            second = await store.submit(ask(call="2"))
            seen: list[dict[str, Any]] = []
            async for line in lines:
                if line.startswith("data: "):
                    seen.append(json.loads(line[len("data: ") :]))
                if len(seen) == 2:
                    break
    assert [c["kind"] for c in seen] == ["request_decided", "request_created"]
    assert seen[0]["request"]["id"] == first.id
    assert seen[0]["request"]["state"] == "denied"
    assert seen[0]["request"]["decided_by"] == "local@127.0.0.1"
    assert seen[1]["request"]["id"] == second.id


async def test_a_waiting_call_resumes_when_a_decision_is_made_through_the_api(
    tmp_path: Path,
) -> None:
    """A real pipeline whose permission rule asks: its call waits in the store until the
    inbox's API decides it; approve runs it, deny gives the model the person's reason,
    an edit runs the edited arguments once they are judged again."""
    store = MemoryApprovalStore()
    pipe = agent(tmp_path, store)
    ran: list[str] = []
    results: dict[str, ToolResult] = {}
    decisions = {
        "c1": {"decision": "approve"},
        "c2": {"decision": "deny", "reason": "not on friday"},
        "c3": {"decision": "edit", "args": {"command": "git push --dry-run origin main"}},
    }
    with anyio.fail_after(TIMEOUT):
        async with serving(store) as url, client(url) as http:
            csrf = await csrf_of_page(http)
            for call, body in decisions.items():
                async with anyio.create_task_group() as tg:

                    async def call_tool(call: str = call) -> None:
                        results[call] = await run_command(pipe, "git push origin main", ran, call)

                    tg.start_soon(call_tool)
                    waiting = await asked(store, call)
                    (listed,) = (await http.get("/api/requests")).json()["requests"]
                    assert listed["id"] == waiting.id
                    assert listed["rule"] == "Bash(git push:*)"
                    answer = await http.post(
                        f"/api/requests/{waiting.id}/decide",
                        json=body,
                        headers={"x-interpose-csrf": csrf},
                    )
                    assert answer.status_code == 200, answer.text
    assert results["c1"].status == "ok"
    assert results["c2"].status == "denied"
    assert results["c2"].output["reason"] == "not on friday"
    assert results["c3"].status == "ok"
    assert ran == ["git push origin main", "git push --dry-run origin main"]
    states = {r.tool_call_id: (r.state, r.decided_by) for r in await store.list_requests()}
    assert states == {
        "c1": ("approved", "local@127.0.0.1"),
        "c2": ("denied", "local@127.0.0.1"),
        "c3": ("edited", "local@127.0.0.1"),
    }
