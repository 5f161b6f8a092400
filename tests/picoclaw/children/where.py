"""A process hook that says where it runs: its hello reply names the working directory
(PicoClaw's ``{"ok": true, "name": ...}``); every call continues."""

from __future__ import annotations

import json
import os
import sys

for line in sys.stdin:
    message = json.loads(line)
    if not message.get("id"):
        continue
    result = (
        {"ok": True, "name": os.getcwd()}
        if message["method"] == "hook.hello"
        else {"action": "continue", "approved": True}
    )
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
