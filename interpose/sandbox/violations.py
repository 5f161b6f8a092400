"""What the sandbox refused, as far as it can tell.

The proxy knows each connection it refused.  File system refusals are not reported by
the kernel to anyone but the program, so they are read from the command's stderr: the
messages programs print for a write to the read-only file system (``EROFS``) and for a
hidden path.  A program that hides its errors hides its violations too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal, TypeAlias

import msgspec

from .plan import Plan

__all__ = ["Violation", "ViolationKind", "describe", "from_stderr"]

ViolationKind: TypeAlias = Literal["write", "read", "network", "limit"]

# a path in what programs print: 'quoted', "quoted", or up to a colon or the line's end
_PATH = "['\"\u2018`]?(?P<path>[/~][^'\"\u2019:\n]*)['\"\u2019]?"
_PATH2 = _PATH.replace("<path>", "<path2>")
_PATH3 = _PATH.replace("<path>", "<path3>")
# "PATH: Read-only file system" (coreutils, bash, git), "...: PATH" (Python),
# "EROFS: read-only file system, open 'PATH'" (node)
_EROFS = re.compile(
    _PATH
    + r":\s*Read-only file system|Read-only file system:\s*"
    + _PATH2
    + r"|read-only file system, \w+ "
    + _PATH3,
    re.IGNORECASE,
)
_MISSING = re.compile(
    _PATH
    + r":\s*No such file or directory|No such file or directory:\s*"
    + _PATH2
    + r"|no such file or directory, \w+ "
    + _PATH3,
    re.IGNORECASE,
)
_LIMIT = re.compile(
    r"fork: (?:retry: )?Resource temporarily unavailable|Cannot allocate memory|MemoryError"
)


class Violation(msgspec.Struct, frozen=True, kw_only=True):
    """One thing the sandbox refused.

    Attributes:
        kind: ``write`` (the read-only file system), ``read`` (a hidden path),
            ``network`` (a connection the proxy refused), ``limit`` (a process or
            memory limit was hit).
        target: the path or ``host:port``.
        detail: one sentence a model can read (``write to ~/.bashrc refused by the
            sandbox``).
    """

    kind: ViolationKind
    target: str = ""
    detail: str = ""


def from_stderr(stderr: str, plan: Plan) -> list[Violation]:
    """The violations the command's error output shows, each target once, in order:
    writes outside the writable roots, reads of hidden paths, exhausted limits."""
    found: dict[tuple[str, str], Violation] = {}
    for line in stderr.splitlines()[-2000:]:
        erofs = _EROFS.search(line)
        if erofs is not None:
            path = _absolute(_group(erofs), plan)
            if not plan.is_writable(path):
                found.setdefault(("write", path), _violation("write", path, plan))
            continue
        missing = _MISSING.search(line)
        path = _absolute(_group(missing), plan) if missing is not None else ""
        if path and _is_hidden(path, plan):
            found.setdefault(("read", path), _violation("read", path, plan))
            continue
        if _LIMIT.search(line):
            found.setdefault(
                ("limit", ""),
                Violation(kind="limit", detail="a process or memory limit of the sandbox was hit"),
            )
    return list(found.values())


def describe(violations: Iterable[Violation]) -> str:
    """One line per violation, for the tool result a model reads."""
    return "\n".join(f"[sandbox] {v.detail}" for v in violations)


def _violation(kind: ViolationKind, path: str, plan: Plan) -> Violation:
    shown = "~" + path[len(plan.home) :] if path.startswith(plan.home + "/") else path
    if kind == "write":
        detail = f"write to {shown} refused by the sandbox (read-only outside the writable roots)"
    else:
        detail = f"read of {shown} refused by the sandbox (a hidden path)"
    return Violation(kind=kind, target=path, detail=detail)


def _group(match: re.Match[str]) -> str:
    return match.group("path") or match.group("path2") or match.group("path3")


def _absolute(path: str, plan: Plan) -> str:
    return plan.home + path[1:] if path.startswith("~") else path.rstrip("/") or "/"


def _is_hidden(path: str, plan: Plan) -> bool:
    return any(path == h or path.startswith(h + "/") for h in plan.hidden())
