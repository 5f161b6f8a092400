"""Program text computed at run time: what ``echo``, ``printf``, ``base64 -d``, ``xxd -r -p``,
``rev``, ``tr``, decompressors... output, as far as the guard can compute it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..shell import SUBST, Redirect, Script, Word
from .invocation import Invocation
from .model import HOME
from .options import word_set
from .programs import INTERPRETERS, MAX_READINGS, dynamic_name, exec_info
from .wrappers import WRAPPERS, canon

# -- program text computed at run time ------------------------------------------------------------
#
# A shell runs text it is handed: a ``-c`` script, ``eval``'s arguments, a here-string, what
# is piped into it.  The guard can judge that text only if it can read it.  When the text
# is literal, or computed from literals by commands whose output the guard can compute
# (echo, printf, base64 -d, xxd -r -p, rev, tr...), the result is judged like any command
# line.  When it is made at run time in a way the guard cannot follow (a decoder reading a
# file, a program given inline, a variable or a substitution standing for the whole
# script or a command name), it is refused as ``dynamic-code``.

_MAX_TEXT = 1 << 16  # bytes of computed text the guard follows before giving up


@dataclass(frozen=True, slots=True)
class Stream:
    """What flows out of a command or a pipeline, as far as the guard can tell.

    ``readings``: the texts it may be, when the guard can compute them (more than one when
    shells disagree: ``printf '\\x72'`` is ``r`` in bash, ``\\x72`` in dash).  ``partial``:
    they are only pieces of it (a group with a local file in it), each judged alone.
    ``holes``: they contain :data:`SUBST` for output the guard does not know.  ``hidden``:
    the command that makes the text at run time in a way the guard cannot follow (a
    decoder of a file, a text transformer of unknown input, an inline program).  No
    readings and nothing hidden: text from a local file or program (``cat install.sh``).
    """

    readings: tuple[bytes, ...] = ()
    partial: bool = False
    holes: bool = False
    hidden: str = ""

    @property
    def complete(self) -> bool:
        return bool(self.readings) and not self.partial and not self.holes


LOCAL = Stream()

_PASS_THROUGH = frozenset({"cat", "tee", "pv"})
_DECOMPRESS = {
    "gunzip": "gzip",
    "zcat": "gzip",
    "gzcat": "gzip",
    "gzip": "gzip",
    "bunzip2": "bzip2",
    "bzcat": "bzip2",
    "bzip2": "bzip2",
    "unxz": "xz",
    "xzcat": "xz",
    "xz": "xz",
    "unlzma": "xz",
    "lzcat": "xz",
    "lzma": "xz",
}
_TRANSFORMERS = frozenset(
    {*_DECOMPRESS, *INTERPRETERS, "awk", "base64", "base32", "basenc", "openssl", "xxd"}
    | word_set("rev tac tr sed cut iconv uudecode zstd unzstd zstdcat od hexdump")
)
"""Commands that turn the text they read into other text: between a literal and a shell
they hide what the shell will run, unless the guard can compute their output."""

STREAM_NAMES = frozenset(
    {*_TRANSFORMERS, *_PASS_THROUGH, *WRAPPERS, "echo", "printf", "yes", "xargs"}
)
"""A substitution whose commands have none of these names outputs local text."""

_SETUP_TOOLS: dict[str, frozenset[str] | None] = {
    **dict.fromkeys(("ssh-agent", "gpg-agent", "keychain", "dircolors", "thefuck"), None),
    **dict.fromkeys(
        ("pyenv", "rbenv", "nodenv", "goenv", "jenv", "plenv", "phpenv", "luaenv", "scalaenv"),
        word_set("init virtualenv-init"),
    ),
    **dict.fromkeys(("zoxide", "starship", "atuin", "mcfly"), word_set("init")),
    **dict.fromkeys(("mise", "rtx"), word_set("activate env hook-env")),
    **dict.fromkeys(
        ("conda", "mamba", "micromamba"),
        word_set("shell shell.bash shell.zsh shell.posix shell.fish shell-hook"),
    ),
    **dict.fromkeys(
        ("kubectl", "helm", "gh", "npm", "pip", "pip3", "glab"), word_set("completion")
    ),
    **dict.fromkeys(("rustup", "deno"), word_set("completions")),
    "poetry": frozenset({"completions", "env activate"}),
    "pdm": frozenset({"completion", "venv activate"}),
    "register-python-argcomplete": None,
    "navi": word_set("widget"),
    "direnv": word_set("hook export"),
    "brew": word_set("shellenv"),
    "opam": word_set("env config"),
    "fnm": word_set("env completions"),
    "docker-machine": word_set("env"),
    "minikube": word_set("docker-env podman-env"),
    "luarocks": word_set("path"),
    "pixi": word_set("shell-hook"),
    "devbox": word_set("shellenv"),
    "uv": word_set("generate-shell-completion"),
}
"""Tools whose output is shell setup code meant for ``eval "$(tool ...)"`` (with the
subcommand, one or two words, that prints it; None: any).  The guard trusts that output
as it trusts running the tool: ``eval "$(pyenv init -)"`` is allowed without knowing what
it prints."""


def setup_code(script: Script) -> bool:
    """``script`` is one call of a :data:`_SETUP_TOOLS` tool that prints setup code."""
    if len(script.commands) != 1 or script.pipelines or script.functions:
        return False
    words = script.commands[0].words
    if not words or dynamic_name(words[0].text):
        return False
    subcommands = _SETUP_TOOLS.get(canon(words[0].text), frozenset())
    if subcommands is None:
        return True
    named = [w.text for w in words[1:3] if not w.text.startswith("-")]
    return bool(named) and (named[0] in subcommands or " ".join(named) in subcommands)


# echo and printf -------------------------------------------------------------------------------

_SIMPLE_ESCAPES = {
    "a": b"\a",
    "b": b"\b",
    "e": b"\x1b",
    "E": b"\x1b",
    "f": b"\f",
    "n": b"\n",
    "r": b"\r",
    "t": b"\t",
    "v": b"\v",
    "\\": b"\\",
    '"': b'"',
    "'": b"'",
}
_OCTAL_DIGITS = re.compile(r"[0-7]{1,3}")
_OCTAL_AFTER_ZERO = re.compile(r"[0-7]{0,3}")
_HEX_DIGITS = {
    "x": re.compile(r"[0-9A-Fa-f]{1,2}"),
    "u": re.compile(r"[0-9A-Fa-f]{1,4}"),
    "U": re.compile(r"[0-9A-Fa-f]{1,8}"),
}


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def _unescape(text: str, *, octal: str, hex_escapes: bool, stop: bool) -> tuple[bytes, bool]:
    """Expand backslash escapes; return the bytes and whether ``\\c`` ended the output.

    ``octal``: ``"format"`` (a printf format: ``\\NNN``, one to three digits),
    ``"echo"`` (bash ``echo -e``: only ``\\0NNN``), ``"both"`` (``%b``, dash and zsh echo).
    ``hex_escapes``: ``\\xHH``, ``\\uHHHH``, ``\\UHHHHHHHH`` (bash, zsh; not dash).
    ``stop``: ``\\c`` ends all output (echo, ``%b``).
    """
    out = bytearray()
    i, n = 0, len(text)
    while i < n:
        j = text.find("\\", i)
        if j < 0 or j + 1 >= n:
            out += _encode(text[i:])
            break
        out += _encode(text[i:j])
        c = text[j + 1]
        i = j + 2
        if c in _SIMPLE_ESCAPES:
            out += _SIMPLE_ESCAPES[c]
        elif c == "c" and stop:
            return bytes(out), True
        elif c in _HEX_DIGITS and hex_escapes and (m := _HEX_DIGITS[c].match(text, i)):
            code = int(m.group(), 16)
            i = m.end()
            out += bytes([code]) if c == "x" else _encode(chr(min(code, 0x10FFFF)))
        elif c == "0" and octal != "format":
            m = _OCTAL_AFTER_ZERO.match(text, i)
            assert m is not None
            out.append(int(m.group() or "0", 8) & 0xFF)
            i = m.end()
        elif c in "01234567" and octal != "echo":
            m = _OCTAL_DIGITS.match(text, j + 1)
            assert m is not None
            out.append(int(m.group(), 8) & 0xFF)
            i = m.end()
        else:
            out += _encode("\\" + c)
    return bytes(out), False


_ECHO_SHELLS = (("bash", "neE"), ("dash", "n"), ("zsh", "neE"))


def _echo_readings(args: Sequence[str]) -> tuple[bytes, ...]:
    """What ``echo ARGS`` prints in bash (escapes only with ``-e``), dash (escapes always,
    no options but ``-n``) and zsh (escapes unless ``-E``)."""
    readings: dict[bytes, None] = {}
    for shell, options in _ECHO_SHELLS:
        words = list(args)
        newline, escapes = True, shell != "bash"
        while (
            words and len(words[0]) > 1 and words[0][0] == "-" and set(words[0][1:]) <= set(options)
        ):
            for flag in words.pop(0)[1:]:
                if flag == "n":
                    newline = False
                else:
                    escapes = flag == "e"
        text = " ".join(words)
        if escapes and "\\" in text:
            data, stopped = _unescape(
                text,
                octal="echo" if shell == "bash" else "both",
                hex_escapes=shell != "dash",
                stop=True,
            )
            newline = newline and not stopped
        else:
            data = _encode(text)
        readings[data + b"\n" if newline else data] = None
    return tuple(readings)


_PRINTF_SPEC = re.compile(r"%([-+ #0']*)(\*|[0-9]*)(?:\.(\*|[0-9]*))?(.?)")
_PRINTF_INT = re.compile(r"\s*([-+]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)\s*")


def _printf_int(arg: str) -> int | None:
    if not arg:
        return 0
    if arg[0] in "'\"":
        return ord(arg[1]) if len(arg) > 1 else 0
    m = _PRINTF_INT.fullmatch(arg)
    if m is None:
        return None
    sign, digits = m.groups()
    base = 16 if digits[:2].lower() == "0x" else 8 if len(digits) > 1 and digits[0] == "0" else 10
    value = int(digits, base)
    return -value if sign == "-" else value


def _printf(args: Sequence[str], *, hex_escapes: bool) -> bytes | None:
    """What ``printf FORMAT ARGS...`` prints, or None for what the guard does not model
    (``%q``, malformed numbers, huge widths)."""
    if not args:
        return None
    fmt, rest = args[0], deque(args[1:])
    out = bytearray()

    def literal(text: str) -> None:
        out.extend(_unescape(text, octal="format", hex_escapes=hex_escapes, stop=False)[0])

    while True:
        position, consumed = 0, False
        for m in _PRINTF_SPEC.finditer(fmt):
            literal(fmt[position : m.start()])
            position = m.end()
            flags, width, precision, conv = m.groups()
            if conv == "%":
                out += b"%"
                continue
            if conv not in "sbcdiuoxXeEfFgG" or not conv:
                return None
            consumed = True
            spec = "%" + flags.replace("'", "")
            for part, lead in ((width, ""), (precision, ".")):
                if part is None:
                    continue
                if part == "*":
                    number = _printf_int(rest.popleft() if rest else "")
                    if number is None:
                        return None
                    part = str(number)
                if part and int(part) > 4096:
                    return None
                spec += lead + part
            arg = rest.popleft() if rest else ""
            value: str | int | float
            if conv == "b":
                data, stopped = _unescape(arg, octal="both", hex_escapes=hex_escapes, stop=True)
                out += data
                if stopped:
                    return bytes(out)
                continue
            if conv in "sc":
                value, spec = (arg if conv == "s" else arg[:1]), spec + "s"
            elif conv in "diuoxX":
                number = _printf_int(arg)
                if number is None:
                    return None
                value, spec = number, spec + ("d" if conv in "diu" else conv)
            else:
                try:
                    value, spec = float(arg or "0"), spec + conv
                except ValueError:
                    return None
            out += _encode(spec % value)
            if len(out) > _MAX_TEXT:
                return None
        literal(fmt[position:])
        if not rest or not consumed or len(out) > _MAX_TEXT:
            break
    return bytes(out)


def printf_readings(args: Sequence[str]) -> tuple[bytes, ...] | None:
    """``printf`` as bash and zsh run it (``\\xHH`` escapes) and as dash does (none)."""
    readings: dict[bytes, None] = {}
    for hex_escapes in (True, False):
        data = _printf(args, hex_escapes=hex_escapes)
        if data is None:
            return None
        readings[data] = None
    return tuple(readings)


# decoders and text transformers --------------------------------------------------------------

_WHITESPACE = re.compile(rb"\s+")
_BASE64_GARBAGE = re.compile(rb"[^A-Za-z0-9+/=]")
_HEX_TEXT = re.compile(rb"[0-9A-Fa-f]*")
_BASE64_FLAGS = re.compile(r"-[dDi]+|--decode|--ignore-garbage|-w\d*|--wrap=\d+")
_XXD_FLAGS = {"-r": "r", "-revert": "r", "-p": "p", "-ps": "p", "-plain": "p", "-postscript": "p"}
_OPENSSL_BASE64 = frozenset({"-d", "-a", "-A", "-base64"})
_DECOMPRESS_FLAGS = re.compile(r"-[dcfqk]+|--decompress|--stdout|--force|--quiet|--keep")
_TR_CLASSES = {
    "alpha": bytes(range(65, 91)) + bytes(range(97, 123)),
    "upper": bytes(range(65, 91)),
    "lower": bytes(range(97, 123)),
    "digit": b"0123456789",
    "alnum": b"0123456789" + bytes(range(65, 91)) + bytes(range(97, 123)),
    "xdigit": b"0123456789ABCDEFabcdef",
    "space": b"\t\n\v\f\r ",
    "blank": b"\t ",
    "punct": bytes(c for c in range(33, 127) if not chr(c).isalnum()),
    "cntrl": bytes(range(32)) + b"\x7f",
    "print": bytes(range(32, 127)),
    "graph": bytes(range(33, 127)),
}
_TR_CLASS = re.compile(rb"\[:([a-z]+):\]")
_TR_UNSUPPORTED = re.compile(rb"\[=|\[.\*")


def _base64(data: bytes, *, ignore_garbage: bool, alphabet: str = "64") -> bytes | None:
    data = _WHITESPACE.sub(b"", data)
    if ignore_garbage:
        data = _BASE64_GARBAGE.sub(b"", data)
    try:
        if alphabet == "32":
            return base64.b32decode(data + b"=" * (-len(data) % 8))
        if alphabet == "16":
            return base64.b16decode(data, casefold=True)
        return base64.b64decode(data + b"=" * (-len(data) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None


def _tr_char(raw: bytes, i: int) -> tuple[int, int]:
    if raw[i] != 0x5C or i + 1 >= len(raw):  # not a backslash
        return raw[i], i + 1
    m = _OCTAL_DIGITS.match(raw[i + 1 : i + 4].decode("latin-1"))
    if m is not None:
        return int(m.group(), 8) & 0xFF, i + 1 + m.end()
    escaped = _SIMPLE_ESCAPES.get(chr(raw[i + 1]))
    return (escaped[0] if escaped else raw[i + 1]), i + 2


def _tr_set(spec: str) -> bytes | None:
    """A ``tr`` set (ranges, escapes, ``[:class:]``); None for ``[=c=]``/``[c*n]``."""
    raw = _encode(spec)
    if _TR_UNSUPPORTED.search(raw):
        return None
    out = bytearray()
    i, n = 0, len(raw)
    while i < n:
        m = _TR_CLASS.match(raw, i)
        if m is not None:
            members = _TR_CLASSES.get(m.group(1).decode())
            if members is None:
                return None
            out += members
            i = m.end()
            continue
        low, i = _tr_char(raw, i)
        if i + 1 < n and raw[i] == 0x2D:  # "a-z"
            high, i = _tr_char(raw, i + 1)
            if high < low:
                return None
            out += bytes(range(low, high + 1))
        else:
            out.append(low)
    return bytes(out)


def _tr(args: Sequence[str], data: bytes) -> bytes | None:
    """``tr [-d] [-s] SET1 [SET2]`` over ``data`` (GNU semantics); None for ``-c``, ``-t``
    and sets the guard does not model."""
    delete = squeeze = False
    words = list(args)
    while words and len(words[0]) > 1 and words[0][0] == "-":
        for flag in words.pop(0)[1:]:
            if flag == "d":
                delete = True
            elif flag == "s":
                squeeze = True
            else:  # -c, -t, long options: not modelled
                return None
    sets = [_tr_set(w) for w in words]
    if not sets or len(sets) > 2 or any(s is None for s in sets):
        return None
    first, second = sets[0] or b"", sets[1] if len(sets) == 2 else None
    squeezed: bytes | None = None
    if delete:
        if second is not None and not squeeze:
            return None
        data, squeezed = data.translate(None, first), second
    elif second is not None:
        if not second:
            return None
        second += second[-1:] * (len(first) - len(second))  # GNU pads with the last byte
        table = bytearray(range(256))
        for a, b in zip(first, second, strict=False):
            table[a] = b
        data = data.translate(bytes(table))
        squeezed = second if squeeze else None
    elif squeeze:
        squeezed = first
    else:
        return None
    if squeezed:
        data = re.sub(b"([" + re.escape(squeezed) + b"])\\1+", rb"\1", data)
    return data


def _decompress(kind: str, data: bytes) -> bytes | None:
    """``data`` decompressed, at most :data:`_MAX_TEXT` bytes of it; None if invalid."""
    import bz2  # imported here: seldom needed, and not free to import
    import lzma
    import zlib

    try:
        if kind == "gzip":
            out = zlib.decompressobj(47).decompress(data, _MAX_TEXT + 1)
        elif kind == "bzip2":
            out = bz2.BZ2Decompressor().decompress(data, max_length=_MAX_TEXT + 1)
        else:
            out = lzma.LZMADecompressor().decompress(data, max_length=_MAX_TEXT + 1)
    except (OSError, EOFError, ValueError, zlib.error, lzma.LZMAError):
        return None
    return out if len(out) <= _MAX_TEXT else None


def _transform(inv: Invocation, data: bytes) -> bytes | None:
    """What a transformer reading ``data`` on stdin prints; None when the guard cannot
    tell (an option it does not model, a file operand, invalid input)."""
    args = [w.text for w in inv.args]
    name = inv.name
    if name in ("base64", "base32"):
        if not all(_BASE64_FLAGS.fullmatch(a) for a in args):
            return None
        flags = "".join(a for a in args if not a.startswith("--"))
        if not ({"d", "D"} & set(flags) or "--decode" in args):
            return None
        garbage = "i" in flags or "--ignore-garbage" in args
        return _base64(data, ignore_garbage=garbage, alphabet=name[4:])
    if name == "basenc":
        kinds = {"--base64": "64", "--base32": "32", "--base16": "16"}
        alphabet = next((kinds[a] for a in args if a in kinds), None)
        rest = [a for a in args if a not in kinds]
        if alphabet is None or not rest or not all(a in ("-d", "--decode") for a in rest):
            return None
        return _base64(data, ignore_garbage=False, alphabet=alphabet)
    if name == "openssl":
        sub = args[0] if args else ""
        options = set(args[1:])
        if "-d" not in options or not options <= _OPENSSL_BASE64:
            return None
        if sub == "base64" or (sub == "enc" and options & {"-a", "-base64"}):
            return _base64(data, ignore_garbage=False)
        return None
    if name == "xxd":
        modes = {_XXD_FLAGS.get(a, "?") for a in args}
        if modes != {"r", "p"}:
            return None
        data = _WHITESPACE.sub(b"", data)
        if not _HEX_TEXT.fullmatch(data) or len(data) % 2:
            return None
        return bytes.fromhex(data.decode("ascii"))
    if name in ("rev", "tac") and not args:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if name == "rev":
            return _encode("\n".join(line[::-1] for line in text.split("\n")))
        return _encode("".join(reversed(re.findall(r"[^\n]*\n|[^\n]+$", text))))
    if name == "tr":
        return _tr(args, data)
    kind = _DECOMPRESS.get(name)
    if kind is not None and all(_DECOMPRESS_FLAGS.fullmatch(a) for a in args):
        decompressing = name not in ("gzip", "bzip2", "xz", "lzma") or any(
            "d" in a for a in args if not a.startswith("--")
        )
        if decompressing or "--decompress" in args:
            return _decompress(kind, data)
    return None


# streams -------------------------------------------------------------------------------------


def _fed_text(inv: Invocation) -> Word | None:
    """The here-document or here-string a command reads as its stdin, if any."""
    for r in reversed(inv.redirects):
        if r.op in ("<<", "<<-"):
            return r.heredoc
        if r.op == "<<<":
            return r.target
    return None


def tilde(word: Word) -> str:
    """The word's text after tilde expansion (``echo ~/x`` prints ``/home/user/x``)."""
    text = word.text
    if word.tilde and (text == "~" or text.startswith("~/")):
        return HOME + text[1:]
    return text


