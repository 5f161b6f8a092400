"""Path judgements of the shell model: what deleting or writing a resolved path
would reach (the root, the home directory, a system directory, a credential store, a
device, a persistence file), what a glob or a part known only at run time could sweep
up, and how paths and words are shown in block reasons."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from ..security_audit import (
    PERSISTENCE_PATHS,
    SYSTEM_FILES,
    climbs_to_root,
    match_sensitive_store,
    possible_targets,
)
from ..shell import SUBST, Word
from .model import HOME
from .options import GLOB_CHARS, derived, word_set

SYSTEM_DIRS = word_set(
    "bin boot dev etc lib lib32 lib64 libx32 opt proc root sbin srv sys usr var snap nix "
    "system library applications private cores"
)
_HOME_ROOTS = frozenset({"home", "users"})
_APP_ROOTS = frozenset({"opt", "srv"})
"""System directories whose children each belong to one application (``/opt/<app>``,
``/srv/<site>``): removing a child is an uninstall, not damage to the system.  The
directory itself stays critical, as do the children of every other system directory
(``/usr/local``, ``/usr/lib``, ``/etc/ssl``, ``/var/lib``); deeper paths
(``/var/lib/<app>``, ``/usr/local/<app>``) are not critical."""
TEMP_DIRS = frozenset({"/tmp", "/var/tmp", "/dev/shm", "/private/tmp"})
_SAFE_DEVICES = word_set(
    "/dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/stdin /dev/stdout "
    "/dev/stderr /dev/tty /dev/console /dev/ptmx"
)
_SAFE_DEVICE_DIRS = ("/dev/fd/", "/dev/pts/", "/dev/shm/", "/dev/mqueue/")
NET_DEVICES = ("/dev/tcp/", "/dev/udp/")
_CHAR_DEVICES = re.compile(
    r"^/dev/(?:dsp\d*|audio\d*|snd/[^/]+|fb\d+|lp\d+|usb/lp\d+"
    r"|tty(?:S|USB|ACM|AMA)\d+)$"
)
"""Character devices that hold no filesystem -- sound, framebuffer, printer and serial
ports: writing one (``dd if=beep.raw of=/dev/dsp``, flashing a board over
``/dev/ttyUSB0``) destroys no data.  Block devices (``sd*``, ``nvme*``, ``mmcblk*``,
``loop*``, ``dm-*``, ``mapper/*``, ``disk/by-*``, ``mtd*``...) and every name not listed
here stay devices: an unknown ``/dev`` name is refused rather than guessed harmless."""


def system_file(path: str) -> bool:
    """Whether ``path`` (resolved) is, or may be, one of the system's account and sudo
    files (:data:`..security_audit.SYSTEM_FILES`, the list both guards share):
    ``../../etc/group`` may be ``/etc/group`` (:func:`..security_audit.possible_targets`)."""
    return any(SYSTEM_FILES.match(p) for p in possible_targets(path.lower()))


def persistence(path: str) -> bool:
    """Whether writing ``path`` (resolved) plants code that runs later
    (:data:`..security_audit.PERSISTENCE_PATHS`, shared with the file tools' guard)."""
    return any(PERSISTENCE_PATHS.match(p) for p in possible_targets(path.lower()))


def critical(path: str) -> str | None:
    """Describe ``path`` if deleting it (recursively) would wreck the machine or the user."""
    if path == "/":
        return "the filesystem root"
    if path == HOME:
        return "the home directory"
    if path.startswith("/"):
        parts = path[1:].lower().split("/")
        if len(parts) == 1:
            top = parts[0]
            if top in _HOME_ROOTS:
                return "the directory holding all home directories"
            if top == "root":
                return "root's home directory"
            return "a system directory" if top in SYSTEM_DIRS else "a top-level directory"
        if len(parts) == 2:
            if parts[0] == "root" and (store := _home_store(parts)) is not None:
                return store  # /root/.ssh: say what it is, not where it lies
            if parts[0] in _HOME_ROOTS:
                return "a home directory"
            if parts[0] in SYSTEM_DIRS and parts[0] not in _APP_ROOTS:
                return "a system directory"
        return _home_store(parts)
    if path == ".":
        return "the working directory"
    if all(part == ".." for part in path.split("/")):
        return "a parent of the working directory"
    return _climbed(path)


_DEEP_CLIMB = 3
"""Leading ``..`` from which a climb is taken to reach ``/``: a working directory is
rarely deeper than ``/home/user/project``, so ``../../../etc`` is ``/etc``.  Fewer are
read as what they usually are, siblings (``../../lib`` in a monorepo)."""


def _climbed(path: str) -> str | None:
    """Describe what a relative ``path`` climbing at least :data:`_DEEP_CLIMB` levels
    above the working directory reaches when those reach ``/`` (``/etc``, ``/home``, a
    home directory), or None.  A top-level name no system uses (``/build``) is none."""
    parts = path.split("/")
    levels = next((k for k, part in enumerate(parts) if part != ".."), len(parts))
    rooted = climbs_to_root(path)
    if levels < _DEEP_CLIMB or rooted is None:
        return None
    why = critical(rooted)
    if why is None or why == "a top-level directory":
        return None
    return f"{why} ({rooted!r} when the working directory is {levels} levels deep)"


_HOME_WHOLES = frozenset({(".config",), (".local",), (".local", "share")})
"""Home directories whose children many programs keep their settings and data in: each
child may go (``~/.config/nvim``), the whole may not."""


def _home_store(parts: Sequence[str]) -> str | None:
    """Describe a home directory's credential or key store, or its settings as a whole
    (``parts``: a lowercase absolute path split at ``/``)."""
    if parts[0] in _HOME_ROOTS and len(parts) > 2:
        rest = [p for p in parts[2:] if p]
    elif parts[0] == "root" and len(parts) > 1:
        rest = [p for p in parts[1:] if p]
    else:
        return None
    if tuple(rest) in _HOME_WHOLES:
        return "a home directory holding every program's settings or data"
    found = match_sensitive_store(HOME + "/" + "/".join(rest), home=HOME)
    return None if found is None else f"a credential or key store ({found.description})"


def keyed_values(args: Sequence[Word], keys: Sequence[str]) -> list[Word]:
    """Values of ``dd``-style ``key=value`` operands for any of ``keys``."""
    out: list[Word] = []
    for word in args:
        key, eq, value = word.text.partition("=")
        if eq and key in keys:
            out.append(derived(value))
    return out


def cwd_like(path: str) -> bool:
    return path == "." or all(part == ".." for part in path.split("/"))


def glob_risk(path: str, *, recursive: bool, cwd_counts: bool) -> str | None:
    """What a glob in ``path`` could sweep up, if that is dangerous (extended globs, on
    with ``shopt -s extglob`` or ``bash -O extglob``: see :func:`_extglob_risk`)."""
    if "(" in path and (group := _EXTGLOB.search(path)) is not None:
        return _extglob_risk(path, group, recursive=recursive, cwd_counts=cwd_counts)
    parts = path.split("/")
    k = next((k for k, part in enumerate(parts) if GLOB_CHARS.search(part)), -1)
    if k < 0:
        return None
    part = parts[k]
    prefix = "/".join(parts[:k]) or ("/" if path.startswith("/") else ".")
    # "*/__pycache__", "~/*/node_modules": a literal name after the wildcard bounds it to
    # entries of that name, not everything the wildcard matches ("*/..", "*/" do not)
    named = any(p not in ("", ".", "..") and not GLOB_CHARS.search(p) for p in parts[k + 1 :])
    if not named and not part.strip("*?.") and ("*" in part or "?" in part):  # "*", ".*"...
        if cwd_like(prefix):
            if recursive and cwd_counts:
                return f"everything in {critical(prefix)}"
        elif prefix not in TEMP_DIRS and (why := critical(prefix)) is not None:
            return f"everything in {why}"
    if recursive:
        why = critical(posixpath.join(prefix, "x"))
        if why is not None and not cwd_like(prefix):
            return f"a pattern that matches {why}"
    return None


def host_path(path: str, mounts: Sequence[tuple[str, str]]) -> str:
    """``path`` inside a container, as the host path a bind mount shows there."""
    for target, source in mounts:
        if path == target or path.startswith(target.rstrip("/") + "/"):
            rest = path[len(target) :].lstrip("/")
            return posixpath.join(source, rest) if rest else source
    return path


_EXTGLOB = re.compile(r"([!*+?@])\(((?:[^()]|\([^()]*\))*)\)")
_ALTERNATIVES = 16  # alternatives of one extended glob group judged one by one


def _extglob_risk(
    path: str, group: re.Match[str], *, recursive: bool, cwd_counts: bool
) -> str | None:
    """The risk of ``path`` whose first extended glob is ``group``: ``!(x)`` (all but x)
    matches as ``*``; ``@(a|b)``, ``?(a|b)``, ``*(a|b)``, ``+(a|b)`` as each of a, b (and
    nothing, for ``?``/``*``); the groups after it as ``*``."""
    kind, body = group.groups()
    alternatives = ["*"] if kind == "!" else body.split("|")[:_ALTERNATIVES]
    if kind in "?*":
        alternatives.append("")
    rest = _EXTGLOB.sub("*", path[group.end() :])
    for alternative in alternatives:
        candidate = path[: group.start()] + alternative + rest
        if GLOB_CHARS.search(candidate):
            why = glob_risk(candidate, recursive=recursive, cwd_counts=cwd_counts)
        elif recursive and (cwd_counts or not cwd_like(candidate)):
            why = critical(posixpath.normpath(candidate))
        else:
            why = None
        if why is not None:
            return why
    return None


_UNKNOWN_PART = re.compile(  # ${...}, $NAME, $1, $(...) kept as source text, `...`
    r"\$\{[^{}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]|"
    + SUBST
    + r"|\$\((?:[^()]|\([^()]*\))*\)|`[^`]*`"
)


_SYSTEM_NAMES = SYSTEM_DIRS | _HOME_ROOTS


def unknown_risk(path: str) -> str | None:
    """What a recursive delete of ``path`` could reach when part of it is known only at
    run time (``$X``, ``$(cmd)``): None when the known part bounds it.

    Each unknown part is read as ``*`` (any text, the empty text included).  A path that
    *starts* unknown (``$X``, ``"$(cmd)"``, ``$X/*``) could be anything and is refused,
    unless a literal directory name follows and the last name is no system directory
    (``$BUILD/out``, ``$ROOT/build/*.pyc``, ``$(git rev-parse --show-toplevel)/dist``:
    whatever the unknown part is, only what is in or named ``out``/``build`` goes).  A
    known prefix decides the rest: ``./build/$X``, ``node_modules/$P``, ``/tmp/$X`` stay
    below it and pass; ``/$X`` and ``$HOME/$X`` can be ``/etc`` or the
    home directory itself and are refused.
    """
    if "$" not in path and SUBST not in path:
        return None
    pattern = _UNKNOWN_PART.sub("*", path)
    if pattern == path:  # a lone "$" is a literal dollar sign
        return None
    if pattern.startswith("*"):
        parts = pattern.rstrip("/").split("/")[1:]
        named = any(p not in ("", ".", "..") and not GLOB_CHARS.search(p) for p in parts)
        if named and parts[-1] not in (".", "..") and parts[-1].lower() not in _SYSTEM_NAMES:
            return None  # below a literal name: $ROOT/build/*.pyc, $X/out
        return "a target known only at run time"
    risk = glob_risk(pattern, recursive=True, cwd_counts=True)
    return None if risk is None else f"a target known only at run time ({risk})"


def is_device(path: str) -> bool:
    return (
        path.startswith("/dev/")
        and len(path) > 5
        and path not in _SAFE_DEVICES
        and not path.startswith(_SAFE_DEVICE_DIRS)
        and not path.startswith(NET_DEVICES)
        and _CHAR_DEVICES.match(path) is None
    )


def display(path: str) -> str:
    if path == HOME or path.startswith(HOME + "/"):
        return "~" + path[len(HOME) :]
    return path


def show(text: str) -> str:
    return text.replace(SUBST, "$(...)")


def words_snippet(words: Sequence[Word], limit: int = 80) -> str:
    text = " ".join(show(w.text) for w in words)
    return text if len(text) <= limit else text[: limit - 3] + "..."
