"""The schema of the config file: one msgspec struct per table.

Every field carries its documentation (``Meta.description``): docs/config.md's reference
is generated from it (``reference.py``).  A new section of the file is a new struct here
and a field of ``Config``.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

import msgspec

from ..bus.events import EventKind
from .mcp import McpConfig


def _doc(text: str, **constraints: Any) -> msgspec.Meta:
    return msgspec.Meta(description=text, **constraints)


OnErrorName: TypeAlias = Literal["block", "skip", "raise"]
InterceptPoint: TypeAlias = Literal[
    "before_tool", "after_tool", "approve_tool", "before_llm", "after_llm"
]
CommandEvent: TypeAlias = Literal[
    "tool.before", "tool.after", "tool.approve", "PreToolUse", "PostToolUse", "PermissionRequest"
]
ToolsField: TypeAlias = "str | list[str] | None"
ModeName: TypeAlias = Literal["enforce", "shadow"]
PiiKind: TypeAlias = Literal["email", "phone", "iban", "card", "us-ssn"]
_MODE_DOC = (
    "`enforce`, or `shadow`: it runs and what it decides is recorded (`shadow_decision` "
    "events, spans, metrics) but never applied (docs/rollout.md)"
)

_TOOLS_DOC = (
    "which tools it applies to: a list of tool names and `group:*` names, or one "
    "string: a `group:*` name or a regex searched in the normalized tool name; "
    "unset: every tool"
)


class _Table(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A table of the config file: unknown keys are errors."""


class DefaultsConfig(_Table):
    """``[hooks.defaults]``: the pipeline's default timeouts and retries."""

    interceptor_timeout_ms: Annotated[
        int, _doc("how long an async interceptor may take before its error policy applies", gt=0)
    ] = 5000
    approval_timeout_ms: Annotated[
        int, _doc("how long approvers and the human-approval handler may take; then deny", gt=0)
    ] = 60000
    observer_timeout_ms: Annotated[
        int, _doc("how long an async observer may take per event", gt=0)
    ] = 500
    max_retries: Annotated[
        int, _doc("how often a `retry` from an after-hook may re-run the operation", ge=0)
    ] = 0


