#!/bin/bash
# SessionStart: persist environment variables for the session's Bash commands through
# $CLAUDE_ENV_FILE, as Claude Code documents it.
cat >/dev/null
if [ -n "$CLAUDE_ENV_FILE" ]; then
  echo 'export DEPLOY_STAGE=staging' >> "$CLAUDE_ENV_FILE"
  echo "export GREETING='hello from SessionStart'" >> "$CLAUDE_ENV_FILE"
  echo "export PATH=\"\$PATH:$CLAUDE_PROJECT_DIR/bin\"" >> "$CLAUDE_ENV_FILE"
fi
exit 0
