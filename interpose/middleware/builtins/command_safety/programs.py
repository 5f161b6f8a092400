"""How commands take program text: shells (``sh -c``, a script on stdin),
interpreters (``python -c``, ``perl -e``...), ``eval``/``source``, ``at``/``crontab`` jobs,
``ssh`` and ``sqlite3`` (:func:`exec_info`); download commands; and command names known
only at run time (:func:`dynamic_name`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..shell import SUBST, Script, Word
from .invocation import Invocation
from .model import DEFERRED
from .options import derived, opts, parse_opts, word_set
from .paths import words_snippet
from .wrappers import canon, unwrap

SHELLS = word_set(
    "sh bash rbash zsh dash ksh mksh lksh oksh loksh pdksh posh yash ash hush bosh sash jsh "
    "fish csh tcsh rc es elvish nu nushell xonsh osh ysh oil ion murex"
)
"""The shell family: programs that run a script given with ``-c`` (or ``--command``),
named as their first operand, or read from stdin -- the POSIX shells and their kin
(``yash``, ``mksh``, ``posh``, the OpenBSD ``ksh`` ports, busybox ``ash``/``hush``) and the
other command shells (``fish``, ``csh``/``tcsh``, ``rc``, ``es``, ``elvish``, ``nu``,
``xonsh``, ``osh``/``ysh``): their text is judged as a POSIX script, and text that does
not parse as one is refused (``unparseable``)."""
_SHELL_INLINE_LONG = word_set("--command --commands --execute --init-command")
"""Long options of the shell family whose value is a script (``fish --command``, ``nu
--commands``/``--execute``, ``fish --init-command``)."""
_SHELL_INLINE_SHORT = {"fish": "cC", "nu": "ce"}
"""Short options whose value is a script, where they are not just ``-c``."""
_SHELL_VALUE_LONG = word_set(
    "--rcfile --init-file --rc --config --env-config --plugin-config --log-level "
    "--log-target --debug-output --profile --features --shell-type"
)
STDIN_FILES = word_set(
    "- /dev/stdin /dev/fd/0 /proc/self/fd/0 /proc/thread-self/fd/0 /proc/$$/fd/0 "
    "/proc/$BASHPID/fd/0"
)
"""Program file names that are the standard input: ``bash /dev/fd/0 <<< ...`` runs what
is piped or fed into it, like ``bash -s``."""
DOWNLOADERS = word_set(
    "curl wget fetch aria2c axel http https xh xhs curlie lwp-request lwp-download get ftp "
    "tftp lftp lynx links elinks w3m browsh wget2 hurl"
)
"""Programs that print what they fetch from a URL: HTTP clients (curl, wget, httpie's
``http``/``https``, ``xh``, ``curlie``...), FTP clients and the text-mode browsers
(``lynx -source``/``-dump``, ``links``/``links2``/``elinks -source``, ``w3m
-dump_source``)."""


@dataclass(frozen=True, slots=True)
class _Interpreter:
    inline: str  # short options whose value is program text (python -c, perl -e)
    module: str = ""  # short options that run a named module (python -m): no program text
    short_arg: str = ""  # other short options taking a value
    long_inline: frozenset[str] = frozenset()
    long_arg: frozenset[str] = frozenset()
    backticks: bool = False  # `...` in the program runs a shell command


INTERPRETERS: dict[str, _Interpreter] = {
    "python": _Interpreter("c", module="m", short_arg="WXQ"),
    "perl": _Interpreter("eE", short_arg="IMmx", backticks=True),
    "ruby": _Interpreter("e", short_arg="rICE", backticks=True),
    "node": _Interpreter(
        "ep",
        short_arg="r",
        long_inline=frozenset({"eval", "print"}),
        long_arg=frozenset({"require", "import", "loader", "input-type", "conditions"}),
    ),
    "php": _Interpreter("rBRE", short_arg="cdfz", backticks=True),
    "bun": _Interpreter(
        "ep", short_arg="r", long_inline=frozenset({"eval", "print"}), long_arg=frozenset({"cwd"})
    ),
    "lua": _Interpreter("e", short_arg="l"),
    "rscript": _Interpreter("e"),
    "julia": _Interpreter("e", short_arg="JCOLp", backticks=True),
}


@dataclass(frozen=True, slots=True)
class Exec:
    """How a command takes program text."""

    kind: str  # "shell", "interpreter", "eval", "source", "crontab" (schedule lines),
    # or a program in its own syntax: "awk", "sed", "makefile" (:data:`_OWN_SYNTAX`)
    code: tuple[Word, ...]  # words holding program text or naming the program file
    inline: str | None  # program text given on the command line
    stdin: bool  # the program is read from standard input
    params: tuple[Word, ...] = ()  # sh -c SCRIPT $0 $1...: the script's parameters
    origin: str = ""  # where the text runs, when not where it is given (a trap action)


def _shell_exec(name: str, args: Sequence[Word]) -> Exec:
    i, n = 0, len(args)
    command = stdin = False
    inline = _SHELL_INLINE_SHORT.get(name, "c")
    while i < n:
        t = args[i].text
        if t in ("--", "-"):
            i += 1
            break
        if t.startswith("--"):
            option, eq, value = t.partition("=")
            if option in _SHELL_INLINE_LONG:  # fish --command 'CMD', nu --commands=CMD
                code = derived(value) if eq else (args[i + 1] if i + 1 < n else Word(""))
                return Exec("shell", (code,), code.text, False, tuple(args[i + 1 + (not eq) :]))
            i += 2 if option in _SHELL_VALUE_LONG and not eq else 1
            continue
        if len(t) > 1 and t[0] in "-+":
            letters = t[1:]
            command = command or (t[0] == "-" and any(c in inline for c in letters))
            stdin = stdin or "s" in letters
            i += 2 if ("o" in letters or "O" in letters) else 1
            continue
        break
    operands = tuple(args[i:])
    if command:
        return Exec(
            "shell", operands[:1], operands[0].text if operands else "", False, operands[1:]
        )
    if operands and not stdin:
        return Exec("shell", operands[:1], None, operands[0].text in STDIN_FILES)
    return Exec("shell", (), None, True)


def _interpreter_exec(spec: _Interpreter, args: Sequence[Word]) -> Exec:
    i, n = 0, len(args)
    while i < n:
        t = args[i].text
        if t == "-":
            return Exec("interpreter", (), None, True)
        if t == "--":
            i += 1
            break
        if t.startswith("--"):
            name, eq, value = t[2:].partition("=")
            if name in spec.long_inline:
                word = derived(value) if eq else (args[i + 1] if i + 1 < n else Word(""))
                return Exec("interpreter", (word,), word.text, False)
            i += 2 if (name in spec.long_arg and not eq) else 1
            continue
        if len(t) > 1 and t[0] == "-":
            skip = 1
            for k in range(1, len(t)):
                ch, attached = t[k], t[k + 1 :]
                if ch in spec.inline:
                    word = (
                        derived(attached) if attached else (args[i + 1] if i + 1 < n else Word(""))
                    )
                    return Exec("interpreter", (word,), word.text, False)
                if ch in spec.module:
                    return Exec("interpreter", (), None, False)
                if ch in spec.short_arg:
                    skip = 1 if attached else 2
                    break
            i += skip
            continue
        break
    operands = tuple(args[i:])
    if operands:
        return Exec("interpreter", operands[:1], None, operands[0].text in STDIN_FILES)
    return Exec("interpreter", (), None, True)


def exec_info(inv: Invocation) -> Exec | None:
    if inv.name in SHELLS:
        return _shell_exec(inv.name, inv.args)
    spec = INTERPRETERS.get(inv.name)
    if spec is not None:
        return _interpreter_exec(spec, inv.args)
    if inv.name == "deno" and inv.args and inv.args[0].text == "eval":  # deno eval CODE
        code = next((w for w in inv.args[1:] if not w.text.startswith("-")), None)
        if code is None:
            return None
        return Exec("interpreter", (code,), code.text, False)
    if inv.name == "eval":
        return Exec("eval", tuple(inv.args), " ".join(w.text for w in inv.args), False)
    if inv.name == "trap":  # trap [--] ACTION SIGNAL...: the action runs as eval text
        action = inv.args[1:] if inv.args[:1] and inv.args[0].text == "--" else inv.args
        if len(action) < 2 or action[0].text in ("-", "") or action[0].text.startswith("-"):
            return None
        return Exec("eval", (action[0],), action[0].text, False, origin=DEFERRED)
    if inv.name in ("source", "."):
        stdin = bool(inv.args) and inv.args[0].text in STDIN_FILES
        return Exec("source", tuple(inv.args[:1]), None, stdin)
    if inv.name in ("at", "batch"):  # the job's commands come from stdin or -f FILE
        parsed = parse_opts(inv.args, _AT)
        if parsed.has(*_AT_NO_JOB):
            return None
        job = parsed.value("-f")
        if job is not None and job.text not in STDIN_FILES:
            return Exec("shell", (job,), None, False)
        return Exec("shell", (), None, True)
    if inv.name == "crontab":  # a new crontab from stdin ("-" or nothing) or a file
        parsed = parse_opts(inv.args, _CRONTAB)
        if parsed.has("-l", "-r", "-e", "-T", "-V"):
            return None
        table = parsed.operands[:1]
        if table and table[0].text not in STDIN_FILES:
            return Exec("crontab", tuple(table), None, False)
        return Exec("crontab", (), None, True)
    if inv.name == "ssh":  # ssh HOST (a login shell) or ssh HOST bash: the script on stdin
        remote = parse_opts(inv.args, _SSH_OPTS, stop_at_operand=True).operands[1:]
        if remote and remote[0].text == "--":
            remote = remote[1:]
        if not remote or (
            canon(remote[0].text) in SHELLS
            and not any(w.text.startswith("-") and "c" in w.text for w in remote[1:])
            and all(w.text.startswith("-") for w in remote[1:])
        ):
            return Exec("shell", (), None, True)
        return None
    if inv.name in _OWN_SYNTAX:  # awk, sed, make
        return _OWN_SYNTAX[inv.name](inv.args)
    if inv.name == "sqlite3":  # SQL and dot-commands: operands after the database, stdin
        operands = _sqlite_operands(inv.args)
        if len(operands) > 1:
            sql = "\n".join(operands[1:])  # each argument is a separate statement
            return Exec("interpreter", (Word(sql),), sql, False)
        return Exec("interpreter", (), None, True)
    return None


def _program_source(kind: str, inline: Sequence[Word], files: Sequence[Word]) -> Exec | None:
    """The program of ``awk``/``sed``/``make``: a file read from stdin (``-f -``) or made
    by a process substitution (``-f <(...)``), else the text given inline (a program in a
    file on disk is not read, like ``bash ./x.sh``)."""
    for word in files:
        if word.text in ("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"):
            return Exec(kind, (), None, True)
        if word.process:
            return Exec(kind, (word,), None, False)
    if not inline:
        return None
    if len(inline) == 1:
        return Exec(kind, (inline[0],), inline[0].text, False)
    text = "\n".join(w.text for w in inline)  # -e A -e B: one program, a line each
    return Exec(kind, (Word(text),), text, False)


_AWK = opts(
    "fvFeEiIlLoO",
    long_arg="file assign field-separator source exec include load",
    alias={"f": "file", "v": "assign", "F": "field-separator", "e": "source", "E": "exec"},
)


def _awk_exec(args: Sequence[Word]) -> Exec | None:
    """``awk PROGRAM``, ``awk -f FILE``, ``gawk -e/--source TEXT``."""
    parsed = parse_opts(args, _AWK)
    files = [w for flag, w in parsed.values if flag in ("--file", "--exec")]
    inline = [w for flag, w in parsed.values if flag == "--source"]
    if not files and not inline:
        inline = parsed.operands[:1]
    return _program_source("awk", inline, files)


_SED = opts(
    "efl",
    "quiet silent posix regexp-extended separate null-data sandbox debug unbuffered",
    "expression file line-length",
    {"e": "expression", "f": "file"},
    short_optional="i",
)


def _sed_exec(args: Sequence[Word]) -> Exec | None:
    """``sed SCRIPT``, ``sed -e A -e B``, ``sed -f FILE``; ``--sandbox`` runs nothing."""
    parsed = parse_opts(args, _SED)
    if parsed.has("--sandbox"):
        return None
    files = [w for flag, w in parsed.values if flag == "--file"]
    inline = [w for flag, w in parsed.values if flag == "--expression"]
    if not files and not inline:
        inline = parsed.operands[:1]
    return _program_source("sed", inline, files)


_MAKE = opts(
    "fCIoWEjlO",
    "always-make keep-going silent quiet dry-run just-print recon question touch "
    "print-data-base environment-overrides ignore-errors",
    "file makefile directory include-dir old-file new-file what-if assume-old assume-new "
    "eval jobs load-average output-sync",
    {
        "f": "file",
        "C": "directory",
        "I": "include-dir",
        "E": "eval",
        "o": "old-file",
        "W": "what-if",
    },
)


def _make_exec(args: Sequence[Word]) -> Exec | None:
    """``make -f -`` (a makefile on stdin), ``make -f <(...)``, ``make --eval=TEXT``;
    ``SHELL=CMD`` operands are judged as the shell make runs recipes with."""
    parsed = parse_opts(args, _MAKE)
    files = [w for flag, w in parsed.values if flag in ("--file", "--makefile")]
    inline = [w for flag, w in parsed.values if flag == "--eval"]
    inline += [w for w in parsed.operands if w.text.startswith(("SHELL=", "MAKESHELL="))]
    return _program_source("makefile", inline, files)


_OWN_SYNTAX = {"awk": _awk_exec, "sed": _sed_exec, "make": _make_exec}
"""Programs that run commands in their own syntax (:mod:`.remote_exec.languages`)."""

_SSH_OPTS = opts("BbcDEeFIiJLlmOoPpQRSWw")
_AT = opts("fqtT")
_AT_NO_JOB = frozenset({"-l", "-r", "-d", "-c", "-V"})
_CRONTAB = opts("us")
_SQLITE_ARG = word_set("-cmd -init -separator -nullvalue -newline -vfs -maxsize -mmap -A -escape")


def _sqlite_operands(args: Sequence[Word]) -> list[str]:
    """``sqlite3 [OPTIONS] DB SQL...``: the database and the SQL, with ``-cmd`` values
    (run before the SQL) placed after the database."""
    operands: list[str] = []
    commands: list[str] = []
    i = 0
    while i < len(args):
        t = args[i].text
        if t.startswith("-") and len(t) > 1:
            if t.lstrip("-") in {a.lstrip("-") for a in _SQLITE_ARG} and i + 1 < len(args):
                if t.lstrip("-") == "cmd":
                    commands.append(args[i + 1].text)
                i += 2
                continue
            i += 1
            continue
        operands.append(t)
        i += 1
    database = operands[:1] or [":memory:"]
    return [*database, *commands, *operands[1:]]


def downloader(script: Script) -> str | None:
    """The first download command anywhere in ``script`` (substitutions included)."""
    for cmd in script.commands:
        if cmd.words:
            unwrapped = unwrap(list(cmd.words))
            if unwrapped is not None and unwrapped.name in DOWNLOADERS:
                return words_snippet([Word(unwrapped.name), *unwrapped.args], 60)
        for word in (*cmd.words, *cmd.assignments):
            for sub in word.subs:
                found = downloader(sub)
                if found is not None:
                    return found
    return None


MAX_READINGS = 8  # alternative texts of one program (shells differ on escapes)

_DYNAMIC_NAME = re.compile(r"\$[A-Za-z_0-9@*#?$!{(-]")
WHOLE_EXPANSION = re.compile(
    r"\s*(?:\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*]|\$\{[^{}]*\}|" + SUBST + r")\s*"
)


def dynamic_name(text: str) -> bool:
    """Whether a command word names its command only at run time: an unresolved variable
    or substitution in its last path component (``$CMD``, ``$(echo rm)``, ``${X:-rm}``).
    ``$HOME/bin/tool`` and ``"$(npm bin)/eslint"`` name ``tool`` and ``eslint``."""
    if "$" not in text and SUBST not in text:
        return False
    last = text.rsplit("/", 1)[-1]
    return SUBST in last or "}" in last or _DYNAMIC_NAME.search(last) is not None


def script_snippet(script: Script, limit: int = 60) -> str:
    text = "; ".join(words_snippet(cmd.words, limit) for cmd in script.commands if cmd.words)
    return text if len(text) <= limit else text[: limit - 3] + "..."
