"""The process limit as root: a pids cgroup made for one run.

The kernel ignores ``RLIMIT_NPROC`` for uid 0, so a sandbox started by root gets a
cgroup of its own with ``pids.max`` set; the command line enters it before it becomes
bubblewrap (``prefix``), so nothing the command starts is outside it.  A cgroup whose
last processes are still exiting when the run ends is removed later (``sweep``: at the
next run, and at exit), so that no run waits for the kernel.
"""

from __future__ import annotations

import atexit
import os
import secrets
import signal
import time
from pathlib import Path

__all__ = ["PidsCgroup", "sweep"]

_ENTER = 'echo $$ > "$0" && exec "$@"'  # sh: move itself into the cgroup, then exec


class PidsCgroup:
    """A pids cgroup for one run, under ``base`` (``probe().pids_cgroup``)."""

    def __init__(self, base: str, limit: int) -> None:
        self.path = Path(base) / f"interpose-sandbox-{secrets.token_hex(6)}"
        self.path.mkdir()
        try:
            (self.path / "pids.max").write_text(str(limit))
        except OSError:
            self.path.rmdir()
            raise

    def prefix(self) -> list[str]:
        """The argv prefix that runs the rest of the command line inside the cgroup."""
        return ["/bin/sh", "-c", _ENTER, str(self.path / "cgroup.procs")]

    def hit(self) -> bool:
        """Whether a fork was refused by the limit (``pids.events`` counts them)."""
        try:
            text = (self.path / "pids.events").read_text()
        except OSError:
            return False
        return any(line.split()[-1] != "0" for line in text.splitlines() if line.strip())

    def close(self) -> None:
        """Kill what is left in the cgroup and remove it; when the kernel has not let go
        of its last processes yet (the sandbox's PID namespace is still being torn
        down), it is removed later, by ``sweep`` (at the next run, and at exit), so
        that no run waits for it."""
        _kill_all(self.path)
        if not _remove(self.path):
            _PENDING.add(self.path)


# cgroups whose last processes were still exiting when their run ended
_PENDING: set[Path] = set()


def sweep() -> None:
    """Remove the cgroups of finished runs that could not be removed at once."""
    for path in list(_PENDING):
        _kill_all(path)
        if _remove(path):
            _PENDING.discard(path)


@atexit.register
def _sweep_at_exit() -> None:
    for _ in range(100):  # about a second
        sweep()
        if not _PENDING:
            return
        time.sleep(0.01)


def _remove(path: Path) -> bool:
    try:
        path.rmdir()
    except FileNotFoundError:
        return True
    except OSError:  # EBUSY: processes are still in it
        return False
    return True


def _kill_all(path: Path) -> None:
    try:
        pids = (path / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in pids:
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
