"""What a command line runs, as facts: every simple command the analysis meets (wrappers
peeled, nested shells, ``find -exec``, ``xargs``...), with the paths it reads and writes.

Each command is a :class:`interpose.permissions.model.ShellCommand` (``text`` is its argv
joined by spaces), the shape the permission rules judge: the facts of a remembered
analysis are handed to them as they are.

A :class:`Recording` is a :class:`.run.Run` that notes each command it judges in a
:class:`Sink`; the guard's own analysis records as it goes (one parse per command text
serves the guard and the permission rules, see :func:`..command_safety.analysis_of`).  The
guard stops at its first finding; an *exhaustive* recording judges on past findings, so
the facts of a refused line are whole too.

Paths are kept as the analysis resolves them: absolute, ``~/...`` (the analysis's home),
or relative to the directory the line starts in; :class:`Facts` readers resolve them
against a real working directory and home.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ....permissions.model import ShellCommand
from ..shell import SUBST, Redirect, Script, Word
from .budget import Budget
from .filesystem import WRITERS
from .git import git_subcommand
from .invocation import Invocation
from .model import HOME, Finding
from .paths import show
from .run import NO_DECISIONS, RuleTable, Run
from .secrets import READERS
from .wrappers import canon

__all__ = [
    "SAFE_ASSIGNMENTS",
    "TRANSPARENT",
    "Facts",
    "Recording",
    "ShellCommand",
    "Sink",
    "transparent",
]

TRANSPARENT = frozenset(
    {"timeout", "time", "nice", "nohup", "stdbuf", "command", "builtin", "noglob", "xargs"}
)
"""Wrappers that only change how a command runs, not what it may do: Claude Code strips
these before matching an allow rule; every other wrapper level (``sudo``, ``env X=..``,
``ssh``) must be allowed as well as the command it runs."""


SAFE_ASSIGNMENTS = frozenset(
    {"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "NO_COLOR", "FORCE_COLOR"}
    | {"TERM", "COLUMNS", "LINES", "CI"}
)
"""Leading ``VAR=value`` assignments that cannot change what a command does beyond its
output's look.  Any other (``GIT_SSH_COMMAND=..``, ``LD_PRELOAD=..``) is a wrapper level
of its own (``X=1 git status``): deny and ask rules see past it, an allow must cover it,
as Claude Code's allow rules skip only known-safe assignments."""


@dataclass(frozen=True, slots=True)
class Facts:
    """What one command line runs: its commands in source order, the paths read and
    written (see the module docstring), and whether some part of it could not be read
    (a syntax error, a nested shell that does not parse, past the analysis budget)."""

    commands: tuple[ShellCommand, ...] = ()
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    unparsed: bool = False
    redirected: tuple[str, ...] = ()  # the writes that are redirection targets


@dataclass(slots=True)
class Sink:
    """Where a :class:`Recording` notes what it meets; ``exhaustive``: go on past
    findings (noting only whether one was an unparseable part)."""

    exhaustive: bool = False
    commands: list[ShellCommand] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    unparsed: bool = False
    redirected: list[str] = field(default_factory=list)

    def facts(self) -> Facts:
        return Facts(
            tuple(dict.fromkeys(self.commands)),
            tuple(dict.fromkeys(self.reads)),
            tuple(dict.fromkeys(self.writes)),
            self.unparsed,
            tuple(dict.fromkeys(self.redirected)),
        )


_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_READ_OPS = frozenset({"<", "<>"})
_UNKNOWN = re.compile(r"\$[A-Za-z_{(]|" + SUBST)
"""A path known only at run time: not a fact."""


class Recording(Run):
    """A :class:`.run.Run` that notes every command it judges, and the paths it reads
    and writes, in ``sink``."""

    __slots__ = ("sink",)

    def __init__(
        self,
        table: RuleTable,
        deny: Sequence[re.Pattern[str]],
        allow: Sequence[re.Pattern[str]],
        budget: Budget,
        sink: Sink,
        decisions: Mapping[str, str] = NO_DECISIONS,
    ) -> None:
        super().__init__(table, deny, allow, budget, decisions)
        self.sink = sink

    def script(self, script: Script) -> Finding | None:
        for cmd in script.commands:  # "> file" alone: the run judges only its redirections
            if not cmd.words and cmd.redirects:
                self._redirects(cmd.redirects)
        return super().script(script)

    def invocation(self, inv: Invocation) -> Finding | None:
        self._note(inv)
        found = super().invocation(inv)
        if found is not None and self.sink.exhaustive:
            if found.rule in ("unparseable", "too-complex"):
                self.sink.unparsed = True
            return None
        return found

    def _note(self, inv: Invocation) -> None:
        sink = self.sink
        argv = None if inv.dynamic else (inv.shown, *(show(w.text) for w in inv.args))
        layers = tuple(tuple(show(w.text) for w in layer) for layer in inv.layers[:-1])
        shown = argv or (show(inv.dynamic), *(show(w.text) for w in inv.args))
        text = " ".join(shown)
        assigned = tuple(f"{k}={show(v)}" for k, v in inv.env.items() if k not in SAFE_ASSIGNMENTS)
        if assigned and not (layers and canon(layers[0][0]) == "env"):
            layers = ((*assigned, *(layers[0] if layers else shown)), *layers)
        written = show(inv.layers[-1][0].text) if inv.layers and inv.layers[-1] else ""
        program = written if "/" in written and argv is not None else ""
        form = git_subcommand(argv) if argv is not None and inv.name == "git" else None
        forms = (form,) if form is not None else ()
        sink.commands.append(ShellCommand(argv, text, layers, program, forms))
        self._redirects(inv.redirects)
        reader = READERS.get(inv.name)
        if reader is not None:
            sink.reads += self._paths(reader.extract(inv))
        writer = WRITERS.get(inv.name)
        if writer is not None:
            sink.writes += self._paths(writer(inv))

    def _redirects(self, redirects: Sequence[Redirect]) -> None:
        for r in redirects:
            if r.op in _WRITE_OPS:
                paths = self._paths([r.target])
                self.sink.writes += paths
                self.sink.redirected += paths
            if r.op in _READ_OPS:
                self.sink.reads += self._paths([r.target])

    def _paths(self, words: Sequence[Word]) -> list[str]:
        paths = []
        for word in words:
            if not word.text:
                continue
            path = self.path(word)  # follows $HOME, ${HOME}, $PWD, variables set earlier
            if _UNKNOWN.search(path) or path == "/dev/null":
                continue
            if path == HOME or path.startswith(HOME + "/"):
                path = "~" + path[len(HOME) :]
            paths.append(path)
        return paths


def transparent(layer: Sequence[str]) -> bool:
    """Whether a wrapper level is one of :data:`TRANSPARENT`."""
    return bool(layer) and canon(layer[0]) in TRANSPARENT
