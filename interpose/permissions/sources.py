"""Where rules come from: Claude Code settings files, Codex ``.rules`` files, Gemini CLI
policies -- each read into :class:`.model.Rule`, each rule naming its file.

- :func:`claude_settings_rules`: the ``permissions.allow / ask / deny`` lists of one
  ``.claude/settings*.json`` file, in Claude Code's syntax (:mod:`.claude`).
- :func:`claude_project_rules`: the three files Claude Code reads for a project, with its
  precedence: ``.claude/settings.local.json`` > ``.claude/settings.json`` >
  ``~/.claude/settings.json``.  Rule lists merge across the levels and deny beats ask
  beats allow whichever level each came from, which the engine's order already gives.
- :func:`load_source`: one file (or a directory of them) by its suffix: ``.json`` a
  Claude Code settings file, ``.rules`` (and the older ``.codexpolicy``) a Codex rules
  file, ``.toml`` a Gemini CLI policy; a directory (``~/.codex/rules``,
  ``.gemini/policies``) loads its ``.rules`` and ``.toml`` files in name order.

A ``/path`` rule of a Claude settings file is anchored where Claude Code anchors it: the
project root for a project's ``.claude/settings*.json``, ``~/.claude`` for the user's
``~/.claude/settings.json``, the file's own directory for any other file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..errors import ConfigError, ConfigFileError
from .claude import parse_claude_rule
from .codex import codex_rules
from .gemini import gemini_rules
from .model import Decision, Rule

__all__ = ["claude_project_rules", "claude_settings_base", "claude_settings_rules", "load_source"]

_DECISIONS: tuple[Decision, ...] = ("allow", "ask", "deny")


def claude_settings_rules(
    path: Path,
    *,
    base: Path,
    cwd: Path | None = None,
    home: Path | None = None,
    notes: list[str] | None = None,
) -> list[Rule]:
    """The ``permissions`` rules of a Claude Code settings file, each with the file as
    its source.  ``base`` anchors ``/path`` rules, ``cwd`` ``./path`` and bare ones
    (default: the process's), ``home`` ``~/path`` ones (default: the user's).  A file
    without ``permissions`` has no rules.  ``notes`` gets a line for each key of
    ``permissions`` interpose does not use (``defaultMode``, ``additionalDirectories``...).

    Raises:
        ConfigFileError: (a ``ConfigError``) the file cannot be read, is not a JSON
            object, or a rule is not valid; the message names the file and the field
            (``permissions.deny[2]``).
    """
    name = os.fspath(path)
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(name, "", f"cannot read it: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigFileError(
            name, "", f"invalid JSON: {exc.msg} (at line {exc.lineno}, column {exc.colno})"
        ) from None
    if not isinstance(data, dict):
        raise ConfigFileError(name, "", "expected a JSON object")
    table = data.get("permissions", {})
    if not isinstance(table, dict):
        raise ConfigFileError(name, "permissions", "expected an object")
    if notes is not None:
        notes += [
            f"{name}: permissions.{key}: not used by interpose (only allow, ask and deny are)"
            for key in table
            if key not in _DECISIONS
        ]
    rules: list[Rule] = []
    for decision in _DECISIONS:
        items = table.get(decision, [])
        if not isinstance(items, list):
            raise ConfigFileError(name, f"permissions.{decision}", "expected a list of rules")
        for i, text in enumerate(items):
            where = f"permissions.{decision}[{i}]"
            if not isinstance(text, str):
                raise ConfigFileError(name, where, "expected a string such as 'Bash(git push:*)'")
            try:
                rule = parse_claude_rule(text, decision, source=name, base=base, cwd=cwd, home=home)
            except ConfigError as exc:
                raise ConfigFileError(name, where, _without(str(exc), name)) from None
            rules.append(rule)
    return rules


def _without(message: str, source: str) -> str:
    """A rule's error without the source it starts with (the field path says it)."""
    return message.removeprefix(f"{source}: ")


