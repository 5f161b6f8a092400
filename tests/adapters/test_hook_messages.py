"""What a Claude Code hook says for the user (its ``systemMessage``) reaches the caller
through the adapters: a LangChain ToolMessage's ``additional_kwargs``, an MCP tool
result's ``_meta``; the hook is a real script run as a child process."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_helpers import Driver, ScriptedChatModel, calls
from mcp import StdioServerParameters
from mcp_helpers import CALL_TIMEOUT, python_server
from test_mcp_inprocess import serving

from interpose import Pipeline
from interpose.adapters.langchain import InterposeMiddleware
from interpose.adapters.mcp.proxy import McpProxy, UpstreamSpec
from interpose.middleware.claude_code import ClaudeSettings

pytestmark = pytest.mark.integration

WARN_SUDO = (
    Path(__file__).resolve().parent.parent / "command_hooks" / "claude_hooks" / "warn_sudo.py"
)


def settings(tmp_path: Path, matcher: str, command: str) -> ClaudeSettings:
    entry = {"matcher": matcher, "hooks": [{"type": "command", "command": command}]}
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": {"PreToolUse": [entry]}}))
    return ClaudeSettings(path)


async def test_langchain_tool_messages_carry_the_hooks_system_messages(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    settings(tmp_path, "Bash", f"{sys.executable} {WARN_SUDO}").install(pipe)

    @tool
    def bash(command: str) -> str:
        """Run a shell command (here: only answer, never run it)."""
        return f"ran {command}"

    model = ScriptedChatModel(
        responses=[
            calls(("bash", {"command": "sudo apt-get update"}), ("bash", {"command": "ls"})),
            AIMessage("done"),
        ]
    )
    mw = InterposeMiddleware(pipe)
    agent = create_agent(model, [bash], middleware=[mw])
    async with Driver("async", pipe, mw) as d:
        state = await d.invoke(agent, {"messages": [HumanMessage("update")]})
    messages = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    assert messages["c1"].content == "ran sudo apt-get update"
    assert messages["c1"].additional_kwargs["interpose_system_messages"] == [
        "heads up: running as root: sudo apt-get update"
    ]
    assert "interpose_system_messages" not in messages["c2"].additional_kwargs


async def test_a_hooks_message_stays_with_its_call_while_another_call_of_the_session_ends(
    tmp_path: Path,
) -> None:
    # the sudo call's PreToolUse hook speaks, then its tool waits; the session's other
    # call runs whole meanwhile: the message is the sudo call's, not the first to end
    pipe = Pipeline(builtins=False)
    settings(tmp_path, "Bash", f"{sys.executable} {WARN_SUDO}").install(pipe)
    release, spoken = anyio.Event(), anyio.Event()
    results: dict[str, Any] = {}
    pipe.subscribe(lambda event: spoken.set(), events=["hook_message"])

    async def slow(args: dict[str, Any]) -> str:
        await release.wait()
        return "ran"

    async def call(call_id: str, command: str, run: Any) -> None:
        results[call_id] = await pipe.call_tool(
            "Bash", {"command": command}, call=run, call_id=call_id, session_key="s1"
        )

    with anyio.fail_after(CALL_TIMEOUT):
        async with pipe, anyio.create_task_group() as tg:
            tg.start_soon(call, "c1", "sudo apt-get update", slow)
            await spoken.wait()  # the sudo call's hook (a child process) has spoken
            await call("c2", "ls", lambda args: "ran")
            assert "system_messages" not in results["c2"].details
            release.set()
    assert results["c1"].details["system_messages"] == [
        "heads up: running as root: sudo apt-get update"
    ]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_mcp_tool_results_carry_the_hooks_system_messages_in_meta(
    tmp_path: Path, anyio_backend: str
) -> None:
    pipe = Pipeline()
    said = '{"systemMessage": "the clock was read"}'
    settings(tmp_path, "mcp__time__.*", f"cat >/dev/null; echo '{said}'").install(pipe)
    argv = python_server("mcp_server_time")
    proxy = McpProxy(
        pipe, [UpstreamSpec("time", StdioServerParameters(command=argv[0], args=argv[1:]))]
    )
    with anyio.fail_after(CALL_TIMEOUT):
        async with serving(proxy) as client:
            result: Any = await client.call_tool("get_current_time", {"timezone": "UTC"})
    assert not result.is_error
    assert result.meta["interpose/system_messages"] == ["the clock was read"]
