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
allowed unless a download feeds it (:func:`pipeline_input_code`)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from ...shell import Word
from ..invocation import Invocation
from ..model import Finding
from ..options import derived
from ..programs import DOWNLOADERS, exec_info
from ..reach import judge_read, judge_write
from ..run import Run, allowed

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


def _awk_unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _AWK_ESCAPES.get(m.group(1), m.group(1)), text)


def _mask(code: str) -> str:
    """``code`` with the insides of strings, regex literals and comments blanked (``x``),
    so that ``|``, ``;`` and parentheses found in it are the program's own."""
    out = list(code)
    i, n, prev = 0, len(code), ""
    while i < n:
        c = code[i]
        if c == '"' or (c == "/" and prev in "(,~!{;&|\n") or c == "#":
            end = "\n" if c == "#" else c
            j = i + 1
            while j < n and code[j] != end and (code[j] != "\n" or c == "#"):
                j += 2 if code[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = "x"
            prev, i = c, j + 1
            continue
        if not c.isspace():
            prev = c
        i += 1
    return "".join(out)


def _statements(code: str, masked: str) -> list[tuple[str, str]]:
    """The simple statements (original, masked), split at ``;``, braces and newlines."""
    found = []
    start = 0
    for m in re.finditer(r"[;{}\n]", masked):
        if m.start() > start:
            found.append((code[start : m.start()], masked[start : m.start()]))
        start = m.end()
    if start < len(code):
        found.append((code[start:], masked[start:]))
    return found


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


def _awk_value(expr: str, env: dict[str, str]) -> _Parts:
    """An awk string expression as literal parts and unknown ones (None)."""
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
            if m.group(3):  # a function call: its value is unknown
                pos = _closing(expr, m.start(3)) + 1
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


def _printed(args: str, masked: str, keyword: str, env: dict[str, str]) -> _Parts:
    """What ``print A, B`` (joined by a space) or ``printf FORMAT, A`` (``%s``/``%d``
    filled in) writes."""
    cuts = [-1, *(k for k, c in enumerate(masked) if c == ","), len(args)]
    items = [args[a + 1 : b].strip() for a, b in zip(cuts, cuts[1:], strict=False)]
    items = [re.sub(r"^\(|\)$", "", item) for item in items if item]
    values = [_awk_value(item, env) for item in items]
    if keyword == "print" or not values:
        parts: _Parts = []
        for k, value in enumerate(values):
            parts += ([" "] if k else []) + value
        return parts
    fmt, rest = values[0], values[1:]
    if None in fmt:
        return [None]
    pieces = re.split(r"%[-+ 0-9.]*[sdicfgeExXou]", "".join(p for p in fmt if p is not None))
    parts = [pieces[0]]
    for k, piece in enumerate(pieces[1:]):
        parts += (rest[k] if k < len(rest) else [None]) + [piece]
    return parts


def _awk_commands(code: str, env: dict[str, str]) -> list[tuple[str, _Parts, _Parts | None]]:
    """What the program runs: (how, command, printed text or None) for each
    ``system()``, ``cmd | getline``, ``print ... | cmd``; ``print > file`` as
    ("write", file, None)."""
    masked = _mask(code)
    found: list[tuple[str, _Parts, _Parts | None]] = []
    for m in re.finditer(r"\bsystem\s*\(", masked):
        close = _closing(masked, m.end() - 1)
        found.append(("system()", _awk_value(code[m.end() : close], env), None))
    for stmt, smask in _statements(code, masked):
        printing = _PRINT.search(smask)
        for pipe in _PIPE.finditer(smask):
            if re.match(r"\s*getline\b", smask[pipe.end() :]):
                left, depth, at = smask[: pipe.start()], 0, 0
                for k in range(len(left) - 1, -1, -1):
                    depth += {")": 1, "(": -1}.get(left[k], 0)
                    if depth < 0:
                        at = k + 1
                        break
                found.append(("| getline", _awk_value(stmt[at : pipe.start()], env), None))
            elif printing is not None and printing.end() <= pipe.start():
                start, end = printing.end(), pipe.start()
                printed = _printed(stmt[start:end], smask[start:end], printing.group(), env)
                found.append((pipe.group(), _awk_value(stmt[pipe.end() :], env), printed))
                break
        if printing is not None:
            out = _OUTPUT.search(smask, printing.end())
            if out is not None and "|" not in smask[printing.end() : out.start()]:
                found.append(("write", _awk_value(stmt[out.end() :], env), None))
    return found


def awk_program(inv: Invocation, run: Run, code: str) -> Finding | None:
    """Judge the commands an awk program runs and the files it prints into."""
    if "system" not in code and "|" not in code and ">" not in code:
        return None
    for how, command, printed in _awk_commands(code, _awk_env(inv, code)):
        if not any(command):  # wholly input: a local file's text
            continue
        if how == "write":
            if None not in command:
                found = judge_write(run, derived(_shell_text(command, "")), f"{inv.shown} print >")
                if found is not None:
                    return found
            continue
        text = _shell_text(command, _AWK_DATA)
        if printed is not None:  # print ... | "sh": the printed text is the shell's input
            source = "cat" if not any(printed) else f"printf '%s\\n' {_shell_word(printed, _AWK_DATA)}"
            text = f"{source} | {text}"
        found = run.nested(text, f"{inv.shown} {how} command", lenient=True)
        if found is not None:
            return found
    return None


# -- sed --------------------------------------------------------------------------------------

_SED_DATA = "$SED_DATA"
_SED_ADDRESS = re.compile(
    r"\s*(?:(?:\d+(?:~\d+)?|\$|/(?:[^/\\\n]|\\.)*/[IM]*|\\(.)(?:(?!\1).)*\1[IM]*)"
    r"(?:\s*,\s*(?:\d+|\$|~\d+|\+\d+|/(?:[^/\\\n]|\\.)*/[IM]*))?)?\s*!?\s*"
)


def _sed_part(script: str, at: int, delim: str) -> tuple[str, int]:
    """The text up to the next unescaped ``delim`` from ``at``, and the index after it."""
    out, k = [], at
    while k < len(script) and script[k] != delim:
        if script[k] == "\\" and k + 1 < len(script):
            nxt = script[k + 1]
            out.append(nxt if nxt == delim else script[k : k + 2])
            k += 2
            continue
        out.append(script[k])
        k += 1
    return "".join(out), k + 1


def _line_rest(script: str, at: int) -> tuple[str, int]:
    end = script.find("\n", at)
    end = len(script) if end < 0 else end
    return script[at:end].strip(), end


def _replacement(pattern: str, text: str) -> str:
    """The pattern space ``s/PATTERN/TEXT/e`` runs: ``&`` and ``\\N`` are input, and so
    is what the pattern leaves after the match (unless it reaches the end of the line)."""
    text = re.sub(r"\\[0-9]|(?<!\\)&", _SED_DATA, text)
    text = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), text)
    ends = pattern.endswith(("$", ".*"))
    return text + ("" if ends else _SED_DATA)


