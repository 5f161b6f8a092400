#!/usr/bin/env python3
"""Parallelism probe: announce NAME, then wait (bounded) until OTHER has announced too.
Two of these only both finish when they run at the same time."""

import json
import os
import sys
import time

json.load(sys.stdin)
name, other = sys.argv[1], sys.argv[2]
here = os.environ["CLAUDE_PROJECT_DIR"]
open(os.path.join(here, name + ".flag"), "w").close()
deadline = time.monotonic() + 10
while not os.path.exists(os.path.join(here, other + ".flag")):
    if time.monotonic() > deadline:
        print(f"{other} never started while {name} ran", file=sys.stderr)
        sys.exit(2)
    time.sleep(0.01)
print(
    json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    )
)
