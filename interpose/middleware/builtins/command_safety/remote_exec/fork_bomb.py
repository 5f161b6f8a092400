"""Rule ``fork-bomb``: a shell function whose body runs itself in a pipeline or in the
background (``:(){ :|:& };:`` under any name)."""

from __future__ import annotations

from ...shell import FunctionDef
from ..model import Finding


def fork_bomb(fn: FunctionDef) -> Finding | None:
    body = fn.body
    calls = {i for i, c in enumerate(body.commands) if c.words and c.words[0].text == fn.name}
    if not calls:
        return None
    piped = any(i in calls for p in body.pipelines for stage in p.stages for i in stage)
    if piped or any(body.commands[i].background for i in calls):
        how = "a pipeline" if piped else "the background"
        return Finding(
            "fork-bomb",
            fn.name,
            f"function {fn.name!r} runs itself in {how}, multiplying processes without "
            f"bound (token {fn.name!r})",
        )
    return None
