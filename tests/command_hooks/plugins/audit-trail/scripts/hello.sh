#!/bin/bash
# SessionStart (exec form, args): note where the session started, in the data dir given
# as the first argument.
cat >/dev/null
echo "session started in $CLAUDE_PROJECT_DIR" >> "$1/sessions.log"
exit 0
