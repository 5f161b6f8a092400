#!/usr/bin/env python3
"""PreToolUse on Bash: run pytest quietly (updatedInput rewrites the command)."""

import json
import sys

data = json.load(sys.stdin)
if data["tool_name"] == "Bash":
    command = data["tool_input"].get("command", "")
    if command.startswith("pytest") and " -q" not in command:
        updated = dict(data["tool_input"], command=command + " -q")
        print(
            json.dumps(
                {
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "allow",
                        "permissionDecisionReason": "pytest is safe",
                        "updatedInput": updated,
                    }
                }
            )
        )
sys.exit(0)
