"""The process limit as root: a pids cgroup made for one run.

The kernel ignores ``RLIMIT_NPROC`` for uid 0, so a sandbox started by root gets a
cgroup of its own with ``pids.max`` set; the command line enters it before it becomes
bubblewrap (``prefix``), so nothing the command starts is outside it.
"""

from __future__ import annotations

import os
import secrets
import signal
from pathlib import Path

import anyio

__all__ = ["PidsCgroup"]

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

    async def aclose(self) -> None:
        """Kill what is left in the cgroup (nothing, normally: the sandbox's PID
        namespace ended with it) and remove it once the kernel has let go of it."""
        delay = 0.0005
        for _ in range(40):  # about 2 s in all
            try:
                pids = (self.path / "cgroup.procs").read_text().split()
                for pid in pids:
                    _kill(int(pid))
                if not pids:
                    self.path.rmdir()
                    return
            except FileNotFoundError:
                return
            except OSError:  # EBUSY: the last processes are still being reaped
                pass
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.1)
        # still busy: left for the system (named, so it can be found)


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
