"""The config file: ``interpose.toml`` (or the same shape as JSON), its schema and loader.

A file is read in three steps, each with errors that name the file, the field and what
was expected (``interpose.toml: hooks.processes.gate.priority: expected int, got str``):

1. parse: TOML (``tomllib``; ``tomli`` before Python 3.11) or JSON, by the extension;
2. decode: ``msgspec.convert`` into the ``Config`` structs below; unknown keys, wrong
   types, bad enum values and out-of-range numbers are errors;
3. check: everything that can be checked without starting anything (commands exist,
   regexes compile, tool matchers match a tool, plugins are installed) is checked by
   building the stack once, without opening files or exporters, into a scratch pipeline.

``build_pipeline`` then builds the real ``Pipeline``; ``Pipeline.from_config(path)`` does
both.  Relative paths (commands, ``cwd``, the audit log) resolve against the directory of
the config file.  Durations in the file are integer milliseconds (``*_ms``).

The schema is documented in docs/config.md; its reference section is generated from the
structs by ``reference()`` (a test keeps the page up to date).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import logging
import os
import re
import shutil
import sys
import types
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn, TypeAlias, Union, get_args
from typing import get_origin as _origin

import msgspec

from .adapters.mcp.config import McpConfig, mcp_namespace
from .bus.events import EVENT_KINDS, EventKind
from .errors import ConfigError, RegistrationError
from .pipeline.tools import TOOL_GROUPS, compile_tool_matcher, in_namespace, normalize_tool_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found]

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from .middleware.claude_code import ToolMapping
    from .pipeline.pipeline import Pipeline
    from .pipeline.tracing import TracingLevel

__all__ = [
    "AuditConfig",
    "BuiltinsConfig",
    "Built",
    "ClaudeToolConfig",
    "CommandHookConfig",
    "CommandSafetyGuardConfig",
    "Config",
    "ConfigFileError",
    "DefaultsConfig",
    "HooksConfig",
    "LoggingConfig",
    "LoopGuardConfig",
    "McpConfig",
    "MetricsConfig",
    "ObserversConfig",
    "OTLPConfig",
    "OutputCapConfig",
    "ProcessHookConfig",
    "RateLimitConfig",
    "RedactSecretsConfig",
    "ResultCacheConfig",
    "SecurityAuditConfig",
    "ToolFilterConfig",
    "TracingConfig",
    "build_pipeline",
    "decode_config",
    "describe",
    "load_config",
    "parse_config",
    "reference",
]


_log = logging.getLogger("interpose.config")


class ConfigFileError(ConfigError):
    """A config file is invalid.

    The message is ``<file>: <field>: <problem>`` (``<file>: <problem>`` when the problem
    is the whole file, e.g. a syntax error).

    Attributes:
        file: the file, as it was given.
        field: the dotted path of the bad field (``hooks.commands[0].event``), or "".
        problem: what is wrong, and what was expected.
    """

    def __init__(self, file: str, field: str, problem: str) -> None:
        super().__init__(f"{file}: {field}: {problem}" if field else f"{file}: {problem}")
        self.file = file
        self.field = field
        self.problem = problem


# -- the schema ---------------------------------------------------------------------------
#
# Every field carries its documentation (Meta.description): docs/config.md's reference
# is generated from it.


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


class SecurityAuditConfig(_Table):
    """``[hooks.builtins.security-audit]``: the file-path guard (on by default)."""

    enabled: Annotated[bool, _doc("register the guard")] = True
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
    patterns: Annotated[
        list[str],
        _doc("extra regexes to mask (a group named `secret` limits the mask to it)"),
    ] = []
    keys: Annotated[list[str], _doc("extra key names whose values are always masked")] = []
    tools: Annotated[ToolsField, _doc(_TOOLS_DOC)] = None
    priority: Annotated[
        int | None,
        _doc("its place among the tool.after interceptors; unset: 100 (see `priority_order`)"),
    ] = None


class LoopGuardConfig(_Table):
    """``[hooks.builtins.loop-guard]``: block a call repeated with the same arguments."""

    enabled: Annotated[bool, _doc("register the loop guard")] = True
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


class AuditConfig(_Table):
    """``[observers.audit]``: every event as a JSON line in a size-rotated file."""

    path: Annotated[str, _doc("the file; relative: to the config file's directory", min_length=1)]
    enabled: Annotated[bool, _doc("attach the audit log")] = True
    max_bytes: Annotated[int, _doc("rotate when the file would grow past this; 0: never", ge=0)] = (
        64 * 1024 * 1024
    )
    backups: Annotated[int, _doc("how many rotated files are kept", ge=1)] = 5
    events: Annotated[list[EventKind] | None, _doc("the kinds to record; unset: all")] = None


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


class ObserversConfig(_Table):
    """``[observers]``: what listens on the bus (each is on when its table is present)."""

    audit: AuditConfig | None = None
    logging: LoggingConfig | None = None
    metrics: MetricsConfig | None = None
    otlp: OTLPConfig | None = None


class TracingConfig(_Table):
    """``[tracing]``: spans of turns, LLM calls, tool calls and interceptors."""

    level: Annotated[
        Literal["off", "tool", "interceptor"],
        _doc("`off`, `tool` (turn, LLM and tool spans) or `interceptor` (and one per interceptor)"),
    ] = "tool"
    content: Annotated[bool, _doc("record tool arguments and results in spans, redacted")] = False


class Config(_Table, dict=True):
    """A whole config file.

    (``dict=True``: the loader notes what it left out of a PicoClaw-shaped file on the
    instance, as ``_notes``, for ``interpose check``; see ``_picoclaw``.)
    """

    hooks: HooksConfig = msgspec.field(default_factory=HooksConfig)
    observers: ObserversConfig = msgspec.field(default_factory=ObserversConfig)
    tracing: TracingConfig = msgspec.field(default_factory=TracingConfig)
    plugins: dict[str, dict[str, Any]] = {}
    mcp: McpConfig = msgspec.field(default_factory=McpConfig)


# -- reading ------------------------------------------------------------------------------


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read, decode and check a config file (``.toml`` or ``.json``).

    Checking builds the stack once into a scratch pipeline, without opening the audit
    log, setting up an exporter or running plugins: so a command that does not exist, a
    regex that does not compile or a plugin that is not installed fails here.

    Raises:
        ConfigFileError: (a ``ConfigError``) the file cannot be read, does not parse,
            does not match the schema, or names something that does not exist; the
            message names the file, the field and what was expected.
    """
    file = os.fspath(path)
    config = parse_config(file)
    _Builder(config, Path(file).resolve().parent, file, dry=True, run_plugins=False).build()
    return config


