"""Reading ``.env`` files: every ``KEY=value`` (:func:`parse_env`) and the values that
are secrets (:func:`env_secrets`), so a session can remember values it has seen and
recognize them later in an outgoing argument whatever their shape."""

from __future__ import annotations

import re

from . import checks
from .assignments import KEY_NAME, key_value
from .scan import scan

__all__ = ["env_secrets", "parse_env"]

_LINE = re.compile(
    r"^[ \t]*(?:export[ \t]+)?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)[ \t]*[=:][ \t]*"
    r"(?:\"(?P<dq>(?:[^\"\\]|\\.)*)\"|'(?P<sq>[^']*)'|(?P<bare>[^#\r\n]*?))[ \t]*(?:#.*)?$",
    re.MULTILINE,
)
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}
_ESCAPE = re.compile(r"\\(.)")


def parse_env(text: str) -> dict[str, str]:
    """The ``KEY=value`` pairs of a ``.env`` text, later ones winning: ``export`` is
    allowed, values may be single- or double-quoted (``\\n`` and friends unescaped in
    double quotes), ``# comments`` and blank lines are skipped."""
    pairs: dict[str, str] = {}
    for line in _LINE.finditer(text):
        if line.group("dq") is not None:
            value = _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(0)), line.group("dq"))
        elif line.group("sq") is not None:
            value = line.group("sq")
        else:
            value = line.group("bare") or ""
        pairs[line.group("name")] = value
    return pairs


def _secret(name: str, value: str) -> bool:
    if not value or checks.placeholder(value):
        return False
    if KEY_NAME.match(name):
        return key_value(name, value)
    if scan(value):
        return True
    # an unnamed value that still looks generated (a signing salt, a webhook id)
    return len(value) >= 16 and checks.key_like(value) and checks.entropy(value) >= 3.5


def env_secrets(text: str) -> dict[str, str]:
    """The pairs of :func:`parse_env` whose value is a secret: under a key-like name
    (``*_TOKEN``, ``*_PASSWORD``, ``*_API_KEY``...) and passing its check, recognized
    by :func:`~interpose.secrets.scan`, or long and random enough on its own."""
    return {name: value for name, value in parse_env(text).items() if _secret(name, value)}
