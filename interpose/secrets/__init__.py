"""Recognizing secrets (and, when asked, personal data) in text and tool arguments.

A leaf package: pattern-based recognizers with checks (Luhn, IBAN mod-97, entropy,
placeholders), precompiled, with a literal pre-filter so clean text costs microseconds::

    from interpose.secrets import redact, scan

    matches = scan("key AKIAZ3MBTQ7KXPL4VW2N in the log")
    matches[0].kind                       # 'aws-access-key'
    redact("key AKIAZ3MBTQ7KXPL4VW2N in the log", matches)   # 'key [REDACTED] in the log'

:func:`scan` finds secrets in a string, :func:`scan_args` in a call's arguments (with the
path of each), :func:`redact` masks them, :func:`env_secrets` reads a ``.env`` text.
The recognizers are in :mod:`.patterns`, their checks in :mod:`.checks`.
"""

from __future__ import annotations

from .dotenv import env_secrets, parse_env
from .patterns import PII_KINDS, SECRET_KINDS
from .scan import MASK, Finding, PiiChoice, SecretMatch, pii_kinds, redact, scan, scan_args

__all__ = [
    "MASK",
    "PII_KINDS",
    "SECRET_KINDS",
    "Finding",
    "PiiChoice",
    "SecretMatch",
    "env_secrets",
    "parse_env",
    "pii_kinds",
    "redact",
    "scan",
    "scan_args",
]
