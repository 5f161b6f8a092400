"""The permission engine: deny beats ask beats allow, judged on every command of a call.

:class:`Permissions` holds rules from any source and judges a :class:`.model.CallView`:

- a deny rule matching *any* command, path or domain of the call denies it; else an ask
  rule matching any of them asks; whatever the order the rules were written in;
- else the call is allowed only when allow rules cover *every* subject of the call
  (:func:`subjects`): each simple command of a command line (and each wrapper level
  around it that may change what it can do: ``sudo``, ``env X=..``, not ``timeout``), or
  the paths of a file tool, or the domains of a fetch, or else the tool itself;
- a command whose name only run time knows never matches an allow rule, and a line the
  shell model could not read (all of it) is never allowed;
- no rule matching: decision None (the call goes on to the other guards).
"""

from __future__ import annotations

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
    if len(commands) == 1 and not commands[0].layers:
        return (commands[0].text,)
    if commands:
        return tuple(dict.fromkeys(s for c in view.commands for s in command_subjects(c)))
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
                tuple(r for r in mine if r.decision == "deny"),
                tuple(r for r in mine if r.decision == "ask"),
                tuple(r for r in mine if r.decision == "allow"),
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
        key = (view.tool, view.commands, view.reads, view.writes, view.domains, view.unparsed)
        known = self._judged.get(key)
        if known is None:
            known = self._judge(view, lists)
            if len(self._judged) >= _JUDGED_KEPT:
                with suppress(StopIteration, KeyError, RuntimeError):  # another thread's
                    self._judged.pop(next(iter(self._judged)))  # the oldest out
            self._judged[key] = known
        return known

    def _judge(self, view: CallView, lists: _Lists) -> Judgement:
        if lists.deny and (matches := _matches(lists.deny, view, "deny")):
            return Judgement("deny", matches, _reason("deny", matches))
        if lists.ask and (matches := _matches(lists.ask, view, "ask")):
            return Judgement("ask", matches, _reason("ask", matches))
        if not lists.allow:
            return _NONE
        matches = _matches(lists.allow, view, "allow")
        if not matches:
            return _NONE
        if view.unparsed:
            return Judgement(None, matches, _PARTIAL)
        covered = {m.subject for m in matches}
        missing = [s for s in subjects(view) if s not in covered]
        if missing:
            named = _named_with_assignments(view, covered)
            missing = [s for s in missing if s not in named]
        if missing:
            shown = ", ".join(repr(s) for s in missing[:3])
            return Judgement(None, matches, f"no allow rule covers {shown}")
        return Judgement("allow", matches, _reason("allow", matches))

    def decides(self, view: CallView) -> Decision | None:
        """Just the decision of :meth:`judge`."""
        return self.judge(view).decision


class _Lists(NamedTuple):
    deny: tuple[Rule, ...]
    ask: tuple[Rule, ...]
    allow: tuple[Rule, ...]
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


def _matches(rules: Sequence[Rule], view: CallView, decision: Decision) -> tuple[Match, ...]:
    found: list[Match] = []
    for rule in rules:
        for subject in rule.matcher.match(view, decision):
            found.append(Match(rule, subject))
    return tuple(found)


_VERBS = {"deny": "denied", "ask": "approval asked", "allow": "allowed"}


def _reason(decision: Decision, matches: Sequence[Match]) -> str:
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
