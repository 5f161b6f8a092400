"""Programs that run commands in their own syntax (for :mod:`.code`): ``awk``
(``system(...)``, ``print ... | "cmd"``, ``"cmd" | getline``, ``|&`` coprocesses, ``print
> "file"``), ``sed`` (the ``e`` command, the ``s///e`` flag, ``w``/``r`` files) and
``make`` (the recipes, ``$(shell ...)`` and ``!=`` of a makefile the guard can read: on
stdin, ``--eval``, ``SHELL=``).

The command text is taken out and judged as ``sh -c`` text.  A part known only at run
time -- an input field (``$1``), ``&`` or ``\\1`` in a replacement, a recipe's ``$@`` --
stands as a variable whose value is unknown (``$AWK_DATA``, ``$SED_DATA``,
``$MAKE_DATA``), so ``awk '{system("rm -rf " $1)}' list`` is judged as ``rm -rf $X`` (the
way ``xargs rm -rf < list`` is).  A command made wholly of input (``awk '{system($0)}'
cmds.txt``, ``sed e cmds.txt``) runs a local file's text, like ``sh cmds.txt``, and is
allowed; input the guard can compute is judged line by line (``echo 'rm -rf /' | awk
'{system($0)}'``, ``sed e <<< TEXT``), a download feeding it is ``rce`` and input made
in a way the guard cannot follow is ``dynamic-code`` (:func:`pipeline_input_code`)."""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterable, Iterator, Sequence

from ..budget import TooComplex
from ..invocation import Invocation
from ..model import Finding
from ..options import derived
from ..programs import DOWNLOADERS, exec_info
from ..reach import judge_read, judge_write
from ..run import Run, allowed
from ..text import Stream, pipe_stream

_Parts = list[str | None]  # literal text, None: known only at run time

# -- awk --------------------------------------------------------------------------------------

_AWK_DATA = "$AWK_DATA"
_AWK_TOKEN = re.compile(
    r'"((?:[^"\\\n]|\\.)*)"|([A-Za-z_]\w*)\s*(\()?|(\s+)|(\()|(\))|(.)', re.DOTALL
)
_AWK_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "/": "/", "r": "\r"}
_AWK_ASSIGN = re.compile(r'\b([A-Za-z_]\w*)\s*=\s*"((?:[^"\\\n]|\\.)*)"\s*(?=[;}\n]|$)')
_PRINT = re.compile(r"\bprintf?\b")
_PIPE = re.compile(r"(?<!\|)\|&?(?![|&])|\|&")
_OUTPUT = re.compile(r">>?")
_GETLINE = re.compile(r"\s*getline\b")
_SYSTEM = re.compile(r"\bsystem\s*\(")
_SEPARATOR = re.compile(r"[;{}\n]")
_OUTER_PARENS = re.compile(r"^\(|\)$")
_FORMAT = re.compile(r"%[-+ 0-9.]*[sdicfgeExXou]")
_ESCAPE = re.compile(r"\\(.)")
_MATCHED = re.compile(r"\\[0-9]|(?<!\\)&")  # sed: the matched text, a group


def _awk_unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: _AWK_ESCAPES.get(m.group(1), m.group(1)), text)


_OPAQUE = re.compile(
    r'"(?:[^"\\\n]|\\.)*+"?'  # a string
    r"|#[^\n]*+"  # a comment
    r"|(?:(?<=[(,~!{;&|\n])|^)[ \t]*+/(?:[^/\\\n]|\\.)*+/?"  # a regex where an operand goes
)


def _blank(m: re.Match[str]) -> str:
    text = m.group()
    head = len(text) - len(text.lstrip(" \t"))
    inner = len(text) - head - 1 - (text[-1] in '"/' and len(text) - head > 1)
    return text[: head + 1] + "x" * inner + text[head + 1 + inner :]


def _mask(code: str) -> str:
    """``code`` with the insides of strings, regex literals and comments blanked (``x``),
    so that ``|``, ``;`` and parentheses found in it are the program's own."""
    return _OPAQUE.sub(_blank, code)


