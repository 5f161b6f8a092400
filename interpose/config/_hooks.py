"""The builder's steps for out-of-process hooks: ``[hooks.processes]``,
``[[hooks.commands]]``, ``hooks.claude_settings``, ``hooks.claude_plugins`` and
``[hooks.claude_tools]``."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError, field_key
from ._builder import BuilderBase, Built, seconds

if TYPE_CHECKING:
    from ..external.command.claude_settings import ClaudeSettings
    from ..external.command.tool_mapping import ToolMapping
    from ..pipeline.pipeline import Pipeline
    from .schema import CommandHookConfig, ProcessHookConfig

__all__ = ["HookSteps"]

_INTERPRETER = re.compile(r"(python[0-9.]*|pypy[0-9.]*|bash|sh|zsh|dash|node|ruby|perl)")


class HookSteps(BuilderBase):
    """Installs the process hooks and command hooks a config describes, after checking
    that their programs exist."""

    def process(self, pipe: Pipeline, built: Built, name: str, table: ProcessHookConfig) -> None:
        from ..external.process import ProcessHook
        from ..external.process.picoclaw import resolve_observe

        where = f"hooks.processes.{field_key(name)}"
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
                timeout=seconds(timeout),
                handshake_timeout=seconds(table.handshake_timeout_ms),
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
        from ..external.command.runner import CommandHook

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
                timeout=seconds(table.timeout_ms),
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
        if self.claude_mapping is None:
            from ..external.command.tool_mapping import ClaudeTool, default_tool_mapping

            mapping = default_tool_mapping()
            for name, table in self.config.hooks.claude_tools.items():
                with self.at(f"hooks.claude_tools.{field_key(name)}"):
                    mapping.add(ClaudeTool(name, table.tool, table.fields))
            self.claude_mapping = mapping
        return self.claude_mapping

    def claude_settings(self, pipe: Pipeline, built: Built, where: str, value: str) -> None:
        """Install the hooks of a Claude Code settings file; its own errors name it."""
        from ..external.command.claude_settings import ClaudeSettings

        path = Path(os.path.normpath(self.base_dir / os.path.expanduser(value)))
        if not path.is_file():
            self.fail(where, f"{path} does not exist")
        settings = ClaudeSettings(
            path,
            name=value,
            tool_mapping=self.claude_tools(),
            transcript_dir=self.claude_transcripts(),
        )
        self.claude_install(pipe, built, where, value, settings)

    def claude_plugin(self, pipe: Pipeline, built: Built, where: str, value: str) -> None:
        """Install the hooks of a Claude Code plugin (``<dir>/hooks/hooks.json``)."""
        from ..external.command.claude_settings import ClaudeSettings, plugin_name

        root = Path(os.path.normpath(self.base_dir / os.path.expanduser(value)))
        if not (root / "hooks" / "hooks.json").is_file():
            self.fail(where, f"{root / 'hooks' / 'hooks.json'} does not exist")
        data = self.config.hooks.claude_plugin_data
        # the project is the config's directory; for hooks.json loaded as the config
        # itself, the current directory (as where Claude Code runs a plugin's hooks)
        inside = Path(os.path.normpath(self.base_dir)) == root / "hooks"
        settings = ClaudeSettings.plugin(
            root,
            project_dir=None if inside else self.base_dir,
            data_dir=None if data is None else self.directory_path(data) / plugin_name(root),
            tool_mapping=self.claude_tools(),
            name=value,
            transcript_dir=self.claude_transcripts(),
        )
        self.claude_install(pipe, built, where, value, settings)

    def claude_install(
        self, pipe: Pipeline, built: Built, where: str, value: str, settings: ClaudeSettings
    ) -> None:
        with self.at(where):
            regs = settings.install(pipe)
        for reg in regs:
            built.matchers[reg.id] = settings.describe(reg)
        built.notes += [f"{value}: {note}" for note in settings.notes]

    def claude_transcripts(self) -> Path | None:
        """``hooks.claude_transcripts``, resolved against the config's directory."""
        value = self.config.hooks.claude_transcripts
        return None if value is None else self.directory_path(value)

    def directory_path(self, value: str) -> Path:
        return Path(os.path.normpath(self.base_dir / os.path.expanduser(value)))
