"""
The guard runs before the ``exec`` tool.  It reads ``args["command"]`` (a shell string, or
a list of argv strings run as one simple command; numbers in it are spelled out, other
element types are refused) and, when the program and its arguments come apart,
``args["args"]``/``args["argv"]``, and blocks the call when the command would do
something on the list below.  The decision is made on *the commands the shell
would run*, never on substrings of the text:

1. :mod:`..shell` parses the text with POSIX quoting rules into simple commands, with
   their redirections, pipelines, function definitions and the scripts of every
   ``$(...)``, backtick and ``<(...)`` substitution.  Quoted text that is only an
   argument (``git commit -m "rm -rf /"``, ``grep "curl | bash" docs/``) is data and is
   never judged as a command; a substitution inside quotes (``echo "$(rm -rf /)"``) is a
   command and is.  Text that does not parse is refused (rule ``unparseable``).
2. Each simple command is *unwrapped*: leading ``VAR=value``, ``sudo``/``doas``/``env``
   (with their options and assignments, ``env -S`` split), ``command``, ``builtin``,
   ``exec``, ``nohup``, ``time``, ``nice``, ``timeout``, ``stdbuf``, ``ionice``,
   ``setsid``, ``busybox``, ``xargs`` and the programs that run their arguments as a
   command (``systemd-run``, ``unshare``, ``nsenter``, ``strace``, ``ltrace``,
   ``gdb --args``, ``taskset``, ``chrt``, ``setpriv``, ``firejail``, ``bwrap``...: the
   ``WRAPPERS`` table of :mod:`.wrappers`) are peeled off; ``/usr/bin/rm``, ``./rm`` and
   ``\\rm`` are ``rm``.  Variables assigned earlier in the same command line
   (``D=/; rm -rf $D``) with their parameter expansions (``${X:-/}``, ``${D%/x}``...,
   :mod:`.expansion`), ``$PWD``/``$(pwd)``/``~+``, ``$(mktemp)``, ``cd``
   (``cd / && rm -rf *``), ``$IFS`` splitting, ``$'\\x72m'`` strings and quote splicing
   (``r''m``, ``"r"m``) are followed, and so are values that vary (:mod:`.state`): loop
   variables, ``read`` from literal text or a pipe, function arguments per call,
   ``set --``, aliases -- each value judged in turn, every one of them (the
   analysis budget bounds the work).
3. Scripts handed to another shell are analyzed recursively: ``bash -lc '...'``
   (with its positional parameters; every shell of ``programs.SHELLS``, ``yash``,
   ``fish``, ``nu``... and a script read from ``/dev/stdin``, ``/dev/fd/0``), ``sh -c``,
   ``eval``, ``trap`` actions, ``coproc``, the text bash expands again (arithmetic,
   array subscripts, ``${x@P}``, ``PS4``: :mod:`.arithmetic`), ``su -c``, ``sg``, ``watch``,
   ``ssh host '...'``, ``flock -c``, ``script -c``, ``tmux``, ``screen``, ``parallel``,
   ``at``/``batch``/``crontab`` job text, command options and variables (``git -c
   core.sshCommand=``, ``tar --to-command``, ``rsync -e``, ``ssh -o ProxyCommand=``,
   ``vim -c '!...'``, ``sqlite3 .shell``, ``GIT_SSH_COMMAND``, ``PAGER``, ``EDITOR``,
   ``zip -TT``, ``man -P``), programs that run commands in their own syntax (``awk``
   ``system()``/``print | "cmd"``/``getline``, ``sed`` ``e``/``s///e``, a makefile given
   to ``make -f -``/``--eval``: :mod:`.remote_exec.languages`), ``>(sh)`` sinks,
   ``git -c alias.x='!...'``, ``find -exec``/``-execdir``/``-ok``, ``xargs`` (with the
   paths produced by an upstream ``find``/``echo``), here-documents and here-strings fed
   to a shell, ``system("...")``-style calls, argument lists and delete calls
   (``shutil.rmtree``, ``fs.rmSync``, ``FileUtils.rm_rf``: :mod:`.interpreters`) inside
   ``python -c``/``perl -e``/``node -e``/``ruby -e``/``awk`` programs, and program text
   the guard can compute: the output of ``echo``, ``printf``
   (escapes and formats as bash, dash and zsh read them), ``yes`` and here-documents,
   through ``base64``/``base32``/``openssl base64`` decoding, ``xxd -r -p``, ``rev``,
   ``tac``, ``tr`` and ``gunzip``-style decompression, whether it is piped into a shell or
   an interpreter, substituted into a script (``sh -c "$(echo ...)"``, ``eval "$X"`` with
   ``X=$(printf ...)``) or used as a command name (``$(echo rm) -rf /``).
4. Per-command rules, chosen from tables by command name, judge options the way the
   command parses them: flags in any order and spelling (``-rf``, ``-r -f``, ``-R``,
   ``--recursive``, GNU unique-prefix abbreviations such as ``--rec``), option values
   (``-m "... -n ..."`` is a message, not ``-n``) and ``--``.  Paths are normalized with
   :func:`..security_audit.resolve_path` (``~``, ``$HOME``, ``${HOME}``, ``..``, ``//``) and
   globs are judged by what they could match.

Rules (the rule id leads the block reason), one module per family:

- :mod:`.filesystem`: ``fs-destruction``, ``system-files``, ``persistence``.
- :mod:`.disk`: ``disk``.
- :mod:`.permissions`: ``permissions``, ``accounts``.
- :mod:`.remote_exec`: ``rce``, ``reverse-shell``, ``fork-bomb``, ``dynamic-code``.
- :mod:`.git`: ``git-no-verify``.
- :mod:`.containers`: ``docker-prune``; commands run inside a container (``docker
  run``/``exec``, ``kubectl exec``...) are judged by every rule, bind mounts mapped to the
  host paths they show.
- :mod:`.secrets`: ``sensitive-read``.
- :mod:`.windows` (with :mod:`.windows_rules`, :mod:`.windows_defense`): PowerShell and cmd
  text (:mod:`.powershell` reads it) when the tool is ``powershell``/``pwsh``/``cmd`` or
  its ``shell`` argument names one (:func:`shell_of`), and runners from bash
  (``powershell -Command``/``-EncodedCommand``, ``cmd /c``): ``windows-destruction``,
  ``windows-rce``, ``windows-persistence``, ``windows-defense``, ``windows-credentials``.
- :mod:`.macos`: ``macos-persistence``, ``macos-protection``, ``macos-accounts``.
- :mod:`.cloud`: ``cloud-destruction``; :mod:`.databases`: ``database-destruction``;
  :mod:`.leaks`: ``secrets-leaving``, ``secret-in-request``, ``secrets-read``.  These ask
  a person by default, ``secrets-leaving`` blocks (:mod:`.decisions`: each rule id is
  ``block``, ``ask`` or ``off``; the guard's ``decisions`` argument sets them).
- ``unparseable``: text that does not parse, or shells nested too deeply; an argv list
  holding something other than strings and numbers, or a command that is neither.
- ``too-complex``: the analysis would exceed its budget (:mod:`.budget`: command size,
  words, computed text, expansion steps, nesting depth, wall time); the reason names the
  budget and its numbers.  Every input is decided in bounded time and stack.
- ``internal-error``: the guard failed on the input (a bug); the command is refused.
- ``extra-deny``: a constructor ``extra_deny`` regex matched a simple command.

The shared shell model: :mod:`.model` (the verdict, shared constants), :mod:`.options`
(option grammars), :mod:`.wrappers` (command names, the wrappers peeled off them),
:mod:`.paths` (path judgements), :mod:`.invocation`, :mod:`.find` (``find``'s grammar),
:mod:`.programs` (how commands take program text), :mod:`.operands` (what commands
read and write), :mod:`.expansion` (parameter expansion), :mod:`.arithmetic` (text bash
expands again: arithmetic, prompt strings), :mod:`.text` (program text
computed at run time), :mod:`.run` (one analysis), :mod:`.substitutions` (what
substitutions output), :mod:`.fanout` (what ``xargs`` and ``find -exec`` hand on),
:mod:`.reach` (what a write or a read reaches) and :mod:`.budget`
(what one analysis may cost).  A family with many rules is a folder
(:mod:`.remote_exec`).  Adding a
rule is one function in a family module, its entry in that module's ``RULES`` (by command
name) or ``GENERIC``, and lines in a ``tests/middleware/guard_corpus_exec*.jsonl`` corpus.

Known limits -- what a check of the command text cannot see: symlinks and bind mounts
(``ln -s / x; rm -rf x/``... the link is allowed, the later ``rm`` judges the name);
values of variables set outside the command line or computed at run time (a recursive
delete of such a target is refused as unknown unless a known prefix or directory name
bounds it: :func:`.paths.unknown_risk`; as a command name see ``dynamic-code``); the
output of
local programs and files run as code (``cat x.sh | bash``, ``$(cat cmd.txt)``) and of
the trusted setup tools; substitutions in argument position of a ``-c`` script, which the
inner shell parses again (``bash -c "echo $(cat f)"``); aliases and shell functions defined
elsewhere, functions calling functions, the values arithmetic computes (the commands it
runs are judged: :mod:`.arithmetic`); the contents of scripts and programs
on disk (``bash ./cleanup.sh``,
``make clean``, ``npm run x``); files written by one command and run by a later one;
interpreter code beyond the simple patterns listed above; writes by tools the tables do
not list, and persistence files by paths not on the list; which block device is the
system disk (every device but the pseudo-devices is precious); programs' own config files
(``~/.ssh/config`` ``ProxyCommand``, ``.vimrc``); brace sequences
(``{1..9}`` is judged as written; lists such as ``{bin,etc}`` are expanded); and the
remote side of ``ssh`` beyond the command text.  Shells nested more than eight deep are
refused as ``unparseable``.  The guard is a seatbelt for an honest-but-fallible agent,
not a sandbox: run untrusted agents in a container as well.
"""

