"""A process hook (JSON-RPC 2.0, one JSON object per line on stdin/stdout), in the
PicoClaw style: it answers ``hook.hello``, denies ``exec`` commands that mention
``sudo`` at ``hook.before_tool``, refuses to approve writes under ``/etc`` at
``hook.approve_tool``, and ignores the events it observes (``hook.event``)."""

from __future__ import annotations

import json
import sys
from typing import Any


def answer(request: dict[str, Any]) -> dict[str, Any]:
    method = request["method"]
    params = request.get("params") or {}
    if method == "hook.hello":
        return {"name": "review_gate", "protocol_version": 1}
    args = params.get("args") or {}
    if method == "hook.before_tool" and "sudo" in str(args.get("command", "")):
        return {"decision": {"action": "deny_tool", "reason": "review_gate: no sudo"}}
    if method == "hook.approve_tool" and str(args.get("path", "")).startswith("/etc"):
        return {"allow": False, "reason": "review_gate: /etc is off limits"}
    if method == "hook.approve_tool":
        return {"allow": True}
    return {}


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if "id" not in request:
            continue  # a notification (hook.event): nothing to answer
        reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer(request)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
