"""Secrets in an MCP server's results are masked before the client (the model) sees them.

The upstream is a real MCP server (servers/leaky.py, a child process) whose tool answers
with a fake token, a password in a URL and an email address in a text item, and an image
item; the client talks to ``McpProxy``'s server in process, as ``interpose mcp-proxy``
serves it on stdio.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import mcp_types as mt
import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import CALL_TIMEOUT

from interpose import Pipeline, ToolAfterInput, ToolAfterOutput, ToolResult
from interpose.adapters.mcp.proxy import McpProxy, UpstreamSpec
from interpose.middleware.builtins import RedactSecrets

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

LEAKY = Path(__file__).resolve().parent / "servers" / "leaky.py"
TOKEN = "ghp_" + "q7Rk2LmZ9xTb" * 3


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def serving(proxy: McpProxy) -> AsyncIterator[Client]:
    async with anyio.create_task_group() as tg:
        await proxy.connect(tg)
        async with Client(proxy.server(), mode="legacy") as client:
            yield client
        tg.cancel_scope.cancel()


async def read_notes(pipe: Pipeline) -> mt.CallToolResult:
    upstream = UpstreamSpec(
        "notes", StdioServerParameters(command=sys.executable, args=[str(LEAKY)])
    )
    with anyio.fail_after(CALL_TIMEOUT):
        async with serving(McpProxy(pipe, [upstream])) as client:
            return await client.call_tool("read_notes", {})


async def test_without_the_policy_the_secrets_reach_the_client() -> None:
    result = await read_notes(Pipeline())

    text = result.content[0]
    assert isinstance(text, mt.TextContent)
    assert TOKEN in text.text  # the server really leaks: what the next test masks


async def test_secrets_in_text_items_are_masked_personal_data_when_asked() -> None:
    pipe = Pipeline()
    RedactSecrets(pii=["email"]).install(pipe)
    results: list[dict[str, object]] = []

    @pipe.intercept("tool.after", priority=-10, id="see-details")
    def see(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        assert isinstance(out.result, ToolResult)
        results.append(dict(out.result.details))

    result = await read_notes(pipe)

    text, image = result.content
    assert isinstance(text, mt.TextContent)
    assert text.text == (
        "deploy token: [REDACTED]\n"
        "database: postgres://app:[REDACTED]@db.internal:5432/app\n"
        "owner: [REDACTED]\n"
    )
    assert isinstance(image, mt.ImageContent)
    assert image.data.startswith("iVBORw0KGgo")  # the image went through untouched
    assert not result.is_error
    assert results[0]["redacted"] == 3
    assert results[0]["redacted_kinds"] == {"email": 1, "github": 1, "url-password": 1}