from __future__ import annotations

import functools
import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from ....errors import ConfigError
from ....pipeline.payloads import Approval, ApprovalRequest, ToolBeforeInput, ToolBeforeOutput
from ..shell import Script, SimpleCommand, Word
from . import (
    cloud,
    containers,
    databases,
    disk,
    filesystem,
    git,
    leaks,
    macos,
    permissions,
    remote_exec,
    secrets,
    state,
    windows,
)
from .budget import Budget, TooComplex, frames_needed
from .decisions import Decision, resolve
from .facts import Facts, Recording, Sink
from .model import HOME, Finding
from .options import GLOB_CHARS
from .run import STAND_INS, FunctionRule, PipelineRule, Rule, RuleTable, Run

__all__ = [
    "HOME",
    "Analysis",
    "CommandSafetyGuard",
    "Facts",
    "Finding",
    "analysis_of",
    "analyze_command",
    "commands_of",
    "forget_analyses",
    "share_analyses",
    "shell_of",
]


_FAMILIES = (
    remote_exec,
    filesystem,
    secrets,
    disk,
    permissions,
    git,
    containers,
    cloud,
    databases,
    leaks,
    state,
    windows,
    macos,
)
"""The rule families, in the order their rules run (remote_exec's generic rule first: a
download run as code is ``rce`` before its operands are judged as files)."""


