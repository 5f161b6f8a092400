#!/bin/sh
# UserPromptSubmit: plain stdout is added to the context.
echo "Project: $(basename "$CLAUDE_PROJECT_DIR")"
