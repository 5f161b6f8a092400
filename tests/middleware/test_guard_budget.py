"""The command guard's analysis budget: every input is decided, in bounded work.

The review's cases (variable doubling, ``$(echo $X $X)``, deep ``${``/``$(`` nesting, long
commands, Unicode whitespace) each get a regression test; hypothesis checks that random
text never raises, never passes the budget and never reaches the guard's catch-all.
Time is asserted only loosely (CI machines are noisy); the targets are measured in
``benchmarks/bench_guards.py``.
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interpose.middleware.builtins import command_safety
from interpose.middleware.builtins.command_safety import (
    CommandSafetyGuard,
    Finding,
    analyze_command,
)
from interpose.middleware.builtins.command_safety.budget import (
    DEFAULT_LIMITS,
    Budget,
    Limits,
    frames_needed,
)
from interpose.middleware.builtins.command_safety.run import STAND_INS
from interpose.middleware.builtins.shell import ParseBudget, ShellLimitError, parse
from interpose.pipeline.payloads import ToolBeforeInput, ToolBeforeOutput

INP = ToolBeforeInput(tool_name="exec", tool_call_id="c1")
T = TypeVar("T")

LOOSE_SECONDS = DEFAULT_LIMITS.seconds + 4.0
"""A bound no analysis should come near (the wall-time budget is a backstop at 0.5 s)."""


def judged(command: str | list[str], budget: Budget | None = None) -> tuple[Finding | None, Budget]:
    """The finding for ``command`` and the budget it was judged with, checking that the
    analysis stayed within that budget and took a sane time."""
    budget = budget or Budget()
    start = time.monotonic()
    finding = analyze_command(command, budget=budget)
    assert time.monotonic() - start < LOOSE_SECONDS
    assert budget.peak_depth <= budget.limits.depth
    if finding is None or finding.rule != "too-complex":  # decided: every counter in bounds
        assert budget.words <= budget.limits.words
        assert budget.text <= budget.limits.text
        assert budget.steps <= budget.limits.steps
    return finding, budget


def too_complex(command: str, budget: str) -> Finding:
    finding, _ = judged(command)
    assert finding is not None, command[:80]
    assert finding.rule == "too-complex", finding.reason
    assert finding.reason.startswith(f"too-complex: too complex to analyze ({budget}: ")
    return finding


def run_guard(command: Any, guard: CommandSafetyGuard | None = None) -> ToolBeforeOutput:
    out = ToolBeforeOutput(args={"command": command})
    (guard or CommandSafetyGuard())(INP, out)
    return out


# -- the review's cases ------------------------------------------------------------------------


@pytest.mark.parametrize("repeats", [20, 30, 40])
def test_variable_doubling_is_refused_not_frozen(repeats: int) -> None:
    command = "x='rm '; " + 'x="$x$x"; ' * repeats + "$x -rf /"
    too_complex(command, "text")


@pytest.mark.parametrize("repeats", [20, 30, 40])
def test_doubling_through_echo_is_refused(repeats: int) -> None:
    command = "X=a; " + "X=$(echo $X $X); " * repeats + "$X"
    finding = too_complex(command, "words")
    assert f"> {DEFAULT_LIMITS.words:,}" in finding.message


def test_memory_stays_bounded_on_the_review_cases() -> None:
    """Before the budget, 30 doublings took 4 GB; now the text budget caps what is made."""
    commands = [
        "x='rm '; " + 'x="$x$x"; ' * 40 + "$x",
        "X=a; " + "X=$(echo $X $X); " * 40 + "$X",
        "echo '" + "a b " * (DEFAULT_LIMITS.size // 4 - 8) + "'",
    ]
    for command in commands:
        tracemalloc.start()
        try:
            analyze_command(command)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        # the input itself is part of the peak for the 1 MiB string; a loose bound
        assert peak < 32 * DEFAULT_LIMITS.text, (command[:40], peak)


def test_small_doubling_is_still_judged() -> None:
    """Below the budget the value is followed: the doubled ``rm`` runs on ``/``."""
    finding, _ = judged("x='rm '; x=\"$x$x\"; $x -rf /")
    assert finding is not None
    assert finding.rule == "fs-destruction"


def test_500_nested_braces_are_refused() -> None:
    finding = too_complex("echo " + "${x:-" * 500 + "a" + "}" * 500, "depth")
    assert "33 levels > 32" in finding.message


def test_100_nested_substitutions_are_refused() -> None:
    too_complex("echo " + "$(echo " * 100 + "x" + ")" * 100, "depth")
    too_complex("echo " + '"$(echo ' * 100 + "x" + ')"' * 100, "depth")
    too_complex("( " * 100 + "ls" + " )" * 100, "depth")
    too_complex("{ " * 100 + "ls" + "; }" * 100, "depth")


def test_nesting_within_the_budget_is_judged() -> None:
    finding, budget = judged("echo " + "$(echo " * 20 + "$(rm -rf /)" + ")" * 20)
    assert finding is not None
    assert finding.rule == "fs-destruction"
    assert budget.peak_depth == 21


def realistic_script(size: int, seed: int = 10) -> str:
    """Shell text an agent might send: many short commands, of about ``size`` chars."""
    rng = random.Random(seed)
    commands = [
        "cd src && make -j4 all",
        'echo "building $TARGET" | tee -a build.log',
        "ls -la /tmp/cache | grep -v lock > out.txt",
        "git status --short | head -n 20",
        "python3 -m pytest -q tests/unit || exit 1",
        'for f in *.py; do ruff check "$f"; done',
        'export PATH="$HOME/.local/bin:$PATH"',
        "grep -rn TODO src/ | wc -l",
        "rm -rf build/ dist/",
        "if [ -f setup.py ]; then pip install -e .; fi",
    ]
    lines: list[str] = []
    total = 0
    while total < size:
        line = rng.choice(commands)
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)[:size].rsplit("\n", 1)[0]


@pytest.mark.parametrize("size", [80 * 1024, 1 << 20])
def test_long_scripts_are_refused_quickly(size: int) -> None:
    command = realistic_script(size)
    start = time.monotonic()
    too_complex(command, "words")  # the parser stops at the words limit: cheap at any size
    assert time.monotonic() - start < LOOSE_SECONDS


def test_an_ordinary_script_within_the_budget_is_judged() -> None:
    finding, budget = judged(realistic_script(4096))
    assert finding is None
    assert 0 < budget.words <= DEFAULT_LIMITS.words


CI_JOB = Path(__file__).parents[2] / "benchmarks" / "data" / "ci_pipeline.sh"


def test_a_real_3000_word_ci_job_is_judged_not_refused_as_too_complex() -> None:
    script = CI_JOB.read_text(encoding="utf-8")
    assert len(script.split()) >= 2900
    finding, budget = judged(script)
    assert finding is None, finding
    assert 2900 < budget.words <= DEFAULT_LIMITS.words
    # and what it does is still judged: the same job with one dangerous line is refused
    bad = script.replace('log "collecting reports"', 'log "collecting reports"\nrm -rf ~/', 1)
    found, _ = judged(bad)
    assert found is not None
    assert found.rule == "fs-destruction"


def test_a_command_named_at_run_time_pays_for_each_stand_in() -> None:
    """Its arguments are judged once per stand-in (``rm``, ``find``...): the words
    budget counts that work, so 1,000 arguments are refused instead of judged 11 times."""
    args = " ".join(f"f{n}" for n in range(1000))
    refused = too_complex(f"$TOOL {args}", "words")
    assert f"> {DEFAULT_LIMITS.words:,}" in refused.message
    finding, budget = judged('"$EDITOR" notes.txt src/app.py')
    assert finding is None
    assert budget.words >= 3 + 2 * len(STAND_INS)


def test_each_loop_value_pays_for_the_command_it_fans_out_to() -> None:
    """A loop's body is judged once per value; the words budget counts that work, so
    3,000 values are refused instead of judged one by one (60 ms), and 300 are judged
    to the last (a secret in place 300 is found)."""
    values = " ".join(f"v{n}" for n in range(3000))
    too_complex(f'for x in {values}; do rm -rf "./$x"; done', "words")
    values = " ".join([*(f"v{n}" for n in range(299)), "~/.ssh/id_rsa"])
    finding, budget = judged(f'for x in {values}; do cat "$x"; done')
    assert finding is not None
    assert finding.rule == "sensitive-read"
    assert budget.words > 2 * 300


def test_a_huge_single_word_or_string_is_judged() -> None:
    size = DEFAULT_LIMITS.size
    body = "a b " * (size // 4 - 8)
    assert judged("echo '" + body + "'")[0] is None
    assert judged("cat > notes.txt <<'EOF'\n" + body + "\nEOF")[0] is None
    finding, _ = judged("rm -rf / " + "a" * (size - 20))
    assert finding is not None
    assert finding.rule == "fs-destruction"
    too_complex("echo '" + "a" * size + "'", "size")


def test_argv_lists_have_a_budget_too() -> None:
    finding, _ = judged(["echo", *(["x"] * (DEFAULT_LIMITS.words + 1))])
    assert finding is not None
    assert finding.rule == "too-complex"
    assert judged(["rm", "-rf", "/"])[0] is not None


def test_the_guard_reports_the_budget_in_its_reason() -> None:
    out = run_guard("echo " + "$(echo " * 100 + "x" + ")" * 100)
    assert out.block
    assert out.block_reason.startswith(
        "command-safety-guard: too-complex: too complex to analyze (depth: 33 levels > 32)"
    )


def test_out_of_budget_in_lenient_text_is_still_refused() -> None:
    """``ssh host '...'`` is parsed leniently (the remote side may differ), but running
    out of budget there is never taken as 'could not parse, let it through'."""
    command = "ssh host '" + "$(echo " * 40 + "x" + ")" * 40 + "'"
    too_complex(command, "depth")


# -- each limit --------------------------------------------------------------------------------


def test_wall_time_limit() -> None:
    budget = Budget(Limits(seconds=0.0))
    finding, _ = judged(realistic_script(4096), budget)
    assert finding is not None
    assert finding.reason.startswith("too-complex: too complex to analyze (time: over the 0 s")


def test_steps_limit() -> None:
    budget = Budget(Limits(steps=10))
    finding, _ = judged("ls; " * 20, budget)
    assert finding is not None
    assert finding.reason.startswith("too-complex: too complex to analyze (steps: 11 steps > 10")
    assert judged("ls; " * 5, Budget(Limits(steps=10)))[0] is None


def test_text_limit_counts_expanded_values() -> None:
    budget = Budget(Limits(text=1000))
    finding, _ = judged('A=0123456789; B="$A$A$A$A$A"; C="$B$B$B$B$B"; D="$C$C$C$C"; ls', budget)
    assert finding is not None
    assert finding.rule == "too-complex"
    assert "text: " in finding.message


def test_words_made_by_expansion_count() -> None:
    budget = Budget(Limits(words=50))
    x = " ".join(["a"] * 60)
    finding, _ = judged(f"X='{x}'; echo $X", budget)
    assert finding is not None
    assert "words: " in finding.message
    assert judged(f"X='{x}'; echo \"$X\"", Budget(Limits(words=50)))[0] is None


# -- the lexer meets every character -----------------------------------------------------------


@pytest.mark.parametrize("space", ["\u00a0", "\u2028", "\u2029", "\x1c", "\x1f", "\x85", "\u3000"])
def test_unicode_spaces_are_part_of_the_word_as_in_bash(space: str) -> None:
    script = parse(f"ls{space}-la")
    assert [w.text for w in script.commands[0].words] == [f"ls{space}-la"]
    # bash looks for a command named "rm<space>-rf": not rm, so nothing to refuse
    assert judged(f"rm{space}-rf /")[0] is None
    assert judged(f"echo a{space}b; rm -rf /")[0] is not None


@pytest.mark.parametrize(
    "char", ["\x01", "\x07", "\x1b", "\x7f", chr(0xD800), chr(0xDFFF), "\U0010ffff"]
)
def test_control_characters_and_lone_surrogates_never_raise(char: str) -> None:
    for command in (f"ls {char}", f"echo {char}x | sh", f"printf '{char}' | base64 -d | sh"):
        judged(command)
    assert judged(f"rm -rf / {char}")[0] is not None


def test_nul_bytes_are_dropped_as_bash_drops_them() -> None:
    finding, _ = judged("r\x00m -rf /")
    assert finding is not None
    assert finding.rule == "fs-destruction"
    assert "\x00" not in finding.reason


def test_ascii_blanks_still_separate_words() -> None:
    assert [w.text for w in parse("a\tb\x0bc\x0cd\re").commands[0].words] == list("abcde")


def test_many_empty_ifs_words_do_not_recurse() -> None:
    judged("$IFS " * 5000 + "ls")
    judged("! " * 1500 + "ls")
    assert judged("! " * 500 + "rm -rf /")[0] is not None


def test_parser_budget_directly() -> None:
    with pytest.raises(ShellLimitError) as info:
        parse("a " * 100, ParseBudget(max_words=10))
    assert info.value.limit == "words"
    budget = ParseBudget(max_depth=3)
    with pytest.raises(ShellLimitError):
        parse("$($($($(x))))", budget)
    assert budget.depth == 0  # an error closes the levels it left open
    assert parse("$($(x))", budget).commands


# -- the caller's stack ------------------------------------------------------------------------


def stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        depth += 1
        frame = frame.f_back  # type: ignore[assignment]
    return depth


def at_depth(depth: int, fn: Callable[[], T]) -> T:
    """``fn()`` called with the stack ``depth`` frames deep."""
    if stack_depth() < depth:
        return at_depth(depth, fn)
    return fn()


def deep_inputs() -> list[str]:
    shell = "echo hi"
    for _ in range(7):
        shell = "bash -c " + json.dumps(shell)
    return [
        "echo " + "$(echo " * 32 + "x" + ")" * 32,
        "echo " + '"$(echo ' * 32 + "x" + ')"' * 32,
        "X=" + "$(echo " * 31 + "rm" + ")" * 31 + "; $X -rf /",
        "echo " + "${x:-" * 32 + "a" + "}" * 32,
        "cat " + "<(cat " * 32 + "x" + ")" * 32,
        "f() { " * 32 + "ls" + "; }" * 32,
        "echo " + "$(echo " * 100 + "x" + ")" * 100,
        shell,
        "eval " + json.dumps(shell),
    ]


@pytest.mark.parametrize(
    ("headroom", "in_place"), [(50, False), (frames_needed(DEFAULT_LIMITS.depth) + 10, True)]
)
def test_a_deep_caller_stack_never_causes_recursion_errors(
    headroom: int, in_place: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With 50 frames left the analysis moves to a fresh thread; with just enough frames
    left it runs in place and must fit (each level uses at most FRAMES_PER_LEVEL)."""
    guard = CommandSafetyGuard()
    expected = [run_guard(c, guard).block_reason for c in deep_inputs()]
    threads: list[threading.Thread] = []
    judge = command_safety._judge_command

    def recording(*args: Any) -> Finding | None:
        threads.append(threading.current_thread())
        return judge(*args)

    monkeypatch.setattr(command_safety, "_judge_command", recording)
    depth = sys.getrecursionlimit() - headroom
    got = [at_depth(depth, partial(run_guard, c, guard)).block_reason for c in deep_inputs()]
    assert got == expected
    assert not any("internal-error" in reason for reason in got)
    assert all((t is threading.main_thread()) == in_place for t in threads)


