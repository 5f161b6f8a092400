#!/usr/bin/env bash
# PreToolUse on Edit|Write: deny edits of protected files with a JSON decision.
input=$(cat)
file_path=$(printf '%s' "$input" | python3 -c 'import json, sys; print(json.load(sys.stdin).get("tool_input", {}).get("file_path", ""))')

case "$file_path" in
*.env | */.git/* | *package-lock.json)
    cat <<JSON
{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
 "permissionDecisionReason": "$(basename "$file_path") is protected"}}
JSON
    ;;
esac
exit 0