def _statements(code: str, masked: str) -> list[tuple[str, str]]:
    """The simple statements (original, masked), split at ``;``, braces and newlines."""
    found = []
    start = 0
    for m in _SEPARATOR.finditer(masked):
        if m.start() > start:
            found.append((code[start : m.start()], masked[start : m.start()]))
        start = m.end()
    if start < len(code):
        found.append((code[start:], masked[start:]))
    return found


_PARENS = re.compile(r"[()]")
_ARGUMENT_MARKS = re.compile(r"[(),]")


def _pairs(masked: str) -> dict[int, int]:
    """Each ``(``'s matching ``)``, by index."""
    stack: list[int] = []
    pairs: dict[int, int] = {}
    for m in _PARENS.finditer(masked):
        if m.group() == "(":
            stack.append(m.start())
        elif stack:
            pairs[stack.pop()] = m.start()
    return pairs


def _opener(masked: str, start: int, at: int) -> int:
    """The index of the innermost ``(`` opened after ``start`` still open at ``at``
    (-1: none)."""
    stack: list[int] = []
    for m in _PARENS.finditer(masked, start, at):
        if m.group() == "(":
            stack.append(m.start())
        elif stack:
            stack.pop()
    return stack[-1] if stack else -1


def _closing(masked: str, open_at: int) -> int:
    """Index of the ``)`` matching the ``(`` at ``open_at`` (or the end)."""
    depth = 0
    for k in range(open_at, len(masked)):
        if masked[k] == "(":
            depth += 1
        elif masked[k] == ")":
            depth -= 1
            if depth == 0:
                return k
    return len(masked)


def _awk_value(expr: str, env: dict[str, str], nested: bool = False) -> _Parts:
    """An awk string expression as literal parts and unknown ones (None); a
    ``sprintf(...)`` is computed, one level deep."""
    parts: _Parts = []

    def unknown() -> None:
        if not parts or parts[-1] is not None:
            parts.append(None)

    pos = 0
    while pos < len(expr):
        m = _AWK_TOKEN.match(expr, pos)
        assert m is not None  # the last alternative matches any character
        pos = m.end()
        if m.group(1) is not None:
            parts.append(_awk_unescape(m.group(1)))
        elif m.group(2) is not None:
            if m.group(3):  # a function call: its value is unknown, but sprintf's
                close = _closing(expr, m.start(3))
                pos = close + 1
                if m.group(2) == "sprintf" and not nested:
                    inner = expr[m.start(3) + 1 : close]
                    parts += _printed(inner, _mask(inner), "printf", env, nested=True)
                else:
                    unknown()
            elif m.group(2) in env:
                parts.append(env[m.group(2)])
            elif m.group(2) not in ("getline",):
                unknown()
        elif m.group(4) is None and m.group(5) is None and m.group(6) is None:
            unknown()
    return parts


def _shell_text(parts: _Parts, unknown: str) -> str:
    return "".join(unknown if p is None else p for p in parts)


def _shell_word(parts: _Parts, unknown: str) -> str:
    return "".join(f'"{unknown}"' if p is None else shlex.quote(p) for p in parts) or "''"


def _awk_env(inv: Invocation, code: str) -> dict[str, str]:
    env = {m.group(1): _awk_unescape(m.group(2)) for m in _AWK_ASSIGN.finditer(code)}
    args = inv.args
    for k, word in enumerate(args[:-1]):
        if word.text == "-v" and "=" in args[k + 1].text:
            name, _, value = args[k + 1].text.partition("=")
            env[name] = value
    return env


