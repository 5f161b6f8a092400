"""The shell syntax tree :func:`~.parse` returns: a flat :class:`Script` of
:class:`SimpleCommand` s (words after quote removal, assignments, redirections), the
:class:`Pipeline` s among them and the :class:`FunctionDef` s, with :data:`SUBST` standing
for the output of a substitution in a word's text."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "SUBST",
    "FunctionDef",
    "Pipeline",
    "ProcessSubstitution",
    "Redirect",
    "Script",
    "SimpleCommand",
    "Word",
]

SUBST = "\x00"
"""Stands, in a word's text, for the (unknown) output of a command or process substitution."""


@dataclass(frozen=True, slots=True)
class Word:
    """One shell word after quote removal.

    Attributes:
        text: the word as the command would receive it, with variables kept as
            ``$NAME``/``${NAME}`` and each substitution replaced by :data:`SUBST`.
        quoted: some part of the word was quoted or backslash-escaped.
        tilde: the word starts with an unquoted ``~`` (tilde expansion applies).
        glob: the word holds an unquoted ``*``, ``?`` or ``[`` (pathname expansion).
        subs: the scripts of the command/process substitutions inside the word.
    """

    text: str
    quoted: bool = False
    tilde: bool = False
    glob: bool = False
    subs: tuple[Script, ...] = ()

    @property
    def process(self) -> bool:
        """The word is a :class:`ProcessSubstitution`."""
        return False


class ProcessSubstitution(Word):
    """A ``<(...)`` or ``>(...)`` word: a file name whose contents are the output (or the
    input) of ``subs[0]``, not that output itself.  (A subclass rather than a field:
    every word is built on the parser's hot path, and each field costs there.)"""

    __slots__ = ()

    @property
    def process(self) -> bool:
        return True


@dataclass(slots=True)
class Redirect:
    """A redirection such as ``2>>log``: operator, explicit fd, target word.

    ``op`` is one of ``< > >> >| <> <& >& &> &>> << <<- <<<``.  For here-documents
    ``target`` is the delimiter and ``heredoc`` the body (filled in when the lexer reaches
    the body; with an unquoted delimiter its substitutions are parsed).
    """

    op: str
    fd: int | None
    target: Word
    heredoc: Word | None = None


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """``NAME=value ... word ... redirections``; ``words`` may be empty (``> file``)."""

    words: tuple[Word, ...]
    assignments: tuple[Word, ...] = ()
    redirects: tuple[Redirect, ...] = ()
    background: bool = False


@dataclass(frozen=True, slots=True)
class Pipeline:
    """``a | b | c``: each stage lists the indices (in :attr:`Script.commands`) of the
    simple commands it contains; a stage's stdout feeds the next stage's stdin."""

    stages: tuple[tuple[int, ...], ...]


@dataclass(frozen=True, slots=True)
class FunctionDef:
    name: str
    body: Script


@dataclass(frozen=True, slots=True)
class Script:
    commands: tuple[SimpleCommand, ...] = ()
    pipelines: tuple[Pipeline, ...] = ()
    functions: tuple[FunctionDef, ...] = ()
