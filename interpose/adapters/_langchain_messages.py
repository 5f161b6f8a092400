"""Conversions between LangChain's messages and requests and interpose's payloads, for
the LangChain adapter (``interpose.adapters.langchain``).
"""

from __future__ import annotations

import copy
import json
from typing import Any, TypeVar

from langchain.agents.middleware.types import (
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
)
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    convert_to_openai_messages,
)
from langchain_core.utils.function_calling import convert_to_openai_tool

from ..pipeline.payloads import (
    LLMRequest,
    LLMResponse,
    ParamsBeforeOutput,
    ToolCall,
    ToolResult,
)

__all__ = [
    "apply_request",
    "copy_payload",
    "name_of_model",
    "to_llm_request",
    "to_llm_response",
    "to_model_response",
    "tool_content",
    "tool_message",
]

T = TypeVar("T")

#: the model settings params.before may set (with its ``extra``)
_SETTINGS = ("temperature", "top_p", "max_tokens")


def copy_payload(value: T) -> T:
    """A deep copy of a payload struct (the handlers mutate the one they get)."""
    return copy.deepcopy(value)


_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}


def to_llm_request(
    request: ModelRequest[Any],
    params: ParamsBeforeOutput | None,
    messages: bool = True,
    tools: bool = True,
) -> LLMRequest:
    """The interpose view of a model request: OpenAI-shaped messages and tools (each
    left empty when nobody reads it), the model settings (with params.before's
    temperature/top_p/max_tokens/extra applied)."""
    settings = dict(request.model_settings)
    if params is not None:
        for name in _SETTINGS:
            value = getattr(params, name)
            if value is not None:
                settings[name] = value
        settings.update(params.extra)
    return LLMRequest(
        system=request.system_prompt or "",
        messages=list(convert_to_openai_messages(list(request.messages))) if messages else [],
        tools=[_tool_schema(tool) for tool in request.tools] if tools else [],
        params=settings,
    )


def _tool_schema(tool: Any) -> dict[str, Any]:
    try:
        return dict(convert_to_openai_tool(tool))
    except Exception:  # a provider-specific tool dict interpose cannot describe
        return dict(tool) if isinstance(tool, dict) else {"name": str(getattr(tool, "name", tool))}


def apply_request(
    request: ModelRequest[Any], changed: LLMRequest, original: LLMRequest
) -> ModelRequest[Any]:
    """``request`` with what llm.before changed (and only that) applied."""
    overrides: dict[str, Any] = {}
    if changed.system != original.system:
        overrides["system_message"] = (
            SystemMessage(content=changed.system) if changed.system else None
        )
    if changed.messages != original.messages:
        overrides["messages"] = _messages(changed.messages, request.messages, original.messages)
    if changed.tools != original.tools:
        by_schema = {
            json.dumps(schema, sort_keys=True, default=str): tool
            for schema, tool in zip(original.tools, request.tools, strict=True)
        }
        overrides["tools"] = [
            by_schema.get(json.dumps(schema, sort_keys=True, default=str), schema)
            for schema in changed.tools
        ]
    if changed.params != dict(request.model_settings):
        overrides["model_settings"] = dict(changed.params)
    return request.override(**overrides) if overrides else request


def _messages(
    changed: list[dict[str, Any]], messages: list[AnyMessage], original: list[dict[str, Any]]
) -> list[AnyMessage]:
    """The LangChain messages for llm.before's message list: an unchanged entry keeps
    its original message (ids, metadata), a new or edited one is converted."""
    kept: dict[str, list[AnyMessage]] = {}
    for shape, message in zip(original, messages, strict=True):
        kept.setdefault(json.dumps(shape, sort_keys=True, default=str), []).append(message)
    result: list[AnyMessage] = []
    for shape in changed:
        same = kept.get(json.dumps(shape, sort_keys=True, default=str))
        if same:
            result.append(same.pop(0))
        else:
            result.extend(convert_to_messages([shape]))  # type: ignore[arg-type]
    return result


def to_llm_response(response: Any) -> LLMResponse:
    """The interpose view of what the model answered (its last AI message)."""
    messages = response.result if isinstance(response, ModelResponse) else [response]
    if isinstance(response, ExtendedModelResponse):
        messages = response.model_response.result
    ai = next((m for m in reversed(messages) if isinstance(m, AIMessage)), None)
    if ai is None:
        return LLMResponse()
    usage: dict[str, int] = {}
    if ai.usage_metadata:
        usage = {k: int(v) for k, v in ai.usage_metadata.items() if isinstance(v, int)}
    meta = ai.response_metadata or {}
    stop = meta.get("finish_reason") or meta.get("stop_reason")
    if not stop:
        stop = "tool_use" if ai.tool_calls else "end_turn"
    return LLMResponse(
        content=str(ai.text),
        tool_calls=[
            ToolCall(id=tc.get("id") or "", name=tc["name"], args=dict(tc.get("args") or {}))
            for tc in ai.tool_calls
        ],
        usage=usage,
        stop_reason=str(stop),
    )


def to_model_response(answer: LLMResponse, base: Any) -> ModelResponse[Any]:
    """A model response carrying ``answer``: the model's own, edited, when there was
    one; a new AI message when an llm middleware answered without calling the model."""
    calls = [
        {"name": c.name, "args": c.args, "id": c.id, "type": "tool_call"} for c in answer.tool_calls
    ]
    if isinstance(base, ExtendedModelResponse):
        base = base.model_response
    if isinstance(base, ModelResponse):
        messages: list[BaseMessage] = list(base.result)
        for i in range(len(messages) - 1, -1, -1):
            if isinstance(messages[i], AIMessage):
                messages[i] = messages[i].model_copy(
                    update={"content": answer.content, "tool_calls": calls}
                )
                break
        return ModelResponse(result=messages, structured_response=base.structured_response)
    ai = AIMessage(content=answer.content, tool_calls=calls)
    return ModelResponse(result=[ai])


def name_of_model(model: Any) -> str:
    for attr in ("model_name", "model", "model_id"):
        value = getattr(model, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(model).__name__


def tool_content(output: Any) -> str | list[str | dict[Any, Any]]:
    if isinstance(output, str):
        return output
    if isinstance(output, list) and all(isinstance(part, str | dict) for part in output):
        return output
    return json.dumps(output, default=str)


def tool_message(result: ToolResult, name: str, call_id: str) -> ToolMessage:
    """The ToolMessage the model reads for a call interpose answered: a refusal
    (blocked / denied / aborted) or a tool error as an error, a respond as a success
    unless its result says it is an error."""
    return ToolMessage(
        content=tool_content(result.output),
        tool_call_id=call_id,
        name=name,
        status="error" if result.is_error else "success",
        additional_kwargs={"interpose_status": result.status, **hook_messages(result)},
    )


def hook_messages(result: ToolResult) -> dict[str, Any]:
    """``{"interpose_system_messages": [...]}`` when hooks of a Claude Code settings
    file said something for the user about this call (their ``systemMessage``), else
    nothing: what a ToolMessage carries in ``additional_kwargs``."""
    messages = result.details.get("system_messages")
    return {"interpose_system_messages": list(messages)} if messages else {}


def with_hook_messages(message: ToolMessage, result: ToolResult) -> ToolMessage:
    """The tool's own message, with the hooks' messages for the user added."""
    extra = hook_messages(result)
    if not extra:
        return message
    return message.model_copy(update={"additional_kwargs": {**message.additional_kwargs, **extra}})
