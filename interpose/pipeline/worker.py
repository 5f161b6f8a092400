"""A thread that runs one sync handler's calls, one at a time, each waited for at most a
timeout (for the sync handlers of shadow registrations: see ``shadow``).

Python cannot interrupt a running function.  A call that overruns its timeout goes on in
the worker's thread until it returns, and its result is dropped; the caller got a
``TimeoutError`` at the deadline.  While it runs, the next calls are not run at all: they
get a ``TimeoutError`` at once, saying so.  So one handler never has more than one
thread, whatever it does (a handler that never returns holds one thread, not one per
call), and its calls never overlap: it runs one call at a time, as it would inline.

The thread is a daemon (a handler that never returns does not hold up the interpreter's
exit), started on the first call and ended after ``IDLE`` seconds without one.  The call
runs in a copy of the caller's context (``contextvars``), so the current span and the
like are what the caller sees.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["IDLE", "Worker"]

#: seconds without a call after which a worker's thread ends (it starts again on demand)
IDLE = 30.0


class _Job:
    __slots__ = ("args", "context", "done", "error", "fn", "value")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.fn = fn
        self.args = args
        self.context = contextvars.copy_context()
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class Worker:
    """The thread of one handler.

    Args:
        name: the thread's name (for debuggers and ``threading.enumerate()``).
    """

    __slots__ = ("_free", "_jobs", "_lock", "_thread", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        # held from a call's start until its run returns: released by the worker thread
        self._free = threading.Lock()
        self._lock = threading.Lock()  # guards _thread against the thread ending
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        state = "running a call" if self._free.locked() else "idle"
        return f"<Worker {self.name!r} {state}>"

    @property
    def busy(self) -> bool:
        """A call is running (maybe past its timeout)."""
        return self._free.locked()

    def call(self, timeout: float, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)`` in the worker's thread; waits for it at most ``timeout`` seconds.

        Returns:
            What ``fn`` returned.

        Raises:
            TimeoutError: ``fn`` did not return within ``timeout`` (it goes on in the
                thread), or the run of an earlier call has not returned yet (this call
                did not run).
            BaseException: whatever ``fn`` raised.
        """
        if not self._free.acquire(blocking=False):
            raise TimeoutError(
                f"not run: its run for an earlier call has not returned (timeout {timeout}s)"
            )
        job = _Job(fn, args)
        with self._lock:
            self._jobs.put(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
                self._thread.start()
        if not job.done.wait(timeout):
            raise TimeoutError()
        if job.error is not None:
            raise job.error
        return job.value

    def _serve(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=IDLE)
            except queue.Empty:
                with self._lock:
                    if self._jobs.empty():  # nothing came in meanwhile: end
                        self._thread = None
                        return
                continue
            try:
                job.value = job.context.run(job.fn, *job.args)
            except BaseException as exc:  # handed to the caller, who raises it
                job.error = exc
            finally:
                # free before done: the caller's next call must find the worker free
                self._free.release()
                job.done.set()
