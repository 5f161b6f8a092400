#!/bin/sh
# UserPromptSubmit: what this prints is added to the prompt's context.
cat >/dev/null
echo "Project: $(basename "$CLAUDE_PROJECT_DIR"). Run the tests with pytest -q."
