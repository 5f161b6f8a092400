"""Conversions between the OpenAI Agents SDK's items, events and tool results and
interpose's payloads, for ``interpose.adapters.openai_agents``.
"""

from __future__ import annotations

import json
from typing import Any

from agents import (
    FunctionTool,
    ModelResponse,
    Tool,
)
from agents.items import TResponseOutputItem, TResponseStreamEvent
from agents.tool import maybe_invoke_function_tool_failure_error_function
from agents.tool_context import ToolContext
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from ..pipeline.payloads import (
    LLMResponse,
    ToolCall,
    ToolResult,
    error_result,
    refusal,
)
from ..pipeline.tools import normalize_tool_name

__all__ = [
    "aborted_result",
    "completed_event",
    "failure_output",
    "output_message",
    "parse_args",
    "rebuild_response",
    "to_llm_response",
    "tool_output",
    "tool_spec",
    "unchanged_error",
]


def unchanged_error(result: ToolResult, exc: Exception) -> bool:
    """Whether ``result`` is still the error result of ``exc`` (no tool.after
    handler rewrote what the model reads)."""
    return bool(result.output == error_result(exc).output)


async def failure_output(
    tool: FunctionTool, invoke: object, ctx: ToolContext[Any], args_json: str, exc: Exception
) -> Any:
    """What the SDK gives the model for a function tool that raised ``exc``: its
    failure message (``failure_error_function``, by default a fixed text that does not
    show the exception), reported as the SDK reports a handled error.

    Raises:
        Exception: ``exc``, when the tool has no failure message (``failure_error_function
            =None``): the SDK then fails the run with it.
    """
    message = await maybe_invoke_function_tool_failure_error_function(
        function_tool=tool, context=ctx, error=exc
    )
    if message is None:
        raise exc
    report = getattr(invoke, "_on_handled_error", None)
    if report is not None:
        report(tool, exc, args_json, ctx)
    return message


def parse_args(args_json: str) -> dict[str, Any]:
    """The model's arguments as a dict.

    Raises:
        ValueError: they are not JSON, or not a JSON object.
    """
    if not args_json.strip():
        return {}
    try:
        args = json.loads(args_json)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the arguments are not valid JSON ({exc})") from None
    if not isinstance(args, dict):
        raise ValueError(f"the arguments are a JSON {type(args).__name__}, not an object")
    return args


def aborted_result(name: str, reason: str) -> ToolResult:
    return refusal("aborted", normalize_tool_name(name), reason)


def tool_output(result: ToolResult) -> Any:
    """What the model reads: the tool's own value when it ran (or was answered with a
    value), the refusal as JSON when it was blocked, denied or aborted."""
    output = result.output
    if result.status == "ok" or (
        result.status in ("responded", "error") and not isinstance(output, dict | list)
    ):
        return output
    return json.dumps(output, default=str)


def tool_spec(tool: Tool) -> dict[str, Any]:
    if isinstance(tool, FunctionTool):
        return {
            "name": tool.name,
            "type": "function",
            "description": tool.description,
            "parameters": tool.params_json_schema,
        }
    return {"name": tool.name, "type": "hosted", "description": ""}


_HOSTED_CALLS = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "image_generation_call": "image_generation",
    "computer_call": "computer",
    "local_shell_call": "local_shell",
    "shell_call": "shell",
    "apply_patch_call": "apply_patch",
    "mcp_call": "mcp",
    "custom_tool_call": "custom_tool",
    "tool_search_call": "tool_search",
}


def _item_field(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, dict) else getattr(item, key, None)


def _call_id(item: Any) -> str:
    return str(_item_field(item, "call_id") or _item_field(item, "id") or "")


def to_llm_response(response: ModelResponse) -> LLMResponse:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in response.output:
        kind = _item_field(item, "type")
        if kind == "message":
            for part in _item_field(item, "content") or ():
                if _item_field(part, "type") == "output_text":
                    texts.append(str(_item_field(part, "text")))
        elif kind == "function_call":
            raw = str(_item_field(item, "arguments") or "")
            try:
                args = parse_args(raw)
            except ValueError:
                args = {"arguments": raw}
            calls.append(
                ToolCall(id=_call_id(item), name=str(_item_field(item, "name")), args=args)
            )
        elif kind in _HOSTED_CALLS:
            dumped = item.model_dump(exclude_none=True) if hasattr(item, "model_dump") else item
            args = {
                k: v
                for k, v in dict(dumped).items()
                if k not in ("id", "call_id", "type", "status")
            }
            name = str(_item_field(item, "name") or "") if kind == "mcp_call" else ""
            calls.append(ToolCall(id=_call_id(item), name=name or _HOSTED_CALLS[kind], args=args))
    usage = response.usage
    return LLMResponse(
        content="".join(texts),
        tool_calls=calls,
        usage={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        stop_reason="tool_use" if calls else "end_turn",
    )


def output_message(text: str, item_id: str = "interpose-message") -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=item_id,
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def rebuild_response(
    final: LLMResponse, original: ModelResponse | None, before: LLMResponse | None
) -> list[TResponseOutputItem]:
    """The output items of ``final``: the model's own items where the handlers kept
    them, new ones where they changed or added something, none for what they removed."""
    wanted = {call.id: call for call in final.tool_calls}
    was = {call.id: call for call in before.tool_calls} if before is not None else {}
    text_changed = before is None or final.content != before.content
    items: list[TResponseOutputItem] = []
    placed: set[str] = set()
    wrote_text = False
    for item in original.output if original is not None else ():
        kind = _item_field(item, "type")
        if kind == "message":
            if not text_changed:
                items.append(item)
            elif not wrote_text and final.content:
                items.append(output_message(final.content, str(_item_field(item, "id") or "")))
                wrote_text = True
            continue
        if kind == "function_call" or kind in _HOSTED_CALLS:
            call_id = _call_id(item)
            call = wanted.get(call_id)
            if call is None:
                continue  # vetoed
            placed.add(call_id)
            if kind == "function_call" and call != was.get(call_id):
                items.append(_function_call(call))
            else:
                items.append(item)
            continue
        items.append(item)  # reasoning and the like
    if text_changed and not wrote_text and final.content:
        items.insert(0, output_message(final.content))
    items.extend(_function_call(call) for call in final.tool_calls if call.id not in placed)
    return items


def _function_call(call: ToolCall) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=call.id,
        call_id=call.id,
        type="function_call",
        name=call.name,
        arguments=json.dumps(call.args),
        status="completed",
    )


def completed_event(
    response: ModelResponse, held: list[TResponseStreamEvent]
) -> ResponseCompletedEvent:
    """A ``response.completed`` event carrying ``response``'s output."""
    for event in reversed(held):
        if isinstance(event, ResponseCompletedEvent):
            return event.model_copy(
                update={"response": event.response.model_copy(update={"output": response.output})}
            )
    synthetic = Response.model_construct(
        id=response.response_id or "interpose-response",
        object="response",
        created_at=0,
        model="",
        output=response.output,
        parallel_tool_calls=False,
        tool_choice="auto",
        tools=[],
        status="completed",
        usage=None,
    )
    return ResponseCompletedEvent(
        type="response.completed", response=synthetic, sequence_number=len(held)
    )
