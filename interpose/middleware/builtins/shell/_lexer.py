"""The shell lexer: tokens and words after POSIX quote removal (see the package
docstring for what it reads), and the tables it reads them with."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from ._budget import ParseBudget, ShellSyntaxError
from ._nodes import SUBST, ProcessSubstitution, Redirect, Script, Word

__all__ = ["ASSIGNMENT", "EOF", "GLOB_CHARS", "OP", "WORD", "WORD_BREAK", "Lexer", "Token"]

# -- lexer tables -------------------------------------------------------------------------

WORD, OP, EOF = 0, 1, 2

_OP_RE = re.compile(r";;&|;;|;&|&&|&>>|&>|\|\||\|&|>>|>\||>&|<<<|<<-|<<|<&|<>|[<>|&;()]")
_OP_START = frozenset(";&|<>()")
_IO_NUMBER = re.compile(r"[0-9]+(?=[<>])")
_BLANKS = frozenset(" \t\r\f\v")
WORD_BREAK = frozenset(" \t\r\f\v\n;&|<>()")
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
GLOB_CHARS = re.compile(r"[*?\[]")
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=")
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


@dataclass(slots=True)
class Token:
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


class Lexer:
    """The lexer: a cursor over the source that reads tokens and words (quotes, escapes,
    ``$...`` expansions, substitutions, here-documents) into a queue.

    The grammar (:class:`~._parser.Parser`) is a subclass sharing the same cursor:
    substitutions are parsed by re-entering the parser at the cursor
    (:meth:`nested`), exactly as a shell does, so quotes and parentheses inside
    ``$(...)`` need no separate matching pass.
    """

    __slots__ = ("budget", "n", "pending", "pos", "queue", "src")

    def __init__(self, src: str, budget: ParseBudget) -> None:
        self.src = src
        self.n = len(src)
        self.pos = 0
        self.budget = budget
        self.queue: deque[Token] = deque()
        self.pending: list[tuple[Redirect, str, bool, bool]] = []

    def parse_program(self) -> Script:
        """Parse the whole source (the parser's entry point)."""
        raise NotImplementedError

    def nested(self, start: int, close_what: str) -> Script:
        """Parse a ``$(...)``/``<(...)`` body starting at ``self.pos`` up to its ``)``."""
        raise NotImplementedError

    def enter(self, offset: int) -> None:
        self.budget.enter(offset)

    # -- token stream -----------------------------------------------------------------------

    def peek_token(self) -> Token:
        if not self.queue:
            self._lex()
        return self.queue[0]

    def next_token(self) -> Token:
        if not self.queue:
            self._lex()
        return self.queue.popleft()

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

    def skip_blanks_inline(self, *, newlines: bool = False) -> None:
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
            self.queue.append(Token(EOF, i))
            return
        c = s[i]
        if c == "\n":
            self.pos = i + 1
            self.queue.append(Token(OP, i, op="\n"))
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
            script = self.nested(i, "process substitution")
            self.queue.append(Token(WORD, i, word=ProcessSubstitution(SUBST, subs=(script,))))
            return
        if c in _OP_START:
            m = _OP_RE.match(s, i)  # every character of _OP_START is an operator
            op = m.group() if m is not None else c
            self.pos = i + len(op)
            self.queue.append(Token(OP, i, op=op, fd=fd))
            return
        assignment = ASSIGNMENT.match(s, i) is not None
        words = self.read_word(i)
        for k, word in enumerate(words):
            self.queue.append(Token(WORD, i, word=word, assignment=assignment and k == 0))

    def read_word(self, i: int, *, test_mode: bool = False) -> list[Word]:
        """Read one word at ``i`` (may yield several when ``$IFS`` splits it)."""
        s, n = self.src, self.n
        breaks = _TEST_BREAK if test_mode else WORD_BREAK
        plain = _PLAIN_TEST if test_mode else _PLAIN
        m = plain.match(s, i)
        if m is not None and (m.end() == n or (s[m.end()] in breaks and s[m.end()] != "(")):
            # fast path: a word of plain characters only (most words are)
            run = m.group()
            self.pos = m.end()
            return [Word(run, False, run[0] == "~", GLOB_CHARS.search(run) is not None)]
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
                if not b.glob and GLOB_CHARS.search(run):
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
            end = self.arith_end(i + 1)
            if end is not None:  # $(( ... )): expanded as in double quotes, then evaluated
                body = s[i + 3 : end - 2]
                if "$" in body or "`" in body:
                    inner = self.expansions(body)
                    b.subs.extend(inner.subs)
                    body = inner.text
                b.parts.append("$((" + body + "))")
                return end
            self.pos = i + 2
            b.subs.append(self.nested(i, "command substitution '$('"))
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
        self.enter(i)
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
        self.enter(i)
        b.subs.append(type(self)("".join(out), self.budget).parse_program())
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

    def arith_end(self, i: int) -> int | None:
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
            redirect.heredoc = Word(body, quoted=True) if quoted else self.expansions(body)
        self.pending.clear()

    def expansions(self, text: str) -> Word:
        """``text`` read as the body of a here-document (as double-quoted text where
        ``"`` is plain): its ``$(...)``, backticks and ``${...}`` parsed, one level deeper."""
        sub = type(self)(text, self.budget)
        b = _WordBuilder()
        self.budget.enter(self.pos)
        sub._read_dquoted(0, b, heredoc=True)
        self.budget.leave()
        return Word("".join(b.parts), True, False, False, tuple(b.subs))
