#!/bin/bash
# PostToolUse (asyncRewake: true): run the test suite in the background after an edit;
# when it fails, exit 2 so that Claude wakes up and reads stderr.
# With "stdout" as argument it reports on stdout only (Claude then shows stdout).
input=$(cat)
tool=$(printf '%s' "$input" | python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_name"])')
if [ "$1" = "stdout" ]; then
  echo "tests failed after $tool: test_parse (expected 3, got 4)"
  exit 2
fi
if [ "$1" = "pass" ]; then
  echo "all tests pass"
  exit 0
fi
echo "tests failed after $tool: 1 failed, 12 passed (test_parse: expected 3, got 4)" >&2
exit 2
