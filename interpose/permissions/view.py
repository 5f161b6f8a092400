"""A tool call read once into the facts rules judge (:class:`.model.CallView`).

For the shell tool (``exec``; ``Bash`` normalizes to it) the command line goes through
the command guard's shell model -- the same analysis, remembered per command text
(:func:`interpose.middleware.builtins.command_safety.analysis_of`), so a call the guard
has judged costs the rules a lookup, not a second parse.  Every simple command it meets
is in the view (through ``&&``/``;``/pipes/subshells/``$( )``/backticks, wrappers,
``bash -c``, ``eval``, ``xargs``, ``find -exec``), with the paths commands read and write
(``cat .env`` reads ``<cwd>/.env``; redirection targets are writes, ``/dev/null``
exempt).  For the file tools the view holds their path arguments; for web fetches, the
host of the URL.  A PowerShell or cmd call (tool ``powershell``/``pwsh``/``cmd``, or a
``shell`` argument naming one) is read by the same model and marked unparsed.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

import msgspec

from ..middleware.builtins.command_safety import analysis_of, commands_of, shell_of
from ..pipeline.tools import normalize_tool_name
from .model import CallView, ShellCommand

__all__ = ["FETCH_TOOLS", "READ_TOOLS", "SHELL_TOOLS", "WRITE_TOOLS", "view_of"]

SHELL_TOOLS = frozenset({"exec", "run_shell_command"})  # Gemini CLI's name too
READ_TOOLS = frozenset({"read", "grep", "glob"})
WRITE_TOOLS = frozenset(
    {"write", "edit", "multi_edit", "multiedit", "notebook_edit", "apply_patch"}
)
FETCH_TOOLS = frozenset({"web_fetch", "webfetch"})

_PATH_KEYS = ("path", "file_path", "file", "notebook_path", "filename")
_PATCHED = re.compile(r"^\*\*\* (?:Add File|Update File|Delete File|Move to): (.+)$", re.M)


def view_of(tool: str, args: Mapping[str, Any], *, cwd: str | None, home: str) -> CallView:
    """The facts of a call of ``tool`` with ``args``; relative paths are resolved
    against ``cwd`` (or the call's own ``cwd``/``workdir`` argument; None: the
    process's working directory, read when a relative path needs it), ``~`` against
    ``home``."""
    name = normalize_tool_name(tool)
    where = args.get("cwd") or args.get("workdir")
    if isinstance(where, str):
        cwd = _absolute(where, cwd, home)
    if name in SHELL_TOOLS:
        view = _shell(name, args, cwd, home)
        if shell_of(tool, args) != "bash" and not view.unparsed:
            # PowerShell or cmd text read by the bash model: deny rules may still match
            # its words, but no allow rule can vouch for all of it
            view = msgspec.structs.replace(view, unparsed=True)
        return view
    if name in READ_TOOLS:
        return CallView(name, args, reads=_paths(_file_args(args), cwd, home))
    if name in WRITE_TOOLS:
        written = _file_args(args)
        patch = args.get("patch", args.get("input"))
        if name == "apply_patch" and isinstance(patch, str):
            written = [*written, *_PATCHED.findall(patch)]
        return CallView(name, args, writes=_paths(written, cwd, home))
    if name in FETCH_TOOLS:
        url = args.get("url")
        host = urlsplit(url).hostname if isinstance(url, str) else None
        return CallView(name, args, domains=(host,) if host else ())
    return CallView(name, args)


def _shell(name: str, args: Mapping[str, Any], cwd: str | None, home: str) -> CallView:
    line = args.get("command")
    if type(line) is str and "args" not in args and "argv" not in args:  # the usual call
        facts = analysis_of(line).facts
        if not facts.reads and not facts.writes:
            return CallView(name, args, commands=facts.commands, unparsed=facts.unparsed)
    commands: tuple[ShellCommand, ...] = ()
    reads: list[str] = []
    writes: list[str] = []
    redirected: list[str] = []
    unparsed = False
    for command in commands_of(args):
        if not isinstance(command, str) and not (
            isinstance(command, (list, tuple)) and all(type(a) is str for a in command)
        ):
            unparsed = True  # the guard refuses any other shape
            continue
        facts = analysis_of(command).facts
        commands += facts.commands
        reads += facts.reads
        writes += facts.writes
        redirected += facts.redirected
        unparsed = unparsed or facts.unparsed
    return CallView(
        name,
        args,
        commands=tuple(commands),
        reads=_paths(reads, cwd, home),
        writes=_paths(writes, cwd, home),
        unparsed=unparsed,
        redirected=_paths(redirected, cwd, home),
    )


def _file_args(args: Mapping[str, Any]) -> list[str]:
    found = [args[k] for k in _PATH_KEYS if isinstance(args.get(k), str) and args[k]]
    listed = args.get("paths")
    if isinstance(listed, (list, tuple)):
        found += [p for p in listed if isinstance(p, str) and p]
    edits = args.get("edits")
    if isinstance(edits, (list, tuple)):  # multi-file edit tools
        found += [
            e[k]
            for e in edits
            if isinstance(e, Mapping)
            for k in _PATH_KEYS
            if isinstance(e.get(k), str)
        ]
    return found


def _paths(paths: Iterable[str], cwd: str | None, home: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_absolute(p, cwd, home) for p in paths))


def _absolute(path: str, cwd: str | None, home: str) -> str:
    if path == "~" or path.startswith("~/"):
        path = home + path[1:]
    if not path.startswith("/"):  # the working directory read only when needed
        path = posixpath.join(cwd if cwd is not None else os.getcwd(), path)
    return posixpath.normpath(path)
