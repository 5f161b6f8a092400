"""Programs that run commands in their own syntax (awk, sed, make): the cost of reading
them stays linear in the program's size, and a program that runs more commands than the
guard judges is refused as too complex, never let through unread.  (What they run is
judged line by line in ``guard_corpus_exec_programs.jsonl``.)"""

from __future__ import annotations

import time

import pytest

from interpose.middleware.builtins.command_safety import analyze_command

N = 64 * 1024

# shapes that made a first version rescan the program once per construct (seconds to
# minutes at 64 KB); a linear reading decides each in milliseconds
ADVERSARIAL = {
    "awk nested system()": "awk 'BEGIN{" + "system(" * (N // 8) + '"ls"' + ")" * (N // 8) + "}'",
    "awk getline chain": "awk 'BEGIN{" + '"ls" | getline x ' * (N // 18) + "}'",
    "awk pipes in one print": "awk '{print " + "$1 | " * (N // 6) + '"sort"}\'',
    "sed distinct delimiters": "sed '"
    + "".join("\\" + chr(0x4E00 + k) for k in range(N // 2))
    + "'",
    "make nested $(shell": "make --eval='" + "$(shell " * (N // 9) + "'",
    "awk nested sprintf()": "awk 'BEGIN{system("
    + 'sprintf("%s", ' * (N // 15)
    + '"ls"'
    + ")" * (N // 15)
    + ")}'",
}


@pytest.mark.parametrize("command", ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_large_programs_are_read_in_linear_time(command: str) -> None:
    assert len(command) <= 80_000
    started = time.perf_counter()
    analyze_command(command)
    # generous for a loaded CI machine: the quadratic readings took 30-70 s here
    assert time.perf_counter() - started < 3.0


@pytest.mark.parametrize(
    "command",
    [
        "sed '" + "".join(f"{k}e echo {k}\n" for k in range(300)) + "'",
        "awk 'BEGIN{" + "".join(f'system("echo {k}");' for k in range(300)) + "}'",
        "make -f - <<< '" + "".join(f"t{k}:; echo {k}\n" for k in range(300)) + "'",
    ],
    ids=["sed", "awk", "make"],
)
def test_a_program_running_too_many_commands_is_too_complex(command: str) -> None:
    found = analyze_command(command)
    assert found is not None
    assert found.rule == "too-complex"
    assert "more than 256 commands" in found.reason


def test_the_dangerous_command_past_many_harmless_ones_is_found() -> None:
    harmless = "".join(f'system("echo {k}");' for k in range(200))
    found = analyze_command("awk 'BEGIN{" + harmless + 'system("rm -rf /")}' + "'")
    assert found is not None
    assert found.rule == "fs-destruction"


def test_repeated_statements_are_read_once() -> None:
    # 3,000 copies of one statement are one command, not 3,000
    assert analyze_command("awk '" + '{print $1 | "sort"};' * 3000 + "'") is None
    found = analyze_command(
        "awk '" + '{print $1 | "sort"};' * 3000 + 'END{system("rm -rf ~")}' + "'"
    )
    assert found is not None
    assert found.rule == "fs-destruction"
