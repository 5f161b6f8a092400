"""A process hook that ignores the handshake in its first ``SILENT_STARTS`` runs
(default 1), then behaves: before_tool responds "answered by <pid>".

Runs are counted in the directory ``STATE`` (one file per run)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any


def reply(id: Any, result: Any) -> None:
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": id, "result": result}) + "\n")
    sys.stdout.flush()


def main() -> None:
    state = Path(os.environ["STATE"])
    run = len(list(state.iterdir())) + 1
    (state / f"run-{run}").write_text(str(os.getpid()))
    silent = run <= int(os.environ.get("SILENT_STARTS", "1"))
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "hook.hello":
            if not silent:
                reply(message["id"], {"name": "late_hello", "protocol_version": 1})
            continue
        answer = {"for_llm": f"answered by {os.getpid()}"}
        reply(message["id"], {"decision": {"action": "respond"}, "hook_result": answer})


if __name__ == "__main__":
    main()
