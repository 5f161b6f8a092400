"""The shell grammar: lists, and-or lists, pipelines, compound commands, functions,
``case``, ``[[ ... ]]`` and redirections, into the flat :class:`~._nodes.Script`; and
:func:`parse`, the entry point."""

from __future__ import annotations

import re
from dataclasses import replace

from ._budget import ParseBudget, ShellSyntaxError
from ._lexer import ASSIGNMENT, EOF, GLOB_CHARS, OP, WORD, WORD_BREAK, Lexer, Token
from ._nodes import FunctionDef, Pipeline, Redirect, Script, SimpleCommand, Word

__all__ = ["Parser", "expansions", "parse"]

_REDIRECT_OPS = frozenset({"<", ">", ">>", ">|", "<>", "<&", ">&", "&>", "&>>", "<<", "<<-", "<<<"})

# keywords recognized in command position
_PREFIX_KEYWORDS = frozenset({"if", "then", "else", "elif", "while", "until", "do", "!"})
_CLOSING_KEYWORDS = frozenset({"fi", "done", "esac"})
_CASE_ENDS = frozenset({";;", ";&", ";;&"})
_COMPOUND_STARTS = frozenset({"{", "if", "while", "until", "for", "select", "case", "[["})
_COMPOUND_AHEAD = re.compile(r"\(|(?:\{|\[\[|if|while|until|for|select|case)(?=[\s;&|()<>]|$)")
"""What starts a compound command (after ``coproc NAME``)."""


def expansions(text: str, budget: ParseBudget | None = None) -> Word:
    """``text`` read as double-quoted text in which ``"`` is plain (a here-document body,
    a prompt string, an arithmetic expression): a quoted :class:`Word` whose ``subs``
    are the scripts of its ``$(...)`` and backticks.

    Raises:
        ShellLimitError, ShellSyntaxError: as :func:`parse`.
    """
    return Parser("", budget or ParseBudget()).expansions(text)


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
    plain = _plain_list(source, budget)
    if plain is not None:
        return plain
    depth = budget.depth
    try:
        return Parser(source, budget).parse_program()
    finally:
        budget.depth = depth  # an error leaves the levels it was in open


_PLAIN_LINE = re.compile(r"[^'\"\\$`<>()#\n\r\f\v]*")
"""A line with no quote, escape, expansion, redirection, parenthesis, comment or newline:
words and the operators between them, nothing else (most commands agents run)."""
_PLAIN_TOKEN = re.compile(r"[ \t]*(?:([^ \t&|;]+)|(;;&|;;|;&|&&|\|\||\|&|[|&;]))")
_PLAIN_OPS = frozenset({"&&", "||", ";", "|"})
_NOT_SIMPLE = frozenset(
    {"!", "{", "}", "[[", "case", "coproc", "do", "done", "elif", "else", "esac", "fi"}
    | {"for", "function", "if", "select", "then", "until", "while"}
)
"""Words that start something other than a simple command in command position."""


def _plain_list(source: str, budget: ParseBudget) -> Script | None:
    """The :class:`Script` the grammar makes of a plain line (:data:`_PLAIN_LINE`) of
    simple commands joined by ``&&``, ``||``, ``;`` and ``|``, read in one pass; its
    tokens (the end included) are charged to ``budget`` as the grammar charges them.
    None for any other text, or a line the grammar refuses: the grammar reads it (and
    raises).

    Raises:
        ShellLimitError: the line has more tokens than the budget has left (raised where
            the grammar would raise it: each token is then charged as it would be).
    """
    if _PLAIN_LINE.fullmatch(source) is None:
        return None
    commands: list[SimpleCommand] = []
    pipelines: list[Pipeline] = []
    words: list[Word] = []
    assignments: list[Word] = []
    tokens = 0
    room = budget.max_words - budget.words  # past it, the grammar stops: so does this
    first = 0  # the first command of the current pipeline
    expecting = False  # after && || |: a command must follow
    globs = GLOB_CHARS.search(source) is not None  # else no word is a glob
    equals = "=" in source  # else no word is an assignment
    for m in _PLAIN_TOKEN.finditer(source):
        tokens += 1
        if tokens > room:
            _charge(source, budget)  # raises at the token the grammar would raise at
        text, op = m.groups()
        if text is not None:
            if not words and not assignments and text in _NOT_SIMPLE:
                return None  # a keyword: the grammar's
            word = Word(text, False, text[0] == "~", globs and GLOB_CHARS.search(text) is not None)
            if equals and not words and ASSIGNMENT.match(source, m.start(1)) is not None:
                assignments.append(word)
            else:
                words.append(word)
            expecting = False
        elif op not in _PLAIN_OPS or expecting:
            return None
        elif not words and not assignments:
            if op != ";":  # "; ;" and a leading ";" are empty, "&& x" is an error
                return None
        else:
            commands.append(SimpleCommand(tuple(words), tuple(assignments)))
            words, assignments = [], []
            expecting = op != ";"
            if op != "|":
                if len(commands) - first > 1:
                    pipelines.append(Pipeline(tuple((i,) for i in range(first, len(commands)))))
                first = len(commands)
    if expecting:
        return None
    if words or assignments:
        commands.append(SimpleCommand(tuple(words), tuple(assignments)))
    if len(commands) - first > 1:
        pipelines.append(Pipeline(tuple((i,) for i in range(first, len(commands)))))
    if not budget.take(tokens + 1):  # the end is a token; a clock check falls among them
        _charge(source, budget)
    return Script(tuple(commands), tuple(pipelines))


