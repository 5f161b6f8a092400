"""PowerShell and cmd command text read into commands (:func:`parse_powershell`,
:func:`parse_cmd`): good enough to judge commands, not a full grammar of either language.

Both readers give a :class:`Script`: pipelines of commands (statements split on ``;``,
newlines, ``&&``, ``||``, stages on ``|``; cmd also splits on ``&`` and on the parentheses
of a block), each a tuple of :class:`PsWord` after quote removal, with the targets of its
redirections.  PowerShell's quoting: ``'...'`` (``''`` is a quote), ``"..."`` and bare
words with the backtick escape, here-strings (``@'...'@``, ``@"..."@``), comments (``#``,
``<#...#>``).  Every ``(...)``, ``$(...)``, ``@(...)`` and ``{...}`` group is kept whole as
one word's ``group`` and its text is handed back in ``Script.nested`` (each is judged as a
script of its own: a script block may run).  cmd's quoting: ``"..."`` and the ``^`` escape.
Variables are kept as written (``$env:X``, ``$x``, ``%X%``): the analysis resolves them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..shell import SUBST


class PsSyntaxError(ValueError):
    """The text does not read as commands (an unclosed quote or group)."""

    def __init__(self, detail: str, offset: int) -> None:
        super().__init__(f"{detail} at offset {offset}")
        self.detail = detail
        self.offset = offset


@dataclass(frozen=True, slots=True)
class PsWord:
    """One word after quote removal: ``text`` keeps variables as written and shows a group
    inside a word as :data:`..shell.SUBST`; ``group`` is the inner text when the whole word
    is one ``(...)``/``$(...)``/``@(...)`` (kind ``"("``) or ``{...}`` (kind ``"{"``);
    ``raw`` is the word as written and ``inner`` the text of every group in it."""

    text: str
    quoted: bool = False
    group: str | None = None
    kind: str = ""
    raw: str = ""  # the word as written
    inner: tuple[str, ...] = ()  # the text of every group inside the word


@dataclass(frozen=True, slots=True)
class PsCommand:
    """One command: its words and where its output is redirected."""

    words: tuple[PsWord, ...]
    redirects: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Script:
    """Pipelines (each: its stages, in order) and the text of every group in them."""

    pipelines: tuple[tuple[PsCommand, ...], ...]
    nested: tuple[str, ...] = ()


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
_CLOSE = {"(": ")", "{": "}"}


@dataclass(slots=True)
class _Builder:
    """Words into commands into pipelines, shared by both readers."""

    source: str = ""
    pos: int = 0  # where the reader is (set by it before each character)
    begin: int = 0  # where the current word began
    inner: list[str] = field(default_factory=list)

    pipelines: list[tuple[PsCommand, ...]] = field(default_factory=list)
    stages: list[PsCommand] = field(default_factory=list)
    words: list[PsWord] = field(default_factory=list)
    redirects: list[str] = field(default_factory=list)
    nested: list[str] = field(default_factory=list)
    buf: list[str] = field(default_factory=list)
    started: bool = False
    quoted: bool = False
    group: tuple[str, str] | None = None  # (kind, inner) while the word is one group
    redirect_next: bool = False

    def add(self, text: str) -> None:
        if not self.started:
            self.begin = self.pos
        self.buf.append(text)
        self.started = True
        self.group = None

    def add_group(self, kind: str, inner: str) -> None:
        whole = not self.started
        if whole:
            self.begin = self.pos
        self.inner.append(inner)
        self.buf.append(SUBST)
        self.started = True
        self.group = (kind, inner) if whole else None
        self.nested.append(inner)

    def end_word(self) -> None:
        if not self.started:
            return
        text = "".join(self.buf)
        kind, inner = self.group if self.group else ("", None)
        if self.redirect_next:
            self.redirects.append(text)
            self.redirect_next = False
        else:
            raw = self.source[self.begin : self.pos]
            self.words.append(PsWord(text, self.quoted, inner, kind, raw, tuple(self.inner)))
        self.buf, self.started, self.quoted, self.group = [], False, False, None
        self.inner = []

    def end_stage(self) -> None:
        self.end_word()
        if self.words:
            self.stages.append(PsCommand(tuple(self.words), tuple(self.redirects)))
        self.words, self.redirects = [], []

    def end_pipeline(self) -> None:
        self.end_stage()
        if self.stages:
            self.pipelines.append(tuple(self.stages))
        self.stages = []

    def script(self) -> Script:
        self.pos = len(self.source)
        self.end_pipeline()
        return Script(tuple(self.pipelines), tuple(self.nested))


def _skip_single(text: str, i: int) -> int:
    """Index after the ``'...'`` string whose opening quote is at ``i``."""
    n = len(text)
    i += 1
    while i < n:
        if text[i] == "'":
            if i + 1 < n and text[i + 1] == "'":
                i += 2
                continue
            return i + 1
        i += 1
    raise PsSyntaxError("unterminated single quote", n)


def _close_group(text: str, start: int) -> int:
    """Index of the bracket closing the group opened at ``start`` (quotes, here-strings,
    comments and nested groups skipped)."""
    depth = 0
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c in "({":
            depth += 1
        elif c in ")}":
            depth -= 1
            if depth == 0:
                return i
        elif c == "'":
            i = _skip_single(text, i)
            continue
        elif c == '"':
            i = _read_double(text, i, None, [])[0]
            continue
        elif c == "`":
            i += 2
            continue
        elif c == "#" and (i == start or text[i - 1] in " \t\n;(") and text[i - 1 : i] != "<":
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        i += 1
    raise PsSyntaxError("unclosed group", start)


def _read_double(
    text: str, i: int, out: list[str] | None, nested: list[str]
) -> tuple[int, list[str]]:
    """Read the ``"..."`` string opened at ``i`` into ``out``; returns the index after it."""
    n = len(text)
    out = [] if out is None else out
    i += 1
    while i < n:
        c = text[i]
        if c == '"':
            if i + 1 < n and text[i + 1] == '"':
                out.append('"')
                i += 2
                continue
            return i + 1, out
        if c == "`" and i + 1 < n:
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
            continue
        if c == "$" and i + 1 < n and text[i + 1] == "(":
            end = _close_group(text, i + 1)
            nested.append(text[i + 2 : end])
            out.append(SUBST)
            i = end + 1
            continue
        out.append(c)
        i += 1
    raise PsSyntaxError("unterminated double quote", n)


def _here_string(text: str, i: int, b: _Builder) -> int:
    """Read the here-string ``@'`` / ``@"`` at ``i``; returns the index after it."""
    quote = text[i + 1]
    end = text.find("\n" + quote + "@", i + 2)
    if end < 0:
        raise PsSyntaxError("unterminated here-string", i)
    body = text[text.find("\n", i) + 1 : end] if text.find("\n", i) < end else ""
    b.quoted = True
    if quote == "'":
        b.add(body)
    else:
        parts: list[str] = []
        _read_double('"' + body.replace('"', '""') + '"', 0, parts, b.nested)
        b.add("".join(parts))
    return end + 3


