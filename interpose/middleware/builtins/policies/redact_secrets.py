"""``builtin:redact-secrets``: scrub secrets out of tool results (:class:`RedactSecrets`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import msgspec
from opentelemetry import trace

from ....errors import ConfigError
from ....pipeline.payloads import ToolAfterInput, ToolAfterOutput, ToolResult
from ....pipeline.redaction import Redactor
from ....pipeline.registry import Interceptor
from ....pipeline.tools import ToolMatcher
from ....secrets import pii_kinds, redact, scan
from ._base import Policy
from ._helpers import check_id, check_priority

__all__ = ["REDACT_SECRETS_ID", "RedactSecrets"]

REDACT_SECRETS_ID = "builtin:redact-secrets"

# MCP content items whose payload is binary, base64-encoded: nothing to read in it
_BLOB_TYPES = frozenset({"image", "audio"})
_BLOB_KEYS = frozenset({"data", "blob"})


class RedactSecrets(Policy):
    """``builtin:redact-secrets``: scrub secrets out of tool results before the agent, or
    any later after-hook, sees them.

    Runs on ``tool.after`` for every outcome (a refusal's reason is scrubbed too).  The
    output is replaced by a redacted copy when, and only when, something was redacted:
    strings have every secret replaced by the mask, dicts, lists, tuples and msgspec
    structs are walked (containers that changed come back as dicts and lists; MCP
    content is text items like any string, image and audio data is skipped), and
    values of sensitive keys (``password``, ``api_key``, ``authorization``...) are
    masked.  The result then carries ``details["redacted"]`` (how many secrets were
    masked) and ``details["redacted_kinds"]`` (how many of each kind: ``github``,
    ``private-key``, ``email``..., ``sensitive-key`` for a key's value, ``pattern`` for
    what only the redactor's own patterns caught); the current span gets the same as
    ``interpose.redacted`` and ``interpose.redacted.kinds``.  Never the values.

    It fails closed: if redaction raises, the agent gets a blocked result instead of an
    unredacted one.

    Args:
        redactor: key names and patterns of its own; default ``Redactor()``: API keys of
            common providers, bearer tokens, private key blocks, AWS keys, JWTs,
            ``password=...``-style assignments and the sensitive key names.
            ``Redactor(patterns=[...], keys=[...])`` adds yours; its mask is used.
        detect: also mask what :func:`interpose.secrets.scan` recognizes (known key
            formats of some twenty providers, private keys, JWTs, passwords in URLs,
            high-entropy values under key-like names); default True.
        pii: also mask personal data: True for every kind, or some of ``email``,
            ``phone``, ``iban``, ``card``, ``us-ssn``; default none.
        tools: a tool matcher; default every tool.
        priority: default 100, first among after-hooks.
        id: the registration id.

    Raises:
        ConfigError: ``redactor`` is not a ``Redactor``, an unknown PII kind, a bad
            priority or id.
    """

    ID: ClassVar[str] = REDACT_SECRETS_ID
    PRIORITY: ClassVar[int] = 100

    __slots__ = ("detect", "id", "pii", "priority", "redactor", "tools")

    def __init__(
        self,
        redactor: Redactor | None = None,
        *,
        detect: bool = True,
        pii: bool | Iterable[str] = False,
        tools: ToolMatcher | None = None,
        priority: int = PRIORITY,
        id: str = ID,
    ) -> None:
        if redactor is not None and not isinstance(redactor, Redactor):
            raise ConfigError(f"redactor must be an interpose.Redactor, got {redactor!r}")
        try:
            self.pii: frozenset[str] = pii_kinds(pii if isinstance(pii, bool | str) else tuple(pii))
        except ValueError as exc:
            raise ConfigError(f"pii: {exc}") from None
        self.redactor = redactor or Redactor()
        self.detect = detect
        self.tools = tools
        self.priority = check_priority(priority)
        self.id = check_id(id)

    def __repr__(self) -> str:
        pii = f", pii={sorted(self.pii)}" if self.pii else ""
        return f"RedactSecrets({self.redactor!r}, detect={self.detect}{pii})"

    def redact(self, value: Any) -> tuple[Any, int]:
        """(``value`` redacted, how many secrets were masked); ``value`` itself when none."""
        redacted, kinds = self.scrub(value)
        return redacted, sum(kinds.values())

    def scrub(self, value: Any) -> tuple[Any, Counter[str]]:
        """(``value`` redacted, how many of each kind were masked); ``value`` itself, and
        an empty count, when there was nothing to mask."""
        kinds: Counter[str] = Counter()
        return self._walk(value, kinds), kinds

    def _walk(self, value: Any, kinds: Counter[str]) -> Any:
        if isinstance(value, str):
            return self._text(value, kinds)
        if isinstance(value, Mapping):
            return self._mapping(value, kinds)
        if isinstance(value, list | tuple):
            items = [self._walk(item, kinds) for item in value]
            changed = any(new is not old for new, old in zip(items, value, strict=True))
            return items if changed else value
        if isinstance(value, msgspec.Struct):
            fields = msgspec.structs.asdict(value)
            redacted = self._mapping(fields, kinds)
            return value if redacted is fields else redacted
        return value

    def _mapping(self, value: Mapping[Any, Any], kinds: Counter[str]) -> Any:
        mask = self.redactor.mask
        blob = value.get("type") in _BLOB_TYPES
        out: dict[Any, Any] = {}
        changed = False
        for key, item in value.items():
            if isinstance(key, str) and item and self.redactor.is_sensitive_key(key):
                new = mask
                if item != mask:
                    kinds["sensitive-key"] += 1
            elif blob and key in _BLOB_KEYS:
                new = item
            else:
                new = self._walk(item, kinds)
            changed = changed or new is not item
            out[key] = new
        return out if changed else value

    def _text(self, text: str, kinds: Counter[str]) -> str:
        mask = self.redactor.mask
        if self.detect:
            matches = scan(text, pii=self.pii or False)
            if matches:
                text = redact(text, matches, mask)
                kinds.update(match.kind for match in matches)
        scrubbed = self.redactor.redact_text(text)
        if scrubbed != text:
            kinds["pattern"] += max(1, scrubbed.count(mask) - text.count(mask))
            return scrubbed
        return text

    def __call__(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        result = out.result
        if not isinstance(result, ToolResult):
            return
        redacted, kinds = self.scrub(result.output)
        if not kinds:
            return
        result.output = redacted
        details = result.details
        details["redacted"] = details.get("redacted", 0) + sum(kinds.values())
        merged = Counter(details.get("redacted_kinds", {}))
        merged.update(kinds)
        details["redacted_kinds"] = dict(sorted(merged.items()))
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attribute("interpose.redacted", details["redacted"])
            span.set_attribute("interpose.redacted.kinds", sorted(merged))

    def interceptors(self) -> list[Interceptor]:
        return [self._registration("tool.after", "block", self.tools)]
