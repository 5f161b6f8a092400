"""Commands that change the analysis state rather than the system: ``cd``/``pushd`` move
the working directory, ``export``/``declare``... assign variables.
"""

from __future__ import annotations

from ..shell import SUBST
from .model import _ASSIGNMENT, HOME, Finding, _Invocation
from .run import Rule, _Run

# -- shell state ------------------------------------------------------------------------------


def _rule_cd(inv: _Invocation, run: _Run) -> Finding | None:
    targets = [w for w in inv.args if not w.text.startswith("-") or w.text == "-"]
    if not targets:
        run.cwd = HOME
        return None
    target = targets[0]
    if target.text == "-" or SUBST in target.text:
        run.cwd = None
        return None
    path = run.path(target)
    run.cwd = None if "$" in path else path
    return None


def _rule_export(inv: _Invocation, run: _Run) -> Finding | None:
    for word in inv.args:
        if _ASSIGNMENT.match(word.text):
            run.assign(word, persistent=True)
    return None


RULES: dict[str, tuple[Rule, ...]] = {
    "cd": (_rule_cd,),
    "pushd": (_rule_cd,),
    **dict.fromkeys(("export", "declare", "typeset", "local", "readonly"), (_rule_export,)),
}
