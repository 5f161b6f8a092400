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
from collections.abc import Sequence
from contextlib import suppress
from typing import NamedTuple

from ..middleware.builtins.command_safety.facts import transparent
from ..middleware.builtins.command_safety.wrappers import ASSIGNMENT
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
    if commands:
        found: list[str] = []
        for command in commands:  # a loop: a third cheaper than a comprehension here
            if command.layers:
                found += command_subjects(command)
            else:
                found.append(command.text)
        found += view.redirected
        return tuple(dict.fromkeys(found)) if len(found) > 1 else tuple(found)
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
            lists = _lists([r for r in self._rules if _applies(r, tool)])
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
        hits = _command_hits(lists, view)
        if matches := _matches(lists, "deny", view, hits):
            return Judgement("deny", matches)
        if matches := _matches(lists, "ask", view, hits):
            return Judgement("ask", matches)
        matches = _matches(lists, "allow", view, hits)
        if not matches:
            return _NONE
        if view.unparsed:
            return Judgement(None, matches, _PARTIAL)
        covered = {m.subject for m in matches}
        missing = _uncovered(view, covered)
        if missing:
            named = _named_with_assignments(view, covered)
            missing = [s for s in missing if s not in named]
        if missing:
            shown = ", ".join(repr(s) for s in missing[:3])
            return Judgement(None, matches, f"no allow rule covers {shown}")
        return Judgement("allow", matches)

    def decides(self, view: CallView) -> Decision | None:
        """Just the decision of :meth:`judge`."""
        return self.judge(view).decision


class _Lists(NamedTuple):
    """The rules of one tool, compiled for judging its calls."""

    # the rules of ``command_pattern`` matchers (``Bash(...)``: matchers of command
    # texts), deny first, then ask, then allow, each in its own order
    commands: tuple[Rule, ...]
    # those rules by the first word of the texts they can match ("git"; those that start
    # with a wildcard under "" and in every entry): one regex per text of a call finds
    # the first rule, in that order, that matches it -- so the strictest decision of
    # the text -- whatever the number of rules; None: no command rule, or some pattern
    # holds quotes (rare: then each rule is asked)
    by_program: dict[str, _Union] | None
    others: dict[Decision, tuple[Rule, ...]]  # every other rule, by decision
    # the same without the rules that match only paths (``paths_only``): those of a
    # call that reads and writes nothing (most command lines)
    pathless: dict[Decision, tuple[Rule, ...]]
    facts_only: bool  # no rule looks at the raw arguments: judgements can be remembered


class _Union(NamedTuple):
    pattern: re.Pattern[str]
    rules: tuple[Rule | None, ...]  # by group number: the rule of the group that matched


_ORDER: tuple[Decision, ...] = ("deny", "ask", "allow")
_JUDGED_KEPT = 4096  # judgements remembered per Permissions
_TOOLS_KEPT = 1024  # tool names whose rule lists are kept (names are few; bounded anyway)


def _lists(rules: Sequence[Rule]) -> _Lists:
    ordered = [r for d in _ORDER for r in rules if r.decision == d]
    commands = [r for r in ordered if isinstance(_pattern(r), re.Pattern)]
    others = {d: tuple(r for r in ordered if r.decision == d and r not in commands) for d in _ORDER}
    index = None
    if commands and not any(getattr(r.matcher, "quoting", False) for r in commands):
        programs = {getattr(r.matcher, "program", "") for r in commands}
        index = {
            program: _union(
                [r for r in commands if getattr(r.matcher, "program", "") in (program, "")]
            )
            for program in programs
        }
    pathless = {
        d: tuple(r for r in rules if not getattr(r.matcher, "paths_only", False))
        for d, rules in others.items()
    }
    return _Lists(
        tuple(commands),
        index,
        others,
        pathless,
        not any(getattr(r.matcher, "uses_args", True) for r in rules),
    )


def _pattern(rule: Rule) -> object:
    return getattr(rule.matcher, "command_pattern", None)


