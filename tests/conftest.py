"""Shared fixtures: an empty pipeline and a list that records bus events."""

from __future__ import annotations

from typing import Any

import pytest

from interpose import Pipeline


@pytest.fixture
def pipe() -> Pipeline:
    """A pipeline without the built-in guards, so each test controls the whole stack."""
    return Pipeline(builtins=False)


@pytest.fixture
def recorder() -> list[Any]:
    """A list to collect events: ``pipe.subscribe(recorder.append, ...)``."""
    return []
