"""Redaction rules: what must never leave the process in a span, a log or a result.

A ``Redactor`` replaces secrets in strings (API keys of common providers, bearer tokens,
private key blocks, AWS keys, JWTs, ``password=...`` pairs) and the values of sensitive
keys in mappings (``password``, ``api_key``, ``authorization``...).  The pipeline uses
one for the tool arguments and results it records in spans (``trace_content=True``);
pass your own to add patterns or keys::

    Pipeline(trace_content=True,
             redactor=Redactor(patterns=[r"ticket-[0-9]{6}"], keys={"customer_id"}))
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

__all__ = ["DEFAULT_PATTERNS", "MASK", "SENSITIVE_KEYS", "Redactor"]

MASK = "[REDACTED]"

# (name, pattern): the whole match is replaced, or only group "secret" when present
DEFAULT_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
    ),
    ("anthropic", r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    ("openai", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("github", r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("gitlab", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("slack", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("stripe", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("google", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("huggingface", r"\bhf_[A-Za-z0-9]{30,}"),
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    (
        "aws-secret-key",
        r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})",
    ),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("bearer", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9_\-.~+/]{16,}=*)"),
    (
        "assignment",
        r"(?i)\b(?:password|passwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)"
        r"[\"']?\s*[:=]\s*[\"']?(?P<secret>[^\s\"',;&]{6,})",
    ),
)

SENSITIVE_KEYS: frozenset[str] = frozenset(
    {
        "password",
        "passwd",
        "secret",
        "api_key",
        "apikey",
        "access_token",
        "refresh_token",
        "auth_token",
        "token",
        "authorization",
        "cookie",
        "set-cookie",
        "private_key",
        "client_secret",
    }
)


def _norm_key(key: str) -> str:
    return key.lower().replace("-", "_")


class Redactor:
    """Replaces secrets in strings and the values of sensitive keys in containers.

    Args:
        patterns: extra regexes (strings or compiled); a group named ``secret`` limits
            the replacement to that group.
        keys: extra key names whose values are always masked (case-insensitive,
            ``-`` and ``_`` alike).
        defaults: include ``DEFAULT_PATTERNS`` and ``SENSITIVE_KEYS``.
        mask: the replacement text.

    Raises:
        re.error: a pattern does not compile.
    """

    def __init__(
        self,
        patterns: Iterable[str | re.Pattern[str]] = (),
        *,
        keys: Iterable[str] = (),
        defaults: bool = True,
        mask: str = MASK,
    ) -> None:
        compiled = [re.compile(p) for _, p in DEFAULT_PATTERNS] if defaults else []
        compiled += [p if isinstance(p, re.Pattern) else re.compile(p) for p in patterns]
        self.patterns: tuple[re.Pattern[str], ...] = tuple(compiled)
        self.keys: frozenset[str] = frozenset(
            _norm_key(k) for k in (*(SENSITIVE_KEYS if defaults else ()), *keys)
        )
        self.mask = mask
        self._encoder = msgspec.json.Encoder(enc_hook=self._unencodable)

    def __repr__(self) -> str:
        return f"<Redactor {len(self.patterns)} patterns, {len(self.keys)} keys>"

    def _sub(self, match: re.Match[str]) -> str:
        if "secret" in match.re.groupindex and match.group("secret") is not None:
            start, end = match.span("secret")
            whole = match.group(0)
            offset = match.start()
            return whole[: start - offset] + self.mask + whole[end - offset :]
        return self.mask

    def redact_text(self, text: str) -> str:
        """``text`` with every secret replaced by the mask."""
        for pattern in self.patterns:
            text = pattern.sub(self._sub, text)
        return text

    def redact(self, value: Any) -> Any:
        """A redacted copy of ``value``: strings scrubbed, sensitive keys masked, dicts,
        lists, tuples and msgspec structs walked; anything else returned as it is."""
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, Mapping):
            return {
                k: (
                    self.mask
                    if isinstance(k, str) and _norm_key(k) in self.keys and v
                    else self.redact(v)
                )
                for k, v in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.redact(v) for v in value]
        if isinstance(value, msgspec.Struct):
            return self.redact(msgspec.structs.asdict(value))
        return value

    def to_json(self, value: Any) -> str:
        """``value`` redacted and encoded as JSON (other objects as their redacted repr)."""
        return self._encoder.encode(self.redact(value)).decode()

    def _unencodable(self, obj: Any) -> str:
        return self.redact_text(repr(obj))