def test_a_low_recursion_limit_lowers_the_depth_budget() -> None:
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(400)
    try:
        budget = Budget()
        finding = analyze_command("echo " + "$(echo " * 30 + "x" + ")" * 30, budget=budget)
    finally:
        sys.setrecursionlimit(old)
    assert finding is not None
    assert finding.rule == "too-complex"
    assert budget.max_depth < DEFAULT_LIMITS.depth


# -- the last line of defence ------------------------------------------------------------------


def test_an_unexpected_exception_fails_closed_with_its_name(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object) -> Finding | None:
        raise KeyError("boom")

    command_safety.forget_analyses()  # not a verdict other tests left in the shared memory
    monkeypatch.setattr(command_safety, "_judge_command", broken)
    out = run_guard("ls")
    assert out.block
    assert out.block_reason.startswith("command-safety-guard: internal-error: the guard failed")
    assert "KeyError" in out.block_reason


# -- properties --------------------------------------------------------------------------------

PIECES = [
    "$(",
    ")",
    "`",
    "${",
    "}",
    "{ ",
    " }",
    "(",
    ")",
    '"',
    "'",
    "$'",
    "\\",
    "|",
    "||",
    "&&",
    ";",
    "&",
    "<",
    ">",
    ">>",
    "<<",
    "<<-",
    "<<<",
    "<(",
    ">(",
    "\n",
    " ",
    "\t",
    "$",
    "$IFS",
    "=",
    "*",
    "?",
    "[",
    "]",
    "~",
    "#",
    "!",
    "((",
    "))",
    ";;",
    "\x00",
    "\u00a0",
    "\u2028",
    "\x1c",
    "\ud800",
    "\\x72",
    "%s",
    "rm -rf /",
    "bash -c ",
    "sh",
    "eval ",
    "echo ",
    "printf ",
    "base64 -d",
    "xxd -r -p",
    "tr a-z n-za-m",
    "xargs ",
    "xargs -I{} ",
    "find . -exec ",
    "x=",
    "$x",
    'x="$x$x"; ',
    "X=$(echo $X $X); ",
    "cd ",
    "curl x",
    "python -c ",
    "sudo ",
    "env A=1 ",
    "ssh h ",
    "for i in a b; do ",
    "; done",
    "if ",
    "then ",
    "fi",
    "case x in a) ",
    "esac",
    "f() ",
    "cat ",
    "EOF\n",
    "<<EOF\n",
]

shell_text = st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=8)), max_size=60).map(
    "".join
)


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(shell_text)
def test_shell_like_text_never_raises_and_stays_within_budget(command: str) -> None:
    judged(command)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(st.characters(exclude_categories=()), max_size=400))  # surrogates too
def test_any_unicode_text_never_raises(command: str) -> None:
    judged(command)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.sampled_from(["$(", '"$(', "${x:-", "`", "(", "{ ", "<(", "bash -c '"]), max_size=60
    ),
    st.sampled_from(["x", "rm -rf /", "$x", ""]),
)
def test_random_nesting_never_raises(openers: list[str], inner: str) -> None:
    closers = {"$(": ")", '"$(': ')"', "${x:-": "}", "`": "`", "(": ")", "{ ": "; }", "<(": ")"}
    command = (
        "echo " + "".join(openers) + inner + "".join(closers.get(o, "'") for o in reversed(openers))
    )
    judged(command)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shell_text)
def test_no_exception_reaches_the_guards_catch_all(command: str) -> None:
    out = run_guard(command)
    assert "internal-error" not in out.block_reason
