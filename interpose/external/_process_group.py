"""What the hook runners need to know about a child process and the group it leads.

Command hooks and process hooks start their programs in a session of their own
(``start_new_session=True``), so each one leads a process group whose id is its pid:
everything it starts lands in that group unless it leaves on purpose (``setsid``), and
one ``killpg`` ends them all.  POSIX keeps a process group's id from being reused while
any member is alive, so the group can still be signalled after its leader was reaped.

``wait_exited`` notices the exit of the program itself.  EOF on its pipes is not enough:
a background child inherits them and keeps them open; and ``process.wait()`` is not
either: on asyncio before Python 3.12 it returns only once every pipe of the process has
closed.  Under trio, ``process.wait()`` watches the process itself and is used as it is;
under asyncio, a pidfd where there is one (Linux >= 5.3), else a poll of the exit code
that asyncio's child watcher records when the process exits, whoever holds its pipes.
"""

from __future__ import annotations

import asyncio
import os
import signal

import anyio
import anyio.abc

__all__ = ["kill_group", "terminate_group", "wait_exited"]

_POSIX = os.name == "posix"
_POLL_FIRST = 0.001  # s: first interval between looks at the exit code, doubling
_POLL_MAX = 0.05  # s: the longest interval (the wait's latency without a pidfd)
# s: how long a pidfd is trusted before the exit code is looked at again; it guards
# against the one case where the pidfd watches the wrong process: the pid was reaped and
# reused between the spawn and pidfd_open
_PIDFD_RECHECK = 1.0
_wait_readable = getattr(anyio, "wait_readable", None)  # anyio >= 4.7


def _on_asyncio() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _pidfd(pid: int) -> int | None:
    """A pidfd for ``pid`` (readable once it exits), or None where there is none."""
    if _wait_readable is None or not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:  # gone already, an old kernel, out of descriptors: poll instead
        return None


async def wait_exited(process: anyio.abc.Process) -> int:
    """Wait until ``process`` itself has exited, even while processes it started hold
    its pipes open; returns its exit code (negative: the signal that killed it).

    It does not reap the process (the backend does) and closes nothing of it.
    """
    code = process.returncode
    if code is not None:
        return code
    if not _on_asyncio():
        # trio's wait() watches the process itself (a pidfd, kqueue, or a waitid thread)
        return await process.wait()
    pidfd = _pidfd(process.pid)
    delay = _POLL_FIRST
    try:
        while (code := process.returncode) is None:
            if pidfd is not None and _wait_readable is not None:
                with anyio.move_on_after(_PIDFD_RECHECK) as scope:
                    await _wait_readable(pidfd)
                if not scope.cancelled_caught:
                    # it has exited: the child watcher records the code a moment later
                    os.close(pidfd)
                    pidfd = None
            else:
                await anyio.sleep(delay)
                delay = min(delay * 2, _POLL_MAX)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return code


def kill_group(process: anyio.abc.Process) -> None:
    """SIGKILL the process group ``process`` leads: itself and whatever it started that
    stayed in the group (just ``process`` where there are no process groups).  A group
    that is gone already is not an error."""
    _signal_group(process, "SIGKILL")


def terminate_group(process: anyio.abc.Process) -> None:
    """SIGTERM the process group ``process`` leads, as ``kill_group`` does SIGKILL."""
    _signal_group(process, "SIGTERM")


def _signal_group(process: anyio.abc.Process, name: str) -> None:
    if _POSIX:
        try:
            os.killpg(process.pid, getattr(signal, name))
        except (ProcessLookupError, PermissionError):
            pass  # no member is left, or none that may be signalled
        return
    if process.returncode is None:  # pragma: no cover - Windows: no process groups
        try:
            process.kill() if name == "SIGKILL" else process.terminate()
        except ProcessLookupError:
            pass
