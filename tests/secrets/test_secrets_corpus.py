"""The recognizers against a labelled corpus (tests/secrets/corpus.jsonl, written by
make_corpus.py): every row must come out exactly as labelled, and the totals give the
precision and recall the docs quote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from interpose.secrets import PII_KINDS, SECRET_KINDS, scan

CORPUS = Path(__file__).with_name("corpus.jsonl")
ROWS: list[dict[str, Any]] = [
    json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()
]


def found(text: str) -> set[tuple[str, str]]:
    return {(m.kind, m.value) for m in scan(text, pii=True)}


def expected(row: dict[str, Any]) -> set[tuple[str, str]]:
    return {(kind, value) for kind, value in row["expect"]}


def test_the_corpus_is_big_enough_and_covers_every_kind() -> None:
    positives = [row for row in ROWS if row["expect"]]
    negatives = [row for row in ROWS if not row["expect"]]
    assert len(positives) >= 150
    assert len(negatives) >= 150
    covered = {kind for row in positives for kind, _ in row["expect"]}
    assert covered == SECRET_KINDS | PII_KINDS  # every recognizer has positives


@pytest.mark.parametrize("row", ROWS, ids=[f"{i}-{row['why'][:40]}" for i, row in enumerate(ROWS)])
def test_each_row_is_found_exactly_as_labelled(row: dict[str, Any]) -> None:
    assert found(row["text"]) == expected(row), row["why"]


def test_precision_and_recall_over_the_corpus() -> None:
    true_pos = false_pos = false_neg = 0
    for row in ROWS:
        got, want = found(row["text"]), expected(row)
        true_pos += len(got & want)
        false_pos += len(got - want)
        false_neg += len(want - got)
    precision = true_pos / (true_pos + false_pos)
    recall = true_pos / (true_pos + false_neg)
    print(f"corpus: {len(ROWS)} rows, precision {precision:.3f}, recall {recall:.3f}")
    assert (precision, recall) == (1.0, 1.0)


def test_without_pii_only_credentials_are_found() -> None:
    for row in ROWS:
        want = {(kind, value) for kind, value in expected(row) if kind in SECRET_KINDS}
        assert {(m.kind, m.value) for m in scan(row["text"])} == want, row["why"]
