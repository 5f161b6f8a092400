"""What an upstream asks of the client, and what belongs to one client's session.

server-everything (npm) behind ``interpose mcp-proxy``, over stdio and streamable HTTP,
driven by the SDK's ``Client``: its sampling and elicitation requests reach the client's
callbacks and the answers go back; a resource subscription's updates reach the client
that subscribed; over HTTP each client session has its own upstream connection, so one
client's subscriptions and questions never reach another.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import MessageHandlerFnT
from mcp_helpers import (
    CALL_TIMEOUT,
    HttpProxy,
    children,
    npm_server,
    proxy_argv,
    stdio_proxy,
    wait_gone,
)

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

Target = StdioServerParameters | str
Start = Callable[..., Target]
DOCUMENT = "demo://resource/static/document/architecture.md"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["stdio", "http"])
def proxied(request: pytest.FixtureRequest, http_proxy: type[HttpProxy]) -> Start:
    """``proxied(upstream, name=...)``: the proxy's address, over the test's transport."""

    def start(upstream: list[str], *, name: str, config: Path | None = None) -> Target:
        if request.param == "stdio":
            return stdio_proxy(upstream, name=name, config=config)
        return http_proxy(proxy_argv(upstream, name=name, config=config)).url

    return start


def text(result: mt.CallToolResult) -> str:
    assert not result.is_error, result
    return "\n".join(b.text for b in result.content if isinstance(b, mt.TextContent))


async def test_an_upstream_sampling_request_reaches_the_client_and_its_answer_goes_back(
    proxied: Start,
) -> None:
    asked: list[mt.CreateMessageRequestParams] = []

    async def sample(context: Any, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
        asked.append(params)
        return mt.CreateMessageResult(
            role="assistant",
            content=mt.TextContent(type="text", text="sampled by the client"),
            model="client-model-7",
            stop_reason="endTurn",
        )

    server = npm_server("everything")
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(
            proxied(server, name="everything"), mode="legacy", sampling_callback=sample
        ) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            result = await client.call_tool(
                "trigger-sampling-request", {"prompt": "what is 2+2?", "maxTokens": 7}
            )
    assert "trigger-sampling-request" in names
    (params,) = asked
    assert params.max_tokens == 7
    message = params.messages[0].content
    assert isinstance(message, mt.TextContent)
    assert "what is 2+2?" in message.text
    # the server got the client's answer and put it in its result
    assert "sampled by the client" in text(result)
    assert "client-model-7" in text(result)


async def test_an_upstream_elicitation_reaches_the_client_and_its_answer_goes_back(
    proxied: Start,
) -> None:
    asked: list[mt.ElicitRequestParams] = []

    async def elicit(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
        asked.append(params)
        return mt.ElicitResult(action="accept", content={"name": "Ada Lovelace", "check": True})

    server = npm_server("everything")
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(
            proxied(server, name="everything"), mode="legacy", elicitation_callback=elicit
        ) as client:
            result = await client.call_tool("trigger-elicitation-request", {})
    (params,) = asked
    assert params.message == "Please provide inputs for the following fields:"
    assert "- Name: Ada Lovelace" in text(result)
    assert "- Agreed to terms: true" in text(result)


async def test_a_client_without_sampling_gets_a_readable_error_from_the_server(
    proxied: Start,
) -> None:
    server = npm_server("everything")
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(proxied(server, name="everything"), mode="legacy") as client:
            result = await client.call_tool(
                "trigger-sampling-request", {"prompt": "hello", "maxTokens": 5}
            )
    # the proxy answered the server's request with an error; the server reports it
    assert result.is_error
    assert "does not support sampling" in str(result.content)


# resources/subscribe is the handshake era's (2026-07-28 clients listen instead)
HANDSHAKE_ONLY = pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")


@HANDSHAKE_ONLY
async def test_resource_updates_of_a_subscription_reach_the_client(proxied: Start) -> None:
    updated: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, mt.ResourceUpdatedNotification):
            updated.append(str(message.params.uri))
            arrived.set()

    server = npm_server("everything")
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(
            proxied(server, name="everything"), mode="legacy", message_handler=on_message
        ) as client:
            assert client.server_capabilities.resources is not None
            assert client.server_capabilities.resources.subscribe
            await client.subscribe_resource(DOCUMENT)
            # the server sends an update at once for every subscribed URI, then every 5 s
            await client.call_tool("toggle-subscriber-updates", {})
            await arrived.wait()
            await client.call_tool("toggle-subscriber-updates", {})
            await client.unsubscribe_resource(DOCUMENT)
    assert updated[0] == DOCUMENT


@HANDSHAKE_ONLY
async def test_two_http_clients_each_get_their_own_upstream_session(
    http_proxy: type[HttpProxy],
) -> None:
    server = npm_server("everything")
    proxy = http_proxy(proxy_argv(server, name="everything"))
    updates: dict[str, list[str]] = {"a": [], "b": []}
    asked: dict[str, list[str]] = {"a": [], "b": []}
    a_updated = anyio.Event()

    def handler(who: str) -> MessageHandlerFnT:
        async def on_message(message: Any) -> None:
            if isinstance(message, mt.ResourceUpdatedNotification):
                updates[who].append(str(message.params.uri))
                if who == "a":
                    a_updated.set()

        return on_message

    def elicitation(who: str) -> Callable[..., Any]:
        async def elicit(context: Any, params: mt.ElicitRequestParams) -> mt.ElicitResult:
            asked[who].append(params.message)
            return mt.ElicitResult(action="accept", content={"name": who})

        return elicit

    with anyio.fail_after(CALL_TIMEOUT):
        async with (
            Client(
                proxy.url,
                mode="legacy",
                message_handler=handler("a"),
                elicitation_callback=elicitation("a"),
            ) as a,
            Client(
                proxy.url,
                mode="legacy",
                message_handler=handler("b"),
                elicitation_callback=elicitation("b"),
            ) as b,
        ):
            await a.list_tools()
            await b.list_tools()
            # one upstream process per client session
            upstreams = children(proxy.process.pid)
            assert len(upstreams) == 2
            # a subscribes; b turns updates on: b's upstream has no subscription, so
            # nobody hears of a's resource (a shared upstream would have told both)
            await a.subscribe_resource(DOCUMENT)
            await b.call_tool("toggle-subscriber-updates", {})
            await a.send_ping()
            assert updates["a"] == []
            # a turns its own updates on: only a hears of them
            await a.call_tool("toggle-subscriber-updates", {})
            await a_updated.wait()
            await a.call_tool("toggle-subscriber-updates", {})
            await b.call_tool("toggle-subscriber-updates", {})
            # b's elicitation goes to b only
            answer = await b.call_tool("trigger-elicitation-request", {})
        assert updates["a"][0] == DOCUMENT
        assert updates["b"] == []
        assert asked["a"] == []
        assert len(asked["b"]) == 1
        assert "- Name: b" in text(answer)
    # the clients ended their sessions: their upstream processes are stopped
    for pid in upstreams:
        wait_gone(pid)


GROWING = Path(__file__).resolve().parent / "servers" / "growing.py"


async def test_a_sampling_request_on_an_http_upstreams_call_stream_reaches_the_client(
    http_proxy: type[HttpProxy],
) -> None:
    # growing.py --http asks for a completion on the tool call's own event stream: the
    # proxy reads that stream itself (its raw HTTP lane) and must answer the request
    upstream = http_proxy([sys.executable, str(GROWING), "--http"]).url
    argv = [sys.executable, "-m", "interpose.cli", "mcp-proxy", "--name", "growing"]
    target = StdioServerParameters(
        command=argv[0],
        args=[*argv[1:], "--upstream-url", upstream],
        env={"PATH": os.environ.get("PATH", "")},
    )
    asked: list[int] = []

    async def sample(context: Any, params: mt.CreateMessageRequestParams) -> mt.CreateMessageResult:
        asked.append(params.max_tokens)
        return mt.CreateMessageResult(
            role="assistant",
            content=mt.TextContent(type="text", text="hello from the client"),
            model="client-model",
        )

    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(target, mode="legacy", sampling_callback=sample) as client:
            result = await client.call_tool("sample", {})
            again = await client.call_tool("meta", {})
    assert asked == [5]
    assert text(result) == "sampled: hello from the client"
    assert not again.is_error
