"""What a command hook may answer (Claude Code's hook output), read into one verdict.

The JSON fields understood on stdout (a stdout that is empty, or is not a JSON object,
means continue):

- ``continue: false`` (+ ``stopReason``): raise ``AbortTurn`` -- checked before anything
  else.
- ``decision``: "approve"/"allow" or "block"/"deny", with ``reason``.
- ``hookSpecificOutput.permissionDecision``: "allow" | "deny" | "ask", with
  ``permissionDecisionReason``; it takes precedence over ``decision``.
  ``hookSpecificOutput.decision`` ``{behavior, message, interrupt}`` (the
  PermissionRequest form) is read the same way.
- ``updatedInput`` (top level or in ``hookSpecificOutput``): replaces the arguments
  (tool.before only).
- ``additionalContext`` (top level or in ``hookSpecificOutput``): appended to
  ``result.details["additional_context"]`` (tool.after only).
- ``systemMessage``: a message for the user (a settings file's hooks publish it as a
  ``hook_message`` event; a plain command hook logs it); ``suppressOutput`` and unknown
  fields are ignored.

A command hook (``runner``) and an ``"http"`` hook of a settings file (``http``) read
their answers the same way.
"""

from __future__ import annotations

from typing import Any, Literal, NamedTuple

import msgspec

from ...errors import AbortTurn

__all__ = [
    "NO_VERDICT",
    "Answer",
    "HookOutput",
    "Verdict",
    "decode_output",
    "encode_event",
    "read_verdict",
]


class PermissionRequestDecision(msgspec.Struct, rename="camel"):
    """``hookSpecificOutput.decision`` of a Claude Code PermissionRequest hook."""

    behavior: Literal["allow", "deny", "ask"]
    message: str | None = None
    interrupt: bool = False
    updated_input: dict[str, Any] | None = None


class HookSpecificOutput(msgspec.Struct, rename="camel"):
    hook_event_name: str | None = None
    permission_decision: Literal["allow", "deny", "ask"] | None = None
    permission_decision_reason: str | None = None
    updated_input: dict[str, Any] | None = None
    additional_context: str | None = None
    decision: PermissionRequestDecision | None = None


class HookOutput(msgspec.Struct, rename="camel"):
    continue_: bool = msgspec.field(default=True, name="continue")
    stop_reason: str | None = None
    system_message: str | None = None
    suppress_output: bool = False
    decision: Literal["approve", "allow", "block", "deny"] | None = None
    reason: str | None = None
    hook_specific_output: HookSpecificOutput | None = None
    updated_input: dict[str, Any] | None = None
    additional_context: str | None = None


decode_output = msgspec.json.Decoder(HookOutput).decode


def _unencodable(obj: Any) -> str:
    # arguments and results are whatever the agent passed: send what JSON cannot carry
    # as its string form rather than failing the call
    return str(obj)


encode_event = msgspec.json.Encoder(enc_hook=_unencodable).encode


class Verdict(NamedTuple):
    """What a command decided, whatever field it used to say it."""

    decision: Literal["allow", "deny", "ask"] | None
    reason: str
    updated_input: dict[str, Any] | None = None
    additional_context: str | None = None
    system_message: str | None = None


NO_VERDICT = Verdict(None, "")


def read_verdict(output: HookOutput) -> Verdict:
    """The decision of a parsed output: hookSpecificOutput first, then the top level."""
    specific = output.hook_specific_output or HookSpecificOutput()
    decision: Literal["allow", "deny", "ask"] | None = None
    reason = ""
    updated = specific.updated_input if specific.updated_input is not None else output.updated_input
    if specific.permission_decision is not None:
        decision = specific.permission_decision
        reason = specific.permission_decision_reason or output.reason or ""
    elif specific.decision is not None:
        asked = specific.decision
        if asked.interrupt and asked.behavior == "deny":
            raise AbortTurn(asked.message or "a command hook denied the call and stopped the turn")
        decision, reason = asked.behavior, asked.message or ""
        if updated is None:
            updated = asked.updated_input
    elif output.decision is not None:
        decision = "allow" if output.decision in ("approve", "allow") else "deny"
        reason = output.reason or ""
    context = (
        specific.additional_context
        if specific.additional_context is not None
        else output.additional_context
    )
    return Verdict(decision, reason, updated, context, output.system_message or None)


class Answer(NamedTuple):
    """What one hook of a settings file said, whatever the transport."""

    decision: Literal["allow", "deny", "ask"] | None = None
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    context: tuple[str, ...] = ()
    system_message: str | None = None
    exit_code: int | None = None  # a command's (an asyncRewake hook wakes the agent on 2)
