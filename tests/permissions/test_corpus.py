"""The permission corpus: rules x command lines, each with the decision it must get.

``data/corpus.json`` is written by ``data/make_corpus.py`` (its docstring says what the
rows are); each row is judged as the pipeline judges a call: the call read into a view
by the shell model, then the rules.  A second matrix spells a denied command through
*every* entry of the command guard's wrapper table, so a wrapper added to the guard is
covered here the day it is added.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from interpose.middleware.builtins.command_safety.wrappers import WRAPPERS
from interpose.permissions.claude import parse_claude_rule
from interpose.permissions.engine import Permissions
from interpose.permissions.model import Decision
from interpose.permissions.view import view_of

DATA = Path(__file__).with_name("data")
CORPUS: dict[str, Any] = json.loads((DATA / "corpus.json").read_text(encoding="utf-8"))
ROWS: list[dict[str, Any]] = CORPUS["rows"]
CWD, HOME, BASE = CORPUS["cwd"], CORPUS["home"], CORPUS["base"]
DECISIONS: tuple[Decision, ...] = ("allow", "ask", "deny")


def permissions_of(rules: dict[str, list[str]]) -> Permissions:
    return Permissions(
        [
            parse_claude_rule(
                text, decision, source="corpus", base=Path(BASE), cwd=Path(CWD), home=Path(HOME)
            )
            for decision in DECISIONS
            for text in rules[decision]
        ]
    )


def judge(rules: dict[str, list[str]], tool: str, args: dict[str, Any]) -> tuple[Any, str]:
    view = view_of(tool, args, cwd=CWD, home=HOME)
    judgement = permissions_of(rules).judge(view)
    seen = [c.text if c.argv is not None else f"<unresolved> {c.text}" for c in view.commands]
    why = f"{judgement.reason}; commands seen: {seen}; reads {view.reads}; writes {view.writes}"
    return judgement.decision, why


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_row(row: dict[str, Any]) -> None:
    decision, why = judge(row["rules"], row["tool"], row["args"])
    assert decision == row["expect"], f"{row['args']!r}: {why}"


def test_the_corpus_is_what_its_script_writes() -> None:
    spec = importlib.util.spec_from_file_location("make_corpus", DATA / "make_corpus.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_corpus"] = module
    try:
        spec.loader.exec_module(module)
        assert module.build() == CORPUS, "run tests/permissions/data/make_corpus.py"
    finally:
        del sys.modules["make_corpus"]


def test_the_corpus_covers_every_decision_and_class() -> None:
    assert len(ROWS) >= 300
    expected = Counter(row["expect"] for row in ROWS)
    assert set(expected) == {"allow", "ask", "deny", None}
    classes = {row["class"] for row in ROWS}
    # every wrapper class of the shell model the rules must see through
    for family in ("list:", "pipe:", "group:", "subst:", "flow:", "assign:", "name:"):
        assert any(c.startswith(family) for c in classes), family
    for family in (
        "wrap:",
        "xargs:",
        "find:",
        "shell:",
        "var:",
        "space:",
        "interp:",
        "container:",
        "option:",
        "job:",
    ):
        assert sum(c.startswith(family) for c in classes) >= 2, family
    # each class holds a denied line, an asked one, and (where the wrapper does not run
    # its own text) a line that only mentions the command and gets no decision
    matrix = [row for row in ROWS if row["id"].startswith(("deny/", "ask/", "data/"))]
    by_class: dict[str, set[Any]] = {}
    for row in matrix:
        by_class.setdefault(row["class"], set()).add(row["expect"])
    assert all({"deny", "ask"} <= seen for seen in by_class.values())


# -- every wrapper the guard's table knows ---------------------------------------------------


def _through(name: str, command: str) -> str:
    """``command`` run by wrapper ``name``, spelled from the table's grammar: its
    subcommand (``poetry run``), the word after which the command comes (``gdb --args``),
    its leading operands (``timeout 5``, ``chroot DIR``)."""
    wrapper = WRAPPERS[name]
    words = [name]
    if wrapper.subcommands:
        words.append(sorted(wrapper.subcommands)[0])
    if wrapper.after:
        words.append(sorted(wrapper.after)[0])
    else:
        words += ["5"] * wrapper.leading
    return " ".join([*words, command])


TABLE = sorted(WRAPPERS)


@pytest.mark.parametrize("name", TABLE)
def test_a_deny_rule_holds_through_every_wrapper_in_the_guards_table(name: str) -> None:
    line = _through(name, "git push origin main")
    rules = {"allow": ["Bash(*)"], "ask": [], "deny": ["Bash(git push:*)"]}
    decision, why = judge(rules, "exec", {"command": line})
    assert decision == "deny", f"{line!r}: {why}"


@pytest.mark.parametrize("name", TABLE)
def test_an_ask_rule_holds_through_every_wrapper_in_the_guards_table(name: str) -> None:
    line = _through(name, "rm -rf build")
    rules = {"allow": ["Bash(rm:*)"], "ask": ["Bash(rm -rf *)"], "deny": []}
    decision, why = judge(rules, "exec", {"command": line})
    assert decision == "ask", f"{line!r}: {why}"