def _charge(source: str, budget: ParseBudget) -> None:
    """Charge the tokens of a plain line (and its end) to ``budget`` one by one, at their
    offsets, as the grammar's lexer does.

    Raises:
        ShellLimitError: as :meth:`.ParseBudget.word`.
    """
    for m in _PLAIN_TOKEN.finditer(source):
        budget.word(m.start(m.lastindex or 0))
    budget.word(len(source))


class _Builder:
    """Collects the commands, pipelines and functions of one script being parsed."""

    __slots__ = ("commands", "functions", "pipelines")

    def __init__(self) -> None:
        self.commands: list[SimpleCommand] = []
        self.pipelines: list[Pipeline] = []
        self.functions: list[FunctionDef] = []

    def build(self) -> Script:
        return Script(tuple(self.commands), tuple(self.pipelines), tuple(self.functions))


class Parser(Lexer):
    """The recursive-descent grammar over the :class:`~._lexer.Lexer`'s cursor; the lexer
    re-enters it for each substitution (:meth:`nested`)."""

    __slots__ = ()

    # -- entry points -------------------------------------------------------------------

    def parse_program(self) -> Script:
        builder = _Builder()
        self._list(builder, frozenset(), frozenset())
        tok = self.peek_token()
        if tok.kind != EOF:
            raise ShellSyntaxError(f"unexpected {self._describe(tok)}", tok.offset)
        return builder.build()

    def nested(self, start: int, close_what: str) -> Script:
        """Parse a ``$(...)``/``<(...)`` body starting at ``self.pos`` up to its ``)``."""
        self.enter(start)
        builder = _Builder()
        self._list(builder, frozenset({")"}), frozenset())
        tok = self.next_token()
        if tok.kind != OP or tok.op != ")":
            raise ShellSyntaxError(f"unterminated {close_what}", start)
        self.budget.leave()
        return builder.build()

    # -- grammar --------------------------------------------------------------------------

    def _list(self, b: _Builder, stop_ops: frozenset[str], stop_words: frozenset[str]) -> None:
        while True:
            tok = self.peek_token()
            if tok.kind == OP and tok.op in ("\n", ";"):
                self.next_token()
                continue
            if tok.kind == EOF or (tok.kind == OP and tok.op in stop_ops):
                return
            if stop_words and self._keyword(tok, stop_words):
                return
            start = len(b.commands)
            self._and_or(b)
            tok = self.peek_token()
            if tok.kind == OP and tok.op == "&":
                self.next_token()
                for i in range(start, len(b.commands)):
                    b.commands[i] = replace(b.commands[i], background=True)
            elif tok.kind == OP and tok.op in (";", "\n"):
                self.next_token()

    def _and_or(self, b: _Builder) -> None:
        self._pipeline(b)
        while (tok := self.peek_token()).kind == OP and tok.op in ("&&", "||"):
            self.next_token()
            self._skip_newlines()
            self._pipeline(b)

    def _pipeline(self, b: _Builder) -> None:
        stages = [self._command(b)]
        while (tok := self.peek_token()).kind == OP and tok.op in ("|", "|&"):
            self.next_token()
            self._skip_newlines()
            stages.append(self._command(b))
        if len(stages) > 1:
            b.pipelines.append(Pipeline(tuple(tuple(range(s, e)) for s, e in stages)))

    def _command(self, b: _Builder) -> tuple[int, int]:
        """Parse one command; return the range of indices it added to ``b.commands``."""
        start = len(b.commands)
        tok = self.peek_token()
        while self._keyword(tok, _PREFIX_KEYWORDS):  # `if`, `!`, `do`...: the command follows
            self.next_token()
            self._skip_newlines()
            tok = self.peek_token()
        if tok.kind == EOF:
            raise ShellSyntaxError("unexpected end of input", tok.offset)
        if tok.kind == OP:
            if tok.op == "(":
                self.next_token()
                end = self.arith_end(self.pos - 1)
                if end is not None:  # (( arithmetic )): a command named "((", as "[["
                    self._arithmetic(b, self.pos + 1, end)
                else:
                    self.enter(tok.offset)
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
            self.next_token()
            self.enter(tok.offset)
            self._list(b, frozenset(), frozenset({"}"}))
            if not self._keyword(self.peek_token(), frozenset({"}"})):
                raise ShellSyntaxError("unterminated '{'", tok.offset)
            self.next_token()
            self.budget.leave()
            self._trailing_redirects(b)
        elif keyword in _CLOSING_KEYWORDS:
            self.next_token()
            self._trailing_redirects(b)
        elif keyword == "case":
            self._case(b)
        elif keyword == "function":
            self.next_token()
            self._function_keyword(b, tok.offset)
        elif keyword == "[[":
            self.next_token()
            self._test_expression(b, word, tok.offset)
        elif keyword == "coproc":
            self.next_token()
            self._coproc(b)
        elif keyword in ("for", "select"):
            self.next_token()
            self.skip_blanks_inline()
            end = self.arith_end(self.pos)
            if end is not None:  # for (( i = 0; ... )): the three expressions
                self._arithmetic(b, self.pos + 2, end)
            else:
                self._simple(b, word)
        else:
            self._simple(b)
        return start, len(b.commands)

    def _arithmetic(self, b: _Builder, start: int, end: int) -> None:
        """``(( EXPR ))`` from ``start`` (past ``((``) to ``end`` (past ``))``): the
        command ``(( EXPR ))``, EXPR expanded as in double quotes (its substitutions run)."""
        expression = self.expansions(self.src[start : end - 2].strip())
        self.pos = end
        b.commands.append(SimpleCommand((Word("(("), expression, Word("))"))))

    def _coproc(self, b: _Builder) -> None:
        """``coproc [NAME] COMMAND``: COMMAND runs (in the background); NAME is only
        taken before a compound command (``coproc X { ...; }``)."""
        tok = self.peek_token()
        if (
            tok.kind == WORD
            and tok.word is not None
            and not tok.word.quoted
            and tok.word.text not in _COMPOUND_STARTS
            and _COMPOUND_AHEAD.match(self.src, self._skip_blanks(self.pos)) is not None
        ):
            self.next_token()  # the coprocess's NAME
        start = len(b.commands)
        self._command(b)
        for i in range(start, len(b.commands)):
            b.commands[i] = replace(b.commands[i], background=True)

    def _simple(self, b: _Builder, first: Word | None = None) -> None:
        words: list[Word] = [first] if first is not None else []
        assignments: list[Word] = []
        redirects: list[Redirect] = []
        while True:
            tok = self.peek_token()
            if tok.kind == WORD:
                assert tok.word is not None
                self.next_token()
                if not words and tok.assignment:
                    assignments.append(self._assignment_value(tok.word))
                else:
                    words.append(tok.word)
            elif tok.kind == OP and tok.op in _REDIRECT_OPS:
                redirects.append(self._redirect())
            elif (
                tok.kind == OP
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
            raise ShellSyntaxError(f"unexpected {self._describe(self.peek_token())}", self.pos)
        b.commands.append(SimpleCommand(tuple(words), tuple(assignments), tuple(redirects)))

    def _assignment_value(self, word: Word) -> Word:
        """``arr=(a b c)``: fold the array elements into the assignment word."""
        if not word.text.endswith("=") or not self.src.startswith("(", self.pos):
            return word
        self.next_token()  # the "("
        texts: list[str] = []
        subs: list[Script] = list(word.subs)
        while True:
            tok = self.next_token()
            if tok.kind == OP and tok.op == ")":
                break
            if tok.kind == OP and tok.op == "\n":
                continue
            if tok.kind != WORD or tok.word is None:
                raise ShellSyntaxError("unterminated array assignment", tok.offset)
            texts.append(tok.word.text)
            subs.extend(tok.word.subs)
        return Word(word.text + "(" + " ".join(texts) + ")", True, False, False, tuple(subs))

    def _function_body(self, b: _Builder, name: str, offset: int) -> None:
        self.next_token()  # "("
        self._expect_op(")", "expected ')' in function definition", offset)
        self._skip_newlines()
        body = _Builder()
        self.enter(offset)
        self._command(body)
        self.budget.leave()
        b.functions.append(FunctionDef(name, body.build()))

    def _function_keyword(self, b: _Builder, offset: int) -> None:
        tok = self.next_token()
        if tok.kind != WORD or tok.word is None:
            raise ShellSyntaxError("expected a function name", tok.offset)
        name = tok.word.text
        nxt = self.peek_token()
        if nxt.kind == OP and nxt.op == "(":
            self.next_token()
            self._expect_op(")", "expected ')' in function definition", offset)
        self._skip_newlines()
        body = _Builder()
        self.enter(offset)
        self._command(body)
        self.budget.leave()
        b.functions.append(FunctionDef(name, body.build()))

    def _case(self, b: _Builder) -> None:
        head = self.next_token()
        assert head.word is not None
        subject = self.next_token()
        if subject.kind != WORD or subject.word is None:
            raise ShellSyntaxError("expected a word after 'case'", subject.offset)
        b.commands.append(SimpleCommand((head.word, subject.word)))
        self._skip_newlines()
        if not self._keyword(self.next_token(), frozenset({"in"})):
            raise ShellSyntaxError("expected 'in' after 'case WORD'", head.offset)
        esac = frozenset({"esac"})
        while True:
            self._skip_newlines()
            tok = self.peek_token()
            if self._keyword(tok, esac):
                self.next_token()
                break
            if tok.kind == EOF:
                raise ShellSyntaxError("unterminated 'case'", head.offset)
            if tok.kind == OP and tok.op == "(":
                self.next_token()
            while True:  # pattern [| pattern]... )
                tok = self.next_token()
                if tok.kind == OP and tok.op == ")":
                    break
                if tok.kind == WORD or (tok.kind == OP and tok.op == "|"):
                    continue
                raise ShellSyntaxError("malformed 'case' pattern", tok.offset)
            self._list(b, _CASE_ENDS, esac)
            tok = self.peek_token()
            if tok.kind == OP and tok.op in _CASE_ENDS:
                self.next_token()
        self._trailing_redirects(b)

    def _test_expression(self, b: _Builder, opener: Word, offset: int) -> None:
        """``[[ ... ]]``: operators inside are plain words until ``]]``."""
        words = [opener]
        while True:
            self.skip_blanks_inline(newlines=True)
            if self.pos >= self.n:
                raise ShellSyntaxError("unterminated '[['", offset)
            self.budget.word(self.pos)
            end = self.pos + 2
            if self.src.startswith("]]", self.pos) and (
                end == self.n or self.src[end] in WORD_BREAK
            ):  # "]]" ends the test even when an operator follows it: [[ -f x ]]&&...
                words.append(Word("]]"))
                self.pos = end
                break
            pieces = self.read_word(self.pos, test_mode=True)
            words.extend(pieces)
            if pieces and pieces[-1].text == "]]" and not pieces[-1].quoted:
                break
        b.commands.append(SimpleCommand(tuple(words)))
        self._trailing_redirects(b)

    def _trailing_redirects(self, b: _Builder) -> None:
        redirects: list[Redirect] = []
        while (tok := self.peek_token()).kind == OP and tok.op in _REDIRECT_OPS:
            redirects.append(self._redirect())
        if redirects:
            b.commands.append(SimpleCommand((), (), tuple(redirects)))

    def _redirect(self) -> Redirect:
        tok = self.next_token()
        target = self.next_token()
        if target.kind != WORD or target.word is None:
            raise ShellSyntaxError(f"missing target after {tok.op!r}", tok.offset)
        redirect = Redirect(tok.op, tok.fd, target.word)
        if tok.op in ("<<", "<<-"):
            delimiter = target.word
            self.pending.append((redirect, delimiter.text, tok.op == "<<-", delimiter.quoted))
        return redirect

    # -- token stream -----------------------------------------------------------------------
    def _expect_op(self, op: str, message: str, offset: int) -> None:
        tok = self.next_token()
        if tok.kind != OP or tok.op != op:
            raise ShellSyntaxError(message, offset)

    def _skip_newlines(self) -> None:
        while (tok := self.peek_token()).kind == OP and tok.op == "\n":
            self.next_token()

    @staticmethod
    def _keyword(tok: Token, words: frozenset[str]) -> bool:
        w = tok.word
        return tok.kind == WORD and w is not None and not w.quoted and w.text in words

    @staticmethod
    def _describe(tok: Token) -> str:
        if tok.kind == EOF:
            return "end of input"
        if tok.kind == OP:
            return "newline" if tok.op == "\n" else repr(tok.op)
        return repr(tok.word.text if tok.word else "")
