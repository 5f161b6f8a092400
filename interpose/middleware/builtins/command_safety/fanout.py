"""What ``xargs`` and ``find -exec`` hand to the command they run: the words an upstream
command writes to the pipe (:func:`emitted`), ``{}`` replaced by each value
(:func:`substitute`), and one call per input value for ``xargs -I{}`` (:func:`xargs_call`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..shell import Word
from .budget import Budget
from .find import find_plan
from .invocation import Invocation
from .programs import dynamic_name
from .text import pipe_stream
from .wrappers import canon

__all__ = ["emitted", "substitute", "xargs_call"]


def substitute(word: Word, marker: str, value: Word) -> Word:
    if word.text == marker:
        return value
    if marker not in word.text:
        return word
    return replace(word, text=word.text.replace(marker, value.text), glob=word.glob or value.glob)


def emitted(upstream: Sequence[Invocation | None], budget: Budget) -> list[Word]:
    """Words an upstream command writes to a pipe, when they can be known (for xargs)."""
    values: list[Word] = []
    for inv in upstream:
        if inv is None:
            continue
        if inv.name in ("echo", "printf") and (text := pipe_stream([[inv]])).complete:
            parts = {p: None for r in text.readings for p in r.decode("utf-8", "replace").split()}
            values += [Word(p, quoted=True) for p in parts]
        elif inv.name == "echo":
            words = [w for w in inv.args if w.text not in ("-n", "-e", "-E")]
            values += [replace(w, text=part) for w in words for part in w.text.split()]
        elif inv.name == "printf" and len(inv.args) > 1:
            values += inv.args[1:]
        elif inv.name == "printf" and inv.args:
            values += [replace(inv.args[0], text=inv.args[0].text.replace("\\n", "").strip())]
        elif inv.name == "find":
            values += find_plan(inv.args).entries()
    budget.made_words(len(values))  # every value is judged: the budget bounds them
    return values


def xargs_call(inv: Invocation, marker: str, value: Word) -> Invocation:
    """``xargs -I{} CMD {}`` for one input value (which may name the command itself)."""
    args = [substitute(arg, marker, value) for arg in inv.args]
    if marker not in inv.dynamic:
        return replace(inv, args=args)
    head = substitute(Word(inv.dynamic), marker, value).text
    return replace(
        inv,
        name=canon(head),
        args=args,
        layers=[*inv.layers[:-1], [Word(head), *args]],
        dynamic=head if dynamic_name(head) else "",
    )
