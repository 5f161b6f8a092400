"""The path normalizer: the one spelling every rule and allow entry is matched against
(``~``, ``~user``, ``$HOME``, backslashes, ``file://``, ``//``, ``/proc/<pid>/root`` and
``/cwd``, ``.`` and ``..``; then lower case)."""

from __future__ import annotations

import os
import posixpath
import re

__all__ = ["default_home", "normalize_path", "resolve_path"]

_HOME_VAR = re.compile(r"\$\{HOME\}|\$HOME(?![A-Za-z0-9_])")
_TILDE_USER = re.compile(r"~([A-Za-z_][A-Za-z0-9_.-]*)?(?=/|$)")
_SLASHES = re.compile(r"/{2,}")
_PROC_ROOT = re.compile(r"^/proc/(?:self|thread-self|\d+)/root(?=/|$)")
_PROC_CWD = re.compile(r"^/proc/(?:self|thread-self|\d+)/cwd(?:/|$)")


def default_home() -> str:
    return os.path.expanduser("~")


def resolve_path(path: str, *, home: str | None = None) -> str:
    """Lexically normalize ``path`` without changing its case.

    Expands ``~``, ``~user``, ``$HOME`` and ``${HOME}`` (``home`` defaults to the current
    user's home), turns backslashes into ``/``, drops ``file://`` and repeated slashes,
    strips ``/proc/<pid>/root`` and ``/proc/<pid>/cwd`` prefixes and resolves ``.`` and
    ``..`` the way :func:`posixpath.normpath` does (relative paths stay relative).
    """
    p = path.strip().replace("\\", "/")
    if p.startswith("file://"):
        p = p[7:]
    if "$" in p:
        p = _HOME_VAR.sub(lambda _m: home if home is not None else default_home(), p)
    if p.startswith("~"):
        m = _TILDE_USER.match(p)
        if m is not None:
            user = m.group(1)
            if user is None:
                base = home if home is not None else default_home()
            else:
                base = "/root" if user == "root" else f"/home/{user}"
            p = base + p[m.end() :]
    if "//" in p:
        p = _SLASHES.sub("/", p)
    p = _strip_proc(p)  # before normpath: "/proc/1/root/.." is "/", not "/proc/1"
    p = posixpath.normpath(p) if p else "."
    if p.startswith("//"):  # normpath keeps a leading "//" (POSIX); we do not
        p = "/" + p.lstrip("/")
    return _strip_proc(p) if p.startswith("/proc/") else p


def _strip_proc(p: str) -> str:
    """Drop ``/proc/<pid>/root`` (a view of ``/``) and ``/proc/<pid>/cwd`` prefixes."""
    while p.startswith("/proc/"):
        if (m := _PROC_ROOT.match(p)) is not None:
            p = posixpath.normpath("/" + p[m.end() :].lstrip("/"))
        elif (m := _PROC_CWD.match(p)) is not None:
            p = posixpath.normpath(p[m.end() :].lstrip("/") or ".")
        else:
            break
    return p


def normalize_path(path: str, *, home: str | None = None) -> str:
    """:func:`resolve_path`, lower-cased: the form every rule and allow entry matches."""
    return resolve_path(path, home=home).lower()
