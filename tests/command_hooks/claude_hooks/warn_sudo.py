#!/usr/bin/env python3
"""PreToolUse on Bash: let sudo through, but warn the user (systemMessage)."""

import json
import sys

data = json.load(sys.stdin)
command = data.get("tool_input", {}).get("command", "")
if isinstance(command, str) and command.split()[:1] == ["sudo"]:
    print(json.dumps({"systemMessage": f"heads up: running as root: {command}"}))
sys.exit(0)