def parse_powershell(text: str) -> Script:
    """Read PowerShell text into commands.

    Raises:
        PsSyntaxError: an unclosed quote, here-string or group.
    """
    b = _Builder(text)
    i, n = 0, len(text)
    while i < n:
        b.pos = i
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c in " \t\r\f\v":
            b.end_word()
        elif c in "\n;":
            b.end_pipeline()
        elif c == "|":
            if nxt == "|":
                b.end_pipeline()
                i += 1
            else:
                b.end_stage()
        elif c == "&":
            if nxt == "&":
                b.end_pipeline()
                i += 1
            elif not b.words and not b.started:
                b.add("&")  # the call operator
                b.end_word()
            else:
                b.end_pipeline()  # background job (PowerShell 7)
        elif c == "<" and nxt == "#":
            end = text.find("#>", i + 2)
            i = n if end < 0 else end + 2
            continue
        elif c == "#" and not b.started:
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif c == ">" or (c in "123456*" and nxt == ">" and not b.started):
            b.end_word()
            i += 1 if c == ">" else 2
            if i < n and text[i] == ">":
                i += 1
            if i < n and text[i] == "&":  # 2>&1: a stream merged, no file
                i += 2
                continue
            b.redirect_next = True
            continue
        elif c == "'":
            end = _skip_single(text, i)
            b.quoted = True
            b.add(text[i + 1 : end - 1].replace("''", "'"))
            i = end
            continue
        elif c == '"':
            i, parts = _read_double(text, i, None, b.nested)
            b.quoted = True
            b.add("".join(parts))
            continue
        elif c == "@" and nxt in "'\"" and text[i + 2 : i + 3] in ("\n", "\r", ""):
            i = _here_string(text, i, b)
            continue
        elif c == "`":
            if nxt in ("\n", "\r"):  # line continuation
                i += 2 if nxt == "\n" or text[i + 2 : i + 3] != "\n" else 3
                continue
            b.add(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        elif c == "$" and nxt == "{":
            end = text.find("}", i)
            if end < 0:
                raise PsSyntaxError("unclosed ${", i)
            b.add(text[i : end + 1])
            i = end + 1
            continue
        elif (c in "$@" and nxt in "({") or c in "({":
            if c == "(" and b.started and not b.words and "".join(b.buf).replace("-", "").isalnum():
                b.end_word()  # iex(...): the command name ends at the parenthesis
            opening = i if c in "({" else i + 1
            end = _close_group(text, opening)
            kind = "{" if text[opening] == "{" and c != "@" else "("
            b.add_group(kind, text[opening + 1 : end])
            i = end + 1
            continue
        elif c == ",":
            b.end_word()  # an array's elements are arguments of their own
        else:
            b.add(c)
        i += 1
    return b.script()


def parse_cmd(text: str) -> Script:
    """Read cmd.exe text into commands (``^`` escapes, ``"..."`` quotes, ``&``, ``&&``,
    ``||``, ``|``, redirections, parenthesized blocks).

    Raises:
        PsSyntaxError: never for cmd (an unclosed quote runs to the end of the line);
            kept for a reader's uniform signature.
    """
    b = _Builder(text)
    i, n = 0, len(text)
    depth = 0
    in_quote = False
    while i < n:
        b.pos = i
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if in_quote:
            if c == '"':
                in_quote = False
            elif c == "\n":
                in_quote = False
                b.end_pipeline()
            else:
                b.add(c)
            i += 1
            continue
        if c in " \t\r":
            b.end_word()
        elif c == "\n":
            b.end_pipeline()
        elif c == '"':
            in_quote = True
            b.quoted = True
            b.add("")
        elif c == "^":
            if nxt == "\n":
                i += 2
                continue
            b.add(nxt)
            i += 2
            continue
        elif c == "&" or (c == "|" and nxt == "|"):
            b.end_pipeline()
            if nxt == c:
                i += 1
        elif c == "|":
            b.end_stage()
        elif c == "(" and not b.words and not b.started:
            depth += 1
            b.end_pipeline()
        elif c == ")" and depth > 0:
            depth -= 1
            b.end_pipeline()
        elif c in "<>" or (c in "0123456789" and nxt in "<>" and not b.started):
            b.end_word()
            i += 1 if c in "<>" else 2
            if i < n and text[i] == ">":
                i += 1
            if i < n and text[i] == "&":
                i += 2
                continue
            b.redirect_next = True
            continue
        else:
            b.add(c)
        i += 1
    return b.script()


def read(text: str, dialect: str) -> Script:
    """``text`` read by the dialect's reader (``"powershell"`` or ``"cmd"``).

    Raises:
        PsSyntaxError: see :func:`parse_powershell`.
    """
    return parse_cmd(text) if dialect == "cmd" else parse_powershell(text)
