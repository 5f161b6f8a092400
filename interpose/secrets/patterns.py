"""The recognizers: one row per kind of secret or personal data.

Each row is a ``Recognizer``: the kind's name, a regex whose group ``value`` (or the
whole match) is the secret, the literals one of which every match contains (``hints``:
a text holding none of them skips the regex, which keeps clean text cheap), and an
optional check on the candidate (a checksum, an entropy test) that must hold.

The shapes are public knowledge (the providers' documented prefixes, gitleaks and
detect-secrets rule shapes); the code is ours.  Kinds under ``PII_KINDS`` are personal
data, recognized only when asked for.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import NamedTuple

from . import checks
from .assignments import HINTS, VALUE, find_assignments

__all__ = [
    "MIN_LENGTHS",
    "PII_KINDS",
    "RECOGNIZERS",
    "SECRET_KINDS",
    "VALUE_GROUPS",
    "Recognizer",
]


class Recognizer(NamedTuple):
    """One kind: ``pattern`` finds candidates, ``check`` (on the match) keeps them.

    Before the pattern runs, the text must hold one of ``gates`` (single characters:
    a memchr, the cheapest test there is) and one of ``hints``; a pattern that starts
    with a literal needs no hints (the regex engine skips to that literal as fast)."""

    kind: str
    pattern: re.Pattern[str]
    hints: tuple[str, ...]
    check: Callable[[re.Match[str]], bool] | None = None
    pii: bool = False
    ignore_case: bool = False  # hints are lower-case and looked for in text.lower()
    gates: frozenset[str] = frozenset()  # characters, one of which every match holds
    # instead of pattern.finditer: (text, text.lower()) -> spans that passed their check
    finder: Callable[[str, str], Iterable[tuple[int, int]]] | None = None
    min_length: int = 0  # no match is shorter: a shorter text skips the rule


def _value(match: re.Match[str]) -> str:
    return match.group("value") if "value" in match.re.groupindex else match.group(0)


def _random(match: re.Match[str]) -> bool:
    """The key's generated part (group ``body``, else the whole match) looks random."""
    body = match.group("body") if "body" in match.re.groupindex else match.group(0)
    return checks.random_token(body)


def _on_value(check: Callable[[str], bool]) -> Callable[[re.Match[str]], bool]:
    def on_match(match: re.Match[str]) -> bool:
        return check(_value(match))

    on_match.__name__ = check.__name__
    return on_match


def _bearer(match: re.Match[str]) -> bool:
    return checks.key_like(match.group("value"))


def _url_password(match: re.Match[str]) -> bool:
    return not checks.placeholder(match.group("value"))


def _aws_id(match: re.Match[str]) -> bool:
    return _starts_token(match) and len(set(match.group(0)[4:])) >= 4


def _starts_token(match: re.Match[str]) -> bool:
    """Nothing word-like right before the match (what a leading ``\\b`` would say; a
    pattern starting with ``\\b`` cannot skip ahead to its literal prefix)."""
    start = match.start()
    if start == 0:
        return True
    before = match.string[start - 1]
    return not (before.isalnum() or before in "_-")


def _prefixed(match: re.Match[str]) -> bool:
    return _starts_token(match) and _random(match)


def _after(match: re.Match[str], forbidden: str) -> bool:
    """The match does not continue a token made of ``forbidden`` characters or digits
    (the lookbehind a pattern cannot start with and still skip ahead fast)."""
    start = match.start()
    if start == 0:
        return True
    before = match.string[start - 1]
    return not (before.isdigit() or before in forbidden)


def _card(match: re.Match[str]) -> bool:
    # not the tail of a longer group of numbers ("DE89 3704 0044 …" is an IBAN's)
    start, text = match.start(), match.string
    if start >= 2 and text[start - 1] in " -" and text[start - 2].isdigit():
        return False
    return _after(match, ".-") and checks.card_number(match.group(0))


_NEVER_ISSUED = re.compile(r"^(?:000|666|9\d\d)|^\d{3}-00|-0000$")


def _ssn(match: re.Match[str]) -> bool:
    return _after(match, "-") and _NEVER_ISSUED.search(match.group(0)) is None


def _jwt(match: re.Match[str]) -> bool:
    return _starts_token(match) and checks.jwt(match.group(0))


def _query_parameter(match: re.Match[str]) -> bool:
    start = match.start()
    return start > 0 and match.string[start - 1] in "?&"


