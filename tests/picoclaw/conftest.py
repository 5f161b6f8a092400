"""Every PicoClaw test runs twice, as the process-hook tests do: over the asyncio pipes
ProcessHook uses on asyncio, and over anyio's process streams (its portable path)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from interpose.middleware import process


@pytest.fixture(autouse=True, params=["asyncio-pipes", "anyio-streams"])
def conversation(request: pytest.FixtureRequest) -> Iterator[str]:
    saved = process._ASYNCIO_PIPES
    process._ASYNCIO_PIPES = request.param == "asyncio-pipes"
    try:
        yield request.param
    finally:
        process._ASYNCIO_PIPES = saved
