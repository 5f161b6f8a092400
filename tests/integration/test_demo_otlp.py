"""``interpose demo --otlp`` to a collector that is not there: one line, no retries shown.

Each test runs the real command in a child process against a real loopback port: one
that refuses connections (a socket bound without listening: nothing can ever accept on
it while the test holds it), and one where something accepts the connection and closes
it at once, as a collector that dies during the demo would.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpose.cli.demo import unreachable as _unreachable

ROOT = Path(__file__).resolve().parents[2]
SUBPROCESS_TIMEOUT = 60  # s


def run_demo(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m interpose.cli demo ARGS…`` from the repository root: (process, seconds)."""
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "interpose.cli", "demo", *args],
        cwd=ROOT,
        # straight to the port: no OTel settings, no proxy of the machine's
        env={
            key: value
            for key, value in os.environ.items()
            if not key.startswith("OTEL_") and not key.lower().endswith("_proxy")
        },
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )
    return proc, time.monotonic() - start


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port that refuses every connection while the test runs."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))  # bound, never listening: connecting is refused
        yield sock.getsockname()[1]


@pytest.fixture
def hanging_up_port() -> Iterator[int]:
    """A loopback port where a server accepts each connection and closes it at once."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.close()

    thread = threading.Thread(target=serve, name="hang-up", daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()


@pytest.mark.integration
@pytest.mark.parametrize(
    ("protocol", "path"), [("http", "/v1/traces"), ("grpc", "")], ids=["http", "grpc"]
)
def test_demo_to_a_closed_port_says_so_in_one_line(
    closed_port: int, protocol: str, path: str
) -> None:
    proc, seconds = run_demo(
        "--otlp", f"http://127.0.0.1:{closed_port}", "--otlp-protocol", protocol
    )
    assert proc.returncode == 2
    assert proc.stdout == "", "the demo did not run"
    assert proc.stderr == (
        f"interpose demo: cannot reach the collector at http://127.0.0.1:{closed_port}{path}: "
        "connection refused\n"
    )
    # checked once before the run: no exporter retries (they took 8 s)
    assert seconds < 5, f"took {seconds:.1f}s"


@pytest.mark.integration
def test_demo_to_a_collector_that_hangs_up_reports_the_refused_spans_once(
    hanging_up_port: int,
) -> None:
    proc, _ = run_demo("--otlp", f"http://127.0.0.1:{hanging_up_port}")
    assert proc.returncode == 1
    assert "interpose demo: sent" not in proc.stdout
    [line] = proc.stderr.splitlines()  # the exporter's retry warnings are not shown
    assert line.startswith(
        f"interpose demo: the collector at http://127.0.0.1:{hanging_up_port}/v1/traces "
        "(OTLP/HTTP) did not accept "
    )
    assert line.endswith(" spans; is it running?")
    assert "Traceback" not in proc.stderr


def test_the_reachability_check_leaves_a_proxied_collector_to_the_proxy(
    closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("http_proxy", "https_proxy", "grpc_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    url = f"http://127.0.0.1:{closed_port}/v1/traces"
    assert _unreachable(url) == "connection refused"
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    assert _unreachable(url) is None  # the exporter would connect to the proxy instead
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    assert _unreachable(url) == "connection refused"
