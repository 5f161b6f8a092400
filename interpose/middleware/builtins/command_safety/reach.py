"""What a write or a read reaches: the judgement of a path a command (or a redirection)
writes -- a network device, a block device, a system file, a persistence file -- or reads
-- a sensitive path or a glob that can match one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from ..security_audit import match_sensitive, match_sensitive_glob
from ..shell import SUBST, Redirect, Word
from .model import HOME, Finding
from .paths import NET_DEVICES, display, is_device, persistence, show, system_file

__all__ = ["Resolver", "check_redirects", "judge_read", "judge_write"]


class Resolver(Protocol):
    """What the judgements need of an analysis: the path a word names."""

    def path(self, word: Word) -> str: ...


def judge_write(run: Resolver, word: Word, what: str) -> Finding | None:
    path = run.path(word)
    token = show(word.text)
    shown = show(path)  # a substitution's output is unknown: shown as $(...)
    if path.startswith(NET_DEVICES):
        return Finding(
            "reverse-shell", word.text, f"{what} connects to {shown!r} (token {token!r})"
        )
    if is_device(path):
        return Finding(
            "disk", word.text, f"{what} writes to the device {shown!r} (token {token!r})"
        )
    if system_file(path):
        return Finding(
            "system-files",
            word.text,
            f"{what} writes the system file {shown!r} (token {token!r})",
        )
    if persistence(path):
        return Finding(
            "persistence",
            word.text,
            f"{what} writes {show(display(path))!r}, which runs at login, at boot or on a "
            f"schedule or controls who may log in (token {token!r})",
        )
    return None


def judge_read(
    run: Resolver, word: Word, what: str, exempt: frozenset[str] = frozenset()
) -> Finding | None:
    if not word.text or SUBST in word.text:
        return None
    path = run.path(word)
    # a glob is judged by what it can match: ".e*" can match ".env", ".env.ex*" only templates
    judge = match_sensitive_glob if word.glob else match_sensitive
    found = judge(path, home=HOME)
    if found is None or found.rule in exempt:
        return None
    return Finding(
        "sensitive-read",
        word.text,
        f"{what} reads {display(path)!r}: {found.rule} ({found.description}; "
        f"token {show(word.text)!r})",
    )


_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_READ_OPS = frozenset({"<", "<>"})


def check_redirects(redirects: Sequence[Redirect], run: Resolver) -> Finding | None:
    for r in redirects:
        if r.op in ("<<", "<<-", "<<<"):
            continue
        target = r.target.text
        if r.op in (">&", "<&") and (target == "-" or target.rstrip("-").isdigit()):
            continue  # fd duplication, not a file
        what = f"redirection {r.op!r}"
        if r.op in _WRITE_OPS or run.path(r.target).startswith(NET_DEVICES):
            found = judge_write(run, r.target, what)
            if found is not None:
                return found
        if r.op in _READ_OPS:
            found = judge_read(run, r.target, what)
            if found is not None:
                return found
    return None
