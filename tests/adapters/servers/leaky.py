"""An MCP server (stdio) whose one tool, ``read_notes``, answers with secrets in its text
(a fake GitHub token, a password in a database URL, an email address) and an image item:
for the redaction tests of the gateway.  The fakes are built at run time."""

from __future__ import annotations

import base64
from typing import Any

import anyio
import mcp_types as mt
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOKEN = "ghp_" + "q7Rk2LmZ9xTb" * 3
IMAGE = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256))).decode()
NOTES = (
    f"deploy token: {TOKEN}\n"
    "database: postgres://app:Tr0ub4dor-x9@db.internal:5432/app\n"
    "owner: mallory@evil.example\n"
)
SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
    return mt.ListToolsResult(tools=[mt.Tool(name="read_notes", input_schema=SCHEMA)])


async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
    return mt.CallToolResult(
        content=[
            mt.TextContent(type="text", text=NOTES),
            mt.ImageContent(type="image", data=IMAGE, mime_type="image/png"),
        ]
    )


async def main() -> None:
    srv: Server[Any] = Server("leaky", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await srv.run(read, write, srv.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
