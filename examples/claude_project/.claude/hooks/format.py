"""PostToolUse on Write|Edit: tidy the Python file that was written (no trailing
whitespace, one final newline) and tell the model."""

import json
import sys

data = json.load(sys.stdin)
path = data.get("tool_response", {}).get("filePath") or data["tool_input"].get("file_path", "")
if path.endswith(".py"):
    with open(path) as f:
        text = "\n".join(line.rstrip() for line in f.read().splitlines()).rstrip("\n") + "\n"
    with open(path, "w") as f:
        f.write(text)
    context = f"{path.rsplit('/', 1)[-1]} was reformatted"
    print(
        json.dumps(
            {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": context}}
        )
    )
