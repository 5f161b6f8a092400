"""PreToolUse on Bash: refuse dangerous commands (exit 2, the reason on stderr)."""

import json
import re
import sys

RULES = [
    (r"\bgit\s+push\b.*(--force|-f\b)", "force-pushing is not allowed"),
    (r"\bcurl\b.*\|\s*(ba)?sh\b", "piping downloads into a shell is not allowed"),
]

data = json.load(sys.stdin)
if data.get("tool_name") == "Bash":
    command = data.get("tool_input", {}).get("command", "")
    for pattern, reason in RULES:
        if re.search(pattern, command):
            print(reason, file=sys.stderr)
            sys.exit(2)
sys.exit(0)