def _sed_actions(script: str) -> list[tuple[str, str]]:
    """("e", command), ("w", file), ("r", file) of a sed script."""
    found: list[tuple[str, str]] = []
    k, n = 0, len(script)
    while k < n:
        m = _SED_ADDRESS.match(script, k)
        k = m.end() if m is not None else k
        if k >= n:
            break
        c = script[k]
        if c in ";{}\n" or c.isspace():
            k += 1
        elif c in "sy" and k + 1 < n:
            delim = script[k + 1]
            pattern, k = _sed_part(script, k + 2, delim)
            text, k = _sed_part(script, k, delim)
            flags = re.match(r"[0-9gpIiMme]*", script[k:])
            k += flags.end() if flags else 0
            if c == "s" and flags and "e" in flags.group():
                found.append(("e", _replacement(pattern, text)))
            if c == "s" and script[k : k + 1] == "w":
                name, k = _line_rest(script, k + 1)
                found.append(("w", name))
        elif c in "aic":
            k = _line_rest(script, k + 1)[1]
            while k < n and script[k - 1 : k] == "\\":  # a\ TEXT continued
                k = _line_rest(script, k + 1)[1]
        elif c in "ewWrR":
            rest, k = _line_rest(script, k + 1)
            if c == "e":  # e alone runs the pattern space (the input line)
                found.append(("e", rest or _SED_DATA))
            elif rest:
                found.append((c.lower(), rest))
        elif c in ":btTvlLqQ":
            k = k + 1
            while k < n and script[k] not in ";\n}":
                k += 1
        else:
            k += 1
    return found


def sed_script(inv: Invocation, run: Run, script: str) -> Finding | None:
    """Judge the commands a sed script runs and the files it writes and reads."""
    for action, value in _sed_actions(script):
        if action == "e":
            if value.strip() == _SED_DATA:  # the line itself: a local file's text
                continue
            found = run.nested(value, f"{inv.shown} e command", lenient=True)
        elif action == "w":
            found = judge_write(run, derived(value), f"{inv.shown} w")
        else:
            found = judge_read(run, derived(value), f"{inv.shown} r")
        if found is not None:
            return found
    return None


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
    for m in _MAKE_SHELL.finditer(text):
        close = _closing(text, m.start() + 1) if text[m.start() + 1] == "(" else len(text)
        body = text[m.end() : close] if text[m.start() + 1] == "(" else text[m.end() :]
        found.append(("$(shell)", _make_text(body.split("}")[0], variables)))
    rule = False
    for line in text.split("\n"):
        if line.startswith("\t"):
            if rule:
                found.append(("recipe", _make_text(line.lstrip("\t@-+ "), variables)))
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
            recipe = head.group(2).split(";", 1)[1].lstrip("@-+ ")
            found.append(("recipe", _make_text(recipe, variables)))
    return found


def makefile(inv: Invocation, run: Run, text: str) -> Finding | None:
    """Judge what a makefile the guard can read runs."""
    for how, command in _makefile_commands(text):
        found = run.nested(command, f"{inv.shown} {how} command", lenient=True)
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
    if info.kind == "sed":
        return any(a == "e" and _SED_DATA in v for a, v in _sed_actions(info.inline))
    env = _awk_env(inv, info.inline)
    return any(
        how != "write" and (None in command or (printed is not None and None in printed))
        or (printed is not None and not any(printed))
        for how, command, printed in _awk_commands(info.inline, env)
    )


def pipeline_input_code(
    stages: Sequence[Sequence[Invocation | None]], run: Run
) -> Finding | None:
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
    return None
