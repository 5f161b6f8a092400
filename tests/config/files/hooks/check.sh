#!/bin/sh
# A Claude Code style PreToolUse hook: the event is JSON on stdin.
# Exit 2 blocks the call (stderr is the reason); exit 0 lets it through.
event=$(cat)
case "$event" in
  *'git push'*)
    echo "check.sh: pushes go through CI" >&2
    exit 2
    ;;
esac
exit 0
