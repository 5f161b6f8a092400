#!/bin/sh
# tool.approve: every call it sees needs a person (permissionDecision "ask").
cat >/dev/null
echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "permissionDecision": "ask", "permissionDecisionReason": "sums need a human"}}'
