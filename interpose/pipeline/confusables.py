# ruff: noqa: RUF001, RUF002, RUF003  (the lookalike letters are this module's data)
"""Lookalike characters folded to the Latin letters they imitate, for tool names.

``fold_confusables`` applies Unicode NFKC (fullwidth ``ｅｘｅｃ`` and other compatibility
forms become ``exec``), drops zero-width and other invisible characters, and maps the
Cyrillic and Greek letters that look like Latin ones onto them (``ехес`` in Cyrillic is
``exec``).  The table is this module's own data: a small, deliberate subset of Unicode's
confusables for the letters tool names are written in, not the whole of it.
"""

from __future__ import annotations

import unicodedata

__all__ = ["CONFUSABLES", "INVISIBLE", "fold_confusables"]

# lookalike -> the Latin letter it imitates (lower case: names are lower-cased first)
CONFUSABLES: dict[str, str] = {
    # Cyrillic
    "а": "a",
    "в": "b",
    "с": "c",
    "ԁ": "d",
    "е": "e",
    "ё": "e",
    "һ": "h",
    "н": "h",
    "і": "i",
    "ї": "i",
    "ј": "j",
    "к": "k",
    "ӏ": "l",
    "м": "m",
    "п": "n",
    "о": "o",
    "р": "p",
    "ԛ": "q",
    "г": "r",
    "ѕ": "s",
    "т": "t",
    "у": "y",
    "ү": "y",
    "ѵ": "v",
    "ԝ": "w",
    "х": "x",
    "ь": "b",
    # Greek
    "α": "a",
    "β": "b",
    "ϲ": "c",
    "ε": "e",
    "η": "n",
    "ι": "i",
    "κ": "k",
    "ν": "v",
    "ο": "o",
    "ρ": "p",
    "τ": "t",
    "υ": "u",
    "χ": "x",
    "γ": "y",
    "ω": "w",
    "ϳ": "j",
    "ѡ": "w",
    # Latin lookalikes outside ASCII
    "ı": "i",
    "ȷ": "j",
    "ſ": "s",
    "ɑ": "a",
    "ɡ": "g",
}

# characters that render as nothing (or nearly): removed before matching
INVISIBLE: frozenset[str] = frozenset(
    {
        "\u00ad",  # soft hyphen
        "\u034f",  # combining grapheme joiner
        "\u061c",  # Arabic letter mark
        "\u115f",
        "\u1160",
        "\u17b4",
        "\u17b5",
        "\u180e",  # Mongolian vowel separator
        "\u200b",  # zero width space
        "\u200c",  # zero width non-joiner
        "\u200d",  # zero width joiner
        "\u200e",  # left-to-right mark
        "\u200f",  # right-to-left mark
        "\u202a",
        "\u202b",
        "\u202c",
        "\u202d",
        "\u202e",
        "\u2060",  # word joiner
        "\u2061",
        "\u2062",
        "\u2063",
        "\u2064",
        "\u2066",
        "\u2067",
        "\u2068",
        "\u2069",
        "\u3164",
        "\ufeff",  # zero width no-break space (BOM)
        "\uffa0",
    }
)

_TABLE = str.maketrans(
    {
        **CONFUSABLES,
        **dict.fromkeys(INVISIBLE),
    }
)


def fold_confusables(text: str) -> str:
    """``text`` with lookalikes folded: NFKC, invisible characters removed, Cyrillic and
    Greek lookalikes of Latin letters mapped onto them, lower-cased.  ASCII comes back
    as it went in (lower-cased).

    >>> fold_confusables("ехес")  # Cyrillic
    'exec'
    """
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKC", text).lower().translate(_TABLE)
    # combining marks left on a letter (a dot above a Cyrillic ``о``) are dropped too
    decomposed = unicodedata.normalize("NFD", folded)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))
