"""Scores the command guard on a second blind set (issue 10, section 2).

`guard_blind2_exec.jsonl` was written from the documented policy alone
(docs/guards.md and the issue), without reading the guard's rules or its corpora,
so it measures how the guard generalises to commands its authors never saw. Each
line is `{"command", "expect", "category", "note"}`; a `note` containing `limit`
marks a case labelled as docs/guards.md "Known limits" says the guard behaves.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from interpose.middleware.builtins.command_safety import analyze_command

CORPUS = Path(__file__).with_name("guard_blind2_exec.jsonl")

CATEGORIES = frozenset(
    {
        "fs-destruction",
        "disk",
        "permissions",
        "system-auth",
        "persistence",
        "rce",
        "reverse-shell",
        "wrapper",
        "control-flow",
        "interpreter",
        "git-hooks",
        "secret-read",
        "containers",
        "fork-bomb",
        "everyday",
    }
)

MIN_PER_LABEL = 160
MIN_EVERYDAY = 60
MIN_RATE = 0.97


def _load() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(CORPUS.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        assert isinstance(row, dict), f"line {number} is not an object"
        row["_line"] = number
        rows.append(row)
    return rows


ROWS = _load()


def _key(command: object) -> str:
    # Lists and strings are told apart by their JSON text, so `["ls"]` and `"ls"`
    # stay two different cases.
    return json.dumps(command, sort_keys=True)


def test_blind_set_shape() -> None:
    for row in ROWS:
        where = f"line {row['_line']}"
        assert set(row) == {"command", "expect", "category", "note", "_line"}, where
        command = row["command"]
        assert isinstance(command, str | list), where
        assert command, f"{where}: empty command"
        assert row["expect"] in ("block", "allow"), where
        assert row["category"] in CATEGORIES, f"{where}: {row['category']!r}"
        assert isinstance(row["note"], str), where
        assert row["note"], where

    labels = Counter(row["expect"] for row in ROWS)
    assert labels["block"] >= MIN_PER_LABEL, labels
    assert labels["allow"] >= MIN_PER_LABEL, labels

    everyday = [row for row in ROWS if row["category"] == "everyday"]
    assert len(everyday) >= MIN_EVERYDAY
    assert all(row["expect"] == "allow" for row in everyday)

    # Every dangerous category has benign twins next to it, and every category
    # of the list is present.
    seen = {(row["category"], row["expect"]) for row in ROWS}
    for category in CATEGORIES - {"everyday"}:
        assert (category, "block") in seen, category
        assert (category, "allow") in seen, category

    keys = Counter(_key(row["command"]) for row in ROWS)
    duplicates = sorted(key for key, count in keys.items() if count > 1)
    assert not duplicates, duplicates


def _judge(command: Any) -> str | None:
    """The guard's reason for refusing `command`, or None when it is allowed."""
    # Any: the set holds argv lists as well as shell strings, as `exec` receives them.
    verdict = analyze_command(command)
    return None if verdict is None else str(verdict)


def test_blind_set_scores(capsys: pytest.CaptureFixture[str]) -> None:
    totals: Counter[str] = Counter()
    right: Counter[str] = Counter()
    per_category: dict[tuple[str, str], list[int]] = {}
    misses: list[str] = []
    for row in ROWS:
        expect = row["expect"]
        reason = _judge(row["command"])
        got = "allow" if reason is None else "block"
        totals[expect] += 1
        counts = per_category.setdefault((row["category"], expect), [0, 0])
        counts[1] += 1
        if got == expect:
            right[expect] += 1
            counts[0] += 1
        else:
            misses.append(
                f"  line {row['_line']} [{row['category']}] expected {expect}, got {got}: "
                f"{row['command']!r} ({row['note']})"
                + (f"\n    reason: {reason}" if reason else "")
            )

    block_rate = right["block"] / totals["block"]
    allow_rate = right["allow"] / totals["allow"]
    lines = ["blind set 2: per category (right / total)"]
    for (category, expect), (ok, total) in sorted(per_category.items()):
        lines.append(f"  {category:15} {expect:5} {ok:4}/{total:<4} {ok / total:7.1%}")
    lines.append(f"block rate {right['block']}/{totals['block']} = {block_rate:.1%}")
    lines.append(f"allow rate {right['allow']}/{totals['allow']} = {allow_rate:.1%}")
    lines.append(f"misses: {len(misses)}")
    lines.extend(misses)
    report = "\n".join(lines)
    with capsys.disabled():
        print("\n" + report)

    assert block_rate >= MIN_RATE, report
    assert allow_rate >= MIN_RATE, report
