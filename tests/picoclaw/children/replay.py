"""A process hook that answers as PicoClaw's hooks do, from a script.

``SCRIPT`` (JSON) maps a method to the reply to send to each request of it:

- ``{"result": ...}``: that result;
- ``{"error": {"code": ..., "message": ...}}``: a JSON-RPC error;
- ``{"echo": KEY, "set": {PATH: VALUE}, "suffix": {PATH: TEXT}, "with": {...}}``: the
  request's params (or their field ``from``), changed at the dotted PATHs, sent back
  under KEY with the keys of ``with`` beside it -- what PicoClaw's own test hook does
  (``{"action": "modify", "call": <the params, arguments.text set>}``).

A method it does not name gets ``{"action": "continue"}``; hook.hello gets
``{"ok": true}`` (PicoClaw's reply, no protocol_version), hook.approve_tool
``{"approved": true}``.  ``RECORD`` names a file that gets every message received, one
JSON object per line.  Notifications (no id, or id 0, as PicoClaw sends them) are
recorded and not answered.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from typing import Any

DEFAULTS = {"hook.hello": {"ok": True}, "hook.approve_tool": {"approved": True}}


def at(data: dict[str, Any], path: str) -> tuple[dict[str, Any], str]:
    *parents, last = path.split(".")
    for key in parents:
        data = data[key]
    return data, last


def answer(spec: dict[str, Any], params: dict[str, Any]) -> dict[str, Any]:
    if "result" in spec or "error" in spec:
        return spec
    echoed = copy.deepcopy(params[spec["from"]] if "from" in spec else params)
    for path, value in spec.get("set", {}).items():
        parent, key = at(echoed, path)
        parent[key] = value
    for path, text in spec.get("suffix", {}).items():
        parent, key = at(echoed, path)
        parent[key] = parent[key] + text
    return {"result": {**spec.get("with", {}), spec["echo"]: echoed}}


def main() -> None:
    script: dict[str, Any] = json.loads(os.environ["SCRIPT"])
    with open(os.environ["RECORD"], "a", encoding="utf-8") as record:
        for line in sys.stdin:
            if not line.strip():
                continue
            message = json.loads(line)
            record.write(json.dumps(message) + "\n")
            record.flush()
            if not message.get("id"):
                continue
            method = message["method"]
            default = {"result": DEFAULTS.get(method, {"action": "continue"})}
            reply = answer(script.get(method, default), message.get("params") or {})
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
