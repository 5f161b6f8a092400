"""``interpose mcp-proxy`` in front of real MCP servers, driven by the SDK's ``Client``.

Each test starts the proxy as a child process, over stdio and over streamable HTTP on
127.0.0.1, with a real upstream: mcp-server-time and mcp-server-git (PyPI),
server-filesystem and server-everything (npm).  What the user relies on: the tools are
listed, an allowed call returns exactly what the server returned, a refused call comes
back as an error result the model can read and never reaches the server, progress and
cancellation pass through, and a crashed upstream gives a clear error and comes back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_helpers import (
    CALL_TIMEOUT,
    HttpProxy,
    children,
    npm_server,
    proxy_argv,
    python_server,
    stdio_proxy,
    wait_gone,
)

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ASK_HOOK = Path(__file__).resolve().parent / "hooks" / "ask.sh"

Target = StdioServerParameters | str
Start = Callable[..., Target]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["stdio", "http"])
def proxied(request: pytest.FixtureRequest, http_proxy: type[HttpProxy]) -> Start:
    """``proxied(upstream, name=..., config=None)``: the proxy's address, over the
    transport of the test's parameter."""

    def start(upstream: list[str], *, name: str, config: Path | None = None) -> Target:
        target: Target
        if request.param == "stdio":
            target = stdio_proxy(upstream, name=name, config=config)
        else:
            target = http_proxy(proxy_argv(upstream, name=name, config=config)).url
        return target

    return start


def direct(upstream: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=upstream[0], args=upstream[1:])


def same(a: mt.CallToolResult, b: mt.CallToolResult) -> None:
    """What the model sees of a result: content, structured content, error flag."""
    dump = [r.model_dump(exclude={"meta"}, exclude_none=True) for r in (a, b)]
    assert dump[0] == dump[1]


def refusal(result: mt.CallToolResult) -> dict[str, Any]:
    """The JSON reason of a refused call."""
    assert result.is_error
    assert isinstance(result.content[0], mt.TextContent)
    reason: dict[str, Any] = json.loads(result.content[0].text)
    return reason


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "interpose.toml"
    path.write_text(text, encoding="utf-8")
    return path


# -- mcp-server-time: listing, exact results, protocol errors, both client eras ---------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_time_tools_are_listed_and_allowed_calls_return_what_the_server_returned(
    proxied: Start, mode: str
) -> None:
    server = python_server("mcp_server_time")
    args = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(direct(server), mode="legacy") as client:
            expected_tools = (await client.list_tools()).tools
            expected = await client.call_tool("convert_time", args)
        async with Client(proxied(server, name="time"), mode=mode) as client:
            tools = (await client.list_tools()).tools
            got = await client.call_tool("convert_time", args)
            with pytest.raises(MCPError) as unknown:
                await client.call_tool("no_such_tool", {})
    assert [t.model_dump() for t in tools] == [t.model_dump() for t in expected_tools]
    same(got, expected)
    assert got.structured_content is not None
    assert got.structured_content["target"]["timezone"] == "Asia/Tokyo"
    # a protocol error is not turned into a tool result: the code reaches the client
    assert unknown.value.code == mt.INVALID_PARAMS


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
async def test_the_proxy_serves_alike_on_either_event_loop(loop: str, tmp_path: Path) -> None:
    server = python_server("mcp_server_time")
    args = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    log = tmp_path / "proxy.log"
    argv = proxy_argv(server, name="time")
    argv[argv.index("--") : argv.index("--")] = ["--loop", loop, "--log-level", "INFO"]
    argv[argv.index("--") : argv.index("--")] = ["--log-file", str(log)]
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(direct(server), mode="legacy") as client:
            expected = await client.call_tool("convert_time", args)
        async with Client(direct(argv), mode="legacy") as client:
            got = await client.call_tool("convert_time", args)
    same(got, expected)
    module = "uvloop" if loop == "uvloop" else "asyncio"
    assert f"event loop: {module}." in log.read_text()