class CommandSafetyGuardConfig(_Table):
    """``[hooks.builtins.command-safety-guard]``: the exec guard (on by default)."""

    enabled: Annotated[bool, _doc("register the guard")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    priority: Annotated[
        int | None,
        _doc("its place among the tool.before interceptors; unset: 100 (see `priority_order`)"),
    ] = None
    deny: Annotated[
        list[str],
        _doc("extra regexes over each simple command's normalized text; a match blocks"),
    ] = []
    allow: Annotated[
        list[str],
        _doc("regexes over the same text; a match exempts that command from every rule"),
    ] = []
    decisions: Annotated[
        dict[str, str],
        _doc(
            'rule id -> `"block"`, `"ask"` (a person confirms) or `"off"`, over the '
            'defaults of docs/guards.md (`cloud-destruction = "block"`)'
        ),
    ] = {}


class SecurityAuditConfig(_Table):
    """``[hooks.builtins.security-audit]``: the file-path guard (on by default)."""

    enabled: Annotated[bool, _doc("register the guard")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    priority: Annotated[
        int | None,
        _doc("its place among the tool.before interceptors; unset: 99 (see `priority_order`)"),
    ] = None
    deny: Annotated[
        list[str], _doc("extra regexes over the normalized, lower-cased path; a match blocks")
    ] = []
    allow: Annotated[
        list[str], _doc("regexes over the normalized path; a match exempts it from every rule")
    ] = []


class ToolFilterConfig(_Table):
    """``[hooks.builtins.tool-filter]``: allow or deny tools by name, group or regex."""

    enabled: Annotated[bool, _doc("register the filter")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    allow: Annotated[
        list[str] | None,
        _doc(
            "tool names, `group:*` names or regexes (any other string); when set, every "
            "tool none of them matches is blocked"
        ),
    ] = None
    deny: Annotated[
        list[str], _doc("the same kinds of rules; a tool one of them matches is blocked")
    ] = []
    priority: Annotated[
        int | None,
        _doc("its place among the tool.before interceptors; unset: 120 (see `priority_order`)"),
    ] = None


class RateLimitConfig(_Table):
    """``[hooks.builtins.rate-limit]``: a token bucket per (tool, session)."""

    rate: Annotated[float, _doc("tokens added every `per_ms` (required)", gt=0)]
    enabled: Annotated[bool, _doc("register the rate limit")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    per_ms: Annotated[int, _doc("the refill period", gt=0)] = 1000
    burst: Annotated[
        Annotated[int, msgspec.Meta(ge=1)] | None,
        _doc("the bucket's size; unset: `rate` rounded up"),
    ] = None
    tools: Annotated[ToolsField, _doc(_TOOLS_DOC)] = None
    max_buckets: Annotated[int, _doc("how many buckets are kept (LRU)", ge=1)] = 10_000
    priority: Annotated[
        int | None,
        _doc("its place among the tool.before interceptors; unset: 95 (see `priority_order`)"),
    ] = None


class RedactSecretsConfig(_Table):
    """``[hooks.builtins.redact-secrets]``: scrub secrets out of tool results."""

    enabled: Annotated[bool, _doc("register the redaction")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    patterns: Annotated[
        list[str],
        _doc("extra regexes to mask (a group named `secret` limits the mask to it)"),
    ] = []
    keys: Annotated[list[str], _doc("extra key names whose values are always masked")] = []
    detect: Annotated[
        bool,
        _doc(
            "also mask what `interpose.secrets` recognizes in strings: known key formats, "
            "private keys, JWTs, passwords in URLs, random values under key-like names"
        ),
    ] = True
    pii: Annotated[
        bool | list[PiiKind],
        _doc(
            "also mask personal data: `true` for every kind, or a list of `email`, "
            "`phone`, `iban`, `card` (Luhn-checked), `us-ssn`"
        ),
    ] = False
    tools: Annotated[ToolsField, _doc(_TOOLS_DOC)] = None
    priority: Annotated[
        int | None,
        _doc("its place among the tool.after interceptors; unset: 100 (see `priority_order`)"),
    ] = None


class LoopGuardConfig(_Table):
    """``[hooks.builtins.loop-guard]``: block a call repeated with the same arguments."""

    enabled: Annotated[bool, _doc("register the loop guard")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    max_repeats: Annotated[
        int, _doc("the repeat (same tool, same arguments, same turn) that is blocked", ge=2)
    ] = 3
    tools: Annotated[ToolsField, _doc(_TOOLS_DOC)] = None
    max_turns: Annotated[int, _doc("how many turns' counts are kept (LRU)", ge=1)] = 1024
    priority: Annotated[
        int | None,
        _doc("its place among the tool.before interceptors; unset: 105 (see `priority_order`)"),
    ] = None


class ResultCacheConfig(_Table):
    """``[hooks.builtins.result-cache]``: answer repeated read-only calls from a cache."""

    enabled: Annotated[bool, _doc("register the cache")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    ttl_ms: Annotated[int, _doc("how long an entry answers", gt=0)] = 60_000
    tools: Annotated[
        str | list[str],
        _doc("what is cached (a tool matcher, as `tools` elsewhere)"),
    ] = msgspec.field(
        default_factory=lambda: ["read", "web_fetch", "web_search", "memory_search", "memory_get"]
    )
    invalidate_on: Annotated[
        str | list[str],
        _doc("a call of these tools empties the cache; `[]`: never"),
    ] = msgspec.field(default_factory=lambda: ["write", "edit", "apply_patch", "exec", "process"])
    scope: Annotated[
        Literal["session", "global"],
        _doc("`session`: entries are per agent and session; `global`: shared"),
    ] = "session"
    max_entries: Annotated[int, _doc("how many results are kept (LRU)", ge=1)] = 1024
    priority: Annotated[
        int | None,
        _doc("its place among the tool.before interceptors; unset: 5 (see `priority_order`)"),
    ] = None


class OutputCapConfig(_Table):
    """``[hooks.builtins.output-cap]``: truncate long tool output."""

    enabled: Annotated[bool, _doc("register the cap")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    max_chars: Annotated[int, _doc("the most characters kept", ge=1)] = 20_000
    marker: Annotated[
        str, _doc("appended after a cut; `{cut}` and `{chars}` say how much was cut")
    ] = "\n… [truncated {chars}]"
    strings_only: Annotated[bool, _doc("leave non-string outputs alone")] = False
    tools: Annotated[ToolsField, _doc(_TOOLS_DOC)] = None
    priority: Annotated[
        int | None,
        _doc("its place among the tool.after interceptors; unset: 90 (see `priority_order`)"),
    ] = None


class BuiltinsConfig(_Table, rename="kebab"):
    """``[hooks.builtins]``: the guards (on unless disabled) and the policies (off unless
    their table is present)."""

    command_safety_guard: CommandSafetyGuardConfig = msgspec.field(
        default_factory=CommandSafetyGuardConfig
    )
    security_audit: SecurityAuditConfig = msgspec.field(default_factory=SecurityAuditConfig)
    tool_filter: ToolFilterConfig | None = None
    rate_limit: RateLimitConfig | None = None
    redact_secrets: RedactSecretsConfig | None = None
    loop_guard: LoopGuardConfig | None = None
    result_cache: ResultCacheConfig | None = None
    output_cap: OutputCapConfig | None = None


class ProcessHookConfig(_Table):
    """``[hooks.processes.<name>]``: a long-lived child answering JSON-RPC hook calls."""

    command: Annotated[
        list[str],
        _doc("the program and its arguments, not a shell line (required)", min_length=1),
    ]
    enabled: Annotated[bool, _doc("start and register this hook")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    intercept: Annotated[list[InterceptPoint], _doc("the hook points it answers")] = msgspec.field(
        default_factory=lambda: ["before_tool"]
    )
    observe: Annotated[
        list[str],
        _doc(
            "events sent to it as notifications: event kinds, PicoClaw's names of them "
            "(`agent.tool.exec_start`, `turn_end`) or `*` for all"
        ),
    ] = []
    priority: Annotated[
        int, _doc("the priority of each of its interceptors (see `priority_order`)")
    ] = 0
    on_error: Annotated[
        OnErrorName,
        _doc("when it fails to answer: `block` (fail closed), `skip` (fail open), `raise`"),
    ] = "block"
    timeout_ms: Annotated[
        Annotated[int, msgspec.Meta(gt=0)] | None,
        _doc("wait for each reply; unset: `hooks.defaults.interceptor_timeout_ms`"),
    ] = None
    handshake_timeout_ms: Annotated[int, _doc("wait for the `hook.hello` reply", gt=0)] = 5000
    max_line_bytes: Annotated[int, _doc("the longest stdout line accepted", ge=64)] = 1 << 20
    tools: Annotated[ToolsField, _doc(_TOOLS_DOC + " (tool points only)")] = None
    agents: Annotated[str | None, _doc("a regex searched in the agent id; unset: every agent")] = (
        None
    )
    env: Annotated[dict[str, str], _doc("variables added to the child's minimal environment")] = {}
    cwd: Annotated[
        str | None, _doc("the child's working directory; unset: the config file's directory")
    ] = None
    dir: Annotated[str | None, _doc("PicoClaw's name of `cwd` (give one of them)")] = None
    transport: Annotated[
        Literal["stdio"] | None, _doc("PicoClaw's transport: only `stdio` (the default)")
    ] = None
    trusted: Annotated[
        bool, _doc("a `respond` from its before_tool skips the approvers (as a trusted handler)")
    ] = False
    event_method: Annotated[
        Literal["hook.event", "hook.runtime_event"] | None,
        _doc(
            "how events are sent; unset: `hook.runtime_event` when `observe` uses PicoClaw's "
            "`agent.*` names, else `hook.event`"
        ),
    ] = None


class CommandToolFilter(_Table):
    """``filter.tool`` of a command hook."""

    allow: Annotated[
        list[str],
        _doc("tool names, `group:*` names or regexes it runs for; empty: every tool"),
    ] = []
    deny: Annotated[list[str], _doc("tools it never runs for (deny wins over allow)")] = []


class CommandFilter(_Table):
    """``filter`` of a command hook."""

    tool: CommandToolFilter = msgspec.field(default_factory=CommandToolFilter)


class CommandHookConfig(_Table):
    """``[[hooks.commands]]``: a shell command run per matching tool event, Claude Code
    style."""

    command: Annotated[
        Annotated[str, msgspec.Meta(min_length=1)]
        | Annotated[list[str], msgspec.Meta(min_length=1)],
        _doc("a command line (run with `/bin/sh -c`) or an argv list"),
    ]
    enabled: Annotated[bool, _doc("register this hook")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    event: Annotated[
        CommandEvent,
        _doc("`tool.before`, `tool.after`, `tool.approve` (or the Claude Code names)"),
    ] = "tool.before"
    timeout_ms: Annotated[int, _doc("then the command is killed and `on_error` applies", gt=0)] = (
        60_000
    )
    on_error: Annotated[
        OnErrorName | None,
        _doc("policy for exits other than 0 and 2 and for timeouts; unset: the hook's default"),
    ] = None
    priority: Annotated[int, _doc("its place among the interceptors of its hook")] = 0
    filter: CommandFilter = msgspec.field(default_factory=CommandFilter)
    env: Annotated[dict[str, str], _doc("variables added to the minimal environment")] = {}
    cwd: Annotated[str | None, _doc("where it runs; unset: the config file's directory")] = None
    id: Annotated[str | None, _doc("the registration id; unset: `command:<command>`")] = None
    dialect: Annotated[
        Literal["interpose", "claude-code"],
        _doc(
            "what the command sees: interpose's tool names and argument keys, or exactly "
            "what Claude Code sends (`Bash`, `file_path`…)"
        ),
    ] = "interpose"


class ClaudeToolConfig(_Table):
    """``[hooks.claude_tools.<Claude name>]``: one of the application's tools as Claude
    Code hooks see it (a row added to the claude-code dialect's tool table)."""

    tool: Annotated[str, _doc("the interpose tool name (required)", min_length=1)]
    fields: Annotated[
        dict[str, str],
        _doc("interpose argument key -> Claude `tool_input` key, for the keys that differ"),
    ] = {}


class HooksConfig(_Table):
    """``[hooks]``: everything registered in the pipeline."""

    enabled: Annotated[
        bool, _doc("`false` registers nothing from `[hooks]`, builtins included")
    ] = True
    tools: Annotated[
        list[str], _doc("application tool names to add to the known set, for matchers")
    ] = []
    priority_order: Annotated[
        Literal["interpose", "picoclaw"] | None,
        _doc(
            "how the priorities of builtins and process hooks order them: `interpose` "
            "(higher first) or `picoclaw` (builtins before process hooks, lower first, ties "
            "by name); unset: `picoclaw` in a PicoClaw-shaped file, else `interpose`"
        ),
    ] = None
    defaults: DefaultsConfig = msgspec.field(default_factory=DefaultsConfig)
    builtins: BuiltinsConfig = msgspec.field(default_factory=BuiltinsConfig)
    processes: dict[str, ProcessHookConfig] = {}
    commands: list[CommandHookConfig] = []
    claude_tools: dict[str, ClaudeToolConfig] = {}
    claude_settings: Annotated[
        list[str],
        _doc(
            "Claude Code settings files (`.claude/settings.json`) whose `hooks` run too; "
            "relative: to this file's directory"
        ),
    ] = []
    claude_plugins: Annotated[
        list[str],
        _doc(
            "Claude Code plugin directories whose `hooks/hooks.json` run too "
            "(`${CLAUDE_PLUGIN_ROOT}` is the directory); relative: to this file's directory"
        ),
    ] = []
    claude_plugin_data: Annotated[
        str | None,
        _doc(
            "where plugins keep data: `${CLAUDE_PLUGIN_DATA}` is `<this>/<plugin name>`; "
            "unset: `~/.claude/plugins/data/<plugin name>`"
        ),
    ] = None
    claude_transcripts: Annotated[
        str | None,
        _doc(
            "a directory for session transcripts (`<session>.jsonl`, Claude Code's shape): "
            "the hooks of the settings files and plugins get `transcript_path`; unset: null"
        ),
    ] = None


class AuditConfig(_Table):
    """``[observers.audit]``: every event as a JSON line in a size-rotated file."""

    path: Annotated[str, _doc("the file; relative: to the config file's directory", min_length=1)]
    enabled: Annotated[bool, _doc("attach the audit log")] = True
    max_bytes: Annotated[int, _doc("rotate when the file would grow past this; 0: never", ge=0)] = (
        64 * 1024 * 1024
    )
    backups: Annotated[int, _doc("how many rotated files are kept", ge=1)] = 5
    events: Annotated[list[EventKind] | None, _doc("the kinds to record; unset: all")] = None
    record_args: Annotated[
        bool,
        _doc(
            "record each tool call's arguments (as sent and as the tool got them) in "
            "`call_recorded` events, redacted: what `interpose replay` needs"
        ),
    ] = False
    record_results: Annotated[
        bool, _doc("record each tool call's result output too (redacted)")
    ] = False
    record_llm: Annotated[
        bool, _doc("record each LLM request (and with `record_results` its response), redacted")
    ] = False
    record_messages: Annotated[
        bool,
        _doc(
            "record each user message and the turn's params as they arrived and as the "
            "stack left them, redacted"
        ),
    ] = False


class LoggingConfig(_Table):
    """``[observers.logging]``: every event as a readable line on a stdlib logger."""

    enabled: Annotated[bool, _doc("attach the logging observer")] = True
    logger: Annotated[str, _doc("the logger name")] = "interpose.events"
    level: Annotated[str, _doc("the level of ordinary events (a level name)")] = "INFO"
    content: Annotated[bool, _doc("include the user's message in `message_received`")] = False
    events: Annotated[list[EventKind] | None, _doc("the kinds to log; unset: all")] = None


class MetricsConfig(_Table):
    """``[observers.metrics]``: OpenTelemetry metrics, on the global meter provider."""

    enabled: Annotated[bool, _doc("attach the metrics observer")] = True


class OTLPConfig(_Table):
    """``[observers.otlp]``: export the pipeline's spans to an OTLP collector (needs the
    ``otlp`` extra)."""

    enabled: Annotated[bool, _doc("export spans")] = True
    endpoint: Annotated[str, _doc("the collector's URL")] = "http://127.0.0.1:4318"
    protocol: Annotated[
        Literal["http", "grpc"], _doc("OTLP/HTTP (port 4318) or OTLP/gRPC (port 4317)")
    ] = "http"
    service_name: Annotated[str, _doc("the `service.name` resource attribute")] = "interpose"
    headers: Annotated[dict[str, str], _doc("sent with every export request")] = {}
    timeout_ms: Annotated[int, _doc("how long one export may take", gt=0)] = 10_000


class RedisConfig(_Table):
    """``[observers.redis]``: publish the events to a Redis Stream, for a fleet of agent
    processes (needs the ``redis`` extra; see docs/fleet.md)."""

    url: Annotated[str, _doc("the Redis server: `redis://[user:password@]host:port/db`")] = (
        "redis://127.0.0.1:6379/0"
    )
    enabled: Annotated[bool, _doc("attach the publisher")] = True
    stream: Annotated[str, _doc("the stream key", min_length=1)] = "interpose:events"
    maxlen: Annotated[
        int, _doc("trim the stream to about this many entries (`MAXLEN ~`); 0: never", ge=0)
    ] = 1_000_000
    overflow: Annotated[
        Literal["block", "drop_oldest", "drop_newest"],
        _doc("when Redis is slow or down: `block` (the agent waits, nothing lost) or drop"),
    ] = "block"
    queue: Annotated[int, _doc("how many events may wait for Redis", gt=0)] = 8192
    batch: Annotated[int, _doc("the most events sent in one round trip", gt=0)] = 512
    buffer: Annotated[int, _doc("the bus buffer of the subscription", gt=0)] = 1024
    producer: Annotated[str, _doc("the producer id in every entry; empty: `host:pid:random`")] = ""
    events: Annotated[list[EventKind] | None, _doc("the kinds to publish; unset: all")] = None


class ObserversConfig(_Table):
    """``[observers]``: what listens on the bus (each is on when its table is present)."""

    audit: AuditConfig | None = None
    logging: LoggingConfig | None = None
    metrics: MetricsConfig | None = None
    otlp: OTLPConfig | None = None
    redis: RedisConfig | None = None


class TracingConfig(_Table):
    """``[tracing]``: spans of turns, LLM calls, tool calls and interceptors."""

    level: Annotated[
        Literal["off", "tool", "interceptor"],
        _doc("`off`, `tool` (turn, LLM and tool spans) or `interceptor` (and one per interceptor)"),
    ] = "tool"
    content: Annotated[bool, _doc("record tool arguments and results in spans, redacted")] = False


class PermissionTestConfig(_Table):
    """One inline policy test, checked by ``interpose check``: a call and the decision the
    permission rules must reach for it."""

    tool: Annotated[str, _doc("the tool's name, as the agent calls it (`exec`, `read_file`...)")]
    expect: Annotated[
        Literal["allow", "ask", "deny", "none"],
        _doc("the decision expected; `none` when no rule may match"),
    ]
    args: Annotated[dict[str, Any], _doc("the call's arguments")] = {}
    command: Annotated[
        str | None, _doc("shorthand for `args = { command = ... }` of a shell tool")
    ] = None


class PermissionsConfig(_Table):
    """Permission rules in Claude Code's syntax (`Bash(git push:*)`, `Read(./.env)`,
    `WebFetch(domain:example.com)`, `mcp__github__create_issue`), judged on every simple
    command the shell model finds; deny beats ask beats allow."""

    enabled: Annotated[bool, _doc("register the rules")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    allow: Annotated[list[str], _doc("rules that let a call through without asking")] = []
    ask: Annotated[list[str], _doc("rules that send a call to the approval path")] = []
    deny: Annotated[list[str], _doc("rules that block a call")] = []
    sources: Annotated[
        list[str],
        _doc(
            "more rule files, relative to this file: Claude Code settings (`.json`), "
            "Codex `.rules` files, Gemini CLI policies (`.toml`)"
        ),
    ] = []
    tests: list[PermissionTestConfig] = []  # inline policy tests: [[permissions.tests]]


class ApprovalsConfig(_Table):
    """``[approvals]``: an ask becomes an approval request in a store, decided by a person
    in any process (approve, deny, edit then approve, standing grants); see
    docs/approvals.md."""

    enabled: Annotated[bool, _doc("answer asks from the store")] = True
    store: Annotated[
        Literal["memory", "redis"],
        _doc("`memory` (this process) or `redis` (a fleet: needs the `redis` extra)"),
    ] = "memory"
    url: Annotated[str, _doc('the Redis server of `store = "redis"`')] = "redis://127.0.0.1:6379/0"
    prefix: Annotated[str, _doc("the prefix of the store's Redis keys", min_length=1)] = (
        "interpose:approvals"
    )
    timeout_ms: Annotated[
        Annotated[int, msgspec.Meta(gt=0)] | None,
        _doc(
            "how long a request waits for a decision, then it expires (a deny); unset: "
            "`hooks.defaults.approval_timeout_ms`, which it may not exceed"
        ),
    ] = None


class SandboxConfig(_Table):
    """``[sandbox]``: run the `exec` tool (and `interpose mcp-proxy --sandbox`'s servers)
    in bubblewrap (docs/sandbox.md).  Paths: `~` is the home; relative ones are under
    `project`."""

    enabled: Annotated[bool, _doc("run `exec` calls that have no `call=` in the sandbox")] = True
    required: Annotated[
        bool, _doc("refuse to run a command when the sandbox cannot be applied here")
    ] = True
    project: Annotated[
        str, _doc("the commands' working directory; relative: to this file's directory")
    ] = "."
    writable: Annotated[list[str], _doc("writable roots (`.` is the project)")] = msgspec.field(
        default_factory=lambda: ["."]
    )
    readable: Annotated[
        list[str], _doc("paths under `/tmp` shown read-only despite the private `/tmp`")
    ] = []
    hidden: Annotated[
        list[str], _doc("paths hidden besides the defaults (`~/.ssh`, cloud credentials...)")
    ] = []
    network: Annotated[
        str | list[str],
        _doc(
            "`none`, `loopback` (the host's localhost through the proxy), or a list of "
            "`host`, `host:port` and `*.suffix` entries the filtering proxy lets through"
        ),
    ] = "none"
    timeout_ms: Annotated[int, _doc("how long a command may run; 0: no limit", ge=0)] = 600_000
    memory_mb: Annotated[int, _doc("address space per process; 0: no limit", ge=0)] = 0
    processes: Annotated[int, _doc("processes at once; 0: no limit", ge=0)] = 512


FlowActionName: TypeAlias = Literal["ask", "block", "allow"]
FlagModeName: TypeAlias = Literal["instructed", "untrusted"]
SourceKindName: TypeAlias = Literal["web", "message", "file", "mcp", "exec"]


class FlowsConfig(_Table):
    """``[flows]``: what the agent read decides what it may send (docs/flows.md).  Tools
    that read untrusted content label their session; a sink call (a tool that sends,
    pays, changes data, writes outside the project, runs a networked command) is then
    judged by rule; values first seen in untrusted results, and secrets, are flagged."""

    enabled: Annotated[bool, _doc("register the flow rules")] = True
    mode: Annotated[ModeName, _doc(_MODE_DOC)] = "enforce"
    sink: Annotated[
        FlowActionName,
        _doc("a sink call after untrusted input the user did not ask for: `ask`, `block`, `allow`"),
    ] = "ask"
    requested: Annotated[
        FlowActionName,
        _doc("a sink call after untrusted input whose action the user's messages asked for"),
    ] = "allow"
    sinks: Annotated[
        dict[str, FlowActionName],
        _doc("per tool (or `mcp__<server>__` prefix): its decision instead of `sink`"),
    ] = {}
    flag: Annotated[
        FlagModeName,
        _doc(
            "which values are flagged: `instructed` (named by an instruction inside an "
            "untrusted result) or `untrusted` (any value first seen in one)"
        ),
    ] = "instructed"
    on_flagged: Annotated[
        FlowActionName,
        _doc("a sink call (or a URL request) carrying a flagged value"),
    ] = "block"
    on_secret: Annotated[
        FlowActionName, _doc("a sink call carrying a secret (a value of an `.env` file read)")
    ] = "block"
    detect_secrets: Annotated[
        bool,
        _doc("also find secrets by their shape (interpose.secrets.scan) in sink arguments"),
    ] = True
    sources: Annotated[
        list[str], _doc("tools (or `mcp__<server>__` prefixes) whose results are untrusted")
    ] = []
    trusted: Annotated[list[str], _doc("tools whose results are trusted whatever they do")] = []
    trusted_servers: Annotated[
        list[str], _doc("MCP servers whose results are trusted and annotations believed")
    ] = []
    source_kinds: Annotated[
        list[SourceKindName],
        _doc("which kinds of tool are untrusted sources: web, message, file, mcp, exec"),
    ] = msgspec.field(default_factory=lambda: ["web", "message", "file", "mcp", "exec"])
    all_results_untrusted: Annotated[
        bool, _doc("every result not of a `trusted` tool is untrusted")
    ] = False
    project: Annotated[
        str, _doc("the project: files inside are not sources or sinks; relative: to this file")
    ] = "."
    min_length: Annotated[
        int, _doc("the shortest string that counts as a value (numbers: 3 digits)", ge=1)
    ] = 4
    max_sessions: Annotated[int, _doc("sessions whose labels are kept", ge=1)] = 4096


class Config(_Table, dict=True):
    """A whole config file.

    A new section of the file is a field here, with a struct of its own above.
    """

    hooks: HooksConfig = msgspec.field(default_factory=HooksConfig)
    observers: ObserversConfig = msgspec.field(default_factory=ObserversConfig)
    tracing: TracingConfig = msgspec.field(default_factory=TracingConfig)
    plugins: dict[str, dict[str, Any]] = {}
    mcp: McpConfig = msgspec.field(default_factory=McpConfig)
    permissions: PermissionsConfig = msgspec.field(default_factory=PermissionsConfig)
    approvals: ApprovalsConfig | None = None
    sandbox: SandboxConfig | None = None
    flows: FlowsConfig | None = None
    # What the loader left out of a PicoClaw-shaped file, one line each, shown by
    # ``interpose check`` and logged when the pipeline is built (see
    # ``interpose.external.process.picoclaw``).  Not a
    # key of the file: a plain attribute (``dict=True`` lets ``decode_config`` set it on
    # the instance), so msgspec neither decodes nor encodes it and a file that names it
    # gets the unknown-key error.  The class attribute is the default; the annotation,
    # for type checkers only, is not a struct field.
    if TYPE_CHECKING:
        _notes: tuple[str, ...] = ()
    else:
        _notes = ()


def fields_of(cls: type[msgspec.Struct]) -> list[msgspec.inspect.Field]:
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    return list(info.fields)


def json_schema() -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the config file, for editors and validators
    (``interpose schema`` prints it): msgspec's schema of ``Config``, each table's
    description in Markdown."""
    schema = msgspec.json.schema(Config)
    for table in schema["$defs"].values():
        if "description" in table:
            table["description"] = inspect.cleandoc(table["description"]).replace("``", "`")
    schema["$defs"]["Config"].pop("description", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "interpose config file",
        "description": "interpose.toml (or a .json file of the same shape): the guards, "
        "policies, hooks, observers, tracing, plugins and MCP servers of a pipeline. "
        "Reference: docs/config.md.",
        **schema,
    }