def claude_settings_base(path: Path, *, home: Path | None = None) -> Path:
    """What a settings file's ``/path`` rules are relative to: ``~/.claude`` for the
    user's settings, the project root for a project's ``.claude/settings*.json``, else
    the file's directory."""
    folder = Path(os.path.abspath(path)).parent
    user = Path(os.path.abspath(home or Path.home())) / ".claude"
    if folder.name == ".claude" and folder != user:
        return folder.parent
    return folder


def claude_project_rules(project_dir: Path, *, home: Path, cwd: Path | None = None) -> list[Rule]:
    """The rules Claude Code applies in ``project_dir``: its
    ``.claude/settings.local.json``, ``.claude/settings.json`` and the user's
    ``~/.claude/settings.json``, highest precedence first (files that do not exist are
    skipped).  ``./path`` rules are relative to ``cwd`` (default: ``project_dir``).

    Raises:
        ConfigFileError: as :func:`claude_settings_rules`, naming the file.
    """
    project = Path(os.path.abspath(project_dir))
    user = Path(os.path.abspath(home)) / ".claude"
    here = cwd or project
    levels = (
        (project / ".claude" / "settings.local.json", project),
        (project / ".claude" / "settings.json", project),
        (user / "settings.json", user),
    )
    rules: list[Rule] = []
    for path, base in levels:
        if path.is_file():
            rules += claude_settings_rules(path, base=base, cwd=here, home=home)
    return rules


def load_source(
    path: Path,
    *,
    base: Path,
    cwd: Path | None = None,
    home: Path | None = None,
    name: str | None = None,
    notes: list[str] | None = None,
) -> list[Rule]:
    """The rules of one source: a file by its suffix, or a directory of ``.rules`` and
    ``.toml`` files.  A relative ``path`` is relative to ``base`` (the directory of the
    config naming it).  ``name``: how the rules' sources show the file or directory
    (``team.rules:3``, as the config spells it; default its full path).  ``notes`` gets
    what a file asks for that interpose does not do (see :func:`claude_settings_rules`).

    Raises:
        ConfigFileError: (a ``ConfigError``) the source does not exist, has a suffix
            that is none of these, or is invalid; the message names the file.
    """
    full = Path(os.path.normpath(base / os.path.expanduser(path)))
    found: list[str] = []
    if full.is_dir():
        rules: list[Rule] = []
        for child in sorted(full.iterdir()):
            if child.is_file() and child.suffix in (".rules", ".codexpolicy", ".toml"):
                rules += _load_file(child, cwd, home, found)
    elif full.is_file():
        rules = _load_file(full, cwd, home, found)
    else:
        raise ConfigFileError(os.fspath(path), "", f"{full} does not exist")
    prefix = os.fspath(full)

    def shown(text: str) -> str:
        return name + text[len(prefix) :] if name is not None and text.startswith(prefix) else text

    if notes is not None:
        notes += map(shown, found)
    if name is None:
        return rules
    return [replace(rule, source=shown(rule.source)) for rule in rules]


def _load_file(
    path: Path, cwd: Path | None, home: Path | None, notes: list[str] | None
) -> list[Rule]:
    suffix = path.suffix.lower()
    if suffix == ".json":
        base = claude_settings_base(path, home=home)
        return claude_settings_rules(path, base=base, cwd=cwd, home=home, notes=notes)
    loaders: dict[str, Callable[[Path], list[Rule]]] = {
        ".rules": codex_rules,
        ".codexpolicy": codex_rules,
        ".toml": gemini_rules,
    }
    loader = loaders.get(suffix)
    if loader is None:
        raise ConfigFileError(
            os.fspath(path),
            "",
            f"unknown rule file {suffix or '(no extension)'!r}: use a Claude Code settings "
            "file (.json), a Codex rules file (.rules) or a Gemini CLI policy (.toml)",
        )
    return loader(path)
