"""The interceptor: :class:`SecurityAudit` collects every path a file tool's call names,
normalizes it and refuses the call when one is sensitive."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterator, Sequence
from typing import ClassVar

from ....errors import ConfigError
from ....pipeline.payloads import ToolBeforeInput, ToolBeforeOutput
from .matching import match_normalized
from .patches import patch_paths
from .paths import normalize_path

__all__ = ["SecurityAudit"]


def _compile(patterns: Sequence[str], what: str) -> tuple[re.Pattern[str], ...]:
    compiled: list[re.Pattern[str]] = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigError(f"security-audit: invalid {what} regex {pattern!r}: {exc}") from None
    return tuple(compiled)


_CACHED_CHARS = 4096
"""The longest path whose verdict a guard remembers (PATH_MAX): bounds the cache's memory."""


class SecurityAudit:
    """``builtin:security-audit``: block file tools that touch sensitive paths.

    Args:
        extra_deny: regexes (``re.search``) over the normalized, lower-cased path; a match
            blocks with rule ``extra-deny``.
        allow: regexes over the normalized path; a match exempts the path from every rule
            (built-in and ``extra_deny``).
        home: the home directory ``~`` and ``$HOME`` stand for; default the current
            user's (``$HOME``, read at every check).

    Block reason: ``security-audit: <rule>: '<path>' (normalized '<normalized>')``.  A
    path argument that is not text (``{"path": 3}``, ``{"paths": ["a", None]}``) or that
    holds a NUL character is refused with ``security-audit: unparseable: <why>``.

    Each guard remembers its verdicts on the last ``CACHE_SIZE`` distinct checks (path of
    up to 4,096 characters, read or write, and ``$HOME`` when ``home`` is unset), least
    recently used first out.

    Raises:
        ConfigError: a regex of ``extra_deny`` or ``allow`` does not compile.
    """

    tools: ClassVar[frozenset[str]] = frozenset({"read", "write", "edit", "apply_patch"})
    """The (normalized) tools this guard is meant for."""

    PATH_KEYS: ClassVar[tuple[str, ...]] = (
        "path",
        "file_path",
        "file",
        "target_file",
        "notebook_path",
        "filepath",
        "filename",
    )
    PATH_LIST_KEYS: ClassVar[tuple[str, ...]] = ("paths", "file_paths")
    PATCH_KEYS: ClassVar[tuple[str, ...]] = ("patch", "input")
    READ_ONLY_TOOLS: ClassVar[frozenset[str]] = frozenset({"read"})

    CACHE_SIZE: ClassVar[int] = 1024
    """How many distinct checks a guard remembers its verdict on (0: none)."""

    __slots__ = ("_allow", "_checked", "_deny", "_home")

    def __init__(
        self,
        *,
        extra_deny: Sequence[str] = (),
        allow: Sequence[str] = (),
        home: str | None = None,
    ) -> None:
        self._deny = _compile(extra_deny, "extra_deny")
        self._allow = _compile(allow, "allow")
        self._home = home
        # per instance (the extra rules and home are part of the verdict); keyed by the
        # path, read or write, and $HOME when ``home`` is unset (``~`` follows it)
        self._checked = functools.lru_cache(maxsize=max(0, self.CACHE_SIZE))(self._check)

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.block:
            return
        write = inp.tool_name not in self.READ_ONLY_TOOLS
        try:
            for path in self._paths(inp.tool_name, out.args):
                reason = self.check(path, write=write)
                if reason is not None:
                    out.block = True
                    out.block_reason = reason
                    return
        except _Unreadable as exc:
            out.block = True
            out.block_reason = f"security-audit: unparseable: {exc}"

    def check(self, path: str, *, write: bool = False) -> str | None:
        """The block reason for ``path``, or None when it may be used (remembered: see
        ``CACHE_SIZE``)."""
        home = self._home if self._home is not None else os.environ.get("HOME")
        if len(path) > _CACHED_CHARS:
            return self._check(path, write, home)
        return self._checked(path, write, home)

    def _check(self, path: str, write: bool, home: str | None) -> str | None:
        # ``home`` is only the cache's key: the checks read ``self._home`` (None: the
        # current user's home, which is $HOME when it is set)
        if "\x00" in path:
            return (
                f"security-audit: unparseable: {path!r} holds a NUL character, which no "
                f"file name can hold (the system cuts the path there): it names no file the "
                f"guard can judge"
            )
        normalized = normalize_path(path, home=self._home)
        if any(p.search(normalized) for p in self._allow):
            return None
        if any(p.search(normalized) for p in self._deny):
            rule = "extra-deny"
        else:
            found = match_normalized(normalized, write=write, home=self._home)
            if found is None:
                return None
            rule = found.rule
        return f"security-audit: {rule}: {path!r} (normalized {normalized!r})"

    def _paths(self, tool: str, args: dict[str, object]) -> Iterator[str]:
        """Every path the call names: each path key, each element of ``paths``, and for
        ``apply_patch`` every file the patch touches.

        Raises:
            _Unreadable: a key holds something other than text (a number, a dict, a list
                holding one), which the guard cannot judge.
        """
        # a list under a single-path key is read too: whatever the tool makes of it, every
        # path in it is judged (and anything that is not a path string refuses the call)
        for key in (*self.PATH_KEYS, *self.PATH_LIST_KEYS):
            yield from _texts(key, args.get(key), lists=True)
        if tool == "apply_patch":
            for key in self.PATCH_KEYS:
                for text in _texts(key, args.get(key), lists=False):
                    yield from patch_paths(text)


class _Unreadable(Exception):
    """An argument the guard must read is not text: the call is refused, not let through."""


def _texts(key: str, value: object, *, lists: bool) -> Iterator[str]:
    if value is None or value == "":
        return
    if isinstance(value, str):
        yield value
        return
    if lists and isinstance(value, (list, tuple)):
        for index, element in enumerate(value):
            if not isinstance(element, str):
                raise _Unreadable(
                    f"element {index} of {key!r} is of type {type(element).__name__}, not a "
                    f"path string; a call whose paths cannot be read is not run"
                )
            if element:
                yield element
        return
    raise _Unreadable(
        f"{key!r} is of type {type(value).__name__}, not "
        f"{'a path string or a list of them' if lists else 'a string'}; a call whose paths "
        f"cannot be read is not run"
    )
