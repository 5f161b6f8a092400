"""``HttpLane``: a ``tools/call`` answered on its event stream goes back to the caller
as soon as the answer event arrives; the rest of the stream is read as it arrives
(on the raw way; through ``httpx2``, in the lane's ``drains`` task group), and the
connection then serves the next call.

The upstream here is a small HTTP/1.1 server on 127.0.0.1 (a free port) that answers
each POST with an event stream whose end it holds back until the test lets it go.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.abc
import httpx2
import msgspec
import pytest
from mcp_helpers import read_post

from interpose.adapters.mcp.pipe import HttpLane

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TIMEOUT = 10.0  # s: the whole test


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class HeldStreamServer:
    """Answers every POST with ``answer`` as an SSE event, then ends the body only
    when ``release`` is set (one event per request: ``release`` is replaced)."""

    def __init__(self) -> None:
        self.connections = 0
        self.release = anyio.Event()
        self.ended = 0
        self.sent_end = anyio.Event()

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        self.connections += 1
        buffer = b""
        async with stream:
            for _ in range(10):  # requests on this connection, at most
                try:
                    body, buffer = await read_post(stream, buffer)
                except (anyio.EndOfStream, anyio.BrokenResourceError):
                    return
                request = msgspec.json.decode(body)
                answer = {"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}}
                event = b"event: message\r\ndata: " + msgspec.json.encode(answer) + b"\r\n\r\n"
                tail = b": the end\r\n\r\n"
                await stream.send(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                    + b"content-length: "
                    + str(len(event) + len(tail)).encode()
                    + b"\r\n\r\n"
                    + event
                )
                await self.release.wait()
                self.release = anyio.Event()
                await stream.send(tail)
                self.ended += 1
                self.sent_end.set()


async def no_request(method: str, params: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError(f"unexpected request {method}")


async def no_notification(message: Any) -> None:
    raise AssertionError(f"unexpected notification {message}")


async def test_the_answer_does_not_wait_for_the_end_of_its_stream() -> None:
    await _three_calls(raw=True)


def test_under_trio_the_lane_posts_through_httpx2_the_same_way() -> None:
    # the raw way's connections are asyncio protocols: on trio the lane keeps httpx2
    # (pytest-asyncio runs the async tests here on asyncio, hence anyio.run)
    anyio.run(_three_calls, False, backend="trio")


async def _three_calls(raw: bool) -> None:
    """Three calls, each answered while the server holds its stream's end back."""
    server = HeldStreamServer()
    with anyio.fail_after(TIMEOUT):
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with listener, anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, server.handle)
            lane = HttpLane(f"http://127.0.0.1:{port}/mcp")
            async with httpx2.AsyncClient() as http:
                lane.http = http
                for call in range(3):
                    async with anyio.create_task_group() as drains:
                        lane.drains = drains
                        result = await lane.request(
                            {"name": "echo", "arguments": {}},
                            read_timeout=None,
                            progress=None,
                            on_request=no_request,
                            on_notification=no_notification,
                        )
                        assert result == {"content": []}
                        assert (lane.raw is not None) == raw  # which way it went
                        # answered while the server still holds the stream's end back
                        assert server.ended == call
                        server.sent_end = anyio.Event()
                        server.release.set()
                        await server.sent_end.wait()
                        # (on loopback the end is there once sent: read it)
                        await anyio.wait_all_tasks_blocked()
                await lane.aclose()  # its own kept connections (the raw way's)
            tg.cancel_scope.cancel()
    # the stream was read to its end: every call went over the first connection
    assert server.connections == 1
