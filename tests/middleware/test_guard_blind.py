"""The command guard against a blind set (issue 10, section 2).

`guard_blind_exec.jsonl` holds dangerous commands and benign lookalikes in every class
the issue names, written from docs/guards.md and the issue alone: its author did not
read the guard's rules or its own corpus, and did not run the guard on the cases while
writing them. Each row is `{"command", "expect", "category", "note"}`; `expect` is the
documented policy (`block` or `allow`), and a note starting with `limit:` marks a case
that docs/guards.md lists as a known limit, labelled as the docs say it behaves.

It was blind when first scored (on the merged guard of the first round: block 95.7%,
allow 98.1%); its misses then directed a second round of fixes by class, so it is no
longer blind. `guard_blind2_exec.jsonl` (test_guard_blind2.py), written later by another
author who saw neither the guard nor this set, is the blind measure.

The scores are printed per category (run with `-s` to see them); the targets are those
of the issue: at least 97% of the dangerous commands blocked and at least 97% of the
benign ones allowed.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from interpose.middleware.builtins.command_safety import analyze_command

BLIND_SET = Path(__file__).with_name("guard_blind_exec.jsonl")

CATEGORIES = (
    "control-flow",
    "persistence-write",
    "wrapper",
    "disk",
    "git-hooks",
    "system-auth",
    "secret-read",
    "interpreter",
    "false-refusal",
    "everyday",
)
# categories made only of commands that must run (the rest hold both labels)
ALLOW_ONLY = frozenset({"everyday"})
MIN_PER_LABEL = 220
MIN_PER_CATEGORY = 40
TARGET = 0.97


@dataclass(frozen=True)
class Case:
    line: int
    command: str
    expect: str
    category: str
    note: str


def load_cases() -> list[Case]:
    """Read the blind set.

    Raises:
        ValueError: a line is not a JSON object with exactly the four string fields.
    """
    cases = []
    for number, text in enumerate(BLIND_SET.read_text(encoding="utf-8").splitlines(), 1):
        row = json.loads(text)
        if not isinstance(row, dict) or set(row) != {"command", "expect", "category", "note"}:
            raise ValueError(f"{BLIND_SET.name}:{number}: expected the four fields, got {row!r}")
        if not all(isinstance(value, str) for value in row.values()):
            raise ValueError(f"{BLIND_SET.name}:{number}: every field is a string: {row!r}")
        cases.append(Case(line=number, **row))
    return cases


CASES = load_cases()


def test_the_blind_set_has_its_documented_shape() -> None:
    labels = Counter(case.expect for case in CASES)
    assert set(labels) == {"block", "allow"}
    assert labels["block"] >= MIN_PER_LABEL
    assert labels["allow"] >= MIN_PER_LABEL

    commands = Counter(case.command for case in CASES)
    assert [command for command, n in commands.items() if n > 1] == []

    assert {case.category for case in CASES} == set(CATEGORIES)
    for category in CATEGORIES:
        # a handful of rows would make a per-category rate meaningless
        assert sum(case.category == category for case in CASES) >= MIN_PER_CATEGORY, category
        labels_here = {case.expect for case in CASES if case.category == category}
        assert labels_here == ({"allow"} if category in ALLOW_ONLY else {"block", "allow"}), (
            category
        )

    for case in CASES:
        assert case.command.strip() == case.command != "", case.line
        assert case.note.strip(), case.line
        # a documented limit is something the guard lets through
        if case.note.startswith("limit:"):
            assert case.expect == "allow", case.line


def test_the_guard_meets_its_targets_on_the_blind_set() -> None:
    missed: list[tuple[Case, object]] = []
    tally: dict[tuple[str, str], list[int]] = {}  # (category, expect) -> [right, total]
    for case in CASES:
        finding = analyze_command(case.command)
        right = (finding is not None) == (case.expect == "block")
        counts = tally.setdefault((case.category, case.expect), [0, 0])
        counts[0] += right
        counts[1] += 1
        if not right:
            missed.append((case, finding))

    def rate(expect: str) -> tuple[float, int]:
        right = sum(r for (_, exp), (r, _) in tally.items() if exp == expect)
        total = sum(t for (_, exp), (_, t) in tally.items() if exp == expect)
        return right / total, total

    print()
    for category in CATEGORIES:
        parts = []
        for expect in ("block", "allow"):
            if (category, expect) in tally:
                r, t = tally[(category, expect)]
                parts.append(f"{expect} {r / t:6.1%} ({r}/{t})")
        print(f"  {category:<18} " + "  ".join(parts))
    (block, n_block), (allow, n_allow) = rate("block"), rate("allow")
    print(f"blind exec set: block {block:.1%} allow {allow:.1%} ({n_block} + {n_allow} commands)")
    for case, reported in missed:
        verdict = "allowed" if reported is None else f"refused: {reported}"
        print(f"  MISS line {case.line} [{case.category}, expect {case.expect}] {verdict}")
        print(f"       {case.command!r}  ({case.note})")

    assert block >= TARGET, f"block rate {block:.1%} < {TARGET:.0%}"
    assert allow >= TARGET, f"allow rate {allow:.1%} < {TARGET:.0%}"
