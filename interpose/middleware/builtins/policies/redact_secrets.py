"""``builtin:redact-secrets``: scrub secrets out of tool results (:class:`RedactSecrets`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import msgspec

from ....errors import ConfigError
from ....pipeline.payloads import ToolAfterInput, ToolAfterOutput, ToolResult
from ....pipeline.redaction import Redactor
from ....pipeline.registry import Interceptor
from ....pipeline.tools import ToolMatcher
from ._base import Policy
from ._helpers import check_id, check_priority

__all__ = ["REDACT_SECRETS_ID", "RedactSecrets"]

REDACT_SECRETS_ID = "builtin:redact-secrets"


def _count_mask(value: Any, mask: str) -> int:
    """How often ``mask`` occurs in the strings of ``value`` (walked like Redactor.redact)."""
    if isinstance(value, str):
        return value.count(mask)
    if isinstance(value, Mapping):
        return sum(_count_mask(v, mask) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_count_mask(v, mask) for v in value)
    if isinstance(value, msgspec.Struct):
        return _count_mask(msgspec.structs.asdict(value), mask)
    return 0


class RedactSecrets(Policy):
    """``builtin:redact-secrets``: scrub secrets out of tool results before the agent, or
    any later after-hook, sees them.

    Runs on ``tool.after`` for every outcome (a refusal's reason is scrubbed too).  The
    output is replaced by a redacted copy when, and only when, something was redacted:
    strings have every secret replaced by the mask, dicts, lists, tuples and msgspec
    structs are walked (containers come back as dicts and lists), and values of
    sensitive keys (``password``, ``api_key``, ``authorization``...) are masked.  The
    result then carries ``details["redacted"]``: how many secrets were masked.

    It fails closed: if redaction raises, the agent gets a blocked result instead of an
    unredacted one.

    Args:
        redactor: the rules; default ``Redactor()``: API keys of common providers
            (Anthropic, OpenAI, GitHub, GitLab, Slack, Stripe, Google, Hugging Face),
            bearer tokens, private key blocks, AWS access and secret keys, JWTs and
            ``password=...``-style assignments.  ``Redactor(patterns=[...])`` adds yours.
        tools: a tool matcher; default every tool.
        priority: default 100, first among after-hooks.
        id: the registration id.

    Raises:
        ConfigError: ``redactor`` is not a ``Redactor``, a bad priority or id.
    """

    ID: ClassVar[str] = REDACT_SECRETS_ID
    PRIORITY: ClassVar[int] = 100

    __slots__ = ("id", "priority", "redactor", "tools")

    def __init__(
        self,
        redactor: Redactor | None = None,
        *,
        tools: ToolMatcher | None = None,
        priority: int = PRIORITY,
        id: str = ID,
    ) -> None:
        if redactor is not None and not isinstance(redactor, Redactor):
            raise ConfigError(f"redactor must be an interpose.Redactor, got {redactor!r}")
        self.redactor = redactor or Redactor()
        self.tools = tools
        self.priority = check_priority(priority)
        self.id = check_id(id)

    def __repr__(self) -> str:
        return f"RedactSecrets({self.redactor!r})"

    def redact(self, value: Any) -> tuple[Any, int]:
        """(``value`` redacted, how many secrets were masked); ``value`` itself when none."""
        mask = self.redactor.mask
        if isinstance(value, str):
            text = self.redactor.redact_text(value)
            if text == value:
                return value, 0
            return text, max(1, text.count(mask) - value.count(mask))
        if not isinstance(value, Mapping | list | tuple | msgspec.Struct):
            return value, 0
        redacted = self.redactor.redact(value)
        masked = _count_mask(redacted, mask) - _count_mask(value, mask)
        return (redacted, masked) if masked > 0 else (value, 0)

    def __call__(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        result = out.result
        if not isinstance(result, ToolResult):
            return
        redacted, masked = self.redact(result.output)
        if masked:
            result.output = redacted
            result.details["redacted"] = result.details.get("redacted", 0) + masked

    def interceptors(self) -> list[Interceptor]:
        return [self._registration("tool.after", "block", self.tools)]
