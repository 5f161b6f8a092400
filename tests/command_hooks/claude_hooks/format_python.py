#!/usr/bin/env python3
"""PostToolUse on Write|Edit: format the Python file that was written (strip trailing
whitespace, end with one newline) and tell the model."""

import json
import sys

data = json.load(sys.stdin)
path = data.get("tool_response", {}).get("filePath") or data["tool_input"].get("file_path", "")
if not path.endswith(".py"):
    sys.exit(0)
with open(path) as f:
    lines = [line.rstrip() for line in f.read().splitlines()]
with open(path, "w") as f:
    f.write("\n".join(lines).rstrip("\n") + "\n")
print(
    json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "PostToolUse",
                "additionalContext": f"formatted {path.rsplit('/', 1)[-1]}",
            }
        }
    )
)