def _literal(word: Word, trailing_newline: bool) -> Stream:
    data = _encode(word.text) + (b"\n" if trailing_newline else b"")
    return Stream((data,), holes=SUBST in word.text)


def _reads_stdin(inv: Invocation) -> bool:
    """No file operand (the rough test: every argument is an option or ``-``)."""
    return all(w.text.startswith("-") for w in inv.args)


def _source(inv: Invocation) -> Stream:
    """What ``inv`` writes to its stdout when it starts a pipeline."""
    texts = [tilde(w) for w in inv.args]
    if inv.name == "echo":
        return Stream(_echo_readings(texts), holes=any(SUBST in t for t in texts))
    if inv.name == "yes":  # the same line without end: one piece is enough to judge
        line = _encode(" ".join(texts) if texts else "y") + b"\n"
        return Stream((line,), partial=True, holes=any(SUBST in t for t in texts))
    if inv.name == "printf":
        readings = printf_readings(texts)
        if readings is None:
            return Stream(hidden=inv.snippet())
        return Stream(readings, holes=any(SUBST in t for t in texts))
    fed = _fed_text(inv)
    if fed is not None and _reads_stdin(inv):
        text = _literal(fed, trailing_newline=True)
        if inv.name in _PASS_THROUGH:
            return text
        if inv.name in _TRANSFORMERS:
            return _through(inv, text)
        return LOCAL
    if inv.name not in _TRANSFORMERS:
        return LOCAL
    if inv.name in INTERPRETERS:
        info = exec_info(inv)
        if info is not None and info.inline is None and not info.stdin:
            return LOCAL  # python gen.py: a program on disk, like ./gen.sh
    return Stream(hidden=inv.snippet())


