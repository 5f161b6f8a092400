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

# (name, pattern, hints): the whole match is replaced, or only group "secret" when
# present.  ``hints`` are literals one of which every match contains (lower-case when
# the pattern ignores case): a text without any of them skips the pattern, which keeps
# clean text cheap (a regex starting with \b cannot scan ahead for a literal).
DEFAULT_PATTERNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "private-key",
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)",
        ("PRIVATE KEY-----",),
    ),
    ("anthropic", r"\bsk-ant-[A-Za-z0-9_\-]{16,}", ("sk-ant-",)),
    ("openai", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", ("sk-",)),
    (
        "github",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    ("gitlab", r"\bglpat-[A-Za-z0-9_\-]{20,}", ("glpat-",)),
    ("slack", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", ("xox",)),
    ("stripe", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}", ("k_live_", "k_test_")),
    ("google", r"\bAIza[0-9A-Za-z_\-]{35}", ("AIza",)),
    ("huggingface", r"\bhf_[A-Za-z0-9]{30,}", ("hf_",)),
    (
        "aws-access-key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
        ("AKIA", "ASIA", "ABIA", "ACCA"),
    ),
    (
        "aws-secret-key",
        r"(?i)aws_?secret_?(?:access_?)?key[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})",
        ("aws",),
    ),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", ("eyJ",)),
    ("bearer", r"(?i)\bbearer\s+(?P<secret>[A-Za-z0-9_\-.~+/]{16,}=*)", ("bearer",)),
    (
        # also DB_PASSWORD=..., GITHUB_TOKEN: ... (a prefix joined by "_")
        "assignment",
        r"(?i)(?<![A-Za-z0-9])(?:[A-Za-z0-9]+_)*"
        r"(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token|token)"
        r"[\"']?\s*[:=]\s*[\"']?(?P<secret>[^\s\"',;&]{6,})",
        ("pass", "pwd", "secret", "key", "token"),
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
        "proxy-authorization",
        # API-key headers of model providers and gateways
        "x-api-key",
        "x-goog-api-key",
        "api-key",
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
        rules: list[tuple[re.Pattern[str], tuple[str, ...], bool]] = []
        if defaults:
            for _, pattern, hints in DEFAULT_PATTERNS:
                rules.append((re.compile(pattern), hints, pattern.startswith("(?i)")))
        for p in patterns:
            rules.append((p if isinstance(p, re.Pattern) else re.compile(p), (), False))
        self._rules = tuple(rules)
        self.patterns: tuple[re.Pattern[str], ...] = tuple(r[0] for r in rules)
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

    def is_sensitive_key(self, key: str) -> bool:
        """Values under ``key`` are always masked (case-insensitive, ``-`` like ``_``)."""
        return _norm_key(key) in self.keys

    def redact_text(self, text: str) -> str:
        """``text`` with every secret replaced by the mask."""
        lower: str | None = None
        for pattern, hints, ignore_case in self._rules:
            if hints:
                if ignore_case:
                    if lower is None:
                        lower = text.lower()
                    haystack = lower
                else:
                    haystack = text
                # a plain loop: any() over a generator costs more than the search
                for hint in hints:
                    if hint in haystack:
                        break
                else:
                    continue
            replaced = pattern.sub(self._sub, text)
            if replaced is not text and replaced != text:
                text, lower = replaced, None
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
