"""shell.parse reads a plain line (words and ``&& || ; |``, nothing else) in one pass:
it must make exactly the Script the grammar makes, charge the budget the same words,
and leave every other line (and every line the grammar refuses) to the grammar."""

from __future__ import annotations

import random

import pytest

from interpose.middleware.builtins.shell import (
    ParseBudget,
    Pipeline,
    Script,
    ShellLimitError,
    ShellSyntaxError,
    SimpleCommand,
    Word,
    parse,
)
from interpose.middleware.builtins.shell._parser import Parser

_ATOMS = (
    "git", "status", "ls", "-la", "src", "~/projects/old", "~", "*.py", "a[b]", "x?y",
    "X=1", "A_B+=2", "x=", "=x", "arr[1]=v", "a[x", "{a,b}", "-", "--", "é", "\u00a0x",
    "if", "then", "fi", "{", "}", "!", "for", "in", "do", "done", "case", "esac", "[[",
    "]]", "function", "coproc", "select", "time",
)  # fmt: skip
_OPS = ("&&", "||", ";", "|", "&", ";;", "|&", ";&", ";;&", "&&&", "|||")
_BLANKS = (" ", "  ", "\t", "", " \t ")


def _grammar(source: str, budget: ParseBudget) -> Script | tuple[object, ...]:
    try:
        return Parser(source, budget).parse_program()
    except ShellLimitError as exc:
        return ("limit", exc.limit, exc.used, exc.offset)
    except ShellSyntaxError as exc:
        return ("syntax", str(exc))


def _parsed(source: str, budget: ParseBudget) -> Script | tuple[object, ...]:
    try:
        return parse(source, budget)
    except ShellLimitError as exc:
        return ("limit", exc.limit, exc.used, exc.offset)
    except ShellSyntaxError as exc:
        return ("syntax", str(exc))


def _lines(count: int) -> list[str]:
    rng = random.Random(28)
    lines = []
    for _ in range(count):
        parts = [rng.choice(("", " ", "\t"))]
        for _ in range(rng.randint(0, 7)):
            parts.append(rng.choice(_ATOMS) if rng.random() < 0.65 else rng.choice(_OPS))
            parts.append(rng.choice(_BLANKS) if rng.random() < 0.9 else "")
        lines.append("".join(parts))
    return lines


def test_plain_lines_parse_as_the_grammar_parses_them() -> None:
    for source in _lines(20_000):
        for max_words in (2, 3, 5, 1 << 62):
            fast, slow = ParseBudget(max_words=max_words), ParseBudget(max_words=max_words)
            assert _parsed(source, fast) == _grammar(source, slow), source
            assert fast.words == slow.words, source


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "cd src && git diff",
            Script(
                (
                    SimpleCommand((Word("cd"), Word("src"))),
                    SimpleCommand((Word("git"), Word("diff"))),
                )
            ),
        ),
        (
            "A=1 ls ~/x *.py | wc -l",
            Script(
                (
                    SimpleCommand(
                        (Word("ls"), Word("~/x", tilde=True), Word("*.py", glob=True)),
                        (Word("A=1"),),
                    ),
                    SimpleCommand((Word("wc"), Word("-l"))),
                ),
                (Pipeline(((0,), (1,))),),
            ),
        ),
    ],
)
def test_plain_line_shapes(source: str, expected: Script) -> None:
    budget = ParseBudget()
    assert parse(source, budget) == expected
    assert (
        budget.words
        == len(source.replace("&&", " ").replace("|", " ").split())
        + (source.count("&&") + source.count("|"))
        + 1
    )  # every word and operator, and the end


@pytest.mark.parametrize(
    "source", ["rm -rf build/ &", "a && && b", "a |", "if x; then y; fi", "{ a; }"]
)
def test_lines_it_does_not_read_go_to_the_grammar(source: str) -> None:
    assert _parsed(source, ParseBudget()) == _grammar(source, ParseBudget())
