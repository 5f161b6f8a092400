"""An MCP server (stdio) whose tool list grows: ``grow`` adds a tool ``extra_<n>`` and
notifies ``notifications/tools/list_changed``; ``meta`` answers with the request's
``_meta`` as JSON; ``refuse`` answers with the JSON-RPC error -32602; ``sample`` asks
the client for a completion (``sampling/createMessage``, on the call's own stream over
HTTP) and answers with its text.  For the proxy's list_changed, trace-context,
protocol-error and sampling tests.

``growing.py --http`` serves streamable HTTP on 127.0.0.1 (a free port) instead, and
prints ``serving MCP on <url>`` on stderr (other arguments are ignored: the tests'
``HttpProxy`` helper adds ``--listen``)."""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
import mcp_types as mt
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

extra: list[str] = []
SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
    names = ["grow", "meta", "refuse", "sample", *extra]
    return mt.ListToolsResult(tools=[mt.Tool(name=name, input_schema=SCHEMA) for name in names])


async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
    if params.name == "refuse":
        raise MCPError(mt.INVALID_PARAMS, "refuse: this tool never accepts its arguments")
    if params.name == "meta":
        text = json.dumps(dict(ctx.meta or {}), default=str)
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)])
    if params.name == "sample":
        question = mt.SamplingMessage(
            role="user", content=mt.TextContent(type="text", text="say something")
        )
        answer = await ctx.session.create_message(
            [question], max_tokens=5, related_request_id=ctx.request_id
        )
        said = answer.content.text if isinstance(answer.content, mt.TextContent) else "?"
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=f"sampled: {said}")])
    if params.name == "grow":
        extra.append(f"extra_{len(extra) + 1}")
        await ctx.session.send_tool_list_changed()
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=params.name)])


def server() -> Server[Any]:
    return Server("growing", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    srv = server()
    options = srv.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await srv.run(read, write, options)


async def main_http() -> None:
    import uvicorn

    app = server().streamable_http_app(host="127.0.0.1")
    web = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))
    async with anyio.create_task_group() as tg:

        async def announce() -> None:
            # uvicorn has no "listening" event: look every 10 ms, at start-up only
            while not web.started:  # noqa: ASYNC110
                await anyio.sleep(0.01)
            port = web.servers[0].sockets[0].getsockname()[1]
            print(f"serving MCP on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)

        tg.start_soon(announce)
        await web.serve()


if __name__ == "__main__":
    anyio.run(main_http if "--http" in sys.argv[1:] else main)
