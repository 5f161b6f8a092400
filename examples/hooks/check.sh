#!/bin/bash
# A hook script in the Claude Code format, used by examples/command_hook.py.
# The event arrives as one JSON object on stdin.  Exit 2 blocks the call, with stderr as
# the reason; exit 0 lets it go on, and a JSON object printed on stdout may decide more.
input=$(cat)

# pick out the fields this script needs (a real one would use jq)
field() { grep -o "\"$1\":\"[^\"]*\"" <<<"$input" | head -n 1 | cut -d'"' -f4; }
event=$(field hook_event_name)
tool=$(field tool_name)
command=$(field command)

case "$event:$tool:$command" in
PreToolUse:exec:"git push --force"*)
    echo "force-pushing is not allowed" >&2
    exit 2
    ;;
PreToolUse:exec:ls)
    echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse",
           "updatedInput": {"command": "ls --color=never"}}}'
    ;;
PermissionRequest:exec:deploy*)
    echo '{"hookSpecificOutput": {"hookEventName": "PermissionRequest",
           "permissionDecision": "ask", "permissionDecisionReason": "deploys need a human"}}'
    ;;
PostToolUse:read:*)
    echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse",
           "additionalContext": "files under gen/ are generated: edit the templates"}}'
    ;;
esac
exit 0
