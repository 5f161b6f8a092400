"""Rule family ``containers``: Docker data destroyed.

Rules (the rule id leads the block reason):

- ``docker-prune``: ``docker system prune`` with both ``--all`` and ``--volumes``;
  ``docker volume prune --all`` (deletes named volumes too; plain ``volume prune`` only
  removes anonymous ones and is allowed); ``docker volume rm $(docker volume ls -q)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..shell import Word
from .model import Finding, _canon, _Invocation, _set
from .run import Rule, _Run

# -- docker --------------------------------------------------------------------------------------

_DOCKER_GLOBAL_ARG = _set(
    "-H --host -c --context --config -l --log-level --tlscacert --tlscert --tlskey"
)


def _docker_flags(args: Sequence[Word]) -> set[str]:
    flags: set[str] = set()
    for word in args:
        t = word.text
        if t.startswith("--"):
            name, eq, value = t.partition("=")
            if not eq or value.lower() not in ("false", "0"):
                flags.add(name)
        elif t.startswith("-"):
            flags.update("-" + ch for ch in t[1:])
    return flags


def _lists_volumes(word: Word) -> bool:
    for sub in word.subs:
        for cmd in sub.commands:
            texts = [w.text for w in cmd.words]
            if len(texts) >= 3 and _canon(texts[0]) == "docker" and texts[1:3] == ["volume", "ls"]:
                return True
    return False


def _rule_docker(inv: _Invocation, run: _Run) -> Finding | None:
    args = inv.args
    i, n = 0, len(args)
    while i < n and args[i].text.startswith("-"):
        i += 2 if args[i].text in _DOCKER_GLOBAL_ARG else 1
    words = [w.text for w in args[i : i + 2]]
    rest = args[i + 2 :]
    flags = _docker_flags(rest)
    every = bool(flags & {"-a", "--all"})
    shown = "docker " + " ".join([*words, *(w.text for w in rest)])
    if words == ["system", "prune"] and every and "--volumes" in flags:
        return Finding(
            "docker-prune",
            shown,
            f"{shown!r} deletes every unused image, container, network and volume",
        )
    if words == ["volume", "prune"] and every:
        return Finding("docker-prune", shown, f"{shown!r} deletes every unused volume and its data")
    if words in (["volume", "rm"], ["volume", "remove"]) and any(_lists_volumes(w) for w in rest):
        return Finding("docker-prune", shown, f"{shown!r} deletes every volume")
    return None


RULES: dict[str, tuple[Rule, ...]] = {"docker": (_rule_docker,)}
