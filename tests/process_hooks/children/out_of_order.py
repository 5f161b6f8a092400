"""A process hook that answers before_tool out of order: it waits for ``BATCH`` requests
(default 8), then answers them last first, each with ``{"args": {"n": <its n>,
"answered": <position in the answers>}}``."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def reply(id: Any, result: Any) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    batch = int(os.environ.get("BATCH", "8"))
    waiting: list[tuple[Any, Any]] = []
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "hook.hello":
            reply(message["id"], {"name": "out_of_order", "protocol_version": 1})
            continue
        waiting.append((message["id"], message["params"]["args"]["n"]))
        if len(waiting) == batch:
            for position, (id, n) in enumerate(reversed(waiting)):
                reply(id, {"args": {"n": n, "answered": position}})
            waiting.clear()


if __name__ == "__main__":
    main()
