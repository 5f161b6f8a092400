"""Gemini CLI policy files (``.gemini/policies/*.toml``): ``[[rule]]`` tables as rules.

The fields Gemini CLI documents (google-gemini/gemini-cli
``docs/reference/policy-engine.md``) map as follows::

    toolName        the tool(s), by Gemini's name or interpose's (run_shell_command is
                    also exec, read_file read, write_file write, replace edit,
                    google_web_search web_search); "*",
                    "mcp_<server>_*", "mcp_*" and mcpName select MCP tools
                    (mcp__<server>__<tool> in interpose)
    commandPrefix   a shell command starts with it, whole words (``git`` is not
                    ``github``) -- matched on every simple command the shell model finds
    commandRegex    searched in ``"command":"<the simple command>"``, as Gemini does
    argsPattern     searched in the call's arguments as sorted JSON (for a shell tool,
                    once per simple command, its text as the ``command``)
    decision        allow | ask_user (an ask) | deny
    priority        0-999, required: see below
    denyMessage     the rule's justification (``deny_message`` too)
    allowRedirection
                    without it an allow rule does not cover a command line that
                    redirects to a file (Gemini asks then)

Gemini lets the highest-priority matching rule win; interpose's rules are deny > ask >
allow whatever their order.  The two agree unless a less strict rule outranks a stricter
one that can match the same call (``ask_user`` for ``git`` at 100, ``allow`` for
``git status`` at 200): such a file is refused, naming both rules, since loading it
would decide differently from Gemini.  Fields interpose cannot honour (``modes``,
``subagent``, ``toolAnnotations``, ``interactive``) are refused too, as are
``[[safety_checker]]`` tables.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase, translate
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found]

from ..errors import ConfigFileError
from .engine import subjects
from .model import STRICTNESS, CallView, Decision, Rule

__all__ = ["GEMINI_TOOLS", "GeminiMatcher", "gemini_rules"]

GEMINI_TOOLS: Mapping[str, str] = {  # a rule names both: either may be the call's
    "run_shell_command": "exec",
    "read_file": "read",
    "read_many_files": "read",
    "write_file": "write",
    "replace": "edit",
    "web_fetch": "web_fetch",
    "google_web_search": "web_search",
}
"""Gemini CLI tool name -> interpose's; other names are taken as they are."""

_DECISIONS: Mapping[str, Decision] = {"allow": "allow", "ask_user": "ask", "deny": "deny"}
_FIELDS = frozenset(
    {
        "toolName",
        "mcpName",
        "argsPattern",
        "commandPrefix",
        "commandRegex",
        "decision",
        "priority",
        "denyMessage",
        "deny_message",
        "allowRedirection",
        "allow_redirection",
    }
)
_REFUSED = {
    "modes": "interpose has no approval modes",
    "subagent": "interpose does not tell subagents apart",
    "toolAnnotations": "interpose does not see MCP tool annotations here",
    "interactive": "interpose does not know whether a person is at the keyboard",
}
_RULE_HEADER = re.compile(r"^[ \t]*\[\[[ \t]*rule[ \t]*\]\]", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class GeminiMatcher:
    """One ``[[rule]]``: tool-name globs (interpose's names), and at most one condition on
    the arguments: ``prefixes`` (commandPrefix) or ``pattern`` (commandRegex and
    argsPattern, already in their ``"command":"...`` form)."""

    tools: tuple[str, ...]
    prefixes: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    redirection: bool = False  # allowRedirection
    # precomputed: the tool globs as one regex, each prefix followed by a space
    names: re.Pattern[str] = field(init=False, repr=False, compare=False)
    spaced: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = re.compile("|".join(translate(glob) for glob in self.tools))
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "spaced", tuple(p + " " for p in self.prefixes))

    @property
    def uses_args(self) -> bool:
        """Whether the rule looks at the raw arguments (a pattern): judgements of calls
        it may match are not remembered (see Permissions)."""
        return self.pattern is not None

    def applies(self, tool: str) -> bool:
        return self.names.match(tool.lower()) is not None

    def match(self, view: CallView, decision: Decision) -> tuple[str, ...]:
        if not self.applies(view.tool):
            return ()
        if decision == "allow" and view.redirected and not self.redirection:
            return ()  # Gemini asks for a redirection the rule does not allow
        if not self.prefixes and self.pattern is None:
            return subjects(view)
        if not view.commands:  # not a shell tool: the rule's pattern on its arguments
            if self.pattern is not None and self.pattern.search(_stable(view.args)):
                return subjects(view)
            return ()
        found: list[str] = []
        fits, args = self.fits, view.args
        for command in view.commands:
            if command.argv is not None and fits(" ".join(command.argv), args):
                found.append(command.text)
            for layer in command.layers:
                line = " ".join(layer)
                if fits(line, args):
                    found.append(line)
            if decision != "allow":
                for form in command.forms:  # git -C x push is git push
                    if fits(" ".join(form), args):
                        found.append(command.text)
        if found and self.redirection:  # allowRedirection: the targets are covered too
            found += view.redirected
        return tuple(found)

    def fits(self, line: str, args: Mapping[str, Any]) -> bool:
        if self.prefixes:
            return line in self.prefixes or line.startswith(self.spaced)
        pattern = self.pattern
        return (
            pattern is not None and pattern.search(_stable({**args, "command": line})) is not None
        )


