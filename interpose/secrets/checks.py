"""The checks a candidate passes before it counts: checksums (Luhn, IBAN mod-97), the
shape of random keys (entropy, character classes), placeholders, JWT headers, phone
numbers that are not dates or versions.

Each takes the matched value (no surrounding text) and returns True when it is kept.
They run only on regex candidates, never on whole texts.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter

__all__ = [
    "IBAN_LENGTHS",
    "card_number",
    "entropy",
    "iban",
    "jwt",
    "key_like",
    "luhn",
    "password_like",
    "phone",
    "placeholder",
    "random_token",
]


def entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character (0.0 for an empty string)."""
    if not value:
        return 0.0
    size = len(value)
    return -sum(n / size * math.log2(n / size) for n in Counter(value).values())


# documentation stand-ins; "EXAMPLE" keys (AKIAIOSFODNN7EXAMPLE) are not here on purpose:
# they have a real key's shape, and masking one costs nothing (see docs/secrets.md)
_PLACEHOLDER_WORDS = re.compile(
    r"(?i)^(?:<[^>]*>|\[[\w .\-]*\]|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|"
    r"%\(?[A-Za-z_]\w*\)?s?|\{\{.*\}\}|"
    r"(?:your|insert|replace)[\w\-]*|x+|\*+|\.+|-+|#+|"
    r"(?:changeme|redacted|placeholder|dummy|sample|null|none|nil|true|false|undefined|"
    r"required|optional|string|secret|password|passwd|pass|pwd|user|token|example|test|"
    r"xxx\w*))$"
)
# a value that reads a setting instead of holding one: os.environ, settings.SECRET_KEY
_REFERENCE = re.compile(
    r"^(?:os|process|env|settings|config|conf|cfg|self|this|ctx|context|secrets|vars|app|"
    r"import|params|options|opts|args|props|window|document)(?:\.[A-Za-z_]\w*)+(?:\(\)?)?$"
)


def placeholder(value: str) -> bool:
    """``value`` stands for a secret rather than being one: ``<token>``, ``${API_KEY}``,
    ``your-key-here``, ``xxxx``, ``****``, a word like ``changeme``, an attribute path
    like ``process.env.TOKEN``, or fewer than three distinct characters."""
    return (
        len(set(value)) < 3
        or _PLACEHOLDER_WORDS.match(value) is not None
        or _REFERENCE.match(value) is not None
    )


def _classes(value: str) -> int:
    return (
        any(c.islower() for c in value)
        + any(c.isupper() for c in value)
        + any(c.isdigit() for c in value)
    )


def random_token(value: str) -> bool:
    """The body of a prefixed key looks generated: not a placeholder, and letters mixed
    with digits or both cases (``sk-this-is-not-a-key`` is words, not a key)."""
    return _classes(value) >= 2 and not placeholder(value)


_HEX = re.compile(r"^[0-9a-fA-F]+$")


def key_like(value: str) -> bool:
    """A value under a key-like name (``token``, ``api_key``...) that looks generated:
    at least 12 characters, not a placeholder or reference, and either long hex (a
    legacy token) or two character classes with at least 3 bits of entropy per
    character."""
    if len(value) < 12 or placeholder(value):
        return False
    if len(value) >= 32 and _HEX.match(value):
        return True
    return _classes(value) >= 2 and entropy(value) >= 3.0


_WORDS_ONLY = re.compile(r"^[a-z]+$")
_PATH = re.compile(r"^(?:~?/|\./)[\w./\-]*$")  # pwd: /home/user is a directory


def password_like(value: str) -> bool:
    """A value under a password-like name: at least 6 characters, not a placeholder,
    not a path (``pwd: /home/u``).  Passwords are chosen by people
    (``correct-horse-battery``), so no entropy test; a single lower-case word under 8
    characters (``enabled``) is taken for a setting."""
    if len(value) < 6 or placeholder(value) or _PATH.match(value):
        return False
    return not (len(value) < 8 and _WORDS_ONLY.match(value))


def luhn(digits: str) -> bool:
    """The Luhn checksum of a string of digits holds."""
    total = 0
    for index, char in enumerate(reversed(digits)):
        digit = ord(char) - 48
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


# issuer prefixes: Visa, Mastercard, Amex, Discover, JCB, Diners, UnionPay, Maestro
_CARD_PREFIX = re.compile(
    r"^(?:4|5[1-5]|2[2-7]|3[47]|6(?:011|5|4[4-9]|2)|35|3(?:0[0-5]|[68])|5[06-8])"
)


def card_number(value: str) -> bool:
    """``value`` (digits with at most one kind of separator) is a payment card number:
    13 to 19 digits, a known issuer prefix, the Luhn check."""
    separators = {c for c in value if not c.isdigit()}
    if len(separators) > 1:
        return False
    digits = value.replace(" ", "").replace("-", "")
    return 13 <= len(digits) <= 19 and bool(_CARD_PREFIX.match(digits)) and luhn(digits)


IBAN_LENGTHS: dict[str, int] = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BR": 29, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18,
    "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22,
    "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
    "IL": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LI": 21,
    "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27,
    "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29, "PT": 25,
    "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27,
    "TN": 24, "TR": 26, "UA": 29, "VG": 24, "XK": 20,
}  # fmt: skip


def iban(value: str) -> bool:
    """``value`` (spaces allowed) is an IBAN: a known country, its length, mod-97 == 1."""
    compact = value.replace(" ", "").upper()
    if IBAN_LENGTHS.get(compact[:2]) != len(compact):
        return False
    rotated = compact[4:] + compact[:4]
    try:
        number = int("".join(str(int(c, 36)) for c in rotated))
    except ValueError:
        return False
    return number % 97 == 1


def jwt(value: str) -> bool:
    """The first segment of ``value`` decodes to a JSON object naming ``alg`` or ``typ``."""
    head = value.split(".", 1)[0]
    try:
        decoded = base64.urlsafe_b64decode(head + "=" * (-len(head) % 4))
    except (binascii.Error, ValueError):
        return False
    return decoded.startswith(b"{") and (b'"alg"' in decoded or b'"typ"' in decoded)


_DATE = re.compile(r"^(?:\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{4})$")
_DOTTED = re.compile(r"^\d{1,3}(?:\.\d{1,3}){2,}$")  # an IP address or a version


def phone(value: str) -> bool:
    """A phone-number candidate is one: 8 to 15 digits with a ``+``, 10 or 11 without,
    and not a date, an IP address or a dotted version."""
    if _DATE.match(value) or _DOTTED.match(value):
        return False
    digits = sum(c.isdigit() for c in value)
    if value.startswith("+"):
        return 8 <= digits <= 15
    return 10 <= digits <= 11
