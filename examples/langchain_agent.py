"""A LangChain v1 agent (``create_agent``) behind interpose, with one line of set-up.

A scripted fake chat model stands in for the LLM (no network, no API key): it asks for
three tool calls at once, then answers.  The built-in guards refuse ``rm -rf ~`` and the
read of a ``.env`` file; an interceptor rewrites the listing's arguments.  Then, with
``hitl="interrupt"``, an approver's ``Approval.ask`` pauses the graph and
``Command(resume=...)`` answers it.  Needs the ``langchain`` extra
(``pip install 'interpose[langchain]'``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

from interpose import Approval, ApprovalRequest, Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.adapters.langchain import InterposeMiddleware


class ScriptedModel(FakeMessagesListChatModel):
    """Plays back its responses; create_agent binds tools, which fakes do not implement."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedModel:
        return self


ran: list[str] = []  # what the shell tool was asked to run (it only records it)


@tool
def bash(command: str) -> str:
    """Run a shell command."""
    ran.append(command)
    return f"ran {command!r}"


@tool
def read_file(path: str) -> str:
    """Read a file."""
    return f"<contents of {path}>"


def ask(*calls: tuple[str, dict[str, Any]]) -> AIMessage:
    """An AI message asking for ``calls`` (tool name, args) at once."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"call-{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(calls, 1)
        ],
    )


pipe = Pipeline()  # the built-in guards: command safety, security audit


@pipe.intercept("tool.before", tools=["exec"], priority=10, id="long-listing")
def long_listing(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if out.args["command"] == "ls":
        out.args["command"] = "ls -la"


def print_tool_messages(state: dict[str, Any]) -> None:
    for message in state["messages"]:
        if isinstance(message, ToolMessage):
            print(f"  {message.tool_call_id} {message.name} {message.status}: {message.content}")


def guarded_run() -> None:
    print("-- agent.invoke, the guards on:")
    model = ScriptedModel(
        responses=[
            ask(
                ("bash", {"command": "ls"}),
                ("bash", {"command": "rm -rf ~"}),
                ("read_file", {"path": ".env"}),
            ),
            AIMessage("Listed the project; the rest was refused."),
        ]
    )
    # the one line of set-up; read_file is interpose's `read`, so the file guard applies
    with InterposeMiddleware(pipe, agent_id="coder", tool_names={"read_file": "read"}) as mw:
        agent = create_agent(model, [bash, read_file], middleware=[mw])
        state = agent.invoke({"messages": [HumanMessage("clean up my home directory")]})
    print_tool_messages(state)
    print("the shell tool saw:", ran)
    print("answer:", state["messages"][-1].content)


async def paused_run() -> None:
    print('-- agent.ainvoke, hitl="interrupt":')
    gated = Pipeline(builtins=False)

    @gated.approver(tools=["exec"], id="deploy-gate")
    def deploy_gate(req: ApprovalRequest) -> Approval:
        if req.args["command"].startswith("deploy"):
            return Approval.ask("deployments need a human")
        return Approval.allow()

    model = ScriptedModel(
        responses=[ask(("bash", {"command": "deploy staging"})), AIMessage("Deployed.")]
    )
    mw = InterposeMiddleware(gated, agent_id="coder", hitl="interrupt")
    agent = create_agent(model, [bash], middleware=[mw], checkpointer=InMemorySaver())
    config: Any = {"configurable": {"thread_id": "deploy-1"}}
    state = await agent.ainvoke({"messages": [HumanMessage("deploy to staging")]}, config)
    (pending,) = state["__interrupt__"]
    print("paused:", pending.value["tool"], pending.value["args"], "-", pending.value["reason"])
    state = await agent.ainvoke(Command(resume={"decision": "allow"}), config)
    print_tool_messages(state)
    print("answer:", state["messages"][-1].content)


if __name__ == "__main__":
    guarded_run()
    asyncio.run(paused_run())
