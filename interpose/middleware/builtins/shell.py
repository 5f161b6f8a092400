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
"""

from __future__ import annotations

import re
import time
from collections import deque
from dataclasses import dataclass, replace

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
    "parse",
]

SUBST = "\x00"
"""Stands, in a word's text, for the (unknown) output of a command or process substitution."""

MAX_NESTING = 32
"""Deepest nesting of subshells, groups and substitutions the parser accepts."""


class ShellSyntaxError(ValueError):
    """The text is not a complete shell command (unbalanced quote, unterminated ``$(``...)."""

    def __init__(self, detail: str, offset: int) -> None:
        super().__init__(f"{detail} at offset {offset}")
        self.detail = detail
        self.offset = offset


class ShellLimitError(ShellSyntaxError):
    """The text exceeds the :class:`ParseBudget` it is parsed with (too many words, too
    deeply nested, too slow): it may be valid shell, but it is not analyzed.

    Attributes:
        limit: which budget ran out (``"words"``, ``"depth"``, ``"time"``).
        used: how much of it was needed when the parser stopped (words, levels, seconds).
        allowed: the budget.
    """

    def __init__(self, limit: str, used: float, allowed: float, offset: int) -> None:
        super().__init__(f"{limit} budget exceeded ({used:g} > {allowed:g})", offset)
        self.limit = limit
        self.used = used
        self.allowed = allowed


class ParseBudget:
    """How much work :func:`parse` may do: words and operators read, nesting depth
    (subshells, groups, substitutions, ``${...}``), and a :func:`time.monotonic` deadline,
    checked every :attr:`check_every` tokens.  Past a limit the parser raises
    :class:`ShellLimitError`; it never recurses deeper than :attr:`max_depth` levels, so
    its use of the Python stack is bounded too.

    The counters only grow (``depth`` goes back down as levels close), so one budget can
    be shared by several parses and by the analysis around them: the command guard's
    budget is a subclass that also counts its own nesting and expansions.
    """

    __slots__ = ("deadline", "depth", "max_depth", "max_words", "peak_depth", "words")

    check_every = 256
    """Tokens between two looks at the clock (a monotonic read costs ~50 ns)."""

    def __init__(
        self,
        *,
        max_words: int = 1 << 62,
        max_depth: int = MAX_NESTING,
        seconds: float = float("inf"),
    ) -> None:
        self.max_words = max_words
        self.max_depth = max_depth
        self.deadline = time.monotonic() + seconds
        self.words = 0
        self.depth = 0
        self.peak_depth = 0

    def word(self, offset: int, count: int = 1) -> None:
        """Count ``count`` words (or operators) read at ``offset``.

        Raises:
            ShellLimitError: more words than :attr:`max_words`, or past the deadline.
        """
        before = self.words
        self.words = before + count
        if self.words > self.max_words:
            raise ShellLimitError("words", self.words, self.max_words, offset)
        if before // self.check_every != self.words // self.check_every:
            self.check_time(offset)

    def check_time(self, offset: int) -> None:
        """Raises:
        ShellLimitError: the deadline has passed."""
        now = time.monotonic()
        if now > self.deadline:
            raise ShellLimitError("time", round(now - self.deadline, 3), 0, offset)

    def enter(self, offset: int) -> None:
        """Open one nesting level.

        Raises:
            ShellLimitError: nesting deeper than :attr:`max_depth`.
        """
        depth = self.depth + 1
        if depth > self.max_depth:
            raise ShellLimitError("depth", depth, self.max_depth, offset)
        self.depth = depth
        if depth > self.peak_depth:
            self.peak_depth = depth

    def leave(self) -> None:
        """Close the level opened by the matching :meth:`enter`."""
        self.depth -= 1


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


