#!/usr/bin/env python3
"""UserPromptSubmit: refuse prompts carrying secrets; add context to the others."""

import json
import re
import sys

data = json.load(sys.stdin)
prompt = data.get("prompt", "")
if re.search(r"(?i)\b(password|api[_-]?key)\s*[:=]", prompt):
    print(json.dumps({"decision": "block", "reason": "the prompt contains a secret"}))
    sys.exit(0)
print(
    json.dumps(
        {
            "hookSpecificOutput": {
                "hookEventName": "UserPromptSubmit",
                "additionalContext": "Coding style: PEP 8, type hints everywhere.",
            }
        }
    )
)