def _printed(
    args: str, masked: str, keyword: str, env: dict[str, str], *, nested: bool = False
) -> _Parts:
    """What ``print A, B`` (joined by a space) or ``printf FORMAT, A`` (``%s``/``%d``
    filled in) writes."""
    cuts, depth = [-1], 0
    for m in _ARGUMENT_MARKS.finditer(masked):  # the commas between arguments
        mark = m.group()
        depth += 1 if mark == "(" else -1 if mark == ")" else 0
        if mark == "," and depth <= 0:
            cuts.append(m.start())
    cuts.append(len(args))
    items = [args[a + 1 : b].strip() for a, b in itertools.pairwise(cuts)]
    items = [_OUTER_PARENS.sub("", item) for item in items if item]
    values = [_awk_value(item, env, nested) for item in items]
    if keyword == "print" or not values:
        parts: _Parts = []
        for k, value in enumerate(values):
            parts += ([" "] if k else []) + value
        return parts
    fmt, rest = values[0], values[1:]
    if None in fmt:
        return [None]
    pieces = _FORMAT.split("".join(p for p in fmt if p is not None))
    parts = [pieces[0]]
    for k, piece in enumerate(pieces[1:]):
        parts += (rest[k] if k < len(rest) else [None]) + [piece]
    return parts


def _awk_commands(code: str, env: dict[str, str]) -> Iterator[tuple[str, _Parts, _Parts | None]]:
    """What the program runs: (how, command, printed text or None) for each
    ``system()``, ``cmd | getline``, ``print ... | cmd``; ``print > file`` as
    ("write", file, None).  One pass over the text each (no rescans: the program may be
    64 KB); a statement repeated word for word is read once."""
    masked = _mask(code)
    if "system" in code:
        closes, covered = _pairs(masked), 0
        for m in _SYSTEM.finditer(masked):
            if m.start() < covered:  # system(system(...)): the outer call's text holds it
                continue
            covered = closes.get(m.end() - 1, len(masked))
            yield "system()", _awk_value(code[m.end() : covered], env), None
    seen: set[str] = set()
    for stmt, smask in _statements(code, masked):
        if stmt in seen or ("|" not in smask and ">" not in smask):
            continue
        seen.add(stmt)
        printing = _PRINT.search(smask)
        after = 0  # the end of the previous pipe: "a" | getline x "b" | getline y
        for pipe in _PIPE.finditer(smask):
            if _GETLINE.match(smask, pipe.end()):
                at = max(_opener(smask, after, pipe.start()) + 1, after)
                yield "| getline", _awk_value(stmt[at : pipe.start()], env), None
                after = pipe.end()
            elif printing is not None and printing.end() <= pipe.start():
                start, end = printing.end(), pipe.start()
                printed = _printed(stmt[start:end], smask[start:end], printing.group(), env)
                yield pipe.group(), _awk_value(stmt[pipe.end() :], env), printed
                break
        if printing is not None:
            out = _OUTPUT.search(smask, printing.end())
            if out is not None and "|" not in smask[printing.end() : out.start()]:
                yield "write", _awk_value(stmt[out.end() :], env), None


def awk_program(inv: Invocation, run: Run, code: str) -> Finding | None:
    """Judge the commands an awk program runs and the files it prints into."""
    if "system" not in code and "|" not in code and ">" not in code:
        return None
    found = _judge(inv, run, _awk_actions(code, _awk_env(inv, code)))
    return found or _fed_commands(inv, run, "awk", code)


def _awk_actions(code: str, env: dict[str, str]) -> Iterator[tuple[str, str]]:
    """("run", how, shell text) and ("write", file) of an awk program, as (how, text)."""
    for how, command, printed in _awk_commands(code, env):
        if not any(command):  # wholly input: a local file's text
            continue
        if how == "write":
            if None not in command:
                yield "w", _shell_text(command, "")
            continue
        text = _shell_text(command, _AWK_DATA)
        if printed is not None:  # print ... | "sh": the printed text is the shell's input
            source = "printf '%s\\n' " + _shell_word(printed, _AWK_DATA)
            text = f"{source if any(printed) else 'cat'} | {text}"
        yield how, text


# -- sed --------------------------------------------------------------------------------------

