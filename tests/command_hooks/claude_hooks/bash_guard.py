#!/usr/bin/env python3
"""PreToolUse: refuse dangerous shell commands (exit 2, the reason on stderr)."""

import json
import re
import sys

DANGEROUS = [
    (r"\brm\s+-[a-z]*r[a-z]*f?\s+/(\s|$)", "rm -rf / would wipe the machine"),
    (r"\bgit\s+push\b.*--force", "force-pushing is not allowed"),
]

try:
    input_data = json.load(sys.stdin)
except json.JSONDecodeError as e:
    print(f"Error: Invalid JSON input: {e}", file=sys.stderr)
    sys.exit(1)

tool_name = input_data.get("tool_name", "")
tool_input = input_data.get("tool_input", {})
command = tool_input.get("command", "")

if tool_name != "Bash" or not command:
    sys.exit(0)

for pattern, message in DANGEROUS:
    if re.search(pattern, command):
        print(message, file=sys.stderr)
        sys.exit(2)

sys.exit(0)
