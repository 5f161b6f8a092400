"""The command guard follows control flow, indirection and wrappers the way the shell does
(loops, ``read``, functions, aliases, parameter expansion, programs that run a command),
and refuses a dangerous verb whose target it cannot compute, saying so."""

from __future__ import annotations

import pytest

from interpose.middleware.builtins.command_safety import analyze_command
from interpose.middleware.builtins.shell import parse


def reason(command: str) -> str:
    found = analyze_command(command)
    assert found is not None, f"{command!r} was allowed"
    return found.reason


def allowed(command: str) -> bool:
    return analyze_command(command) is None


# -- values that vary ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dangerous", "benign"),
    [
        ("for d in build /; do rm -rf $d; done", "for d in build dist; do rm -rf $d; done"),
        ('f(){ rm -rf "$1"; }; f /', 'f(){ rm -rf "$1"; }; f build'),
        ("read d <<< /etc; rm -rf $d", "read d <<< build; rm -rf $d"),
        ('echo / | while read d; do rm -rf "$d"; done', "echo b | while read d; do rm -r $d; done"),
        ("while read f; do rm -rf $f; done <<< '/usr'", "while read f; do rm -rf $f; done <<< a"),
        ("alias x='rm -rf'; x ~", "alias x='rm -rf'; x build"),
        ("sh -c 'rm -rf \"$1\"' _ /", "sh -c 'rm -rf \"$1\"' _ build"),
        ("set -- /etc; rm -rf $1", "set -- build; rm -rf $1"),
    ],
)
def test_each_value_is_judged_and_the_benign_twin_passes(dangerous: str, benign: str) -> None:
    assert reason(dangerous).startswith("fs-destruction:")
    assert allowed(benign)


def test_every_literal_value_of_a_loop_is_judged() -> None:
    names = " ".join(f"d{i}" for i in range(40))
    assert "targets '/'" in reason(f"for d in {names} /; do rm -rf $d; done")
    assert allowed(f"for d in {names}; do rm -rf $d; done")  # every value judged, all safe


def test_every_xargs_line_is_judged() -> None:
    lines = " ".join(f"x{i}" for i in range(40))
    assert "targets '/'" in reason(f"printf '%s\\n' {lines} / | xargs -I{{}} rm -rf {{}}")
    assert allowed(f"printf '%s\\n' {lines} | xargs -I{{}} rm -rf {{}}")


def test_a_fan_out_past_the_step_budget_is_refused_as_too_complex() -> None:
    values = " ".join(f"v{i}" for i in range(30))  # 30 ** 3 judged commands
    loops = f"for a in {values}; do for b in {values}; do for c in {values}; do"
    text = reason(f"{loops} cat $a$b$c; done; done; done")
    assert "too complex to analyze (" in text


@pytest.mark.parametrize(
    ("command", "target"),
    [
        ("rm -rf ${X:-/}", "'/'"),
        ("D=/etc/x; rm -rf ${D%/x}", "'/etc'"),
        ("D=/usr/local; rm -rf ${D%/*}", "'/usr'"),
        ("D=/tmp; rm -rf ${D/tmp/etc}", "'/etc'"),
        ("D=/ETC; rm -rf ${D,,}", "'/etc'"),
        ("cd /var && rm -rf $PWD", "'/var'"),
        ("cd /opt; rm -rf $(pwd)", "'/opt'"),
        ("rm -rf ~+", "'.'"),
    ],
)
def test_parameter_expansion_and_the_working_directory(command: str, target: str) -> None:
    assert f"targets {target}" in reason(command)


# -- unknown targets -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ['rm -rf "$X"', 'rm -rf "$(some_cmd)"', "rm -rf $X/*", 'rm -rf "$HOME/$X"', "rm -rf /$N"],
)
def test_a_recursive_delete_of_an_unknown_target_is_refused_as_unknown(command: str) -> None:
    text = reason(command)
    assert "known only at run time" in text
    assert "refused as unknown" in text
    assert "\x00" not in text  # an unknown output is shown as $(...), never a raw NUL


@pytest.mark.parametrize(
    "command",
    [
        'rm -rf "./build/$X"',
        "rm -rf node_modules/$pkg",
        'rm -rf "$TMPDIR/x"',
        'rm -rf "$(git rev-parse --show-toplevel)/dist"',
        'tmp=$(mktemp -d) && rm -rf "$tmp"',
        'rm -f "$FILE"',
        'cp -r "$SRC" "$DST"',
        'ROOT="$(git rev-parse --show-toplevel)"; B="$ROOT/build"; find "$B" -name "*.pyc" -delete',
    ],
)
def test_a_known_prefix_or_name_or_a_harmless_verb_passes(command: str) -> None:
    assert allowed(command)


# -- programs that run a command -------------------------------------------------------------