def _rule(
    kind: str,
    pattern: str,
    hints: tuple[str, ...],
    check: Callable[[re.Match[str]], bool] | None = None,
    *,
    gates: str = "",
    pii: bool = False,
) -> Recognizer:
    ignore_case = pattern.startswith("(?i)")
    if ignore_case:
        hints = tuple(h.lower() for h in hints)
    return Recognizer(kind, re.compile(pattern), hints, check, pii, ignore_case, frozenset(gates))


_B64 = r"A-Za-z0-9+/"
_PEM_LABEL = r"(?:(?:RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY(?: BLOCK)?"
_END = r"(?![A-Za-z0-9_\-])"

# The group holding the secret: "value", or one of the generic rule's quoted/bare forms.
VALUE_GROUPS = ("value", "dq", "sq", "bare")

# First the kinds with a prefix of their own (a match cannot be anything else), then the
# ones judged by context; where two overlap, scan keeps the longer, then the earlier row.
RECOGNIZERS: tuple[Recognizer, ...] = (
    _rule(
        "gcp-service-account",
        r'"private_key"\s*:\s*"(?P<value>-----BEGIN [A-Z ]*PRIVATE KEY-----[^"]*)"',
        ('"private_key"',),
        gates="_",
    ),
    _rule(
        "private-key",
        rf"-----BEGIN {_PEM_LABEL}-----[\s\S]*?(?:-----END {_PEM_LABEL}-----|\Z)",
        ("PRIVATE KEY",),
        gates="-",
    ),
    _rule("anthropic", rf"sk-ant-(?P<body>[A-Za-z0-9_\-]{{20,}}){_END}", (), _prefixed, gates="-"),
    _rule(
        "openai",
        rf"sk-(?!ant-)(?:proj-|svcacct-|admin-)?(?P<body>[A-Za-z0-9_\-]{{20,}}){_END}",
        (),
        _prefixed,
        gates="-",
    ),
    _rule(
        "github",
        rf"g(?:h[pousr]_|ithub_pat_)(?P<body>[A-Za-z0-9_]{{30,}}){_END}",
        (),
        _prefixed,
        gates="_",
    ),
    _rule(
        "gitlab",
        rf"gl(?:pat|dt|rt|ptt)-(?P<body>[A-Za-z0-9_\-]{{20,}}){_END}",
        (),
        _prefixed,
        gates="-",
    ),
    _rule(
        "slack",
        rf"xox[abposre]-[0-9]{{6,}}-[A-Za-z0-9\-]{{8,}}{_END}",
        (),
        _starts_token,
        gates="-",
    ),
    _rule(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/T[A-Z0-9]+/[A-Z0-9]+/[A-Za-z0-9]{16,}",
        (),
        gates=".",
    ),
    _rule(
        "stripe",
        rf"[rs]k_(?:live|test)_(?P<body>[A-Za-z0-9]{{16,}}){_END}",
        ("k_live_", "k_test_"),
        _prefixed,
        gates="_",
    ),
    _rule("google-api-key", rf"AIza[0-9A-Za-z_\-]{{35}}{_END}", (), _starts_token),
    _rule(
        "azure-storage-key",
        rf"AccountKey=(?P<value>[{_B64}]{{86}}==)",
        (),
        gates="=",
    ),
    _rule(
        "azure-sas",
        r"sig=(?P<value>[A-Za-z0-9%+/]{40,}(?:%3D|=){0,2})",
        (),
        _query_parameter,
        gates="=",
    ),
    _rule("twilio", r"SK[0-9a-fA-F]{32}\b", (), _starts_token),
    _rule(
        "sendgrid",
        r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _END,
        (),
        _starts_token,
        gates=".",
    ),
    _rule("npm", rf"npm_(?P<body>[A-Za-z0-9]{{36}}){_END}", (), _prefixed, gates="_"),
    _rule("pypi", rf"pypi-AgE[A-Za-z0-9_\-]{{50,}}{_END}", (), _starts_token, gates="-"),
    _rule("huggingface", rf"hf_(?P<body>[A-Za-z0-9]{{30,}}){_END}", (), _prefixed, gates="_"),
    _rule("shopify", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b", (), _starts_token, gates="_"),
    _rule("digitalocean", r"do[por]_v1_[a-f0-9]{64}\b", (), _starts_token, gates="_"),
    _rule(
        "aws-access-key",
        # long-term (AKIA) and temporary (ASIA) access key ids, and two rarer kinds
        r"A(?:KIA|SIA|BIA|CCA)[A-Z2-7]{16}\b",
        (),
        _aws_id,
    ),
    _rule(
        "aws-secret-key",
        r"(?i)aws[\w.\-]{0,30}?(?:secret|sk)[\w.\-]{0,30}[\"']?\s*[:=]\s*[\"']?"
        rf"(?P<value>[{_B64}]{{40}})(?![{_B64}=])",
        ("aws",),
        gates=":=",
    ),
    _rule(
        "jwt",
        r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}" + _END,
        (),
        _jwt,
        gates=".",
    ),
    _rule(
        "url-password",
        # scheme://user:password@host (the scheme is not needed to find it)
        r"://[^\s:/@\"'<>]{0,64}:(?P<value>[^\s:/@\"'<>]{3,128})@[A-Za-z0-9.\-\[\]]+",
        (),
        _url_password,
        gates="@",
    ),
    _rule(
        "bearer",
        r"(?i)\bbearer\s+(?P<value>[A-Za-z0-9_\-.~+/]{16,}=*)",
        ("bearer",),
        _bearer,
    ),
    _rule(
        "basic-auth",
        r"(?i)\bauthorization\"?\s*[:=]\s*\"?basic\s+(?P<value>[A-Za-z0-9+/]{8,}={0,2})",
        ("basic",),
        gates=":=",
    ),
    # name = value, name: value, "name": "value", name := value, name => value
    Recognizer(
        "generic-secret",
        VALUE,
        HINTS,
        ignore_case=True,
        gates=frozenset(":="),
        finder=find_assignments,
    ),
    # -- personal data: only when asked for ----------------------------------------------
    _rule(
        "email",
        r"(?<![A-Za-z0-9._%+\-])[A-Za-z0-9._%+\-]{1,64}@(?:[A-Za-z0-9\-]{1,63}\.)+"
        # not icon@2x.png, not git@github.com:org/repo
        r"(?!(?:png|jpe?g|gif|svg|webp|js|ts|css|py|md|txt|json)\b)[A-Za-z]{2,24}\b(?!:\S)",
        (),
        gates="@",
        pii=True,
    ),
    _rule(
        "iban",
        r"\b[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
        (),
        _on_value(checks.iban),
        pii=True,
    ),
    _rule(
        "card",
        r"\d(?:[ \-]?\d){12,18}(?![\d\-]|\.\d)",
        (),
        _card,
        pii=True,
    ),
    _rule(
        "us-ssn",
        r"\d{3}-\d{2}-\d{4}(?![\d\-])",
        (),
        _ssn,
        gates="-",
        pii=True,
    ),
    _rule(
        "phone",
        r"(?<![\w+.\-/])(?:\+[1-9](?:[ .\-]?\(?\d\)?){7,14}"
        r"|\(?[2-9]\d{2}\)?[ .\-]?[2-9]\d{2}[ .\-]\d{4}"
        r"|0[1-9](?:[ .]\d{2}){4}"
        r"|0\d{2,4} \d{3,4} \d{3,4})(?![\w\-/]|\.\d)",
        (),
        _on_value(checks.phone),
        pii=True,
    ),
)

