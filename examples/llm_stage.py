"""A whole turn: message, params, LLM calls with a retry, and the tool calls in between.

A scripted fake model replaces the real LLM: it first answers "overloaded" (llm.after
asks for a retry), then asks for a tool call, then gives its final answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from interpose import (
    LLMAfterInput,
    LLMAfterOutput,
    LLMBeforeInput,
    LLMRequest,
    LLMResponse,
    MessageBeforeInput,
    MessageBeforeOutput,
    ParamsBeforeInput,
    ParamsBeforeOutput,
    Pipeline,
    ToolCall,
    Turn,
    TurnContext,
)

pipe = Pipeline(builtins=False, max_retries=2)  # retry is off unless max_retries > 0


class ScriptedModel:
    """A fake LLM that plays back canned responses and records what it was sent."""

    def __init__(self, responses: list[LLMResponse]) -> None:
        self.responses = responses
        self.requests: list[LLMRequest] = []

    async def __call__(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        return self.responses.pop(0)


def read_file(args: dict[str, Any]) -> str:
    """The tool: a fake file read."""
    return "# demo\nRun `make test`."


@pipe.intercept("message.before", id="clean-message")
def clean_message(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
    out.message = out.message.strip()
    out.metadata["channel"] = "cli"


@pipe.intercept("params.before", id="pick-model")
def pick_model(inp: ParamsBeforeInput, out: ParamsBeforeOutput) -> None:
    if len(inp.message) < 80:  # short questions go to the small model
        out.model = "claude-small"
    out.temperature = 0.2


@pipe.intercept("llm.before", id="system-prompt")
def system_prompt(inp: LLMBeforeInput, out: LLMRequest) -> None:
    out.system = "You are a careful coding agent."
    out.headers["x-turn-id"] = inp.turn_id


@pipe.intercept("llm.after", id="retry-overloaded")
def retry_overloaded(inp: LLMAfterInput, out: LLMAfterOutput) -> None:
    print(f"  llm.after: attempt {inp.attempt} stop_reason={out.response.stop_reason}")
    if out.response.stop_reason == "overloaded":
        out.retry = True  # run the LLM call again (at most max_retries times)


@pipe.middleware("turn", id="turn-log")
async def turn_log(ctx: TurnContext, call_next: Callable[[], Awaitable[None]]) -> None:
    turn = ctx.turn  # a Turn in every stage context but ToolContext, where it may be None
    print(f"turn {turn.agent_id}/{turn.session_key} starts")
    await call_next()
    print(f"turn ends with {ctx.result!r}")


model = ScriptedModel(
    [
        LLMResponse(stop_reason="overloaded"),
        LLMResponse(
            tool_calls=[ToolCall(id="t1", name="Read", args={"path": "README.md"})],
            stop_reason="tool_use",
        ),
        LLMResponse(content="Run `make test`.", usage={"output_tokens": 5}),
    ]
)


async def agent(turn: Turn) -> str:
    """The agent loop of one turn: ask the model until it stops calling tools."""
    msg = await turn.message("  how do I run the tests?  ")
    params = await turn.params()
    print(f"message={msg.message!r} metadata={msg.metadata}")
    print(f"params: provider={params.provider} model={params.model} temp={params.temperature}")
    messages: list[dict[str, Any]] = [{"role": "user", "content": msg.message}]
    while True:
        request = LLMRequest(messages=messages, params={"model": params.model})
        response = await turn.call_llm(request, call=model)
        if not response.tool_calls:
            return response.content
        for call in response.tool_calls:
            result = await turn.call_tool(call.name, call.args, call=read_file, call_id=call.id)
            print(f"  tool {call.name} -> {result.status}")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result.output})


async def main() -> None:
    answer = await pipe.run_turn(
        agent, agent_id="coder", session_key="s1", provider="anthropic", model="claude-large"
    )
    print("answer:", answer)
    print("LLM requests sent:", len(model.requests))
    print("system prompt seen by the model:", model.requests[0].system)


if __name__ == "__main__":
    anyio.run(main)
