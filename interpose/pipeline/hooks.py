"""The fixed table of hook points and stages.

Everything the registry validates and the chain compiler needs to know about a hook
(its stage, its payload types, how many arguments its handlers take, its default error
policy, whether it can block) lives in one table, so that adding a hook is one row.
"""

from __future__ import annotations

from typing import NamedTuple

from .._registrations import Mode as Mode
from .._registrations import OnError as OnError
from . import payloads as p

__all__ = [
    "MODES",
    "Mode",
    "HOOKS",
    "MIDDLEWARE_DEFAULT_ON_ERROR",
    "STAGES",
    "STAGE_HOOKS",
    "HookSpec",
    "OnError",
]

ON_ERROR_VALUES: frozenset[str] = frozenset({"block", "skip", "raise"})
MODES: frozenset[str] = frozenset({"enforce", "shadow"})


class HookSpec(NamedTuple):
    name: str
    stage: str
    input_type: type
    output_type: type | None
    arity: int
    default_on_error: OnError
    can_block: bool
    tool_scoped: bool


HOOKS: dict[str, HookSpec] = {
    spec.name: spec
    for spec in (
        HookSpec(
            "message.before",
            "message",
            p.MessageBeforeInput,
            p.MessageBeforeOutput,
            2,
            "raise",
            False,
            False,
        ),
        HookSpec(
            "params.before",
            "params",
            p.ParamsBeforeInput,
            p.ParamsBeforeOutput,
            2,
            "raise",
            False,
            False,
        ),
        HookSpec("llm.before", "llm", p.LLMBeforeInput, p.LLMRequest, 2, "raise", False, False),
        HookSpec("llm.after", "llm", p.LLMAfterInput, p.LLMAfterOutput, 2, "skip", False, False),
        HookSpec(
            "tool.before", "tool", p.ToolBeforeInput, p.ToolBeforeOutput, 2, "block", True, True
        ),
        HookSpec("tool.approve", "tool", p.ApprovalRequest, None, 1, "block", True, True),
        HookSpec("tool.after", "tool", p.ToolAfterInput, p.ToolAfterOutput, 2, "skip", True, True),
        HookSpec(
            "command.before",
            "command",
            p.CommandBeforeInput,
            p.CommandBeforeOutput,
            2,
            "block",
            True,
            False,
        ),
        HookSpec(
            "session.compact", "compact", p.CompactInput, p.CompactOutput, 2, "raise", False, False
        ),
    )
}

STAGES: tuple[str, ...] = ("turn", "message", "params", "llm", "tool", "command", "compact")

STAGE_HOOKS: dict[str, tuple[str, ...]] = {
    stage: tuple(name for name, spec in HOOKS.items() if spec.stage == stage) for stage in STAGES
}

# Middleware on the stages whose operation can be refused fails closed, like their
# before-hooks; elsewhere a failing layer propagates.
MIDDLEWARE_DEFAULT_ON_ERROR: dict[str, OnError] = {
    stage: "block" if stage in ("tool", "command") else "raise" for stage in STAGES
}