@pytest.mark.parametrize(
    ("dangerous", "benign"),
    [
        ("systemd-run --user rm -rf ~", "systemd-run --user make"),
        ("gdb -batch -ex run --args rm -rf /", "gdb --args ./app --flag"),
        ("bwrap --bind / / rm -rf /", "bwrap --ro-bind /usr /usr ls"),
        ("tmux new -d 'rm -rf /'", "tmux new -d 'npm run dev'"),
        ("tmux send-keys -t 0 'rm -rf ~' Enter", "tmux send-keys -t 0 'git status' Enter"),
        ("echo 'rm -rf /' | at now", "echo 'make backup' | at now"),
        ("parallel rm -rf ::: build /", "parallel rm -rf ::: build dist"),
        ("git -c core.pager='rm -rf ~' log", "git -c core.pager=cat log"),
        ("GIT_SSH_COMMAND='rm -rf /' git fetch", "GIT_SSH_COMMAND='ssh -v' git fetch"),
        ("tar -xf a.tar --to-command='rm -rf /'", "tar -xf a.tar --to-command=md5sum"),
        ("ssh -o ProxyCommand='rm -rf ~' host", "ssh -o ProxyCommand='ssh -W %h:%p b' host"),
        ("vim -c '!rm -rf /' f", "vim -c '%!jq .' -c wq f.json"),
        ("sqlite3 db '.shell rm -rf /'", "sqlite3 db '.tables'"),
        ("echo 'rm -rf /' > >(sh)", "echo 'ls' > >(sh)"),
        (
            "python3 -c 'import shutil; shutil.rmtree(\"/etc\")'",
            "python3 -c 'import shutil; shutil.rmtree(\"build\")'",
        ),
        (
            'node -e \'require("fs").rmSync(require("os").homedir(), {recursive: true})\'',
            'node -e \'require("fs").rmSync("dist", {recursive: true})\'',
        ),
        ("ruby -e 'FileUtils.rm_rf(Dir.home)'", "ruby -e 'FileUtils.rm_rf(\"tmp/cache\")'"),
        (
            'python3 -c \'import subprocess; subprocess.run(["rm", "-rf", "/"])\'',
            'python3 -c \'import subprocess; subprocess.run(["git", "status"])\'',
        ),
    ],
)
def test_a_wrapped_command_is_judged_as_the_command(dangerous: str, benign: str) -> None:
    assert reason(dangerous).startswith("fs-destruction:")
    assert allowed(benign)


def test_a_command_variable_judged_once_per_value_without_recursing() -> None:
    assert allowed("export EDITOR=nano PAGER='less -R'; git log; man ls")


def test_an_unevaluable_delete_in_a_program_naming_a_critical_path_is_refused() -> None:
    text = reason('python3 -c \'import shutil, os; shutil.rmtree(os.path.join("/", "etc"))\'')
    assert "cannot evaluate" in text
    assert allowed('python3 -c \'import shutil, os; shutil.rmtree(os.path.join("b", "c"))\'')


# -- false refusals fixed --------------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    ["[[ -f x ]]; echo ok", "[[ -d b ]] && rm -rf b", "( [[ -n $CI ]] )", "[[ a == b ]]&&echo y"],
)
def test_a_test_expression_followed_by_an_operator_parses(command: str) -> None:
    parse(command)
    assert allowed(command)


@pytest.mark.parametrize(
    "command",
    [
        'eval "$(poetry env activate)"',
        'eval "$(pdm venv activate)"',
        'eval "$(conda shell.bash hook)"',
        'eval "$(mise activate bash)"',
        "eval $(opam env)",
    ],
)
def test_shell_setup_tools_are_trusted(command: str) -> None:
    assert allowed(command)


def test_other_output_of_a_setup_tool_is_not() -> None:
    assert reason('eval "$(poetry run cat payload.sh)"').startswith("dynamic-code:")


@pytest.mark.parametrize(
    ("dangerous", "benign"),
    [
        ("rm -rf ~/{.,}*", "rm -rf {build,dist}"),
        ("rm -rf /usr/{lib,bin}", "rm -rf ./{a,b}/build"),
        ("printf -v d '/'; rm -rf \"$d\"", "printf -v d '%s' build; rm -rf \"$d\""),
        ('declare -n r=HOME; rm -rf "$r"', 'declare -n r=OUT; OUT=build; rm -rf "$r"'),
        ('rm -rf "$(dirname /etc/x)"', 'rm -rf "$(dirname build/x)"'),
        ("rm -rf $(find / -maxdepth 1 -name 'e*')", "rm -rf $(find . -name '*.pyc')"),
        (
            'ls / | while read d; do rm -rf "/$d"; done',
            "find . -name x | while read d; do rm -rf $d; done",
        ),
        ("poetry run rm -rf /", "poetry run pytest"),
        ("mise exec node@20 -- rm -rf /", "mise exec -- npm test"),
        ("nix-shell -p x --run 'rm -rf ~'", "nix-shell --run 'make test'"),
        ("ssh host bash <<< 'rm -rf /'", "ssh host bash <<< 'df -h'"),
        ("runuser -u root rm -rf /", "runuser -u app -- npm start"),
    ],
)
def test_more_indirections_with_their_twins(dangerous: str, benign: str) -> None:
    assert reason(dangerous).startswith("fs-destruction:")
    assert allowed(benign)
