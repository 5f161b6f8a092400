#!/bin/bash
# PostToolUse (async: true): lint the file that was written, in the background, and
# tell the user and the model what it found once it is done.
# It waits for lint.go (at most 10 s), as a slow linter would take its time.
input=$(cat)
file=$(printf '%s' "$input" | python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_input"].get("file_path", ""))')
for _ in $(seq 1 200); do
  [ -e "$CLAUDE_PROJECT_DIR/lint.go" ] && break
  sleep 0.05
done
name=$(basename "$file")
cat <<EOF
{
  "systemMessage": "lint: 2 warnings in $name",
  "hookSpecificOutput": {
    "hookEventName": "PostToolUse",
    "additionalContext": "The linter found 2 warnings in $name: unused import os (line 1), line too long (line 3)."
  }
}
EOF
exit 0