def parse(source: str, budget: ParseBudget | None = None) -> Script:
    """Parse shell source into a :class:`Script`, within ``budget`` (by default: nesting
    up to :data:`MAX_NESTING` levels, no other limit).

    Raises:
        ShellLimitError: the budget ran out (a :class:`ShellSyntaxError` too).
        ShellSyntaxError: unbalanced quotes, unterminated substitutions or groups,
            misplaced operators.
    """
    if budget is None:
        budget = ParseBudget()
    depth = budget.depth
    try:
        return _Parser(source, budget).parse_program()
    finally:
        budget.depth = depth  # an error leaves the levels it was in open


# -- lexer tables -------------------------------------------------------------------------

_WORD, _OP, _EOF = 0, 1, 2

_OP_RE = re.compile(r";;&|;;|;&|&&|&>>|&>|\|\||\|&|>>|>\||>&|<<<|<<-|<<|<&|<>|[<>|&;()]")
_OP_START = frozenset(";&|<>()")
_REDIRECT_OPS = frozenset({"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<-", "<<<"})
_IO_NUMBER = re.compile(r"[0-9]+(?=[<>])")
_BLANKS = frozenset(" \t\r\f\v")
_WORD_BREAK = frozenset(" \t\r\f\v\n;&|<>()")
_TEST_BREAK = frozenset(" \t\r\f\v\n")
# Only ASCII blanks separate words: bash splits on space, tab and newline (and this
# parser, conservatively, on \r \f \v as well); a no-break space, U+2028 or \x1c is
# part of the word, as in bash (``ls\u00a0-la`` runs a command named ``ls\u00a0-la``).
# Every character is either in a break set or matched by these, so the lexer always
# advances.
_PLAIN = re.compile(r"[^ \t\r\f\v\n'\"\\$`|&;<>()]+")
_PLAIN_TEST = re.compile(r"[^ \t\r\f\v\n'\"\\$`]+")
_DQ_PLAIN = re.compile(r"[^\"\\$`]+")
_HEREDOC_PLAIN = re.compile(r"[^\\$`]+")
_GLOB_CHARS = re.compile(r"[*?\[]")
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
_EXTGLOB_LEAD = frozenset("?*+@!")
_ANSI_SIMPLE = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ANSI_NUMERIC = re.compile(
    r"x([0-9A-Fa-f]{1,2})|u([0-9A-Fa-f]{1,4})|U([0-9A-Fa-f]{1,8})|([0-7]{1,3})"
)

# keywords recognized in command position
_PREFIX_KEYWORDS = frozenset({"if", "then", "else", "elif", "while", "until", "do", "!"})
_CLOSING_KEYWORDS = frozenset({"fi", "done", "esac"})
_CASE_ENDS = frozenset({";;", ";&", ";;&"})


@dataclass(slots=True)
class _Token:
    kind: int
    offset: int
    op: str = ""
    word: Word | None = None
    fd: int | None = None
    assignment: bool = False


class _WordBuilder:
    """Accumulates the parts of one word (or several, when ``$IFS`` splits it)."""

    __slots__ = ("done", "glob", "parts", "quoted", "subs", "tilde")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.quoted = False
        self.glob = False
        self.tilde = False
        self.subs: list[Script] = []
        self.done: list[Word] = []

    def split(self) -> None:
        if self.parts or self.quoted or self.subs:
            self.done.append(
                Word("".join(self.parts), self.quoted, self.tilde, self.glob, tuple(self.subs))
            )
        self.parts, self.quoted, self.glob, self.tilde, self.subs = [], False, False, False, []

    def finish(self) -> list[Word]:
        self.split()
        return self.done


class _Builder:
    """Collects the commands, pipelines and functions of one script being parsed."""

    __slots__ = ("commands", "functions", "pipelines")

    def __init__(self) -> None:
        self.commands: list[SimpleCommand] = []
        self.pipelines: list[Pipeline] = []
        self.functions: list[FunctionDef] = []

    def build(self) -> Script:
        return Script(tuple(self.commands), tuple(self.pipelines), tuple(self.functions))


