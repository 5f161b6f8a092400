#!/usr/bin/env python3
"""Any event: append what Claude Code sent to <project>/events.jsonl."""

import json
import os
import sys

data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "events.jsonl"), "a") as f:
    f.write(json.dumps(data) + "\n")
