"""Finding secrets in a text (:func:`scan`), in a tool call's arguments
(:func:`scan_args`), and masking what was found (:func:`redact`)."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from functools import lru_cache
from typing import NamedTuple, TypeAlias

from .assignments import key_value
from .patterns import PII_KINDS, RECOGNIZERS, VALUE_GROUPS, Recognizer

__all__ = [
    "MASK",
    "Finding",
    "PiiChoice",
    "SecretMatch",
    "pii_kinds",
    "redact",
    "scan",
    "scan_args",
]

MASK = "[REDACTED]"

# nothing shorter can hold a secret any recognizer keeps (a 6-character password after
# "pwd=" is the shortest)
_MIN_LENGTH = 8

PiiChoice: TypeAlias = bool | Collection[str]  # True: every PII kind; or some by name


class SecretMatch(NamedTuple):
    """A secret (or, with ``pii``, personal data) found in a text: ``text[start:end] ==
    value``.  ``kind`` names the recognizer (``aws-access-key``, ``generic-secret``,
    ``email``...); ``pii`` tells personal data from credentials."""

    kind: str
    start: int
    end: int
    value: str
    pii: bool = False


class Finding(NamedTuple):
    """A secret in a structured value: where (``path``, e.g. ``headers.Authorization``
    or ``to.0``) and what (``match``, with offsets into that string)."""

    path: str
    match: SecretMatch


class _Plan:
    """The recognizers one scan runs and, for each set of gate characters a text
    holds, the ones that set leaves to run (worked out once per set: there are at
    most ``2 ** len(gates)``)."""

    __slots__ = ("_steps", "gates", "rules")

    def __init__(self, rules: tuple[Recognizer, ...]) -> None:
        self.rules = rules
        self.gates = tuple(sorted({gate for rule in rules for gate in rule.gates}))
        self._steps: dict[int, tuple[tuple[int, Recognizer], ...]] = {}

    def steps(self, text: str) -> tuple[tuple[int, Recognizer], ...]:
        """(order, recognizer) of the rules whose gates ``text`` passes."""
        mask, bit = 0, 1
        for gate in self.gates:  # a memchr each
            if gate in text:
                mask |= bit
            bit <<= 1
        steps = self._steps.get(mask)
        if steps is None:
            present = {gate for i, gate in enumerate(self.gates) if mask >> i & 1}
            steps = self._steps[mask] = tuple(
                (order, rule)
                for order, rule in enumerate(self.rules)
                if not rule.gates or not present.isdisjoint(rule.gates)
            )
        return steps


@lru_cache(maxsize=64)
def _plan(pii: frozenset[str]) -> _Plan:
    return _Plan(tuple(r for r in RECOGNIZERS if not r.pii or r.kind in pii))


_SECRETS_ONLY = _plan(frozenset())


def pii_kinds(pii: PiiChoice) -> frozenset[str]:
    """The PII kinds ``pii`` selects (``True``: all of them, ``False``: none, one name
    or a collection of names).

    Raises:
        ValueError: it names an unknown kind.
    """
    if pii is True:
        return PII_KINDS
    if pii is False:
        return frozenset()
    kinds = frozenset((pii,) if isinstance(pii, str) else pii)
    unknown = kinds - PII_KINDS
    if unknown:
        raise ValueError(f"unknown PII kinds {sorted(unknown)}; known: {sorted(PII_KINDS)}")
    return kinds


def _span(match: re.Match[str]) -> tuple[int, int]:
    groups = match.re.groupindex
    for name in VALUE_GROUPS:
        if name in groups and match.group(name) is not None:
            return match.span(name)
    return match.span()


def _candidates(text: str, plan: _Plan) -> list[tuple[int, int, int, Recognizer]]:
    # plain loops and unpacked rules: any() over a generator, or a named tuple's
    # attributes, cost more here than the searches themselves
    lower = ""
    size = len(text)
    found: list[tuple[int, int, int, Recognizer]] = []
    for order, rule in plan.steps(text):
        if size < rule[8]:  # its min_length: indexing costs less than unpacking
            continue
        _, pattern, hints, check, _, ignore_case, _, finder, _ = rule
        if hints or finder is not None:
            if ignore_case and not lower:
                lower = text.lower()
            haystack = lower if ignore_case else text
            for hint in hints:
                if hint in haystack:
                    break
            else:
                if hints:
                    continue
        if finder is not None:
            found.extend((start, end, order, rule) for start, end in finder(text, lower))
            continue
        match = pattern.search(text)  # most texts have none: no iterator for them
        while match is not None:
            if check is None or check(match):
                start, end = _span(match)
                found.append((start, end, order, rule))
                match = pattern.search(text, max(end, match.start() + 1))
            else:  # a longer candidate may start inside a refused one
                match = pattern.search(text, match.start() + 1)
    return found


_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9+/=])(?P<value>[A-Za-z0-9+/]{40})(?![A-Za-z0-9+/=])")
_NEAR = 200  # characters: an AWS secret key this close to an access key id is its pair


def _aws_pairs(text: str, found: list[tuple[int, int, int, Recognizer]]) -> None:
    """A bare 40-character secret near an AWS access key id (a CSV of credentials, an
    ``aws configure`` transcript) is the key's secret: no name says so."""
    ids = [(s, e) for s, e, _, r in found if r.kind == "aws-access-key"]
    if not ids:
        return
    secret = next(r for r in RECOGNIZERS if r.kind == "aws-secret-key")
    seen: set[int] = set()
    for id_start, id_end in ids:  # only the text around each id is read
        window = _AWS_SECRET.finditer(text, max(0, id_start - _NEAR - 40), id_end + _NEAR + 40)
        for match in window:
            start, end = match.span()
            value = match.group(0)
            mixed = any(c.isdigit() or c in "+/" for c in value) and value.lower() != value
            if mixed and start not in seen:
                seen.add(start)
                found.append((start, end, len(RECOGNIZERS), secret))


