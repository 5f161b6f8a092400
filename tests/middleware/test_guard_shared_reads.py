"""What the command guard reads once per command and shares between its rules: the
options of a command read with one grammar, a word's resolved path, each name's rules."""

from __future__ import annotations

from dataclasses import replace

from interpose.middleware.builtins.command_safety import _TABLE, analyze_command
from interpose.middleware.builtins.command_safety.budget import Budget
from interpose.middleware.builtins.command_safety.invocation import Invocation
from interpose.middleware.builtins.command_safety.model import HOME
from interpose.middleware.builtins.command_safety.operands import RM
from interpose.middleware.builtins.command_safety.options import parse_opts
from interpose.middleware.builtins.command_safety.run import Run
from interpose.middleware.builtins.security_audit import resolve_path
from interpose.middleware.builtins.shell import Word


def test_options_are_read_once_per_grammar_and_not_copied_by_replace() -> None:
    inv = Invocation("rm", [Word("-rf"), Word("build/")])
    first = inv.options(RM)
    assert inv.options(RM) is first
    assert first == parse_opts(inv.args, RM)
    moved = replace(inv, args=[Word("-r"), Word("dist/")])
    assert moved.options(RM).operands == [Word("dist/")]
    assert inv.options(RM).operands == [Word("build/")]


def test_a_words_path_is_resolved_once_per_analysis_and_as_resolve_path_does() -> None:
    run = Run(_TABLE, (), (), Budget())
    word = Word("~/projects/../old", tilde=True)
    assert run.path(word) == resolve_path("~/projects/../old", home=HOME)
    assert run.resolved == {"~/projects/../old": resolve_path("~/projects/../old", home=HOME)}


def test_each_names_rules_then_the_generic_ones() -> None:
    assert _TABLE.rules("no-such-command") == _TABLE.generic
    rm_rules = _TABLE.rules("rm")
    assert rm_rules[-len(_TABLE.generic) :] == _TABLE.generic
    assert len(rm_rules) > len(_TABLE.generic)


def test_the_rm_rules_still_judge_what_they_judged() -> None:
    assert analyze_command("rm -rf build/") is None
    assert analyze_command("rm -rf ~/projects/old") is None
    found = analyze_command("rm -rf ~/.ssh")
    assert found is not None
    assert found.rule == "fs-destruction"
    hook = analyze_command("rm .git/hooks/pre-commit")
    assert hook is not None
    assert hook.rule == "git-no-verify"
    unlinked = analyze_command("unlink -- .git/hooks/pre-push")
    assert unlinked is not None
    assert unlinked.rule == "git-no-verify"
