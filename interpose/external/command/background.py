"""Where the ``async`` hooks of a Claude Code settings file run: a pipeline service.

``BackgroundHooks`` is added to the pipeline with the file's hooks (``add_service``), so
a file with ``async`` hooks needs ``async with pipe:``.  While the pipeline is entered
it runs each background job in a task group of its own, bounded by the job's timeout
and by ``MAX_RUNNING`` jobs at once; when the pipeline closes it cancels whatever still
runs (each command's process group dies with its job) and waits for them: nothing is
left running.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio
import anyio.abc

__all__ = ["MAX_RUNNING", "BackgroundHooks"]

log = logging.getLogger("interpose.claude_code")

#: How many background jobs of one settings file may run at once.
MAX_RUNNING = 64


class BackgroundHooks:
    """Runs background jobs while its pipeline is entered (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.running = 0
        self._tg: anyio.abc.TaskGroup | None = None
        self._closed: anyio.Event | None = None

    def __repr__(self) -> str:
        return f"<BackgroundHooks {self.name!r} running={self.running}>"

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        self._closed = anyio.Event()
        await tg.start(self._serve)

    async def _serve(self, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        closed = self._closed
        assert closed is not None
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                task_status.started()
                await anyio.sleep_forever()
        finally:
            self._tg = None
            closed.set()

    def spawn(self, job: Callable[[], Awaitable[None]]) -> str | None:
        """Start ``job`` in the background; None when started, else why it was not."""
        if self._tg is None:
            return "the pipeline is not entered (async with pipe)"
        if self.running >= MAX_RUNNING:
            return f"{MAX_RUNNING} background hooks are running already"
        self.running += 1
        self._tg.start_soon(self._run, job)
        return None

    async def _run(self, job: Callable[[], Awaitable[None]]) -> None:
        try:
            await job()
        finally:
            self.running -= 1

    async def aclose(self) -> None:
        tg, closed = self._tg, self._closed
        if tg is not None:
            if self.running:
                log.info("%s: stopping %d background hook(s)", self.name, self.running)
            tg.cancel_scope.cancel()
        if closed is not None:
            await closed.wait()
        self._closed = None
