"""The config file: ``interpose.toml`` (or the same shape as JSON), its schema and loader.

A file is read in three steps, each with errors that name the file, the field and what
was expected (``interpose.toml: hooks.processes.gate.priority: expected int, got str``):

1. parse: TOML (``tomllib``; ``tomli`` before Python 3.11) or JSON, by the extension;
2. decode: ``msgspec.convert`` into the ``Config`` structs; unknown keys, wrong types,
   bad enum values and out-of-range numbers are errors;
3. check: everything that can be checked without starting anything (commands exist,
   regexes compile, tool matchers match a tool, plugins are installed) is checked by
   building the stack once, without opening files or exporters, into a scratch pipeline.

``build_pipeline`` then builds the real ``Pipeline``, checking the same way as it builds
(once: the audit log is opened and the plugins called only when everything else passed);
``pipeline_from_file(path)`` reads and builds in one pass (``Pipeline.from_config(path)``).
``load_config`` is for checking a file without building it (``interpose check`` uses
``describe``, which checks as it builds, also once).  Relative paths (commands, ``cwd``,
the audit log) resolve against the directory of the config file.  Durations in the file
are integer milliseconds (``*_ms``).

The modules, one concern each:

- ``schema``: the structs, one per table (a new section of the file goes there);
  ``mcp``: the ``[mcp]`` table (the servers of ``interpose mcp-proxy``) and its checks;
- ``loading``: reading and decoding a file (``load_config``, ``parse_config``,
  ``decode_config``), PicoClaw's forms rewritten to interpose's before decoding (by
  ``interpose.external.process.picoclaw``; a Claude Code settings file is recognised by
  ``interpose.external.command.claude_settings``);
- ``explain``: ``ConfigFileError`` and msgspec's errors rewritten as field paths;
- ``building``: the pipeline a config describes (``build_pipeline``, ``describe``), its
  steps by concept in ``_builtins`` (guards, policies), ``_hooks`` (process and command
  hooks), ``_observers`` (observers, export) over ``_builder`` (what they share);
- ``reference``: docs/config.md's reference, generated from the schema (a test keeps the
  page up to date).
"""

from __future__ import annotations

from .building import Built, build_pipeline, describe
from .explain import ConfigFileError
from .loading import decode_config, load_config, parse_config, pipeline_from_file
from .mcp import McpConfig
from .reference import reference
from .schema import (
    AuditConfig,
    BuiltinsConfig,
    ClaudeToolConfig,
    CommandHookConfig,
    CommandSafetyGuardConfig,
    Config,
    DefaultsConfig,
    FlowsConfig,
    HooksConfig,
    LoggingConfig,
    LoopGuardConfig,
    MetricsConfig,
    ObserversConfig,
    OTLPConfig,
    OutputCapConfig,
    ProcessHookConfig,
    RateLimitConfig,
    RedactSecretsConfig,
    RedisConfig,
    ResultCacheConfig,
    SandboxConfig,
    SecurityAuditConfig,
    ToolFilterConfig,
    TracingConfig,
)

# importable from here since config was one module, though not in __all__: the
# type aliases and the command-hook filter tables (``X as X`` re-exports them)
from .schema import (
    CommandEvent as CommandEvent,
)
from .schema import (
    CommandFilter as CommandFilter,
)
from .schema import (
    CommandToolFilter as CommandToolFilter,
)
from .schema import (
    InterceptPoint as InterceptPoint,
)
from .schema import (
    OnErrorName as OnErrorName,
)
from .schema import (
    ToolsField as ToolsField,
)

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
    "FlowsConfig",
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
    "RedisConfig",
    "ResultCacheConfig",
    "SandboxConfig",
    "SecurityAuditConfig",
    "ToolFilterConfig",
    "TracingConfig",
    "build_pipeline",
    "decode_config",
    "describe",
    "load_config",
    "parse_config",
    "pipeline_from_file",
    "reference",
]
