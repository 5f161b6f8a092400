#!/bin/bash
# PreToolUse on Bash: append the command to the plugin's log in $CLAUDE_PLUGIN_DATA and
# block recursive deletes (exit 2, the reason on stderr).
input=$(cat)
command=$(printf '%s' "$input" | python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_input"].get("command", ""))')
printf '%s\t%s\n' "$(basename "$CLAUDE_PLUGIN_ROOT")" "$command" >> "$CLAUDE_PLUGIN_DATA/audit.log"
case "$command" in
  *"rm -rf"* | *"rm -fr"*)
    echo "audit-trail: recursive delete blocked (plugin at $CLAUDE_PLUGIN_ROOT)" >&2
    exit 2
    ;;
esac
exit 0
