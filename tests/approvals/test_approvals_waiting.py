"""Durable approvals in one process, through a real Pipeline with permission rules and
the built-in command guard: an ask waits for a decision made through the store API,
edit-then-approve judges the edited call again, grants allow without asking, expiry
denies, and the bus hears of every step."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import (
    Approval,
    ApprovalRequest,
    Pipeline,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
)
from interpose.approvals import (
    AlreadyDecided,
    ApprovalRecord,
    GrantSpec,
    InvalidEdit,
    MemoryApprovalStore,
    UnknownRequest,
)
from interpose.approvals.events import publish_changes
from interpose.approvals.redis import RedisApprovalStore
from interpose.approvals.waiting import DurableApprovals
from interpose.bus.events import Event, GrantRevoked, GrantUsed
from interpose.permissions.claude import parse_claude_rule
from interpose.permissions.engine import Permissions
from interpose.permissions.policy import PermissionPolicy
from interpose.pipeline.context import acting_as

LIMIT = 20.0


def pipeline(
    tmp_path: Path, store: MemoryApprovalStore, expiry: float | None = None, **kw: Any
) -> Pipeline:
    rule = parse_claude_rule("Bash(git push:*)", "ask", source="test", base=tmp_path, cwd=tmp_path)
    pipe = Pipeline(**kw)
    PermissionPolicy(Permissions([rule])).install(pipe)
    DurableApprovals(store, timeout=expiry).install(pipe)
    return pipe


async def first_pending(store: MemoryApprovalStore) -> ApprovalRecord:
    with anyio.fail_after(LIMIT):
        async for change in store.changes("0"):
            request = change.request
            if change.kind == "request_created" and request is not None:
                current = await store.get(request.id)
                if current.pending:
                    return current
    raise AssertionError("unreachable")


async def run(
    pipe: Pipeline, command: str, ran: list[str], call_id: str, session: str = "s1"
) -> ToolResult:
    def tool(args: dict[str, Any]) -> str:
        ran.append(args["command"])
        return "done"

    with anyio.fail_after(LIMIT):
        return await pipe.call_tool(
            "exec",
            {"command": command},
            call=tool,
            call_id=call_id,
            agent_id="a1",
            session_key=session,
        )


async def decide_when_asked(store: MemoryApprovalStore, action: str, **kw: Any) -> ApprovalRecord:
    record = await first_pending(store)
    return await store.decide(record.id, action, approver="alice", **kw)  # type: ignore[arg-type]


async def test_approve_once_resumes_the_call_and_a_deny_reason_reaches_the_model(
    tmp_path: Path,
) -> None:
    store = MemoryApprovalStore()
    pipe = pipeline(tmp_path, store)
    ran: list[str] = []
    result: list[ToolResult] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: decide_when_asked(store, "approve"))
        result.append(await run(pipe, "git push origin main", ran, "c1"))
    assert result[0].status == "ok"
    assert ran == ["git push origin main"]
    record = (await store.list_requests())[0]
    assert record.state == "approved"
    assert record.decided_by == "alice"
    assert record.rule == "Bash(git push:*)"
    assert record.asked_by == "permissions.ask"
    assert record.args == {"command": "git push origin main"}
    assert record.args_hash.startswith("sha256:")

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: decide_when_asked(store, "deny", reason="not on friday"))
        denied = await run(pipe, "git push origin prod", ran, "c2")
    assert denied.status == "denied"
    assert denied.output["reason"] == "not on friday"
    assert ran == ["git push origin main"]
    with pytest.raises(AlreadyDecided):
        await store.decide(record.id, "deny", approver="bob")
    with pytest.raises(UnknownRequest):
        await store.decide("apr_nope", "approve", approver="bob")


async def test_an_edit_is_judged_again_a_dangerous_one_is_blocked(tmp_path: Path) -> None:
    store = MemoryApprovalStore()
    pipe = pipeline(tmp_path, store)
    ran: list[str] = []
    dangerous = "git push origin main; rm -rf ~"
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: decide_when_asked(store, "edit", args={"command": dangerous}))
        blocked = await run(pipe, "git push origin main", ran, "c1")
    assert blocked.status == "blocked"
    assert ran == []
    assert blocked.details["decided_by"] == "builtin:command-safety-guard"
    assert "rm -rf targets '~'" in blocked.output["reason"]

    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: decide_when_asked(
                store, "edit", args='{"command": "git push --dry-run origin main"}'
            )
        )
        edited = await run(pipe, "git push --force origin main", ran, "c2")
    assert edited.status == "ok"
    assert ran == ["git push --dry-run origin main"]  # the edited arguments ran, asked once
    assert len(await store.list_requests()) == 2


async def test_edits_that_do_not_parse_change_nothing(tmp_path: Path) -> None:
    store = MemoryApprovalStore()
    pipe = pipeline(tmp_path, store)
    ran: list[str] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(run, pipe, "git push", ran, "c1")
        record = await first_pending(store)
        for bad in ("{not json", "[1, 2]", None):
            with pytest.raises(InvalidEdit):
                await store.decide(record.id, "edit", approver="alice", args=bad)
        assert (await store.get(record.id)).pending
        await store.decide(record.id, "approve", approver="alice")
    assert ran == ["git push"]


async def test_a_grant_lets_the_next_matching_call_pass_and_revoke_ends_it(tmp_path: Path) -> None:
    store = MemoryApprovalStore()
    pipe = pipeline(tmp_path, store)
    seen: list[Event] = []
    pipe.subscribe(
        seen.append, events=["grant_used", "grant_added", "approval_decided", "approval_requested"]
    )
    ran: list[str] = []
    async with pipe:
        with acting_as({"sub": "ops-bot", "scope": "deploy"}):
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    lambda: decide_when_asked(
                        store, "approve", grant=GrantSpec(match="rule", scope="session")
                    )
                )
                assert (await run(pipe, "git push origin a", ran, "c1")).status == "ok"
            # the same rule, same session and principal: no ask
            assert (await run(pipe, "git push origin b", ran, "c2")).status == "ok"
            assert len(await store.list_requests()) == 1
        # another principal, another session: asked again (never wider than shown)
        with acting_as({"sub": "someone-else"}):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: decide_when_asked(store, "deny"))
                assert (await run(pipe, "git push origin c", ran, "c3")).status == "denied"
        grant = (await store.grants())[0]
        assert grant.principal_sub == "ops-bot"
        assert grant.granted_by == "alice"
        await store.revoke(grant.id, by="alice")
        with acting_as({"sub": "ops-bot"}), pytest.raises(TimeoutError):
            with anyio.fail_after(0.5):
                await run(pipe, "git push origin d", ran, "c4")
    assert ran == ["git push origin a", "git push origin b"]
    used = [e for e in seen if isinstance(e, GrantUsed)]
    assert len(used) == 1
    assert used[0].granted_by == "alice"
    assert used[0].grant_id == grant.id
    assert [e.kind for e in seen].count("grant_added") == 1
    counters = await store.counters()
    assert counters["Bash(git push:*)"]["granted"] == 1


@pytest.mark.parametrize(
    ("expiry", "approval_timeout", "reason"),
    [
        (0.3, 20.0, "expired without a decision"),  # the request's own expiry
        (None, 0.3, "no answer within 0.3s"),  # the pipeline's bound: the same expiry
    ],
)
async def test_expiry_denies_never_hangs(
    tmp_path: Path, expiry: float | None, approval_timeout: float, reason: str
) -> None:
    store = MemoryApprovalStore()
    pipe = pipeline(tmp_path, store, expiry, approval_timeout=approval_timeout)
    ran: list[str] = []
    result = await run(pipe, "git push", ran, "c1")
    assert result.status == "denied"
    assert ran == []
    assert reason in result.output["reason"]
    record = (await store.list_requests())[0]
    assert record.state == "expired"
    with pytest.raises(AlreadyDecided):
        await store.decide(record.id, "approve", approver="late")


async def test_edits_are_bounded(tmp_path: Path) -> None:
    # a tool.before handler that rewrites every command makes each edit ask again
    pipe = Pipeline()

    @pipe.intercept("tool.before", tools=["exec"], id="verbose")
    def verbose(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.args = {"command": out.args["command"] + " -v"}

    @pipe.approver(tools=["exec"], id="asker")
    def asker(request: ApprovalRequest) -> Approval:
        return Approval.ask("always", rule="any")

    edits: list[str] = []

    def person(request: ApprovalRequest, reason: str) -> Approval:
        edits.append(request.args["command"])
        return Approval.edited({"command": "echo hi"})

    pipe.human_approval = person
    ran: list[str] = []
    result = await run(pipe, "git push", ran, "c1")
    assert result.status == "denied"
    assert result.output["reason"] == "the arguments were edited more than 3 times"
    assert edits == ["git push -v", "echo hi -v", "echo hi -v", "echo hi -v"]
    assert ran == []


async def test_a_stores_changes_from_any_process_reach_a_bus(tmp_path: Path) -> None:
    store = MemoryApprovalStore()
    pipe = Pipeline(builtins=False)
    seen: list[Event] = []
    done = anyio.Event()

    def heard(event: Event) -> None:
        seen.append(event)
        if event.kind == "grant_revoked":
            done.set()

    kinds = ["approval_requested", "approval_decided", "grant_added", "grant_revoked"]
    pipe.subscribe(heard, events=kinds)
    ran: list[str] = []
    decider = pipeline(tmp_path, store)
    with anyio.fail_after(LIMIT):
        async with pipe, anyio.create_task_group() as tg:
            tg.start_soon(lambda: publish_changes(store, pipe.bus, since="0"))
            tg.start_soon(lambda: decide_when_asked(store, "approve", grant=GrantSpec()))
            await run(decider, "git push", ran, "c1")
            [grant] = await store.grants()
            await store.revoke(grant.id, by="carol")
            await done.wait()
            tg.cancel_scope.cancel()
    assert [e.kind for e in seen] == kinds
    revoked = seen[-1]
    assert isinstance(revoked, GrantRevoked)
    assert revoked.revoked_by == "carol"


async def test_an_edit_replaces_a_response_to_the_old_arguments(tmp_path: Path) -> None:
    store = MemoryApprovalStore()
    pipe = pipeline(tmp_path, store)

    @pipe.intercept("tool.before", tools=["exec"], id="cached")
    def cached(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.args["command"] == "git push":  # an untrusted answer: approvers still run
            out.result = "cached push"

    ran: list[str] = []
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: decide_when_asked(store, "approve"))
            answered = await run(pipe, "git push", ran, "c1")
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: decide_when_asked(store, "edit", args={"command": "git push -n"}))
            edited = await run(pipe, "git push", ran, "c2")
    assert (answered.status, answered.output) == ("responded", "cached push")
    assert (edited.status, edited.output) == ("ok", "done")
    assert ran == ["git push -n"]


async def test_a_store_that_cannot_be_reached_fails_closed(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    rule = parse_claude_rule("Bash(git push:*)", "ask", source="test", base=tmp_path, cwd=tmp_path)
    pipe = Pipeline()
    PermissionPolicy(Permissions([rule])).install(pipe)
    store = RedisApprovalStore(f"redis://127.0.0.1:{port}/0")
    DurableApprovals(store).install(pipe)
    ran: list[str] = []
    result = await run(pipe, "git push", ran, "c1")
    await store.aclose()
    assert result.status == "denied"
    assert "the handler failed" in result.output["reason"]
    assert ran == []
