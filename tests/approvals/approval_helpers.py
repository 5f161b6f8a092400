"""What the approval tests share: a real ``redis-server`` (tests/fleet/redis_helpers.py
starts it; missing, it fails the test under CI=true and skips it otherwise), and the
agent processes of agent_worker.py, read line by line with a bound in time."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fleet"))
from redis_helpers import RedisServer, find_redis_server

__all__ = ["LIMIT", "Agent", "RedisServer", "find_redis_server"]

WORKER = Path(__file__).with_name("agent_worker.py")
LIMIT = 30.0  # s: the bound of every wait in these tests


class Agent:
    """One agent process (agent_worker.py) running the calls of ``spec``; its stdout is
    one JSON object a line."""

    def __init__(self, process: anyio.abc.Process) -> None:
        self.process = process
        assert process.stdout is not None
        self._out = BufferedByteReceiveStream(process.stdout)
        self.lines: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, url: str, prefix: str, spec: dict[str, Any]) -> Agent:
        process = await anyio.open_process(
            [sys.executable, str(WORKER), url, prefix, json.dumps(spec)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        return cls(process)

    @property
    def pid(self) -> int:
        return self.process.pid

    async def next(self, seconds: float = LIMIT) -> dict[str, Any]:
        """The next line, within ``seconds``."""
        with anyio.fail_after(seconds):
            raw = await self._out.receive_until(b"\n", 1 << 20)
        line: dict[str, Any] = json.loads(raw)
        self.lines.append(line)
        return line

    async def until(self, key: str, seconds: float = LIMIT) -> dict[str, Any]:
        """The next line that has ``key``."""
        with anyio.fail_after(seconds):
            while True:
                line = await self.next(seconds)
                if key in line:
                    return line

    async def kill(self) -> None:
        """SIGKILL this process (by its pid) and reap it."""
        if self.process.returncode is None:
            os.kill(self.process.pid, signal.SIGKILL)
        with anyio.fail_after(LIMIT):
            await self.process.wait()
        await self.process.aclose()

    async def finish(self) -> int:
        with anyio.fail_after(LIMIT):
            code = await self.process.wait()
        await self.process.aclose()
        return code
