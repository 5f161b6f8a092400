#!/bin/sh
# PreToolUse / PermissionRequest: answer with the decision given as $1 (and $2 as reason).
cat >/dev/null
printf '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "%s", "permissionDecisionReason": "%s"}}\n' "$1" "$2"
