#!/bin/bash
# A PreToolUse hook as people write them for Claude Code: refuse `rm -rf`, allow the rest.
# Exit 2 blocks the call; what it prints on stderr is the reason the agent sees.
input=$(cat)
if grep -q 'rm -rf' <<<"$input"; then
    echo "  rm -rf is not allowed here  " >&2
    exit 2
fi
exit 0
