"""Text bash evaluates a second time: arithmetic and prompt strings.

Bash expands ``$(( EXPR ))`` (``$[ EXPR ]``), ``(( EXPR ))`` (and ``for (( ... ))``),
``let EXPR``, the operands of ``[[ A -eq B ]]`` (``-ne``, ``-lt``, ``-le``, ``-gt``,
``-ge``) and ``declare -i n=EXPR`` as in double quotes -- their command substitutions
run, and the parser hands them to the analysis as any other -- then *evaluates* EXPR: a
name in it stands for its variable's value, itself evaluated as an expression, and an
array subscript met on the way (``a[$(cmd)]``) is expanded again, so its command
substitution runs too (``x='a[$(rm -rf ~)]'; (( x ))``, ``[[ 1 -eq 'a[$(cmd)]' ]]``).
So are the index of ``${a[EXPR]}`` and of ``a[EXPR]=value``, the offset and length of
``${s:EXPR:EXPR}``, the subscript of a variable name given to a builtin
(``unset``, ``printf -v``, ``read``, ``declare``, ``[[ -v ]]``, ``test -v``...:
``unset 'a[$(cmd)]'``) and a name reached through ``${!x}``.  ``${x@P}`` expands x's
value as a prompt string, substitutions included; so does bash with ``PS4`` for each
line ``set -x`` traces (with ``PS0``...``PS2`` in an interactive shell), and with
``BASH_ENV``/``ENV`` to find a startup file.

:func:`reevaluated` finds, in one simple command's words, the text that holds such code:
the text of an arithmetic expression and of the variables it names (followed
:data:`MAX_CHAIN` deep) when it holds ``$(``/a backtick, the known value of a prompt
string; :class:`.run.Run` parses it as double-quoted text and judges its substitutions.
A prompt expansion of a variable the guard does not know (``${X@P}``) yields None: text
run as code that cannot be read (the user's own ``PS0``-``PS4`` excepted).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence

from ..shell import Word
from .options import word_set

__all__ = ["ARITHMETIC_TESTS", "MAX_CHAIN", "PROMPTS", "has_code", "reevaluated"]

ARITHMETIC_TESTS = word_set("-eq -ne -lt -le -gt -ge")
"""``[[ A OP B ]]`` operators whose operands are arithmetic expressions."""
PROMPTS = word_set("PS0 PS1 PS2 PS3 PS4 BASH_ENV ENV")
"""Variables bash expands as prompt strings (``PS4``: each line ``set -x`` traces), and
those it expands to find a startup file (``BASH_ENV='$(cmd)' bash -c ...`` runs cmd)."""
MAX_CHAIN = 8
"""How many variables one expression's evaluation is followed through."""

_HEADS = frozenset({"((", "let", "[["})
_SUBSCRIPTED = word_set(
    "(( let [[ test [ unset printf read declare typeset local export readonly mapfile "
    "readarray wait getopts"
)
"""Builtins that take a variable name, which may carry an array subscript they evaluate
(``unset 'a[$(cmd)]'``, ``printf -v 'a[$(cmd)]'``, ``[[ -v 'a[$(cmd)]' ]]``)."""
_DECLARE = word_set("declare typeset local export readonly")
_INTEGER = re.compile(r"-[a-zA-Z]*i")
_BODY = re.compile(r"\$\(\((.*?)\)\)|\$\[((?:[^\[\]]|\[[^\[\]]*\])*)\]", re.DOTALL)
_SUBSCRIPT = re.compile(r"[A-Za-z_]\w*\[(.*)\]", re.DOTALL)
_ELEMENT = re.compile(r"\$\{[A-Za-z_]\w*(?:\[([^\]]*)\]|:(?![-=?+])([^}]*)\})")
_NAME = re.compile(r"(?<![$\w])[A-Za-z_]\w*")
_CODE = re.compile(r"\$\((?!\()|`")  # $(cmd) or `cmd`; $(( is arithmetic
_PROMPT = re.compile(r"\$\{(!?)([A-Za-z_]\w*)(@P)?\}")


def has_code(text: str) -> bool:
    """Whether expanding ``text`` as in double quotes runs a command substitution."""
    return _CODE.search(text) is not None


def reevaluated(
    words: Sequence[Word], expand: Callable[[str], str], lookup: Callable[[str], str | None]
) -> Iterable[str | None]:
    """The texts of one command's ``words`` that bash expands again and that hold a
    command substitution (None: a prompt string the guard does not know).  ``expand``
    gives a text with the known variables expanded, ``lookup`` a variable's value."""
    if not words or words[0].text not in _SUBSCRIPTED:  # the common case, first: no "$"
        for word in words:
            if "$" in word.text or "]=" in word.text:
                break
        else:
            return ()
    return _reevaluated(words, expand, lookup)


def _reevaluated(
    words: Sequence[Word], expand: Callable[[str], str], lookup: Callable[[str], str | None]
) -> Iterator[str | None]:
    for text in _expressions(words):
        yield from _code(expand(text), lookup)
    for word in words:
        if "@P}" in word.text or "${!" in word.text:
            for m in _PROMPT.finditer(word.text):
                indirect, name, prompt = m.groups()
                if not indirect and not prompt:
                    continue
                value = lookup(name)
                if value is None and prompt and name not in PROMPTS:
                    yield None
                elif value is not None and has_code(value):
                    yield value  # ${x@P}; ${!x}: x's value is a name, a[$(cmd)] too


def _expressions(words: Sequence[Word]) -> Iterator[str]:
    """The arithmetic expressions in ``words`` (as written, before evaluation)."""
    head = words[0].text if words and not words[0].quoted else ""
    if head == "[[":
        for k in range(2, len(words) - 1):
            if words[k].text in ARITHMETIC_TESTS and not words[k].quoted:
                yield words[k - 1].text
                yield words[k + 1].text
    elif head in _HEADS:
        yield from (w.text for w in words[1:] if w.text != "))")
    if head in _SUBSCRIPTED:  # a name's subscript: unset 'a[$(cmd)]'
        integer = head in _DECLARE and any(_INTEGER.match(w.text) for w in words[1:])
        for word in words[1:]:
            if "[" in word.text and (m := _SUBSCRIPT.match(word.text)) is not None:
                yield m.group(1)
            if integer and "=" in word.text:  # declare -i n=EXPR: the value is evaluated
                yield word.text.partition("=")[2]
    for word in words:
        text = word.text
        if "$((" in text or "$[" in text:  # $[ EXPR ]: the old spelling
            yield from (m.group(1) or m.group(2) or "" for m in _BODY.finditer(text))
        if "${" in text and ("[" in text or ":" in text):  # ${a[EXPR]}, ${s:EXPR:EXPR}
            yield from (m.group(1) or m.group(2) for m in _ELEMENT.finditer(text))
        if "]=" in text and (m := _SUBSCRIPT.match(text)) is not None:  # a[EXPR]=value
            yield m.group(1)


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
            value = lookup(name) or lookup(name + "[]")  # an array's elements, a=(...)
            if value is not None and not value.isdigit():
                pending.append(value)
