"""Building the pipeline a config describes (``build_pipeline``, ``describe``)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import field_key
from ._approvals import ApprovalSteps
from ._builder import Built, seconds
from ._builtins import BuiltinSteps
from ._flows import FlowSteps
from ._hooks import HookSteps
from ._observers import FlushSpans, ObserverSteps
from ._permissions import PermissionSteps
from ._sandbox import SandboxSteps
from .mcp import McpConfig, mcp_namespace
from .schema import Config

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from ..pipeline.pipeline import Pipeline
    from ..pipeline.tracing import TracingLevel

__all__ = ["Built", "Builder", "build_pipeline", "describe"]

_log = logging.getLogger("interpose.config")


def build_pipeline(
    config: Config,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    source: str = "<config>",
    tracing: TracingLevel | None = None,
    tracer_provider: TracerProvider | None = None,
    observers: bool = True,
) -> Pipeline:
    """Build the pipeline a config describes, once: every value is checked before the
    audit log is opened or a plugin called, and a rejected config leaves nothing open.

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
        observers: attach ``[observers]`` (False: check their tables, attach none, as a
            replay does: it writes no audit log and exports nothing).

    Raises:
        ConfigFileError: a value is rejected (a command that does not exist, a regex that
            does not compile, a tool matcher that matches no tool, a plugin that is not
            installed or fails); the message names the field.
    """
    root = Path.cwd() if base_dir is None else Path(base_dir).resolve()
    builder = Builder(
        config,
        root,
        source,
        dry=False,
        run_plugins=True,
        tracing=tracing,
        tracer_provider=tracer_provider,
        observers=observers,
    )
    built = builder.build()
    for note in built.notes:
        _log.warning("%s: %s", source, note)
    return built.pipeline


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
    return Builder(config, root, source, dry=True, run_plugins=True).build()


class Builder(
    BuiltinSteps,
    HookSteps,
    ObserverSteps,
    PermissionSteps,
    ApprovalSteps,
    SandboxSteps,
    FlowSteps,
):
    """Builds one pipeline from one config; every step names its field when it fails.

    ``dry``: no side effects (no file opened, no exporter); ``run_plugins``: call the
    plugins (else they are only found and loaded).  The steps live by concept:
    ``_builtins`` (guards, policies), ``_hooks`` (process and command hooks),
    ``_observers`` (observers, export); ``_builder`` holds what they share.
    """

    # -- the whole stack ----------------------------------------------------------------

    def build(self) -> Built:
        """The stack, checked as it is built; then the deferred steps (the audit log
        opened, the plugins called).  On a failure, what was started is undone."""
        try:
            built = self.stack()
            for step in self.deferred:
                step()
        except BaseException:
            for undo in reversed(self.started):
                undo()
            raise
        return built

    def stack(self) -> Built:
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
            interceptor_timeout=seconds(defaults.interceptor_timeout_ms),
            approval_timeout=seconds(defaults.approval_timeout_ms),
            observer_timeout=seconds(defaults.observer_timeout_ms),
            max_retries=defaults.max_retries,
            tracing=self.tracing or config.tracing.level,
            tracer_provider=provider,
            trace_content=config.tracing.content,
        )
        built = Built(pipe, exporter=exporter, trace_content=config.tracing.content)
        built.notes += config._notes
        self.rank(built)
        if provider is not None and not self.dry and self.tracer_provider is None:
            pipe.add_service(FlushSpans(provider))
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
            for i, plugin in enumerate(hooks.claude_plugins):
                self.claude_plugin(pipe, built, f"hooks.claude_plugins[{i}]", plugin)
        self.permissions(pipe, built, config.permissions)
        self.approvals(pipe, built, config.approvals)
        self.sandbox(pipe, built, config.sandbox)
        self.flows(pipe, built, config.flows)
        self.observers(pipe, config.observers)
        for name, table in config.plugins.items():
            self.plugin(pipe, name, table)
        return built

    def mcp(self, pipe: Pipeline, mcp: McpConfig) -> None:
        """Check ``[mcp.servers]`` and declare each server's tool namespace, so that
        matchers may name its tools (``mcp__time__.*``) before they are listed."""
        for name, server in mcp.servers.items():
            where = f"mcp.servers.{field_key(name)}"
            if (server.command is None) == (server.url is None):
                self.fail(where, "set either `command` (a stdio server) or `url`, not both")
            if server.url is not None and not server.url.startswith(("http://", "https://")):
                self.fail(
                    where + ".url", f"expected an http:// or https:// URL, got {server.url!r}"
                )
            pipe.registry.register_tool_namespace(mcp_namespace(name))

    # -- plugins --------------------------------------------------------------------------

    def plugin(self, pipe: Pipeline, name: str, table: dict[str, Any]) -> None:
        from ..plugins import apply_plugin, load_plugin

        where = f"plugins.{field_key(name)}"
        enabled = table.get("enabled", True)
        if not isinstance(enabled, bool):
            self.fail(where + ".enabled", f"expected bool, got {type(enabled).__name__}")
        if not enabled:
            return
        with self.at(where):
            plugin = load_plugin(name)
        if self.run_plugins:
            options = {key: value for key, value in table.items() if key != "enabled"}

            def apply() -> None:
                with self.at(where):
                    apply_plugin(name, plugin, pipe, options)

            # called once every plugin is found and every other value checked
            self.deferred.append(apply)