def _assemble() -> RuleTable:
    """Merge the families' tables: each module exports ``RULES`` (by command name) and
    optionally ``GENERIC``, ``PIPELINES`` and ``FUNCTIONS``; rules run in family order,
    a name's own before the generic ones (joined here once, not per command)."""
    by_name: dict[str, tuple[Rule, ...]] = {}
    generic: list[Rule] = []
    pipelines: list[PipelineRule] = []
    functions: list[FunctionRule] = []
    for family in _FAMILIES:
        for name, rules in family.RULES.items():
            by_name[name] = by_name.get(name, ()) + rules
        generic += getattr(family, "GENERIC", ())
        pipelines += getattr(family, "PIPELINES", ())
        functions += getattr(family, "FUNCTIONS", ())
    chains = {name: (*rules, *generic) for name, rules in by_name.items()}
    return RuleTable(chains, tuple(generic), tuple(pipelines), tuple(functions), STAND_INS)


_TABLE = _assemble()
"""Every rule, assembled once at import."""

_DEFAULT_DECISIONS = resolve(None, "decisions")
"""The rules that do not block by default (:data:`.decisions.DEFAULTS`)."""


# -- public API ----------------------------------------------------------------------------------


def _argv_words(argv: Sequence[str]) -> list[Word]:
    """An argv list is one simple command; ``~`` and globs are judged as if a shell saw
    them, because some runners hand the list to a shell."""
    return [
        Word(a, quoted=True, tilde=a.startswith("~"), glob=GLOB_CHARS.search(a) is not None)
        for a in argv
    ]


