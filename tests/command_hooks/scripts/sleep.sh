#!/bin/bash
# Hangs: starts a child that sleeps, and waits for it.  Both pids go to $HOOK_PIDS first,
# so that a test can check that a timeout killed the hook and what it started.
echo $$ >"$HOOK_PIDS.tmp"
sleep 30 &
echo $! >>"$HOOK_PIDS.tmp"
mv "$HOOK_PIDS.tmp" "$HOOK_PIDS"
wait
