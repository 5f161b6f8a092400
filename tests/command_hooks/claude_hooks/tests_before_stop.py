#!/usr/bin/env python3
"""Stop: do not let the agent finish before it ran the tests (once: stop_hook_active
tells the hook it already asked, so it does not loop forever)."""

import json
import os
import sys

data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "events.jsonl"), "a") as f:
    f.write(json.dumps(data) + "\n")
if data.get("stop_hook_active"):
    sys.exit(0)
print(json.dumps({"decision": "block", "reason": "Run the tests before you finish."}))
