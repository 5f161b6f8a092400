"""Every PicoClaw test runs twice, as the process-hook tests do: over the asyncio pipes
ProcessHook uses on asyncio, and over anyio's process streams (its portable path)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from interpose.external.process import child


@pytest.fixture(autouse=True, params=["asyncio-pipes", "anyio-streams"])
def conversation(request: pytest.FixtureRequest) -> Iterator[str]:
    saved = child.ASYNCIO_PIPES
    child.ASYNCIO_PIPES = request.param == "asyncio-pipes"
    try:
        yield request.param
    finally:
        child.ASYNCIO_PIPES = saved
