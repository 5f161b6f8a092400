"""Claude Code's ``.claude/settings.json``: its ``hooks``, installed into a pipeline.

``ClaudeSettings`` turns each event into one registration that runs the hooks whose
``matcher`` matches, in parallel, and combines their answers with Claude's precedence
(deny > ask > allow)::

      PreToolUse          tool.before (+ a tool.approve step for "ask")
      PermissionRequest   tool.approve
      PostToolUse         tool.after, for results that are ok or responded
      PostToolUseFailure  tool.after, for results that are errors
      UserPromptSubmit    message.before
      PreCompact          session.compact
      SessionStart        turn-stage middleware, before the turn (observed)
      Stop                turn-stage middleware, after the turn's work: a block resumes
                          a turn whose body has resume() (the reference Agent's)
      SessionEnd          turn-stage middleware, after the turn (observed)

As in Claude Code, a hook that fails (an exit code other than 0 and 2, a timeout, an
HTTP status other than 2xx, a connection error) is a non-blocking error: the call goes
on.  The failure is logged, counted in ``pipe.stats`` and published as an
``interceptor_failed`` event with ``policy="skip"`` (see ``claude_runner``).

A ``"command"`` hook runs as a ``CommandHook`` of the ``claude-code`` dialect
(``runner``, ``tool_mapping``); an ``"http"`` one is POSTed (``http``).
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import msgspec

from ...errors import ConfigError, ConfigFileError
from ...pipeline.registry import Handler, Interceptor, Middleware, Registration
from .claude_runner import MAX_STOP_CONTINUES, SettingsHook, SettingsRunner
from .http import http_call, http_headers
from .runner import CommandHook
from .tool_mapping import ToolMapping, default_tool_mapping
from .verdict import Answer

if TYPE_CHECKING:
    from ...pipeline.pipeline import Pipeline

__all__ = [
    "CLAUDE_EVENTS",
    "DEFAULT_TIMEOUT",
    "MAX_STOP_CONTINUES",
    "SUPPORTED_EVENTS",
    "ClaudeSettings",
    "compile_matcher",
    "is_claude_settings",
]

log = logging.getLogger("interpose.claude_code")


#: The events of Claude Code's hooks reference, supported or not (a settings file that
#: names another event gets a note saying so).
CLAUDE_EVENTS: frozenset[str] = frozenset(
    {
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "Notification",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
        "SessionStart",
        "SessionEnd",
    }
)

#: The events interpose runs, and where.
SUPPORTED_EVENTS: dict[str, str] = {
    "PreToolUse": "tool.before",
    "PermissionRequest": "tool.approve",
    "PostToolUse": "tool.after",
    "PostToolUseFailure": "tool.after",
    "UserPromptSubmit": "message.before",
    "PreCompact": "session.compact",
    "SessionStart": "turn",
    "Stop": "turn",
    "SessionEnd": "turn",
}


# -- the settings file --------------------------------------------------------------------


class _HookSpec(msgspec.Struct, kw_only=True):
    # unknown keys (statusMessage, async, once…) are allowed: Claude adds them often
    type: str = "command"
    command: str | None = None
    url: str | None = None
    timeout: float | None = None
    headers: dict[str, str] = {}
    allowed_env_vars: list[str] = msgspec.field(default_factory=list, name="allowedEnvVars")
    condition: str | None = msgspec.field(default=None, name="if")


class _MatcherGroup(msgspec.Struct, kw_only=True):
    matcher: str | None = None
    hooks: list[_HookSpec] = []


class _SettingsFile(msgspec.Struct, kw_only=True):
    hooks: dict[str, list[_MatcherGroup]] = {}
    env: dict[str, str] = {}


_EVENT_KEY = re.compile(r"[A-Z][A-Za-z]*")
_PLAIN_MATCHER = re.compile(r"[A-Za-z0-9_|\s]+")
DEFAULT_TIMEOUT = 60.0


def is_claude_settings(data: object, path: str | os.PathLike[str] = "") -> bool:
    """Whether parsed JSON is a Claude Code settings file: its ``hooks`` are keyed by
    Claude event names (``PreToolUse``…), or it has no ``hooks`` and lives in a
    ``.claude`` directory."""
    if not isinstance(data, dict):
        return False
    hooks = data.get("hooks")
    if isinstance(hooks, dict) and hooks:
        return all(isinstance(k, str) and _EVENT_KEY.fullmatch(k) for k in hooks)
    return hooks is None and Path(os.fspath(path)).parent.name == ".claude"


def compile_matcher(matcher: str | None) -> Callable[[str], bool]:
    """Claude's matcher: empty or ``*`` matches everything; letters, digits, ``_`` and
    ``|`` only are exact names (``Edit|Write``); anything else is a regex searched in
    the name (``mcp__github__.*``, ``Notebook.*``).  Case-sensitive.

    Raises:
        ConfigError: an invalid regex.
    """
    text = (matcher or "").strip()
    if text in ("", "*"):
        return _everything
    if _PLAIN_MATCHER.fullmatch(text):
        names = frozenset(part.strip() for part in text.split("|") if part.strip())
        return names.__contains__
    try:
        search = re.compile(text).search
    except re.error as exc:
        raise ConfigError(f"matcher {text!r} is not a valid regex: {exc}") from None
    return lambda name: search(name) is not None


def _everything(name: str) -> bool:
    return True


def _command_call(hook: CommandHook) -> Callable[[dict[str, Any]], Awaitable[Answer]]:
    async def call(event: dict[str, Any]) -> Answer:
        returncode, stdout, stderr = await hook.run(event)
        verdict = hook.verdict(hook.id, returncode, stdout, stderr)
        context: tuple[str, ...] = ()
        if verdict.additional_context is not None:
            context = (verdict.additional_context,)
        text = stdout.strip()
        if returncode == 0 and text and not text.startswith(b"{"):
            # UserPromptSubmit and SessionStart add plain stdout to the context
            context += (text.decode("utf-8", "replace"),)
        return Answer(verdict.decision, verdict.reason, verdict.updated_input, context)

    return call


class ClaudeSettings:
    """The hooks of a Claude Code settings file (``.claude/settings.json``).

    Args:
        path: the settings file.
        project_dir: ``$CLAUDE_PROJECT_DIR`` and the directory hooks run in; default the
            parent of the ``.claude`` directory holding the file (else the file's own
            directory).
        tool_mapping: the tool table (default ``default_tool_mapping()``).
        priority: the priority of each registration.
        name: how the registrations are labelled (``claude:<Event> <name>``); default
            the path as given.

    Attributes:
        notes: what the file asks for that interpose does not do (unsupported hook
            types and events, Stop's ``decision: block``), one line each; ``interpose
            check`` prints them.

    Raises:
        ConfigFileError: the file cannot be read, is not JSON of the settings shape, or
            a hook is invalid (a command that does not exist, a bad matcher, timeout or
            URL); the message names the field (``hooks.PreToolUse[0].hooks[1].command``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        project_dir: str | os.PathLike[str] | None = None,
        tool_mapping: ToolMapping | None = None,
        priority: int = 0,
        name: str | None = None,
    ) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self.name = os.fspath(path) if name is None else name
        source = os.fspath(path)
        parent = Path(self.path).parent
        default_dir = parent.parent if parent.name == ".claude" else parent
        self.project_dir = os.path.abspath(os.fspath(project_dir or default_dir))
        self.mapping = tool_mapping if tool_mapping is not None else default_tool_mapping()
        self.priority = priority
        self.notes: list[str] = []
        try:
            data = Path(self.path).read_bytes()
        except OSError as exc:
            raise ConfigFileError(source, "", f"cannot read it: {exc}") from None
        try:
            raw = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            raise ConfigFileError(source, "", f"invalid JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise ConfigFileError(source, "", "expected a JSON object")
        hooks_table = raw.get("hooks", {})
        try:
            settings = msgspec.convert({"hooks": {}, "env": raw.get("env", {})}, _SettingsFile)
            if not isinstance(hooks_table, dict):
                raise msgspec.ValidationError("Expected `object` - at `$.hooks`")
            for event, value in hooks_table.items():
                try:
                    settings.hooks[event] = msgspec.convert(value, list[_MatcherGroup])
                except msgspec.ValidationError as exc:
                    # msgspec writes dict keys as [...]: name the event instead
                    raise msgspec.ValidationError(
                        str(exc).replace("at `$", f"at `$.hooks.{event}")
                        if " - at `$" in str(exc)
                        else f"{exc} - at `$.hooks.{event}`"
                    ) from None
        except msgspec.ValidationError as exc:
            message, _, where = str(exc).partition(" - at `$.")
            raise ConfigFileError(source, where.rstrip("`"), message) from None
        self.env = dict(settings.env)
        self.hooks: dict[str, list[SettingsHook]] = {}
        for event, groups in settings.hooks.items():
            if event not in SUPPORTED_EVENTS:
                what = (
                    "an event interpose does not run"
                    if event in CLAUDE_EVENTS
                    else ("an unknown event")
                )
                self.notes.append(f"hooks.{event}: {what}; its hooks never run")
                continue
            hooks: list[SettingsHook] = []
            for i, group in enumerate(groups):
                where = f"hooks.{event}[{i}]"
                try:
                    matches = compile_matcher(group.matcher)
                except ConfigError as exc:
                    raise ConfigFileError(source, where + ".matcher", str(exc)) from None
                for j, spec in enumerate(group.hooks):
                    hook = self._hook(
                        source,
                        f"{where}.hooks[{j}]",
                        event,
                        spec,
                        matches,
                        (group.matcher or "").strip(),
                        CommandHook,
                    )
                    if hook is not None and self._scoped(
                        source, f"{where}.hooks[{j}]", event, spec, hook
                    ):
                        hooks.append(hook)
            if hooks:
                self.hooks[event] = hooks
        if "Stop" in self.hooks:
            self.notes.append(
                'hooks.Stop: a decision "block" continues the turn only when its body can '
                "be resumed (the reference Agent's can); otherwise it is logged"
            )

    def __repr__(self) -> str:
        return f"<ClaudeSettings {self.name!r} events={sorted(self.hooks)}>"

    def _hook(
        self,
        source: str,
        where: str,
        event: str,
        spec: _HookSpec,
        matches: Callable[[str], bool],
        matcher: str,
        command_hook: type[CommandHook],
    ) -> SettingsHook | None:
        if spec.type not in ("command", "http"):
            self.notes.append(
                f"{where}: hooks of type {spec.type!r} are not supported by interpose; "
                "it never runs"
            )
            return None
        timeout = DEFAULT_TIMEOUT if spec.timeout is None else spec.timeout
        if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
            raise ConfigFileError(
                source, where + ".timeout", "expected a positive number of seconds"
            )
        if spec.type == "command":
            if not spec.command or not spec.command.strip():
                raise ConfigFileError(source, where + ".command", "required for a command hook")
            try:
                hook = command_hook(
                    spec.command,
                    event="tool.before",
                    timeout=timeout,
                    cwd=self.project_dir,
                    env=self.env,
                    dialect="claude-code",
                    tool_mapping=self.mapping,
                    id=f"claude:{event}:{spec.command}",
                )
            except ConfigError as exc:
                problem = re.sub(r"^command hook '[^']*': ", "", str(exc))
                raise ConfigFileError(source, where + ".command", problem) from None
            return SettingsHook(
                hook.id,
                "command:" + spec.command,
                spec.command,
                matches,
                timeout,
                _command_call(hook),
                matcher,
            )
        url = spec.url or ""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigFileError(
                source, where + ".url", f"expected an http:// or https:// URL, got {url!r}"
            )
        environ = {**os.environ, **self.env}
        try:
            headers = http_headers(spec.headers, spec.allowed_env_vars, environ)
        except ConfigError as exc:
            raise ConfigFileError(source, where + ".headers", str(exc)) from None
        return SettingsHook(
            f"claude:{event}:{url}",
            "http:" + url,
            url,
            matches,
            timeout,
            http_call(url, headers, url),
            matcher,
        )

    def _scoped(
        self, source: str, where: str, event: str, spec: _HookSpec, hook: SettingsHook
    ) -> bool:
        """Give ``hook`` its ``if`` rule; False: it never runs (``if`` on an event that
        is not a tool event, as in Claude Code)."""
        if spec.condition is None:
            return True
        from ...permissions.conditions import TOOL_EVENTS, hook_condition

        if event not in TOOL_EVENTS:
            self.notes.append(f"{where}.if: evaluated only on tool events; this hook never runs")
            return False
        try:
            hook.when = hook_condition(
                spec.condition, self.mapping, source=source, base=Path(self.project_dir)
            )
        except ConfigError as exc:
            problem = str(exc).removeprefix(f"{source}: ").replace("ask rule ", "rule ", 1)
            raise ConfigFileError(source, where + ".if", problem) from None
        return True

    # -- registration ---------------------------------------------------------------

    def registrations(self, pipe: Pipeline) -> list[Registration]:
        """The registrations that run the file's hooks in ``pipe`` (failures are
        reported to it)."""
        runner = SettingsRunner(self, pipe)
        regs: list[Registration] = []
        label = f" {self.name}"
        hooks = self.hooks
        # (id's event, pipeline hook, handler, the file's events that call for it)
        interceptors: tuple[tuple[str, str, Handler, tuple[str, ...]], ...] = (
            ("PreToolUse", "tool.before", runner.pre_tool_use, ("PreToolUse",)),
            (
                "PermissionRequest",
                "tool.approve",
                runner.permission_request,
                ("PreToolUse", "PermissionRequest"),
            ),
            (
                "PostToolUse",
                "tool.after",
                runner.post_tool_use,
                ("PostToolUse", "PostToolUseFailure"),
            ),
            (
                "UserPromptSubmit",
                "message.before",
                runner.user_prompt_submit,
                ("UserPromptSubmit",),
            ),
            ("PreCompact", "session.compact", runner.pre_compact, ("PreCompact",)),
        )
        for event, hook, handler, wanted_by in interceptors:
            if any(name in hooks for name in wanted_by):
                regs.append(
                    Interceptor(
                        id=f"claude:{event}{label}",
                        hook=hook,
                        handler=handler,
                        priority=self.priority,
                        # each hook bounds itself (its own timeout): no cancel scope per call
                        timeout=math.inf,
                        on_error="skip",
                        source="claude-settings",
                    )
                )
        if {"SessionStart", "Stop", "SessionEnd"} & hooks.keys():
            regs.append(
                Middleware(
                    id=f"claude:SessionStart/Stop/SessionEnd{label}",
                    stage="turn",
                    handler=runner.turn,
                    priority=self.priority,
                    source="claude-settings",
                )
            )
        return regs

    def install(self, pipe: Pipeline) -> list[Registration]:
        """Add the registrations to ``pipe``; returns them.

        Raises:
            RegistrationError: an id is taken (the same file installed twice under the
                same name); nothing is added then.
        """
        regs = self.registrations(pipe)
        added: list[Registration] = []
        try:
            for reg in regs:
                added.append(pipe.registry.add(reg))
        except Exception:
            for reg in added:
                pipe.registry.remove(reg.id)
            raise
        return added

    def matchers(self, event: str) -> str:
        """The matchers of an event's hooks, for ``interpose check``."""
        return ", ".join(dict.fromkeys(h.matcher or "*" for h in self.hooks.get(event, ())))

    def describe(self, reg: Registration) -> str:
        """What a registration of ``registrations()`` runs for, for ``interpose check``:
        its events' matchers (``Bash, Edit|Write``)."""
        events = reg.id.split(" ", 1)[0].removeprefix("claude:").split("/")
        shown = [self.matchers(event) for event in events if event in self.hooks]
        if not shown and events == ["PermissionRequest"]:
            return "(answers the asks of PreToolUse)"
        return "; ".join(shown) or "*"
