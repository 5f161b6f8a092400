#!/bin/bash
# PreToolUse on Bash: deployments need a person (permissionDecision "ask").
input=$(cat)
if echo "$input" | grep -q '"command": *"deploy'; then
    echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "deployments need a human"}}'
fi
exit 0
