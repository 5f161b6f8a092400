"""A small mail MCP server (stdio) for the flow tests: ``read_inbox`` returns the mails
of a JSON file, ``send_email`` sends one (appends it to a JSON-lines file: what really
left).

``mailbox.py INBOX SENT``: INBOX is a JSON list of ``{"from", "subject", "body"}``;
each ``send_email`` call is appended to SENT as one JSON line of its arguments.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as mt
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

INBOX = Path(sys.argv[1])
SENT = Path(sys.argv[2])

TOOLS = [
    mt.Tool(
        name="read_inbox",
        description="Return the mails in the inbox.",
        input_schema={"type": "object", "properties": {}},
        annotations=mt.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    ),
    mt.Tool(
        name="send_email",
        description="Send an email.",
        input_schema={
            "type": "object",
            "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
            "required": ["to", "body"],
        },
        annotations=mt.ToolAnnotations(read_only_hint=False, open_world_hint=True),
    ),
]


async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
    return mt.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
    args = dict(params.arguments or {})
    if params.name == "read_inbox":
        mails = json.loads(await anyio.Path(INBOX).read_text(encoding="utf-8"))
        text = "\n\n".join(
            f"From: {m['from']}\nSubject: {m['subject']}\n{m['body']}" for m in mails
        )
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)])
    async with await anyio.open_file(SENT, "a", encoding="utf-8") as sent:
        await sent.write(json.dumps(args) + "\n")
    return mt.CallToolResult(content=[mt.TextContent(type="text", text=f"sent to {args['to']}")])


async def main() -> None:
    srv: Server[Any] = Server("mailbox", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await srv.run(read, write, srv.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
