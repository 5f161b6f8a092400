#!/bin/bash
# A command hook whose answer the test chooses through its environment:
#   HOOK_RECORD      append the event read on stdin to this file (one JSON object a line)
#   HOOK_ENV_RECORD  write the environment the hook runs with to this file
#   HOOK_STDOUT      print this on stdout (e.g. a JSON decision)
#   HOOK_STDERR      print this on stderr
#   HOOK_EXIT        exit with this code (default 0)
set -u
event=$(cat)
if [ -n "${HOOK_RECORD:-}" ]; then
    printf '%s\n' "$event" >>"$HOOK_RECORD"
fi
if [ -n "${HOOK_ENV_RECORD:-}" ]; then
    env >"$HOOK_ENV_RECORD"
fi
if [ -n "${HOOK_STDOUT:-}" ]; then
    printf '%s\n' "$HOOK_STDOUT"
fi
if [ -n "${HOOK_STDERR:-}" ]; then
    printf '%s\n' "$HOOK_STDERR" >&2
fi
exit "${HOOK_EXIT:-0}"
