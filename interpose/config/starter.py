"""The starter config file that ``interpose init`` writes: the guards on, an example rule,
an audit log; every line commented, every key real (a test checks it with ``interpose
check``)."""

from __future__ import annotations

__all__ = ["STARTER"]

STARTER = """\
# interpose.toml: what runs between your agent and its tools.
#   interpose check interpose.toml     validate it and print the stack it builds
#   interpose schema > interpose.schema.json
#                                      a JSON Schema of this file, for your editor: put
#                                      `#:schema ./interpose.schema.json` on line 1 (Taplo,
#                                      Even Better TOML)
# Every table and key: docs/config.md. Relative paths resolve against this file's
# directory; durations are milliseconds (keys ending in _ms).

# Timeouts of the whole stack.
[hooks.defaults]
# how long an interceptor may take before its on_error policy applies
interceptor_timeout_ms = 5000
# how long an approver (or a human) may take before the call is denied
approval_timeout_ms = 60000

# The two guards are on unless `enabled = false`.
# The command-safety guard reads every shell command an `exec` tool is given (through
# pipes, `sh -c`, `$(...)`) and blocks the destructive ones: rm -rf /, curl | sh, ...
[hooks.builtins.command-safety-guard]
enabled = true
# An example rule: your own regexes over each simple command; a match blocks the call.
deny = ['^terraform destroy\\b']
# shadow: decide and record (events, spans), never block; try a new rule this way first
mode = "enforce"

# The security audit blocks file tools (read, write, edit, apply_patch) on secrets and
# system files: .env, ~/.ssh, /etc/shadow, shell profiles, ...
[hooks.builtins.security-audit]
enabled = true
# your own regexes over the normalized, lower-cased path
deny = ['(^|/)secrets/']

# A policy is on when its table is present. The tool filter blocks tools by name,
# group (`group:*`) or regex; here: no scheduling of jobs (cron, ...).
[hooks.builtins.tool-filter]
deny = ["group:automation"]

# Block the same call (tool and arguments) repeated a third time in one turn.
[hooks.builtins.loop-guard]
max_repeats = 3

# The audit log: every event as a JSON line, rotated by size.
[observers.audit]
path = "interpose-audit.jsonl"
max_bytes = 67108864  # 64 MiB, then rotate
backups = 5
# record each call's arguments (redacted), so that `interpose replay` can try a new
# config on real traffic before you enforce it (docs/rollout.md)
record_args = true

# Spans of turns, LLM calls and tool calls (exported only with [observers.otlp]).
[tracing]
level = "tool"
content = false  # true: tool arguments and results in spans, redacted

# More, each in docs/config.md:
#   [[hooks.commands]]            a shell command per tool call, Claude Code style
#   [hooks.processes.<name>]      a long-lived JSON-RPC hook process
#   [observers.otlp]              send spans to an OpenTelemetry collector
#   [mcp.servers.<name>]          MCP servers behind `interpose mcp-proxy`
#   [approvals]                   asks as requests a person decides from anywhere
#                                 (docs/approvals.md)
"""
