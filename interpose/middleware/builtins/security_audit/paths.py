"""The path normalizer: the one spelling every rule and allow entry is matched against
(``~``, ``~user``, ``$HOME``, backslashes, ``file://``, ``//``, ``/proc/<pid>/root`` and
``/cwd``, ``.`` and ``..``; then lower case), and the other files a normalized path may
name (:func:`possible_targets`: a climb above the working directory, an NTFS stream)."""

from __future__ import annotations

import os
import posixpath
import re

__all__ = ["climbs_to_root", "default_home", "normalize_path", "possible_targets", "resolve_path"]

_HOME_VAR = re.compile(r"\$\{HOME\}|\$HOME(?![A-Za-z0-9_])")
_TILDE_USER = re.compile(r"~([A-Za-z_][A-Za-z0-9_.-]*)?(?=/|$)")
_SLASHES = re.compile(r"/{2,}")
_PROC_TASK = r"^/proc/(?:self|thread-self|(\d+))(?:/task/(?:\d+|self))?"
_PROC_ROOT = re.compile(_PROC_TASK + r"/root(?=/|$)")
_PROC_CWD = re.compile(_PROC_TASK + r"/cwd(?:/|$)")


def default_home() -> str:
    return os.path.expanduser("~")


def resolve_path(path: str, *, home: str | None = None) -> str:
    """Lexically normalize ``path`` without changing its case.

    Expands ``~``, ``~user``, ``$HOME`` and ``${HOME}`` (``home`` defaults to the current
    user's home), turns backslashes into ``/``, drops ``file://`` and repeated slashes,
    strips ``/proc/<pid>/root`` and ``/proc/<pid>/cwd`` prefixes (see :func:`_strip_proc`)
    and resolves ``.`` and ``..`` the way :func:`posixpath.normpath` does (relative paths
    stay relative).
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
    """Drop ``/proc/<pid>/root`` (a view of ``/``) and ``/proc/<pid>/cwd`` prefixes.

    Our own working directory (``/proc/self/cwd``, ``thread-self``) is the one relative
    paths start from: what follows stays relative.  Another process's (``/proc/1/cwd``)
    is unknown and, for a daemon, usually ``/``: what follows is read from ``/``, which
    every rule that would match it relative matches too (``/proc/1/cwd/etc/shadow`` is
    ``/etc/shadow``, ``/proc/1/cwd/.env`` is ``/.env``)."""
    while p.startswith("/proc/"):
        if (m := _PROC_ROOT.match(p)) is not None:
            p = posixpath.normpath("/" + p[m.end() :].lstrip("/"))
        elif (m := _PROC_CWD.match(p)) is not None:
            rest = p[m.end() :].lstrip("/")
            p = posixpath.normpath(("/" + rest) if m.group(1) else (rest or "."))
        else:
            break
    return p


def normalize_path(path: str, *, home: str | None = None) -> str:
    """:func:`resolve_path`, lower-cased: the form every rule and allow entry matches."""
    return resolve_path(path, home=home).lower()


_STREAM = re.compile(r"(?<=[^/:]):[^/]*")
"""An NTFS alternate data stream after a name: ``.env::$data``, ``id_rsa:hidden``,
``.ssh::$index_allocation`` (a directory named through its index stream)."""
_DRIVE = re.compile(r"^[a-z]:(?=/|$)")


def climbs_to_root(normalized: str) -> str | None:
    """The absolute path a relative ``normalized`` path names when it climbs above the
    working directory (``../../etc/shadow``: ``/etc/shadow``), else None.

    The working directory is unknown, and it may be one level below ``/`` (``/app``,
    ``/workspace``): every leading ``..`` can be the one that reaches ``/``, and
    ``/proc/self/cwd/..`` is such a climb too (:func:`resolve_path` strips the prefix).
    """
    if not normalized.startswith("../"):
        return None
    rest = normalized
    while rest.startswith("../"):
        rest = rest[3:]
    return None if rest in ("", "..") else "/" + rest


def possible_targets(normalized: str) -> tuple[str, ...]:
    """``normalized`` and the other files it may name, each to be judged: the path read
    from ``/`` when it climbs above the working directory (:func:`climbs_to_root`) and,
    when a name carries an NTFS stream (``.env::$data``, ``id_rsa:x``), the base file the
    stream belongs to (``.env``, ``id_rsa``)."""
    found = [normalized]
    if ":" in normalized:
        drive = _DRIVE.match(normalized)
        head = drive.group(0) if drive is not None else ""
        base = head + _STREAM.sub("", normalized[len(head) :])
        if base != normalized and base:
            found.append(base)
    for path in tuple(found):
        if (rooted := climbs_to_root(path)) is not None:
            found.append(rooted)
    return tuple(found)