def scan(text: str, *, pii: PiiChoice = False) -> tuple[SecretMatch, ...]:
    """The secrets in ``text``, in order, never overlapping (where two recognizers
    overlap, the longer match wins, then the one listed first).

    ``pii``: also personal data: ``True`` for every kind (``email``, ``phone``,
    ``iban``, ``card``, ``us-ssn``), or a collection of those kind names.

    Raises:
        ValueError: ``pii`` names an unknown kind.
    """
    if len(text) < _MIN_LENGTH:
        if pii is not False and pii is not True:
            pii_kinds(pii)
        return ()
    plan = _SECRETS_ONLY if pii is False else _plan(pii_kinds(pii))
    found = _candidates(text, plan)
    if not found:
        return ()
    _aws_pairs(text, found)
    # credentials first, then personal data where it does not overlap one (the password
    # in scheme://user:pass@host is not the start of an email address)
    kept = _without_overlaps([f for f in found if not f[3].pii], [])
    if len(kept) < len(found):
        kept = _without_overlaps([f for f in found if f[3].pii], kept)
    return tuple(SecretMatch(r.kind, s, e, text[s:e], r.pii) for s, e, _, r in kept)


def _without_overlaps(
    candidates: list[tuple[int, int, int, Recognizer]],
    kept: list[tuple[int, int, int, Recognizer]],
) -> list[tuple[int, int, int, Recognizer]]:
    """``kept`` plus the candidates overlapping neither it nor each other: the leftmost
    first, then the longest, then the recognizer listed first; in text order."""
    taken = sorted((s, e) for s, e, _, _ in kept)
    for candidate in sorted(candidates, key=lambda f: (f[0], f[0] - f[1], f[2])):
        start, end = candidate[0], candidate[1]
        if end > start and all(end <= s or start >= e for s, e in taken):
            kept.append(candidate)
            taken.append((start, end))
    return sorted(kept, key=lambda f: f[0])


def redact(text: str, matches: Collection[SecretMatch], mask: str = MASK) -> str:
    """``text`` with each match (as :func:`scan` returns them: in order, not
    overlapping) replaced by ``mask``."""
    if not matches:
        return text
    parts: list[str] = []
    at = 0
    for match in matches:
        parts.append(text[at : match.start])
        parts.append(mask)
        at = match.end
    parts.append(text[at:])
    return "".join(parts)


def _walk(value: object, path: str, pii: PiiChoice, found: list[Finding]) -> None:
    # the Mapping ABC last: its isinstance costs more than scanning a short string
    if isinstance(value, str):
        matches = scan(value, pii=pii)
        if matches:
            found.extend(Finding(path, match) for match in matches)
    elif isinstance(value, dict):
        _walk_mapping(value, path, pii, found)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _walk(item, f"{path}.{index}" if path else str(index), pii, found)
    elif isinstance(value, Mapping):
        _walk_mapping(value, path, pii, found)


def _walk_mapping(
    value: Mapping[object, object], path: str, pii: PiiChoice, found: list[Finding]
) -> None:
    for key, item in value.items():
        where = f"{path}.{key}" if path else str(key)
        if isinstance(item, str) and isinstance(key, str) and key_value(key, item):
            found.append(Finding(where, SecretMatch("generic-secret", 0, len(item), item)))
        else:
            _walk(item, where, pii, found)


def scan_args(value: object, *, pii: PiiChoice = False) -> tuple[Finding, ...]:
    """The secrets in a tool call's arguments (or any JSON-like value): strings are
    scanned, dicts, lists and tuples walked, and a string under a key-like name
    (``{"api_key": "..."}``, ``{"password": "..."}``) is judged as the value of that
    name.  Other values (numbers, objects) are skipped.

    Raises:
        ValueError: ``pii`` names an unknown kind.
    """
    found: list[Finding] = []
    _walk(value, "", pii, found)
    return tuple(found)