_SED_DATA = "$SED_DATA"
_SED_COMMAND = re.compile(
    r"""[\s;{}!]*+
    (?:(?:[0-9]+(?:~[0-9]+)?|\$|/(?:[^/\\\n]|\\.)*+/?[IM]*
       |\\(?P<ad>[^\n\\])(?:(?!(?P=ad))[^\\\n]|\\.)*+(?P=ad)?[IM]*)
       (?:\s*,\s*(?:[0-9]+|\$|[~+][0-9]+|/(?:[^/\\\n]|\\.)*+/?[IM]*))?)?+
    [\s!]*+
    (?:s(?P<sd>[^\\\n])(?P<pattern>(?:(?!(?P=sd))[^\\\n]|\\.)*+)(?P=sd)?
        (?P<text>(?:(?!(?P=sd))[^\\]|\\.)*+)(?P=sd)?(?P<flags>[0-9gpIiMme]*+)
        (?:w(?P<file>[^\n]*+))?
     |y(?P<yd>[^\\\n])(?:(?!(?P=yd))[^\\\n]|\\.)*+(?P=yd)?(?:(?!(?P=yd))[^\\\n]|\\.)*+(?P=yd)?
     |[aic](?:[^\n\\]|\\.)*+
     |(?P<cmd>[ewWrR])(?P<arg>[^\n]*+)
     |[:btTvlLqQ][^;\n}]*+
     |.|\Z)""",
    re.VERBOSE | re.DOTALL,
)
"""One sed command with its address: ``s///FLAGS [w FILE]``, ``y///``, ``a``/``i``/``c``
text, ``e``/``w``/``r`` and their argument to the end of the line, labels; an
unterminated regex ends at the line's end (sed would refuse the script)."""


def _replacement(pattern: str, text: str) -> str:
    """The pattern space ``s/PATTERN/TEXT/e`` runs: ``&`` and ``\\N`` are input, and so
    is what the pattern leaves after the match (unless it reaches the end of the line)."""
    text = _MATCHED.sub(_SED_DATA, text)
    text = _ESCAPE.sub(lambda m: "\n" if m.group(1) == "n" else m.group(1), text)
    ends = pattern.endswith(("$", ".*"))
    return text + ("" if ends else _SED_DATA)


def _sed_actions(script: str) -> list[tuple[str, str]]:
    """("e", command), ("w", file), ("r", file) of a sed script."""
    found: list[tuple[str, str]] = []
    pos, n = 0, len(script)
    while pos < n:
        m = _SED_COMMAND.match(script, pos)
        if m is None or m.end() == pos:
            pos += 1
            continue
        pos = m.end()
        if m.group("sd") is not None:
            if "e" in m.group("flags"):
                found.append(("e", _replacement(m.group("pattern"), m.group("text"))))
            if m.group("file") is not None:
                found.append(("w", m.group("file").strip()))
        elif m.group("cmd") is not None:
            command, arg = m.group("cmd"), m.group("arg").strip()
            if command == "e":  # e alone runs the pattern space (the input line)
                found.append(("e", arg or _SED_DATA))
            elif arg:
                found.append((command.lower(), arg))
    return found


def sed_script(inv: Invocation, run: Run, script: str) -> Finding | None:
    """Judge the commands a sed script runs and the files it writes and reads."""
    actions = _sed_actions(script)
    # e alone, or s/.*/&/e: the line itself, a local file's text
    found = _judge(inv, run, ((a, v) for a, v in actions if v.strip() != _SED_DATA))
    return found or _fed_commands(inv, run, "sed", script)


# -- make -------------------------------------------------------------------------------------

_MAKE_DATA = "$MAKE_DATA"
_MAKE_ASSIGN = re.compile(
    r"^\s*(?:(?:override|export|private)\s+)*([A-Za-z_.][\w.-]*)\s*(:{1,3}=|\?=|\+=|!=|=)\s*(.*)$"
)
_MAKE_RULE = re.compile(r"^([^:=#\t][^:=#]*?)::?(?!=)\s*(.*)$")
_MAKE_REF = re.compile(r"\$(?:\(([^()$]*)\)|\{([^{}$]*)\}|(.))")
_MAKE_SHELL = re.compile(r"\$[({]shell\s+")
_MAKE_DEFAULTS = {"RM": "rm -f", "MAKE": "make", "CC": "cc", "CXX": "g++", "SHELL": "/bin/sh"}


