#!/usr/bin/env bash
# PreToolUse on Edit|Write: lock files are generated, never edited by hand.
input=$(cat)
file_path=$(printf '%s' "$input" | python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_input"].get("file_path", ""))')
case "$file_path" in
*package-lock.json | *poetry.lock | *uv.lock)
    echo "{\"hookSpecificOutput\": {\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"deny\", \"permissionDecisionReason\": \"$(basename "$file_path") is generated: run the package manager\"}}"
    ;;
esac
exit 0
