"""What the command guard does with each rule's finding: ``block`` it, ``ask`` a person
(the pipeline's approval path, ``tool.approve``), or ``off`` (drop the finding; the rest
of the analysis still runs).

:data:`DEFAULTS` is the one table of defaults, by rule id (the ``rule`` of a
:class:`.model.Finding`).  The rules of the file system's scope block, and so do the
Windows and macOS families (as their POSIX twins do) and ``secrets-leaving``; the families
that claim cloud and database destruction, and secrets read through CLIs or put in a
request, ask.  The fail-closed verdicts (``unparseable``,
``too-complex``, ``internal-error``) and ``extra-deny`` (the user's own rules) always
block and cannot be set.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Literal, get_args

from ....errors import ConfigError

__all__ = ["DEFAULTS", "FIXED", "Decision", "resolve"]

Decision = Literal["block", "ask", "off"]
_CHOICES: tuple[str, ...] = get_args(Decision)

DEFAULTS: Mapping[str, Decision] = MappingProxyType(
    {
        # today's scope: block
        "fs-destruction": "block",
        "system-files": "block",
        "persistence": "block",
        "disk": "block",
        "permissions": "block",
        "accounts": "block",
        "rce": "block",
        "reverse-shell": "block",
        "fork-bomb": "block",
        "dynamic-code": "block",
        "git-no-verify": "block",
        "docker-prune": "block",
        "sensitive-read": "block",
        # beyond the file system: a person confirms
        "cloud-destruction": "ask",  # .cloud
        "database-destruction": "ask",  # .databases
        "secrets-read": "ask",  # .leaks: secrets printed by a CLI into the agent's context
        "secret-in-request": "ask",  # .leaks: a secret variable in a request
        "secrets-leaving": "block",  # .leaks: the environment or a CLI's secret sent out
        # Windows and macOS (the families of .windows_rules and .macos): block, as their
        # POSIX twins (fs-destruction, rce, persistence...) do
        "windows-destruction": "block",
        "windows-rce": "block",
        "windows-persistence": "block",
        "windows-defense": "block",
        "windows-credentials": "block",
        "macos-persistence": "block",
        "macos-protection": "block",
        "macos-accounts": "block",
    }
)
"""Every rule id a user may set, with its decision when nobody sets it."""

FIXED = frozenset({"unparseable", "too-complex", "internal-error", "extra-deny"})
"""Rule ids that always block: the guard fails closed, and ``extra-deny`` is the user's."""


def resolve(decisions: Mapping[str, str] | None, where: str) -> Mapping[str, Decision]:
    """The decisions that differ from ``block``, :data:`DEFAULTS` overridden by
    ``decisions`` (rule id -> ``"block"``, ``"ask"`` or ``"off"``); ``where`` names the
    setting in errors.

    Raises:
        ConfigError: an unknown or fixed rule id, or a value other than the three.
    """
    merged: dict[str, Decision] = dict(DEFAULTS)
    for rule, value in (decisions or {}).items():
        if rule not in DEFAULTS:
            why = "always blocks" if rule in FIXED else "is not a rule of the guard"
            raise ConfigError(
                f"{where}: {rule!r} {why}; known rules: {', '.join(sorted(DEFAULTS))}"
            )
        if value not in _CHOICES:
            raise ConfigError(
                f"{where}: {rule} = {value!r}; expected one of: {', '.join(_CHOICES)}"
            )
        merged[rule] = value  # type: ignore[assignment]  # checked just above
    return MappingProxyType({k: v for k, v in merged.items() if v != "block"})
