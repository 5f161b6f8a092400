"""Text bash evaluates a second time: arithmetic and prompt strings.

Bash expands ``$(( EXPR ))``, ``(( EXPR ))`` (and ``for (( ... ))``), ``let EXPR`` and the
operands of ``[[ A -eq B ]]`` (``-ne``, ``-lt``, ``-le``, ``-gt``, ``-ge``) as in double
quotes -- their command substitutions run, and the parser hands them to the analysis as
any other -- then *evaluates* EXPR: a name in it stands for its variable's value, itself
evaluated as an expression, and an array subscript met on the way (``a[$(cmd)]``) is
expanded again, so its command substitution runs too (``x='a[$(rm -rf ~)]'; (( x ))``,
``[[ 1 -eq 'a[$(cmd)]' ]]``).  ``${x@P}`` expands x's value as a prompt string,
substitutions included; so does bash with ``PS4`` for each line ``set -x`` traces (and
with ``PS0``...``PS2`` in an interactive shell).

:func:`reevaluated` finds, in one simple command's words, the text that holds such code:
the text of an arithmetic expression and of the variables it names (followed
:data:`MAX_CHAIN` deep) when it holds ``$(``/a backtick, the known value of a prompt
string; :class:`.run.Run` parses it as double-quoted text and judges its substitutions.
A prompt expansion of a variable the guard does not know (``${X@P}``) yields None: text
run as code that cannot be read (the user's own ``PS0``-``PS4`` excepted).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence

from ..shell import Word
from .options import word_set

__all__ = ["ARITHMETIC_TESTS", "MAX_CHAIN", "PROMPTS", "has_code", "reevaluated"]

ARITHMETIC_TESTS = word_set("-eq -ne -lt -le -gt -ge")
"""``[[ A OP B ]]`` operators whose operands are arithmetic expressions."""
PROMPTS = word_set("PS0 PS1 PS2 PS3 PS4")
"""Variables bash expands as prompt strings (``PS4``: each line ``set -x`` traces)."""
MAX_CHAIN = 8
"""How many variables one expression's evaluation is followed through."""

_HEADS = frozenset({"((", "let", "[["})
_BODY = re.compile(r"\$\(\((.*?)\)\)", re.DOTALL)
_NAME = re.compile(r"(?<![$\w])[A-Za-z_]\w*")
_CODE = re.compile(r"\$\(|`")
_PROMPT = re.compile(r"\$\{([A-Za-z_]\w*)@P\}")


def has_code(text: str) -> bool:
    """Whether expanding ``text`` as in double quotes runs a command substitution."""
    return _CODE.search(text) is not None


def reevaluated(
    words: Sequence[Word], expand: Callable[[str], str], lookup: Callable[[str], str | None]
) -> Iterator[str | None]:
    """The texts of one command's ``words`` that bash expands again and that hold a
    command substitution (None: a prompt string the guard does not know).  ``expand``
    gives a text with the known variables expanded, ``lookup`` a variable's value."""
    for text in _expressions(words):
        yield from _code(expand(text), lookup)
    for word in words:
        if "@P}" in word.text:
            for m in _PROMPT.finditer(word.text):
                value = lookup(m.group(1))
                if value is None and m.group(1) not in PROMPTS:
                    yield None
                elif value is not None and has_code(value):
                    yield value


def _expressions(words: Sequence[Word]) -> Iterator[str]:
    """The arithmetic expressions in ``words`` (as written, before evaluation)."""
    head = words[0].text if words and not words[0].quoted else ""
    if head in _HEADS:
        if head == "[[":
            for k in range(2, len(words) - 1):
                if words[k].text in ARITHMETIC_TESTS and not words[k].quoted:
                    yield words[k - 1].text
                    yield words[k + 1].text
        else:
            yield from (w.text for w in words[1:] if w.text != "))")
    for word in words:
        if "$((" in word.text:
            yield from (m.group(1) for m in _BODY.finditer(word.text))


def _code(expression: str, lookup: Callable[[str], str | None]) -> Iterator[str]:
    """The texts holding a command substitution that evaluating ``expression`` (expanded
    once already) expands again: itself, and the values of the variables it names."""
    pending, seen = [expression], set[str]()
    while pending and len(seen) < MAX_CHAIN:
        text = pending.pop()
        if text in seen:
            continue
        seen.add(text)
        if has_code(text):
            yield text
        for name in _NAME.findall(text):
            value = lookup(name)
            if value is not None and not value.isdigit():
                pending.append(value)
