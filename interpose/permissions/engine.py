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
    if view.commands:
        return tuple(dict.fromkeys(s for c in view.commands for s in command_subjects(c)))
    if view.reads or view.writes:
        return tuple(dict.fromkeys((*view.reads, *view.writes)))
    if view.domains:
        return view.domains
    return (view.tool,)


class Permissions:
    """An ordered set of rules, judged as Claude Code does (see the module docstring)."""

    __slots__ = ("_allow", "_ask", "_deny", "_rules")

    def __init__(self, rules: Sequence[Rule]) -> None:
        self._rules = tuple(rules)
        self._deny = tuple(r for r in self._rules if r.decision == "deny")
        self._ask = tuple(r for r in self._rules if r.decision == "ask")
        self._allow = tuple(r for r in self._rules if r.decision == "allow")

    def __repr__(self) -> str:
        return f"<Permissions deny={len(self._deny)} ask={len(self._ask)} allow={len(self._allow)}>"

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self._rules

    def judge(self, view: CallView) -> Judgement:
        """The decision of the rules on ``view``, with the rules that made it."""
        strict: tuple[tuple[Decision, tuple[Rule, ...]], ...] = (
            ("deny", self._deny),
            ("ask", self._ask),
        )
        for decision, rules in strict:
            matches = _matches(rules, view, decision)
            if matches:
                return Judgement(decision, matches, _reason(decision, matches))
        if not self._allow:
            return _NONE
        matches = _matches(self._allow, view, "allow")
        if not matches:
            return _NONE
        if view.unparsed:
            return Judgement(None, matches, _PARTIAL)
        covered = {m.subject for m in matches}
        missing = [s for s in subjects(view) if s not in covered]
        if missing:
            shown = ", ".join(repr(s) for s in missing[:3])
            return Judgement(None, matches, f"no allow rule covers {shown}")
        return Judgement("allow", matches, _reason("allow", matches))

    def decides(self, view: CallView) -> Decision | None:
        """Just the decision of :meth:`judge`."""
        return self.judge(view).decision


_NONE = Judgement(None, (), "no permission rule matches")
_PARTIAL = "part of the command line cannot be read, so no allow rule can cover it"


def _matches(rules: Sequence[Rule], view: CallView, decision: Decision) -> tuple[Match, ...]:
    found: list[Match] = []
    for rule in rules:
        for subject in rule.matcher.match(view, decision):
            found.append(Match(rule, subject))
    return tuple(found)


def _reason(decision: Decision, matches: Sequence[Match]) -> str:
    """``denied by Bash(git push:*) (interpose.toml) on 'git push origin'``: each rule
    once, with the subjects it matched."""
    verb = {"deny": "denied", "ask": "approval asked", "allow": "allowed"}[decision]
    by_rule: dict[Rule, list[str]] = {}
    for m in matches:
        by_rule.setdefault(m.rule, []).append(m.subject)
    parts = []
    for rule, matched in by_rule.items():
        shown = ", ".join(repr(s) for s in dict.fromkeys(matched))
        why = f": {rule.justification}" if rule.justification else ""
        parts.append(f"{rule.text} ({rule.source}) on {shown}{why}")
    return f"{verb} by " + "; ".join(parts)
