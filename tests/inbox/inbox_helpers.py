"""The inbox's test helpers: approval requests made as an agent would ask them, the inbox
served for real (uvicorn on a free port of 127.0.0.1) and an HTTP client on it, and the
``interpose inbox`` command as a child process (``Inbox``)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager
from pathlib import Path
from typing import Any, cast

import httpx2

from interpose import Pipeline, ToolResult
from interpose.adapters.inbox.backend import StoreBackend
from interpose.adapters.inbox.security import TOKEN_ENV, Tokens
from interpose.adapters.inbox.serve import running
from interpose.approvals import ApprovalRecord, ApprovalStore, Change, args_hash, request_id
from interpose.approvals.waiting import DurableApprovals
from interpose.permissions.claude import parse_claude_rule
from interpose.permissions.engine import Permissions
from interpose.permissions.policy import PermissionPolicy

TIMEOUT = 20.0  # s: the bound of every test's exchanges


def ask(
    tool: str = "exec",
    args: dict[str, Any] | None = None,
    *,
    agent: str = "agent-1",
    session: str = "s1",
    call: str = "call-1",
    rule: str = "Bash(git push:*)",
    reason: str = "pushing changes",
    created: float | None = None,
    ttl: float = 600.0,
    principal: dict[str, Any] | None = None,
) -> ApprovalRecord:
    """A pending request for ``tool(args)``, as the approval handler makes one."""
    args = {"command": "git push origin main"} if args is None else args
    hashed = args_hash(args)
    now = time.time() if created is None else created
    return ApprovalRecord(
        id=request_id(agent, session, call, hashed),
        tool_name=tool,
        args=args,
        args_hash=hashed,
        agent_id=agent,
        session_key=session,
        tool_call_id=call,
        rule=rule,
        reason=reason,
        principal=principal,
        created=now,
        expires=time.time() + ttl,
    )


@asynccontextmanager
async def serving(
    store: ApprovalStore, *, tokens: Tokens | None = None, allowed: tuple[str, ...] = ()
) -> AsyncIterator[str]:
    """The inbox of ``store`` on a free port of 127.0.0.1 while in the block; its URL."""
    async with running(
        StoreBackend(store), "127.0.0.1", 0, tokens=tokens or Tokens(), allowed_hosts=allowed
    ) as url:
        yield url


def client(url: str, **headers: str) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(base_url=url, timeout=TIMEOUT, headers=headers)


async def csrf_of_page(http: httpx2.AsyncClient) -> str:
    """The CSRF token in the page the inbox serves."""
    page = await http.get("/")
    assert page.status_code == 200, page.text
    found = re.search(r'<meta name="csrf" content="([^"]+)">', page.text)
    assert found is not None
    return found.group(1)


def agent(tmp_path: Path, store: ApprovalStore) -> Pipeline:
    """An agent's pipeline whose rule ``Bash(git push:*)`` asks, the asks waiting in
    ``store`` for a person (``DurableApprovals``)."""
    rule = parse_claude_rule("Bash(git push:*)", "ask", source="test", base=tmp_path, cwd=tmp_path)
    pipe = Pipeline()
    PermissionPolicy(Permissions([rule])).install(pipe)
    DurableApprovals(store).install(pipe)
    return pipe


async def run_command(
    pipe: Pipeline, command: str, ran: list[str], call_id: str = "call-1"
) -> ToolResult:
    """The agent's ``exec`` of ``command`` (what ran is appended to ``ran``)."""

    def tool(args: dict[str, Any]) -> str:
        ran.append(args["command"])
        return "done"

    return await pipe.call_tool(
        "exec",
        {"command": command},
        call=tool,
        call_id=call_id,
        agent_id="agent-1",
        session_key="s1",
    )


async def asked(store: ApprovalStore, call_id: str) -> ApprovalRecord:
    """The request the call ``call_id`` made in ``store``, once it is there (read on the
    store's change stream from its start)."""
    # (the stores' changes are async generators: closed here, not left to the collector)
    following = cast("AsyncGenerator[Change, None]", store.changes(since="0"))
    async with aclosing(following) as changes:
        async for change in changes:
            request = change.request
            if change.kind == "request_created" and request and request.tool_call_id == call_id:
                return request
    raise AssertionError("unreachable")


TOKEN = "fleet-token-0123456789abcdef"  # the token of the command's child processes


class Inbox:
    """``interpose inbox --listen 127.0.0.1:0 ...`` as a child process; its stderr read
    by a thread (the URL it announces, then its log)."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "interpose.cli", "inbox", "--listen", "127.0.0.1:0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, TOKEN_ENV: TOKEN},
        )
        self.lines: list[str] = []
        self.url: str | None = None
        self._found = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            line = raw.decode(errors="replace")
            self.lines.append(line)
            if self.url is None and "serving on " in line:
                self.url = line.split("serving on ", 1)[1].strip()
                self._found.set()
        self._found.set()

    def wait_url(self) -> str:
        self._found.wait(TIMEOUT)
        assert self.url is not None, "".join(self.lines)
        return self.url

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait(TIMEOUT)
        self._reader.join(TIMEOUT)
        assert self.process.stderr is not None
        self.process.stderr.close()
        return code
