"""An OpenAI Agents SDK agent behind interpose, offline (the SDK's scripted model).

``InterposeRunner(pipe).run(agent, input)`` runs the agent like ``Runner.run``, as one
interpose turn: every function-tool call goes through the tool stage (the built-in
guards, then our interceptors), every model call through the llm stage.  Needs the
``openai-agents`` extra: ``pip install 'interpose[openai-agents]'``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from agents import Agent, RunConfig, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call

from interpose import (
    AbortTurn,
    LLMAfterInput,
    LLMAfterOutput,
    Pipeline,
    ToolBeforeInput,
    ToolBeforeOutput,
)
from interpose.adapters.openai_agents import InterposeRunner

set_tracing_disabled(True)  # offline: the SDK would export its own traces to OpenAI

commands: list[str] = []


@function_tool
async def bash(command: str) -> str:
    """Run a shell command (this example only records it)."""
    commands.append(command)
    return f"ran {command}"


pipe = Pipeline()  # the built-in guards: `rm -rf ~` never reaches the tool


@pipe.intercept("tool.before", tools=["exec"], id="no-color")
def no_color(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    out.args["command"] += " --color=never"


@pipe.intercept("tool.before", tools=["exec"], id="no-deploys", priority=50)
def no_deploys(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if out.args["command"].startswith("deploy"):
        raise AbortTurn("deploys are for humans")


@pipe.intercept("llm.after", id="redact")
def redact(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
    out.response.content = out.response.content.replace("hunter2", "[redacted]")


seen: list[str] = []


def observe(event: Any) -> None:
    if event.kind == "tool_exec_end":
        by = f" by {event.decided_by}" if event.decided_by else ""
        seen.append(f"{event.tool_call_id}: {event.tool_name} {event.status}{by}")
    else:
        seen.append(f"{event.kind} {event.agent_id} {getattr(event, 'reason', '')}".rstrip())


pipe.subscribe(observe, events={"tool_exec_end", "turn_ended", "turn_aborted"})

# what the model will say, call after call
model = ScriptedModel(
    [
        [
            function_call("bash", {"command": "ls"}, call_id="c1"),
            function_call("bash", {"command": "rm -rf ~"}, call_id="c2"),
        ],
        [assistant_message("Listed. I may not clear your home. The password is hunter2.")],
        [function_call("bash", {"command": "deploy prod"}, call_id="c3")],
        [assistant_message("Deployed.")],
    ]
)
agent = Agent(name="coder", instructions="You keep the repo tidy.", model=model, tools=[bash])


async def main() -> None:
    runner = InterposeRunner(pipe)
    config = RunConfig(tracing_disabled=True)
    async with pipe:
        for text in ("tidy up", "ship it"):
            print(f"run: {text!r}")
            result = await runner.run(agent, text, run_config=config)
            print(f"  final output: {result.final_output}")
    print("events (the bus is drained when `async with pipe` ends):")
    for line in seen:
        print(f"  {line}")
    print(f"commands the tool saw: {commands}")
    print(f"scripted answers never asked for: {model.remaining_steps}")


if __name__ == "__main__":
    asyncio.run(main())
