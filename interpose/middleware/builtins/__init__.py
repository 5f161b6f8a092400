"""Built-in interceptors.

``builtin:command-safety-guard`` (tool.before on exec, priority 100; with its approver
``builtin:command-safety-guard.ask`` on tool.approve when one of its rules asks) and
``builtin:security-audit`` (tool.before on read/write/edit/apply_patch, priority 99) are
registered by ``Pipeline()`` and ``initialize_global_interceptors()``; both fail closed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...pipeline.registry import Interceptor, Registry
from .command_safety import CommandSafetyGuard, analyze_command
from .policies import (
    LOOP_GUARD_ID,
    OUTPUT_CAP_ID,
    RATE_LIMIT_ID,
    REDACT_SECRETS_ID,
    RESULT_CACHE_ID,
    TOOL_FILTER_ID,
    LoopGuard,
    OutputCap,
    Policy,
    RateLimit,
    RedactSecrets,
    ResultCache,
    ToolFilter,
)
from .security_audit import SecurityAudit, normalize_path, sensitive_reason

__all__ = [
    "COMMAND_SAFETY_ASK_ID",
    "COMMAND_SAFETY_ID",
    "LOOP_GUARD_ID",
    "OUTPUT_CAP_ID",
    "RATE_LIMIT_ID",
    "REDACT_SECRETS_ID",
    "RESULT_CACHE_ID",
    "SECURITY_AUDIT_ID",
    "TOOL_FILTER_ID",
    "CommandSafetyGuard",
    "LoopGuard",
    "OutputCap",
    "Policy",
    "RateLimit",
    "RedactSecrets",
    "ResultCache",
    "SecurityAudit",
    "ToolFilter",
    "analyze_command",
    "builtin_interceptors",
    "normalize_path",
    "register_builtins",
    "sensitive_reason",
]

COMMAND_SAFETY_ID = "builtin:command-safety-guard"
COMMAND_SAFETY_ASK_ID = COMMAND_SAFETY_ID + ".ask"
SECURITY_AUDIT_ID = "builtin:security-audit"


def builtin_interceptors(
    *,
    command_deny: Sequence[str] = (),
    command_allow: Sequence[str] = (),
    path_deny: Sequence[str] = (),
    path_allow: Sequence[str] = (),
    command_decisions: Mapping[str, str] | None = None,
) -> list[Interceptor]:
    """The two default guards as registrations, with optional extra rules and the
    command guard's decisions (see :class:`CommandSafetyGuard`); the command guard's
    approver follows it when one of its rules asks."""
    guard = CommandSafetyGuard(
        extra_deny=command_deny, allow=command_allow, decisions=command_decisions
    )
    regs = [
        Interceptor(
            id=COMMAND_SAFETY_ID,
            hook="tool.before",
            handler=guard,
            priority=100,
            tool_matcher=["exec"],
            on_error="block",
            source="builtin",
        ),
        Interceptor(
            id=SECURITY_AUDIT_ID,
            hook="tool.before",
            handler=SecurityAudit(extra_deny=path_deny, allow=path_allow),
            priority=99,
            tool_matcher=["read", "write", "edit", "apply_patch"],
            on_error="block",
            source="builtin",
        ),
    ]
    if guard.asks:
        regs.append(
            Interceptor(
                id=COMMAND_SAFETY_ASK_ID,
                hook="tool.approve",
                handler=guard.approve,
                priority=100,
                tool_matcher=["exec"],
                on_error="block",
                source="builtin",
            )
        )
    return regs


def register_builtins(registry: Registry) -> None:
    """Add the default guards to ``registry``."""
    for reg in builtin_interceptors():
        registry.add(reg)
