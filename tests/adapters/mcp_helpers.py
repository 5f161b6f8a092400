"""Real MCP servers and ``interpose mcp-proxy`` processes for the MCP gateway's tests.

The Python servers (``mcp-server-time``, ``mcp-server-git``) come with the dev extra; the
npm ones (``@modelcontextprotocol/server-everything``, ``-filesystem``) are installed by
scripts/test.sh into tests/mcp_servers/node_modules (pinned by its package-lock.json).
Without them the tests that need them are skipped, except under CI (``CI=true``), where a
missing server fails the run.

The proxy always runs as a real child process (``python -m interpose.cli mcp-proxy``),
driven by the SDK's own ``Client``: over stdio (the client spawns it) or over streamable
HTTP on 127.0.0.1 (a port the system chose, announced on the proxy's stderr).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio.abc
import pytest
from mcp import StdioServerParameters

NODE_BIN = Path(__file__).resolve().parent.parent / "mcp_servers" / "node_modules" / ".bin"
START_TIMEOUT = 30.0  # s: until an HTTP proxy announces its URL
STOP_TIMEOUT = 10.0  # s: after SIGTERM, before SIGKILL
CALL_TIMEOUT = 30.0  # s: bound of every MCP exchange in these tests


def _missing(what: str) -> None:
    message = f"{what} is not installed (scripts/test.sh installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def npm_server(name: str) -> list[str]:
    """The command of an npm MCP server (``server-everything`` ...)."""
    binary = NODE_BIN / f"mcp-server-{name}"
    if not binary.exists() or shutil.which("node") is None:
        _missing(f"@modelcontextprotocol/server-{name} (npm, with node)")
    return [str(binary)]


def python_server(module: str) -> list[str]:
    """The command of a Python MCP server of the dev extra (``mcp_server_time`` ...)."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        _missing(module)
    return [sys.executable, "-m", module]


def proxy_argv(upstream: list[str], *, name: str, config: Path | None = None) -> list[str]:
    """``interpose mcp-proxy [--config FILE] --name NAME -- UPSTREAM...``."""
    argv = [sys.executable, "-m", "interpose.cli", "mcp-proxy", "--name", name]
    if config is not None:
        argv += ["--config", str(config)]
    return [*argv, "--", *upstream]


def stdio_proxy(
    upstream: list[str], *, name: str, config: Path | None = None, cwd: Path | None = None
) -> StdioServerParameters:
    """Stdio parameters that make the client spawn the proxy in front of ``upstream``."""
    argv = proxy_argv(upstream, name=name, config=config)
    return StdioServerParameters(
        command=argv[0], args=argv[1:], env={"PATH": os.environ.get("PATH", "")}, cwd=cwd
    )


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def wait_gone(pid: int, timeout: float = STOP_TIMEOUT) -> None:
    """Wait until process ``pid`` no longer runs (it is not our child: poll /proc).

    Raises:
        AssertionError: still there after ``timeout`` s.
    """
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists():
        status = Path(f"/proc/{pid}/status")
        try:
            if "\nState:\tZ" in status.read_text():
                return  # a zombie: dead, waiting for its parent to reap it
        except OSError:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} still runs after {timeout}s")
        time.sleep(0.02)


class HttpProxy:
    """A proxy process serving streamable HTTP on 127.0.0.1."""

    def __init__(self, argv: list[str], cwd: Path | None = None) -> None:
        self.process = subprocess.Popen(
            [*argv[:4], "--listen", "127.0.0.1:0", *argv[4:]],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
        )
        self.stderr: list[str] = []
        self._url: str | None = None
        self._found = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for raw in self.process.stderr:
            line = raw.decode(errors="replace")
            self.stderr.append(line)
            if "serving MCP on " in line and self._url is None:
                self._url = line.split("serving MCP on ", 1)[1].strip()
                self._found.set()
        self._found.set()  # it exited

    @property
    def url(self) -> str:
        """The proxy's MCP URL, once it listens.

        Raises:
            AssertionError: it did not announce one within START_TIMEOUT s.
        """
        self._found.wait(START_TIMEOUT)
        if self._url is None:
            raise AssertionError(f"the proxy did not start: {''.join(self.stderr)}")
        return self._url

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT)
        self._reader.join(STOP_TIMEOUT)  # it reads stderr to its end: then close it
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None and not (
                stream is self.process.stderr and self._reader.is_alive()
            ):
                stream.close()  # (never under the reader's feet: it ends at EOF)


async def read_post(stream: anyio.abc.SocketStream, buffer: bytes) -> tuple[bytes, bytes]:
    """The body of the next request on ``stream`` (its head read up to the blank line,
    the body by its ``Content-Length``), for the hand-written HTTP/1.1 test servers;
    ``buffer`` holds what was read ahead, and the rest is returned with the body.

    Raises:
        anyio.EndOfStream, anyio.BrokenResourceError: the client closed the connection.
    """
    while b"\r\n\r\n" not in buffer:
        buffer += await stream.receive()
    head, buffer = buffer.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(buffer) < length:
        buffer += await stream.receive()
    return buffer[:length], buffer[length:]
