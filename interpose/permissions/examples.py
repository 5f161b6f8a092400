"""Inline policy tests (``[[permissions.tests]]``): a call and the decision the rules must
reach for it, checked by ``interpose check`` -- as Codex checks a rule's ``match`` /
``not_match`` examples, but on the whole rule set and through the shell model::

    [[permissions.tests]]
    tool = "exec"
    command = "cd repo && git push origin main"
    expect = "deny"

``expect`` is ``allow``, ``ask``, ``deny`` or ``none`` (no rule decides).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .engine import Permissions
from .view import view_of

__all__ = ["PolicyExample", "failed_examples"]


class PolicyExample(Protocol):
    """One test, as ``interpose.config.schema.PermissionTestConfig`` holds it."""

    @property
    def tool(self) -> str: ...
    @property
    def expect(self) -> str: ...
    @property
    def args(self) -> Mapping[str, Any]: ...
    @property
    def command(self) -> str | None: ...


def failed_examples(
    permissions: Permissions,
    examples: Sequence[PolicyExample],
    *,
    cwd: str,
    home: str,
    field: str = "permissions.tests",
) -> list[str]:
    """One line per test whose decision is not the expected one: which test, the call,
    what was expected, what the rules decided and the rule that decided (or why none
    did).  ``cwd``/``home`` anchor the calls' relative paths."""
    failures: list[str] = []
    for i, example in enumerate(examples):
        args = dict(example.args)
        if example.command is not None:
            args["command"] = example.command
        judgement = permissions.judge(view_of(example.tool, args, cwd=cwd, home=home))
        got = judgement.decision or "none"
        if got != example.expect:
            shown = (
                repr(args["command"])
                if set(args) == {"command"}
                else json.dumps(args, ensure_ascii=False)
            )
            failures.append(
                f"{field}[{i}]: {example.tool} {shown}: expected {example.expect}, "
                f"got {got} ({judgement.reason})"
            )
    return failures
