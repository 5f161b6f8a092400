#!/usr/bin/env python3
"""review_gate.py: a process hook (JSON-RPC 2.0 over stdio, one object per line).

interpose starts it once and keeps it running; it can run under PicoClaw unchanged.

    hook.hello         the handshake: say our name and protocol version
    hook.event         observed events (notifications: no reply), logged to
                       $REVIEW_GATE_LOG when it is set
    hook.before_tool   block force-pushes, answer the plugin tool "whoami" ourselves,
                       give exec calls a default timeout, pass the rest through
    hook.approve_tool  production deploys need a change ticket

Only the standard library; stdout carries the protocol, so diagnostics go to stderr.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

Params = dict[str, Any]


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()  # one line per reply, flushed at once, or the host waits


def hello(params: Params) -> Any:
    return {"name": "review_gate", "protocol_version": 1}


def before_tool(params: Params) -> Any:
    tool, args = params["name"], params["args"]
    if tool == "whoami":
        answer = f"agent {params['agent_id']} in session {params['session_key']}"
        return {"decision": {"action": "respond"}, "hook_result": {"for_llm": answer}}
    command = str(args.get("command", ""))
    if tool == "exec" and "push" in command and "--force" in command:
        reason = "force-pushing rewrites shared history; push without --force"
        return {"decision": {"action": "deny_tool", "reason": reason}}
    if tool == "exec" and "timeout" not in args:
        return {"decision": {"action": "modify"}, "args": {**args, "timeout": 30}}
    return {"args": args}  # pass through unchanged


def approve_tool(params: Params) -> Any:
    command = str(params["args"].get("command", ""))
    if command.startswith("deploy") and "prod" in command:
        return {"allow": False, "reason": "production deploys need a change ticket"}
    return {"allow": True}


def event(params: Params) -> None:
    log = os.environ.get("REVIEW_GATE_LOG")
    if log:
        data = params["data"]
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{params['type']} {data.get('tool_name')} {data.get('status')}\n")


REQUESTS: dict[str, Callable[[Params], Any]] = {
    "hook.hello": hello,
    "hook.before_tool": before_tool,
    "hook.approve_tool": approve_tool,
}


def main() -> None:
    for line in sys.stdin:  # ends when the host closes our stdin: time to exit
        if not line.strip():
            continue
        message = json.loads(line)
        method, params = message.get("method"), message.get("params", {})
        if "id" not in message:  # a notification
            if method == "hook.event":
                event(params)
            continue
        handler = REQUESTS.get(method or "")
        if handler is None:
            error = {"code": -32601, "message": f"method not found: {method}"}
            send({"jsonrpc": "2.0", "id": message["id"], "error": error})
            continue
        send({"jsonrpc": "2.0", "id": message["id"], "result": handler(params)})
    print("review_gate: stdin closed, exiting", file=sys.stderr)


if __name__ == "__main__":
    main()
