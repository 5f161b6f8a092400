"""The ``interpose`` command as a user runs it: every subcommand, given bad arguments, says
what is wrong and exits non-zero without a traceback; every ``--help`` describes the
command and its exit codes; ``--version``; ``interpose bench`` from an installed wheel."""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import re
import shlex
import socket
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from interpose.cli._main import parser as _parser

ROOT = Path(__file__).resolve().parents[1]


def subcommands() -> dict[str, argparse.ArgumentParser]:
    """Every subcommand of the ``interpose`` parser, read from the parser itself."""
    parser = _parser()
    (action,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def run(
    *argv: str, cwd: Path, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m interpose ARGV`` in a child, this checkout first on its path."""
    if env is None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "interpose", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# Per subcommand, bad command lines built in a scratch directory ``tmp`` (holding a file
# ``file.txt`` and a valid ``interpose.toml``). A new subcommand must get its cases here
# (test_every_subcommand_has_bad_input_cases).
Case = Callable[[Path], list[str]]
CASES: dict[str, list[Case]] = {
    "demo": [
        lambda tmp: ["--workdir", str(tmp / "file.txt")],
        lambda tmp: ["--workdir", str(tmp / "file.txt" / "sub")],
        lambda tmp: ["--otlp-protocol", "pigeon"],
    ],
    "bench": [
        lambda tmp: ["--plot", str(tmp / "missing" / "x.png")],
        lambda tmp: ["--plot", str(tmp / "x.unknown-format")],
        lambda tmp: ["--plot", str(tmp)],
        lambda tmp: ["--rounds", "0"],
        lambda tmp: ["--target-ms", "soon"],
        lambda tmp: ["--clock", "sundial"],
    ],
    "check": [
        lambda tmp: [str(tmp / "missing.toml")],
        lambda tmp: [str(tmp)],
        lambda tmp: [str(tmp / "interpose.toml"), "--name"],
    ],
    "init": [
        lambda tmp: [str(tmp / "missing" / "interpose.toml")],
        lambda tmp: [str(tmp / "interpose.toml")],  # exists
        lambda tmp: [str(tmp / "interpose.json")],
    ],
    "schema": [lambda tmp: ["extra"]],
    "run-hook-test": [
        lambda tmp: [str(tmp / "missing.toml"), "--tool", "exec"],
        lambda tmp: [str(tmp / "interpose.toml"), "--tool", "exec", "--args", "{not json"],
        lambda tmp: [str(tmp / "interpose.toml"), "--tool", "exec", "--args", "[1, 2]"],
        lambda tmp: [str(tmp / "interpose.toml"), "--tool", ""],
    ],
    "explain": [
        lambda tmp: ["--", "exec"],
        lambda tmp: ["--", "read", "path"],
        lambda tmp: ["--", "read", "{not json"],
        lambda tmp: ["--", "read", "[1, 2]"],
        lambda tmp: ["--config", str(tmp / "missing.toml"), "--", "exec", "ls"],
        lambda tmp: ["--config", str(tmp / "file.txt"), "--", "exec", "ls"],
    ],
    "replay": [
        lambda tmp: [str(tmp / "missing.jsonl"), "--config", str(tmp / "interpose.toml")],
        lambda tmp: [str(tmp / "file.txt"), "--config", str(tmp / "missing.toml")],
    ],
    "mcp-proxy": [
        lambda tmp: ["--log-level", "LOUD"],
        lambda tmp: ["--log-file", str(tmp / "missing" / "x.log"), "--", sys.executable],
        lambda tmp: ["--listen", "nowhere", "--", sys.executable],
        lambda tmp: ["--config", str(tmp / "missing.toml")],
        lambda tmp: ["--", str(tmp / "no-such-server")],
        lambda tmp: ["--jwks", str(tmp / "file.txt"), "--", sys.executable],
        lambda tmp: ["--jwt-issuer", "https://idp.test", "--", sys.executable],
    ],
    "inbox": [
        lambda tmp: ["--listen", "nowhere"],
        lambda tmp: ["--redis", "not a url"],
        lambda tmp: ["--redis", f"redis://127.0.0.1:{closed_port()}/0"],
        lambda tmp: ["--listen", "0.0.0.0:0", "--redis", "redis://127.0.0.1:1/0"],
        lambda tmp: ["--token-file", str(tmp / "missing")],
    ],
    "tail": [
        lambda tmp: ["--redis", f"redis://127.0.0.1:{closed_port()}/0"],
        lambda tmp: ["--redis", "not a url"],
    ],
    "audit": [
        lambda tmp: [
            "--redis",
            f"redis://127.0.0.1:{closed_port()}/0",
            "--out",
            str(tmp / "audit.jsonl"),
        ],
        lambda tmp: ["--redis", "not a url", "--out", str(tmp / "audit.jsonl")],
    ],
}


def test_every_subcommand_has_bad_input_cases() -> None:
    assert sorted(CASES) == sorted(subcommands())


def generic_cases() -> list[tuple[str, list[str]]]:
    """For every subcommand of the parser: an unknown option, and (when it has required
    arguments) none of them."""
    cases = []
    for name, parser in subcommands().items():
        cases.append((name, ["--no-such-option"]))
        if any(action.required for action in parser._actions):
            cases.append((name, []))
    return cases


def specific_cases() -> list[tuple[str, int, Case]]:
    return [(name, i, case) for name, cases in CASES.items() for i, case in enumerate(cases)]


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    (tmp_path / "file.txt").write_text("not a directory, not a log\n")
    (tmp_path / "interpose.toml").write_text("[hooks.builtins.loop-guard]\nmax_repeats = 3\n")
    return tmp_path


def assert_refused(proc: subprocess.CompletedProcess[str]) -> None:
    shown = f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode > 0, shown  # an exit code: not killed by a signal either
    assert "Traceback" not in proc.stdout, shown
    assert "Traceback" not in proc.stderr, shown
    assert proc.stderr.strip(), shown  # it says what is wrong


@pytest.mark.parametrize(("command", "argv"), generic_cases())
def test_unknown_options_and_missing_arguments_are_refused(
    scratch: Path, command: str, argv: list[str]
) -> None:
    proc = run(command, *argv, cwd=scratch)
    assert_refused(proc)
    assert proc.returncode == 2


@pytest.mark.parametrize(("command", "index", "case"), specific_cases())
def test_bad_input_is_refused_without_a_traceback(
    scratch: Path, command: str, index: int, case: Case
) -> None:
    proc = run(command, *case(scratch), cwd=scratch)
    assert_refused(proc)
    if command in ("tail", "audit"):
        # one error and nothing else: no table header, no partial output file
        assert proc.stdout == ""
        assert not (scratch / "audit.jsonl").exists()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["demo", "--otlp-protocol", "x"],
            "interpose demo: argument --otlp-protocol: invalid choice",
        ),
        (["replay"], "interpose replay: the following arguments are required: AUDIT.jsonl"),
        (
            ["check", "--no-such-flag", "x.toml"],
            "interpose: unrecognized arguments: --no-such-flag",
        ),
        ([], "interpose: the following arguments are required: COMMAND"),
    ],
)
def test_arguments_argparse_refuses_are_one_line_too(
    argv: list[str], said: str, tmp_path: Path
) -> None:
    done = run(*argv, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(said), line
    assert line.endswith(" --help")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--workdir", "{tmp}/file.txt"], "--workdir {tmp}/file.txt: not a directory"),
        (
            ["bench", "--plot", "{tmp}/missing/x.png"],
            "--plot {tmp}/missing/x.png: the directory {tmp}/missing does not exist",
        ),
        (["check", "{tmp}/missing.toml"], "{tmp}/missing.toml: no such file"),
        (
            ["run-hook-test", "{tmp}/missing.toml", "--tool", "exec"],
            "{tmp}/missing.toml: no such file",
        ),
        (
            ["run-hook-test", "{tmp}/interpose.toml", "--tool", "exec", "--args", "[1]"],
            "--args must be a JSON object",
        ),
        (
            ["init", "{tmp}/missing/interpose.toml"],
            "{tmp}/missing/interpose.toml: the directory {tmp}/missing does not exist",
        ),
        (["init", "{tmp}/interpose.toml"], "{tmp}/interpose.toml exists; --force overwrites it"),
    ],
)
def test_bad_input_is_one_line_naming_it_and_exit_2(
    scratch: Path, argv: list[str], message: str
) -> None:
    proc = run(*(arg.format(tmp=scratch) for arg in argv), cwd=scratch)
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr == f"interpose {argv[0]}: {message.format(tmp=scratch)}\n"


def test_bench_checks_plot_before_measuring(scratch: Path) -> None:
    # the whole benchmark would take seconds to minutes; the refusal comes at once
    proc = run("bench", "--plot", str(scratch / "missing" / "x.png"), cwd=scratch, timeout=20)
    assert proc.returncode == 2
    assert "interpose bench" not in proc.stdout  # the benchmark's header: it did not start


@pytest.mark.parametrize("command", sorted(subcommands()))
def test_every_subcommand_help_describes_it_and_its_exit_codes(command: str) -> None:
    parser = subcommands()[command]
    assert parser.description, f"interpose {command} --help has no description"
    text = parser.format_help()
    assert "exit codes:" in text, f"interpose {command} --help does not list its exit codes"
    assert "  0  " in text, text


def test_help_is_printed_by_the_command(tmp_path: Path) -> None:
    proc = run("check", "--help", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.startswith("usage: interpose check")
    assert "exit codes:\n  0  the file is valid\n" in proc.stdout


def test_version_is_the_installed_package_version(tmp_path: Path) -> None:
    proc = run("--version", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == f"interpose {importlib.metadata.version('interpose')}\n"


def test_bench_runs_from_an_installed_wheel_in_any_directory(tmp_path: Path) -> None:
    """The wheel ships the tool-call benchmark: unpacked on its own (no source checkout
    on the path) and run from an unrelated directory, ``interpose bench`` finds and runs
    it."""
    dist = tmp_path / "dist"
    wheel = dist / _build_wheel(dist)
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    assert (site / "interpose" / "_bench" / "bench_tool_call.py").is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=str(site))
    where = subprocess.run(
        [sys.executable, "-c", "import interpose.cli.bench as c; print(c.find_benchmarks())"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert where.stdout.strip() == str(site / "interpose" / "_bench" / "bench_tool_call.py")
    png = elsewhere / "slopes.png"
    proc = run(
        "bench", "--rounds", "1", "--target-ms", "1", "--plot", str(png), cwd=elsewhere, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "interpose bench: per-tool-call overhead" in proc.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _build_wheel(dist: Path) -> str:
    """Build this checkout's wheel into ``dist`` with its build backend (hatchling, in the
    dev extra); the wheel's file name."""
    build = "import sys, hatchling.build as b; print(b.build_wheel(sys.argv[1]))"
    proc = subprocess.run(
        [sys.executable, "-c", build, str(dist)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return proc.stdout.strip().splitlines()[-1]


def docs_blocks(lang: str) -> list[str]:
    """The code blocks of docs/cli.md in ``lang``."""
    text = (ROOT / "docs" / "cli.md").read_text()
    return re.findall(rf"^```{lang}\n(.*?)^```", text, re.M | re.S)


def test_the_first_block_of_the_cli_page_runs_as_pasted(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "cli.md").read_text()
    first = re.search(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)
    assert first is not None
    assert first[1] == "sh"
    for line in first[2].splitlines():
        argv = shlex.split(line)
        assert argv[0] == "interpose", line  # interpose commands only
        proc = run(*argv[1:], cwd=tmp_path)
        assert proc.returncode == 0, f"{line}: {proc.stderr}"
    assert (tmp_path / "interpose.toml").is_file()


def test_the_cli_pages_examples_of_bad_input_print_what_it_shows(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# a file\n")
    (session,) = (block for block in docs_blocks("console") if "$ interpose demo" in block)
    shown = session.splitlines()
    for command, said in zip(shown[::2], shown[1::2], strict=True):
        assert command.startswith("$ interpose ")
        proc = run(*shlex.split(command[2:])[1:], cwd=tmp_path)
        assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", said + "\n")