# The shortest match of each pattern (tests/secrets/test_patterns.py checks these against
# the regex parser's own widths): a shorter text skips the rule without running it.
MIN_LENGTHS: dict[str, int] = {
    "gcp-service-account": 43, "private-key": 27, "anthropic": 27, "openai": 23,
    "github": 34, "gitlab": 25, "slack": 20, "slack-webhook": 54, "stripe": 24,
    "google-api-key": 39, "azure-storage-key": 99, "azure-sas": 44, "twilio": 34,
    "sendgrid": 69, "npm": 40, "pypi": 58, "huggingface": 33, "shopify": 38,
    "digitalocean": 71, "aws-access-key": 20, "aws-secret-key": 46, "jwt": 32,
    "url-password": 9, "bearer": 23, "basic-auth": 28, "generic-secret": 8,
    "email": 6, "iban": 12, "card": 13, "us-ssn": 11, "phone": 9,
}  # fmt: skip
RECOGNIZERS = tuple(r._replace(min_length=MIN_LENGTHS[r.kind]) for r in RECOGNIZERS)
SECRET_KINDS: frozenset[str] = frozenset(r.kind for r in RECOGNIZERS if not r.pii)
PII_KINDS: frozenset[str] = frozenset(r.kind for r in RECOGNIZERS if r.pii)
