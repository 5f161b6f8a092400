"""``interpose demo`` shows every kind of decision, in a table that fits 100 columns."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from interpose.agent.demo import MARKER, WIDTH, run_demo

Row = dict[str, str]


def table_rows(text: str) -> list[Row]:
    """The call rows of the demo's table, cut where the rule under the header is."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("────"))
    spans = [m.span() for m in re.finditer("─+", lines[rule])]
    spans[-1] = (spans[-1][0], WIDTH)  # the reason column runs to the edge
    names = lines[rule - 1].split()
    rows: list[Row] = []
    for line in lines[rule + 1 :]:
        if not line.strip():
            break  # the end of the table
        if rows and not line[: spans[-1][0]].strip():
            rows[-1]["reason"] += " " + line.strip()  # the reason wraps within its column
        elif line[:1].isdigit():
            rows.append(
                {name: line[a:b].strip() for name, (a, b) in zip(names, spans, strict=True)}
            )
    return rows


@pytest.fixture(scope="module")
def output() -> str:
    out = io.StringIO()
    assert run_demo(out=out) == 0
    return out.getvalue()


def decisions(rows: list[Row]) -> list[tuple[str, str, str, str]]:
    return [(r["turn"], r["tool"], r["decision"], r["by"]) for r in rows]


def test_the_table_shows_each_kind_of_decision(output: str) -> None:
    rows = table_rows(output)
    assert decisions(rows) == [
        ("1", "exec", "rewritten", "demo:no-color"),
        ("1", "read", "ok", ""),
        ("2", "read", "responded", "demo:cache"),
        ("2", "read", "blocked", "builtin:security-audit"),
        ("3", "exec", "blocked", "builtin:command-safety-guard"),
        ("3", "exec", "ok", ""),
        ("4", "write", "denied", "demo:notes-only"),
        ("4", "write", "ok", ""),
        ("4", "read", "ok", ""),
        ("5", "exec", "aborted", "demo:abort-deploy"),
        ("6", "read", "responded", "demo:cache"),
    ]
    assert {r["stage"] for r in rows} == {"tool"}


def test_rows_name_the_interceptors_that_ran_and_why(output: str) -> None:
    rows = table_rows(output)
    legend = {
        line.split()[3]: line.split()[0]
        for line in output.splitlines()
        if line.startswith("  ") and line.split()[1:2] and line.split()[1].startswith("tool.")
    }
    blocked_rm = rows[4]
    # the guard runs first and its block ends the before-chain: the rewrite never ran,
    # the after-hooks still did (the ran column is one legend letter per interceptor)
    assert blocked_rm["ran"] == legend["builtin:command-safety-guard"] + legend["demo:audit"]
    assert blocked_rm["reason"]
    assert blocked_rm["µs"] == "-"  # the command never ran

    rewritten = rows[0]
    assert legend["demo:no-color"] in rewritten["ran"]
    assert rewritten["reason"] == "ls -a → ls --color=never -a"
    assert int(rewritten["µs"].replace(",", "")) > 0

    assert "writes go under" in rows[6]["reason"]
    assert rows[2]["reason"] == "same as t1-readme"


def test_each_turn_ends_with_a_summary(output: str) -> None:
    summaries = [line.strip() for line in output.splitlines() if line.strip().startswith("↳")]
    assert len(summaries) == 6
    assert [s.split()[2] for s in summaries] == [
        "ended",
        "ended",
        "ended",
        "ended",
        "ABORTED",
        "ended",
    ]
    assert "deploying needs a human" in summaries[4]
    assert "6 turns (1 aborted), 11 tool calls" in output


def test_output_fits_a_100_column_terminal(output: str) -> None:
    too_wide = [line for line in output.splitlines() if len(line) > WIDTH]
    assert too_wide == []


def test_a_workdir_is_used_and_kept(tmp_path: Path) -> None:
    work = tmp_path / "scratch"
    assert run_demo(str(work), out=io.StringIO()) == 0

    assert (work / MARKER).exists()
    assert (work / "notes" / "plan.md").read_text(encoding="utf-8").startswith("# Plan")
    assert not (work / "plan.md").exists()  # the write outside notes/ was denied
    assert not (work / "build").exists()  # `rm -rf build` really ran
    # the demo seeded this directory, so it may run there again
    assert run_demo(str(work), out=io.StringIO()) == 0


def test_a_workdir_with_foreign_files_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    out = io.StringIO()

    assert run_demo(str(tmp_path), out=out) == 2

    assert out.getvalue() == ""
    assert "is not empty" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious.txt"]


@pytest.mark.integration
def test_the_console_command_runs_the_demo() -> None:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    proc = subprocess.run(
        [sys.executable, "-m", "interpose.cli", "demo"],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    rows = table_rows(proc.stdout)
    assert {r["decision"] for r in rows} == {
        "ok",
        "rewritten",
        "blocked",
        "responded",
        "denied",
        "aborted",
    }
