"""An MCP server (stdio) whose tool list grows: ``grow`` adds a tool ``extra_<n>`` and
notifies ``notifications/tools/list_changed``; ``meta`` answers with the request's
``_meta`` as JSON; ``refuse`` answers with the JSON-RPC error -32602.  For the proxy's
list_changed, trace-context and protocol-error tests."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as mt
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

extra: list[str] = []
SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
    names = ["grow", "meta", "refuse", *extra]
    return mt.ListToolsResult(tools=[mt.Tool(name=name, input_schema=SCHEMA) for name in names])


async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
    if params.name == "refuse":
        raise MCPError(mt.INVALID_PARAMS, "refuse: this tool never accepts its arguments")
    if params.name == "meta":
        text = json.dumps(dict(ctx.meta or {}), default=str)
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)])
    if params.name == "grow":
        extra.append(f"extra_{len(extra) + 1}")
        await ctx.session.send_tool_list_changed()
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=params.name)])


async def main() -> None:
    srv = Server("growing", on_list_tools=list_tools, on_call_tool=call_tool)
    options = srv.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await srv.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
