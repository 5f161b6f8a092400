"""``find``'s expression grammar: which entries a ``find`` command reaches, deletes or
hands to ``-exec`` (:func:`find_plan`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..shell import Word
from .options import GLOB_CHARS, derived, word_set

_FIND_LEADING_ARG = frozenset({"-D"})
_FIND_NAME_TESTS = frozenset({"-name", "-iname", "-lname", "-ilname"})
_FIND_PATH_TESTS = frozenset({"-path", "-ipath", "-wholename", "-iwholename"})
_FIND_NARROWING = word_set(
    "-regex -iregex -empty -newer -anewer -cnewer -samefile -inum -links -size"
)
_FIND_ONE_ARG = word_set(
    "-name -iname -lname -ilname -path -ipath -wholename -iwholename -regex -iregex -type "
    "-xtype -mtime -mmin -atime -amin -ctime -cmin -used -newer -anewer -cnewer -samefile "
    "-inum -links -size -user -group -uid -gid -perm -maxdepth -mindepth -fstype -context "
    "-regextype -printf -fprint -fprint0 -fls -files0-from"
)
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_NEWER_XY = re.compile(r"-newer[aBcmt][aBcmt]$")


@dataclass(slots=True)
class _FindPlan:
    candidates: list[Word]  # the roots, or root/<-name pattern>; empty: filtered, unknown
    delete: bool = False
    execs: list[tuple[str, list[Word]]] = field(default_factory=list)
    unfiltered: bool = False  # candidates are the bare roots: every entry below them matches

    def entries(self) -> list[Word]:
        """What ``{}`` stands for: ``root/*`` for an unfiltered walk (every entry), each
        candidate otherwise -- all of them: the callers charge each judgement to the
        analysis budget."""
        if self.unfiltered:
            return [
                Word(w.text.rstrip("/") + "/*", tilde=w.tilde, glob=True) for w in self.candidates
            ]
        return list(self.candidates)


def find_plan(args: Sequence[Word]) -> _FindPlan:
    i, n = 0, len(args)
    while i < n and (args[i].text in ("-H", "-L", "-P") or args[i].text.startswith("-O")):
        i += 1
    while i < n and args[i].text in _FIND_LEADING_ARG:
        i += 2
    roots: list[Word] = []
    while i < n and not args[i].text.startswith("-") and args[i].text not in ("(", "!", ","):
        roots.append(args[i])
        i += 1
    roots = roots or [Word(".")]
    names: list[Word] = []
    paths: list[Word] = []
    narrowed = False
    plan = _FindPlan([])
    while i < n:
        t = args[i].text
        if t in _FIND_EXEC:
            j = i + 1
            while j < n and args[j].text not in (";", "+"):
                j += 1
            plan.execs.append((t, list(args[i + 1 : j])))
            i = j + 1
            continue
        if t == "-delete":
            plan.delete = True
        elif t in _FIND_NAME_TESTS and i + 1 < n:
            names.append(args[i + 1])
        elif t in _FIND_PATH_TESTS and i + 1 < n:
            paths.append(args[i + 1])
        elif t in _FIND_NARROWING or _NEWER_XY.match(t):
            narrowed = True
        i += 3 if t == "-fprintf" else 2 if (t in _FIND_ONE_ARG or _NEWER_XY.match(t)) else 1
    if names or paths:
        for root in roots:
            for name in names:
                text = root.text.rstrip("/") + "/" + name.text
                plan.candidates.append(
                    Word(text, tilde=root.tilde, glob=GLOB_CHARS.search(name.text) is not None)
                )
        plan.candidates += [derived(p.text) for p in paths]
    elif not narrowed:
        plan.candidates = roots
        plan.unfiltered = True
    return plan
