"""The bash semantics the command guard follows (issue 28), checked against bash itself.

Each form is run for real by ``bash`` with a harmless command (``touch MARK`` in the
test's temporary directory, HOME pointed there too): the marker shows that bash does run
the text, so the guard's reading is bash's, not a guess.  The same form with ``rm -rf ~``
in place of the harmless command is judged (never run) and must be refused; with ``echo
hi`` it must pass.  The labelled lines of ``guard_corpus_exec_bash_semantics.jsonl``
(loaded by test_command_safety.py) cover the spellings.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from interpose.middleware.builtins.command_safety import analyze_command
from interpose.middleware.builtins.command_safety.programs import SHELLS
from interpose.middleware.builtins.shell import SUBST, parse

BASH_FORMS = [
    "(( $(CMD) ))",
    "echo $(( a[$(CMD)] ))",
    "echo $[ a[$(CMD)] ]",
    "for (( i = $(CMD); i < 1; i++ )); do :; done",
    "x='a[$(CMD)]'; (( x ))",
    "x='a[$(CMD)]'; echo $(( x ))",
    "x='a[$(CMD)]'; let x+1",
    "[[ 1 -eq 'a[$(CMD)]' ]]",
    "x='a[$(CMD)]'; [[ $x -eq 1 ]]",
    "x='b[$(CMD)]'; echo ${a[x]}",
    "x='b[$(CMD)]'; a[x]=1",
    "s=abc; x='b[$(CMD)]'; echo ${s:x}",
    "s=abc; x='b[$(CMD)]'; echo ${s:0:x}",
    'IFS=, read -ra a <<< COMMAS; "${a[@]}"',
    "x='a[$(CMD)]'; echo ${!x}",
    "declare -i n='a[$(CMD)]'",
    "printf -v 'a[$(CMD)]' %s x",
    "read 'a[$(CMD)]' <<< x",
    "test -v 'a[$(CMD)]'",
    "[[ -v 'a[$(CMD)]' ]]",
    "x='$(CMD)'; echo ${x@P}",
    "export PS4='$(CMD)'; set -x; true",
    "BASH_ENV='$(CMD)' bash -c true",
    "trap 'CMD' EXIT",
    "coproc X { CMD; }; wait",
    "coproc CMD; wait",
    "IFS=,; c=COMMAS; $c",
    'set -- x CMD; shift; "$@"',
    'set -- x CMD; "${@:2}"',
    "echo 'CMD' | bash /proc/self/fd/0",
    "bash /dev/fd/0 <<< 'CMD'",
    "bash /dev/stdin <<< 'CMD'",
]
"""Forms in which bash runs CMD (``COMMAS``: the command spelled with commas)."""

JUDGED_ANYWAY = [
    "PS4='$(CMD)' bash -x -c 'true'",  # bash ignores an inherited PS4 when run as root
    "unset 'a[$(CMD)]'",  # bash 5.2 no longer expands unset's subscript again
]
"""Forms bash runs only in some versions or setups: refused all the same (fail closed)."""


def _form(template: str, command: str) -> str:
    # in c=rm,-rf,~ the ~ is not at a word's start: bash keeps it literal, so $HOME
    commas = command.replace("~", "$HOME").replace(" ", ",")
    return template.replace("COMMAS", commas).replace("CMD", command)


@pytest.fixture(scope="module")
def bash() -> str:
    found = shutil.which("bash")
    assert found is not None, "bash is needed to check the guard against it"
    return found


@pytest.mark.parametrize("template", BASH_FORMS)
def test_bash_runs_the_text_and_the_guard_judges_it(
    template: str, bash: str, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    subprocess.run(
        [bash, "-c", _form(template, f"touch {marker}")],
        cwd=tmp_path,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=20,
        check=False,
    )
    assert marker.exists(), f"bash did not run the command in {template!r}"
    found = analyze_command(_form(template, "rm -rf ~"))
    assert found is not None, template
    assert found.rule == "fs-destruction", (template, found)
    assert analyze_command(_form(template, "echo hi")) is None, template


@pytest.mark.parametrize("template", JUDGED_ANYWAY)
def test_forms_bash_runs_in_some_setups_are_judged(template: str) -> None:
    found = analyze_command(_form(template, "rm -rf ~"))
    assert found is not None, template
    assert found.rule == "fs-destruction", (template, found)
    assert analyze_command(_form(template, "echo hi")) is None, template


@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_every_shell_of_the_family_has_its_script_judged(shell: str) -> None:
    assert analyze_command(f"{shell} -c 'rm -rf ~'") is not None
    assert analyze_command(f"echo 'rm -rf /' | {shell}") is not None
    assert analyze_command(f"{shell} -c 'echo hi'") is None
    assert analyze_command(f"{shell} ./script.sh") is None


def test_arithmetic_and_coproc_are_commands_the_model_reads() -> None:
    script = parse("(( n += $(wc -l < f) )); coproc W { make; }; echo $(( $(nproc) * 2 ))")
    argvs = [[w.text for w in c.words] for c in script.commands]
    assert argvs[0] == ["((", f"n += {SUBST}", "))"]
    assert [w.text for w in script.commands[0].words[1].subs[0].commands[0].words] == ["wc", "-l"]
    assert ["make"] in argvs
    assert script.commands[argvs.index(["make"])].background
    assert argvs[-1] == ["echo", f"$(( {SUBST} * 2 ))"]
    assert [w.text for w in script.commands[-1].words[1].subs[0].commands[0].words] == ["nproc"]


def test_a_trap_action_judges_literal_targets_but_not_a_variable_set_later() -> None:
    assert analyze_command("trap 'rm -rf \"$tmp\"' EXIT") is None
    assert analyze_command("trap 'rm -rf $HOME/$x' EXIT") is not None
    assert analyze_command("trap 'rm -rf /$x' EXIT") is not None
    assert analyze_command('rm -rf "$tmp"') is not None  # on the line itself: unknown
    found = analyze_command("trap '$CMD' EXIT")
    assert found is not None
    assert found.rule == "dynamic-code"


def test_an_unknown_prompt_string_is_refused_but_the_users_own_is_not() -> None:
    found = analyze_command('echo "${TEMPLATE@P}"')
    assert found is not None
    assert found.rule == "dynamic-code"
    assert analyze_command('echo "${PS1@P}"') is None
