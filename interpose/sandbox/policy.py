"""What a sandbox allows: ``SandboxPolicy`` and its ``Limits``.

A policy says *what* is contained, never *how*: the same struct is resolved into a
``Plan`` (``plan.py``, real paths) that the bubblewrap argument builder (``bwrap.py``)
reads, and that a ``sandbox-exec`` profile builder for macOS could read later.
"""

from __future__ import annotations

from typing import Literal, TypeAlias

import msgspec

__all__ = ["DEFAULT_HIDDEN", "Limits", "NetworkMode", "SandboxPolicy"]

NetworkMode: TypeAlias = Literal["none", "loopback", "domains"]

#: Hidden by default (``~`` is the home the command sees): the credential stores of the
#: path guard.  Files under the writable roots that the path guard calls sensitive
#: (``.env``...) are hidden too, found when the policy is resolved.
DEFAULT_HIDDEN: tuple[str, ...] = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.oci",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker",
    "~/.password-store",
    "~/.netrc",
    "~/.git-credentials",
    "~/.pgpass",
    "~/.pypirc",
    "~/.npmrc",
    "~/.vault-token",
    "~/.boto",
    "~/.s3cfg",
    "~/.claude/.credentials.json",
    "~/.codex/auth.json",
    "~/.config/gh",
)


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    """Resource limits of one sandboxed command (None: no limit).

    Attributes:
        time: seconds the command may run; then the whole sandbox is killed.
        memory: bytes of address space per process (``RLIMIT_AS``).
        processes: processes and threads alive at once in the sandbox (a pids cgroup
            when running as root, ``RLIMIT_NPROC`` in the sandbox's user namespace
            otherwise).
        output: bytes of stdout and of stderr kept; the rest is dropped (counted).
    """

    time: float | None = 600.0
    memory: int | None = None
    processes: int | None = 512
    output: int = 1 << 20

    def __post_init__(self) -> None:
        for name in ("time", "memory", "processes"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"Limits.{name} must be > 0 or None, got {value!r}")
        if self.output < 1024:
            raise ValueError(f"Limits.output must be >= 1024 bytes, got {self.output!r}")


class SandboxPolicy(msgspec.Struct, frozen=True, kw_only=True):
    """What a sandboxed command may touch.

    The root file system is read-only; ``writable`` roots (relative ones: to the
    command's working directory, the project) are writable; ``hidden`` paths are replaced
    by an empty directory or an empty file; ``/tmp`` is a private, empty tmpfs.  The
    command runs in its own PID, IPC, UTS, user and network namespaces, without
    capabilities and with ``no_new_privs``.

    Attributes:
        writable: writable roots; ``"."`` is the working directory.
        readable: paths under ``/tmp`` to show read-only all the same (the home, the
            Python environment running interpose and interpose itself are shown when
            they lie there); the rest of the root is read-only already.
        hidden: paths to hide (``~`` is the home); missing ones are skipped.
        hide_sensitive: also hide the files under the writable roots that the path
            guard calls sensitive (``.env``, keys...), searched ``scan_depth`` levels down.
        scan_depth: how deep that search goes.
        read_only: paths inside the writable roots kept read-only (``.git/hooks``...).
        network: ``none`` (its own empty network namespace), ``loopback`` (and the
            host's ``localhost`` through the filtering proxy), ``domains`` (and the
            ``domains`` through the filtering proxy).
        domains: ``host``, ``host:port`` or ``*.suffix`` entries the proxy lets through.
        limits: time, memory and process limits.
        required: refuse to run a command when the sandbox cannot be applied here
            (``SandboxUnavailable``); False: run it without the sandbox, with a warning.
    """

    writable: tuple[str, ...] = (".",)
    readable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = DEFAULT_HIDDEN
    hide_sensitive: bool = True
    scan_depth: int = 3
    read_only: tuple[str, ...] = (".git/hooks", ".git/config")
    network: NetworkMode = "none"
    domains: tuple[str, ...] = ()
    limits: Limits = msgspec.field(default_factory=Limits)
    required: bool = True

    def __post_init__(self) -> None:
        if self.network not in ("none", "loopback", "domains"):
            raise ValueError(f"network must be none, loopback or domains, got {self.network!r}")
        if self.network == "domains" and not self.domains:
            raise ValueError('network="domains" needs at least one entry in domains')
        if self.network != "domains" and self.domains:
            raise ValueError(f'domains are used only with network="domains", not {self.network!r}')
        if self.scan_depth < 0:
            raise ValueError(f"scan_depth must be >= 0, got {self.scan_depth!r}")
        for domain in self.domains:
            if not domain or any(c in domain for c in "/ @"):
                raise ValueError(f"a domain is host, host:port or *.suffix, got {domain!r}")