def _through(inv: Invocation, incoming: Stream) -> Stream:
    """What ``inv`` writes when ``incoming`` is its stdin."""
    if incoming.hidden:
        return incoming
    if inv.name in _PASS_THROUGH:
        if inv.name != "cat" or all(w.text == "-" for w in inv.args):
            return incoming
        if not any(w.text == "-" for w in inv.args):
            return _source(inv)
        return replace(incoming, partial=True)
    if inv.name in _TRANSFORMERS:
        if not incoming.complete:
            return Stream(hidden=inv.snippet())
        out: dict[bytes, None] = {}
        for reading in incoming.readings:
            data = _transform(inv, reading)
            if data is None:
                return Stream(hidden=inv.snippet())
            out[data] = None
        return Stream(tuple(out))
    if incoming.readings:  # echo 'rm -rf /' | head -1: what head makes of it is unknown
        return Stream(hidden=inv.snippet())
    return LOCAL


def _group(invs: Sequence[Invocation | None]) -> Stream:
    """What a subshell or group of commands writes: their outputs one after another.

    Consecutive known outputs are joined (``{ printf r; printf 'm -rf /'; }`` is one
    text); a local file among them splits the text into pieces, each judged alone.
    """
    runs: list[list[Stream]] = [[]]
    split = holes = False
    for inv in invs:
        if inv is None:
            continue
        piece = _source(inv)
        if piece.hidden:
            return piece
        if not piece.readings:  # local text: unknown, but visible to a reviewer
            split = True
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append(piece)
        holes = holes or piece.holes
        if piece.partial:  # yes: nothing after it ever runs
            break
    texts: dict[bytes, None] = {}
    for run in runs:
        joined: list[bytes] = [b""]
        for piece in run:
            joined = [head + tail for head in joined for tail in piece.readings]
            if len(joined) > MAX_READINGS:  # refuse rather than sample the readings
                return Stream(hidden="; ".join(i.snippet() for i in invs if i)[:60])
        if run:
            texts.update(dict.fromkeys(joined))
    if not texts:
        return LOCAL
    partial = split or any(p.partial for run in runs for p in run)
    return Stream(tuple(texts), partial=partial, holes=holes)


