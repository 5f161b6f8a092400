"""What this machine can apply of a sandbox policy, found once per bubblewrap path.

``probe`` runs bubblewrap once with every namespace the sandbox uses; when that fails
the sandbox cannot run (``Capabilities.problems``).  Limits it cannot apply are notes.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["Capabilities", "pids_cgroup_base", "probe"]

_TRY = ("--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL")


@dataclasses.dataclass(frozen=True)
class Capabilities:
    """What the sandbox can use here.

    Attributes:
        bwrap: the bubblewrap executable (None: not found).
        prlimit: util-linux ``prlimit`` (None: memory and process rlimits not set).
        pids_cgroup: a directory where a pids cgroup can be made per run (root only:
            the kernel does not apply ``RLIMIT_NPROC`` to uid 0).
        problems: why no command can be sandboxed here (empty: it can).
        notes: what of the limits cannot be applied here.
    """

    bwrap: str | None
    prlimit: str | None
    pids_cgroup: str | None
    problems: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def usable(self) -> bool:
        return not self.problems


@functools.cache
def probe(bwrap: str = "bwrap") -> Capabilities:
    """Find bubblewrap (a name on PATH or a path) and check that it can make its
    namespaces here, once per ``bwrap``."""
    prlimit = shutil.which("prlimit")
    cgroup = pids_cgroup_base() if os.geteuid() == 0 else None
    notes = []
    if prlimit is None:
        notes.append("prlimit (util-linux) not found: no memory or process limit")
    if os.geteuid() == 0 and cgroup is None:
        notes.append("running as root without a writable pids cgroup: no process limit")
    if not sys.platform.startswith("linux"):
        problem = f"the sandbox needs Linux (bubblewrap); {sys.platform} is not supported"
        return Capabilities(None, prlimit, cgroup, (problem,), tuple(notes))
    found = shutil.which(bwrap)
    if found is None:
        problem = f"bubblewrap ({bwrap}) is not installed: apt-get install bubblewrap"
        return Capabilities(None, prlimit, cgroup, (problem,), tuple(notes))
    try:
        done = subprocess.run(
            [found, *_TRY, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
        failed = done.returncode != 0
        why = done.stderr.decode(errors="replace").strip() or f"exit status {done.returncode}"
    except (OSError, subprocess.TimeoutExpired) as exc:
        failed, why = True, str(exc)
    if failed:
        problem = f"bubblewrap cannot create its namespaces here (no user namespaces?): {why}"
        return Capabilities(found, prlimit, cgroup, (problem,), tuple(notes))
    return Capabilities(found, prlimit, cgroup, (), tuple(notes))


def pids_cgroup_base() -> str | None:
    """The directory of this process's pids cgroup when a child cgroup can be made in it
    (cgroup v1 ``pids`` hierarchy, or v2 with ``pids`` in ``cgroup.subtree_control``)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _id, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            base = Path("/sys/fs/cgroup/pids") / path.lstrip("/")
        elif controllers == "":
            base = Path("/sys/fs/cgroup") / path.lstrip("/")
            try:
                if "pids" not in (base / "cgroup.subtree_control").read_text().split():
                    continue
            except OSError:
                continue
        else:
            continue
        if (base / "cgroup.procs").is_file() and os.access(base, os.W_OK):
            return str(base)
    return None
