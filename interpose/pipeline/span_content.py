"""What ``Pipeline(trace_content=True)`` puts into spans: the model's messages, a tool's
arguments and result, redacted, where viewers look for them.

The OpenTelemetry GenAI conventions carry content as JSON strings in span attributes:
``gen_ai.system_instructions`` (a list of parts), ``gen_ai.input.messages`` and
``gen_ai.output.messages`` (lists of ``{"role", "parts", ...}`` messages, each part
``{"type": "text", "content"}``, ``{"type": "tool_call", "id", "name", "arguments"}``
or ``{"type": "tool_call_response", "id", "response"}``), ``gen_ai.tool.call.arguments``
and ``gen_ai.tool.call.result``.  interpose's payloads hold free-form message dicts
(interpose's own ``{"role", "content", "tool_calls"}``, OpenAI chat messages, Anthropic
content blocks, OpenAI Responses items); they are converted here, and a message that
fits none of these still becomes a valid message (Phoenix drops the whole list when one
item does not validate).

Phoenix (``arize-phoenix`` 15.10 and later) derives its OpenInference view from these
(``llm.input_messages.*``, ``llm.output_messages.*``, ``tool.parameters``, a tool's
``output.value``) but fills a span's *input* column only from ``input.value``, and an
LLM span's *output* column only from ``output.value``: those are set here too, to the
same strings.

Every function runs only when content tracing is on and the span records; each returns
the attributes to set in one ``span.set_attributes`` call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from .payloads import LLMRequest, LLMResponse
from .redaction import Redactor

__all__ = ["chat_content", "tool_input", "turn_input"]

JSON = "application/json"
TEXT = "text/plain"

# roles of other vocabularies (LangChain, OpenAI's developer role) in the GenAI ones
_ROLES = {"human": "user", "ai": "assistant", "developer": "system", "function": "tool"}
# provider stop reasons in the GenAI finish reasons (stop, length, content_filter,
# tool_call, error); any other is passed on as it is, which the schema allows
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_call",
    "tool_calls": "tool_call",
    "function_call": "tool_call",
    "max_tokens": "length",
}
_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})
# the part types the schema defines, each with fields it requires
_SCHEMA_PARTS = frozenset(
    {
        "text",
        "reasoning",
        "tool_call",
        "tool_call_response",
        "server_tool_call",
        "server_tool_call_response",
        "blob",
        "file",
        "uri",
    }
)
_ENCODER = msgspec.json.Encoder()

Part = dict[str, Any]
Message = dict[str, Any]


def chat_content(
    request: LLMRequest, response: LLMResponse | None, redactor: Redactor
) -> dict[str, str]:
    """The content attributes of a ``chat`` span: the request as the model got it (after
    llm.before) and, when there is one, the response as the agent got it (after
    llm.after)."""
    messages = redactor.to_json([_message(m, redactor) for m in request.messages])
    attrs = {"gen_ai.input.messages": messages, "input.value": messages, "input.mime_type": JSON}
    if request.system:
        attrs["gen_ai.system_instructions"] = redactor.to_json([_text(request.system)])
    if response is not None:
        parts = [_text(response.content)] if response.content else []
        parts += [_tool_call(call.id, call.name, call.args) for call in response.tool_calls]
        answer = {
            "role": "assistant",
            "parts": parts,
            "finish_reason": _FINISH.get(response.stop_reason, response.stop_reason),
        }
        output = redactor.to_json([answer])
        attrs.update(
            {"gen_ai.output.messages": output, "output.value": output, "output.mime_type": JSON}
        )
    return attrs


def tool_input(args: Mapping[str, Any], redactor: Redactor) -> dict[str, str]:
    """The content attributes of an ``execute_tool`` span when it starts: the arguments
    as the agent asked (``gen_ai.tool.call.arguments``, and Phoenix's input column)."""
    encoded = redactor.to_json(args)
    return {"gen_ai.tool.call.arguments": encoded, "input.value": encoded, "input.mime_type": JSON}


def turn_input(message: str, redactor: Redactor) -> dict[str, str]:
    """The content attributes of an ``invoke_agent`` span: the user's message (after the
    message stage), so that a trace's root row shows what the turn was about."""
    text = redactor.redact_text(message)
    user = [{"role": "user", "parts": [_text(text)]}]
    return {
        "gen_ai.input.messages": _ENCODER.encode(user).decode(),  # redacted already
        "input.value": text,
        "input.mime_type": TEXT,
    }


# -- free-form messages in the GenAI message schema ------------------------------------


def _message(message: object, redactor: Redactor) -> Message:
    if not isinstance(message, Mapping):
        return {"role": "user", "parts": _parts(message, redactor)}
    kind = message.get("type")
    role = message.get("role")
    if kind == "function_call":  # OpenAI Responses: the model asked for a tool
        call = _tool_call(message.get("call_id"), message.get("name"), message.get("arguments"))
        return {"role": "assistant", "parts": [call]}
    if kind == "function_call_output":  # OpenAI Responses: what the tool returned
        return {"role": "tool", "parts": [_response(message.get("call_id"), message.get("output"))]}
    if not isinstance(role, str):
        if isinstance(kind, str) and kind != "message":  # another item of the model's
            return {"role": "assistant", "parts": [_generic(message, redactor)]}
        role = "user"
    role = _ROLES.get(role, role)
    out: Message = {"role": role}
    if role == "tool":
        call_id = message.get("tool_call_id", message.get("id"))
        out["parts"] = [_response(call_id, message.get("content"))]
    else:
        parts = _parts(message.get("content"), redactor)
        calls = message.get("tool_calls")
        if isinstance(calls, list | tuple):
            parts += [_requested(call) for call in calls if isinstance(call, Mapping)]
        out["parts"] = parts
    name = message.get("name")
    if isinstance(name, str) and name:
        out["name"] = name
    return out


def _parts(content: object, redactor: Redactor) -> list[Part]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [_text(content)]
    if isinstance(content, list | tuple):
        return [_block(block, redactor) for block in content]
    # anything else is shown as its (redacted) JSON
    return [_text(redactor.to_json(content))]


def _block(block: object, redactor: Redactor) -> Part:
    """One content block (Anthropic, OpenAI) as a GenAI part."""
    if isinstance(block, str):
        return _text(block)
    if not isinstance(block, Mapping):
        return _text(redactor.to_json(block))
    kind = block.get("type")
    text = block.get("text")
    if isinstance(kind, str) and kind in _TEXT_BLOCKS and isinstance(text, str):
        return _text(text)
    if kind == "tool_use":  # Anthropic: the model asked for a tool
        return _tool_call(block.get("id"), block.get("name"), block.get("input"))
    if kind == "tool_result":  # Anthropic: what the tool returned
        return _response(block.get("tool_use_id"), block.get("content"))
    if kind == "thinking" and isinstance(block.get("thinking"), str):
        return {"type": "reasoning", "content": block["thinking"]}
    return _generic(block, redactor)


def _generic(block: Mapping[str, Any], redactor: Redactor) -> Part:
    """Another kind of block (an image, a document...) kept as it is, as the schema's
    generic part; one that claims a part type of the schema without its fields (which
    would not validate) as its JSON text."""
    kind = block.get("type")
    if not isinstance(kind, str) or kind in _SCHEMA_PARTS:
        return _text(redactor.to_json(block))
    return {**block, "type": kind}


def _requested(call: Mapping[str, Any]) -> Part:
    """A tool call listed in a message: interpose's ``{"id", "name", "args"}`` or
    OpenAI's ``{"id", "function": {"name", "arguments"}}``."""
    function = call.get("function")
    if isinstance(function, Mapping):
        return _tool_call(call.get("id"), function.get("name"), function.get("arguments"))
    return _tool_call(call.get("id"), call.get("name"), call.get("args", call.get("arguments")))


def _text(content: str) -> Part:
    return {"type": "text", "content": content}


def _tool_call(call_id: object, name: object, arguments: object) -> Part:
    if isinstance(arguments, str):
        # OpenAI sends the arguments as a JSON string: decoded, the redactor sees their
        # keys (an "api_key" argument is masked by name)
        try:
            arguments = msgspec.json.decode(arguments)
        except msgspec.DecodeError:
            pass
    part: Part = {"type": "tool_call", "name": str(name or ""), "arguments": arguments}
    if call_id:
        part["id"] = str(call_id)
    return part


def _response(call_id: object, response: object) -> Part:
    part: Part = {"type": "tool_call_response", "response": response}
    if call_id:
        part["id"] = str(call_id)
    return part