def _analyze(
    command: object,
    deny: Sequence[re.Pattern[str]],
    allow: Sequence[re.Pattern[str]],
    budget: Budget | None = None,
    sink: Sink | None = None,
    shell: str = "bash",
    decisions: Mapping[str, Decision] = _DEFAULT_DECISIONS,
) -> Finding | None:
    """Judge ``command`` within ``budget`` (a fresh :class:`.Budget` by default); with a
    ``sink``, note what it runs there (:mod:`.facts`).  The verdict is the first finding
    whose rule blocks, else the first whose rule asks (``decisions``: rule id -> ``ask``
    or ``off``; :mod:`.decisions`)."""
    if budget is None:
        budget = Budget()
    budget.fit_stack(sys.getrecursionlimit() - _THREAD_FRAMES)
    try:
        frames = frames_needed(budget.max_depth)
        return _with_stack(
            frames, _judge_command, command, deny, allow, budget, sink, shell, decisions
        )
    except TooComplex as exc:
        if sink is not None:
            sink.unparsed = True
        return Finding(
            "too-complex",
            exc.budget,
            f"too complex to analyze ({exc}); a command that cannot be analyzed within the "
            f"guard's budget is not run",
        )


def _judge_command(
    command: object,
    deny: Sequence[re.Pattern[str]],
    allow: Sequence[re.Pattern[str]],
    budget: Budget,
    sink: Sink | None = None,
    shell: str = "bash",
    decisions: Mapping[str, Decision] = _DEFAULT_DECISIONS,
) -> Finding | None:
    def new_run() -> Run:
        if sink is None:
            return Run(_TABLE, deny, allow, budget, decisions)
        return Recording(_TABLE, deny, allow, budget, sink, decisions)

    run = new_run()
    if shell != "bash":
        text = command if isinstance(command, str) else _argv_strings(command)
        if isinstance(text, Finding):
            return text
        if not isinstance(text, str):
            text = " ".join(_quoted(a, shell) for a in text)
        return windows.judge_text(run, text, shell) or run.asked
    if isinstance(command, str):
        budget.size(len(command))
        # bash drops NUL bytes from its input (and no argv can carry one)
        return run.source(command.replace("\x00", ""), "the command") or run.asked
    argv = _argv_strings(command)
    if isinstance(argv, Finding):
        return argv
    budget.size(sum(map(len, argv)))
    budget.made_words(len(argv))
    found = run.script(Script((SimpleCommand(tuple(_argv_words(argv))),)))
    if found is None and argv and _SHELL_LINE.search(argv[0]):
        # ["rm -rf /"]: no program has that name, but runners that take a list with a
        # shell (subprocess with shell=True, child_process.exec) run its first element
        # as a command line, so it is judged as one
        line = new_run()
        found = line.source(argv[0].replace("\x00", ""), "the first element of the argv list")
        found = found or line.asked
    return found or run.asked


def _quoted(arg: str, shell: str) -> str:
    """``arg`` quoted as one word of ``shell`` (an argv list handed to PowerShell/cmd)."""
    if arg and not re.search(r"[\s'\"`$;&|(){}<>^,@#]", arg):
        return arg
    return (
        '"' + arg.replace('"', '""') + '"' if shell == "cmd" else "'" + arg.replace("'", "''") + "'"
    )


SHELLS: dict[str, str] = {
    **dict.fromkeys(("powershell", "pwsh", "powershell.exe", "pwsh.exe"), "powershell"),
    **dict.fromkeys(("cmd", "cmd.exe"), "cmd"),
}
"""Tool names and ``shell`` arguments naming a PowerShell or cmd shell (lower-case)."""


def shell_of(tool: str, args: Mapping[str, object]) -> str:
    """The dialect an ``exec`` call's command is written in: ``"powershell"`` or ``"cmd"``
    when the tool is named so (``powershell``, ``pwsh``, ``cmd``, any case, ``.exe``) or its
    ``shell`` argument says so, ``"bash"`` otherwise."""
    if "shell" in args:
        shell = args["shell"]
        if isinstance(shell, str):
            name = shell.strip().lower().replace("\\", "/").rsplit("/", 1)[-1]
            if name in SHELLS:
                return SHELLS[name]
    found = _TOOL_SHELLS.get(tool)
    if found is None:  # a process sees few tool names: each is folded once
        found = SHELLS.get(tool.strip().lower(), "bash")
        if len(_TOOL_SHELLS) < 256:
            _TOOL_SHELLS[tool] = found
    return found


