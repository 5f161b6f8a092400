"""The permission engine: deny beats ask beats allow, judged on every command of a call.

:class:`Permissions` holds rules from any source and judges a :class:`.model.CallView`:

- a deny rule matching *any* command, path or domain of the call denies it; else an ask
  rule matching any of them asks; whatever the order the rules were written in;
- else the call is allowed only when allow rules cover *every* subject of the call
  (:func:`subjects`): each simple command of a command line (and each wrapper level
  around it that may change what it can do: ``sudo``, ``env X=..``, not ``timeout``) and
  each file it redirects output to (an ``Edit`` rule; ``/dev/null`` needs none), or
  the paths of a file tool, or the domains of a fetch, or else the tool itself;
- a command whose name only run time knows never matches an allow rule, and a line the
  shell model could not read (all of it) is never allowed;
- no rule matching: decision None (the call goes on to the other guards).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from contextlib import suppress
from typing import NamedTuple

from ..middleware.builtins.command_safety.facts import transparent
from .model import CallView, Decision, Judgement, Match, Rule, ShellCommand

__all__ = ["Permissions", "command_subjects", "subjects"]


def command_subjects(command: ShellCommand) -> list[str]:
    """What an allow rule must cover of one command: the command itself, and each
    wrapper level around it that is not merely transparent (``timeout``, ``nice``...)."""
    return [command.text, *(" ".join(layer) for layer in command.layers if not transparent(layer))]


def subjects(view: CallView) -> tuple[str, ...]:
    """Everything allow rules must cover for ``view`` to be allowed: the commands of a
    command line; else the paths of a file tool; else the domains; else the tool."""
    commands = view.commands
    if len(commands) == 1 and not commands[0].layers and not view.redirected:
        return (commands[0].text,)
    if commands:
        found = (s for c in view.commands for s in command_subjects(c))
        return tuple(dict.fromkeys((*found, *view.redirected)))
    if view.reads or view.writes:
        return tuple(dict.fromkeys((*view.reads, *view.writes)))
    if view.domains:
        return view.domains
    return (view.tool,)


class Permissions:
    """An ordered set of rules, judged as Claude Code does (see the module docstring)."""

    __slots__ = ("_by_tool", "_judged", "_rules")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self._rules = tuple(rules)
        # tool -> its (deny, ask, allow) rules: those whose matcher can match its calls
        self._by_tool: dict[str, _Lists] = {}
        self._judged: dict[tuple[object, ...], Judgement] = {}

    def __repr__(self) -> str:
        counts = {d: sum(r.decision == d for r in self._rules) for d in ("deny", "ask", "allow")}
        return "<Permissions " + " ".join(f"{d}={n}" for d, n in counts.items()) + ">"

    def _lists(self, tool: str) -> _Lists:
        lists = self._by_tool.get(tool)
        if lists is None:
            mine = [r for r in self._rules if _applies(r, tool)]
            lists = _Lists(
                _group(r for r in mine if r.decision == "deny"),
                _group(r for r in mine if r.decision == "ask"),
                _group(r for r in mine if r.decision == "allow"),
                not any(getattr(r.matcher, "uses_args", True) for r in mine),
            )
            if len(self._by_tool) < _TOOLS_KEPT:
                self._by_tool[tool] = lists
        return lists

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self._rules

    def judge(self, view: CallView) -> Judgement:
        """The decision of the rules on ``view``, with the rules that made it.

        Remembered for the last calls whose rules look only at the view's facts (not at
        its raw arguments: ``Tool(param:value)`` rules and matchers that do not say):
        an agent repeats its commands, and a repeated one costs a lookup.
        """
        lists = self._lists(view.tool)
        if not lists.facts_only:
            return self._judge(view, lists)
        key = (
            view.tool,
            view.commands,
            view.reads,
            view.writes,
            view.domains,
            view.unparsed,
            view.redirected,
        )
        known = self._judged.get(key)
        if known is None:
            known = self._judge(view, lists)
            if len(self._judged) >= _JUDGED_KEPT:
                with suppress(StopIteration, KeyError, RuntimeError):  # another thread's
                    self._judged.pop(next(iter(self._judged)))  # the oldest out
            self._judged[key] = known
        return known

    def _judge(self, view: CallView, lists: _Lists) -> Judgement:
        if lists.deny is not None and (matches := _matches(lists.deny, view, "deny")):
            return Judgement("deny", matches)
        if lists.ask is not None and (matches := _matches(lists.ask, view, "ask")):
            return Judgement("ask", matches)
        if lists.allow is None:
            return _NONE
        matches = _matches(lists.allow, view, "allow")
        if not matches:
            return _NONE
        if view.unparsed:
            return Judgement(None, matches, _PARTIAL)
        covered = {m.subject for m in matches}
        missing = [s for s in subjects(view) if s not in covered]
        if missing:
            shown = ", ".join(repr(s) for s in missing[:3])
            return Judgement(None, matches, f"no allow rule covers {shown}")
        return Judgement("allow", matches)

    def decides(self, view: CallView) -> Decision | None:
        """Just the decision of :meth:`judge`."""
        return self.judge(view).decision


class _Group(NamedTuple):
    """The rules of one decision for one tool: those a single regex can judge at once
    (``command_pattern``: matchers of command texts, like ``Bash(...)``) and the rest."""

    commands: tuple[Rule, ...]
    quoting: bool  # some of ``commands`` also try the argv shell-quoted
    others: tuple[Rule, ...]
    # the command rules by the first word of the texts they can match ("git"), those
    # that start with a wildcard under "" (and in every other entry too): a text is
    # matched against its own program's few rules, not against them all; the union's
    # group that matched (``m.lastindex``) names the first rule that matches it
    by_program: dict[str, _Union]


def _group(rules: Iterable[Rule]) -> _Group | None:
    """The group of ``rules`` (of one decision, for one tool), or None when empty."""
    commands: list[Rule] = []
    others: list[Rule] = []
    for rule in rules:
        pattern = getattr(rule.matcher, "command_pattern", None)
        (commands if isinstance(pattern, re.Pattern) else others).append(rule)
    if not commands and not others:
        return None
    quoting = any(getattr(r.matcher, "quoting", False) for r in commands)
    buckets: dict[str, list[Rule]] = {}
    for rule in commands:
        buckets.setdefault(getattr(rule.matcher, "program", ""), []).append(rule)
    wild = buckets.pop("", [])
    by_program = {
        program: _union([r for r in commands if r in mine or r in wild])
        for program, mine in buckets.items()
    }
    if wild:
        by_program[""] = _union(wild)
    return _Group(
        tuple(commands),
        quoting,
        tuple(others),
        {k: v for k, v in by_program.items() if v is not None},
    )


class _Union(NamedTuple):
    pattern: re.Pattern[str]
    rules: tuple[Rule | None, ...]  # by group number: the rule of the group that matched


def _union(rules: Sequence[Rule]) -> _Union | None:
    """One regex of the ``command_pattern`` of each rule, one group each, in order."""
    if not rules:
        return None
    alternatives = "|".join(
        f"({rule.matcher.command_pattern.pattern})"  # type: ignore[attr-defined]
        for rule in rules
    )
    return _Union(re.compile(alternatives, re.DOTALL), (None, *rules))


class _Lists(NamedTuple):
    deny: _Group | None
    ask: _Group | None
    allow: _Group | None
    facts_only: bool  # no rule looks at the raw arguments: judgements can be remembered


_JUDGED_KEPT = 4096  # judgements remembered per Permissions
_TOOLS_KEPT = 1024  # tool names whose rule lists are kept (names are few; bounded anyway)


def _applies(rule: Rule, tool: str) -> bool:
    """Whether ``rule`` can match a call of ``tool``: a matcher with an ``applies(tool)``
    method says; any other is asked on every call."""
    applies = getattr(rule.matcher, "applies", None)
    return applies is None or bool(applies(tool))


_NONE = Judgement(None, (), "no permission rule matches")
_PARTIAL = "part of the command line cannot be read, so no allow rule can cover it"


def _matches(group: _Group, view: CallView, decision: Decision) -> tuple[Match, ...]:
    """Rules of ``group`` that match ``view``, with what each matched: enough of them to
    decide, and to cover every subject an allow must cover.

    The command rules are not asked one by one: each text of the call (a command, a
    wrapper level, another form) is matched against the union of the rules of its
    program (its first word), whose matched group names the first rule that matches it
    (one regex per text, whatever the number of rules).  With quoted patterns (rare)
    every command rule is asked.  ``explain`` lists every rule that matches.
    """
    found: list[Match] = []
    rules = group.others
    if group.commands:
        if group.quoting:
            rules = (*group.commands, *rules)
        else:
            found = _command_matches(group, view, decision)
    for rule in rules:
        subjects = rule.matcher.match(view, decision)
        if subjects:
            found += [Match(rule, subject) for subject in subjects]
    return tuple(found)


def _command_matches(group: _Group, view: CallView, decision: Decision) -> list[Match]:
    """What a ``command_pattern`` matcher's ``match`` gives (``BashRule``): each command
    text (a known program), each wrapper level and, for deny and ask, each other form of
    a command (then the command's own text is the subject) that the pattern fullmatches;
    here only the first rule that matches each text."""
    by_program = group.by_program
    wild = by_program.get("")
    found: list[Match] = []
    for command in view.commands:
        if command.argv is not None:
            rule = _first(by_program, wild, command.text)
            if rule is not None:
                found.append(Match(rule, command.text))
        for layer in command.layers:
            text = " ".join(layer)
            rule = _first(by_program, wild, text)
            if rule is not None:
                found.append(Match(rule, text))
        if decision != "allow":
            for form in command.forms:
                rule = _first(by_program, wild, " ".join(form))
                if rule is not None:
                    found.append(Match(rule, command.text))
    return found


def _first(by_program: dict[str, _Union], wild: _Union | None, text: str) -> Rule | None:
    """The first rule whose pattern fullmatches ``text``: among those of the text's first
    word as the patterns see it (a program's name may hold a space) and those that
    start with a wildcard."""
    union = by_program.get(text.partition(" ")[0], wild)
    if union is None:
        return None
    m = union.pattern.fullmatch(text)
    return union.rules[m.lastindex or 0] if m is not None else None
