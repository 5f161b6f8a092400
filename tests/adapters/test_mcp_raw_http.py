"""``HttpLane`` on its raw way (``RawHttp``): a ``tools/call`` POSTed on the lane's own
kept-alive connection, the answer read by hand.

Against a real upstream (the SDK's low-level ``Server`` served by uvicorn on 127.0.0.1,
a free port, in the test's own event loop; the session opened by the SDK ``Client``
as the proxy opens it): an event-stream answer (chunked) after a log notification,
a progress notification and a sampling request of the server; a JSON answer
(``Content-Length``); connections kept between calls.  Against a small HTTP/1.1
server written here (what a real server rarely does on purpose): events split
across chunks anywhere, 404, an error status with a JSON-RPC error, a connection the
server closed between calls (connected again, once), a connection closed during the
response (no second try), and a call given up on (the connection is dropped and the
server told).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
import httpx2
import mcp_types as mt
import msgspec
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp_helpers import read_post
from mcp_types.jsonrpc import CONNECTION_CLOSED, INVALID_PARAMS, REQUEST_TIMEOUT

from interpose.adapters.mcp.pipe import HttpLane
from interpose.adapters.mcp.rawhttp import RawHttp

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TIMEOUT = 20.0  # s: one test
START_TIMEOUT = 10.0  # s: until uvicorn listens
MAX_REQUESTS = 20  # on one connection of the hand-written server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- a real upstream: the SDK's server on uvicorn -----------------------------------------


def upstream() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        schema = {"type": "object", "properties": {"text": {"type": "string"}}}
        names = ("echo", "chatty")
        return mt.ListToolsResult(tools=[mt.Tool(name=n, input_schema=schema) for n in names])

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        text = str((params.arguments or {}).get("text", ""))
        if params.name == "chatty":  # everything a server may send before its answer
            updated = mt.ResourceUpdatedNotification(
                params=mt.ResourceUpdatedNotificationParams(uri="file:///working")
            )
            await ctx.session.send_notification(updated, related_request_id=ctx.request_id)
            token = dict(ctx.meta or {}).get("progress_token")
            if token is not None:
                await ctx.session.send_progress_notification(
                    token, 0.5, 1.0, "half", related_request_id=ctx.request_id
                )
            question = mt.SamplingMessage(
                role="user", content=mt.TextContent(type="text", text=text)
            )
            answer = await ctx.session.create_message(
                [question], max_tokens=3, related_request_id=ctx.request_id
            )
            said = answer.content.text if isinstance(answer.content, mt.TextContent) else "?"
            text = f"sampled: {said}"
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)])

    return Server("raw-upstream", on_list_tools=list_tools, on_call_tool=call_tool)


@contextlib.asynccontextmanager
async def serving(*, json_response: bool) -> AsyncIterator[str]:
    """Serve the upstream on 127.0.0.1 (a free port); yield its URL."""
    app = upstream().streamable_http_app(host="127.0.0.1", json_response=json_response)
    web = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(web.serve)
        with anyio.fail_after(START_TIMEOUT):
            while not web.started:  # noqa: ASYNC110 (uvicorn has no "listening" event)
                await anyio.sleep(0.01)
        port = web.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            web.should_exit = True


@contextlib.asynccontextmanager
async def session(url: str) -> AsyncIterator[HttpLane]:
    """A lane in the session the SDK ``Client`` opened (as the proxy's upstream does).

    It has no ``drains`` group: an answered call's stream is read to its end before
    the call returns (test_mcp_http_lane.py reads it in the background)."""
    lane = HttpLane(url)
    async with httpx2.AsyncClient(event_hooks={"response": [lane.saw]}) as http:
        lane.http = http
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, mode="legacy") as client:
            lane.version = client.protocol_version
            try:
                yield lane
            finally:
                await lane.aclose()


def text_of(result: dict[str, Any]) -> str:
    return str(result["content"][0]["text"])


async def no_request(method: str, params: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError(f"unexpected request {method}")


async def no_notification(message: Any) -> None:
    raise AssertionError(f"unexpected notification {message}")


async def call(
    lane: HttpLane,
    name: str = "echo",
    text: str = "hello",
    *,
    read_timeout: float | None = None,
    progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None,
    on_request: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]] = no_request,
    on_notification: Callable[[Any], Awaitable[None]] = no_notification,
) -> dict[str, Any]:
    return await lane.request(
        {"name": name, "arguments": {"text": text}},
        read_timeout=read_timeout,
        progress=progress,
        on_request=on_request,
        on_notification=on_notification,
    )


# sampling is a handshake-era feature (deprecated as of 2026-07-28): the SDK warns
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_an_event_stream_answer_after_notifications_and_a_server_request() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []
    heard: list[Any] = []
    progressed: list[tuple[float, float | None, str | None]] = []

    async def sample(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append((method, params))
        content = {"type": "text", "text": "hi there"}
        return {"role": "assistant", "content": content, "model": "test-model"}

    async def hear(message: Any) -> None:
        heard.append(message)

    async def progress(value: float, total: float | None, message: str | None) -> None:
        progressed.append((value, total, message))

    with anyio.fail_after(TIMEOUT):
        async with serving(json_response=False) as url, session(url) as lane:
            assert lane.session_id
            assert text_of(await call(lane, text="one")) == "one"
            result = await call(
                lane, "chatty", "say hi", progress=progress, on_request=sample, on_notification=hear
            )
            assert text_of(result) == "sampled: hi there"
            assert text_of(await call(lane, text="three")) == "three"
            raw = lane.raw
    assert raw is not None  # the raw way served the calls
    assert [method for method, _ in asked] == ["sampling/createMessage"]
    assert asked[0][1]["maxTokens"] == 3
    assert [m["method"] for m in heard] == ["notifications/resources/updated"]
    assert heard[0]["params"]["uri"] == "file:///working"
    assert progressed == [(0.5, 1.0, "half")]
    # every stream was read to its end: the calls shared one kept-alive connection
    # (the sampling answer went through the client, on its own)
    assert raw.connects == 1


async def test_a_json_answer_with_a_content_length() -> None:
    with anyio.fail_after(TIMEOUT):
        async with serving(json_response=True) as url, session(url) as lane:
            for n in range(3):
                assert text_of(await call(lane, text=f"call {n}")) == f"call {n}"
            raw = lane.raw
    assert raw is not None
    assert raw.connects == 1


# -- a hand-written HTTP/1.1 server --------------------------------------------------------

Reply = Callable[[anyio.abc.SocketStream, dict[str, Any]], Awaitable[bool]]


class Scripted:
    """Reads POSTs (a head and a ``Content-Length`` body) and lets ``reply`` answer
    each (False: close the connection).  Notifications (no ``id``) are answered 202."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.connections = 0
        self.calls: list[dict[str, Any]] = []
        self.notes: list[dict[str, Any]] = []
        self.closed_by_client = 0

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        self.connections += 1
        buffer = b""
        async with stream:
            for _ in range(MAX_REQUESTS):
                try:
                    body, buffer = await read_post(stream, buffer)
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    self.closed_by_client += 1
                    return
                message = msgspec.json.decode(body)
                if "id" not in message or "method" not in message:
                    self.notes.append(message)
                    await stream.send(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
                    continue
                self.calls.append(message)
                if not await self.reply(stream, message):
                    return


@contextlib.asynccontextmanager
async def scripted(reply: Reply) -> AsyncIterator[tuple[Scripted, HttpLane]]:
    server = Scripted(reply)
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, server.handle)
        lane = HttpLane(f"http://127.0.0.1:{port}/mcp")  # no drains group, as above
        async with httpx2.AsyncClient() as http:
            lane.http = http
            try:
                yield server, lane
            finally:
                await lane.aclose()
        tg.cancel_scope.cancel()


def answer_event(message: dict[str, Any]) -> bytes:
    text = str(message["params"]["arguments"]["text"])
    result = {"content": [{"type": "text", "text": text}]}
    answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    return b"event: message\r\ndata: " + msgspec.json.encode(answer) + b"\r\n\r\n"


def chunk(data: bytes, extension: bytes = b"") -> bytes:
    return f"{len(data):x}".encode() + extension + b"\r\n" + data + b"\r\n"


# the head of an event-stream response, before its framing (length or chunks)
EVENTS = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"


def sized(head: bytes, body: bytes) -> bytes:
    """A response: ``head``, then ``body`` framed by its Content-Length."""
    return head + f"content-length: {len(body)}\r\n\r\n".encode() + body


async def test_a_chunked_event_stream_split_anywhere() -> None:
    async def reply(stream: anyio.abc.SocketStream, message: dict[str, Any]) -> bool:
        params = {"level": "info", "data": "line one\nline two"}
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": params}
        encoded = msgspec.json.encode(note)
        half = encoded.index(b'"method"')  # data over two lines: joined with "\n"
        body = (
            b": a comment\r\n\r\n"
            + b"event: message\r\nid: 1\r\ndata: "
            + encoded[:half]
            + b"\r\ndata:"
            + encoded[half:]
            + b"\r\n\r\n"
            + answer_event(message)
        )
        await stream.send(EVENTS + b"mcp-session-id: s-1\r\ntransfer-encoding: chunked\r\n\r\n")
        # chunk borders inside "\r\n" pairs, inside field names, one byte long
        borders = [1, 15, 16, 17, 40, 41, len(body) - 2, len(body) - 1]
        start = 0
        for end in [*borders, len(body)]:
            await stream.send(chunk(body[start:end], b";ext=1" if end == 16 else b""))
            start = end
        await stream.send(b"0\r\nx-trailer: yes\r\n\r\n")
        return True

    heard: list[Any] = []

    async def hear(message: Any) -> None:
        heard.append(message)

    with anyio.fail_after(TIMEOUT):
        async with scripted(reply) as (server, lane):
            for n in range(3):
                result = await call(lane, text=f"call {n}", on_notification=hear)
                assert text_of(result) == f"call {n}"
            assert lane.session_id == "s-1"
    assert [m["params"]["data"] for m in heard] == ["line one\nline two"] * 3
    assert server.connections == 1  # every body was read to its end: kept alive


@pytest.mark.parametrize("split", [False, True])
async def test_an_event_stream_with_a_content_length(split: bool) -> None:
    async def reply(stream: anyio.abc.SocketStream, message: dict[str, Any]) -> bool:
        event = answer_event(message)
        await stream.send(EVENTS + f"content-length: {len(event)}\r\n\r\n".encode())
        if split:  # the answer's last "\r" and "\n" come apart
            await stream.send(event[:-3])
            await anyio.sleep(0.01)
            await stream.send(event[-3:])
        else:
            await stream.send(event)
        return True

    with anyio.fail_after(TIMEOUT):
        async with scripted(reply) as (server, lane):
            for n in range(3):
                assert text_of(await call(lane, text=f"call {n}")) == f"call {n}"
    assert server.connections == 1


async def test_404_means_the_session_is_gone() -> None:
    async def reply(stream: anyio.abc.SocketStream, message: dict[str, Any]) -> bool:
        await stream.send(b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\n\r\nnot found")
        return True

    with anyio.fail_after(TIMEOUT):
        async with scripted(reply) as (_, lane):
            with pytest.raises(MCPError) as caught:
                await call(lane)
    assert caught.value.code == CONNECTION_CLOSED
    assert "404" in caught.value.message


async def test_an_error_status_with_a_json_rpc_error() -> None:
    async def reply(stream: anyio.abc.SocketStream, message: dict[str, Any]) -> bool:
        error = {"code": INVALID_PARAMS, "message": "no such argument"}
        body = msgspec.json.encode({"jsonrpc": "2.0", "id": message["id"], "error": error})
        head = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\n"
        await stream.send(sized(head, body))
        return True

    with anyio.fail_after(TIMEOUT):
        async with scripted(reply) as (server, lane):
            with pytest.raises(MCPError) as caught:
                await call(lane)
            with pytest.raises(MCPError):
                await call(lane)
    assert caught.value.code == INVALID_PARAMS
    assert caught.value.message == "no such argument"
    assert server.connections == 1


async def test_a_connection_closed_between_calls_is_made_again_once() -> None:
    async def reply(stream: anyio.abc.SocketStream, message: dict[str, Any]) -> bool:
        event = answer_event(message)
        await stream.send(sized(EVENTS, event))
        return False  # closed after the answer, without "connection: close"

    with anyio.fail_after(TIMEOUT):
        async with scripted(reply) as (server, lane):
            for n in range(3):
                assert text_of(await call(lane, text=f"call {n}")) == f"call {n}"
            raw = lane.raw
    assert raw is not None
    assert len(server.calls) == 3  # each call was made once
    assert server.connections == 3
    assert raw.connects == 3


async def test_a_connection_closed_during_the_response_is_not_tried_again() -> None:
    async def reply(stream: anyio.abc.SocketStream, message: dict[str, Any]) -> bool:
        await stream.send(EVENTS + b"transfer-encoding: chunked\r\n\r\n" + chunk(b": working\n\n"))
        return False

    with anyio.fail_after(TIMEOUT):
        async with scripted(reply) as (server, lane):
            with pytest.raises(MCPError) as caught:
                await call(lane)
    assert caught.value.code == CONNECTION_CLOSED
    assert len(server.calls) == 1


async def test_a_call_given_up_drops_its_connection_and_tells_the_server() -> None:
    dropped: list[int] = []
    both_dropped = anyio.Event()

    async def reply(stream: anyio.abc.SocketStream, message: dict[str, Any]) -> bool:
        if message["params"]["arguments"]["text"] == "never":
            await stream.send(EVENTS + b"transfer-encoding: chunked\r\n\r\n")
            with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                await stream.receive()  # until the client gives up, and closes
                raise AssertionError("the client sent more on a call it gave up")
            dropped.append(message["id"])
            if len(dropped) == 2:
                both_dropped.set()
            return False
        event = answer_event(message)
        await stream.send(sized(EVENTS, event))
        return True

    with anyio.fail_after(TIMEOUT):
        async with scripted(reply) as (server, lane):
            with pytest.raises(MCPError) as caught:
                await call(lane, text="never", read_timeout=0.3)
            assert caught.value.code == REQUEST_TIMEOUT
            # a cancelled caller: the same, and no answer either
            with anyio.move_on_after(0.3):
                await call(lane, text="never")
            assert text_of(await call(lane, text="after")) == "after"
            await both_dropped.wait()  # the closes reach the server
    given_up = [c["id"] for c in server.calls if c["params"]["arguments"]["text"] == "never"]
    assert len(given_up) == 2
    assert sorted(dropped) == sorted(given_up)  # their connections were closed
    assert [n["params"]["requestId"] for n in server.notes] == given_up
    assert all(n["method"] == "notifications/cancelled" for n in server.notes)


def test_a_request_carries_each_header_once() -> None:
    defaults = [("accept", "*/*"), ("user-agent", "test"), ("authorization", "Bearer x")]
    raw = RawHttp("http://127.0.0.1:8000/mcp?x=1", defaults)
    own = {"accept": "application/json, text/event-stream", "mcp-session-id": "s-1"}
    head, _, body = raw.request_bytes(own, b"{}").partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /mcp?x=1 HTTP/1.1"
    names = [line.split(":", 1)[0] for line in lines[1:]]
    assert sorted(names) == sorted(set(names))  # the client's own accept gave way
    assert "accept: application/json, text/event-stream" in lines
    assert {"host: 127.0.0.1:8000", "authorization: Bearer x", "content-length: 2"} <= set(lines)
    assert body == b"{}"


async def test_only_plain_http_without_a_proxy_is_served_raw(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert RawHttp.serves("http://127.0.0.1:8000/mcp")
    lane = HttpLane("http://127.0.0.1:8000/mcp")
    assert not RawHttp.serves("https://127.0.0.1:8000/mcp")
    assert not RawHttp.serves("http://user:secret@127.0.0.1:8000/mcp")
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    assert not RawHttp.serves("http://example.invalid/mcp")
    monkeypatch.setenv("NO_PROXY", "example.invalid")
    assert RawHttp.serves("http://example.invalid/mcp")
    async with httpx2.AsyncClient() as http:
        lane.http = http
        assert lane._raw() is not None
        http.cookies.set("sticky", "1")
        assert lane._raw() is None  # cookies: the client sends them, so it carries the call
