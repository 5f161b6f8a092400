"""Helpers of the LangChain adapter's tests: a scripted chat model that records what it
was sent, tool-call messages, and a driver that runs an agent synchronously
(``agent.invoke`` in a worker thread, where no event loop runs) or asynchronously."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from types import TracebackType
from typing import Any, Literal

import anyio.to_thread
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from pydantic import Field

from interpose import Pipeline
from interpose.adapters.langchain import InterposeMiddleware

Mode = Literal["sync", "async"]


class ScriptedChatModel(FakeMessagesListChatModel):
    """Plays back ``responses`` in order; records the messages of every call (``calls``)
    and the tools and settings the agent bound for it (``bound``).  ``create_agent``
    calls ``bind_tools``, which no fake model of langchain-core implements."""

    calls: list[list[BaseMessage]] = Field(default_factory=list)
    bound: list[tuple[list[str], dict[str, Any]]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:
        names = [
            t["function"]["name"]
            if isinstance(t, dict) and "function" in t
            else (t["name"] if isinstance(t, dict) else t.name)
            for t in tools
        ]
        self.bound.append((names, kwargs))
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        if len(self.calls) >= len(self.responses):
            raise AssertionError(f"the model was called {len(self.calls) + 1} times")
        self.calls.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


def calls(*specs: tuple[str, dict[str, Any]], prefix: str = "c") -> AIMessage:
    """An AI message asking for the tool calls ``specs`` (name, args), ids c1, c2..."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"{prefix}{i}", "type": "tool_call"}
            for i, (name, args) in enumerate(specs, 1)
        ],
    )


class Driver:
    """Runs agents of one test in one mode.  ``async with Driver(...)``: in async mode it
    enters the pipeline (on the test's loop); in sync mode the middleware enters it on its
    own loop thread and ``close()`` at the end drains the observers."""

    def __init__(self, mode: Mode, pipe: Pipeline, mw: InterposeMiddleware) -> None:
        self.mode = mode
        self.pipe = pipe
        self.mw = mw

    async def __aenter__(self) -> Driver:
        if self.mode == "async":
            await self.pipe.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.mode == "async":
            await self.pipe.__aexit__(exc_type, exc, tb)
        else:
            await anyio.to_thread.run_sync(self.mw.close)

    async def invoke(self, agent: Any, data: Any, config: Any = None) -> dict[str, Any]:
        if self.mode == "sync":
            result: dict[str, Any] = await anyio.to_thread.run_sync(
                partial(agent.invoke, data, config)
            )
            return result
        answer: dict[str, Any] = await agent.ainvoke(data, config)
        return answer
