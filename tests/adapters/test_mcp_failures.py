"""``interpose mcp-proxy`` when things go wrong, provoked for real: a missing upstream
binary, upstreams that exit at once or during the handshake (with a message on their
stderr), one that dies after a call, one that floods progress with a token nobody
sent, messages over the size limit both ways, a client line that is not JSON, and bad
arguments on the command line.

The proxy runs as a child process (``python -m interpose.cli mcp-proxy``); the client is
the MCP SDK's ``Client`` or raw JSON lines on the proxy's stdin/stdout.  The upstream is
a small MCP server written into the test's tmp dir (JSON lines by hand, so that it can
misbehave exactly as asked).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types as mt
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_helpers import CALL_TIMEOUT, HttpProxy, proxy_argv, stdio_proxy

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

LIMIT = 1 << 20  # --max-message-bytes of the size tests


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


SERVER = r"""
import json, os, sys

MODE = sys.argv[1]
MARK = sys.argv[2] if len(sys.argv) > 2 else None


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(rid, said):
    send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": said}]}})


def progress(token, value):
    params = {"progressToken": token, "progress": value}
    return json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})


if MODE == "exit-at-once":
    sys.stderr.write("boom: no API key in the environment\n")
    sys.exit(3)
if MARK is not None and os.path.exists(MARK):
    sys.stderr.write("cannot start again: the crash left a lock file\n")
    sys.exit(6)
TOOLS = ["echo", "crash", "flood", "big", "big_tail"]
for line in sys.stdin:
    message = json.loads(line)
    method, rid = message.get("method"), message.get("id")
    params = message.get("params") or {}
    if method == "initialize":
        if MODE == "exit-in-handshake":
            sys.stderr.write("handshake refused: bad token\n")
            sys.exit(4)
        if MODE == "hang-in-handshake":  # never answers (reads on until stdin closes)
            sys.stderr.write("waiting for a licence server\n")
            sys.stderr.flush()
            continue
        result = {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "scripted", "version": "1"},
        }
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    elif method == "tools/list":
        tools = [{"name": name, "inputSchema": {"type": "object"}} for name in TOOLS]
        send({"jsonrpc": "2.0", "id": rid, "result": {"tools": tools}})
    elif method == "tools/call":
        name, args = params["name"], params.get("arguments") or {}
        if name == "echo":
            text(rid, "echo: " + str(args.get("message")))
        elif name == "crash":
            if MARK is not None:
                open(MARK, "w").close()
            sys.stderr.write("crashing now: out of memory\n")
            sys.stderr.flush()
            os._exit(5)
        elif name == "flood":
            # progress with a token nobody sent, then the call's own, then the answer,
            # then more under the call's token, which is no longer in flight
            token = (params.get("_meta") or {}).get("progressToken")
            stray = "".join(progress("never-sent", i) + "\n" for i in range(args["count"]))
            sys.stdout.write(stray)
            for value in (1, 2, 3):
                sys.stdout.write(progress(token, value) + "\n")
            text(rid, "flooded")
            stale = "".join(progress(token, 10 + i) + "\n" for i in range(1000))
            sys.stdout.write(stale)
            sys.stdout.flush()
        elif name == "big":  # the id first (as the Python SDK writes it)
            text(rid, "x" * args["size"])
        elif name == "big_tail":  # the id last (as the TypeScript SDK writes it)
            body = '{"content": [{"type": "text", "text": "' + "x" * args["size"] + '"}]}'
            sys.stdout.write('{"result": ' + body + ', "jsonrpc": "2.0", "id": ')
            sys.stdout.write(json.dumps(rid) + "}\n")
            sys.stdout.flush()
    elif rid is not None:
        error = {"code": -32601, "message": "Method not found"}
        send({"jsonrpc": "2.0", "id": rid, "error": error})
