"""Shared fixtures: an empty pipeline, a list that records bus events, an SDK tracer
provider with an in-memory span exporter, a check that processes a test started are
gone, and a real redis-server (tests/fleet/redis_helpers.py) for the tests of every
directory that needs one."""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Any

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from interpose import Pipeline

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "fleet"))
from redis_helpers import RedisServer, find_redis_server

WaitGone = Callable[[Iterable[int]], Awaitable[None]]


@pytest.fixture
def pipe() -> Pipeline:
    """A pipeline without the built-in guards, so each test controls the whole stack."""
    return Pipeline(builtins=False)


@pytest.fixture
def recorder() -> list[Any]:
    """A list to collect events: ``pipe.subscribe(recorder.append, ...)``."""
    return []


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Keeps the spans of ``provider``: ``exporter.get_finished_spans()``."""
    exp = InMemorySpanExporter()
    yield exp
    exp.shutdown()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    """An SDK tracer provider exporting every span to ``exporter`` as it ends."""
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    yield tp
    tp.shutdown()


def _ended(pid: int) -> bool:
    """Whether process ``pid`` has ended: there is no such process, or it is a zombie.

    A killed orphan is reparented to PID 1, and some containers' PID 1 never reaps it:
    it stays a zombie (dead, holding nothing but its pid), which ``os.kill(pid, 0)``
    still finds.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]  # after "(command name)"
    except (OSError, IndexError):  # gone meanwhile, or no /proc (not Linux)
        return not os.path.exists(f"/proc/{pid}") and os.path.isdir("/proc")
    return state == "Z"


@pytest.fixture
def wait_gone() -> WaitGone:
    """``await wait_gone(pids)``: returns once every process in ``pids`` has ended,
    polling ``os.kill(pid, 0)`` for at most 5 seconds (a SIGKILL takes effect
    asynchronously); then fails the test naming those still running."""

    async def wait(pids: Iterable[int]) -> None:
        waiting = set(pids)
        assert waiting, "no pids to wait for"
        with anyio.move_on_after(5.0):
            for _ in range(500):  # bounded in count too: 500 looks, 10 ms apart
                waiting = {pid for pid in waiting if not _ended(pid)}
                if not waiting:
                    return
                await anyio.sleep(0.01)
        still = {pid for pid in waiting if not _ended(pid)}
        assert not still, f"still running after 5 s: {sorted(still)}"

    return wait


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """A redis-server without persistence for the tests of one module (each test uses
    key prefixes of its own); a missing server fails under CI, is skipped elsewhere."""
    server = RedisServer(find_redis_server(), tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.kill()