def parse_config(path: str | os.PathLike[str]) -> Config:
    """Read and decode a config file, without the checks of ``load_config``.

    Raises:
        ConfigFileError: the file cannot be read, does not parse, or does not match the
            schema.
    """
    file = os.fspath(path)
    suffix = Path(file).suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ConfigFileError(
            file, "", f"unknown config format {suffix or '(no extension)'!r}: use .toml or .json"
        )
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(file, "", f"cannot read it: {exc}") from None
    data: Any
    if suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigFileError(file, "", f"invalid TOML: {exc}") from None
    else:
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates)
        except json.JSONDecodeError as exc:
            raise ConfigFileError(
                file, "", f"invalid JSON: {exc.msg} (at line {exc.lineno}, column {exc.colno})"
            ) from None
        except _DuplicateKey as exc:
            raise ConfigFileError(file, "", f"invalid JSON: duplicate key {exc.key!r}") from None
    if suffix == ".json":
        from .middleware.claude_code import is_claude_settings

        if is_claude_settings(data, file):
            # a Claude Code settings file: its hooks, behind interpose's default stack
            # (named relative to its own directory, which relative paths resolve against)
            return Config(hooks=HooksConfig(claude_settings=[Path(file).name]))
    return decode_config(data, file=file, table="object" if suffix == ".json" else "table")


def decode_config(data: Any, *, file: str = "<config>", table: str = "table") -> Config:
    """Decode parsed TOML or JSON (dicts and lists) into a ``Config``.

    Raises:
        ConfigFileError: ``data`` does not match the schema.
    """
    data, notes, moved = _picoclaw(data, file, json=table == "object")
    try:
        config = msgspec.convert(data, Config)
    except msgspec.ValidationError as exc:
        field, problem = _explain(str(exc), data, table)
        for flat, nested in moved.items():  # a key that came from a builtin's `config`
            if field == flat or field.startswith((flat + ".", flat + "[")):
                field = nested + field[len(flat) :]
                break
        raise ConfigFileError(file, field, problem) from None
    config._notes = notes  # type: ignore[attr-defined]
    return config


# -- PicoClaw's files ---------------------------------------------------------------------

_PICOCLAW_PROCESS_KEYS = ("transport", "dir", "trusted")


