"""The recognizers' table stays consistent with its regexes."""

from __future__ import annotations

import importlib
from typing import Any

from interpose.secrets.patterns import MIN_LENGTHS, RECOGNIZERS

# the regex parser's own idea of a pattern's widths (a private module: no stubs)
PARSER: Any = importlib.import_module("re._parser")


def test_each_rule_knows_its_shortest_match() -> None:
    for rule in RECOGNIZERS:
        width = PARSER.parse(rule.pattern.pattern).getwidth()[0]
        if rule.finder is None:
            assert MIN_LENGTHS[rule.kind] == width, rule.kind
        else:  # the name comes before what the pattern matches: "pwd=" and 6 characters
            assert MIN_LENGTHS[rule.kind] >= width, rule.kind
        assert rule.min_length == MIN_LENGTHS[rule.kind]
