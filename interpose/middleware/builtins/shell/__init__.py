"""A POSIX shell tokenizer and parser for static analysis of agent commands.

The command guard must know *which commands a shell would run* for a given string, not
which substrings it contains: ``echo "rm -rf /"`` runs ``echo``, while
``echo "$(rm -rf /)"`` runs ``rm``.  This module turns a command line into that answer.

It is a recursive-descent parser over a hand-written lexer that follows the POSIX shell
quoting rules (single quotes, double quotes with their four backslash escapes, backslash
escapes, ``#`` comments at word start, line continuations) plus the bash forms agents
actually type: ``$'...'`` ANSI-C strings, ``$(...)`` and backtick substitutions (parsed
recursively, also inside double quotes and ``${...}``), ``<(...)``/``>(...)`` process
substitutions, ``$((...))`` arithmetic, here-documents and here-strings, ``[[ ... ]]``,
extended globs, functions, ``if``/``while``/``for``/``case``, subshells and brace groups.

The result is a flat :class:`Script`: every simple command in source order (commands of
subshells, groups and control structures included), the pipelines among them as indices,
and the function definitions with their bodies.  Words keep what a judge needs after
quote removal: the text, whether any part was quoted, whether a leading ``~`` is subject
to tilde expansion, whether the word holds an unquoted glob, and the parsed scripts of the
substitutions inside it (their output is represented by :data:`SUBST` in the text; a
``<(...)`` word, a file name rather than an output, is a :class:`ProcessSubstitution`).
An unquoted ``$IFS``/``${IFS}`` splits the word, as it would at run time.

Nothing is executed or expanded here: variables stay as ``$NAME`` in the text, globs are
not matched, aliases and functions are not resolved.  Syntax the parser cannot follow
raises :class:`ShellSyntaxError`; callers treat that as "cannot be analyzed".

The work is bounded by a :class:`ParseBudget`: words and operators read, a deadline, and
the nesting depth -- every level of recursion (subshell, group, function body,
substitution, backtick, ``${...}``, here-document) opens a level, so the parser's use of
the Python stack is bounded by the budget's depth; repetition (``! ! ! cmd``, runs of
empty ``$IFS`` words) is a loop, never recursion.  Past the budget it raises
:class:`ShellLimitError`.  Every character is handled: only ASCII blanks separate words
(as in bash, a no-break space or U+2028 is part of the word), anything else that is not
shell syntax is word text.

Most commands agents run are plain lines -- words joined by ``&&``, ``||``, ``;`` and
``|``, with no quote, expansion, redirection, parenthesis or comment: :func:`parse` reads
those in one regex pass into the same :class:`Script` the grammar would make (and charges
the same words); any other text goes through the grammar.

The package: :mod:`._nodes` (the tree), :mod:`._budget` (errors and the parse budget),
:mod:`._lexer` (tokens and words) and :mod:`._parser` (the grammar and :func:`parse`).
"""

from __future__ import annotations

from ._budget import MAX_NESTING, ParseBudget, ShellLimitError, ShellSyntaxError
from ._nodes import (
    SUBST,
    FunctionDef,
    Pipeline,
    ProcessSubstitution,
    Redirect,
    Script,
    SimpleCommand,
    Word,
)
from ._parser import expansions, parse

__all__ = [
    "MAX_NESTING",
    "SUBST",
    "ParseBudget",
    "FunctionDef",
    "Pipeline",
    "ProcessSubstitution",
    "Redirect",
    "Script",
    "ShellLimitError",
    "ShellSyntaxError",
    "SimpleCommand",
    "Word",
    "expansions",
    "parse",
]