class _Parser:
    """Lexer and recursive-descent parser sharing one cursor.

    Substitutions are parsed by re-entering the parser at the cursor, exactly as a shell
    does, so quotes and parentheses inside ``$(...)`` need no separate matching pass.
    """

    __slots__ = ("budget", "n", "pending", "pos", "queue", "src")

    def __init__(self, src: str, budget: ParseBudget) -> None:
        self.src = src
        self.n = len(src)
        self.pos = 0
        self.budget = budget
        self.queue: deque[_Token] = deque()
        self.pending: list[tuple[Redirect, str, bool, bool]] = []

    # -- entry points -------------------------------------------------------------------

    def parse_program(self) -> Script:
        builder = _Builder()
        self._list(builder, frozenset(), frozenset())
        tok = self._peek()
        if tok.kind != _EOF:
            raise ShellSyntaxError(f"unexpected {self._describe(tok)}", tok.offset)
        return builder.build()

    def _nested(self, start: int, close_what: str) -> Script:
        """Parse a ``$(...)``/``<(...)`` body starting at ``self.pos`` up to its ``)``."""
        self._enter(start)
        builder = _Builder()
        self._list(builder, frozenset({")"}), frozenset())
        tok = self._next()
        if tok.kind != _OP or tok.op != ")":
            raise ShellSyntaxError(f"unterminated {close_what}", start)
        self.budget.leave()
        return builder.build()

    def _enter(self, offset: int) -> None:
        self.budget.enter(offset)

    # -- grammar --------------------------------------------------------------------------

    def _list(self, b: _Builder, stop_ops: frozenset[str], stop_words: frozenset[str]) -> None:
        while True:
            tok = self._peek()
            if tok.kind == _OP and tok.op in ("\n", ";"):
                self._next()
                continue
            if tok.kind == _EOF or (tok.kind == _OP and tok.op in stop_ops):
                return
            if stop_words and self._keyword(tok, stop_words):
                return
            start = len(b.commands)
            self._and_or(b)
            tok = self._peek()
            if tok.kind == _OP and tok.op == "&":
                self._next()
                for i in range(start, len(b.commands)):
                    b.commands[i] = replace(b.commands[i], background=True)
            elif tok.kind == _OP and tok.op in (";", "\n"):
                self._next()

    def _and_or(self, b: _Builder) -> None:
        self._pipeline(b)
        while (tok := self._peek()).kind == _OP and tok.op in ("&&", "||"):
            self._next()
            self._skip_newlines()
            self._pipeline(b)

    def _pipeline(self, b: _Builder) -> None:
        stages = [self._command(b)]
        while (tok := self._peek()).kind == _OP and tok.op in ("|", "|&"):
            self._next()
            self._skip_newlines()
            stages.append(self._command(b))
        if len(stages) > 1:
            b.pipelines.append(Pipeline(tuple(tuple(range(s, e)) for s, e in stages)))

    def _command(self, b: _Builder) -> tuple[int, int]:
        """Parse one command; return the range of indices it added to ``b.commands``."""
        start = len(b.commands)
        tok = self._peek()
        while self._keyword(tok, _PREFIX_KEYWORDS):  # `if`, `!`, `do`...: the command follows
            self._next()
            self._skip_newlines()
            tok = self._peek()
        if tok.kind == _EOF:
            raise ShellSyntaxError("unexpected end of input", tok.offset)
        if tok.kind == _OP:
            if tok.op == "(":
                self._next()
                end = self._arith_end(self.pos - 1)
                if end is not None:  # (( arithmetic ))
                    self.pos = end
                else:
                    self._enter(tok.offset)
                    self._list(b, frozenset({")"}), frozenset())
                    self._expect_op(")", "unterminated '('", tok.offset)
                    self.budget.leave()
                self._trailing_redirects(b)
            elif tok.op in _REDIRECT_OPS:
                self._simple(b)
            else:
                raise ShellSyntaxError(f"unexpected {self._describe(tok)}", tok.offset)
            return start, len(b.commands)
        word = tok.word
        assert word is not None
        keyword = word.text if not word.quoted and not word.subs else ""
        if keyword == "{":
            self._next()
            self._enter(tok.offset)
            self._list(b, frozenset(), frozenset({"}"}))
            if not self._keyword(self._peek(), frozenset({"}"})):
                raise ShellSyntaxError("unterminated '{'", tok.offset)
            self._next()
            self.budget.leave()
            self._trailing_redirects(b)
        elif keyword in _CLOSING_KEYWORDS:
            self._next()
            self._trailing_redirects(b)
        elif keyword == "case":
            self._case(b)
        elif keyword == "function":
            self._next()
            self._function_keyword(b, tok.offset)
        elif keyword == "[[":
            self._next()
            self._test_expression(b, word, tok.offset)
        elif keyword in ("for", "select"):
            self._next()
            self._skip_blanks_inline()
            end = self._arith_end(self.pos)
            if end is not None:
                self.pos = end
            else:
                self._simple(b, word)
        else:
            self._simple(b)
        return start, len(b.commands)

    def _simple(self, b: _Builder, first: Word | None = None) -> None:
        words: list[Word] = [first] if first is not None else []
        assignments: list[Word] = []
        redirects: list[Redirect] = []
        while True:
            tok = self._peek()
            if tok.kind == _WORD:
                assert tok.word is not None
                self._next()
                if not words and tok.assignment:
                    assignments.append(self._assignment_value(tok.word))
                else:
                    words.append(tok.word)
            elif tok.kind == _OP and tok.op in _REDIRECT_OPS:
                redirects.append(self._redirect())
            elif (
                tok.kind == _OP
                and tok.op == "("
                and len(words) == 1
                and not assignments
                and not redirects
            ):
                self._function_body(b, words[0].text, tok.offset)
                return
            else:
                break
        if not words and not assignments and not redirects:
            raise ShellSyntaxError(f"unexpected {self._describe(self._peek())}", self.pos)
        b.commands.append(SimpleCommand(tuple(words), tuple(assignments), tuple(redirects)))

    def _assignment_value(self, word: Word) -> Word:
        """``arr=(a b c)``: fold the array elements into the assignment word."""
        if not word.text.endswith("=") or not self.src.startswith("(", self.pos):
            return word
        self._next()  # the "("
        texts: list[str] = []
        subs: list[Script] = list(word.subs)
        while True:
            tok = self._next()
            if tok.kind == _OP and tok.op == ")":
                break
            if tok.kind == _OP and tok.op == "\n":
                continue
            if tok.kind != _WORD or tok.word is None:
                raise ShellSyntaxError("unterminated array assignment", tok.offset)
            texts.append(tok.word.text)
            subs.extend(tok.word.subs)
        return Word(word.text + "(" + " ".join(texts) + ")", True, False, False, tuple(subs))

    def _function_body(self, b: _Builder, name: str, offset: int) -> None:
        self._next()  # "("
        self._expect_op(")", "expected ')' in function definition", offset)
        self._skip_newlines()
        body = _Builder()
        self._enter(offset)
        self._command(body)
        self.budget.leave()
        b.functions.append(FunctionDef(name, body.build()))

    def _function_keyword(self, b: _Builder, offset: int) -> None:
        tok = self._next()
        if tok.kind != _WORD or tok.word is None:
            raise ShellSyntaxError("expected a function name", tok.offset)
        name = tok.word.text
        nxt = self._peek()
        if nxt.kind == _OP and nxt.op == "(":
            self._next()
            self._expect_op(")", "expected ')' in function definition", offset)
        self._skip_newlines()
        body = _Builder()
        self._enter(offset)
        self._command(body)
        self.budget.leave()
        b.functions.append(FunctionDef(name, body.build()))

    def _case(self, b: _Builder) -> None:
        head = self._next()
        assert head.word is not None
        subject = self._next()
        if subject.kind != _WORD or subject.word is None:
            raise ShellSyntaxError("expected a word after 'case'", subject.offset)
        b.commands.append(SimpleCommand((head.word, subject.word)))
        self._skip_newlines()
        if not self._keyword(self._next(), frozenset({"in"})):
            raise ShellSyntaxError("expected 'in' after 'case WORD'", head.offset)
        esac = frozenset({"esac"})
        while True:
            self._skip_newlines()
            tok = self._peek()
            if self._keyword(tok, esac):
                self._next()
                break
            if tok.kind == _EOF:
                raise ShellSyntaxError("unterminated 'case'", head.offset)
            if tok.kind == _OP and tok.op == "(":
                self._next()
            while True:  # pattern [| pattern]... )
                tok = self._next()
                if tok.kind == _OP and tok.op == ")":
                    break
                if tok.kind == _WORD or (tok.kind == _OP and tok.op == "|"):
                    continue
                raise ShellSyntaxError("malformed 'case' pattern", tok.offset)
            self._list(b, _CASE_ENDS, esac)
            tok = self._peek()
            if tok.kind == _OP and tok.op in _CASE_ENDS:
                self._next()
        self._trailing_redirects(b)

    def _test_expression(self, b: _Builder, opener: Word, offset: int) -> None:
        """``[[ ... ]]``: operators inside are plain words until ``]]``."""
        words = [opener]
        while True:
            self._skip_blanks_inline(newlines=True)
            if self.pos >= self.n:
                raise ShellSyntaxError("unterminated '[['", offset)
            self.budget.word(self.pos)
            end = self.pos + 2
            if self.src.startswith("]]", self.pos) and (
                end == self.n or self.src[end] in _WORD_BREAK
            ):  # "]]" ends the test even when an operator follows it: [[ -f x ]]&&...
                words.append(Word("]]"))
                self.pos = end
                break
            pieces = self._read_word(self.pos, test_mode=True)
            words.extend(pieces)
            if pieces and pieces[-1].text == "]]" and not pieces[-1].quoted:
                break
        b.commands.append(SimpleCommand(tuple(words)))
        self._trailing_redirects(b)

    def _trailing_redirects(self, b: _Builder) -> None:
        redirects: list[Redirect] = []
        while (tok := self._peek()).kind == _OP and tok.op in _REDIRECT_OPS:
            redirects.append(self._redirect())
        if redirects:
            b.commands.append(SimpleCommand((), (), tuple(redirects)))

    def _redirect(self) -> Redirect:
        tok = self._next()
        target = self._next()
        if target.kind != _WORD or target.word is None:
            raise ShellSyntaxError(f"missing target after {tok.op!r}", tok.offset)
        redirect = Redirect(tok.op, tok.fd, target.word)
        if tok.op in ("<<", "<<-"):
            delimiter = target.word
            self.pending.append((redirect, delimiter.text, tok.op == "<<-", delimiter.quoted))
        return redirect

    # -- token stream -----------------------------------------------------------------------

    def _peek(self) -> _Token:
        if not self.queue:
            self._lex()
        return self.queue[0]

    def _next(self) -> _Token:
        if not self.queue:
            self._lex()
        return self.queue.popleft()

    def _expect_op(self, op: str, message: str, offset: int) -> None:
        tok = self._next()
        if tok.kind != _OP or tok.op != op:
            raise ShellSyntaxError(message, offset)

    def _skip_newlines(self) -> None:
        while (tok := self._peek()).kind == _OP and tok.op == "\n":
            self._next()

    @staticmethod
    def _keyword(tok: _Token, words: frozenset[str]) -> bool:
        w = tok.word
        return tok.kind == _WORD and w is not None and not w.quoted and w.text in words

    @staticmethod
    def _describe(tok: _Token) -> str:
        if tok.kind == _EOF:
            return "end of input"
        if tok.kind == _OP:
            return "newline" if tok.op == "\n" else repr(tok.op)
        return repr(tok.word.text if tok.word else "")

    # -- lexer ------------------------------------------------------------------------------

    def _skip_blanks(self, i: int) -> int:
        s, n = self.src, self.n
        while i < n:
            c = s[i]
            if c in _BLANKS:
                i += 1
            elif c == "\\" and s.startswith("\n", i + 1):
                i += 2
            elif c == "#":
                end = s.find("\n", i)
                i = n if end < 0 else end
            else:
                break
        return i

    def _skip_blanks_inline(self, *, newlines: bool = False) -> None:
        i = self._skip_blanks(self.pos)
        while newlines and i < self.n and self.src[i] == "\n":
            i = self._skip_blanks(i + 1)
        self.pos = i

    def _lex(self) -> None:
        while not self.queue:  # a lone unquoted $IFS yields no word: lex on
            self._lex_one()

    def _lex_one(self) -> None:
        s = self.src
        i = self._skip_blanks(self.pos)
        self.budget.word(i)
        if i >= self.n:
            self.pos = self.n
            self.queue.append(_Token(_EOF, i))
            return
        c = s[i]
        if c == "\n":
            self.pos = i + 1
            self.queue.append(_Token(_OP, i, op="\n"))
            if self.pending:
                self._read_heredocs()
            return
        fd: int | None = None
        if "0" <= c <= "9" and (m := _IO_NUMBER.match(s, i)):
            fd = int(m.group())
            i = m.end()
            c = s[i]
        if c in "<>" and s.startswith("(", i + 1) and fd is None:
            self.pos = i + 2
            script = self._nested(i, "process substitution")
            self.queue.append(_Token(_WORD, i, word=ProcessSubstitution(SUBST, subs=(script,))))
            return
        if c in _OP_START:
            m = _OP_RE.match(s, i)  # every character of _OP_START is an operator
            op = m.group() if m is not None else c
            self.pos = i + len(op)
            self.queue.append(_Token(_OP, i, op=op, fd=fd))
            return
        assignment = _ASSIGNMENT.match(s, i) is not None
        words = self._read_word(i)
        for k, word in enumerate(words):
            self.queue.append(_Token(_WORD, i, word=word, assignment=assignment and k == 0))

    def _read_word(self, i: int, *, test_mode: bool = False) -> list[Word]:
        """Read one word at ``i`` (may yield several when ``$IFS`` splits it)."""
        s, n = self.src, self.n
        breaks = _TEST_BREAK if test_mode else _WORD_BREAK
        plain = _PLAIN_TEST if test_mode else _PLAIN
        m = plain.match(s, i)
        if m is not None and (m.end() == n or (s[m.end()] in breaks and s[m.end()] != "(")):
            # fast path: a word of plain characters only (most words are)
            run = m.group()
            self.pos = m.end()
            return [Word(run, False, run[0] == "~", _GLOB_CHARS.search(run) is not None)]
        b = _WordBuilder()
        start = i
        b.tilde = s.startswith("~", i)
        while i < n:
            c = s[i]
            if c in breaks:
                if c == "(" and i > start and s[i - 1] in _EXTGLOB_LEAD:
                    i = self._extglob(i, b)
                    continue
                break
            if c == "'":
                end = s.find("'", i + 1)
                if end < 0:
                    raise ShellSyntaxError("unterminated single quote", i)
                b.parts.append(s[i + 1 : end])
                b.quoted = True
                i = end + 1
            elif c == '"':
                b.quoted = True
                i = self._read_dquoted(i + 1, b, heredoc=False)
            elif c == "\\":
                if i + 1 >= n:
                    b.parts.append("\\")
                    i += 1
                elif s[i + 1] == "\n":
                    i += 2
                else:
                    b.parts.append(s[i + 1])
                    b.quoted = True
                    i += 2
            elif c == "$":
                i = self._read_dollar(i, b, in_dquote=False)
            elif c == "`":
                i = self._read_backtick(i, b, in_dquote=False)
            else:
                m = plain.match(s, i)  # c is in no break set: the run is never empty
                run = m.group() if m is not None else c
                b.parts.append(run)
                if not b.glob and _GLOB_CHARS.search(run):
                    b.glob = True
                i += len(run)
        self.pos = i
        return b.finish()

    def _extglob(self, i: int, b: _WordBuilder) -> int:
        depth, j, s = 0, i, self.src
        while j < self.n:
            if s[j] == "(":
                depth += 1
            elif s[j] == ")":
                depth -= 1
                if depth == 0:
                    b.parts.append(s[i : j + 1])
                    b.glob = True
                    return j + 1
            j += 1
        raise ShellSyntaxError("unterminated extended glob", i)

    def _read_dquoted(self, i: int, b: _WordBuilder, *, heredoc: bool) -> int:
        """Read double-quoted text from ``i`` (just past the quote); return the index past
        the closing quote.  With ``heredoc`` the text runs to the end and ``"`` is plain."""
        s, n, start = self.src, self.n, i
        plain = _HEREDOC_PLAIN if heredoc else _DQ_PLAIN
        escapable = "$`\\\n" if heredoc else '$`"\\\n'
        while i < n:
            c = s[i]
            if c == '"' and not heredoc:
                return i + 1
            if c == "\\":
                nxt = s[i + 1 : i + 2]
                if nxt and nxt in escapable:
                    if nxt != "\n":
                        b.parts.append(nxt)
                    i += 2
                else:
                    b.parts.append("\\")
                    i += 1
            elif c == "$":
                i = self._read_dollar(i, b, in_dquote=True)
            elif c == "`":
                i = self._read_backtick(i, b, in_dquote=True)
            else:
                m = plain.match(s, i)  # c is none of the specials: the run is never empty
                run = m.group() if m is not None else c
                b.parts.append(run)
                i += len(run)
        if heredoc:
            return n
        raise ShellSyntaxError("unterminated double quote", start - 1)

    def _read_dollar(self, i: int, b: _WordBuilder, *, in_dquote: bool) -> int:
        s = self.src
        nxt = s[i + 1 : i + 2]
        if nxt == "(":
            end = self._arith_end(i + 1)
            if end is not None:
                b.parts.append(s[i:end])
                return end
            self.pos = i + 2
            b.subs.append(self._nested(i, "command substitution '$('"))
            b.parts.append(SUBST)
            return self.pos
        if nxt == "{":
            return self._read_braced(i, b, in_dquote=in_dquote)
        if nxt == "'" and not in_dquote:
            b.quoted = True
            return self._read_ansi_c(i + 2, b)
        if nxt == '"' and not in_dquote:
            b.quoted = True
            return self._read_dquoted(i + 2, b, heredoc=False)
        m = _VAR.match(s, i + 1)
        if m is None:
            b.parts.append("$")
            return i + 1
        if m.group() == "IFS" and not in_dquote:
            b.split()
        else:
            b.parts.append("$" + m.group())
        return m.end()

    def _read_braced(self, i: int, b: _WordBuilder, *, in_dquote: bool) -> int:
        """``${...}``: keep the text, parse substitutions nested in it."""
        self._enter(i)
        end = self._read_braced_body(i, b, in_dquote=in_dquote)
        self.budget.leave()
        return end

    def _read_braced_body(self, i: int, b: _WordBuilder, *, in_dquote: bool) -> int:
        s, n = self.src, self.n
        scratch = _WordBuilder()
        j, depth = i + 2, 1
        while j < n:
            c = s[j]
            if c == "}":
                depth -= 1
                if depth == 0:
                    break
                j += 1
            elif c == "{":
                depth += 1
                j += 1
            elif c == "\\":
                j += 2
            elif c == "'" and not in_dquote:
                end = s.find("'", j + 1)
                if end < 0:
                    raise ShellSyntaxError("unterminated single quote", j)
                j = end + 1
            elif c == '"':
                j = self._read_dquoted(j + 1, scratch, heredoc=False)
            elif c == "$":
                j = self._read_dollar(j, scratch, in_dquote=True)
            elif c == "`":
                j = self._read_backtick(j, scratch, in_dquote=True)
            else:
                j += 1
        if j >= n:
            raise ShellSyntaxError("unterminated '${'", i)
        b.subs.extend(scratch.subs)
        content = s[i + 2 : j]
        if content == "IFS" and not in_dquote:
            b.split()
        else:
            b.parts.append("${" + content + "}")
        return j + 1

    def _read_backtick(self, i: int, b: _WordBuilder, *, in_dquote: bool) -> int:
        s, n = self.src, self.n
        escapable = '$`\\"' if in_dquote else "$`\\"
        out: list[str] = []
        j = i + 1
        while j < n:
            c = s[j]
            if c == "\\" and j + 1 < n and s[j + 1] in escapable:
                out.append(s[j + 1])
                j += 2
            elif c == "`":
                break
            else:
                out.append(c)
                j += 1
        if j >= n:
            raise ShellSyntaxError("unterminated backtick substitution", i)
        self._enter(i)
        b.subs.append(_Parser("".join(out), self.budget).parse_program())
        self.budget.leave()
        b.parts.append(SUBST)
        return j + 1

    def _read_ansi_c(self, i: int, b: _WordBuilder) -> int:
        """``$'...'`` with its C escapes (``\\x72`` is ``r``)."""
        s, n, start = self.src, self.n, i
        out: list[str] = []
        while i < n:
            c = s[i]
            if c == "'":
                b.parts.append("".join(out))
                return i + 1
            if c != "\\" or i + 1 >= n:
                out.append(c)
                i += 1
                continue
            esc = s[i + 1]
            if esc in _ANSI_SIMPLE:
                out.append(_ANSI_SIMPLE[esc])
                i += 2
            elif esc == "c" and i + 2 < n:
                out.append(chr(ord(s[i + 2]) & 0x1F))
                i += 3
            elif m := _ANSI_NUMERIC.match(s, i + 1):
                hex_, u4, u8, octal = m.groups()
                code = int(octal, 8) if octal else int(hex_ or u4 or u8, 16)
                out.append(chr(min(code, 0x10FFFF)))
                i = m.end()
            else:
                out.append("\\" + esc)
                i += 2
        raise ShellSyntaxError("unterminated $'...' string", start - 2)

    def _arith_end(self, i: int) -> int | None:
        """If ``((...))`` starts at ``i``, return the index past it, else None.

        As in bash, ``((a) )`` is a subshell in a subshell, not arithmetic: the inner
        parenthesis must close immediately before the outer one.
        """
        s = self.src
        if not s.startswith("((", i):
            return None
        depth, j, inner_close = 0, i, -1
        while j < self.n:
            c = s[j]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 1 and inner_close < 0:
                    inner_close = j
                elif depth == 0:
                    return j + 1 if inner_close == j - 1 else None
            j += 1
        return None

    def _read_heredocs(self) -> None:
        s, n = self.src, self.n
        for redirect, delimiter, strip_tabs, quoted in self.pending:
            lines: list[str] = []
            while self.pos < n:
                eol = s.find("\n", self.pos)
                if eol < 0:
                    eol = n
                line = s[self.pos : eol]
                self.pos = min(eol + 1, n)
                if strip_tabs:
                    line = line.lstrip("\t")
                if line == delimiter:
                    break
                lines.append(line)
            body = "\n".join(lines)
            if quoted:
                redirect.heredoc = Word(body, quoted=True)
            else:
                sub = _Parser(body, self.budget)
                b = _WordBuilder()
                self.budget.enter(self.pos)
                sub._read_dquoted(0, b, heredoc=True)
                self.budget.leave()
                redirect.heredoc = Word("".join(b.parts), True, False, False, tuple(b.subs))
        self.pending.clear()