def _stable(args: Mapping[str, Any]) -> str:
    """Gemini's stable JSON of the arguments: sorted keys, no spaces."""
    if len(args) == 1 and isinstance(args.get("command"), str):  # the usual shell call
        return '{"command":' + json.dumps(args["command"], ensure_ascii=False) + "}"
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def gemini_rules(path: Path) -> list[Rule]:
    """The rules of a Gemini CLI policy file, each with its source ``path:line``.

    Raises:
        ConfigFileError: (a ``ConfigError``) the file cannot be read or parsed, a rule is
            invalid or uses a field interpose cannot honour, or the priorities order two
            rules that can match the same call differently from deny > ask > allow.
    """
    name = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(name, "", f"cannot read it: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(name, "", f"invalid TOML: {exc}") from None
    extra = set(data) - {"rule"}
    if extra:
        raise ConfigFileError(
            name, sorted(extra)[0], "only [[rule]] tables are read (safety checkers are not)"
        )
    tables = data.get("rule", [])
    if not isinstance(tables, list):
        raise ConfigFileError(name, "rule", "expected [[rule]] tables")
    lines = [text.count("\n", 0, m.start()) + 1 for m in _RULE_HEADER.finditer(text)]
    read = [
        _Read.of(table, name, i, f"{name}:{lines[i]}" if i < len(lines) else f"{name} rule[{i}]")
        for i, table in enumerate(tables)
    ]
    _check_order(read, name)
    return [r.rule for r in read]


@dataclass(frozen=True, slots=True)
class _Read:
    rule: Rule
    matcher: GeminiMatcher
    priority: int
    index: int

    @classmethod
    def of(cls, table: object, file: str, index: int, source: str) -> _Read:
        where = f"rule[{index}]"

        def fail(field: str, problem: str) -> ConfigFileError:
            return ConfigFileError(file, f"{where}.{field}" if field else where, problem)

        if not isinstance(table, dict):
            raise fail("", "expected a table")
        for key in table:
            if key in _REFUSED:
                raise fail(key, f"not supported: {_REFUSED[key]}")
            if key not in _FIELDS:
                raise fail(key, "unknown field")
        raw = table.get("decision")
        decision = _DECISIONS.get(raw) if isinstance(raw, str) else None
        if decision is None:
            raise fail("decision", f"expected allow, ask_user or deny, got {raw!r}")
        priority = table.get("priority")
        if type(priority) is not int or not 0 <= priority <= 999:
            raise fail("priority", f"expected an integer from 0 to 999, got {priority!r}")
        tools = _tools(table, fail)
        prefixes = _strings(table.get("commandPrefix"), "commandPrefix", fail)
        regex, args = table.get("commandRegex"), table.get("argsPattern")
        if (prefixes or regex is not None) and table.get("toolName") != "run_shell_command":
            raise fail(
                "toolName", 'commandPrefix and commandRegex need toolName = "run_shell_command"'
            )
        if sum(x is not None and x != () for x in (prefixes or None, regex, args)) > 1:
            raise fail("", "commandPrefix, commandRegex and argsPattern are mutually exclusive")
        pattern = None
        for key, value, prefix in (
            ("commandRegex", regex, '"command":"'),
            ("argsPattern", args, ""),
        ):
            if value is None:
                continue
            if not isinstance(value, str):
                raise fail(key, "expected a string")
            try:
                pattern = re.compile(prefix + value)
            except re.error as exc:
                raise fail(key, f"invalid regex {value!r}: {exc}") from None
        redirection = table.get("allowRedirection", table.get("allow_redirection", False))
        message = table.get("denyMessage", table.get("deny_message", ""))
        if not isinstance(redirection, bool):
            raise fail("allowRedirection", "expected true or false")
        if not isinstance(message, str):
            raise fail("denyMessage", "expected a string")
        matcher = GeminiMatcher(tools, prefixes, pattern, redirection)
        shown = ", ".join(
            f"{k}={json.dumps(v)}"
            for k, v in table.items()
            if k not in ("denyMessage", "deny_message")
        )
        rule = Rule(decision, f"[[rule]] {shown}", source, matcher, message)
        return cls(rule, matcher, priority, index)


def _strings(value: object, field: str, fail: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if (
        not isinstance(items, list)
        or not items
        or not all(isinstance(v, str) and v.strip() for v in items)
    ):
        raise fail(field, "expected a non-empty string or a list of them")
    return tuple(v.strip() for v in items if isinstance(v, str))


def _tools(table: Mapping[str, object], fail: Any) -> tuple[str, ...]:
    """The rule's tools as globs over interpose's names."""
    names = _strings(table.get("toolName"), "toolName", fail)
    server = table.get("mcpName")
    if server is not None:
        if not isinstance(server, str) or not server:
            raise fail("mcpName", "expected a server name")
        if not names or names == ("*",):
            return (f"mcp__{server}__*".lower(),)  # interpose's names are lower-case
        return tuple(f"mcp__{server}__{n}".lower() for n in names)
    if not names:
        raise fail("toolName", 'required (use "*" for every tool)')
    globs: list[str] = []
    for name in names:
        if "__" in name:
            raise fail("toolName", f"{name!r}: Gemini's MCP names are mcp_<server>_<tool>")
        if name == "mcp_*":
            globs.append("mcp__*")
        elif name.startswith("mcp_"):
            server_name, _, tool = name[4:].partition("_")
            if not server_name or not tool:
                raise fail("toolName", f"{name!r} is not mcp_<server>_<tool>")
            globs.append(f"mcp__{server_name}__{tool}".lower())
        else:
            # Gemini's name and interpose's: an application may call the tool either way
            globs += dict.fromkeys((GEMINI_TOOLS.get(name, name.lower()), name.lower()))
    return tuple(globs)


def _check_order(rules: Sequence[_Read], file: str) -> None:
    """Refuse a file whose priorities let a less strict rule win over a stricter one on
    some call: deny > ask > allow would decide that call differently."""
    for loose in rules:
        for strict in rules:
            if STRICTNESS[strict.rule.decision] >= STRICTNESS[loose.rule.decision]:
                continue
            wins = loose.priority > strict.priority or (
                loose.priority == strict.priority and loose.index < strict.index
            )
            if wins and _overlap(loose.matcher, strict.matcher):
                raise ConfigFileError(
                    file,
                    f"rule[{loose.index}]",
                    f"{_said(loose)} outranks {_said(strict)} (rule[{strict.index}]) on calls "
                    "both match; interpose decides deny > ask > allow whatever the priority, "
                    "so it would decide those calls differently from Gemini CLI: give the "
                    "stricter rule the higher priority, or narrow one of them",
                )


def _said(read: _Read) -> str:
    return f"{read.rule.decision} at priority {read.priority}"


def _overlap(a: GeminiMatcher, b: GeminiMatcher) -> bool:
    """Whether two rules can match one call (erring towards yes)."""
    if not any(_globs_meet(x, y) for x in a.tools for y in b.tools):
        return False
    if a.prefixes and b.prefixes:
        return any(
            p == q or p.startswith(q + " ") or q.startswith(p + " ")
            for p in a.prefixes
            for q in b.prefixes
        )
    return True


def _globs_meet(a: str, b: str) -> bool:
    if "*" not in a or "*" not in b:
        return fnmatchcase(a, b) or fnmatchcase(b, a)
    # two globs: they meet unless their literal starts already differ
    x, y = a.split("*", 1)[0], b.split("*", 1)[0]
    return x.startswith(y) or y.startswith(x)