def _picoclaw_shaped(data: dict[str, Any]) -> bool:
    """Whether parsed data is a PicoClaw config: a process hook with one of PicoClaw's
    own keys (``transport``, ``dir``, ``trusted``), or a builtin with a ``config``."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    processes = hooks.get("processes")
    if isinstance(processes, dict) and any(
        isinstance(table, dict) and any(key in table for key in _PICOCLAW_PROCESS_KEYS)
        for table in processes.values()
    ):
        return True
    builtins = hooks.get("builtins")
    return isinstance(builtins, dict) and any(
        isinstance(table, dict) and "config" in table for table in builtins.values()
    )


def _picoclaw(data: Any, file: str, *, json: bool) -> tuple[Any, list[str], dict[str, str]]:
    """Parsed data with PicoClaw's forms rewritten to interpose's; the notes on what
    was left out, and {flat field: the field it came from} for error messages.

    - ``hooks.builtins.<name>.config`` (PicoClaw's options of a builtin) is merged into
      its table;
    - a builtin interpose does not have is left out with a note when it is not enabled
      (PicoClaw does not look it up either), an error when it is;
    - in a PicoClaw-shaped file (JSON only: PicoClaw's config is ``config.json``, and an
      ``interpose.toml`` that uses ``dir`` or ``transport`` stays interpose's),
      ``hooks.priority_order`` defaults to ``picoclaw`` and top-level sections other than
      interpose's (``agents``, ``channels``, ...) are left out with a note.

    Raises:
        ConfigFileError: an enabled builtin interpose does not have; a key given both in
            a builtin's ``config`` and in its table.
    """
    notes: list[str] = []
    moved: dict[str, str] = {}
    if not isinstance(data, dict):
        return data, notes, moved
    data = dict(data)
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        hooks = data["hooks"] = dict(hooks)
        if json and _picoclaw_shaped(data):
            hooks.setdefault("priority_order", "picoclaw")
            _picoclaw_processes(hooks, notes)
            defaults = hooks.get("defaults")
            if isinstance(defaults, dict):
                # PicoClaw reads a timeout of 0 (Go's zero value) as "the default"
                hooks["defaults"] = {
                    key: value
                    for key, value in defaults.items()
                    if not (key.endswith("_timeout_ms") and value == 0 and value is not False)
                }
            foreign = [key for key in data if key not in Config.__struct_fields__]
            for key in foreign:
                del data[key]
            if foreign:
                notes.append(
                    "PicoClaw settings interpose has no use for were left out: "
                    + ", ".join(foreign)
                )
        builtins = hooks.get("builtins")
        if isinstance(builtins, dict):
            hooks["builtins"] = _picoclaw_builtins(
                builtins, file, notes, moved, shaped=hooks.get("priority_order") == "picoclaw"
            )
    return data, notes, moved


def _picoclaw_processes(hooks: dict[str, Any], notes: list[str]) -> None:
    """PicoClaw starts a process hook only when it says ``"enabled": true`` and so does
    ``hooks`` (Go's zero value is false); interpose's default is on.  In a PicoClaw
    file, the hooks PicoClaw would not start are not started here either."""
    processes = hooks.get("processes")
    if not isinstance(processes, dict):
        return
    hooks["processes"] = processes = dict(processes)
    for name, table in processes.items():
        if not isinstance(table, dict) or ("enabled" in table and table["enabled"] is not True):
            continue  # a wrong type is the schema's to report; false stays false
        if table.get("enabled") is not True or hooks.get("enabled") is not True:
            why = "it" if table.get("enabled") is not True else "hooks"
            processes[name] = {**table, "enabled": False}
            notes.append(
                f"hooks.processes.{_key(name)}: not started: PicoClaw starts a process hook "
                f'only when it and hooks say "enabled": true ({why} does not)'
            )


def _picoclaw_builtins(
    builtins: dict[str, Any],
    file: str,
    notes: list[str],
    moved: dict[str, str],
    *,
    shaped: bool,
) -> dict[str, Any]:
    """``hooks.builtins`` with each ``config`` merged; in a PicoClaw-ordered file, the
    builtins interpose does not have are left out when disabled, an error when enabled
    (elsewhere the schema reports them: a misspelt name must not pass)."""
    known = [field.encode_name for field in _fields_of(BuiltinsConfig)]
    result: dict[str, Any] = {}
    for name, table in builtins.items():
        where = f"hooks.builtins.{_key(name)}"
        if name not in known and shaped:
            if isinstance(table, dict) and table.get("enabled") is not True:
                notes.append(f"{where}: not an interpose builtin; left out (it is not enabled)")
                continue
            raise ConfigFileError(
                file,
                where,
                "not an interpose builtin (a PicoClaw builtin is Go code compiled into "
                "PicoClaw: run it as a process hook or a plugin instead, or disable it); "
                f"interpose's builtins: {', '.join(known)}",
            )
        if isinstance(table, dict) and isinstance(table.get("config"), dict):
            table = dict(table)
            options = table.pop("config")
            for key, value in options.items():
                if key in table:
                    raise ConfigFileError(
                        file,
                        f"{where}.config.{_key(str(key))}",
                        f"also given as {where}.{_key(str(key))}: give it once",
                    )
                table[key] = value
                moved[f"{where}.{_key(str(key))}"] = f"{where}.config.{_key(str(key))}"
        result[name] = table
    return result


def _fields_of(cls: type[msgspec.Struct]) -> list[msgspec.inspect.Field]:
    info = msgspec.inspect.type_info(cls)
    assert isinstance(info, msgspec.inspect.StructType)
    return list(info.fields)


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


# -- explaining msgspec's errors ----------------------------------------------------------

_AT = re.compile(r"^(?P<message>.*?) - at `(?P<path>[^`]*)`(?: in `(?P<container>[^`]*)`)?$", re.S)
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[\.\.\.\]")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_MISSING: Any = object()


class _Step:
    """One step of a field path: a struct field, a list index or a dict key."""

    __slots__ = ("kind", "name")

    def __init__(self, kind: Literal["field", "index", "key"], name: str | int) -> None:
        self.kind = kind
        self.name = name


def _explain(error: str, data: Any, table: str) -> tuple[str, str]:
    """(field path, problem) for a msgspec validation error about ``data``."""
    match = _AT.match(error)
    # msgspec locates nothing at the top level itself ("$" is implied)
    message = error if match is None else match.group("message")
    path = "$" if match is None else match.group("path")
    raw = match.group("container") if match is not None and path == "key" else path
    steps, typ, value = _locate(raw, data)
    if path == "key":
        key = _failing_key(value, _key_type(typ))
        if key is not None:
            steps.append(_Step("key", key))
        return _render(steps), _problem(message, None, key, table, what="key")
    unknown = re.fullmatch(r"Object contains unknown field `(.*)`", message)
    if unknown is not None:
        steps.append(_Step("field", unknown.group(1)))
        known = _field_names(typ)
        return _render(steps), "unknown field" + (
            f"; expected one of: {', '.join(known)}" if known else ""
        )
    missing = re.fullmatch(r"Object missing required field `(.*)`", message)
    if missing is not None:
        steps.append(_Step("field", missing.group(1)))
        return _render(steps), "required field is missing"
    if match is None:  # the file as a whole is of the wrong type (a list, say)
        return "", _problem(message, None, _MISSING, table)
    return _render(steps), _problem(message, typ, value, table)


def _locate(raw: str, data: Any) -> tuple[list[_Step], Any, Any]:
    """Walk ``data`` and the ``Config`` types along msgspec's path (``$.a[0][...].b``),
    finding the dict keys msgspec leaves out (``[...]``); returns the steps, the type and
    the value at the end (``_MISSING`` where the data has none)."""
    steps: list[_Step] = []
    typ: Any = Config
    value: Any = data
    for match in _SEGMENT.finditer(raw.removeprefix("$")):
        name, index = match.group(1), match.group(2)
        typ = _concrete(typ, value)
        if name is not None:
            field = next(
                (f for f in _struct_fields(typ) if f.encode_name == name),
                None,
            )
            steps.append(_Step("field", name))
            typ = field.type if field is not None else Any
            value = value.get(name, _MISSING) if isinstance(value, dict) else _MISSING
        elif index is not None:
            steps.append(_Step("index", int(index)))
            args = get_args(typ)
            typ = args[0] if args else Any
            value = value[int(index)] if isinstance(value, list) else _MISSING
        else:
            args = get_args(typ)
            value_type = args[1] if len(args) == 2 else Any
            key = _failing_value(value, value_type)
            if key is None:
                steps.append(_Step("key", "..."))
                value = _MISSING
            else:
                steps.append(_Step("key", key))
                value = value[key]
            typ = value_type
    return steps, _concrete(typ, value), value


def _strip(typ: Any) -> Any:
    while _origin(typ) is Annotated:
        typ = get_args(typ)[0]
    return typ


def _concrete(typ: Any, value: Any) -> Any:
    """``typ`` without Annotated, and of a union the member ``value`` was meant as."""
    typ = _strip(typ)
    args = get_args(typ)
    if _origin(typ) is Union or isinstance(typ, types.UnionType):
        members = [_strip(a) for a in args if a is not type(None)]
        for member in members:
            if isinstance(value, dict) and (_is_struct(member) or _origin(member) is dict):
                return member
            if isinstance(value, list) and _origin(member) is list:
                return member
        return members[0] if len(members) == 1 else typ
    return typ


def _is_struct(typ: Any) -> bool:
    return isinstance(typ, type) and issubclass(typ, msgspec.Struct)


def _struct_fields(typ: Any) -> tuple[msgspec.structs.FieldInfo, ...]:
    return msgspec.structs.fields(typ) if _is_struct(typ) else ()


def _field_names(typ: Any) -> list[str]:
    return [f.encode_name for f in _struct_fields(typ)]


def _key_type(typ: Any) -> Any:
    args = get_args(typ)
    return args[0] if len(args) == 2 else Any


def _failing_value(value: Any, value_type: Any) -> str | None:
    """The first key of the dict ``value`` whose value does not convert (msgspec reports
    the first failure, in order)."""
    if not isinstance(value, dict):
        return None
    for key, item in value.items():
        try:
            msgspec.convert(item, value_type)
        except msgspec.ValidationError:
            return str(key)
    return None


def _failing_key(value: Any, key_type: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    for key in value:
        try:
            msgspec.convert(key, key_type)
        except msgspec.ValidationError:
            return str(key)
    return None


def _render(steps: Sequence[_Step]) -> str:
    """``hooks.processes.gate.priority``, ``hooks.commands[0].event``, ``plugins."a b"``."""
    out = ""
    for step in steps:
        if step.kind == "index":
            out += f"[{step.name}]"
        elif step.kind == "key" and not _BARE_KEY.fullmatch(str(step.name)):
            out += "." + json.dumps(step.name)
        else:
            out += f".{step.name}" if out else str(step.name)
    return out


def _problem(message: str, typ: Any, value: Any, table: str, *, what: str = "value") -> str:
    """msgspec's message as ``expected <what>, got <what>``."""
    words = {"object": table}  # TOML says table where msgspec (and JSON) say object

    def word(match: re.Match[str]) -> str:
        kinds = [w.strip() for w in match.group(1).split("|")]
        if table == "table":  # TOML has no null: a key is left out instead
            kinds = [k for k in kinds if k != "null"] or kinds
        return " | ".join(words.get(k, k) for k in kinds)

    enum = re.fullmatch(r"Invalid enum value (.*)", message)
    if enum is not None:
        choices = _literal_values(typ)
        if choices:
            return f"expected one of {', '.join(map(repr, choices))}, got {enum.group(1)}"
        return f"invalid value {enum.group(1)}"
    text = re.sub(r"`([^`]*)`", word, message)
    text = text[:1].lower() + text[1:]
    if text.startswith("expected ") and ", got " not in text and value is not _MISSING:
        text += f", got {_show(value)}"
    if what == "key" and value is not _MISSING and value is not None:
        text = f"key {_show(value)}: {text}"
    return text


def _literal_values(typ: Any) -> tuple[Any, ...]:
    typ = _strip(typ)
    if _origin(typ) is Literal:
        return get_args(typ)
    for member in get_args(typ):  # e.g. Literal[...] | None
        values = _literal_values(member)
        if values:
            return values
    return ()


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# -- building -----------------------------------------------------------------------------


def build_pipeline(
    config: Config,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    source: str = "<config>",
    tracing: TracingLevel | None = None,
    tracer_provider: TracerProvider | None = None,
) -> Pipeline:
    """Build the pipeline a config describes.

    Order of registration (it decides the order of interceptors with equal priority):
    the guards, the policies, the process hooks and the command hooks in file order,
    the hooks of the ``claude_settings`` files, then the observers, then the plugins in
    file order.  When the config has observers
    or process hooks, enter the pipeline (``async with pipe:``) before calling it.

    Args:
        config: a decoded config (``load_config``, or ``Config(...)`` built in code).
        base_dir: what relative commands and paths resolve against; default the current
            directory.
        source: the file name errors are reported under.
        tracing: overrides ``[tracing] level``.
        tracer_provider: trace to this provider (overrides ``[observers.otlp]``).

    Raises:
        ConfigFileError: a value is rejected (a command that does not exist, a regex that
            does not compile, a tool matcher that matches no tool, a plugin that is not
            installed or fails); the message names the field.
    """
    root = Path.cwd() if base_dir is None else Path(base_dir).resolve()
    builder = _Builder(
        config,
        root,
        source,
        dry=False,
        run_plugins=True,
        tracing=tracing,
        tracer_provider=tracer_provider,
    )
    built = builder.build()
    for note in built.notes:
        _log.warning("%s: %s", source, note)
    return built.pipeline


@dataclasses.dataclass
class Built:
    """A pipeline built from a config, and what ``interpose check`` shows about it.

    Attributes:
        pipeline: the pipeline.
        matchers: registration id -> a readable description of its tool filter, for
            registrations whose matcher the config spelled differently (command hooks).
        exporter: where spans are exported ("" when nowhere).
        trace_content: whether spans record tool arguments and results.
        processes: process hook name -> its command line.
        priority_order: "interpose" or "picoclaw" (``hooks.priority_order``, resolved).
        order: under the PicoClaw order, one line per builtin and process hook, in
            PicoClaw's order, with its PicoClaw priority and the interpose priority it
            got; empty otherwise.
        notes: what the config asks for that is not done or has no effect (unsupported
            hooks of a Claude Code settings file, a PicoClaw event interpose does not
            have, a disabled PicoClaw builtin, PicoClaw settings left out), one line each;
            they are logged as warnings (logger ``interpose.config``) when the pipeline
            is built.
    """

    pipeline: Pipeline
    matchers: dict[str, str] = dataclasses.field(default_factory=dict)
    exporter: str = ""
    trace_content: bool = False
    processes: dict[str, str] = dataclasses.field(default_factory=dict)
    priority_order: str = "interpose"
    order: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)


def describe(
    config: Config,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    source: str = "<config>",
) -> Built:
    """Build the stack as ``build_pipeline`` would, plugins included, but without
    opening the audit log or setting up the exporter (their subscriptions are stand-ins
    with the same names).  For inspecting a config (``interpose check``).

    Raises:
        ConfigFileError: as ``build_pipeline``.
    """
    root = Path.cwd() if base_dir is None else Path(base_dir).resolve()
    return _Builder(config, root, source, dry=True, run_plugins=True).build()


_NAME_RULE = re.compile(r"[\w.\-]+")
#: the interpose priority of each builtin whose table leaves it unset
_BUILTIN_PRIORITY: dict[str, int] = {
    "command-safety-guard": 100,
    "security-audit": 99,
    "tool-filter": 120,
    "rate-limit": 95,
    "redact-secrets": 100,
    "loop-guard": 105,
    "result-cache": 5,
    "output-cap": 90,
}
#: the priority of the first hook under the PicoClaw order (see _Builder.rank)
_RANK_TOP = 1000
_INTERPRETER = re.compile(r"(python[0-9.]*|pypy[0-9.]*|bash|sh|zsh|dash|node|ruby|perl)")


def _seconds(ms: int) -> float:
    return ms / 1000


class _Builder:
    """Builds one pipeline from one config; every step names its field when it fails.

    ``dry``: no side effects (no file opened, no exporter); ``run_plugins``: call the
    plugins (else they are only found and loaded).
    """

    def __init__(
        self,
        config: Config,
        base_dir: Path,
        source: str,
        *,
        dry: bool,
        run_plugins: bool,
        tracing: TracingLevel | None = None,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self.config = config
        self.base_dir = base_dir
        self.source = source
        self.dry = dry
        self.run_plugins = run_plugins
        self.tracing = tracing
        self.tracer_provider = tracer_provider
        self._claude_tools: ToolMapping | None = None

    def fail(self, field: str, problem: str) -> NoReturn:
        raise ConfigFileError(self.source, field, problem)

    @contextmanager
    def at(self, field: str) -> Iterator[None]:
        """Report a rejected value (ConfigError, RegistrationError, ValueError,
        TypeError) as an error of ``field``."""
        try:
            yield
        except ConfigFileError:
            raise
        except (ConfigError, RegistrationError, ValueError, TypeError) as exc:
            self.fail(field, _tidy(str(exc)))

    # -- the whole stack ----------------------------------------------------------------

    def build(self) -> Built:
        from .pipeline.pipeline import Pipeline

        config = self.config
        defaults = config.hooks.defaults
        provider, exporter = self.tracer_provider, ""
        otlp = config.observers.otlp
        if otlp is not None and otlp.enabled:
            # a provider given by the caller wins: the export is then only described
            exported, exporter = self.otlp(otlp, describe_only=provider is not None)
            provider = provider or exported
        pipe = Pipeline(
            builtins=False,
            interceptor_timeout=_seconds(defaults.interceptor_timeout_ms),
            approval_timeout=_seconds(defaults.approval_timeout_ms),
            observer_timeout=_seconds(defaults.observer_timeout_ms),
            max_retries=defaults.max_retries,
            tracing=self.tracing or config.tracing.level,
            tracer_provider=provider,
            trace_content=config.tracing.content,
        )
        built = Built(pipe, exporter=exporter, trace_content=config.tracing.content)
        built.notes += getattr(config, "_notes", [])
        self.rank(built)
        if provider is not None and not self.dry and self.tracer_provider is None:
            pipe.add_service(_FlushSpans(provider))
        hooks = config.hooks
        self.mcp(pipe, config.mcp)
        if hooks.enabled:
            for i, tool in enumerate(hooks.tools):
                with self.at(f"hooks.tools[{i}]"):
                    pipe.register_tool(tool)
            self.guards(pipe, hooks.builtins)
            self.policies(pipe, hooks.builtins)
            for name, process in hooks.processes.items():
                if process.enabled:
                    self.process(pipe, built, name, process)
            for i, command in enumerate(hooks.commands):
                if command.enabled:
                    self.command(pipe, built, i, command)
            for i, settings in enumerate(hooks.claude_settings):
                self.claude_settings(pipe, built, f"hooks.claude_settings[{i}]", settings)
        self.observers(pipe, config.observers)
        for name, table in config.plugins.items():
            self.plugin(pipe, name, table)
        return built

    def mcp(self, pipe: Pipeline, mcp: McpConfig) -> None:
        """Check ``[mcp.servers]`` and declare each server's tool namespace, so that
        matchers may name its tools (``mcp__time__.*``) before they are listed."""
        for name, server in mcp.servers.items():
            where = f"mcp.servers.{_key(name)}"
            if (server.command is None) == (server.url is None):
                self.fail(where, "set either `command` (a stdio server) or `url`, not both")
            if server.url is not None and not server.url.startswith(("http://", "https://")):
                self.fail(
                    where + ".url", f"expected an http:// or https:// URL, got {server.url!r}"
                )
            pipe.registry.register_tool_namespace(mcp_namespace(name))

    # -- order --------------------------------------------------------------------------

    def rank(self, built: Built) -> None:
        """Under the PicoClaw order, give each enabled builtin and process hook the
        interpose priority that puts it where PicoClaw would run it: builtins (PicoClaw's
        in-process hooks) before process hooks, lower priority first, ties by name.

        A builtin whose priority the file leaves unset counts as minus its interpose
        default, so that the builtins keep their usual order among themselves.  The
        ranked hooks get ``_RANK_TOP``, ``_RANK_TOP - 1``, ...: they run before command
        hooks and plugins of ordinary priorities.
        """
        hooks = self.config.hooks
        order = hooks.priority_order or "interpose"
        built.priority_order = order
        self.ranks: dict[tuple[str, str], int] = {}
        if order != "picoclaw" or not hooks.enabled:
            return
        entries: list[tuple[int, int, str, bool]] = []
        for field in _fields_of(BuiltinsConfig):
            table = getattr(hooks.builtins, field.name)
            if table is not None and table.enabled:
                name = field.encode_name
                given = table.priority
                unset = given is None
                priority = -_BUILTIN_PRIORITY[name] if given is None else given
                entries.append((0, priority, name, unset))
        for name, process in hooks.processes.items():
            if process.enabled:
                entries.append((1, process.priority, name, False))
        entries.sort()
        for i, (source, priority, name, unset) in enumerate(entries):
            kind = "builtin" if source == 0 else "process"
            self.ranks[(kind, name)] = _RANK_TOP - i
            shown = f"{priority} (unset: minus its default)" if unset else str(priority)
            built.order.append(
                f"{i + 1}. {kind} {name}: picoclaw priority {shown} -> priority {_RANK_TOP - i}"
            )

    def priority(self, kind: str, name: str, given: int | None, default: int = 0) -> int:
        """The interpose priority of a builtin or process hook (see ``rank``)."""
        ranked = self.ranks.get((kind, name))
        if ranked is not None:
            return ranked
        return default if given is None else given

    # -- builtins -------------------------------------------------------------------------

    def guards(self, pipe: Pipeline, builtins: BuiltinsConfig) -> None:
        from .middleware.builtins import builtin_interceptors

        safety, audit = builtins.command_safety_guard, builtins.security_audit
        where = "hooks.builtins."
        for name, rules in (
            ("command-safety-guard.deny", safety.deny),
            ("command-safety-guard.allow", safety.allow),
            ("security-audit.deny", audit.deny),
            ("security-audit.allow", audit.allow),
        ):
            self.regexes(where + name, rules)
        regs = builtin_interceptors(
            command_deny=safety.deny,
            command_allow=safety.allow,
            path_deny=audit.deny,
            path_allow=audit.allow,
        )
        guards = (
            (
                safety.enabled,
                self.priority(
                    "builtin",
                    "command-safety-guard",
                    safety.priority,
                    _BUILTIN_PRIORITY["command-safety-guard"],
                ),
                "command-safety-guard",
            ),
            (
                audit.enabled,
                self.priority(
                    "builtin", "security-audit", audit.priority, _BUILTIN_PRIORITY["security-audit"]
                ),
                "security-audit",
            ),
        )
        for reg, (enabled, priority, key) in zip(regs, guards, strict=True):
            if enabled:
                with self.at(where + key):
                    pipe.registry.add(dataclasses.replace(reg, priority=priority))

    def policies(self, pipe: Pipeline, builtins: BuiltinsConfig) -> None:
        from .middleware.builtins import (
            LoopGuard,
            OutputCap,
            Policy,
            RateLimit,
            RedactSecrets,
            ResultCache,
            ToolFilter,
        )
        from .pipeline.redaction import Redactor

        where = "hooks.builtins."
        policy: Policy
        if builtins.tool_filter is not None and builtins.tool_filter.enabled:
            table = builtins.tool_filter
            allow = (
                None
                if table.allow is None
                else self.rules(where + "tool-filter.allow", table.allow, pipe)
            )
            deny = self.rules(where + "tool-filter.deny", table.deny, pipe)
            with self.at(where + "tool-filter"):
                policy = ToolFilter(
                    allow=allow,
                    deny=deny,
                    priority=self.priority(
                        "builtin", "tool-filter", table.priority, _BUILTIN_PRIORITY["tool-filter"]
                    ),
                )
                policy.install(pipe)
        if builtins.loop_guard is not None and builtins.loop_guard.enabled:
            guard = builtins.loop_guard
            tools = self.matcher(where + "loop-guard.tools", guard.tools, pipe)
            with self.at(where + "loop-guard"):
                LoopGuard(
                    guard.max_repeats,
                    tools=tools,
                    max_turns=guard.max_turns,
                    priority=self.priority(
                        "builtin", "loop-guard", guard.priority, _BUILTIN_PRIORITY["loop-guard"]
                    ),
                ).install(pipe)
        if builtins.rate_limit is not None and builtins.rate_limit.enabled:
            rate = builtins.rate_limit
            tools = self.matcher(where + "rate-limit.tools", rate.tools, pipe)
            with self.at(where + "rate-limit"):
                RateLimit(
                    rate.rate,
                    _seconds(rate.per_ms),
                    burst=rate.burst,
                    tools=tools,
                    max_buckets=rate.max_buckets,
                    priority=self.priority(
                        "builtin", "rate-limit", rate.priority, _BUILTIN_PRIORITY["rate-limit"]
                    ),
                ).install(pipe)
        if builtins.redact_secrets is not None and builtins.redact_secrets.enabled:
            redact = builtins.redact_secrets
            self.regexes(where + "redact-secrets.patterns", redact.patterns)
            tools = self.matcher(where + "redact-secrets.tools", redact.tools, pipe)
            with self.at(where + "redact-secrets"):
                RedactSecrets(
                    Redactor(redact.patterns, keys=redact.keys),
                    tools=tools,
                    priority=self.priority(
                        "builtin",
                        "redact-secrets",
                        redact.priority,
                        _BUILTIN_PRIORITY["redact-secrets"],
                    ),
                ).install(pipe)
        if builtins.result_cache is not None and builtins.result_cache.enabled:
            cache = builtins.result_cache
            cached = self.matcher(where + "result-cache.tools", cache.tools, pipe)
            invalidate = (
                self.matcher(where + "result-cache.invalidate_on", cache.invalidate_on, pipe)
                if cache.invalidate_on
                else None
            )
            with self.at(where + "result-cache"):
                ResultCache(
                    _seconds(cache.ttl_ms),
                    tools=cached if cached is not None else (),
                    invalidate_on=invalidate,
                    scope=cache.scope,
                    max_entries=cache.max_entries,
                    priority=self.priority(
                        "builtin", "result-cache", cache.priority, _BUILTIN_PRIORITY["result-cache"]
                    ),
                ).install(pipe)
        if builtins.output_cap is not None and builtins.output_cap.enabled:
            cap = builtins.output_cap
            tools = self.matcher(where + "output-cap.tools", cap.tools, pipe)
            with self.at(where + "output-cap"):
                OutputCap(
                    cap.max_chars,
                    marker=cap.marker,
                    strings_only=cap.strings_only,
                    tools=tools,
                    priority=self.priority(
                        "builtin", "output-cap", cap.priority, _BUILTIN_PRIORITY["output-cap"]
                    ),
                ).install(pipe)

    # -- out-of-process hooks -------------------------------------------------------------

    def process(self, pipe: Pipeline, built: Built, name: str, table: ProcessHookConfig) -> None:
        from .middleware.picoclaw import resolve_observe
        from .middleware.process import ProcessHook

        where = f"hooks.processes.{_key(name)}"
        if table.dir is not None and table.cwd is not None:
            self.fail(where + ".dir", "give dir (PicoClaw's name) or cwd, not both")
        if table.dir is not None:
            cwd = self.directory(where + ".dir", table.dir)
        else:
            cwd = self.directory(where + ".cwd", table.cwd)
        for i, kind in enumerate(table.observe):
            with self.at(f"{where}.observe[{i}]"):
                _, never = resolve_observe([kind], f"process hook {name!r}")
            if never:
                built.notes.append(
                    f"{where}.observe[{i}]: PicoClaw's {kind!r} has no interpose "
                    "counterpart: it is never sent"
                )
        self.environment(where + ".env", table.env)
        with self.at(where + ".command"):
            self.program(table.command, cwd, table.env)
        tools = self.matcher(where + ".tools", table.tools, pipe)
        if table.agents is not None:
            self.regexes(where + ".agents", [table.agents])
        timeout = table.timeout_ms or self.config.hooks.defaults.interceptor_timeout_ms
        with self.at(where):
            hook = ProcessHook(
                name,
                table.command,
                intercept=table.intercept,
                observe=table.observe,
                tools=tools,
                agents=table.agents,
                priority=self.priority("process", name, table.priority),
                on_error=table.on_error,
                timeout=_seconds(timeout),
                handshake_timeout=_seconds(table.handshake_timeout_ms),
                max_line=table.max_line_bytes,
                env=table.env,
                cwd=str(cwd),
                event_method=table.event_method,
                trusted=table.trusted,
            )
            hook.install(pipe)
        built.processes[name] = " ".join(table.command)

    def program(self, argv: Sequence[str], cwd: Path, env: dict[str, str]) -> None:
        """Check that the program exists, and the script when the program is an
        interpreter given a script (``python3 hooks/gate.py``).

        Raises:
            ConfigError: either does not exist.
        """
        program = argv[0]
        if os.sep in program or (os.altsep is not None and os.altsep in program):
            path = Path(os.path.normpath(cwd / os.path.expanduser(program)))
            if not path.is_file():
                raise ConfigError(f"{path} does not exist")
            if not os.access(path, os.X_OK):
                raise ConfigError(f"{path} is not executable")
        else:
            search = env.get("PATH") or os.environ.get("PATH") or os.defpath
            if shutil.which(program, path=search) is None:
                raise ConfigError(f"{program!r} not found on PATH ({search})")
        name = os.path.basename(program)
        if _INTERPRETER.fullmatch(name) and len(argv) > 1 and not argv[1].startswith("-"):
            script = Path(os.path.normpath(cwd / os.path.expanduser(argv[1])))
            if not script.is_file():
                raise ConfigError(f"{script} does not exist (the script given to {name})")

    def command(self, pipe: Pipeline, built: Built, index: int, table: CommandHookConfig) -> None:
        from .middleware.command_hooks import CommandHook

        where = f"hooks.commands[{index}]"
        cwd = self.directory(where + ".cwd", table.cwd)
        self.environment(where + ".env", table.env)
        with self.at(where + ".command"):
            # the hook checks the program; its error then belongs to this field
            CommandHook(table.command, cwd=cwd, env=table.env)
        allow = self.rules(where + ".filter.tool.allow", table.filter.tool.allow, pipe)
        deny = self.rules(where + ".filter.tool.deny", table.filter.tool.deny, pipe)
        with self.at(where):
            hook = CommandHook(
                table.command,
                event=table.event,
                allow=allow,
                deny=deny,
                timeout=_seconds(table.timeout_ms),
                on_error=table.on_error,
                priority=table.priority,
                env=table.env,
                cwd=cwd,
                id=table.id,
                dialect=table.dialect,
                tool_mapping=self.claude_tools() if table.dialect == "claude-code" else None,
            )
            reg = hook.install(pipe)
        label = []
        if table.filter.tool.allow:
            label.append("allow " + ", ".join(table.filter.tool.allow))
        if table.filter.tool.deny:
            label.append("deny " + ", ".join(table.filter.tool.deny))
        built.matchers[reg.id] = "; ".join(label)

    def claude_tools(self) -> ToolMapping:
        """The claude-code dialect's tool table, with ``[hooks.claude_tools]`` added."""
        if self._claude_tools is None:
            from .middleware.claude_code import ClaudeTool, default_tool_mapping

            mapping = default_tool_mapping()
            for name, table in self.config.hooks.claude_tools.items():
                with self.at(f"hooks.claude_tools.{_key(name)}"):
                    mapping.add(ClaudeTool(name, table.tool, table.fields))
            self._claude_tools = mapping
        return self._claude_tools

    def claude_settings(self, pipe: Pipeline, built: Built, where: str, value: str) -> None:
        """Install the hooks of a Claude Code settings file; its own errors name it."""
        from .middleware.claude_code import ClaudeSettings

        path = Path(os.path.normpath(self.base_dir / os.path.expanduser(value)))
        if not path.is_file():
            self.fail(where, f"{path} does not exist")
        settings = ClaudeSettings(path, name=value, tool_mapping=self.claude_tools())
        with self.at(where):
            regs = settings.install(pipe)
        for reg in regs:
            built.matchers[reg.id] = settings.describe(reg)
        built.notes += [f"{value}: {note}" for note in settings.notes]

    # -- observers ------------------------------------------------------------------------

    def observers(self, pipe: Pipeline, observers: ObserversConfig) -> None:
        if observers.audit is not None and observers.audit.enabled:
            audit = observers.audit
            path = Path(os.path.normpath(self.base_dir / os.path.expanduser(audit.path)))
            if not path.parent.is_dir():
                self.fail("observers.audit.path", f"{path.parent} is not a directory")
            if path.is_dir():
                self.fail("observers.audit.path", f"{path} is a directory")
            name = f"audit-log {path}"
            if self.dry:
                pipe.subscribe(_stand_in, events=audit.events, name=name)
            else:
                with self.at("observers.audit"):
                    sink = _AuditSink(path, audit.max_bytes or None, audit.backups)
                pipe.subscribe(sink, events=audit.events, overflow="block", name=name)
                pipe.add_service(sink)
        if observers.logging is not None and observers.logging.enabled:
            from .observers.logs import LoggingObserver

            table = observers.logging
            with self.at("observers.logging.level"):
                observer = LoggingObserver(table.logger, level=table.level, content=table.content)
            observer.attach(pipe, events=table.events)
        if observers.metrics is not None and observers.metrics.enabled:
            if self.dry:
                pipe.subscribe(_stand_in, name="metrics")
            else:
                from .observers.metrics import MetricsObserver

                MetricsObserver().attach(pipe)

    def otlp(self, table: OTLPConfig, *, describe_only: bool) -> tuple[TracerProvider | None, str]:
        """The exporting provider (None when dry or ``describe_only``) and a
        description of the export."""
        from .observers.otel import configure, resolve_endpoint

        with self.at("observers.otlp.endpoint"):
            url = resolve_endpoint(table.endpoint, table.protocol)
        wire = "OTLP/HTTP" if table.protocol == "http" else "OTLP/gRPC"
        described = f"{url} ({wire}, service.name={table.service_name})"
        if self.dry:
            if importlib.util.find_spec("opentelemetry.sdk") is None:
                self.fail(
                    "observers.otlp",
                    "exporting spans needs the OpenTelemetry SDK: pip install 'interpose[otlp]'",
                )
            return None, described
        if describe_only:
            return None, described
        with self.at("observers.otlp"):
            try:
                provider = configure(
                    table.endpoint,
                    protocol=table.protocol,
                    service_name=table.service_name,
                    headers=table.headers,
                    set_global=False,
                    timeout=_seconds(table.timeout_ms),
                )
            except ImportError as exc:
                raise ConfigError(str(exc)) from None
        return provider, described

    # -- plugins --------------------------------------------------------------------------

    def plugin(self, pipe: Pipeline, name: str, table: dict[str, Any]) -> None:
        from .plugins import apply_plugin, load_plugin

        where = f"plugins.{_key(name)}"
        enabled = table.get("enabled", True)
        if not isinstance(enabled, bool):
            self.fail(where + ".enabled", f"expected bool, got {type(enabled).__name__}")
        if not enabled:
            return
        with self.at(where):
            plugin = load_plugin(name)
        if self.run_plugins:
            options = {key: value for key, value in table.items() if key != "enabled"}
            with self.at(where):
                apply_plugin(name, plugin, pipe, options)

    # -- values ---------------------------------------------------------------------------

    def directory(self, field: str, value: str | None) -> Path:
        """``value`` resolved against the config's directory (the directory itself when
        unset); it must exist."""
        if value is None:
            return self.base_dir
        path = (self.base_dir / os.path.expanduser(value)).resolve()
        if not path.is_dir():
            self.fail(field, f"{path} is not a directory")
        return path

    def environment(self, field: str, env: dict[str, str]) -> None:
        for key in env:
            if not key or "=" in key or "\0" in key:
                self.fail(f"{field}.{_key(key)}", "not a valid environment variable name")

    def regexes(self, field: str, patterns: Sequence[str]) -> None:
        for i, pattern in enumerate(patterns):
            try:
                re.compile(pattern)
            except re.error as exc:
                self.fail(f"{field}[{i}]", f"invalid regex {pattern!r}: {exc}")

    def rules(
        self, field: str, items: Sequence[str], pipe: Pipeline
    ) -> list[str | re.Pattern[str]]:
        """Tool rules as the tool filter and command hooks take them: names (which must
        be known tools), ``group:*`` names (which must exist), or regexes (compiled)."""
        rules: list[str | re.Pattern[str]] = []
        known = pipe.registry.known_tools
        for i, item in enumerate(items):
            if item.startswith("group:"):
                if item not in TOOL_GROUPS:
                    self.fail(
                        f"{field}[{i}]",
                        f"unknown tool group {item!r}; groups: {', '.join(sorted(TOOL_GROUPS))}",
                    )
                rules.append(item)
            elif _NAME_RULE.fullmatch(item.strip()):
                name = normalize_tool_name(item)
                if name not in known and not in_namespace(name, pipe.registry.tool_namespaces):
                    self.fail(
                        f"{field}[{i}]",
                        f"unknown tool {item!r} (add it to hooks.tools if the application "
                        f"has it); tools: {', '.join(sorted(known))}",
                    )
                rules.append(item)
            else:
                try:
                    rules.append(re.compile(item))
                except re.error as exc:
                    self.fail(f"{field}[{i}]", f"invalid regex {item!r}: {exc}")
        return rules

    def matcher(
        self, field: str, tools: str | list[str] | None, pipe: Pipeline
    ) -> str | list[str] | None:
        """A ``tools`` value, checked as the registry will check it."""
        if tools is None:
            return None
        with self.at(field):
            compile_tool_matcher(
                tools,
                pipe.registry.known_tools,
                where=field,
                namespaces=pipe.registry.tool_namespaces,
            )
        return tools


def _key(name: str) -> str:
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


_PREFIXES = (
    re.compile(r"^registration '[^']*': "),
    re.compile(r"^process hook '[^']*': "),
    re.compile(r"^command hook '[^']*': "),
    re.compile(r"^hooks\.[\w.\[\]\"-]+: "),
)


def _tidy(message: str) -> str:
    """A component's error without the prefix that names the component: the field path
    in front of it says that already."""
    for prefix in _PREFIXES:
        message = prefix.sub("", message, count=1)
    return message


def _stand_in(event: object) -> None:
    """The observer subscribed in place of one with side effects, when describing."""


class _AuditSink:
    """The audit log of a config: subscribed once, its file open while the pipeline is
    entered (and from build time, so that a bad path fails the build)."""

    def __init__(self, path: Path, max_bytes: int | None, backups: int) -> None:
        from .observers.audit import AuditLog

        self._make: Callable[[], AuditLog] = lambda: AuditLog(
            path, max_bytes=max_bytes, backups=backups
        )
        self.log = self._make()

    def __call__(self, event: Any, /) -> None:
        self.log(event)

    async def start(self, tg: object) -> None:
        if self.log.closed:
            self.log = self._make()

    async def aclose(self) -> None:
        self.log.close()


class _FlushSpans:
    """Sends the spans still queued for export when the pipeline exits."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider

    async def start(self, tg: object) -> None:
        return None

    async def aclose(self) -> None:
        flush = getattr(self.provider, "force_flush", None)
        if flush is not None:
            import anyio.to_thread

            await anyio.to_thread.run_sync(flush)


# -- the reference ------------------------------------------------------------------------


def reference() -> str:
    """The reference of every table and key, as Markdown (docs/config.md embeds it)."""
    lines: list[str] = []
    _reference_tables(Config, "", lines, in_array=False)
    lines += [
        "### `[plugins.<name>]`",
        "",
        "A plugin, enabled by name (see Plugins below). Every key but `enabled` is the "
        "plugin's own and is passed to it.",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
        "| `enabled` | bool | `true` | load and run the plugin |",
        "",
        "An *event kind* is one of " + ", ".join(f"`{kind}`" for kind in get_args(EventKind)) + ".",
        "",
    ]
    return "\n".join(lines)


def _reference_tables(
    cls: type[msgspec.Struct], header: str, lines: list[str], *, in_array: bool
) -> None:
    rows: list[str] = []
    nested: list[tuple[type[msgspec.Struct], str, bool]] = []
    for field, spec in _fields(cls):
        struct, kind = _table_kind(field.type)
        name = field.encode_name
        if struct is not None and kind == "table" and in_array:
            rows += _flattened(struct, name)
        elif struct is not None:
            path = f"{header}.{name}" if header else name
            nested.append((struct, path + (".<name>" if kind == "dict" else ""), kind == "list"))
        else:
            rows.append(_row(name, field, spec.type))
    if header:
        lines += [f"### `{f'[[{header}]]' if in_array else f'[{header}]'}`", ""]
        doc = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
        summary = re.sub(r"^``\[[^`]*\]``:\s*", "", doc).replace("``", "`")
        lines += [summary[:1].upper() + summary[1:], ""]
        if rows:
            lines += ["| key | type | default | meaning |", "|---|---|---|---|", *rows]
        else:
            lines.append("Tables only, below.")
        lines.append("")
    for struct, path, array in nested:
        _reference_tables(struct, path, lines, in_array=array)


def _fields(
    cls: type[msgspec.Struct],
) -> Iterator[tuple[msgspec.inspect.Field, msgspec.structs.FieldInfo]]:
    """Each field as msgspec.inspect sees it, with its Python annotation."""
    info = msgspec.inspect.type_info(cls)
    if not isinstance(info, msgspec.inspect.StructType):  # pragma: no cover - never
        raise TypeError(f"{cls!r} is not a struct")
    yield from zip(info.fields, msgspec.structs.fields(cls), strict=True)


def _flattened(cls: type[msgspec.Struct], prefix: str) -> list[str]:
    """The rows of a table inside an array of tables, as dotted keys."""
    rows = []
    for field, spec in _fields(cls):
        struct, _ = _table_kind(field.type)
        name = f"{prefix}.{field.encode_name}"
        rows += _flattened(struct, name) if struct is not None else [_row(name, field, spec.type)]
    return rows


def _table_kind(t: msgspec.inspect.Type) -> tuple[type[msgspec.Struct] | None, str]:
    """(struct, "table" | "dict" | "list") when the field is a table of its own."""
    if isinstance(t, msgspec.inspect.UnionType):
        members = [m for m in t.types if not isinstance(m, msgspec.inspect.NoneType)]
        if len(members) == 1:
            t = members[0]
    if isinstance(t, msgspec.inspect.StructType):
        return t.cls, "table"
    if isinstance(t, msgspec.inspect.DictType) and isinstance(
        t.value_type, msgspec.inspect.StructType
    ):
        return t.value_type.cls, "dict"
    if isinstance(t, msgspec.inspect.ListType) and isinstance(
        t.item_type, msgspec.inspect.StructType
    ):
        return t.item_type.cls, "list"
    return None, ""


def _row(name: str, field: msgspec.inspect.Field, annotation: Any) -> str:
    t = field.type
    description = ""
    if isinstance(t, msgspec.inspect.Metadata):
        description = (t.extra_json_schema or {}).get("description", "")
        t = t.type
    if field.required:
        default = "required"
    elif field.default_factory is not msgspec.NODEFAULT:
        default = f"`{_toml(field.default_factory())}`"
    elif field.default is None:
        default = "unset"
    else:
        default = f"`{_toml(field.default)}`"
    return f"| `{name}` | {_type_name(t, annotation)} | {default} | {description} |"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return str(value)


def _type_name(t: msgspec.inspect.Type, annotation: Any = None) -> str:
    """A readable type: ``int > 0``, ``list of str``, ``"block" | "skip"`` (literals in
    the order of ``annotation``, which msgspec.inspect sorts)."""
    if isinstance(t, msgspec.inspect.Metadata):
        return _type_name(t.type, annotation)
    if isinstance(t, msgspec.inspect.UnionType):
        members = [m for m in t.types if not isinstance(m, msgspec.inspect.NoneType)]
        return " or ".join(_type_name(m, annotation) for m in members)
    if isinstance(t, msgspec.inspect.LiteralType):
        values = _literal_values(annotation) or t.values
        if set(values) == EVENT_KINDS:
            return "event kind"
        return " \\| ".join(f'`"{v}"`' for v in values)
    if isinstance(t, msgspec.inspect.ListType):
        item = _type_name(t.item_type, _item_annotation(annotation))
        item = "event kinds" if item == "event kind" else item
        bound = f" (at least {t.min_length})" if t.min_length else ""
        return f"list of {item}{bound}"
    if isinstance(t, msgspec.inspect.DictType):
        return f"table of {_type_name(t.value_type)}"
    if isinstance(t, msgspec.inspect.StrType) and t.min_length:
        return "str (not empty)"
    bounds = []
    for attr, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
        limit = getattr(t, attr, None)
        if limit is not None:
            bounds.append(f"{sign} {limit}")
    names: dict[type, str] = {
        msgspec.inspect.IntType: "int",
        msgspec.inspect.FloatType: "float",
        msgspec.inspect.StrType: "str",
        msgspec.inspect.BoolType: "bool",
        msgspec.inspect.AnyType: "any",
    }
    base = names.get(type(t), type(t).__name__)
    return f"{base} {' '.join(bounds)}" if bounds else base


def _item_annotation(annotation: Any) -> Any:
    """The item type of a ``list[...]`` annotation (through Annotated and Optional)."""
    annotation = _strip(annotation)
    if _origin(annotation) is list:
        return get_args(annotation)[0]
    for member in get_args(annotation):
        if _origin(_strip(member)) is list:
            return get_args(_strip(member))[0]
    return None
