"""JSON-RPC messages as the MCP lanes and fronts build and hand them on: error answers,
cancellation notes, progress requests, and handing an answer to the call waiting for it.
Shared by the upstream pipes (``pipe.py``) and the fronts (``front.py``)."""

from __future__ import annotations

import asyncio
from typing import Any

from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter
from mcp_types.jsonrpc import INTERNAL_ERROR
from pydantic import ValidationError

from ..._jsonlines import ReplyTable

__all__ = [
    "asking_progress",
    "cancelled",
    "error_answer",
    "forward",
    "hand_over",
    "raise_error",
    "result_of",
    "too_long",
]


def too_long(who: str, size: int, limit: int, *, at_least: bool = False) -> str:
    """What an error says of a message over the size limit."""
    return (
        f"{who} a message of {'at least ' if at_least else ''}{size} bytes, over the limit "
        f"of {limit} bytes (raise it with "
        "`interpose mcp-proxy --max-message-bytes` or `[mcp] max_message_bytes`)"
    )


def error_answer(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def cancelled(request_id: str, reason: str) -> dict[str, Any]:
    """The ``notifications/cancelled`` message that abandons ``request_id``."""
    params = {"requestId": request_id, "reason": reason}
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params}


def asking_progress(params: dict[str, Any], token: str) -> dict[str, Any]:
    """``params`` whose ``_meta`` asks for progress notifications under ``token``."""
    meta = dict(params.get("_meta") or {})
    meta["progressToken"] = token
    return {**params, "_meta": meta}


def hand_over(
    waiters: ReplyTable[asyncio.Future[dict[str, Any]]] | dict[str, asyncio.Future[dict[str, Any]]],
    answer: dict[str, Any],
) -> bool:
    """Give a JSON-RPC response to the future that waits for its (string) id; False:
    none does (the response is somebody else's)."""
    request_id = answer.get("id")
    if isinstance(waiters, ReplyTable):
        waiter = waiters.take(request_id)
    else:  # (the front's table of its own requests)
        waiter = waiters.pop(request_id, None) if isinstance(request_id, str) else None
    if waiter is None:
        return False
    if not waiter.done():
        waiter.set_result(answer)
    return True


def raise_error(answer: dict[str, Any]) -> None:
    """Raise the ``MCPError`` a JSON-RPC answer carries, if it carries one."""
    error = answer.get("error")
    if isinstance(error, dict):
        raise MCPError(
            int(error.get("code", INTERNAL_ERROR)),
            str(error.get("message", "")),
            error.get("data"),
        )


def result_of(answer: dict[str, Any]) -> dict[str, Any]:
    """The result of a JSON-RPC answer (``{}`` when it is not an object).

    Raises:
        MCPError: the answer is an error.
    """
    raise_error(answer)
    result = answer.get("result")
    return result if isinstance(result, dict) else {}


async def forward(message: Any, to: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
    """Pass a decoded JSON-RPC message on to an SDK session; one that is not valid
    JSON-RPC goes as its ``ValidationError``, and a line that was not JSON as its
    decoding error (as the SDK's own transports hand them over: its session logs them)."""
    if isinstance(message, Exception):
        await to.send(message)
        return
    try:
        parsed = jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        await to.send(exc)
        return
    await to.send(SessionMessage(parsed))
