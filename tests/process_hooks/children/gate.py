"""A well-behaved process hook whose answers come from the environment.

``REPLIES`` (JSON) maps a method, or ``<method>:<tool name>``, to the result to send;
methods it does not name get ``{}`` (continue).  With ``RECORD`` set, the child writes
its environment and then every message it receives to that file, one JSON object per
line, flushed as it goes.  It says hello on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any


def reply(id: Any, result: Any) -> None:
    """Write one JSON-RPC reply line and flush it (a hook must flush every reply)."""
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()


def messages() -> Iterator[dict[str, Any]]:
    """Every message on stdin, until it closes."""
    for line in sys.stdin:
        if line.strip():
            message: dict[str, Any] = json.loads(line)
            yield message


def main() -> None:
    replies = json.loads(os.environ.get("REPLIES", "{}"))
    record_path = os.environ.get("RECORD")
    record = open(record_path, "a", encoding="utf-8") if record_path else None  # noqa: SIM115
    if record is not None:
        record.write(json.dumps({"env": dict(os.environ)}) + "\n")
        record.flush()
    print(f"gate {os.getpid()} listening", file=sys.stderr, flush=True)
    for message in messages():
        if record is not None:
            record.write(json.dumps(message) + "\n")
            record.flush()
        method = message.get("method")
        if "id" not in message:
            continue  # a notification: hook.event
        if method == "hook.hello":
            reply(message["id"], {"name": "gate", "protocol_version": 1})
            continue
        tool = message.get("params", {}).get("name", "")
        reply(message["id"], replies.get(f"{method}:{tool}", replies.get(method, {})))


if __name__ == "__main__":
    main()
