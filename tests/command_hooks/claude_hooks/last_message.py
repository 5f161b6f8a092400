#!/usr/bin/env python3
"""Stop / PreToolUse: read the transcript at transcript_path, as notification hooks do,
and record the last assistant text and how many lines it had to
<project>/transcript_seen.jsonl."""

import json
import os
import sys

data = json.load(sys.stdin)
path = data.get("transcript_path")
lines = []
if path and os.path.exists(path):
    with open(path) as f:
        lines = [json.loads(line) for line in f if line.strip()]
last_text = ""
for entry in lines:
    if entry.get("type") != "assistant":
        continue
    for block in entry["message"]["content"]:
        if block.get("type") == "text":
            last_text = block["text"]
seen = {"event": data["hook_event_name"], "lines": len(lines), "last_text": last_text}
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "transcript_seen.jsonl"), "a") as f:
    f.write(json.dumps(seen) + "\n")