def _make_text(text: str, variables: dict[str, str]) -> str:
    """A recipe line as the shell sees it: ``$$`` is ``$``, known variables expanded,
    other references (``$@``, an undefined ``$(X)``) unknown."""

    def ref(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2) or m.group(3) or ""
        if name == "$":
            return "$"
        return variables.get(name, _MAKE_DATA)

    return _MAKE_REF.sub(ref, text)


def _makefile_commands(text: str) -> list[tuple[str, str]]:
    """(how, command) of a makefile: recipes, ``!=`` assignments, ``$(shell ...)``."""
    text = text.replace("\\\n", " ")
    variables = dict(_MAKE_DEFAULTS)
    found: list[tuple[str, str]] = []
    closes, covered = _pairs(text), 0
    for m in _MAKE_SHELL.finditer(text):
        if m.start() < covered:  # $(shell $(shell ...)): inside the outer call's text
            continue
        if text[m.start() + 1] == "(":
            covered = closes.get(m.start() + 1, len(text))
        else:
            covered = text.find("}", m.end()) % (len(text) + 1)
        found.append(("$(shell)", _make_text(text[m.end() : covered], variables)))
    rule = False
    for line in text.split("\n"):
        if line.startswith("\t"):
            if rule:
                found.append(
                    (_recipe(line.lstrip("\t")), _make_text(line.lstrip("\t@-+ "), variables))
                )
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        assign = _MAKE_ASSIGN.match(line)
        if assign is not None:
            name, op, value = assign.groups()
            if op == "!=" or name in ("SHELL", "MAKESHELL"):
                found.append((f"{name} {op}", _make_text(value, variables)))
            variables[name] = value if op != "+=" else variables.get(name, "") + " " + value
            continue
        head = _MAKE_RULE.match(line)
        rule = head is not None
        if head is not None and ";" in head.group(2):
            recipe = head.group(2).split(";", 1)[1]
            found.append((_recipe(recipe), _make_text(recipe.lstrip("@-+ "), variables)))
    return found


def _recipe(line: str) -> str:
    """``recipe``, or ``recipe+`` for a line that runs even under ``make -n`` (a ``+``
    prefix, ``$(MAKE)``)."""
    prefix = _RECIPE_PREFIX.match(line)
    forced = prefix is not None and "+" in prefix.group()
    return "recipe+" if forced or "$(MAKE)" in line or "${MAKE}" in line else "recipe"


_RECIPE_PREFIX = re.compile(r"[\s@+-]*")


_DRY_RUN = re.compile(r"-[A-Za-z]*[nq]|--(?:dry-run|just-print|recon|question)$")


def makefile(inv: Invocation, run: Run, text: str) -> Finding | None:
    """Judge what a makefile the guard can read runs (under ``make -n``, ``$(shell)``,
    ``!=`` and the ``+`` recipes only: the others are printed, not run)."""
    actions = _makefile_commands(text)
    if any(_DRY_RUN.match(w.text) for w in inv.args if not w.text.startswith("-f")):
        actions = [(how, command) for how, command in actions if how != "recipe"]
    return _judge(inv, run, actions)


_MAX_COMMANDS = 256
"""Commands judged in one program: a real awk/sed/make program runs a few."""


