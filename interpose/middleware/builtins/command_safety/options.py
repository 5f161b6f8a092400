"""GNU-style option parsing for the command guard's rules: an option grammar
(:class:`Opts`, built with :func:`opts`) read into flags, values and operands
(:func:`parse_opts`, :class:`Parsed`), the way ``getopt_long`` reads a command line
(flags in any order and spelling, unique-prefix abbreviations, ``--``)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..shell import Word


@dataclass(frozen=True, slots=True)
class Opts:
    """One command's option grammar, GNU ``getopt_long`` style."""

    short_arg: str = ""  # short options that take a value (attached or next word)
    short_optional: str = ""  # short options whose value can only be attached (sed -i.bak)
    long: tuple[str, ...] = ()  # every long option, for unique-prefix abbreviations
    long_arg: frozenset[str] = frozenset()  # long options that take a value
    alias: Mapping[str, str] = field(default_factory=dict)  # short letter -> long name

    def canonical(self, name: str) -> str:
        if not self.long or name in self.long:
            return name
        matches = [opt for opt in self.long if opt.startswith(name)]
        return matches[0] if len(matches) == 1 else name


@dataclass(slots=True)
class Parsed:
    flags: set[str]  # "--long" names (aliases resolved) and "-x" letters
    values: list[tuple[str, Word]]  # (flag, value) for options with values
    operands: list[Word]
    options: list[Word]  # option words as written, for messages

    def value(self, *flags: str) -> Word | None:
        for flag, word in self.values:
            if flag in flags:
                return word
        return None

    def has(self, *flags: str) -> bool:
        return not self.flags.isdisjoint(flags)


def derived(text: str) -> Word:
    """A word cut out of another (an option value): ``~`` still expands after ``=``."""
    return Word(text, tilde=text.startswith("~"), glob=GLOB_CHARS.search(text) is not None)


def parse_opts(args: Sequence[Word], spec: Opts, *, stop_at_operand: bool = False) -> Parsed:
    flags: set[str] = set()
    values: list[tuple[str, Word]] = []
    operands: list[Word] = []
    options: list[Word] = []
    i, n = 0, len(args)
    while i < n:
        word = args[i]
        t = word.text
        if t == "--":
            operands.extend(args[i + 1 :])
            break
        if t.startswith("--"):
            options.append(word)
            name, eq, value = t[2:].partition("=")
            flag = "--" + spec.canonical(name)
            flags.add(flag)
            if eq:
                values.append((flag, derived(value)))
            elif flag[2:] in spec.long_arg and i + 1 < n:
                i += 1
                values.append((flag, args[i]))
        elif len(t) > 1 and t[0] == "-":
            options.append(word)
            for k in range(1, len(t)):
                ch = t[k]
                flag = "--" + spec.alias[ch] if ch in spec.alias else "-" + ch
                flags.add(flag)
                if ch in spec.short_arg:
                    if k + 1 < len(t):
                        values.append((flag, derived(t[k + 1 :])))
                    elif i + 1 < n:
                        i += 1
                        values.append((flag, args[i]))
                    break
                if ch in spec.short_optional:
                    values.append((flag, derived(t[k + 1 :])))
                    break
        else:
            operands.append(word)
            if stop_at_operand:
                operands.extend(args[i + 1 :])
                break
        i += 1
    return Parsed(flags, values, operands, options)


def word_set(words: str) -> frozenset[str]:
    """A frozenset from space-separated words (keeps long tables readable)."""
    return frozenset(words.split())


def opts(
    short_arg: str = "",
    long: str = "",
    long_arg: str = "",
    alias: Mapping[str, str] | None = None,
    short_optional: str = "",
) -> Opts:
    """Compact constructor: long option names are space-separated strings."""
    takes = frozenset(long_arg.split())
    return Opts(short_arg, short_optional, tuple(long.split()) + tuple(takes), takes, alias or {})


GLOB_CHARS = re.compile(r"[*?\[]")
