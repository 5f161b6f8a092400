"""Values a session has seen, and the values a sink call carries.

A result is kept as its text, normalized (case folded, whitespace collapsed), in a
``Haystack`` with the origin of each piece; a sink argument's value is looked up in it
as a whole word or phrase (``mallory@evil.com`` is found in ``write to
mallory@evil.com.`` but ``100`` is not found in ``1000``).  Which values of a call
count (``candidates``): strings of ``min_length`` characters or more that look like a
value (a digit, ``@``, ``/``, ``.``, ``:``, ``_``, several words, or any word under a
value-bearing key such as ``recipient``, ``channel`` or ``password``), numbers of 3
digits or more, and the emails, URLs, IBANs, long numbers and domains inside free text
(a ``body`` or ``subject`` counts only by those).  ``1``, ``true`` or ``ok`` never count.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from typing import Any

from .model import Origin

__all__ = [
    "Haystack",
    "candidates",
    "leaves",
    "normalize",
    "render",
    "secret_values",
    "strings",
    "words_of",
]


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: the most text kept of one result
MAX_RESULT_CHARS = 1 << 20
#: the most text a session keeps of untrusted results (and of trusted ones): the oldest
#: is forgotten past it
MAX_SESSION_CHARS = 4 << 20
#: the size of the pieces a session's text is joined in
SEGMENT_CHARS = 64 << 10
#: a string argument longer than this is free text: only the tokens inside count
MAX_VALUE_CHARS = 256

_TOKENS = re.compile(
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+"  # email
    r"|(?:https?|ftp)://[^\s\"'<>]+|www\.[^\s\"'<>]+"  # URL
    r"|\b[a-z]{2}\d{2}[a-z0-9]{11,30}\b"  # IBAN
    r"|\+?\d[\d ./-]{5,}\d"  # long numbers: phones, cards, accounts, ids
    r"|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,12}\b"  # domains
)
_TRAILING = ".,;:!?)]}'\""
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_MAY_HOLD_TOKENS = re.compile(r"[@.\d]")  # every token has one of these
_LOOKS_LIKE_VALUE = re.compile(r"[\d@/.:_]|\S\s+\S")
_COMMON = _set(
    "true false null none yes no ok okay json text html utf-8 utf8 http https www the and "
    "for with from this that default auto high low medium normal"
)
#: keys whose values are free text: only the tokens inside them count
_FREE_TEXT = _set(
    "body subject content contents text message title description note notes comment "
    "summary markdown html caption reason prompt query"
)
#: keys whose single-word values count too (a recipient named ``alice``)
_VALUE_KEYS = _set(
    "to recipient recipients cc bcc user users username channel channels account iban "
    "name names participants invitee email emails phone payee receiver password passwd "
    "passphrase pin secret token key code otp"
)
_ENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*[=:]\s*(.*?)\s*$")
_KEY_LIKE = re.compile(r"key|token|secret|pass|pwd|auth|cred|private|dsn|session|cookie|salt", re.I)


def normalize(text: str) -> str:
    """Case folded, whitespace collapsed."""
    return " ".join(text.casefold().split())


_ALPHA = re.compile(r"[a-z]+")


def words_of(text: str) -> set[str]:
    """The words of a normalized ``text`` with their plain forms (``reservation`` also
    as ``reserve``, ``scheduled`` as ``schedule``, ``emails`` as ``email``): what a
    message asks for is matched on them."""
    found: set[str] = set()
    for word in _ALPHA.findall(text):
        found.add(word)
        if len(word) > 5 and word.endswith(("ation", "ations")):
            found.add(word[: word.rindex("ation")] + "e")
        elif len(word) > 4 and word.endswith("ing"):
            found.update((word[:-3], word[:-3] + "e"))
        elif len(word) > 3 and word.endswith("ed"):
            found.update((word[:-2], word[:-1]))
        elif len(word) > 3 and word.endswith("s"):
            found.update((word[:-1], word[:-2] if word.endswith("es") else word))
    return found


def render(value: Any) -> str:
    """Every string and number inside a result (dicts, lists, an MCP result's content),
    one a line, normalized; at most ``MAX_RESULT_CHARS``."""
    if isinstance(value, str):
        return normalize(value[:MAX_RESULT_CHARS])
    parts: list[str] = []
    size = 0
    for leaf in leaves(value, 0):
        parts.append(leaf)
        size += len(leaf)
        if size > MAX_RESULT_CHARS:
            break
    return normalize("\n".join(parts))


def leaves(value: Any, depth: int = 0) -> Iterator[str]:
    """Every string and number inside ``value``, not normalized."""
    if depth > 32:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield _number(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from leaves(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from leaves(item, depth + 1)
    else:
        fields = getattr(value, "__struct_fields__", None)  # a ToolResult, a msgspec struct
        if fields is not None:
            for name in fields:
                yield from leaves(getattr(value, name), depth + 1)
        else:
            yield str(value)


def _number(value: int | float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def candidates(
    args: Mapping[str, Any], min_length: int, *, texts: bool = False
) -> list[tuple[str, str, str]]:
    """(argument path, normalized value, value as the call spells it) of every value of
    ``args`` that counts; with ``texts``, a short free text whole too (a subject, a
    title, a body of a few words: ``MIN_TEXT_CHARS`` to ``MAX_VALUE_CHARS``)."""
    found: list[tuple[str, str, str]] = []
    _walk(args, "", "", min_length, found, 0, texts)
    return found


#: the shortest free text that counts whole (with ``texts``): a few words
MIN_TEXT_CHARS = 12


def _walk(
    value: Any,
    path: str,
    key: str,
    min_length: int,
    found: list[tuple[str, str, str]],
    depth: int,
    texts: bool,
) -> None:
    if depth > 16:
        return
    if isinstance(value, str):
        _string(value, path, key, min_length, found)
        if texts and key in _FREE_TEXT:
            text = normalize(value)
            if MIN_TEXT_CHARS <= len(text) <= MAX_VALUE_CHARS and " " in text:
                found.append((path, text, value.strip()))
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        text = _number(value)
        if sum(c.isdigit() for c in text) >= (2 if _is_id(key) else 3):
            found.append((path, text, text))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            k = str(k)
            _walk(v, f"{path}.{k}" if path else k, _key(k), min_length, found, depth + 1, texts)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _walk(v, f"{path}[{i}]", key, min_length, found, depth + 1, texts)


def _is_id(key: str) -> bool:
    """An identifier's key (snake-cased): ``id``, ``ids``, ``file_id``, ``event_ids``."""
    return key in ("id", "ids", "uid") or key.endswith(("_id", "_ids", "-id"))


def _key(name: str) -> str:
    """A key lower-cased, camelCase as snake_case: ``eventId`` -> ``event_id`` (keys
    repeat: each is worked out once, up to ``_MAX_KEYS``)."""
    key = _KEYS.get(name)
    if key is None:
        key = _CAMEL.sub(r"\1_\2", name).lower()
        if len(_KEYS) < _MAX_KEYS:
            _KEYS[name] = key
    return key


_KEYS: dict[str, str] = {}
_MAX_KEYS = 4096


def _string(
    value: str, path: str, key: str, min_length: int, found: list[tuple[str, str, str]]
) -> None:
    text = normalize(value)
    if _is_id(key) and 2 <= len(text) < min_length and text not in _COMMON:
        found.append((path, text, value.strip()))  # a short id counts: ``13``
        return
    whole = (
        min_length <= len(text) <= MAX_VALUE_CHARS
        and key not in _FREE_TEXT
        and text not in _COMMON
        and (key in _VALUE_KEYS or _LOOKS_LIKE_VALUE.search(text) is not None)
    )
    if whole:
        found.append((path, text, value.strip()))
        if " " not in text:
            return  # one word: the tokens inside it are parts of the value itself
    if _MAY_HOLD_TOKENS.search(text) is None:
        return
    for match in _TOKENS.finditer(text):
        token = match.group().rstrip(_TRAILING)
        if token != text and len(token) >= min_length and token not in _COMMON:
            found.append((path, token, token))


def secret_values(text: str, min_length: int = 6) -> list[str]:
    """The secrets of a secret file's text (not normalized): the values of its
    ``KEY=VALUE`` lines that are secret-like (under a key-like name: ``*_KEY``,
    ``*TOKEN*``, ``*PASSWORD*``...; or 12 characters or more mixing letters and digits,
    so ``NODE_ENV=production`` is no secret); for a file without such lines (a private
    key), its lines of 16 or more characters without spaces."""
    values: list[str] = []
    assignments = 0
    lines = text.splitlines()
    for line in lines:
        match = _ENV_LINE.match(line)
        if match is None or line.lstrip().startswith("#"):
            continue
        assignments += 1
        key, value = match.group(1), match.group(2).strip("'\"")
        if len(value) < min_length or value.casefold() in _COMMON:
            continue
        mixed = (
            len(value) >= 12 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
        )
        if mixed or _KEY_LIKE.search(key):
            values.append(value)
    if not assignments:
        values = [ln.strip() for ln in lines if len(ln.strip()) >= 16 and " " not in ln.strip()]
    return values


class _Segment:
    """Some consecutive texts of a haystack, joined on the first lookup after a change."""

    __slots__ = ("joined", "origins", "size", "starts", "texts")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.origins: list[Origin] = []
        self.starts: list[int] = []
        self.joined: str | None = None
        self.size = 0

    def add(self, text: str, origin: Origin) -> None:
        self.starts.append(self.size)
        self.texts.append(text)
        self.origins.append(origin)
        self.size += len(text) + 1
        self.joined = None

    def find(self, value: str) -> Origin | None:
        joined = self.joined
        if joined is None:
            joined = self.joined = "\n".join(self.texts)
        i = joined.find(value)
        end = len(joined)
        while i >= 0:
            after = i + len(value)
            if (i == 0 or not joined[i - 1].isalnum() or not value[0].isalnum()) and (
                after == end or not joined[after].isalnum() or not value[-1].isalnum()
            ):
                return self.origins[bisect_right(self.starts, i) - 1]
            i = joined.find(value, i + 1)
        return None


class Haystack:
    """Normalized texts and where each came from; ``find`` says where a value was seen
    first.  The texts are kept in segments of about ``SEGMENT_CHARS``, each joined once
    after it changes (a new result costs one segment's join, not the session's); past
    ``limit`` characters the oldest segments are forgotten."""

    __slots__ = ("_segments", "limit", "size")

    def __init__(self, limit: int = MAX_SESSION_CHARS) -> None:
        self._segments: list[_Segment] = []
        self.limit = limit
        self.size = 0

    def __bool__(self) -> bool:
        return bool(self._segments)

    def add(self, text: str, origin: Origin) -> None:
        if not text:
            return
        segments = self._segments
        if not segments or segments[-1].size > SEGMENT_CHARS:
            segments.append(_Segment())
        segments[-1].add(text, origin)
        self.size += len(text) + 1
        while self.size > self.limit and len(segments) > 1:
            self.size -= segments.pop(0).size

    def find(self, value: str) -> Origin | None:
        """The origin of the first whole-word occurrence of ``value`` (normalized)."""
        for segment in self._segments:
            found = segment.find(value)
            if found is not None:
                return found
        return None


def strings(args: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(argument path, value) of every string inside ``args``."""
    found: list[tuple[str, str]] = []
    _strings(args, "", found, 0)
    return found


def _strings(value: Any, path: str, found: list[tuple[str, str]], depth: int) -> None:
    if depth > 16:
        return
    if isinstance(value, str):
        found.append((path, value))
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _strings(v, f"{path}.{k}" if path else str(k), found, depth + 1)
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            _strings(v, f"{path}[{i}]", found, depth + 1)