def _union(rules: Sequence[Rule]) -> _Union:
    """One regex of the ``command_pattern`` of each rule, one group each, in order."""
    alternatives = "|".join(f"({_pattern(rule).pattern})" for rule in rules)  # type: ignore[attr-defined]
    return _Union(re.compile(alternatives, re.DOTALL), (None, *rules))


def _applies(rule: Rule, tool: str) -> bool:
    """Whether ``rule`` can match a call of ``tool``: a matcher with an ``applies(tool)``
    method says; any other is asked on every call."""
    applies = getattr(rule.matcher, "applies", None)
    return applies is None or bool(applies(tool))


_NONE = Judgement(None, (), "no permission rule matches")
_PARTIAL = "part of the command line cannot be read, so no allow rule can cover it"


def _uncovered(view: CallView, covered: set[str]) -> list[str]:
    """The :func:`subjects` of ``view`` not in ``covered``, in order, once each; a plain
    loop for the usual command line (no wrapper level, nothing redirected), which is
    most: building the subjects costs more than checking them."""
    commands = view.commands
    missing: list[str] = []
    for command in commands:
        if command.layers:
            break
        if command.text not in covered:
            missing.append(command.text)
    else:
        if commands and not view.redirected:
            return list(dict.fromkeys(missing)) if len(missing) > 1 else missing
    return [s for s in subjects(view) if s not in covered]


def _named_with_assignments(view: CallView, covered: set[str]) -> set[str]:
    """The commands an allow rule names together with their leading assignments
    (``Bash(AWS_PROFILE=ro aws *)`` on ``AWS_PROFILE=ro aws s3 ls``): the level that is
    only those assignments before the command is covered, so the command is too."""
    named: set[str] = set()
    for command in view.commands:
        argv = command.argv
        if argv is None:
            continue
        n = len(argv)
        for layer in command.layers:
            if (
                len(layer) > n
                and layer[-n:] == argv
                and all(ASSIGNMENT.match(word) for word in layer[:-n])
                and " ".join(layer) in covered
            ):
                named.add(command.text)
    return named


Hits = dict[Decision, list[Match]]


def _command_hits(lists: _Lists, view: CallView) -> Hits | None:
    """What the command rules match of ``view``, by decision, in one regex per spelling
    of each command (``ShellCommand.spellings``, as ``BashRule.match`` sees them): the
    first rule of the strictest decision that matches each.  None: each rule is asked."""
    index = lists.by_program
    if index is None or not view.commands:
        return None
    wild = index.get("")
    hits: Hits = {"deny": [], "ask": [], "allow": []}
    for command in view.commands:
        for text, _, subject, strict in command.spellings():
            # the first rule whose pattern fullmatches the text: among those of its first
            # word as the patterns see it (a program's name may hold a space) and those
            # that start with a wildcard
            union = index.get(text.partition(" ")[0], wild)
            if union is None or (m := union.pattern.fullmatch(text)) is None:
                continue
            rule = union.rules[m.lastindex or 0]
            if rule is not None and not (strict and rule.decision == "allow"):
                hits[rule.decision].append(Match(rule, subject))
    return hits


def _matches(
    lists: _Lists, decision: Decision, view: CallView, hits: Hits | None
) -> tuple[Match, ...]:
    """Rules of ``decision`` that match ``view``, with what each matched: enough of them
    to decide, and to cover every subject an allow must cover (``explain`` lists every
    rule that matches)."""
    others = (lists.others if view.reads or view.writes else lists.pathless)[decision]
    if hits is not None:
        found = hits[decision]
        rules = others
        if not rules:
            return tuple(found)
    else:
        found = []
        rules = tuple(r for r in lists.commands if r.decision == decision) + others
    for rule in rules:
        subjects = rule.matcher.match(view, decision)
        if subjects:
            found = [*found, *(Match(rule, subject) for subject in subjects)]
    return tuple(found)
