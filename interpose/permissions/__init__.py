"""Permission rules: Claude Code and Codex rules, judged on what the shell really runs."""
