"""``$CLAUDE_ENV_FILE``: the variables SessionStart hooks export for later shell commands.

A SessionStart hook of a Claude Code settings file gets ``CLAUDE_ENV_FILE``, the path of
a file it may append ``export NAME=value`` lines to; Claude Code sources that file before
each Bash command.  interpose reads the file after the session's SessionStart hooks
(``read_env_file``), keeps the assignments per session, and makes them current
(``exporting``) around every call of a tool that Claude calls ``Bash`` (``exec``).

An executor that interpose runs, the reference agent's ``Toolbox.exec``, builds its
commands' environment with ``exported_env(base)``; an application that runs commands
itself does the same in its own tool, or the variables never reach its commands.
"""

from __future__ import annotations

import logging
import re
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

__all__ = ["Exports", "exported_env", "exporting", "read_env_file"]

log = logging.getLogger("interpose.claude_code")

#: (name, value) in file order; a value may name earlier variables (``$PATH:/x``).
Exports = tuple[tuple[str, str], ...]

_CURRENT: ContextVar[Exports] = ContextVar("interpose_claude_exports", default=())
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
MAX_ENV_FILE_BYTES = 1 << 20


def read_env_file(path: str | Path) -> Exports:
    """The assignments of an env file: ``export NAME=value`` and ``NAME=value`` lines
    (the value shell-quoted or not); comments, blank lines and anything else (logged)
    are skipped.  A missing file has none."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_ENV_FILE_BYTES)
    except FileNotFoundError:
        return ()
    except OSError as exc:
        log.warning("cannot read CLAUDE_ENV_FILE %s: %s", path, exc)
        return ()
    found: list[tuple[str, str]] = []
    for line in data.decode("utf-8", "replace").splitlines():
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            words = shlex.split(text, comments=True, posix=True)
        except ValueError:
            words = []
        if words and words[0] == "export":
            words = words[1:]
        name, sep, value = words[0].partition("=") if len(words) == 1 else ("", "", "")
        if not sep or not _NAME.fullmatch(name):
            log.info("CLAUDE_ENV_FILE %s: not an assignment, skipped: %.200s", path, text)
            continue
        found.append((name, value))
    return tuple(found)


def exported_env(base: Mapping[str, str]) -> dict[str, str]:
    """``base`` with the current call's exports applied in order (``$NAME`` in a value
    reads the environment built so far, as sourcing the file would)."""
    env = dict(base)
    for name, value in _CURRENT.get():
        env[name] = _VARIABLE.sub(lambda m: env.get(m.group(1) or m.group(2), ""), value)
    return env


@contextmanager
def exporting(exports: Exports) -> Iterator[None]:
    """Make ``exports`` current for what runs inside (the tool call)."""
    token = _CURRENT.set(exports)
    try:
        yield
    finally:
        _CURRENT.reset(token)
