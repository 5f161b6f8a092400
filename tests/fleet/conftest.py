"""A real ``redis-server`` for the fleet tests, on a free loopback port.

``redis_server`` is one server for the whole session, without persistence; tests keep
apart by using streams of their own.  ``make_redis`` starts more (the restart test needs
one with an append-only file, and kills it).  Every server runs in a temporary directory
of its own and is killed at the end: only the processes these fixtures started.

Without ``redis-server`` (scripts/test.sh installs it with apt) the tests are skipped,
except under CI (``CI=true``), where a missing server fails the run.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from redis_helpers import RedisServer, find_redis_server


@pytest.fixture
def make_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., RedisServer]]:
    """``make_redis(aof=False)``: start another server; all of them are killed after the
    test."""
    binary = find_redis_server()
    servers: list[RedisServer] = []

    def make(*, aof: bool = False) -> RedisServer:
        server = RedisServer(binary, tmp_path_factory.mktemp("redis"), aof=aof)
        servers.append(server)
        server.start()
        return server

    yield make
    for server in servers:
        server.kill()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One server without persistence for the whole session."""
    server = RedisServer(find_redis_server(), tmp_path_factory.mktemp("redis"))
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def stream() -> str:
    """A stream key of this test's own."""
    return f"test:{uuid.uuid4().hex[:12]}:events"
