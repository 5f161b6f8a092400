#!/usr/bin/env python3
"""PreToolUse on Write: writes outside the project go to <project>/sandbox instead."""

import json
import os
import sys

data = json.load(sys.stdin)
project = os.environ["CLAUDE_PROJECT_DIR"]
path = data["tool_input"]["file_path"]
if os.path.isabs(path) and not path.startswith(project + os.sep):
    moved = os.path.join(project, "sandbox", os.path.basename(path))
    print(
        json.dumps(
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "updatedInput": {**data["tool_input"], "file_path": moved},
                }
            }
        )
    )
