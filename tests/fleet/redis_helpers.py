"""A real ``redis-server`` for the fleet tests, and a free port (the fixtures that use
them are in test_fleet.py)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

STARTUP_TIMEOUT = 10.0  # s: until the server answers PING


def find_redis_server() -> str:
    """The redis-server binary; skips the test (fails it under CI) when missing."""
    binary = shutil.which("redis-server")
    if binary is None:
        message = (
            "redis-server not found: scripts/test.sh installs it (apt-get install "
            "redis-server); the fleet tests need a real Redis"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return binary


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    """One redis-server process; ``start()`` again after ``kill()`` restarts it on the
    same port and directory (with ``aof``, it reloads what it had acknowledged)."""

    def __init__(self, binary: str, workdir: Path, *, aof: bool = False) -> None:
        self.binary = binary
        self.workdir = workdir
        self.aof = aof
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.started: list[int] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        persistence = (
            ["--appendonly", "yes", "--appendfsync", "always"]
            if self.aof
            else ["--appendonly", "no"]
        )
        argv = [
            self.binary,
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            *persistence,
            "--dir",
            str(self.workdir),
            "--logfile",
            str(self.workdir / "redis.log"),
            "--daemonize",
            "no",
        ]
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        self.started.append(self.process.pid)
        self.wait_ready()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        last: Exception | None = None
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                log = (self.workdir / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server exited with {self.process.returncode}:\n{log}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(64).startswith(b"+PONG"):
                        return
            except OSError as exc:
                last = exc
            time.sleep(0.02)
        raise RuntimeError(f"redis-server did not answer on port {self.port}: {last}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to the server this object started, and reap it."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(sig)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        self.process = None