_TOOL_SHELLS: dict[str, str] = {}


_SHELL_LINE = re.compile(r"[\s;&|<>()`$]")
"""Characters that make an argv element a command line rather than a program name."""


def _argv_strings(command: object) -> list[str] | Finding:
    """The argv list as strings: numbers are spelled as a runner would (``["sleep", 5]``);
    any other element (None, a dict, a nested list, a bool) cannot be judged, so the list
    is refused rather than let through."""
    if not isinstance(command, Sequence) or isinstance(command, (str, bytes, bytearray)):
        kind = type(command).__name__
        return Finding(
            "unparseable",
            kind,
            f"the command is of type {kind}, not a string or a list of argument strings; a command "
            f"that cannot be analyzed is not run",
        )
    argv: list[str] = []
    for index, element in enumerate(command):
        if isinstance(element, str):
            argv.append(element)
        elif isinstance(element, (int, float)) and not isinstance(element, bool):
            argv.append(str(element))
        else:
            kind = type(element).__name__
            return Finding(
                "unparseable",
                kind,
                f"element {index} of the argv list is of type {kind}, not a string or a number; "
                f"a command that cannot be analyzed is not run",
            )
    return argv


_T = TypeVar("_T")
_THREAD_FRAMES = 10  # what a fresh thread's stack holds before the analysis starts


