"""Building the pipeline a config describes (``build_pipeline``, ``describe``)."""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from ..adapters.mcp.config import McpConfig, mcp_namespace
from ..errors import ConfigError, RegistrationError
from ..pipeline.tools import TOOL_GROUPS, compile_tool_matcher, in_namespace, normalize_tool_name
from .explain import ConfigFileError, _key
from .schema import (
    BuiltinsConfig,
    CommandHookConfig,
    Config,
    ObserversConfig,
    OTLPConfig,
    ProcessHookConfig,
    RedisConfig,
    _fields_of,
)

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from ..middleware.claude_code import ToolMapping
    from ..pipeline.pipeline import Pipeline
    from ..pipeline.tracing import TracingLevel


_log = logging.getLogger("interpose.config")


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
        from ..pipeline.pipeline import Pipeline

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
        built.notes += config._notes
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

    @contextmanager
    def moded(self, pipe: Pipeline, mode: str) -> Iterator[None]:
        """Put what the block registers in ``mode`` (the policies register themselves)."""
        before = {reg.id for reg in pipe.registry.list()}
        yield
        if mode == "shadow":
            for reg in pipe.registry.list():
                if reg.id not in before:
                    pipe.registry.set_mode(reg.id, "shadow")

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

    def builtin_priority(self, name: str, given: int | None) -> int:
        """The interpose priority of the builtin ``name``: ranked, else ``given``, else
        its default."""
        return self.priority("builtin", name, given, _BUILTIN_PRIORITY[name])

    # -- builtins -------------------------------------------------------------------------

    def guards(self, pipe: Pipeline, builtins: BuiltinsConfig) -> None:
        from ..middleware.builtins import builtin_interceptors

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
                self.builtin_priority("command-safety-guard", safety.priority),
                "command-safety-guard",
                safety.mode,
            ),
            (
                audit.enabled,
                self.builtin_priority("security-audit", audit.priority),
                "security-audit",
                audit.mode,
            ),
        )
        for reg, (enabled, priority, key, mode) in zip(regs, guards, strict=True):
            if enabled:
                with self.at(where + key):
                    pipe.registry.add(dataclasses.replace(reg, priority=priority, mode=mode))

    def policies(self, pipe: Pipeline, builtins: BuiltinsConfig) -> None:
        from ..middleware.builtins import (
            LoopGuard,
            OutputCap,
            Policy,
            RateLimit,
            RedactSecrets,
            ResultCache,
            ToolFilter,
        )
        from ..pipeline.redaction import Redactor

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
            with self.at(where + "tool-filter"), self.moded(pipe, table.mode):
                policy = ToolFilter(
                    allow=allow,
                    deny=deny,
                    priority=self.builtin_priority("tool-filter", table.priority),
                )
                policy.install(pipe)
        if builtins.loop_guard is not None and builtins.loop_guard.enabled:
            guard = builtins.loop_guard
            tools = self.matcher(where + "loop-guard.tools", guard.tools, pipe)
            with self.at(where + "loop-guard"), self.moded(pipe, guard.mode):
                LoopGuard(
                    guard.max_repeats,
                    tools=tools,
                    max_turns=guard.max_turns,
                    priority=self.builtin_priority("loop-guard", guard.priority),
                ).install(pipe)
        if builtins.rate_limit is not None and builtins.rate_limit.enabled:
            rate = builtins.rate_limit
            tools = self.matcher(where + "rate-limit.tools", rate.tools, pipe)
            with self.at(where + "rate-limit"), self.moded(pipe, rate.mode):
                RateLimit(
                    rate.rate,
                    _seconds(rate.per_ms),
                    burst=rate.burst,
                    tools=tools,
                    max_buckets=rate.max_buckets,
                    priority=self.builtin_priority("rate-limit", rate.priority),
                ).install(pipe)
        if builtins.redact_secrets is not None and builtins.redact_secrets.enabled:
            redact = builtins.redact_secrets
            self.regexes(where + "redact-secrets.patterns", redact.patterns)
            tools = self.matcher(where + "redact-secrets.tools", redact.tools, pipe)
            with self.at(where + "redact-secrets"), self.moded(pipe, redact.mode):
                RedactSecrets(
                    Redactor(redact.patterns, keys=redact.keys),
                    tools=tools,
                    priority=self.builtin_priority("redact-secrets", redact.priority),
                ).install(pipe)
        if builtins.result_cache is not None and builtins.result_cache.enabled:
            cache = builtins.result_cache
            cached = self.matcher(where + "result-cache.tools", cache.tools, pipe)
            invalidate = (
                self.matcher(where + "result-cache.invalidate_on", cache.invalidate_on, pipe)
                if cache.invalidate_on
                else None
            )
            with self.at(where + "result-cache"), self.moded(pipe, cache.mode):
                ResultCache(
                    _seconds(cache.ttl_ms),
                    tools=cached if cached is not None else (),
                    invalidate_on=invalidate,
                    scope=cache.scope,
                    max_entries=cache.max_entries,
                    priority=self.builtin_priority("result-cache", cache.priority),
                ).install(pipe)
        if builtins.output_cap is not None and builtins.output_cap.enabled:
            cap = builtins.output_cap
            tools = self.matcher(where + "output-cap.tools", cap.tools, pipe)
            with self.at(where + "output-cap"), self.moded(pipe, cap.mode):
                OutputCap(
                    cap.max_chars,
                    marker=cap.marker,
                    strings_only=cap.strings_only,
                    tools=tools,
                    priority=self.builtin_priority("output-cap", cap.priority),
                ).install(pipe)

    # -- out-of-process hooks -------------------------------------------------------------

    def process(self, pipe: Pipeline, built: Built, name: str, table: ProcessHookConfig) -> None:
        from ..middleware.picoclaw import resolve_observe
        from ..middleware.process import ProcessHook

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
                mode=table.mode,
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
        from ..middleware.command_hooks import CommandHook

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
                mode=table.mode,
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
            from ..middleware.claude_code import ClaudeTool, default_tool_mapping

            mapping = default_tool_mapping()
            for name, table in self.config.hooks.claude_tools.items():
                with self.at(f"hooks.claude_tools.{_key(name)}"):
                    mapping.add(ClaudeTool(name, table.tool, table.fields))
            self._claude_tools = mapping
        return self._claude_tools

    def claude_settings(self, pipe: Pipeline, built: Built, where: str, value: str) -> None:
        """Install the hooks of a Claude Code settings file; its own errors name it."""
        from ..middleware.claude_code import ClaudeSettings

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
            if audit.record_args or audit.record_llm or audit.record_messages:
                from ..observers.recording import CallRecorder

                with self.at("observers.audit"):
                    CallRecorder(
                        args=audit.record_args,
                        results=audit.record_results,
                        llm=audit.record_llm,
                        messages=audit.record_messages,
                    ).install(pipe)
            if self.dry:
                pipe.subscribe(_stand_in, events=audit.events, name=name)
            else:
                with self.at("observers.audit"):
                    sink = _AuditSink(path, audit.max_bytes or None, audit.backups)
                pipe.subscribe(sink, events=audit.events, overflow="block", name=name)
                pipe.add_service(sink)
        if observers.logging is not None and observers.logging.enabled:
            from ..observers.logs import LoggingObserver

            table = observers.logging
            with self.at("observers.logging.level"):
                observer = LoggingObserver(table.logger, level=table.level, content=table.content)
            observer.attach(pipe, events=table.events)
        if observers.metrics is not None and observers.metrics.enabled:
            if self.dry:
                pipe.subscribe(_stand_in, name="metrics")
            else:
                from ..observers.metrics import MetricsObserver

                MetricsObserver().attach(pipe)

        if observers.redis is not None and observers.redis.enabled:
            self.redis(pipe, observers.redis)

    def redis(self, pipe: Pipeline, table: RedisConfig) -> None:
        """``[observers.redis]``: a ``RedisStreamPublisher`` attached to ``pipe`` (when
        describing, a stand-in subscription of the same name and policy)."""
        from ..bus.redis import RedisStreamPublisher, _check_url

        name = f"redis {table.stream}"
        try:
            with self.at("observers.redis.url"):
                _check_url(table.url)
        except ImportError:  # pragma: no cover - depends on the install
            self.fail("observers.redis", "needs redis-py: pip install 'interpose[redis]'")
        if self.dry:
            pipe.subscribe(_stand_in, events=table.events, overflow=table.overflow, name=name)
            return
        with self.at("observers.redis"):
            publisher = RedisStreamPublisher(
                table.url,
                stream=table.stream,
                maxlen=table.maxlen or None,
                overflow=table.overflow,
                queue=table.queue,
                batch=table.batch,
                producer=table.producer or None,
            )
            publisher.attach(pipe, events=table.events, buffer=table.buffer, name=name)

    def otlp(self, table: OTLPConfig, *, describe_only: bool) -> tuple[TracerProvider | None, str]:
        """The exporting provider (None when dry or ``describe_only``) and a
        description of the export."""
        from ..observers.otel import configure, resolve_endpoint

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
        from ..plugins import apply_plugin, load_plugin

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
        from ..observers.audit import AuditLog

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
