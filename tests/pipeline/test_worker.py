"""The thread that runs a sync shadow handler's calls: one call at a time, each waited
for at most its timeout, a daemon that ends when idle and starts again on demand."""

from __future__ import annotations

import threading
import time

import pytest

from interpose.pipeline import worker
from interpose.pipeline.worker import Worker


def _threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def test_a_call_returns_its_value_and_raises_its_exception() -> None:
    w = Worker("test-worker values")

    assert w.call(1.0, lambda a, b: a + b, 2, 3) == 5
    empty: dict[str, int] = {}
    with pytest.raises(KeyError, match="missing"):
        w.call(1.0, lambda: empty["missing"])
    assert not w.busy
    (thread,) = _threads("test-worker values")
    assert thread.daemon  # a handler that never returns cannot hold up the exit


def test_a_late_call_times_out_and_the_next_does_not_run_until_it_returns() -> None:
    w = Worker("test-worker late")
    release = threading.Event()
    ran: list[str] = []

    start = time.perf_counter()
    with pytest.raises(TimeoutError):
        w.call(0.05, lambda: release.wait(5))
    assert time.perf_counter() - start < 1.0
    assert w.busy
    with pytest.raises(TimeoutError, match="not run: its run for an earlier call"):
        w.call(0.05, ran.append, "second")
    release.set()
    deadline = time.monotonic() + 5
    while w.busy and time.monotonic() < deadline:
        time.sleep(0.005)
    w.call(1.0, ran.append, "third")
    assert ran == ["third"]


def test_the_thread_ends_when_idle_and_starts_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "IDLE", 0.05)
    w = Worker("test-worker idle")
    w.call(1.0, lambda: None)

    deadline = time.monotonic() + 5
    while _threads("test-worker idle") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _threads("test-worker idle") == []
    assert w.call(1.0, lambda: "again") == "again"
