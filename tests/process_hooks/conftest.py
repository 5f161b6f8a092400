"""Every process-hook test runs twice: over the asyncio pipes ProcessHook uses on
asyncio, and over anyio's process streams with a reader task (its portable path, the
one trio gets), forced here under asyncio."""

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
