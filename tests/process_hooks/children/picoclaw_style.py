"""A process hook written the way PicoClaw's documentation writes them: it logs to the
file named by ``PICOCLAW_HOOK_LOG_FILE``, answers hook.event notifications anyway (with
the notification's null id), passes before_tool through as ``{"args": ...}`` and allows
every approve_tool.  Unknown methods are logged and left unanswered."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

LOG_FILE = os.environ["PICOCLAW_HOOK_LOG_FILE"]


def log(text: str) -> None:
    with open(LOG_FILE, "a", encoding="utf-8") as f:
        f.write(text + "\n")


def respond(id: Any, result: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()


def on_hello(id: Any, params: dict[str, Any]) -> None:
    log(f"hello {params.get('protocol_version')}")
    respond(id, {"name": "py_review_gate", "protocol_version": 1})


def on_event(id: Any, params: dict[str, Any]) -> None:
    log(f"event {params.get('type')} {params.get('data', {}).get('tool_name')}")
    respond(id, {})


def on_before_tool(id: Any, params: dict[str, Any]) -> None:
    log(f"before_tool {params.get('name')}")
    respond(id, {"args": params.get("args", {})})


def on_approve_tool(id: Any, params: dict[str, Any]) -> None:
    log(f"approve_tool {params.get('name')}")
    respond(id, {"allow": True})


HANDLERS: dict[str, Callable[[Any, dict[str, Any]], None]] = {
    "hook.hello": on_hello,
    "hook.event": on_event,
    "hook.before_tool": on_before_tool,
    "hook.approve_tool": on_approve_tool,
}


def main() -> None:
    log("started")
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        handler = HANDLERS.get(message.get("method", ""))
        if handler is None:
            log(f"unknown method {message.get('method')}")
            continue
        handler(message.get("id"), message.get("params", {}))
    log("exiting")


if __name__ == "__main__":
    main()
