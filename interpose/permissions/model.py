"""What a permission rule is judged on, and what a judgement says.

A tool call is read once into a :class:`CallView` -- the facts rules look at: the tool's
name and arguments, every simple command the shell model found in a command line (as it
will run: wrappers peeled, quoting and assignments followed), the paths read and written
(by a file tool or by a command), the domains fetched.  A :class:`Rule` is a predicate on
those facts with a decision; :class:`Judgement` is what the rules decided and why.

Sources (``interpose.toml``'s ``[permissions]``, Claude Code settings files, Codex
``.rules`` files) only differ in how they spell a rule; they all become :class:`Rule`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

Decision = Literal["allow", "ask", "deny"]

STRICTNESS: Mapping[Decision, int] = {"deny": 0, "ask": 1, "allow": 2}
"""deny beats ask beats allow, whatever the order or the specificity of the rules."""


@dataclass(frozen=True, slots=True)
class ShellCommand:
    """One simple command of a command line, as the shell would run it.

    ``argv`` is the command after wrappers (``sudo``, ``env``, ``timeout``, ``xargs``,
    ``bash -c``...) are peeled and words expanded; ``None`` when the model cannot tell
    what runs (``$CMD args``, a name made at run time): such a command never matches an
    allow rule.  ``text`` is the command as written, for messages.
    """

    argv: tuple[str, ...] | None
    text: str
    layers: tuple[tuple[str, ...], ...] = ()
    """The argv at each wrapper level around ``argv``, outermost first (``sudo -u x
    timeout 5 rm f``: ``("sudo", "-u", "x", "timeout", "5", "rm", "f")``, then
    ``("timeout", "5", "rm", "f")``): deny and ask rules match any level."""


@dataclass(frozen=True, slots=True)
class CallView:
    """The facts of one tool call that permission rules look at, read once per call."""

    tool: str  # the normalized name (normalize_tool_name: "Bash" is "exec"), as view_of gives
    args: Mapping[str, Any]
    commands: tuple[ShellCommand, ...] = ()
    reads: tuple[str, ...] = ()  # absolute paths
    writes: tuple[str, ...] = ()  # absolute paths (edits, redirection targets)
    domains: tuple[str, ...] = ()
    unparsed: bool = False  # a command line the shell model could not read


class Matcher(Protocol):
    """The predicate half of a rule: the subjects of ``view`` it matches (each command's
    ``text``, a path, a domain, the tool's name), empty when none.  ``decision`` is the
    rule's own: some spellings match differently in allow and in deny/ask rules (Claude
    Code's deny/ask rules see past any leading ``VAR=value``; its allow rules do not)."""

    def match(self, view: CallView, decision: Decision) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule as its source wrote it, with its decision and where it came from."""

    decision: Decision
    text: str  # as written: "Bash(git push:*)", 'prefix_rule(pattern=["git", "push"])'
    source: str  # "interpose.toml", "/repo/.claude/settings.json", "/x/default.rules:12"
    matcher: Matcher = field(compare=False)
    justification: str = ""


@dataclass(frozen=True, slots=True)
class Match:
    """A rule that matched, and what it matched (a command, a path, a domain)."""

    rule: Rule
    subject: str


@dataclass(frozen=True, slots=True)
class Judgement:
    """What the rules decided for one call: ``None`` when no rule has an opinion."""

    decision: Decision | None
    matches: tuple[Match, ...]
    reason: str