"""


def scripted(tmp_path: Path, mode: str, *extra: str) -> list[str]:
    """The command of the scripted upstream in ``mode``."""
    script = tmp_path / "scripted.py"
    script.write_text(SERVER, encoding="utf-8")
    return [sys.executable, str(script), mode, *extra]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


class RawClient:
    """JSON lines to and from a proxy process; its stderr collected."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        assert process.stdin is not None
        assert process.stdout is not None
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self.stderr = b""

    async def write(self, data: bytes) -> None:
        await self._stdin.send(data)

    async def send(self, message: dict[str, Any]) -> None:
        await self.write(json.dumps(message).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        line = await self._stdout.receive_until(b"\n", 64 << 20)
        message: dict[str, Any] = json.loads(line)
        return message

    async def answer(self, request_id: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The answer to ``request_id`` and the messages read before it."""
        before: list[dict[str, Any]] = []
        while True:
            message = await self.receive()
            if "method" not in message and message.get("id") == request_id:
                return message, before
            before.append(message)

    async def handshake(self) -> None:
        await self.send(INITIALIZE)
        answer, _ = await self.answer(1)
        assert "result" in answer, answer
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def call(self, request_id: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
        params = {"name": name, "arguments": args}
        await self.send(
            {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
        )
        answer, _ = await self.answer(request_id)
        return answer

    async def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        async for chunk in self.process.stderr:
            self.stderr += chunk


@asynccontextmanager
async def raw_proxy(upstream: list[str], *options: str) -> AsyncIterator[RawClient]:
    """A proxy process in front of ``upstream``, driven by raw JSON lines; stopped by
    closing its stdin (and killed if it does not exit)."""
    argv = proxy_argv(upstream, name="scripted")
    at = argv.index("--")
    argv[at:at] = list(options)
    process = await anyio.open_process(argv)
    client = RawClient(process)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(client._read_stderr)
            try:
                yield client
            finally:
                await process.stdin.aclose()  # type: ignore[union-attr]
                with anyio.move_on_after(10):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
    finally:
        await process.aclose()


def text_of(answer: dict[str, Any]) -> str:
    content = answer["result"]["content"]
    return str(content[0]["text"])


# -- an upstream that cannot start, or dies during the handshake -------------------------


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("missing", ["cannot start", "/no/such/dir/mcp-server-nothing", "not found"]),
        ("not-executable", ["cannot start", "permission denied"]),
        ("exit-at-once", ["exited with status 3", "boom: no API key in the environment"]),
        ("exit-in-handshake", ["exited with status 4", "handshake refused: bad token"]),
        (
            "hang-in-handshake",
            ["no answer to initialize", "within 1s", "connect_timeout_ms", "licence server"],
        ),
    ],
)
async def test_an_upstream_that_does_not_start_fails_initialize_and_the_proxy_exits_1(
    tmp_path: Path, mode: str, said: list[str]
) -> None:
    if mode == "missing":
        upstream = ["/no/such/dir/mcp-server-nothing"]
    elif mode == "not-executable":
        plain = tmp_path / "server.sh"
        plain.write_text("not a program\n", encoding="utf-8")
        plain.chmod(0o644)
        upstream = [str(plain)]
        said = [*said, str(plain)]
    else:
        upstream = scripted(tmp_path, mode)
        said = [*said, "scripted.py"]
    config = tmp_path / "interpose.toml"
    config.write_text("[mcp]\nconnect_timeout_ms = 1000\n", encoding="utf-8")
    with anyio.fail_after(CALL_TIMEOUT):
        async with raw_proxy(upstream, "--config", str(config)) as client:
            await client.write(b"not json\n")  # answered even now
            parse_error = await client.receive()
            await client.send(INITIALIZE)
            answer = await client.receive()
            await client.process.wait()
    assert parse_error["id"] is None
    assert parse_error["error"]["code"] == mt.PARSE_ERROR
    assert answer["id"] == 1
    message = answer["error"]["message"]
    assert message.startswith("upstream MCP server 'scripted': ")
    for part in said:
        assert part in message
    assert client.process.returncode == 1
    stderr = client.stderr.decode()
    assert "Traceback" not in stderr
    assert "ExceptionGroup" not in stderr
    assert f"interpose mcp-proxy: {message}" in stderr.splitlines()


def test_with_files_as_stdin_and_stdout_initialize_gets_the_error_too(tmp_path: Path) -> None:
    # regular files: the SDK's own stdio transport serves (the event loop cannot watch
    # them); the refusal goes through it
    requests, answers = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    requests.write_text(json.dumps(INITIALIZE) + "\n", encoding="utf-8")
    argv = proxy_argv(scripted(tmp_path, "exit-at-once"), name="scripted")
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        done = subprocess.run(
            argv, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=CALL_TIMEOUT
        )
    assert done.returncode == 1
    answer = json.loads(answers.read_text(encoding="utf-8").splitlines()[0])
    assert answer["id"] == 1
    assert "exited with status 3" in answer["error"]["message"]
    assert "boom: no API key" in answer["error"]["message"]
    assert b"Traceback" not in done.stderr


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
@pytest.mark.parametrize("mode", ["ok", "exit-at-once"])
def test_with_dev_null_as_stdin_the_proxy_ends_by_itself(
    tmp_path: Path, loop: str, mode: str
) -> None:
    # /dev/null is a character device that epoll refuses to watch (it aborted uvloop and
    # left asyncio waiting): the SDK's threaded transport serves it, EOF at once
    argv = proxy_argv(scripted(tmp_path, mode), name="scripted")
    argv[argv.index("mcp-proxy") + 1 : argv.index("mcp-proxy") + 1] = ["--loop", loop]
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=CALL_TIMEOUT)
    assert done.returncode == (0 if mode == "ok" else 1), done.stderr
    assert b"Traceback" not in done.stderr


async def test_the_sdk_client_sees_why_the_upstream_did_not_start(tmp_path: Path) -> None:
    upstream = scripted(tmp_path, "exit-in-handshake")
    error: BaseException | None = None
    with anyio.fail_after(CALL_TIMEOUT):
        try:
            async with Client(stdio_proxy(upstream, name="scripted"), mode="legacy"):
                pass
        except Exception as exc:
            error = exc
    while inner := getattr(error, "exceptions", None):  # (the SDK's task groups wrap it)
        error = inner[0]
    assert isinstance(error, MCPError)
    assert "exited with status 4" in error.message
    assert "handshake refused: bad token" in error.message


async def test_an_http_proxy_whose_upstream_does_not_start_exits_1_without_listening(
    tmp_path: Path,
) -> None:
    argv = proxy_argv(scripted(tmp_path, "exit-at-once"), name="scripted")
    argv[4:4] = ["--listen", "127.0.0.1:0"]
    with anyio.fail_after(CALL_TIMEOUT):
        done = await anyio.run_process(argv, check=False)
    stderr = done.stderr.decode()
    assert done.returncode == 1
    assert "serving MCP on" not in stderr
    assert "Traceback" not in stderr
    assert "exited with status 3" in stderr
    assert "boom: no API key" in stderr


# -- an upstream that dies later ---------------------------------------------------------


async def test_an_upstream_that_dies_after_the_handshake_is_reported_then_restarted(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(stdio_proxy(scripted(tmp_path, "ok"), name="scripted")) as client:
            crashed = await client.call_tool("crash", {})
            listed = await client.list_tools()  # after the restart: the true list
            again = await client.call_tool("echo", {"message": "back"})
    assert crashed.is_error
    assert isinstance(crashed.content[0], mt.TextContent)
    said = crashed.content[0].text
    assert "upstream MCP server 'scripted'" in said
    assert "exited with status 5 during the call" in said
    assert "crashing now: out of memory" in said
    assert "being restarted" in said
    assert "echo" in [tool.name for tool in listed.tools]
    assert not again.is_error
    assert isinstance(again.content[0], mt.TextContent)
    assert again.content[0].text == "echo: back"


async def test_an_upstream_that_dies_and_cannot_restart_fails_every_call_and_listing(
    tmp_path: Path,
) -> None:
    lock = tmp_path / "crashed.lock"  # the crash leaves it; a restart sees it and exits
    upstream = scripted(tmp_path, "ok", str(lock))
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(stdio_proxy(upstream, name="scripted")) as client:
            assert next(t.name for t in (await client.list_tools()).tools) == "echo"
            crashed = await client.call_tool("crash", {})
            with pytest.raises(MCPError) as listing:
                await client.list_tools()
            calls = [await client.call_tool("echo", {"message": str(i)}) for i in range(2)]
    assert crashed.is_error
    assert "exited with status 5" in listing.value.message or "restarting it failed" in (
        listing.value.message
    )
    assert "upstream MCP server 'scripted'" in listing.value.message
    for call in calls:
        assert call.is_error
        assert isinstance(call.content[0], mt.TextContent)
        said = call.content[0].text
        assert "restarting it failed" in said
        assert "exited with status 6" in said
        assert "cannot start again: the crash left a lock file" in said


# -- progress for no call in flight ------------------------------------------------------


async def test_a_progress_flood_with_a_token_never_sent_is_dropped(tmp_path: Path) -> None:
    count = 100_000
    with anyio.fail_after(CALL_TIMEOUT):
        async with raw_proxy(scripted(tmp_path, "ok")) as client:
            await client.handshake()
            params = {
                "name": "flood",
                "arguments": {"count": count},
                "_meta": {"progressToken": "mine"},
            }
            await client.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
            started = anyio.current_time()
            # a call made while the flood arrives is not held up by it
            await client.send(
                {
                    "jsonrpc": "2.0",
                    "id": 3,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"message": "meanwhile"}},
                }
            )
            answers: dict[Any, dict[str, Any]] = {}
            progress: list[dict[str, Any]] = []
            while len(answers) < 2:
                message = await client.receive()
                if message.get("method") == "notifications/progress":
                    progress.append(message["params"])
                elif "id" in message:
                    answers[message["id"]] = message
            took = anyio.current_time() - started
            # the progress after the answer (its call is over) is dropped too: nothing
            # comes before the answer to a call made after it
            params = {"name": "echo", "arguments": {"message": "after"}}
            await client.send({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": params})
            echo, before = await client.answer(4)
            progress += [m["params"] for m in before if m.get("method") == "notifications/progress"]
    assert text_of(answers[2]) == "flooded"
    assert text_of(answers[3]) == "echo: meanwhile"
    assert [p["progressToken"] for p in progress] == ["mine"] * 3
    assert [p["progress"] for p in progress] == [1, 2, 3]
    assert text_of(echo) == "echo: after"
    assert took < 10, f"the flood took {took:.1f}s to get through"
    assert b"progress for a token no call in flight asked for" in client.stderr


# -- the size limit ----------------------------------------------------------------------


async def test_a_client_message_over_the_limit_gets_an_error_and_the_proxy_goes_on(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(CALL_TIMEOUT):
        async with raw_proxy(scripted(tmp_path, "ok"), "--max-message-bytes", "1M") as client:
            await client.handshake()
            big = client.call(2, "echo", {"message": "y" * (2 * LIMIT)})
            too_big = await big
            await client.write(b"z" * (3 * LIMIT) + b"\n")  # garbage, no id to find
            garbage = await client.receive()
            echo = await client.call(3, "echo", {"message": "still here"})
    assert too_big["error"]["code"] == mt.INVALID_REQUEST
    said = too_big["error"]["message"]
    assert f"over the limit of {LIMIT} bytes" in said
    assert "--max-message-bytes" in said
    assert "max_message_bytes" in said
    assert garbage["id"] is None
    assert garbage["error"]["code"] == mt.INVALID_REQUEST
    assert f"a message of {3 * LIMIT} bytes" in garbage["error"]["message"]
    assert text_of(echo) == "echo: still here"


@pytest.mark.parametrize("tool", ["big", "big_tail"])
async def test_an_upstream_answer_over_the_limit_fails_that_call_with_a_clear_error(
    tmp_path: Path, tool: str
) -> None:
    with anyio.fail_after(CALL_TIMEOUT):
        async with raw_proxy(scripted(tmp_path, "ok"), "--max-message-bytes", "1M") as client:
            await client.handshake()
            too_big = await client.call(2, tool, {"size": 2 * LIMIT})
            fits = await client.call(3, tool, {"size": LIMIT // 2})
            echo = await client.call(4, "echo", {"message": "same server"})
    said = too_big["error"]["message"]
    assert "upstream MCP server 'scripted' sent a message of" in said
    assert f"over the limit of {LIMIT} bytes" in said
    assert "--max-message-bytes" in said
    assert len(text_of(fits)) == LIMIT // 2
    assert text_of(echo) == "echo: same server"
    assert b"restart" not in client.stderr  # the server was not taken for dead


async def test_an_http_upstream_answer_over_the_limit_fails_that_call(
    tmp_path: Path, http_proxy: type[HttpProxy]
) -> None:
    # the upstream speaks streamable HTTP: an interpose proxy serving the scripted server
    url = http_proxy(proxy_argv(scripted(tmp_path, "ok"), name="scripted")).url
    argv = [sys.executable, "-m", "interpose.cli", "mcp-proxy", "--name", "remote"]
    argv += ["--max-message-bytes", "1M", "--upstream-url", url]
    target = StdioServerParameters(
        command=argv[0], args=argv[1:], env={"PATH": os.environ.get("PATH", "")}
    )
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(target, mode="legacy") as client:
            with pytest.raises(MCPError) as too_big:
                await client.call_tool("big", {"size": 2 * LIMIT})
            echo = await client.call_tool("echo", {"message": "same session"})
    said = too_big.value.message
    assert "upstream MCP server 'remote' sent a message of at least" in said
    assert f"over the limit of {LIMIT} bytes" in said
    assert "--max-message-bytes" in said
    assert isinstance(echo.content[0], mt.TextContent)
    assert echo.content[0].text == "echo: same session"


async def test_an_http_request_over_the_limit_gets_413_with_the_limit(
    tmp_path: Path, http_proxy: type[HttpProxy]
) -> None:
    argv = proxy_argv(scripted(tmp_path, "ok"), name="scripted")
    argv[4:4] = ["--max-message-bytes", "1M"]
    url = http_proxy(argv).url
    params = {"name": "echo", "arguments": {"message": "y" * (2 * LIMIT)}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    headers = {"accept": "application/json, text/event-stream"}
    with anyio.fail_after(CALL_TIMEOUT):
        async with httpx2.AsyncClient() as http:
            response = await http.post(url, json=body, headers=headers)
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["code"] == mt.INVALID_REQUEST
    assert f"over the limit of {LIMIT} bytes" in error["message"]
    assert "--max-message-bytes" in error["message"]


# -- JSON that is not a request ----------------------------------------------------------


async def test_a_line_that_is_not_json_gets_a_parse_error_and_the_proxy_goes_on(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(CALL_TIMEOUT):
        async with raw_proxy(scripted(tmp_path, "ok")) as client:
            await client.handshake()
            await client.write(b'{"jsonrpc": "2.0", "id": 5, "method": \n')
            parse_error = await client.receive()
            await client.write(b"[1, 2]\n")
            not_an_object = await client.receive()
            echo = await client.call(6, "echo", {"message": "fine"})
    assert parse_error == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": mt.PARSE_ERROR, "message": parse_error["error"]["message"]},
    }
    assert parse_error["error"]["message"].startswith("Parse error")
    assert not_an_object["id"] is None
    assert not_an_object["error"]["code"] == mt.INVALID_REQUEST
    assert text_of(echo) == "echo: fine"


# -- bad arguments -----------------------------------------------------------------------


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "interpose.cli", "mcp-proxy", *args]
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=CALL_TIMEOUT, stdin=subprocess.DEVNULL
    )


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--log-level", "LOUD"], "--log-level"),
        (["--log-file", "{tmp}/missing/x.log"], "no directory"),
        (["--log-file", "{tmp}"], "is a directory"),
        (["--listen", "localhost"], "--listen"),
        (["--listen", "127.0.0.1:70000"], "--listen"),
        (["--max-message-bytes", "lots"], "--max-message-bytes"),
        (["--max-message-bytes", "12"], "--max-message-bytes"),
        (["--config", "{tmp}/missing.toml"], "missing.toml"),
        (["--config", "{tmp}/dir.toml"], "dir.toml"),
        (["--loop", "fast"], "--loop"),
        ([], "no upstream"),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(tmp_path: Path, args: list[str], said: str) -> None:
    (tmp_path / "dir.toml").mkdir()
    args = [arg.replace("{tmp}", str(tmp_path)) for arg in args]
    upstream = ["--", "true"] if args else []
    done = _run(*args, *upstream)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert said in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("interpose mcp-proxy: ")


def test_a_name_the_config_file_has_already_gives_one_line_and_exit_2(tmp_path: Path) -> None:
    config = tmp_path / "proxy.toml"
    config.write_text('[mcp.servers.files]\ncommand = "true"\n')
    done = _run("--config", str(config), "--name", "files", "--", "true")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == (
        f"interpose mcp-proxy: --name files: {config} has this server already; choose another"
    )


def test_a_listen_address_in_use_gives_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = _run("--listen", f"127.0.0.1:{port}", "--", *scripted(tmp_path, "ok"))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"interpose mcp-proxy: cannot listen on 127.0.0.1:{port}: ")
    assert "in use" in last


def test_help_has_a_description_and_the_exit_codes() -> None:
    done = _run("--help")
    assert done.returncode == 0
    assert "Put interpose's pipeline between an MCP client" in done.stdout
    assert "exit codes:" in done.stdout
    for code in ("0  ", "1  ", "2  "):
        assert f"\n  {code}" in done.stdout
