"""Values under key-like names: ``DB_PASSWORD=...``, ``"api_key": "..."``,
``client_secret: ...``, ``token := ...``.

A name is key-like when it ends with one of a few words (``password``, ``secret``,
``token``, ``api_key``, ``auth``, ``credentials``...), with words of its own before
them and ``key``/``base``/``value`` after them (``GITHUB_TOKEN``, ``apiKey``,
``SECRET_KEY_BASE``).  The value under such a name is a secret when it passes the check
for the name: any non-placeholder of six characters or more for a password, a random
enough string for the others (:mod:`.checks`).

:func:`find_assignments` looks for the words themselves (``str.find``, as fast as
the text can be read) and reads the name and the value around each, instead of
running one regex with an unanchored name at every position of the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from typing import Literal

from . import checks

__all__ = ["HINTS", "KEY_NAME", "VALUE", "find_assignments", "key_value", "name_kind"]

_NAME_WORDS = (
    r"password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|auth|credentials?|session[_-]?key|signing[_-]?key|encryption[_-]?key"
)
KEY_NAME = re.compile(
    rf"(?i)^[a-z0-9_.\-]*?(?:{_NAME_WORDS})(?:[_.\-]?(?:key|base|value|string|str)){{0,2}}$"
)
_PASSWORD_NAME = re.compile(r"(?i)pass|pwd")

# lower-case words one of which every key-like name contains
HINTS = ("pass", "pwd", "secret", "token", "key", "auth", "credential")

# what follows a name: an operator, then a quoted or a bare value
VALUE = re.compile(
    r"[\"']?[ \t]*(?::=|=>|:|=)[ \t]*"
    r"(?:\"(?P<dq>[^\"\\\s]{1,256})\"|'(?P<sq>[^'\\\s]{1,256})'|"
    r"(?P<bare>[^\s\"'`,;&<>(){}\[\]]{1,256}))"
)
_NAME_CHAR = re.compile(r"[A-Za-z0-9_.\-]*")
_NAME_TAIL = re.compile(r"[A-Za-z0-9_.\-]{0,64}\Z")
_MAX_NAME = 64


def key_value(name: str, value: str) -> bool:
    """``value`` under the key ``name`` is a secret: the name is key-like and the value
    passes the check for it (a password, or a generated key)."""
    kind = name_kind(name)
    if kind is None:
        return False
    return checks.password_like(value) if kind == "password" else checks.key_like(value)


@lru_cache(maxsize=4096)
def name_kind(name: str) -> Literal["password", "key"] | None:
    """``"password"`` or ``"key"`` for a key-like name (which check its values take),
    None for any other (remembered: argument names repeat from call to call)."""
    if len(name) > _MAX_NAME:
        return None
    lower = name.lower()
    for hint in HINTS:
        if hint in lower:
            break
    else:
        return None
    if KEY_NAME.match(name) is None:
        return None
    return "password" if _PASSWORD_NAME.search(name) else "key"


def find_assignments(text: str, lower: str) -> Iterator[tuple[int, int]]:
    """The spans of the values in ``text`` that are secrets by the name they are
    assigned to (``lower`` is ``text.lower()``), each once, in no particular order."""
    seen: set[int] = set()
    for hint in HINTS:
        at = lower.find(hint)
        while at >= 0:
            name = _NAME_CHAR.match(text, at)  # always matches: the hint is in it
            end = name.end() if name is not None else at + len(hint)
            if end not in seen:
                seen.add(end)
                span = _assigned(text, at, end)
                if span is not None:
                    yield span
            at = lower.find(hint, end)


def _assigned(text: str, at: int, end: int) -> tuple[int, int] | None:
    """The value's span when the name around ``at`` (ending at ``end``) is followed by
    an operator and a value that is a secret under that name."""
    value = VALUE.match(text, end)
    if value is None:
        return None
    head = _NAME_TAIL.search(text, max(0, at - _MAX_NAME), at)
    start = head.start() if head is not None else at
    for group in ("dq", "sq", "bare"):
        found = value.group(group)
        if found is not None:
            if group == "bare" and _code(found, text, value.end(group)):
                return None
            if key_value(text[start:end], found):
                return value.span(group)
            return None
    return None


# an unquoted value that is code, not a literal: a dotted path of words (parsed.value,
# _CURRENT.set; river.river59 has digits: a password) or a type name (McpAuthConfig)
_CODE_VALUE = re.compile(r"^[A-Za-z_]+(?:\.[A-Za-z_]+)+$|^(?:[A-Z][a-z]{2,})+$")


def _code(value: str, text: str, end: int) -> bool:
    """The unquoted ``value`` (ending at ``end``) is code: a call, a subscript, a path."""
    return text[end : end + 1] in ("(", "[") or _CODE_VALUE.match(value) is not None
