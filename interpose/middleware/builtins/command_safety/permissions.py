"""Rule family ``permissions``: ``chmod``/``chown``/``chgrp`` of critical paths.

Rules (the rule id leads the block reason):

- ``permissions``: world-writable or all-clearing modes (``777``, ``666``, ``000``,
  ``a+rwx``, ``o+w``) on critical paths, system files or credentials; any recursive
  ``chmod``/``chown``/``chgrp`` of a critical path; ``chown`` of ``/`` or auth files.
"""

from __future__ import annotations

import re

from ..security_audit import match_sensitive
from ..shell import Word
from .model import (
    _SYSTEM_FILES,
    _TEMP_DIRS,
    HOME,
    Finding,
    _display,
    _Invocation,
    _opts,
    _parse_opts,
    _show,
    _verb,
)
from .run import Rule, _Run

# -- permissions ----------------------------------------------------------------------------

_OCTAL_MODE = re.compile(r"[0-7]{1,4}")
_SYMBOLIC_CLAUSE = re.compile(r"([ugoa]*)((?:[-+=][rwxXstugo]*)+)")
_SYMBOLIC_DASH = re.compile(r"-[rwxXst]+")
_CHMOD = _opts(
    long="recursive changes silent quiet verbose preserve-root no-preserve-root help version "
    "dereference no-dereference",
    long_arg="reference",
    alias={"R": "recursive"},
)
_CHOWN = _opts(
    long="recursive changes silent quiet verbose preserve-root no-preserve-root help version "
    "dereference no-dereference",
    long_arg="reference from",
    alias={"R": "recursive"},
)


def _loose_mode(mode: str) -> str | None:
    """Describe a mode that opens files to everyone or strips every permission."""
    if _OCTAL_MODE.fullmatch(mode):
        value = int(mode, 8)
        if value & 0o002:
            return "world-writable"
        return "without any permission" if value & 0o777 == 0 else None
    for clause in mode.split(","):
        m = _SYMBOLIC_CLAUSE.fullmatch(clause)
        if m is None:
            continue
        who = m.group(1)
        for op, perms in re.findall(r"([-+=])([rwxXstugo]*)", m.group(2)):
            if op in "+=" and "w" in perms and ("o" in who or "a" in who):
                return "world-writable"
            everyone = not who or "a" in who or set("ugo") <= set(who)
            if everyone and ((op == "=" and not perms) or (op == "-" and set("rwx") <= set(perms))):
                return "without any permission"
    return None


def _sticky(mode: str | None) -> bool:
    if mode is None:
        return False
    if _OCTAL_MODE.fullmatch(mode):
        return len(mode) == 4 and int(mode[0], 8) & 1 == 1
    return "t" in mode


def _rule_chmod(inv: _Invocation, run: _Run) -> Finding | None:
    mode: str | None = None
    rest: list[Word] = []
    for word in inv.args:  # "-w" and "-rwx" are modes, not options
        if mode is None and _SYMBOLIC_DASH.fullmatch(word.text):
            mode = word.text
        else:
            rest.append(word)
    parsed = _parse_opts(rest, _CHMOD)
    targets = parsed.operands
    if mode is None and not parsed.has("--reference") and targets:
        mode, targets = targets[0].text, targets[1:]
    recursive = parsed.has("--recursive")
    loose = _loose_mode(mode) if mode is not None else None
    if not (recursive or loose):
        return None
    verb = " ".join(filter(None, [_verb(inv, parsed), mode]))
    for word in targets:
        path = run.path(word)
        if not recursive and path in _TEMP_DIRS and _sticky(mode):
            continue  # /tmp is meant to be 1777
        hit = run.doomed(word, recursive=True, cwd_counts=False, unknown=recursive)
        if hit is not None:
            what = f"makes it {loose}" if loose else "rewrites permissions recursively"
            return Finding(
                "permissions",
                word.text,
                f"{verb} on {hit[0]!r}, {hit[1]}: {what} (token {_show(word.text)!r})",
            )
        if loose and (
            _SYSTEM_FILES.match(path.lower()) or match_sensitive(path, home=HOME) is not None
        ):
            return Finding(
                "permissions",
                word.text,
                f"{verb} makes {_display(path)!r} {loose} (token {_show(word.text)!r})",
            )
    return None


def _rule_chown(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _CHOWN)
    targets = parsed.operands if parsed.has("--reference") else parsed.operands[1:]
    recursive = parsed.has("--recursive")
    for word in targets:
        path = run.path(word)
        hit = run.doomed(word, recursive=True, cwd_counts=False, unknown=recursive)
        if hit is not None and (recursive or path == "/"):
            return Finding(
                "permissions",
                word.text,
                f"{_verb(inv, parsed)} changes the owner of {hit[0]!r}, {hit[1]} "
                f"(token {_show(word.text)!r})",
            )
        if _SYSTEM_FILES.match(path.lower()):
            return Finding(
                "permissions",
                word.text,
                f"{_verb(inv, parsed)} changes the owner of the system file {path!r}",
            )
    return None


RULES: dict[str, tuple[Rule, ...]] = {
    "chmod": (_rule_chmod,),
    "chown": (_rule_chown,),
    "chgrp": (_rule_chown,),
}
