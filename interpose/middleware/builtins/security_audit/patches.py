"""The files a patch touches: the ``*** Begin Patch`` envelope and unified/git diffs."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["patch_paths"]

_ENVELOPE_HEADER = re.compile(
    r"^[ \t]*\*\*\* (?:(?:Add|Update|Delete) File|Move to):[ \t]*(.+?)[ \t]*$", re.MULTILINE
)
_GIT_HEADER = re.compile(r'^diff --git (?:"((?:[^"\\]|\\.)*)"|(\S+)) (?:"((?:[^"\\]|\\.)*)"|(.+))$')
_GIT_EXTENDED = re.compile(r"^(?:rename|copy) (?:from|to) (.+)$")


def _strip_diff_path(raw: str, *, prefixed: bool) -> str | None:
    path = raw.split("\t", 1)[0].strip()
    if len(path) >= 2 and path[0] == path[-1] == '"':
        path = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
    if not path or path == "/dev/null":
        return None
    if prefixed and path[:2] in ("a/", "b/"):
        path = path[2:]
    return path


def _diff_header(lines: Sequence[str], i: int) -> bool:
    """``--- old`` immediately followed by ``+++ new`` (either line of the pair)."""
    line = lines[i]
    if line.startswith("--- "):
        return i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
    return line.startswith("+++ ") and i > 0 and lines[i - 1].startswith("--- ")


def patch_paths(patch: str) -> list[str]:
    """Every file a patch touches, in order, without duplicates.

    Understands the ``*** Begin Patch`` envelope (``Add File``, ``Update File``,
    ``Delete File``, ``Move to``) and unified/git diffs (``--- a/p`` followed by
    ``+++ b/p``, ``diff --git a/p b/p``, ``rename``/``copy from``/``to``); ``/dev/null``
    is ignored and the ``a/``/``b/`` prefixes are dropped.
    """
    found: dict[str, None] = {}
    for header in _ENVELOPE_HEADER.finditer(patch):
        found[header.group(1)] = None
    # headers may be indented (a patch pasted inside a message): tools that apply it
    # strip the indentation, so the guard reads through it too
    lines = [line.lstrip(" \t") for line in patch.splitlines()]
    for i, line in enumerate(lines):
        candidates: list[str | None] = []
        if _diff_header(lines, i):
            candidates.append(_strip_diff_path(line[4:], prefixed=True))
        elif line.startswith("diff --git "):
            if (m := _GIT_HEADER.match(line)) is not None:
                first = m.group(1) if m.group(1) is not None else m.group(2)
                second = m.group(3) if m.group(3) is not None else m.group(4)
                candidates += [
                    _strip_diff_path(f'"{first}"' if m.group(1) else first, prefixed=True),
                    _strip_diff_path(f'"{second}"' if m.group(3) else second, prefixed=True),
                ]
        elif (extended := _GIT_EXTENDED.match(line)) is not None:
            candidates.append(_strip_diff_path(extended.group(1), prefixed=False))
        for path in candidates:
            if path is not None:
                found[path] = None
    return list(found)
