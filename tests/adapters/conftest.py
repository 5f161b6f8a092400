"""Fixtures of the MCP gateway's tests (the helpers are in mcp_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp_helpers import HttpProxy


@pytest.fixture
def http_proxy() -> Iterator[type[HttpProxy]]:
    """Start HTTP proxies with ``http_proxy(argv, cwd)``; all are stopped afterwards."""
    started: list[HttpProxy] = []

    class _Started(HttpProxy):
        def __init__(self, argv: list[str], cwd: Path | None = None) -> None:
            super().__init__(argv, cwd)
            started.append(self)

    yield _Started
    for proxy in started:
        proxy.stop()