async def test_interceptors_see_mcp_names_and_the_audit_log_records_each_call(
    proxied: Start, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    config = write_config(
        tmp_path,
        f"""
[hooks.builtins.tool-filter]
deny = ["mcp__time__.*convert.*"]

[observers.audit]
path = "{audit}"
""",
    )
    server = python_server("mcp_server_time")
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(proxied(server, name="time", config=config)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            ok = await client.call_tool("get_current_time", {"timezone": "UTC"})
            denied = await client.call_tool("convert_time", {"time": "12:00"})
    # a regex naming the server's namespace was accepted before any tool was listed;
    # the tool it denies is hidden from the listing and refused when called anyway
    assert names == ["get_current_time"]
    assert not ok.is_error
    assert refusal(denied) == {
        "status": "blocked",
        "tool": "mcp__time__convert_time",
        "reason": refusal(denied)["reason"],
    }
    assert "tool filter" in refusal(denied)["reason"]
    # the audit log is written when the proxy exits (stdio) or drains; wait for both calls
    with anyio.fail_after(CALL_TIMEOUT):
        while True:
            lines = (
                [json.loads(line) for line in audit.read_text().splitlines()]
                if audit.exists()
                else []
            )
            ends = [e for e in lines if e["kind"] in ("tool_exec_end",)]
            if len(ends) >= 2:
                break
            await anyio.sleep(0.05)
    assert [(e["tool_name"], e["status"]) for e in ends] == [
        ("mcp__time__get_current_time", "ok"),
        ("mcp__time__convert_time", "blocked"),
    ]
    assert all(e["session_key"] for e in ends)


# -- mcp-server-git: a denied destructive tool never reaches the server -----------------


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


async def test_a_denied_git_tool_is_refused_and_never_reaches_the_server(
    proxied: Start, tmp_path: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.invalid")
    _git(repo, "config", "user.name", "t")
    (repo / "a.txt").write_text("one\n")
    _git(repo, "add", "a.txt")
    _git(repo, "commit", "-qm", "one")
    (repo / "a.txt").write_text("two\n")
    _git(repo, "add", "a.txt")  # staged: git_reset would unstage it
    config = write_config(
        tmp_path,
        """
[hooks.builtins.tool-filter]
deny = ["mcp__git__git_reset", "mcp__git__git_commit"]
""",
    )
    server = python_server("mcp_server_git")
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(direct(server), mode="legacy") as client:
            expected = await client.call_tool("git_status", {"repo_path": str(repo)})
        async with Client(proxied(server, name="git", config=config)) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            status = await client.call_tool("git_status", {"repo_path": str(repo)})
            reset = await client.call_tool("git_reset", {"repo_path": str(repo)})
    assert "git_status" in names
    assert "git_reset" not in names
    assert "git_commit" not in names
    same(status, expected)
    assert refusal(reset)["status"] == "blocked"
    assert refusal(reset)["tool"] == "mcp__git__git_reset"
    # the server never ran it: the change is still staged
    assert _git(repo, "diff", "--cached", "--name-only").split() == ["a.txt"]


# -- server-filesystem: the path guard on a real file server -------------------------------


async def test_a_write_to_a_sensitive_path_is_blocked_and_the_file_never_appears(
    proxied: Start, tmp_path: Path
) -> None:
    root = tmp_path / "work"
    root.mkdir()
    server = [*npm_server("filesystem"), str(root)]
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(proxied(server, name="filesystem")) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            wrote = await client.call_tool(
                "write_file", {"path": str(root / "notes.txt"), "content": "hello"}
            )
            secret = await client.call_tool(
                "write_file", {"path": str(root / ".env"), "content": "TOKEN=stolen"}
            )
            moved = await client.call_tool(
                "move_file",
                {"source": str(root / "notes.txt"), "destination": str(root / "id_rsa")},
            )
            read = await client.call_tool("read_text_file", {"path": str(root / "notes.txt")})
    assert {"write_file", "read_text_file", "move_file"} <= names
    assert not wrote.is_error
    assert (root / "notes.txt").read_text() == "hello"
    assert refusal(secret)["status"] == "blocked"
    assert refusal(secret)["tool"] == "mcp__filesystem__write_file"
    assert "security-audit" in refusal(secret)["reason"]
    assert not (root / ".env").exists()
    assert refusal(moved)["status"] == "blocked"
    assert not (root / "id_rsa").exists()
    assert isinstance(read.content[0], mt.TextContent)
    assert read.content[0].text == "hello"


# -- server-everything: content kinds, progress, cancellation, pass-through ----------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_everything_results_progress_and_pass_through(proxied: Start, mode: str) -> None:
    server = npm_server("everything")
    steps: list[tuple[float, float | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        steps.append((progress, total))

    calls: dict[str, dict[str, Any]] = {
        "echo": {"message": "hi"},
        "get-sum": {"a": 2, "b": 3},
        "get-tiny-image": {},
        "get-structured-content": {"location": "Chicago"},
    }
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(direct(server), mode="legacy") as client:
            expected = {name: await client.call_tool(name, args) for name, args in calls.items()}
            expected_prompts = await client.list_prompts()
            expected_resource = await client.read_resource(
                "demo://resource/static/document/architecture.md"
            )
        async with Client(proxied(server, name="everything"), mode=mode) as client:
            for name, result in expected.items():
                same(await client.call_tool(name, calls[name]), result)
            long = await client.call_tool(
                "trigger-long-running-operation",
                {"duration": 0.4, "steps": 4},
                progress_callback=progress,
            )
            prompts = await client.list_prompts()
            resource = await client.read_resource("demo://resource/static/document/architecture.md")
    assert not long.is_error
    assert steps == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert [p.name for p in prompts.prompts] == [p.name for p in expected_prompts.prompts]
    assert resource.model_dump(exclude={"meta"}) == expected_resource.model_dump(exclude={"meta"})
    image = expected["get-tiny-image"].content
    assert any(isinstance(block, mt.ImageContent) for block in image)


async def test_a_cancelled_call_stops_early_and_the_proxy_keeps_serving(proxied: Start) -> None:
    server = npm_server("everything")
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(proxied(server, name="everything")) as client:
            start = anyio.current_time()
            with pytest.raises(MCPError) as timed_out:
                await client.call_tool(
                    "trigger-long-running-operation",
                    {"duration": 20, "steps": 20},
                    read_timeout_seconds=0.5,
                )
            took = anyio.current_time() - start
            echo = await client.call_tool("echo", {"message": "still here"})
    assert timed_out.value.code == mt.REQUEST_TIMEOUT
    assert took < 10
    assert isinstance(echo.content[0], mt.TextContent)
    assert "still here" in echo.content[0].text


async def test_a_large_message_and_calls_in_flight_each_get_their_own_answer(
    proxied: Start,
) -> None:
    # a 512 KiB argument crosses each pipe in many pieces (a pipe holds 64 KiB; the SDK
    # client takes server-sent events up to 1 MiB), and 16 calls in flight are answered
    # by id, in any order: each caller gets its own result
    server = npm_server("everything")
    big = "".join(chr(ord("a") + i % 26) for i in range(1 << 19))
    messages = [f"call {i}" for i in range(16)]
    answers: dict[str, mt.CallToolResult] = {}
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(direct(server), mode="legacy") as client:
            expected = await client.call_tool("echo", {"message": big})
        async with Client(proxied(server, name="everything"), mode="legacy") as client:
            large = await client.call_tool("echo", {"message": big})

            async def call(message: str) -> None:
                answers[message] = await client.call_tool("echo", {"message": message})

            async with anyio.create_task_group() as tg:
                for message in messages:
                    tg.start_soon(call, message)
    same(large, expected)
    for message in messages:
        block = answers[message].content[0]
        assert isinstance(block, mt.TextContent)
        assert block.text == f"Echo: {message}"


# -- a crashed upstream --------------------------------------------------------------------


async def test_a_crashed_upstream_gives_a_clear_error_and_the_proxy_recovers(
    http_proxy: type[HttpProxy],
) -> None:
    server = npm_server("everything")
    proxy = http_proxy(proxy_argv(server, name="everything"))
    killed: list[int] = []

    async def kill_upstream(progress: float, total: float | None, message: str | None) -> None:
        # the call is running upstream: the server dies in the middle of it
        if not killed:
            (upstream,) = children(proxy.process.pid)
            os.kill(upstream, signal.SIGKILL)
            killed.append(upstream)

    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(proxy.url) as client:
            crashed = await client.call_tool(
                "trigger-long-running-operation",
                {"duration": 10, "steps": 10},
                progress_callback=kill_upstream,
            )
            again = await client.call_tool("echo", {"message": "back"})
    assert killed
    wait_gone(killed[0])
    assert crashed.is_error
    assert isinstance(crashed.content[0], mt.TextContent)
    assert "upstream MCP server 'everything'" in crashed.content[0].text
    assert "restarted" in crashed.content[0].text
    assert not again.is_error
    assert isinstance(again.content[0], mt.TextContent)
    assert "back" in again.content[0].text
    (restarted,) = children(proxy.process.pid)
    assert restarted != killed[0]


# -- Approval.ask through MCP elicitation ------------------------------------------------


async def test_an_approval_that_asks_is_put_to_the_user_through_elicitation(
    proxied: Start, tmp_path: Path
) -> None:
    hook = ASK_HOOK
    config = write_config(
        tmp_path,
        f"""
[[hooks.commands]]
event = "tool.approve"
command = "{hook}"
filter.tool.allow = ["mcp__everything__get-sum"]
""",
    )
    asked: list[str] = []
    answers = iter([True, False])

    async def elicit(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params.message)
        return mt.ElicitResult(action="accept", content={"allow": next(answers)})

    server = npm_server("everything")
    target = proxied(server, name="everything", config=config)
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(target, mode="legacy", elicitation_callback=elicit) as client:
            allowed = await client.call_tool("get-sum", {"a": 2, "b": 3})
            refused = await client.call_tool("get-sum", {"a": 4, "b": 5})
            echo = await client.call_tool("echo", {"message": "not asked"})
    assert not allowed.is_error
    assert isinstance(allowed.content[0], mt.TextContent)
    assert "5" in allowed.content[0].text
    assert refusal(refused)["status"] == "denied"
    assert "the user said no" in refusal(refused)["reason"]
    assert not echo.is_error
    # the question names the reason, the tool and its arguments
    assert len(asked) == 2
    assert "sums need a human" in asked[0]
    assert "mcp__everything__get-sum" in asked[0]
    assert '{"a": 2, "b": 3}' in asked[0]


async def test_a_client_without_elicitation_gets_a_denial_when_approval_is_asked(
    proxied: Start, tmp_path: Path
) -> None:
    hook = ASK_HOOK
    config = write_config(
        tmp_path,
        f"""
[[hooks.commands]]
event = "tool.approve"
command = "{hook}"
filter.tool.allow = ["mcp__everything__get-sum"]
""",
    )
    server = npm_server("everything")
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(proxied(server, name="everything", config=config)) as client:
            refused = await client.call_tool("get-sum", {"a": 2, "b": 3})
    assert refusal(refused)["status"] == "denied"
    assert "cannot be asked" in refusal(refused)["reason"]


async def test_upstream_log_messages_reach_the_client(proxied: Start) -> None:
    server = npm_server("everything")
    received: list[mt.LoggingMessageNotificationParams] = []
    arrived = anyio.Event()

    async def on_log(params: mt.LoggingMessageNotificationParams) -> None:
        received.append(params)
        arrived.set()

    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(
            proxied(server, name="everything"), mode="legacy", logging_callback=on_log
        ) as client:
            # the server logs once at once, then every 5 s; stop it again before leaving
            await client.call_tool("toggle-simulated-logging", {})
            await arrived.wait()
            await client.call_tool("toggle-simulated-logging", {})
    assert "message" in str(received[0].data)


# -- list_changed, both protocol eras --------------------------------------------------------

GROWING = [sys.executable, str(Path(__file__).resolve().parent / "servers" / "growing.py")]


async def test_a_changed_tool_list_reaches_a_handshake_era_client(proxied: Start) -> None:
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ToolListChangedNotification):
            changed.set()

    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(
            proxied(GROWING, name="growing"), mode="legacy", message_handler=on_message
        ) as client:
            assert client.server_capabilities.tools is not None
            assert client.server_capabilities.tools.list_changed
            before = [t.name for t in (await client.list_tools()).tools]
            await client.call_tool("grow", {})
            await changed.wait()
            after = [t.name for t in (await client.list_tools()).tools]
            # the new tool is routed at once
            called = await client.call_tool("extra_1", {})
    assert before == ["grow", "meta", "refuse", "sample"]
    assert after == ["grow", "meta", "refuse", "sample", "extra_1"]
    assert not called.is_error


async def test_a_changed_tool_list_reaches_a_2026_client_on_its_listen_stream(
    proxied: Start,
) -> None:
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(proxied(GROWING, name="growing"), mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            async with client.listen(tools_list_changed=True) as events:
                await client.call_tool("grow", {})
                async for event in events:
                    assert type(event).__name__ == "ToolsListChanged"
                    break
            after = [t.name for t in (await client.list_tools()).tools]
    assert after == ["grow", "meta", "refuse", "sample", "extra_1"]


async def test_a_protocol_error_of_the_upstream_reaches_the_client_with_its_code(
    proxied: Start,
) -> None:
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(proxied(GROWING, name="growing")) as client:
            with pytest.raises(MCPError) as refused:
                await client.call_tool("refuse", {})
            # and the proxy goes on serving
            ok = await client.call_tool("meta", {})
    assert refused.value.code == mt.INVALID_PARAMS
    assert refused.value.message == "refuse: this tool never accepts its arguments"
    assert not ok.is_error


async def test_an_unanswered_question_denies_the_call_after_the_approval_timeout(
    proxied: Start, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path,
        f"""
[hooks.defaults]
approval_timeout_ms = 500

[[hooks.commands]]
event = "tool.approve"
command = "{ASK_HOOK}"
filter.tool.allow = ["mcp__everything__get-sum"]
""",
    )
    asked = anyio.Event()

    async def never_answers(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    server = npm_server("everything")
    target = proxied(server, name="everything", config=config)
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(target, mode="legacy", elicitation_callback=never_answers) as client:
            refused = await client.call_tool("get-sum", {"a": 2, "b": 3})
    assert asked.is_set()
    assert refusal(refused)["status"] == "denied"
    assert "no answer within 0.5s" in refusal(refused)["reason"]


async def test_an_upstream_past_call_timeout_gives_a_readable_error(
    proxied: Start, tmp_path: Path
) -> None:
    config = write_config(tmp_path, "[mcp]\ncall_timeout_ms = 300\n")
    server = npm_server("everything")
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(proxied(server, name="everything", config=config)) as client:
            slow = await client.call_tool(
                "trigger-long-running-operation", {"duration": 20, "steps": 20}
            )
            fast = await client.call_tool("echo", {"message": "quick"})
    assert slow.is_error
    assert isinstance(slow.content[0], mt.TextContent)
    assert "upstream MCP server 'everything': no answer within 0.3s" in slow.content[0].text
    assert not fast.is_error


async def test_an_http_upstream_behind_a_stdio_proxy(http_proxy: type[HttpProxy]) -> None:
    # the upstream speaks streamable HTTP: here, a proxy serving mcp-server-time over HTTP
    server = python_server("mcp_server_time")
    upstream = http_proxy(proxy_argv(server, name="time")).url
    argv = [sys.executable, "-m", "interpose.cli", "mcp-proxy", "--name", "remote"]
    target = StdioServerParameters(
        command=argv[0],
        args=[*argv[1:], "--upstream-url", upstream],
        env={"PATH": os.environ.get("PATH", "")},
    )
    args = {"source_timezone": "UTC", "time": "08:30", "target_timezone": "UTC"}
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(direct(server), mode="legacy") as client:
            expected = await client.call_tool("convert_time", args)
        async with Client(target) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            got = await client.call_tool("convert_time", args)
    assert names == ["get_current_time", "convert_time"]
    same(got, expected)


async def test_the_http_fast_lane_keeps_the_sdks_dns_rebinding_protection(
    http_proxy: type[HttpProxy],
) -> None:
    # the fast lane remembers which header values the SDK's transport security admits:
    # a foreign Host or Origin, or a wrong content type, is still refused each time
    import httpx2

    url = http_proxy(proxy_argv(python_server("mcp_server_time"), name="time")).url
    init = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    args = {"timezone": "UTC"}
    with anyio.fail_after(CALL_TIMEOUT):
        async with httpx2.AsyncClient(timeout=CALL_TIMEOUT) as http:
            opened = await http.post(url, json=init, headers=accept)
            session = {"mcp-session-id": opened.headers["mcp-session-id"]}
            session["mcp-protocol-version"] = "2025-06-18"
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(url, json=initialized, headers=accept | session)

            async def call(number: int, **headers: str) -> httpx2.Response:
                body = {"jsonrpc": "2.0", "id": number, "method": "tools/call"}
                body["params"] = {"name": "get_current_time", "arguments": args}
                sent = accept | session | {k.replace("_", "-"): v for k, v in headers.items()}
                response: httpx2.Response = await http.post(
                    url, content=json.dumps(body), headers=sent
                )
                return response

            statuses = []
            for number in range(2):  # asked, then remembered: the same answers
                statuses += [
                    (await call(10 + number)).status_code,
                    (await call(20 + number, host="evil.example")).status_code,
                    (await call(30 + number, origin="http://evil.example")).status_code,
                    (await call(40 + number, content_type="text/plain")).status_code,
                ]
            allowed = await call(50)
    assert statuses == [200, 421, 403, 400] * 2
    assert allowed.json()["result"]["structuredContent"]["timezone"] == "UTC"
