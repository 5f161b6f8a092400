"""Claude Code's permission-rule syntax, parsed into :class:`.model.Rule`.

The forms (``Tool`` or ``Tool(specifier)``):

- ``Bash`` (== ``Bash(*)``): every call of the tool.  ``Bash(npm run build)``: exactly
  that command; ``*`` matches any run of characters, spaces included, anywhere
  (``Bash(git * main)``); a trailing `` *`` keeps a word boundary (``Bash(ls *)`` matches
  ``ls -la`` and ``ls``, not ``lsof``); the legacy ``:*`` only at the very end is the same
  (``Bash(git push:*)``).  Matched against every simple command the shell model finds, as
  it will run (:mod:`.view`); deny and ask rules also see each wrapper level
  (``Bash(sudo *)`` denies ``sudo rm x``).  ``Bash(command:...)`` is ignored (a warning),
  as in Claude Code.
- ``Read(path)``, ``Edit(path)``: gitignore-style patterns; ``//abs`` from the root,
  ``~/p`` from the home, ``/p`` from ``base`` (the directory of the settings file or of
  ``interpose.toml``), ``./p`` or ``p`` from ``cwd``; a name without a ``/`` matches at
  any depth (``Read(.env)`` == ``Read(**/.env)``); a pattern naming a directory covers
  what is below it.  ``Read`` rules see the file tools that read (``read``, ``grep``,
  ``glob``) and every path a command reads (``cat .env``); ``Edit`` rules the tools that
  write and every path a command writes (redirections; ``/dev/null`` is exempt).  A
  ``Read`` deny or ask also covers writes there.  ``Write(path)`` and ``Glob(path)`` are
  accepted but never consulted (a warning, as in Claude Code: use ``Edit``/``Read``).
- ``WebFetch(domain:example.com)``: the host of the fetched URL; ``*.example.com`` is any
  subdomain at any depth (not the apex); other ``*`` stay within one label.
- ``mcp__server``, ``mcp__server__*``, ``mcp__server__tool``, ``mcp__server__get_*``.
- ``Agent(name)`` (and the older ``Task(name)``): a subagent by its ``subagent_type``.
- ``Tool(param:value)`` (deny and ask only): a top-level scalar argument, ``*`` allowed.
- Tool-name globs (``*``, ``mcp__*``): deny and ask only; allow rules may glob only after
  a literal ``mcp__<server>__``.

What differs from Claude Code: commands are judged as they will run (through ``sudo``,
``env``, ``bash -c``, ``xargs``, ``find -exec``, substitutions), so an allow must cover
every command *and* each non-transparent wrapper level (``Bash(sudo *)`` alone does not
allow ``sudo rm x``: ``rm x`` must be allowed too; a leading ``VAR=value`` that is not
known-safe is such a level, as in Claude Code); a
bare file name in a deny or ask rule matches at any depth anywhere, in an allow rule only
below ``cwd``; symlinks are not followed.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from ..errors import ConfigError
from ..external.command.tool_mapping import default_tool_mapping
from ..pipeline.tools import normalize_tool_name
from .engine import subjects
from .model import CallView, Decision, Rule

__all__ = [
    "CLAUDE_TOOLS",
    "BashRule",
    "DomainRule",
    "ParamRule",
    "PathRule",
    "ToolRule",
    "claude_tools",
    "parse_claude_rule",
    "warning_of",
]

CLAUDE_TOOLS: Mapping[str, frozenset[str]] = {
    "bash": frozenset({"exec", "bash"}),
    "read": frozenset({"read", "grep", "glob"}),
    "edit": frozenset({"edit", "write", "multi_edit", "multiedit", "notebook_edit", "apply_patch"}),
    "write": frozenset({"write"}),
    "agent": frozenset({"task", "agent"}),
    "task": frozenset({"task", "agent"}),
    "webfetch": frozenset({"web_fetch", "webfetch"}),
}
"""Claude Code tool (lower-cased) -> the interpose tools its rules apply to, beyond the
rows of :func:`interpose.external.command.default_tool_mapping`."""

_RULE = re.compile(r"([^()\s]+)(?:\((.*)\))?", re.DOTALL)
_PARAM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(.*)", re.DOTALL)
_TOOL_NAME = re.compile(r"[A-Za-z0-9_*.\-]+")


def claude_tools(name: str) -> frozenset[str]:
    """The interpose tool names a Claude Code tool name stands for (``Bash``: ``exec``;
    ``Edit``: every tool that edits a file); an unknown name, itself normalized."""
    key = name.lower()
    known = CLAUDE_TOOLS.get(key)
    if known is not None:
        return known
    row = default_tool_mapping().row(key)
    if row is not None:
        return frozenset({row.tool, key})
    return frozenset({normalize_tool_name(name)})


def warning_of(rule: Rule) -> str:
    """Why ``rule`` is accepted but has no effect (``Write(path)``, ``Bash(command:x)``,
    a parameter rule in an allow list), or "" when it works; it names the rule, not its
    source."""
    return getattr(rule.matcher, "warning", "")


def parse_claude_rule(
    text: str,
    decision: Decision,
    *,
    source: str,
    base: Path,
    cwd: Path | None = None,
    home: Path | None = None,
) -> Rule:
    """One rule in Claude Code's syntax (see the module docstring).

    ``base`` anchors ``/path`` patterns; ``cwd`` (default: the process's) anchors
    ``./path`` and bare ones; ``home`` (default: the user's) anchors ``~/path``.

    Raises:
        ConfigError: the text is not a rule (naming the rule and ``source``).
    """
    if decision not in ("allow", "ask", "deny"):
        raise ConfigError(f"{source}: {text!r}: unknown decision {decision!r}")
    m = _RULE.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None:
        raise ConfigError(
            f"{source}: {text!r} is not a permission rule (expected Tool or Tool(specifier), "
            f"e.g. 'Bash(git push:*)', 'Read(./.env)', 'mcp__github')"
        )
    name, spec = m.group(1), m.group(2)
    where = f"{source}: {decision} rule {text!r}"
    if not _TOOL_NAME.fullmatch(name):
        raise ConfigError(f"{where}: {name!r} is not a tool name")
    anchors = _Anchors(base, cwd or Path.cwd(), home or Path.home())
    matcher = _matcher(name, spec, decision, where, anchors)
    if matcher.warning:  # no source in a warning: whoever reports it names the file
        matcher = replace(matcher, warning=matcher.warning.replace(source + ": ", "", 1))
    return Rule(decision, text, source, matcher)


@dataclass(frozen=True, slots=True)
class _Anchors:
    base: Path
    cwd: Path
    home: Path


def _matcher(
    name: str, spec: str | None, decision: Decision, where: str, anchors: _Anchors
) -> ToolRule | BashRule | PathRule | DomainRule | ParamRule:
    if "*" in name:
        return _tool_glob(name, spec, decision, where)
    tools = claude_tools(name)
    key = name.lower()
    if spec is None or spec in ("*", ""):
        return ToolRule(tools)
    if key == "bash":
        if spec.startswith("command:"):
            return ToolRule(frozenset(), f"{where}: Bash(command:...) is ignored (use Bash(...))")
        unquoted = _unquoted(spec)
        written = unquoted if unquoted is not None else spec
        head = written.split(" ", 1)[0]
        if head == written and written.endswith(":*"):  # git:* is git and git ...
            head = written[:-2]
        program = "" if "*" in head or not head else head
        if unquoted is not None:
            return BashRule(tools, _command_pattern(unquoted), program=program)
        return BashRule(tools, _command_pattern(spec), quoting=True, program=program)
    if key in ("read", "edit"):
        return _path_rule(key, spec, where, anchors)
    if key in ("write", "glob"):
        return ToolRule(
            frozenset(),
            f"{where}: {name}(path) rules are never consulted (as in Claude Code); "
            f"use {'Edit' if key == 'write' else 'Read'}(path)",
        )
    if key == "webfetch":
        if not spec.startswith("domain:"):
            return ToolRule(frozenset(), f"{where}: WebFetch rules take domain:NAME; ignored")
        return DomainRule(tools, _domain_pattern(spec[len("domain:") :], where))
    if key in ("agent", "task") and _PARAM.fullmatch(spec) is None:
        return ParamRule(tools, "subagent_type", _glob(spec))
    param = _PARAM.fullmatch(spec)
    if param is None and decision == "allow":
        # Claude Code's own settings carry such rules (Skill(name), Grep(**), LS(**)):
        # the file loads; an allow interpose cannot read allows nothing
        return ToolRule(frozenset(), f"{where}: {name}({spec}) cannot be judged here; ignored")
    if param is None:
        raise ConfigError(f"{where}: {name} takes no specifier but Tool(param:value)")
    if decision == "allow":
        return ToolRule(
            frozenset(), f"{where}: Tool(param:value) rules apply only in deny and ask lists"
        )
    return ParamRule(tools, param.group(1), _glob(param.group(2)))


def _tool_glob(name: str, spec: str | None, decision: Decision, where: str) -> ToolRule:
    literal = re.match(r"mcp__[^_*][^*]*?__", name)
    if decision == "allow" and (literal is None or "*" in literal.group(0)):
        raise ConfigError(
            f"{where}: an allow rule may glob a tool name only after a literal "
            f"'mcp__<server>__' (e.g. 'mcp__github__get_*')"
        )
    if spec not in (None, "*", ""):
        raise ConfigError(f"{where}: a tool-name glob takes no specifier")
    return ToolRule(frozenset(), pattern=_glob(name.lower()))


# -- matchers -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ToolRule:
    """Every call of the tools (a set, or a glob over the name; MCP names included)."""

    tools: frozenset[str]
    uses_args: ClassVar[bool] = False  # looks at the raw arguments (see Permissions)
    warning: str = ""
    pattern: re.Pattern[str] | None = None

    def applies(self, tool: str) -> bool:
        """Whether calls of ``tool`` (a normalized name) can match at all."""
        return (
            tool in self.tools
            or (self.pattern is not None and self.pattern.fullmatch(tool) is not None)
            or (not self.warning and _mcp_server(self.tools, tool))
        )

    def match(self, view: CallView, decision: Decision) -> tuple[str, ...]:
        return subjects(view) if self.applies(view.tool) else ()


def _mcp_server(tools: frozenset[str], tool: str) -> bool:
    """``mcp__server`` covers every tool of the server."""
    return tool.startswith("mcp__") and any(
        t.startswith("mcp__") and t.count("__") == 1 and tool.startswith(t + "__") for t in tools
    )


@dataclass(frozen=True, slots=True)
class BashRule:
    """A command pattern, matched on each simple command (and, for deny/ask, each
    wrapper level around it)."""

    tools: frozenset[str]
    pattern: re.Pattern[str]
    uses_args: ClassVar[bool] = False  # looks at the raw arguments (see Permissions)
    warning: str = ""

    quoting: bool = False  # the pattern holds quotes: also try the argv shell-quoted
    # the first word of every text the pattern matches ("git" for git push:*), or ""
    # when the pattern starts with a wildcard: the engine looks up rules by it
    program: str = ""

    def applies(self, tool: str) -> bool:
        return tool in self.tools

    @property
    def command_pattern(self) -> re.Pattern[str]:
        """What the engine folds into one regex with the other command rules: this rule
        matches only commands (and wrapper levels) whose text this pattern fullmatches."""
        return self.pattern

    def match(self, view: CallView, decision: Decision) -> tuple[str, ...]:
        if view.tool not in self.tools:
            return ()
        allow, full = decision == "allow", self.pattern.fullmatch
        return tuple(
            dict.fromkeys(
                subject
                for command in view.commands
                for text, argv, subject, strict in command.spellings()
                if not (strict and allow)
                and (
                    full(text) is not None or (self.quoting and full(shlex.join(argv)) is not None)
                )
            )
        )


def _unquoted(spec: str) -> str | None:
    """``spec`` with its shell quoting removed as the shell removes it from a command
    (``cd "d:/Repos/x":*`` is ``cd d:/Repos/x:*``, matched on the command's words joined
    by spaces); ``spec`` itself when it has no quotes; None when the quotes do not parse
    (the rule is then matched as written, and on the command shell-quoted)."""
    if not any(q in spec for q in "'\"\\"):
        return spec
    suffix = spec[-2:] if spec.endswith((":*", " *")) else ""
    body = spec[: len(spec) - len(suffix)]
    try:
        words = shlex.split(body.replace("*", "\x00"))
    except ValueError:
        return None
    return " ".join(words).replace("\x00", "*") + suffix


def _command_pattern(spec: str) -> re.Pattern[str]:
    """``git push:*`` / ``ls *`` / ``git * main`` as a regex over a command's text."""
    boundary = False
    if spec.endswith((":*", " *")):
        spec, boundary = spec[:-2], True
    body = ".*".join(re.escape(part) for part in spec.split("*"))
    if boundary:
        body += r"(?: .*)?"
    return re.compile(body, re.DOTALL)


@dataclass(frozen=True, slots=True)
class PathRule:
    """A gitignore-style pattern over absolute paths: ``Read`` rules on reads (and, in
    deny/ask, writes), ``Edit`` rules on writes."""

    kind: str  # "read" or "edit"
    pattern: re.Pattern[str]
    anywhere: re.Pattern[str] | None = None  # deny/ask: a bare name at any depth
    uses_args: ClassVar[bool] = False  # looks at the raw arguments (see Permissions)
    paths_only: ClassVar[bool] = True  # matches nothing in a call without paths (see Permissions)
    warning: str = ""

    def applies(self, tool: str) -> bool:
        return True  # file tools, and the paths commands read and write

    def match(self, view: CallView, decision: Decision) -> tuple[str, ...]:
        if self.kind == "read":
            paths = view.reads if decision == "allow" else (*view.reads, *view.writes)
        else:
            paths = view.writes
        if not paths:  # most calls: nothing read or written
            return ()
        pattern = self.anywhere if self.anywhere is not None and decision != "allow" else None
        return tuple(
            p
            for p in paths
            if self.pattern.fullmatch(p) or (pattern is not None and pattern.fullmatch(p))
        )


def _path_rule(kind: str, spec: str, where: str, anchors: _Anchors) -> PathRule:
    if "\x00" in spec:
        raise ConfigError(f"{where}: a path pattern cannot hold a NUL byte")
    anywhere = None
    if spec.startswith("//"):
        root, rest = "/", spec[2:]
    elif spec == "~" or spec.startswith("~/"):
        root, rest = str(anchors.home), spec[2:]
    elif spec.startswith("/"):
        root, rest = str(anchors.base), spec[1:]
    else:
        root, rest = str(anchors.cwd), spec.removeprefix("./")
        head = rest.rstrip("/").removesuffix("/**")
        if "/" not in head and not spec.startswith(
            "./"
        ):  # a bare name, or one directory: deny/ask see it at any depth
            anywhere = _gitignore("/**/" + rest)
            if "/" not in rest.rstrip("/"):  # a bare name: at any depth below cwd
                rest = "**/" + rest
    return PathRule(kind, _gitignore(posixpath.normpath(posixpath.join(root, rest))), anywhere)


def _gitignore(pattern: str) -> re.Pattern[str]:
    """An absolute gitignore-style glob as a regex: ``**`` any depth, ``*`` and ``?``
    within a name, ``[...]`` classes; a match of a directory covers what is below it."""
    pattern = pattern.rstrip("/")  # "" for the root: everything below it
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (end := pattern.find("]", i + 2)) != -1:
            inner = pattern[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + inner[1:] if inner.startswith("!") else inner) + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + "(?:/.*)?", re.DOTALL)


@dataclass(frozen=True, slots=True)
class DomainRule:
    """``WebFetch(domain:...)`` over the hosts of a call."""

    tools: frozenset[str]
    pattern: re.Pattern[str]
    uses_args: ClassVar[bool] = False  # looks at the raw arguments (see Permissions)
    warning: str = ""

    def applies(self, tool: str) -> bool:
        return tool in self.tools

    def match(self, view: CallView, decision: Decision) -> tuple[str, ...]:
        if view.tool not in self.tools:
            return ()
        return tuple(d for d in view.domains if self.pattern.fullmatch(d.lower()))


def _domain_pattern(domain: str, where: str) -> re.Pattern[str]:
    domain = domain.strip().lower().rstrip(".")
    if not domain or "/" in domain or " " in domain:
        raise ConfigError(f"{where}: {domain!r} is not a domain")
    if domain.startswith("*."):
        rest = domain[2:]
        return re.compile(r"(?:[^.]+\.)+" + _label_glob(rest))
    return re.compile(_label_glob(domain))


def _label_glob(text: str) -> str:
    return r"[^.]*".join(re.escape(part) for part in text.split("*"))


@dataclass(frozen=True, slots=True)
class ParamRule:
    """``Tool(param:value)``: a top-level scalar argument; ``Agent(name)``: the
    subagent."""

    tools: frozenset[str]
    param: str
    pattern: re.Pattern[str]
    uses_args: ClassVar[bool] = True  # looks at the raw arguments (see Permissions)
    warning: str = ""

    def applies(self, tool: str) -> bool:
        return tool in self.tools

    def match(self, view: CallView, decision: Decision) -> tuple[str, ...]:
        if view.tool not in self.tools:
            return ()
        value = view.args.get(self.param)
        if value is None and self.param == "subagent_type":
            value = view.args.get("agent", view.args.get("name"))
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return ()
        text = str(value)
        return (f"{self.param}:{text}",) if self.pattern.fullmatch(text) else ()


def _glob(text: str) -> re.Pattern[str]:
    """``*`` as any run of characters; everything else literal."""
    return re.compile(".*".join(re.escape(p) for p in text.split("*")), re.DOTALL)
