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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import msgspec

Decision = Literal["allow", "ask", "deny"]

STRICTNESS: Mapping[Decision, int] = {"deny": 0, "ask": 1, "allow": 2}
"""deny beats ask beats allow, whatever the order or the specificity of the rules."""


class ShellCommand(msgspec.Struct, frozen=True):
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
    program: str = ""
    """The program as written when it was given by path (``/usr/bin/git``, ``./git``;
    ``argv[0]`` is then its base name), else empty: Codex's ``host_executable``."""
    forms: tuple[tuple[str, ...], ...] = ()
    """Other spellings of the same command that deny and ask rules match too (allow rules
    do not): git's subcommand without the global options before it (``git -C repo push``
    is also ``git push``), so ``Bash(git push *)`` holds whatever options precede it."""

    def spellings(self) -> tuple[tuple[str, tuple[str, ...], str, bool], ...]:
        """Each spelling a command rule is matched on -- its text (the argv joined by
        spaces) and argv -- with the subject it then matches and whether only deny and
        ask rules see it: the command as it runs (only them when its program was given
        by path: an allow of ``git`` does not cover ``./git``), the command as written,
        each wrapper level, each other form."""
        argv, text, program = self.argv, self.text, self.program
        if not (program or self.layers or self.forms):  # most commands: as they run
            return ((text, argv, text, False),) if argv is not None else ()
        found: list[tuple[str, tuple[str, ...], str, bool]] = []
        if argv is not None:
            found.append((text, argv, text, bool(program)))
            if program:
                written = (program, *argv[1:])
                found.append((" ".join(written), written, text, False))
        for layer in self.layers:
            joined = " ".join(layer)
            found.append((joined, layer, joined, False))
        found += [(" ".join(form), form, text, True) for form in self.forms]
        return tuple(found)


class CallView(msgspec.Struct, frozen=True):
    """The facts of one tool call that permission rules look at, read once per call (a
    struct: built in C, once per call)."""

    tool: str  # the normalized name (normalize_tool_name: "Bash" is "exec"), as view_of gives
    args: Mapping[str, Any]
    commands: tuple[ShellCommand, ...] = ()
    reads: tuple[str, ...] = ()  # absolute paths
    writes: tuple[str, ...] = ()  # absolute paths (edits, redirection targets)
    domains: tuple[str, ...] = ()
    unparsed: bool = False  # a command line the shell model could not read
    # the writes of a command line that are redirection targets (``> file``): an allow
    # of the line must cover them too, with an ``Edit`` rule, as in Claude Code
    redirected: tuple[str, ...] = ()


class Matcher(Protocol):
    """The predicate half of a rule: the subjects of ``view`` it matches (each command's
    ``text``, a path, a domain, the tool's name), empty when none.  ``decision`` is the
    rule's own: some spellings match differently in allow and in deny/ask rules (Claude
    Code's deny/ask rules see past any leading ``VAR=value``; its allow rules do not).

    Optional attributes the engine reads to do less: ``applies(tool)`` (whether calls of
    ``tool`` can match at all), ``uses_args`` (False: the matcher reads only the view's
    facts, so its judgements can be remembered), ``paths_only`` (True: it matches only
    paths read or written, so a call with none skips it), ``command_pattern`` (a regex
    over command texts, folded with the others into one)."""

    def match(self, view: CallView, decision: Decision) -> tuple[str, ...]: ...


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule as its source wrote it, with its decision and where it came from."""

    decision: Decision
    text: str  # as written: "Bash(git push:*)", 'prefix_rule(pattern=["git", "push"])'
    source: str  # "interpose.toml", "/repo/.claude/settings.json", "/x/default.rules:12"
    matcher: Matcher = field(compare=False)
    justification: str = ""


class Match(msgspec.Struct, frozen=True):
    """A rule that matched, and what it matched (a command, a path, a domain)."""

    rule: Rule
    subject: str


class Judgement(msgspec.Struct, frozen=True):
    """What the rules decided for one call: ``None`` when no rule has an opinion.

    ``reason`` names the rules that decided, their sources and what they matched; it is
    written when someone reads it (an allow's, most of the time, never is).
    """

    decision: Decision | None
    matches: tuple[Match, ...]
    note: str = ""  # the reason when it is not the matches' (no rule, a part unread)

    @property
    def reason(self) -> str:
        if self.note or self.decision is None:
            return self.note
        return reason_of(self.decision, self.matches)


_VERBS = {"deny": "denied", "ask": "approval asked", "allow": "allowed"}


def reason_of(decision: Decision, matches: Sequence[Match]) -> str:
    """``denied by Bash(git push:*) (interpose.toml) on 'git push origin'``: each rule
    once, with the subjects it matched."""
    verb = _VERBS[decision]
    if len(matches) == 1:
        rule = matches[0].rule
        why = f": {rule.justification}" if rule.justification else ""
        return f"{verb} by {rule.text} ({rule.source}) on {matches[0].subject!r}{why}"
    by_rule: dict[Rule, list[str]] = {}
    for m in matches:
        by_rule.setdefault(m.rule, []).append(m.subject)
    parts = []
    for rule, matched in by_rule.items():
        shown = ", ".join(repr(s) for s in dict.fromkeys(matched))
        why = f": {rule.justification}" if rule.justification else ""
        parts.append(f"{rule.text} ({rule.source}) on {shown}{why}")
    return f"{verb} by " + "; ".join(parts)
