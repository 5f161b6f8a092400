"""The bubblewrap command line of a ``Plan``: a pure function of its arguments.

Mount order matters (a later mount shadows an earlier one): the read-only root, a new
``/dev`` and ``/proc``, a private ``/tmp``, what of ``/tmp`` is shown read-only,
the writable roots, the read-only paths inside them, then the hidden paths and the
proxy's socket directory last.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from .plan import Plan

__all__ = ["PROXY_DIR", "PROXY_PORT", "Inner", "bwrap_argv", "sandbox_env"]

#: where the proxy's unix socket directory appears inside the sandbox
PROXY_DIR = "/tmp/.interpose-proxy"
#: the loopback port, inside the sandbox, that the bridge forwards to the proxy
PROXY_PORT = 3128
_BRIDGE = str(Path(__file__).with_name("bridge.py"))
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@dataclasses.dataclass(frozen=True)
class Inner:
    """What runs inside bubblewrap before the command.

    Attributes:
        proxy_dir: the host directory holding the proxy's socket ``proxy.sock`` (None:
            no proxy); it is bound at ``PROXY_DIR`` and a bridge forwards
            ``127.0.0.1:PROXY_PORT`` inside the sandbox to it.
        python: the interpreter that runs the bridge.
        prlimit: util-linux ``prlimit``, which sets the memory and process rlimits
            inside the sandbox's user namespace (None: do not set them).
        nproc: set ``RLIMIT_NPROC`` (pointless as root: the kernel ignores it for uid
            0, and the runner limits processes with a pids cgroup instead).
    """

    proxy_dir: str | None = None
    python: str = sys.executable
    prlimit: str | None = "prlimit"
    nproc: bool = True


def bwrap_argv(
    plan: Plan, command: Sequence[str], *, bwrap: str = "bwrap", inner: Inner = Inner()
) -> list[str]:
    """The argv that runs ``command`` (an argv) in the sandbox ``plan`` describes."""
    argv = [bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL"]
    argv += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in plan.readable:
        argv += ["--ro-bind", path, path]
    for path in plan.writable:
        argv += ["--bind", path, path]
    for path in plan.read_only:
        argv += ["--ro-bind", path, path]
    for path in plan.hidden_dirs:
        argv += ["--tmpfs", path, "--remount-ro", path]
    for path in plan.hidden_files:
        argv += ["--ro-bind", "/dev/null", path]
    if inner.proxy_dir is not None:
        argv += ["--ro-bind", inner.proxy_dir, PROXY_DIR]
    argv += ["--chdir", plan.cwd, "--"]
    if inner.proxy_dir is not None:
        sock = f"{PROXY_DIR}/proxy.sock"
        argv += [inner.python, "-I", "-S", _BRIDGE, sock, str(PROXY_PORT), "--"]
    rlimits = [f"--as={plan.limits.memory}"] if plan.limits.memory else []
    if plan.limits.processes and inner.nproc:
        rlimits.append(f"--nproc={plan.limits.processes}")
    if inner.prlimit is not None and rlimits:
        argv += [inner.prlimit, *rlimits, "--"]
    argv += command
    return argv


def sandbox_env(plan: Plan, env: Mapping[str, str], *, proxy: bool) -> dict[str, str]:
    """The environment of the sandboxed command: ``env`` with ``HOME`` and ``TMPDIR``
    set, and the proxy variables pointing at the bridge (``NO_PROXY`` removed, so that
    ``localhost`` goes through the proxy too) or removed when there is no proxy."""
    out = {k: v for k, v in env.items() if k.upper() not in ("NO_PROXY", *_PROXY_VARS)}
    out["HOME"] = plan.home
    out["TMPDIR"] = "/tmp"
    if proxy:
        url = f"http://127.0.0.1:{PROXY_PORT}"
        out.update(dict.fromkeys(_PROXY_VARS, url))
    return out