def _with_stack(frames: int, fn: Callable[..., _T], *args: Any) -> _T:
    """``fn(*args)``, on a fresh thread when the caller's stack has fewer than ``frames``
    frames left before the recursion limit (the analysis's depth budget bounds its stack
    use to that many): a RecursionError cannot happen, however deep the caller is.

    Raises:
        whatever ``fn`` raises.
    """
    limit = sys.getrecursionlimit()
    try:
        sys._getframe(max(0, limit - frames))  # exists: the stack is already that deep
    except ValueError:
        return fn(*args)
    outcome: list[_T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(fn(*args))
        except BaseException as exc:  # handed back to the caller's thread below
            failure.append(exc)

    # the analysis bounds its own time (the budget's wall-time limit), so join() is bounded
    worker = threading.Thread(target=target, name="command-safety-guard", daemon=True)
    worker.start()
    worker.join()
    if failure:
        raise failure[0]
    return outcome[0]


def analyze_command(
    command: str | Sequence[str], *, budget: Budget | None = None, shell: str = "bash"
) -> Finding | None:
    """Judge a shell command (or an argv list) with the built-in rules.

    ``budget`` (a fresh :class:`.budget.Budget` by default) bounds the work; past it the
    command is refused with rule ``too-complex``.  Pass one to read its counters after.
    ``shell`` is the language the command is written in: ``"powershell"``/``"pwsh"`` or
    ``"cmd"`` (:mod:`.windows`); any other name is a POSIX shell, judged as bash.

    >>> analyze_command("rm -rf /").reason
    "fs-destruction: rm -rf targets '/', the filesystem root (token '/')"
    >>> analyze_command("git commit -m 'rm -rf /'") is None
    True
    """
    return _analyze(command, (), (), budget, shell=SHELLS.get(shell.lower(), "bash"))


@dataclass(frozen=True, slots=True)
class Analysis:
    """One analysis of a command line: the built-in rules' verdict and what it runs
    (``whole``: every command, or only those before the walk stopped at the verdict)."""

    finding: Finding | None
    facts: Facts
    whole: bool = True


class _Analyses:
    """The last ``size`` analyses by command, least recently used first out, shared by
    the guards without extra rules (they put what they judge) and the permission rules."""

    __slots__ = ("_lock", "_size", "_table", "wanted")

    def __init__(self, size: int) -> None:
        self._table: OrderedDict[str | tuple[str, ...], Analysis] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()
        # set by the first analysis_of(): until someone reads analyses, the guards
        # record nothing (what the line runs costs them ~10-25% of a first analysis)
        self.wanted = False

    def get(self, key: str | tuple[str, ...]) -> Analysis | None:
        found = self._table.get(key)  # atomic; no lock on the path every call takes
        if found is not None:
            try:
                self._table.move_to_end(key)
            except KeyError:  # another thread let it go meanwhile
                pass
        return found

    def clear(self) -> None:
        with self._lock:
            self._table.clear()

    def put(self, key: str | tuple[str, ...], analysis: Analysis) -> None:
        if (len(key) if type(key) is str else sum(map(len, key))) > _CACHED_CHARS:
            return
        with self._lock:
            self._table[key] = analysis
            self._table.move_to_end(key)
            if len(self._table) > self._size:
                self._table.popitem(last=False)


_ANALYSES = _Analyses(1024)


def share_analyses() -> None:
    """From now on the guards without extra rules leave their analyses for
    :func:`analysis_of` (which calls this itself): called when permission rules are
    registered, so that even the first command is parsed once."""
    _ANALYSES.wanted = True


def forget_analyses() -> None:
    """Empty the process-wide memory of :func:`analysis_of`, as if it had never been
    called: the guards stop filling it until it is (their own memories are theirs)."""
    _ANALYSES.clear()
    _ANALYSES.wanted = False


def analysis_of(command: str | Sequence[str]) -> Analysis:
    """The built-in rules' verdict on ``command`` (a shell string or an argv list) and
    the facts of what it runs, whole (:class:`.facts.Facts`).  Remembered process-wide
    for the last 1,024 distinct commands of up to 4,096 characters, together with what
    the guards judge: the guard and the permission rules (:mod:`interpose.permissions.view`)
    share one analysis per command text.  A refused command is walked a second time, past
    its findings, when its facts are first asked for.  The verdict is under the default
    decisions (:data:`.decisions.DEFAULTS`): a finding whose rule asks (``cloud-destruction``)
    is the verdict only when nothing in the line blocks.

    >>> [c.argv for c in analysis_of("cd x && sudo git push").facts.commands]
    [('cd', 'x'), ('git', 'push')]
    """
    key = command if isinstance(command, str) else tuple(command)
    _ANALYSES.wanted = True  # share_analyses(), inline: every call of the rules comes here
    known = _ANALYSES.get(key)
    if known is not None and known.whole:
        return known
    if known is None:
        sink = Sink()
        finding = _analyze(key, (), (), sink=sink)
        if finding is not None and finding.rule == "too-complex":  # not remembered
            return Analysis(finding, sink.facts(), whole=False)
        known = Analysis(finding, sink.facts(), whole=finding is None)
    if not known.whole:  # the walk stopped at the verdict: walk all of it for the facts
        sink = Sink(exhaustive=True)
        if _analyze(key, (), (), sink=sink) is not None:
            sink.unparsed = True  # a part it cannot read (or a finding cut the walk short)
        known = Analysis(known.finding, sink.facts())
    _ANALYSES.put(key, known)
    return known


_CACHED_CHARS = 4096
"""The longest command (in characters, an argv list's summed) whose verdict a guard
remembers: bounds the cache's memory; a longer one is rarely repeated word for word."""


class _Unsettled(Exception):
    """A verdict that must not be remembered (``too-complex``), carried past the cache."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.reason)
        self.finding = finding


def _compile(patterns: Sequence[str], what: str) -> tuple[re.Pattern[str], ...]:
    compiled: list[re.Pattern[str]] = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ConfigError(
                f"command-safety-guard: invalid {what} regex {pattern!r}: {exc}"
            ) from None
    return tuple(compiled)


def commands_of(args: Mapping[str, object]) -> list[object]:
    """What an ``exec`` call runs: ``command`` (a shell string or an argv list) and, when
    the tool takes the program and its arguments apart (``{"command": "rm", "args": ["-rf",
    "/"]}``, or ``argv`` alone), the argv list they make.  A missing or empty command runs
    nothing: the tool itself reports it."""
    command = args.get("command")
    extra = args.get("args", args.get("argv"))
    found: list[object] = []
    if command is not None and not (isinstance(command, (list, tuple)) and not command):
        found.append(command)
    if isinstance(extra, (list, tuple)) and extra:
        if isinstance(command, str):
            found.append([command, *extra])
        elif command is None:
            found.append(list(extra))
    return found


class CommandSafetyGuard:
    """``builtin:command-safety-guard``: block dangerous ``exec`` commands.

    Args:
        extra_deny: regexes (``re.search``) over each simple command's normalized text --
            the command's basename and its arguments after quote removal, joined by
            spaces, at every wrapper level (``sudo rm -rf x`` is checked as
            ``sudo rm -rf x`` and as ``rm -rf x``).  A match blocks (rule ``extra-deny``).
        allow: regexes over the same text; a match exempts that simple command from every
            rule, ``extra_deny`` included (a pipeline finding is exempt when the downloader
            or the shell is).

        decisions: rule id -> ``"block"``, ``"ask"`` or ``"off"``, over the defaults of
            :data:`.decisions.DEFAULTS` (``{"cloud-destruction": "block",
            "secrets-read": "off"}``).  An ``ask`` finding does not block in
            ``tool.before``: the guard's approver (:meth:`approve`, registered on
            ``tool.approve`` when some rule asks) hands the call to the pipeline's
            human-approval handler.  A later blocking finding in the same line still
            blocks; an ``off`` finding is dropped and the analysis goes on.

    Block reason: ``command-safety-guard: <rule>: <message>``.  A command too large or
    too complex to judge within the analysis budget is refused (rule ``too-complex``); so
    is one the guard fails on (rule ``internal-error``, naming the exception -- a bug,
    never expected).

    An agent repeats commands, so each guard remembers its verdicts on the last
    ``CACHE_SIZE`` distinct commands (strings, or argv lists) of up to 4,096 characters,
    least recently used first out: a repeated command costs a lookup, not an analysis
    (and the cache holds at most ~4 MB of commands).  ``too-complex`` and
    ``internal-error`` are not remembered: they depend on the clock and the caller's
    stack, not only on the command, so such a command is judged again every time.  Once
    :func:`analysis_of` has been called (permission rules are in use), a guard without
    extra rules also leaves each analysis (its verdict and what the line runs) in the
    process-wide memory that function reads, so the rules judging the same call do not
    parse it again.

    Raises:
        ConfigError: a regex of ``extra_deny`` or ``allow`` does not compile; an unknown
            rule id or value in ``decisions``.
    """

    tools: ClassVar[frozenset[str]] = frozenset({"exec"})
    """The (normalized) tools this guard is meant for."""

    CACHE_SIZE: ClassVar[int] = 1024
    """How many distinct commands a guard remembers its verdict on (0: none)."""

    __slots__ = (
        "_allow",
        "_asks",
        "_decisions",
        "_deny",
        "_judged",
        "_judged_windows",
        "_last",
        "_shared",
    )

    def __init__(
        self,
        *,
        extra_deny: Sequence[str] = (),
        allow: Sequence[str] = (),
        decisions: Mapping[str, str] | None = None,
    ) -> None:
        self._deny = _compile(extra_deny, "extra_deny")
        self._allow = _compile(allow, "allow")
        self._decisions = (
            resolve(decisions, "command-safety-guard decisions")
            if decisions
            else _DEFAULT_DECISIONS
        )
        # per instance: the extra rules are part of the verdict.  A verdict is a frozen
        # Finding or None, so a remembered one can be handed out again as it is.
        self._judged = functools.lru_cache(maxsize=max(0, self.CACHE_SIZE))(self._judge)
        self._judged_windows = functools.lru_cache(maxsize=max(0, self.CACHE_SIZE))(
            self._judge_windows
        )
        # the commands tool.before judged last and its verdict, which the approver takes
        # once when its call has the same (a command too long to remember is not judged
        # twice)
        self._last: tuple[list[object], str, Finding | None] | None = None
        self._asks = "ask" in self._decisions.values()
        # its analyses are the default ones
        self._shared = not self._deny and not self._allow and self._decisions == _DEFAULT_DECISIONS

    def _judge(self, command: str | tuple[str, ...]) -> Finding | None:
        sink = Sink() if self._shared and _ANALYSES.wanted else None
        if sink is not None and (known := _ANALYSES.get(command)) is not None:
            return known.finding  # the permission rules read this call first
        finding = _analyze(command, self._deny, self._allow, sink=sink, decisions=self._decisions)
        if finding is not None and finding.rule == "too-complex":
            raise _Unsettled(finding)  # an exception: lru_cache does not remember it
        if sink is not None:  # what it runs, for the permission rules (see analysis_of)
            _ANALYSES.put(command, Analysis(finding, sink.facts(), whole=finding is None))
        return finding

    def _judge_windows(self, shell: str, command: str | tuple[str, ...]) -> Finding | None:
        finding = _analyze(command, self._deny, self._allow, shell=shell, decisions=self._decisions)
        if finding is not None and finding.rule == "too-complex":
            raise _Unsettled(finding)
        return finding

    def analyze(self, command: str | Sequence[str], *, shell: str = "bash") -> Finding | None:
        """Judge ``command`` with the built-in rules and this guard's extra rules
        (remembered: see ``CACHE_SIZE``); ``shell`` as :func:`analyze_command`'s."""
        key = command if isinstance(command, str) else tuple(command)
        if shell != "bash":
            shell = SHELLS.get(shell.lower(), "bash")
        try:
            if shell != "bash":
                if (len(key) if type(key) is str else sum(map(len, key))) <= _CACHED_CHARS:
                    return self._judged_windows(shell, key)
                return self._judge_windows(shell, key)
            if (len(key) if type(key) is str else sum(map(len, key))) <= _CACHED_CHARS:
                return self._judged(key)
            return self._judge(key)
        except _Unsettled as unsettled:
            return unsettled.finding

    @property
    def asks(self) -> bool:
        """Whether some rule asks: the guard then needs its approver registered."""
        return self._asks

    def decision(self, finding: Finding | None) -> Decision | None:
        """What this guard does with a verdict of :meth:`analyze` (None: nothing)."""
        if finding is None:
            return None
        return self._decisions.get(finding.rule, "block")

    def verdict(self, args: Mapping[str, object], tool: str = "exec") -> Finding | None:
        """The verdict on the arguments of an ``exec`` call of ``tool`` (its name says
        the shell: :func:`shell_of`): the first finding that blocks, else the first that
        asks; a failure of the guard is an ``internal-error``."""
        return self._verdict(commands_of(args), shell_of(tool, args))

    def _verdict(self, commands: list[object], shell: str) -> Finding | None:
        asked = None
        try:
            for command in commands:
                if isinstance(command, str) or (
                    isinstance(command, (list, tuple)) and all(type(a) is str for a in command)
                ):
                    finding = self.analyze(command, shell=shell)  # remembered
                else:  # any other shape (a dict, an argv list holding None) is refused by it
                    finding = _analyze(
                        command, self._deny, self._allow, shell=shell, decisions=self._decisions
                    )
                if finding is not None:
                    if self._decisions.get(finding.rule) != "ask":
                        return finding
                    asked = asked or finding
        except Exception as exc:  # last line of defence: a guard that fails must fail closed
            return Finding(
                "internal-error",
                type(exc).__name__,
                f"the guard failed while analyzing the command ({type(exc).__name__}: "
                f"{str(exc)[:120]!r}); a command that cannot be analyzed is not run",
            )
        return asked

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.block:
            return
        commands = commands_of(out.args)
        shell = shell_of(inp.raw_name or inp.tool_name, out.args)
        finding = self._verdict(commands, shell)
        if self._asks:  # for the approver, which judges the same arguments right after
            self._last = (commands, shell, finding)
        if finding is not None and self._decisions.get(finding.rule) != "ask":
            out.block = True
            out.block_reason = f"command-safety-guard: {finding.reason}"

    def approve(self, request: ApprovalRequest) -> Approval | None:
        """``tool.approve``: a call whose verdict asks goes to the pipeline's
        human-approval handler, the rule named ``command-safety-guard:<rule>`` (what a
        standing grant is bound to); one that blocks (arguments rewritten since
        ``tool.before``) is denied."""
        if request.tool_name not in self.tools:
            return None
        commands, last, self._last = commands_of(request.args), self._last, None
        if last is not None and last[0] == commands:
            finding = last[2]
        else:  # rewritten since tool.before: judged again, in the shell tool.before saw
            shell = last[1] if last is not None else shell_of(request.tool_name, request.args)
            finding = self._verdict(commands, shell)
        if finding is None:
            return None
        reason = f"command-safety-guard: {finding.reason}"
        if self._decisions.get(finding.rule) == "ask":
            return Approval.ask(reason, rule=f"command-safety-guard:{finding.rule}")
        return Approval.deny(reason)