def pipe_stream(stages: Sequence[Sequence[Invocation | None]]) -> Stream:
    """What the last of ``stages`` writes into the next pipe."""
    state = LOCAL
    for k, stage in enumerate(stages):
        if len(stage) == 1 and stage[0] is not None:
            state = _source(stage[0]) if k == 0 else _through(stage[0], state)
        elif not state.hidden:
            state = _group(stage)
    return state


def input_lines(stream: Stream) -> list[Word]:
    """The input lines of ``xargs -I`` (leading blanks dropped, empty lines skipped)."""
    lines: dict[str, None] = {}
    for reading in stream.readings:
        for line in reading.decode("utf-8", "replace").split("\n"):
            if line.strip():
                lines[line.lstrip(" \t")] = None
    # Every line: the text is already bounded by the text budget, and the caller charges
    # the words it makes per line.
    return [Word(line, quoted=True) for line in lines]


def command_output(data: bytes) -> str:
    """A reading as ``$(...)`` yields it: decoded, trailing newlines removed."""
    return data.decode("utf-8", "replace").rstrip("\n")


# -- how the commands of a script are connected ----------------------------------------

_INPUT_OPS = frozenset({"<", "<<", "<<-", "<<<"})


def command_feeds(script: Script) -> dict[int, tuple[int, ...]]:
    """Command index -> indices of the commands whose stdout feeds its stdin."""
    feeds: dict[int, tuple[int, ...]] = {}
    for pipeline in script.pipelines:
        for previous, stage in zip(pipeline.stages, pipeline.stages[1:], strict=False):
            for index in stage:
                feeds[index] = previous
    return feeds


def loop_input(script: Script, index: int) -> tuple[Redirect, ...]:
    """The input redirections of the loop around command ``index`` (``while read f; do
    ...; done <<< x``): the parser leaves them on a word-less command after the body."""
    for cmd in script.commands[index + 1 :]:
        if not cmd.words and not cmd.assignments:
            inputs = tuple(r for r in cmd.redirects if r.op in _INPUT_OPS)
            if inputs:
                return inputs
    return ()
