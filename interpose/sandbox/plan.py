"""A policy resolved against one working directory and home: real, existing paths.

``resolve`` touches the file system (it expands ``~``, resolves symlinks, skips what
does not exist, searches the writable roots for sensitive files); the argument builders
that read a ``Plan`` do not.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from .policy import Limits, NetworkMode, SandboxPolicy

__all__ = ["Plan", "resolve"]

# never searched for sensitive files: large, and their contents are not the user's secrets
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox"})

# The Python environment running interpose, and interpose itself (the bridge is in it):
# shown read-only even when they lie under ``/tmp`` (a checkout and its virtualenv
# there), since the proxy's bridge runs on them inside the sandbox, and so may the tools
# of the same environment (a Python MCP server installed beside interpose).
_RUNTIME = (sys.prefix, sys.exec_prefix, sys.base_prefix, str(Path(__file__).resolve().parents[1]))


@dataclasses.dataclass(frozen=True)
class Plan:
    """A ``SandboxPolicy`` made concrete for one run (absolute, existing paths).

    Attributes:
        cwd: the working directory.
        home: the home the command sees (``$HOME``).
        writable: writable directories (and files).
        readable: directories under ``/tmp`` shown read-only (the home among them when
            it lies there).
        hidden_dirs: directories replaced by an empty tmpfs.
        hidden_files: files replaced by an empty read-only file.
        read_only: paths inside writable roots bound read-only again.
        network: the network mode.
        domains: the proxy's allow-list.
        limits: the limits.
    """

    cwd: str
    home: str
    writable: tuple[str, ...]
    readable: tuple[str, ...]
    hidden_dirs: tuple[str, ...]
    hidden_files: tuple[str, ...]
    read_only: tuple[str, ...]
    network: NetworkMode
    domains: tuple[str, ...]
    limits: Limits

    def hidden(self) -> tuple[str, ...]:
        """Every hidden path, directories first."""
        return self.hidden_dirs + self.hidden_files

    def is_writable(self, path: str) -> bool:
        """Whether ``path`` (absolute) lies in a writable root and is not kept read-only."""
        inside = any(_within(path, root) for root in self.writable)
        return inside and not any(_within(path, kept) for kept in self.read_only)


def resolve(policy: SandboxPolicy, cwd: str | os.PathLike[str], home: str) -> Plan:
    """The plan of ``policy`` for a command run in ``cwd`` with ``$HOME`` = ``home``.

    Raises:
        ValueError: ``cwd`` is not a directory.
    """
    base = Path(cwd).resolve()
    if not base.is_dir():
        raise ValueError(f"the working directory {cwd} is not a directory")
    writable = _existing(base, home, policy.writable)
    shown = (*policy.readable, "~", *_RUNTIME)
    readable = [p for p in _existing(base, home, shown) if _within(p, "/tmp")]
    hidden = set(_existing(base, home, policy.hidden))
    if policy.hide_sensitive:
        for root in writable:
            hidden.update(_sensitive_under(Path(root), home, policy.scan_depth))
    read_only = [
        str(Path(root) / rel)
        for root in writable
        for rel in policy.read_only
        if not os.path.isabs(rel) and os.path.lexists(Path(root) / rel)
    ]
    ordered: list[str] = []
    for path in sorted(hidden):  # a path under a hidden directory is hidden with it
        if not any(_within(path, outer) for outer in ordered):
            ordered.append(path)
    return Plan(
        cwd=str(base),
        home=home,
        writable=tuple(writable),
        readable=tuple(readable),
        hidden_dirs=tuple(p for p in ordered if os.path.isdir(p)),
        hidden_files=tuple(p for p in ordered if not os.path.isdir(p)),
        read_only=tuple(read_only),
        network=policy.network,
        domains=policy.domains,
        limits=policy.limits,
    )


def _existing(base: Path, home: str, paths: tuple[str, ...]) -> list[str]:
    """``paths`` made absolute (``~`` is ``home``, relative ones are under ``base``),
    symlinks resolved, missing ones left out, each once, in order."""
    found: list[str] = []
    for text in paths:
        if text == "~" or text.startswith("~/"):
            text = home + text[1:]
        path = (base / text).resolve()
        if path.exists() and str(path) not in found:
            found.append(str(path))
    return found


def _sensitive_under(root: Path, home: str, depth: int) -> Iterator[str]:
    """Files and directories under ``root`` (``depth`` levels) the path guard calls
    sensitive to read (``.env``, private keys, credential stores)."""
    from ..middleware.builtins.security_audit.matching import match_sensitive

    level = [root]
    for _ in range(depth):
        below: list[Path] = []
        for directory in level:
            try:
                entries = list(os.scandir(directory))
            except OSError:
                continue
            for entry in entries:
                if match_sensitive(entry.path, home=home) is not None:
                    yield os.path.realpath(entry.path)
                elif entry.is_dir(follow_symlinks=False) and entry.name not in _SKIP_DIRS:
                    below.append(Path(entry.path))
        level = below


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")