def _judge(inv: Invocation, run: Run, actions: Iterable[tuple[str, str]]) -> Finding | None:
    """Judge each distinct action: ``w``/``r`` a file written or read, anything else a
    command (``how`` it runs) judged as ``sh -c`` text.

    Raises:
        TooComplex: more than :data:`_MAX_COMMANDS` actions (the same one repeated counts
            once per statement that runs it).
    """
    seen: set[tuple[str, str]] = set()
    for count, (how, text) in enumerate(actions, start=1):
        if count > _MAX_COMMANDS:
            raise TooComplex("commands", f"more than {_MAX_COMMANDS} commands in one program")
        if (how, text) in seen:
            continue
        seen.add((how, text))
        if how == "w":
            found = judge_write(run, derived(text), f"{inv.shown} writes")
        elif how == "r":
            found = judge_read(run, derived(text), f"{inv.shown} r")
        else:
            found = run.nested(text, f"{inv.shown} {how} command", lenient=True)
        if found is not None:
            return found
    return None


OWN_SYNTAX = {"awk": awk_program, "sed": sed_script, "makefile": makefile}
"""The judges of :class:`..programs.Exec` kinds in their own syntax."""


# -- input run as commands ------------------------------------------------------------------


def runs_input(inv: Invocation) -> bool:
    """Whether ``inv`` (awk, sed) runs lines of its input as commands: ``system($0)``,
    ``print | "sh"``, ``sed e``, ``s/.*/&/e``."""
    info = exec_info(inv) if inv.name in ("awk", "sed") else None
    if info is None or info.inline is None:
        return False
    return _runs_input(inv, info.kind, info.inline)


def _runs_input(inv: Invocation, kind: str, code: str) -> bool:
    if kind == "sed":
        return any(a == "e" and _SED_DATA in v for a, v in _sed_actions(code))
    if "system" not in code and "|" not in code:
        return False
    env = _awk_env(inv, code)
    for how, command, printed in _awk_commands(code, env):
        if how == "write":
            continue
        if None in command or (printed is not None and (None in printed or not printed)):
            return True
    return False


def pipeline_input_code(stages: Sequence[Sequence[Invocation | None]], run: Run) -> Finding | None:
    """``curl URL | awk '{system($0)}'``, ``wget -O- URL | sed e``: a download whose lines
    a program runs as commands."""
    for j in range(1, len(stages)):
        for inv in stages[j]:
            if inv is None or inv.name not in ("awk", "sed") or not runs_input(inv):
                continue
            upstream = [o for stage in stages[:j] for o in stage if o is not None]
            download = next((o for o in upstream if o.name in DOWNLOADERS), None)
            if download is not None and not allowed(run, inv, download):
                return Finding(
                    "rce",
                    download.snippet(),
                    f"{inv.shown} runs lines of code downloaded by {download.snippet()!r} "
                    f"as commands (piped into it)",
                )
            found = _input_commands(inv, run, pipe_stream(stages[:j]), "piped into")
            if found is not None:
                return found
    return None


def _input_commands(inv: Invocation, run: Run, stream: Stream, how: str) -> Finding | None:
    """The lines ``inv`` runs as commands, when the guard can compute its input
    (``echo 'rm -rf /' | awk '{system($0)}'``); input made in a way it cannot follow is
    ``dynamic-code``, as when piped into a shell; a local file's text is allowed."""
    if stream.hidden:
        return Finding(
            "dynamic-code",
            stream.hidden,
            f"{inv.shown} runs as commands the lines that {stream.hidden!r} makes at run "
            f"time ({how} it); the guard judges only program text it can read",
        )
    run.budget.made_text(sum(map(len, stream.readings)))
    for reading in stream.readings:
        text = reading.decode("utf-8", "replace")
        found = run.nested(text, f"input {how} {inv.shown}, run as commands", lenient=True)
        if found is not None:
            return found
    return None


def _fed_commands(inv: Invocation, run: Run, kind: str, code: str) -> Finding | None:
    """``awk '{system($0)}' <<< TEXT``: a here-string or here-document the program runs."""
    if not any(r.op in ("<<", "<<-", "<<<") for r in inv.redirects):
        return None
    if not _runs_input(inv, kind, code):
        return None
    fed = Invocation("cat", [], {}, inv.redirects)  # what the redirections feed
    return _input_commands(inv, run, pipe_stream([[fed]]), "fed to")
