"""``builtin:command-safety-guard``: refuse destructive or exfiltrating shell commands.

The guard runs before the ``exec`` tool.  It reads ``args["command"]`` (a shell string, or
a list of argv strings run as one simple command) and blocks the call when the command
would do something on the list below.  The decision is made on *the commands the shell
would run*, never on substrings of the text:

1. :mod:`.shell` parses the text with POSIX quoting rules into simple commands, with
   their redirections, pipelines, function definitions and the scripts of every
   ``$(...)``, backtick and ``<(...)`` substitution.  Quoted text that is only an
   argument (``git commit -m "rm -rf /"``, ``grep "curl | bash" docs/``) is data and is
   never judged as a command; a substitution inside quotes (``echo "$(rm -rf /)"``) is a
   command and is.  Text that does not parse is refused (rule ``unparseable``).
2. Each simple command is *unwrapped*: leading ``VAR=value``, ``sudo``/``doas``/``env``
   (with their options and assignments, ``env -S`` split), ``command``, ``builtin``,
   ``exec``, ``nohup``, ``time``, ``nice``, ``timeout``, ``stdbuf``, ``ionice``,
   ``setsid``, ``busybox`` and ``xargs`` are peeled off; ``/usr/bin/rm``, ``./rm`` and
   ``\\rm`` are ``rm``.  Variables assigned earlier in the same command line
   (``D=/; rm -rf $D``), ``cd`` (``cd / && rm -rf *``), ``$IFS`` splitting, ``$'\\x72m'``
   strings and quote splicing (``r''m``, ``"r"m``) are followed.
3. Scripts handed to another shell are analyzed recursively: ``bash -lc '...'``,
   ``sh -c``, ``eval``, ``su -c``, ``watch``, ``ssh host '...'``, ``flock -c``,
   ``git -c alias.x='!...'``, ``find -exec``/``-execdir``/``-ok``, ``xargs`` (with the
   paths produced by an upstream ``find``/``echo``), here-documents and here-strings fed
   to a shell, ``echo ... [| base64 -d] | sh``, and ``system("...")``-style calls inside
   ``python -c``/``perl -e``/``awk`` programs.
4. Per-command rules, chosen from tables by command name, judge options the way the
   command parses them: flags in any order and spelling (``-rf``, ``-r -f``, ``-R``,
   ``--recursive``, GNU unique-prefix abbreviations such as ``--rec``), option values
   (``-m "... -n ..."`` is a message, not ``-n``) and ``--``.  Paths are normalized with
   :func:`.security_audit.resolve_path` (``~``, ``$HOME``, ``${HOME}``, ``..``, ``//``) and
   globs are judged by what they could match.

Rules (the rule id leads the block reason):

- ``fs-destruction``: recursive ``rm`` of ``/``, a top-level directory, a home directory,
  a system directory or its direct children, the working directory or its parents
  (``rm -rf .``, ``rm -rf *``, ``rm -rf ..``); broad globs (``/*``, ``~/*``, ``.*``) over
  those; ``find <such root> -delete`` or ``-exec rm -r``; ``mv`` of such a directory.
  A plain (non-recursive) ``rm *`` in the working directory is allowed: it only removes
  files the agent can see and is routine; ``rm`` of ``/etc/*``-like globs is not.  The
  contents of ``/tmp``, ``/var/tmp`` and ``/dev/shm`` may be cleared.  ``find`` without a
  name filter means "every entry below the root", so ``find /var/log -mtime +30 -delete``
  is refused (conservatively); ``-name``/``-path``/``-empty``/``-size``/``-newer``
  filters narrow it.
- ``disk``: ``dd of=/dev/<disk>``, ``mkfs*``/``mkswap`` on a device, partition editors
  (``fdisk``, ``sfdisk``, ``parted``, ``gdisk``, ``wipefs -a``, ``blkdiscard``) unless
  only listing, ``shred``/``cp``/``tee``/redirection onto a device.  ``/dev/null``,
  ``/dev/zero``, ``/dev/std*``, ``/dev/tty``, ``/dev/fd/*`` and friends are not devices.
- ``permissions``: world-writable or all-clearing modes (``777``, ``666``, ``000``,
  ``a+rwx``, ``o+w``) on critical paths, system files or credentials; any recursive
  ``chmod``/``chown``/``chgrp`` of a critical path; ``chown`` of ``/`` or auth files.
- ``system-files``: any write (redirection, ``tee``, ``cp``/``mv``/``install``/``ln``
  into, ``sed -i``, ``perl -i``, ``dd of=``, ``truncate``, ``curl -o``...) to
  ``/etc/passwd``, ``/etc/shadow``, ``/etc/gshadow``, ``/etc/group``, ``/etc/sudoers``,
  ``/etc/sudoers.d/*``.
- ``rce``: output of a downloader (``curl``, ``wget``, ``fetch``, ``aria2c``, httpie...)
  piped into a shell or an interpreter that reads its program from stdin
  (``curl ... | sudo bash``, ``wget -O- ... | python3 -``), or used as program text
  (``bash -c "$(curl ...)"``, ``sh <(curl ...)``, ``source <(curl ...)``,
  ``python -c "$(curl ...)"``, ``bash <<< "$(curl ...)"``, ``eval "$(wget ...)"``).
  Downloading to a file (``curl -o x.sh``), piping into a filter (``| jq .``,
  ``| python -m json.tool``, ``| python -c '...json...'``) and running *local* text
  (``cat script.sh | bash``) are allowed: the guard judges code it can see, and a local
  script is as visible to the reviewer as the command itself.  ``curl -o x.sh URL &&
  bash x.sh`` is allowed too (files are not tracked between commands).
- ``reverse-shell``: ``nc``/``ncat``/``netcat`` with ``-e``/``-c``/``--exec``/
  ``--sh-exec``; any redirection to ``/dev/tcp/`` or ``/dev/udp/``; ``socat`` joining a
  network address to ``EXEC:``/``SYSTEM:``; a pipeline in which a shell reads commands
  from a network tool (the ``mkfifo ... | sh -i | nc ...`` pattern); socket-plus-spawn
  one-liners in ``python -c``/``perl -e``/``php -r``/``ruby -e``/``node -e``; ``awk``
  programs using ``/inet/tcp``.
- ``fork-bomb``: a function whose body runs itself in a pipeline or in the background
  (``:(){ :|:& };:`` under any name); ``fork while fork``-style interpreter one-liners.
- ``git-no-verify``: ``--no-verify`` (or an unambiguous abbreviation) on ``commit``,
  ``push``, ``merge``, ``pull``, ``rebase``, ``am``; ``commit -n`` including combined
  flags (``-anm msg``) but not ``-n`` inside an option value; ``-c core.hooksPath=``
  pointing outside the repository (``/dev/null``, absolute paths, empty); ``HUSKY=0``.
- ``docker-prune``: ``docker system prune`` with both ``--all`` and ``--volumes``;
  ``docker volume prune --all`` (deletes named volumes too; plain ``volume prune`` only
  removes anonymous ones and is allowed); ``docker volume rm $(docker volume ls -q)``.
- ``sensitive-read``: a file operand of a reader (``cat``, ``head``, ``less``, ``base64``,
  ``xxd``, ``strings``, ``grep`` (files, not the pattern), ``sed``, ``awk``, ``jq``,
  ``cp``/``mv``/``scp``/``rsync``/``ln`` sources, ``tar``/``zip``/``gzip``/``gpg``,
  ``openssl -in``, ``dd if=``, ``source``...), an input redirection, or a ``curl``/``wget``
  upload (``-d @file``, ``-F x=@file``, ``-T``, ``--post-file``) naming a path that
  :func:`.security_audit.match_sensitive` flags -- the same list the file-tool guard
  uses.  ``source ~/.bashrc`` is allowed (loading a profile does not reveal it).
- ``extra-deny``: a constructor ``extra_deny`` regex matched a simple command.

Known limits -- what a check of the command text cannot see: symlinks and bind mounts
(``ln -s / x; rm -rf x/``... the link is allowed, the later ``rm`` judges the name);
values of variables set outside the command line or computed at run time
(``rm -rf "$DIR"``, ``$(echo rm) -rf /``); aliases and shell functions defined
elsewhere; the contents of scripts and programs on disk (``bash ./cleanup.sh``,
``make clean``, ``npm run x``); files written by one command and run by a later one;
interpreter code beyond the simple patterns listed above; positional parameters handed
to inline scripts (``find / -exec sh -c 'rm -rf "$1"' _ {} ;``); brace expansion
(``{bin,etc}`` is judged as written); and the remote side of ``ssh`` beyond the command
text.  Shells nested more than eight deep are refused as ``unparseable``.  The guard is a
seatbelt for an honest-but-fallible agent, not a sandbox: run untrusted agents in a
container as well.
"""

from __future__ import annotations

import base64
import binascii
import functools
import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

from ...errors import ConfigError
from ...pipeline.payloads import ToolBeforeInput, ToolBeforeOutput
from .security_audit import match_sensitive, resolve_path
from .shell import SUBST, FunctionDef, Redirect, Script, ShellSyntaxError, SimpleCommand, Word
from .shell import parse as parse_shell

__all__ = ["HOME", "CommandSafetyGuard", "Finding", "analyze_command"]

HOME = "/home/user"
"""Where ``~`` and ``$HOME`` point during analysis (a fixed value keeps results
deterministic; every ``/home/*`` directory is treated alike anyway)."""

_MAX_DEPTH = 8  # shells inside shells (bash -c "sh -c '...'") before refusing
_MAX_FANOUT = 16  # upstream values tried for xargs -I / find -exec substitutions


@dataclass(frozen=True, slots=True)
class Finding:
    """Why a command is refused: the rule id, the offending token and an explanation."""

    rule: str
    token: str
    message: str

    @property
    def reason(self) -> str:
        """``"<rule>: <message>"``, e.g. ``"fs-destruction: rm -rf targets '/', ..."``."""
        return f"{self.rule}: {self.message}"


# -- option parsing -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Opts:
    """One command's option grammar, GNU ``getopt_long`` style."""

    short_arg: str = ""  # short options that take a value (attached or next word)
    short_optional: str = ""  # short options whose value can only be attached (sed -i.bak)
    long: tuple[str, ...] = ()  # every long option, for unique-prefix abbreviations
    long_arg: frozenset[str] = frozenset()  # long options that take a value
    alias: Mapping[str, str] = field(default_factory=dict)  # short letter -> long name

    def canonical(self, name: str) -> str:
        if not self.long or name in self.long:
            return name
        matches = [opt for opt in self.long if opt.startswith(name)]
        return matches[0] if len(matches) == 1 else name


@dataclass(slots=True)
class _Parsed:
    flags: set[str]  # "--long" names (aliases resolved) and "-x" letters
    values: list[tuple[str, Word]]  # (flag, value) for options with values
    operands: list[Word]
    options: list[Word]  # option words as written, for messages

    def value(self, *flags: str) -> Word | None:
        for flag, word in self.values:
            if flag in flags:
                return word
        return None

    def has(self, *flags: str) -> bool:
        return not self.flags.isdisjoint(flags)


def _derived(text: str) -> Word:
    """A word cut out of another (an option value): ``~`` still expands after ``=``."""
    return Word(text, tilde=text.startswith("~"), glob=_GLOB_CHARS.search(text) is not None)


def _parse_opts(args: Sequence[Word], spec: _Opts, *, stop_at_operand: bool = False) -> _Parsed:
    flags: set[str] = set()
    values: list[tuple[str, Word]] = []
    operands: list[Word] = []
    options: list[Word] = []
    i, n = 0, len(args)
    while i < n:
        word = args[i]
        t = word.text
        if t == "--":
            operands.extend(args[i + 1 :])
            break
        if t.startswith("--"):
            options.append(word)
            name, eq, value = t[2:].partition("=")
            flag = "--" + spec.canonical(name)
            flags.add(flag)
            if eq:
                values.append((flag, _derived(value)))
            elif flag[2:] in spec.long_arg and i + 1 < n:
                i += 1
                values.append((flag, args[i]))
        elif len(t) > 1 and t[0] == "-":
            options.append(word)
            for k in range(1, len(t)):
                ch = t[k]
                flag = "--" + spec.alias[ch] if ch in spec.alias else "-" + ch
                flags.add(flag)
                if ch in spec.short_arg:
                    if k + 1 < len(t):
                        values.append((flag, _derived(t[k + 1 :])))
                    elif i + 1 < n:
                        i += 1
                        values.append((flag, args[i]))
                    break
                if ch in spec.short_optional:
                    values.append((flag, _derived(t[k + 1 :])))
                    break
        else:
            operands.append(word)
            if stop_at_operand:
                operands.extend(args[i + 1 :])
                break
        i += 1
    return _Parsed(flags, values, operands, options)


def _set(words: str) -> frozenset[str]:
    """A frozenset from space-separated words (keeps long tables readable)."""
    return frozenset(words.split())


def _opts(
    short_arg: str = "",
    long: str = "",
    long_arg: str = "",
    alias: Mapping[str, str] | None = None,
    short_optional: str = "",
) -> _Opts:
    """Compact constructor: long option names are space-separated strings."""
    takes = frozenset(long_arg.split())
    return _Opts(short_arg, short_optional, tuple(long.split()) + tuple(takes), takes, alias or {})


# -- command names and wrappers -------------------------------------------------------------

_GLOB_CHARS = re.compile(r"[*?\[]")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
_VERSIONED = re.compile(r"(python|pypy|perl|ruby|node|php|lua|bash|zsh|ksh)[\d.]*[a-z]?$")
_NAME_ALIASES = {
    "ncat": "nc",
    "netcat": "nc",
    "pypy": "python",
    "nodejs": "node",
    "gtimeout": "timeout",
    "gstdbuf": "stdbuf",
    "gtime": "time",
    "egrep": "grep",
    "fgrep": "grep",
    "zgrep": "grep",
    "mke2fs": "mkfs",
    "mkdosfs": "mkfs",
    "mkntfs": "mkfs",
    "mkswap": "mkfs",
    "newfs": "mkfs",
    "batcat": "bat",
    "gawk": "awk",
    "mawk": "awk",
    "nawk": "awk",
    "gsed": "sed",
    "podman": "docker",
    "nerdctl": "docker",
    "7za": "7z",
    "7zz": "7z",
    "pigz": "gzip",
    "proxychains4": "proxychains",
    "runuser": "su",
    "[": "test",
}


@functools.lru_cache(maxsize=4096)
def _canon(text: str) -> str:
    """The command a word names: basename, lower-cased, version suffix and aliases folded."""
    name = text.rsplit("/", 1)[-1].lower()
    if name.endswith(".exe"):
        name = name[:-4]
    if name in _NAME_ALIASES:
        return _NAME_ALIASES[name]
    if name.startswith("mkfs."):
        return "mkfs"
    if name.startswith(("nc.", "netcat.")):
        return "nc"
    m = _VERSIONED.match(name)
    if m is not None:
        base = m.group(1)
        return "python" if base == "pypy" else base
    return name


@dataclass(frozen=True, slots=True)
class _Wrapper:
    """A command that runs another command: its options, then the command."""

    opts: _Opts = field(default_factory=_Opts)
    leading: int = 0  # operands before the command (timeout DURATION, chroot DIR)
    assignments: bool = False  # NAME=value words may precede the command (env, sudo)
    no_command: frozenset[str] = frozenset()  # flags after which nothing is run


_WRAPPERS: dict[str, _Wrapper] = {
    "sudo": _Wrapper(  # "sudo -s"/"sudo -i" alone: see _SHELL_FLAGS
        _opts(
            "ugphCrtUDTR",
            "preserve-env login shell list validate edit non-interactive background stdin "
            "set-home reset-timestamp remove-timestamp version help askpass",
            "user group host prompt close-from role type other-user chdir command-timeout chroot",
        ),
        assignments=True,
        no_command=frozenset(
            {"-l", "--list", "-v", "--validate", "-V", "--version", "-K", "-e", "--edit"}
        ),
    ),
    "doas": _Wrapper(_opts("uC")),
    "pkexec": _Wrapper(_opts(long="disable-internal-agent help version", long_arg="user")),
    "env": _Wrapper(
        _opts(
            "uCSP",
            "ignore-environment null debug help version",
            "unset chdir split-string",
            {"S": "split-string"},
        ),
        assignments=True,
    ),
    "command": _Wrapper(no_command=frozenset({"-v", "-V"})),
    "builtin": _Wrapper(),
    "exec": _Wrapper(_opts("a")),
    "nohup": _Wrapper(),
    "time": _Wrapper(_opts("of", "append verbose portability quiet help version", "output format")),
    "nice": _Wrapper(_opts("n", "help version", "adjustment")),
    "timeout": _Wrapper(
        _opts("sk", "preserve-status foreground verbose help version", "signal kill-after"),
        leading=1,
    ),
    "stdbuf": _Wrapper(_opts("ioe", "help version", "input output error")),
    "ionice": _Wrapper(
        _opts("cnpPu", "ignore help version", "class classdata pid pgid uid"),
        no_command=frozenset({"-p", "-P", "-u", "--pid", "--pgid", "--uid"}),
    ),
    "chroot": _Wrapper(_opts(long="skip-chdir help version", long_arg="userspec groups"), 1),
    "setsid": _Wrapper(),
    "busybox": _Wrapper(),
    "toybox": _Wrapper(),
    "chronic": _Wrapper(),
    "unbuffer": _Wrapper(),
    "torsocks": _Wrapper(),
    "caffeinate": _Wrapper(_opts("tw")),
    "proxychains": _Wrapper(_opts("f")),
}

_SHELL_FLAGS = {"sudo": frozenset({"-s", "--shell", "-i", "--login"})}
"""Wrapper flags that start a shell when no command follows."""

_XARGS = _opts(
    "IaLnPsEd",
    "null no-run-if-empty verbose interactive open-tty exit show-limits help version "
    "max-lines replace eof",
    "arg-file delimiter max-args max-procs max-chars process-slot-var",
    {"I": "replace", "i": "replace"},
    short_optional="ile",
)


@dataclass(slots=True)
class _Unwrapped:
    name: str
    args: list[Word]
    env: dict[str, str]
    layers: list[list[Word]]  # the command as seen at each wrapper level
    xargs_replace: str | None = None
    via_xargs: bool = False


def _take_assignments(words: list[Word], env: dict[str, str]) -> list[Word]:
    while words and _ASSIGNMENT.match(words[0].text):
        name, _, value = words[0].text.partition("=")
        env[name.rstrip("+")] = value
        words = words[1:]
    return words


def _unwrap(words: list[Word]) -> _Unwrapped | None:
    """Peel wrappers off ``words``; None when nothing is executed (``command -v rm``)."""
    env: dict[str, str] = {}
    layers = [words]
    found = _Unwrapped("", [], env, layers)
    for _ in range(16):
        name = _canon(words[0].text)
        rest: list[Word]
        if name == "xargs":
            parsed = _parse_opts(words[1:], _XARGS, stop_at_operand=True)
            if parsed.has("--replace"):
                value = parsed.value("--replace")
                found.xargs_replace = value.text if value is not None and value.text else "{}"
            found.via_xargs = True
            rest = parsed.operands or [Word("echo")]
        else:
            wrapper = _WRAPPERS.get(name)
            if wrapper is None:
                break
            parsed = _parse_opts(words[1:], wrapper.opts, stop_at_operand=True)
            if parsed.has(*wrapper.no_command):
                return None
            rest = parsed.operands[wrapper.leading :]
            if rest and rest[0].text == "-":  # "env -": an empty environment
                rest = rest[1:]
            if wrapper.assignments:
                rest = _take_assignments(rest, env)
            split = parsed.value("--split-string")
            if split is not None:
                rest = _split_words(split.text) + rest
            if not rest and parsed.has(*_SHELL_FLAGS.get(name, ())):
                rest = [Word("sh")]
        if not rest:
            break
        words = rest
        layers.append(words)
    found.name = _canon(words[0].text)
    found.args = list(words[1:])
    return found


def _split_words(text: str) -> list[Word]:
    """Words of a string the way ``env -S`` splits it (shell quoting rules)."""
    try:
        script = parse_shell(text)
    except ShellSyntaxError:
        return [Word(part) for part in text.split()]
    return [w for cmd in script.commands[:1] for w in (*cmd.assignments, *cmd.words)]


# -- paths ------------------------------------------------------------------------------------

_SYSTEM_DIRS = _set(
    "bin boot dev etc lib lib32 lib64 libx32 opt proc root sbin srv sys usr var snap nix "
    "system library applications private cores"
)
_HOME_ROOTS = frozenset({"home", "users"})
_TEMP_DIRS = frozenset({"/tmp", "/var/tmp", "/dev/shm", "/private/tmp"})
_SAFE_DEVICES = _set(
    "/dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/stdin /dev/stdout "
    "/dev/stderr /dev/tty /dev/console /dev/ptmx"
)
_SAFE_DEVICE_DIRS = ("/dev/fd/", "/dev/pts/", "/dev/shm/", "/dev/mqueue/")
_NET_DEVICES = ("/dev/tcp/", "/dev/udp/")
_SYSTEM_FILES = re.compile(
    r"^(?:/private)?/etc/(?:passwd|shadow|gshadow|group|sudoers|master\.passwd)-?$"
    r"|^(?:/private)?/etc/sudoers\.d(?:/|$)"
)


def _critical(path: str) -> str | None:
    """Describe ``path`` if deleting it (recursively) would wreck the machine or the user."""
    if path == "/":
        return "the filesystem root"
    if path == HOME:
        return "the home directory"
    if path.startswith("/"):
        parts = path[1:].lower().split("/")
        if len(parts) == 1:
            top = parts[0]
            if top in _HOME_ROOTS:
                return "the directory holding all home directories"
            if top == "root":
                return "root's home directory"
            return "a system directory" if top in _SYSTEM_DIRS else "a top-level directory"
        if len(parts) == 2:
            if parts[0] in _HOME_ROOTS:
                return "a home directory"
            if parts[0] in _SYSTEM_DIRS:
                return "a system directory"
        return None
    if path == ".":
        return "the working directory"
    if all(part == ".." for part in path.split("/")):
        return "a parent of the working directory"
    return None


def _cwd_like(path: str) -> bool:
    return path == "." or all(part == ".." for part in path.split("/"))


def _glob_risk(path: str, *, recursive: bool, cwd_counts: bool) -> str | None:
    """What a glob in ``path`` could sweep up, if that is dangerous."""
    parts = path.split("/")
    k = next((k for k, part in enumerate(parts) if _GLOB_CHARS.search(part)), -1)
    if k < 0:
        return None
    part = parts[k]
    prefix = "/".join(parts[:k]) or ("/" if path.startswith("/") else ".")
    if not part.strip("*?.") and ("*" in part or "?" in part):  # "*", ".*", "?*"...
        if _cwd_like(prefix):
            if recursive and cwd_counts:
                return f"everything in {_critical(prefix)}"
        elif prefix not in _TEMP_DIRS and (why := _critical(prefix)) is not None:
            return f"everything in {why}"
    if recursive:
        why = _critical(posixpath.join(prefix, "x"))
        if why is not None and not _cwd_like(prefix):
            return f"a pattern that matches {why}"
    return None


def _is_device(path: str) -> bool:
    return (
        path.startswith("/dev/")
        and len(path) > 5
        and path not in _SAFE_DEVICES
        and not path.startswith(_SAFE_DEVICE_DIRS)
        and not path.startswith(_NET_DEVICES)
    )


def _display(path: str) -> str:
    if path == HOME or path.startswith(HOME + "/"):
        return "~" + path[len(HOME) :]
    return path


def _show(text: str) -> str:
    return text.replace(SUBST, "$(...)")


def _snippet(words: Sequence[Word], limit: int = 80) -> str:
    text = " ".join(_show(w.text) for w in words)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- invocations --------------------------------------------------------------------------


@dataclass(slots=True)
class _Invocation:
    """One command as it will run: canonical name, arguments, environment, redirects."""

    name: str
    args: list[Word]
    env: dict[str, str] = field(default_factory=dict)
    redirects: tuple[Redirect, ...] = ()
    layers: list[list[Word]] = field(default_factory=list)

    @property
    def shown(self) -> str:
        """The command as spelled (``mkfs.ext4``, ``python3``), for messages."""
        return self.layers[-1][0].text.rsplit("/", 1)[-1] if self.layers else self.name

    def texts(self) -> list[str]:
        """Normalized text of every wrapper level, for ``extra_deny``/``allow`` regexes."""
        out = []
        for layer in self.layers or [[Word(self.name), *self.args]]:
            head = layer[0].text.rsplit("/", 1)[-1]
            out.append(" ".join([head, *(_show(w.text) for w in layer[1:])]))
        return out

    def snippet(self) -> str:
        return _snippet([Word(self.name), *self.args])


Rule = Callable[["_Invocation", "_Run"], "Finding | None"]
Extract = Callable[["_Invocation"], list[Word]]

_VAR_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


class _Run:
    """State of one analysis: variables, working directory, recursion depth."""

    __slots__ = ("allow", "cwd", "deny", "depth", "vars")

    def __init__(self, deny: Sequence[re.Pattern[str]], allow: Sequence[re.Pattern[str]]) -> None:
        self.deny = deny
        self.allow = allow
        self.depth = 0
        self.vars: dict[str, str] = {}
        self.cwd: str | None = None

    # -- entry points -----------------------------------------------------------------------

    def source(self, text: str, origin: str, *, lenient: bool = False) -> Finding | None:
        try:
            script = parse_shell(text)
        except ShellSyntaxError as exc:
            if lenient:
                return None
            fragment = text[exc.offset : exc.offset + 24] or text[-24:]
            return Finding(
                "unparseable",
                fragment,
                f"{origin} cannot be parsed ({exc.detail} at offset {exc.offset}, near "
                f"{fragment!r}); a command that cannot be analyzed is not run",
            )
        return self.script(script)

    def nested(self, text: str, origin: str, *, lenient: bool = False) -> Finding | None:
        """Analyze a script handed to another shell (``bash -c``, ``eval``, ...)."""
        if self.depth >= _MAX_DEPTH:
            return Finding(
                "unparseable",
                _show(text[:40]),
                f"{origin} nests shells more than {_MAX_DEPTH} levels deep",
            )
        self.depth += 1
        try:
            return self.source(text, origin, lenient=lenient)
        finally:
            self.depth -= 1

    def argv(self, words: Sequence[Word], origin: str) -> Finding | None:
        """Analyze an argument vector run without a shell (``find -exec``, ``xargs``)."""
        if not words:
            return None
        if self.depth >= _MAX_DEPTH:
            return Finding("unparseable", _snippet(words), f"{origin} nests too deeply")
        self.depth += 1
        try:
            return self.script(Script((SimpleCommand(tuple(words)),)))
        finally:
            self.depth -= 1

    # -- traversal ----------------------------------------------------------------------------

    def script(self, script: Script) -> Finding | None:
        feeds = _feeds(script)
        invs: list[_Invocation | None] = []
        for index, cmd in enumerate(script.commands):
            found = self._substitutions(cmd)
            if found is not None:
                return found
            upstream = [invs[i] for i in feeds.get(index, ())]
            prepared = self._prepare(cmd, upstream)
            invs.append(prepared[0] if prepared else None)
            if not prepared:
                found = _check_redirects(cmd.redirects, self)
            for inv in prepared:
                found = found or self.invocation(inv)
            if found is not None:
                return found
        for pipeline in script.pipelines:
            stages = [[invs[i] for i in stage] for stage in pipeline.stages]
            found = _pipeline_rules(stages, self)
            if found is not None:
                return found
        for fn in script.functions:
            found = _fork_bomb(fn) or self.script(fn.body)
            if found is not None:
                return found
        return None

    def _substitutions(self, cmd: SimpleCommand) -> Finding | None:
        words: list[Word] = [*cmd.words, *cmd.assignments]
        for r in cmd.redirects:
            words.append(r.target)
            if r.heredoc is not None:
                words.append(r.heredoc)
        for word in words:
            for sub in word.subs:
                found = self.script(sub)
                if found is not None:
                    return found
        return None

    def _prepare(
        self, cmd: SimpleCommand, upstream: Sequence[_Invocation | None]
    ) -> list[_Invocation]:
        for assignment in cmd.assignments:
            self.assign(assignment.text, persistent=not cmd.words)
        if not cmd.words:
            return []
        words = self._expand(cmd.words)
        if not words:
            return []
        unwrapped = _unwrap(words)
        if unwrapped is None:
            return []
        env = dict(_assignment_pairs(cmd.assignments))
        env.update(unwrapped.env)
        inv = _Invocation(unwrapped.name, unwrapped.args, env, cmd.redirects, unwrapped.layers)
        if not unwrapped.via_xargs:
            return [inv]
        values = _emitted(upstream, self)
        if not values:
            return [inv]
        marker = unwrapped.xargs_replace
        if marker is None:
            return [replace(inv, args=[*inv.args, *values])]
        return [
            replace(inv, args=[_substitute(arg, marker, value) for arg in inv.args])
            for value in values[:_MAX_FANOUT]
        ]

    def invocation(self, inv: _Invocation) -> Finding | None:
        if self.allow and _first_match(self.allow, inv) is not None:
            return None
        if self.deny:
            pattern = _first_match(self.deny, inv)
            if pattern is not None:
                return Finding(
                    "extra-deny",
                    inv.snippet(),
                    f"{inv.snippet()!r} matches extra_deny pattern {pattern!r}",
                )
        found = _check_redirects(inv.redirects, self)
        if found is not None:
            return found
        for rule in _RULES.get(inv.name, ()):
            found = rule(inv, self)
            if found is not None:
                return found
        for rule in _GENERIC_RULES:
            found = rule(inv, self)
            if found is not None:
                return found
        return None

    # -- variables and paths --------------------------------------------------------------------

    def assign(self, text: str, *, persistent: bool) -> None:
        name, _, value = text.partition("=")
        name = name.rstrip("+")
        if not persistent or "[" in name:
            return
        value = self.expand_text(value)
        if value.startswith("~"):
            value = "$HOME" + value[1:]
        if SUBST in value or _VAR_REF.search(value.replace("$HOME", "").replace("${HOME}", "")):
            self.vars.pop(name, None)
        else:
            self.vars[name] = value

    def expand_text(self, text: str) -> str:
        if "$" not in text or not self.vars:
            return text

        def sub(m: re.Match[str]) -> str:
            name = m.group(1) or m.group(2)
            return self.vars.get(name, m.group(0))

        return _VAR_REF.sub(sub, text)

    def _expand(self, words: Sequence[Word]) -> list[Word]:
        out: list[Word] = []
        for word in words:
            text = self.expand_text(word.text)
            if text == word.text:
                out.append(word)
            elif word.quoted:
                out.append(replace(word, text=text))
            else:  # unquoted expansion: the shell splits it into words
                out.extend(replace(word, text=part) for part in text.split())
        return out

    def path(self, word: Word) -> str:
        text = self.expand_text(word.text)
        if text.startswith("~") and not word.tilde:
            text = "./" + text  # a quoted '~' is a file literally named ~
        path = resolve_path(text, home=HOME)
        if self.cwd is not None and not path.startswith("/"):
            path = posixpath.normpath(posixpath.join(self.cwd, path))
        return path

    def doomed(
        self, word: Word, *, recursive: bool, cwd_counts: bool = True
    ) -> tuple[str, str] | None:
        """(path, why) when removing ``word`` would destroy something critical."""
        path = self.path(word)
        if word.glob:
            why = _glob_risk(path, recursive=recursive, cwd_counts=cwd_counts)
            if why is not None:
                return _display(path), why
        if not recursive or (not cwd_counts and _cwd_like(path)):
            return None
        why = _critical(path)
        return None if why is None else (_display(path), why)


def _assignment_pairs(words: Iterable[Word]) -> Iterable[tuple[str, str]]:
    for word in words:
        name, _, value = word.text.partition("=")
        yield name.rstrip("+"), value


def _first_match(patterns: Sequence[re.Pattern[str]], inv: _Invocation) -> str | None:
    texts = inv.texts()
    for pattern in patterns:
        if any(pattern.search(text) for text in texts):
            return pattern.pattern
    return None


def _feeds(script: Script) -> dict[int, tuple[int, ...]]:
    """Command index -> indices of the commands whose stdout feeds its stdin."""
    feeds: dict[int, tuple[int, ...]] = {}
    for pipeline in script.pipelines:
        for previous, stage in zip(pipeline.stages, pipeline.stages[1:], strict=False):
            for index in stage:
                feeds[index] = previous
    return feeds


def _substitute(word: Word, marker: str, value: Word) -> Word:
    if word.text == marker:
        return value
    if marker not in word.text:
        return word
    return replace(word, text=word.text.replace(marker, value.text), glob=word.glob or value.glob)


# -- findings helpers ---------------------------------------------------------------------------


def _destruction(verb: str, token: Word, hit: tuple[str, str]) -> Finding:
    path, why = hit
    return Finding(
        "fs-destruction",
        token.text,
        f"{verb} targets {path!r}, {why} (token {_show(token.text)!r})",
    )


def _verb(inv: _Invocation, parsed: _Parsed) -> str:
    return " ".join([inv.shown, *(w.text for w in parsed.options)])


def _judge_write(run: _Run, word: Word, what: str) -> Finding | None:
    path = run.path(word)
    token = _show(word.text)
    if path.startswith(_NET_DEVICES):
        return Finding("reverse-shell", word.text, f"{what} connects to {path!r} (token {token!r})")
    if _is_device(path):
        return Finding("disk", word.text, f"{what} writes to the device {path!r} (token {token!r})")
    if _SYSTEM_FILES.match(path.lower()):
        return Finding(
            "system-files",
            word.text,
            f"{what} writes the system file {path!r} (token {token!r})",
        )
    return None


def _judge_read(
    run: _Run, word: Word, what: str, exempt: frozenset[str] = frozenset()
) -> Finding | None:
    if not word.text or SUBST in word.text:
        return None
    path = run.path(word)
    found = match_sensitive(path, home=HOME)
    if found is None and word.glob:  # ".env*" matches ".env": try the shortest match
        found = match_sensitive(_GLOB_PARTS.sub("", path), home=HOME)
    if found is None or found.rule in exempt:
        return None
    return Finding(
        "sensitive-read",
        word.text,
        f"{what} reads {_display(path)!r}: {found.rule} ({found.description}; "
        f"token {_show(word.text)!r})",
    )


_GLOB_PARTS = re.compile(r"[*?]|\[[^\]/]*\]")

_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_READ_OPS = frozenset({"<", "<>"})


def _check_redirects(redirects: Sequence[Redirect], run: _Run) -> Finding | None:
    for r in redirects:
        if r.op in ("<<", "<<-", "<<<"):
            continue
        target = r.target.text
        if r.op in (">&", "<&") and (target == "-" or target.rstrip("-").isdigit()):
            continue  # fd duplication, not a file
        what = f"redirection {r.op!r}"
        if r.op in _WRITE_OPS or run.path(r.target).startswith(_NET_DEVICES):
            found = _judge_write(run, r.target, what)
            if found is not None:
                return found
        if r.op in _READ_OPS:
            found = _judge_read(run, r.target, what)
            if found is not None:
                return found
    return None


# -- fs-destruction -----------------------------------------------------------------------------

_RM = _opts(
    long="force interactive one-file-system no-preserve-root preserve-root recursive dir "
    "verbose help version",
    alias={"r": "recursive", "R": "recursive", "f": "force", "d": "dir", "v": "verbose"},
)


def _rule_rm(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _RM)
    recursive = parsed.has("--recursive")
    for word in parsed.operands:
        hit = run.doomed(word, recursive=recursive)
        if hit is not None:
            return _destruction(_verb(inv, parsed), word, hit)
    return None


_MV = _opts(
    "tS",
    "force interactive no-clobber no-target-directory update verbose strip-trailing-slashes "
    "backup context help version exchange no-copy",
    "target-directory suffix",
    {"t": "target-directory", "S": "suffix"},
)


def _rule_mv(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _MV)
    sources = parsed.operands if parsed.has("--target-directory") else parsed.operands[:-1]
    for word in sources:
        hit = run.doomed(word, recursive=True, cwd_counts=False)
        if hit is not None:
            path, why = hit
            return Finding(
                "fs-destruction",
                word.text,
                f"{_verb(inv, parsed)} moves {path!r}, {why} (token {_show(word.text)!r})",
            )
    return None


_FIND_LEADING_ARG = frozenset({"-D"})
_FIND_NAME_TESTS = frozenset({"-name", "-iname", "-lname", "-ilname"})
_FIND_PATH_TESTS = frozenset({"-path", "-ipath", "-wholename", "-iwholename"})
_FIND_NARROWING = _set("-regex -iregex -empty -newer -anewer -cnewer -samefile -inum -links -size")
_FIND_ONE_ARG = _set(
    "-name -iname -lname -ilname -path -ipath -wholename -iwholename -regex -iregex -type "
    "-xtype -mtime -mmin -atime -amin -ctime -cmin -used -newer -anewer -cnewer -samefile "
    "-inum -links -size -user -group -uid -gid -perm -maxdepth -mindepth -fstype -context "
    "-regextype -printf -fprint -fprint0 -fls -files0-from"
)
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_NEWER_XY = re.compile(r"-newer[aBcmt][aBcmt]$")


@dataclass(slots=True)
class _FindPlan:
    candidates: list[Word]  # the roots, or root/<-name pattern>; empty: filtered, unknown
    delete: bool = False
    execs: list[tuple[str, list[Word]]] = field(default_factory=list)
    unfiltered: bool = False  # candidates are the bare roots: every entry below them matches

    def entries(self) -> list[Word]:
        """What ``{}`` stands for: ``root/*`` for an unfiltered walk (every entry)."""
        if not self.unfiltered:
            return self.candidates[:_MAX_FANOUT]
        return [
            Word(root.text.rstrip("/") + "/*", tilde=root.tilde, glob=True)
            for root in self.candidates[:_MAX_FANOUT]
        ]


def _find_plan(args: Sequence[Word]) -> _FindPlan:
    i, n = 0, len(args)
    while i < n and (args[i].text in ("-H", "-L", "-P") or args[i].text.startswith("-O")):
        i += 1
    while i < n and args[i].text in _FIND_LEADING_ARG:
        i += 2
    roots: list[Word] = []
    while i < n and not args[i].text.startswith("-") and args[i].text not in ("(", "!", ","):
        roots.append(args[i])
        i += 1
    roots = roots or [Word(".")]
    names: list[Word] = []
    paths: list[Word] = []
    narrowed = False
    plan = _FindPlan([])
    while i < n:
        t = args[i].text
        if t in _FIND_EXEC:
            j = i + 1
            while j < n and args[j].text not in (";", "+"):
                j += 1
            plan.execs.append((t, list(args[i + 1 : j])))
            i = j + 1
            continue
        if t == "-delete":
            plan.delete = True
        elif t in _FIND_NAME_TESTS and i + 1 < n:
            names.append(args[i + 1])
        elif t in _FIND_PATH_TESTS and i + 1 < n:
            paths.append(args[i + 1])
        elif t in _FIND_NARROWING or _NEWER_XY.match(t):
            narrowed = True
        i += 3 if t == "-fprintf" else 2 if (t in _FIND_ONE_ARG or _NEWER_XY.match(t)) else 1
    if names or paths:
        for root in roots:
            for name in names:
                text = root.text.rstrip("/") + "/" + name.text
                plan.candidates.append(
                    Word(text, tilde=root.tilde, glob=_GLOB_CHARS.search(name.text) is not None)
                )
        plan.candidates += [_derived(p.text) for p in paths]
    elif not narrowed:
        plan.candidates = roots
        plan.unfiltered = True
    return plan


def _rule_find(inv: _Invocation, run: _Run) -> Finding | None:
    plan = _find_plan(inv.args)
    if plan.delete:
        for root, entry in zip(plan.candidates, plan.entries(), strict=False):
            hit = run.doomed(entry, recursive=True)
            if hit is not None:
                return _destruction("find -delete", root, hit)
    for action, argv in plan.execs:
        values = plan.entries() or [Word("{}")]
        for value in values:
            found = run.argv([_substitute(w, "{}", value) for w in argv], f"find {action}")
            if found is not None:
                return found
    return None


# -- disk ------------------------------------------------------------------------------------

_READ_ONLY_FLAGS: dict[str, frozenset[str]] = {
    "fdisk": frozenset({"-l", "--list", "-s", "--getsz"}),
    "sfdisk": _set(
        "-l --list -d --dump -s --show-size -J --json -V --verify -g --show-geometry -F "
        "--list-free -r --reorder"
    ),
    "gdisk": frozenset({"-l"}),
    "sgdisk": frozenset({"-p", "--print", "-i", "--info", "-v", "--verify"}),
    "cfdisk": frozenset(),
    "blkdiscard": frozenset(),
}
_PARTED_WRITES = _set(
    "mklabel mktable mkpart mkpartfs rm resizepart resize mkfs rescue move cp set toggle name"
)
_WIPEFS_WRITES = re.compile(r"^(?:--all|--offset(?:=.*)?|-[a-zA-Z]*[ao][a-zA-Z0-9]*)$")


def _device_operands(inv: _Invocation, run: _Run) -> list[tuple[Word, str]]:
    return [(w, path) for w in inv.args if _is_device(path := run.path(w))]


def _rule_mkfs(inv: _Invocation, run: _Run) -> Finding | None:
    for word, path in _device_operands(inv, run):
        return Finding(
            "disk", word.text, f"{inv.shown} formats the device {path!r} (token {word.text!r})"
        )
    return None


def _rule_partitioner(inv: _Invocation, run: _Run) -> Finding | None:
    devices = _device_operands(inv, run)
    if not devices:
        return None
    texts = {w.text for w in inv.args}
    if inv.name == "parted":
        if texts.isdisjoint(_PARTED_WRITES):
            return None
    elif inv.name == "wipefs":
        if not any(_WIPEFS_WRITES.match(t) for t in texts):
            return None
    elif not texts.isdisjoint(_READ_ONLY_FLAGS.get(inv.name, frozenset())):
        return None
    word, path = devices[0]
    return Finding(
        "disk",
        word.text,
        f"{inv.shown} rewrites the partition table or signatures of {path!r} (token {word.text!r})",
    )


# -- permissions ----------------------------------------------------------------------------

_OCTAL_MODE = re.compile(r"[0-7]{1,4}")
_SYMBOLIC_CLAUSE = re.compile(r"([ugoa]*)((?:[-+=][rwxXstugo]*)+)")
_SYMBOLIC_DASH = re.compile(r"-[rwxXst]+")
_CHMOD = _opts(
    long="recursive changes silent quiet verbose preserve-root no-preserve-root help version "
    "dereference no-dereference",
    long_arg="reference",
    alias={"R": "recursive"},
)
_CHOWN = _opts(
    long="recursive changes silent quiet verbose preserve-root no-preserve-root help version "
    "dereference no-dereference",
    long_arg="reference from",
    alias={"R": "recursive"},
)


def _loose_mode(mode: str) -> str | None:
    """Describe a mode that opens files to everyone or strips every permission."""
    if _OCTAL_MODE.fullmatch(mode):
        value = int(mode, 8)
        if value & 0o002:
            return "world-writable"
        return "without any permission" if value & 0o777 == 0 else None
    for clause in mode.split(","):
        m = _SYMBOLIC_CLAUSE.fullmatch(clause)
        if m is None:
            continue
        who = m.group(1)
        for op, perms in re.findall(r"([-+=])([rwxXstugo]*)", m.group(2)):
            if op in "+=" and "w" in perms and ("o" in who or "a" in who):
                return "world-writable"
            everyone = not who or "a" in who or set("ugo") <= set(who)
            if everyone and ((op == "=" and not perms) or (op == "-" and set("rwx") <= set(perms))):
                return "without any permission"
    return None


def _sticky(mode: str | None) -> bool:
    if mode is None:
        return False
    if _OCTAL_MODE.fullmatch(mode):
        return len(mode) == 4 and int(mode[0], 8) & 1 == 1
    return "t" in mode


def _rule_chmod(inv: _Invocation, run: _Run) -> Finding | None:
    mode: str | None = None
    rest: list[Word] = []
    for word in inv.args:  # "-w" and "-rwx" are modes, not options
        if mode is None and _SYMBOLIC_DASH.fullmatch(word.text):
            mode = word.text
        else:
            rest.append(word)
    parsed = _parse_opts(rest, _CHMOD)
    targets = parsed.operands
    if mode is None and not parsed.has("--reference") and targets:
        mode, targets = targets[0].text, targets[1:]
    recursive = parsed.has("--recursive")
    loose = _loose_mode(mode) if mode is not None else None
    if not (recursive or loose):
        return None
    verb = " ".join(filter(None, [_verb(inv, parsed), mode]))
    for word in targets:
        path = run.path(word)
        if not recursive and path in _TEMP_DIRS and _sticky(mode):
            continue  # /tmp is meant to be 1777
        hit = run.doomed(word, recursive=True, cwd_counts=False)
        if hit is not None:
            what = f"makes it {loose}" if loose else "rewrites permissions recursively"
            return Finding(
                "permissions",
                word.text,
                f"{verb} on {hit[0]!r}, {hit[1]}: {what} (token {_show(word.text)!r})",
            )
        if loose and (
            _SYSTEM_FILES.match(path.lower()) or match_sensitive(path, home=HOME) is not None
        ):
            return Finding(
                "permissions",
                word.text,
                f"{verb} makes {_display(path)!r} {loose} (token {_show(word.text)!r})",
            )
    return None


def _rule_chown(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _CHOWN)
    targets = parsed.operands if parsed.has("--reference") else parsed.operands[1:]
    recursive = parsed.has("--recursive")
    for word in targets:
        path = run.path(word)
        hit = run.doomed(word, recursive=True, cwd_counts=False)
        if hit is not None and (recursive or path == "/"):
            return Finding(
                "permissions",
                word.text,
                f"{_verb(inv, parsed)} changes the owner of {hit[0]!r}, {hit[1]} "
                f"(token {_show(word.text)!r})",
            )
        if _SYSTEM_FILES.match(path.lower()):
            return Finding(
                "permissions",
                word.text,
                f"{_verb(inv, parsed)} changes the owner of the system file {path!r}",
            )
    return None


# -- writers and readers (tables) ---------------------------------------------------------------


def _operands(spec: _Opts) -> Extract:
    return lambda inv: _parse_opts(inv.args, spec).operands


def _copy_targets(spec: _Opts) -> Extract:
    """Destination of cp/mv/install/ln/rsync/scp, plus destination/<source name>."""

    def extract(inv: _Invocation) -> list[Word]:
        parsed = _parse_opts(inv.args, spec)
        target = parsed.value("--target-directory")
        sources = parsed.operands if target is not None else parsed.operands[:-1]
        if target is None:
            if len(parsed.operands) < 2:
                return []
            target = parsed.operands[-1]
        joined = [
            replace(target, text=target.text.rstrip("/") + "/" + posixpath.basename(s.text))
            for s in sources
            if posixpath.basename(s.text)
        ]
        return [target, *joined]

    return extract


def _copy_sources(spec: _Opts) -> Extract:
    def extract(inv: _Invocation) -> list[Word]:
        parsed = _parse_opts(inv.args, spec)
        if parsed.value("--target-directory") is not None:
            return parsed.operands
        return parsed.operands[:-1]

    return extract


def _option_values(spec: _Opts, *flags: str) -> Extract:
    def extract(inv: _Invocation) -> list[Word]:
        return [w for flag, w in _parse_opts(inv.args, spec).values if flag in flags]

    return extract


def _keyed(key: str) -> Extract:
    """``dd``-style ``key=value`` operands."""
    prefix = key + "="
    return lambda inv: [
        _derived(w.text[len(prefix) :]) for w in inv.args if w.text.startswith(prefix)
    ]


def _in_place(spec: _Opts, script_flags: tuple[str, ...], inline_flag: str) -> Extract:
    """Files edited by ``sed -i``/``perl -i``: operands after the script."""

    def extract(inv: _Invocation) -> list[Word]:
        parsed = _parse_opts(inv.args, spec)
        if not parsed.has(inline_flag, "--in-place"):
            return []
        return parsed.operands if parsed.has(*script_flags) else parsed.operands[1:]

    return extract


def _pattern_first(spec: _Opts, given: tuple[str, ...], files: tuple[str, ...]) -> Extract:
    """Readers whose first operand is a pattern/program unless one came by option."""

    def extract(inv: _Invocation) -> list[Word]:
        parsed = _parse_opts(inv.args, spec)
        read = [w for flag, w in parsed.values if flag in files]
        return read + (parsed.operands if parsed.has(*given) else parsed.operands[1:])

    return extract


def _skip_operands(spec: _Opts, count: int) -> Extract:
    return lambda inv: _parse_opts(inv.args, spec).operands[count:]


def _tar_inputs(inv: _Invocation) -> list[Word]:
    args = list(inv.args)
    if args and not args[0].text.startswith("-") and args[0].text.isalpha():
        args[0] = replace(args[0], text="-" + args[0].text)  # old style: tar czf x.tgz dir
    parsed = _parse_opts(args, _TAR)
    return [*parsed.operands, *(w for flag, w in parsed.values if flag == "--files-from")]


def _openssl_inputs(inv: _Invocation) -> list[Word]:
    args = inv.args
    return [
        args[i + 1]
        for i in range(len(args) - 1)
        if args[i].text in ("-in", "-inkey", "-key", "-kfile", "-signkey")
    ]


_CURL_DATA = frozenset(
    {"--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json", "-d"}
)
_CURL_FORM = re.compile(r"=[@<]([^;]+)")
_CURL = _opts(
    "dFTKHXoOuAebcwmxyYzrCEDtUQP",
    "silent show-error fail location insecure include head verbose compressed remote-name "
    "progress-bar globoff",
    "data data-binary data-ascii data-urlencode data-raw json form form-string upload-file "
    "config header request output user user-agent referer cookie cookie-jar write-out "
    "max-time proxy range cert key cacert url connect-timeout retry dump-header",
    {"d": "data", "F": "form", "T": "upload-file", "K": "config", "o": "output"},
)


def _curl_uploads(inv: _Invocation) -> list[Word]:
    files: list[Word] = []
    for flag, word in _parse_opts(inv.args, _CURL).values:
        t = word.text
        if flag in _CURL_DATA or flag == "--data":
            _, at, path = t.partition("@")
            if at and (t.startswith("@") or flag == "--data-urlencode"):
                files.append(_derived(path))
        elif flag in ("--form", "-F"):
            files += [_derived(m.group(1)) for m in _CURL_FORM.finditer(t)]
        elif flag in ("--upload-file", "--config"):
            files.append(word)
    return files


_WGET = _opts(
    "OoaiePUtTwQl",
    "quiet verbose no-verbose continue spider server-response",
    "output-document output-file append-output input-file post-file body-file post-data "
    "user-agent header user password tries timeout method",
    {"O": "output-document"},
)

_CP = _opts(
    "tS",
    "archive force interactive link dereference no-clobber no-dereference preserve "
    "no-preserve parents recursive reflink remove-destination sparse strip-trailing-slashes "
    "symbolic-link no-target-directory update verbose one-file-system help version",
    "target-directory suffix",
    {"t": "target-directory", "S": "suffix", "r": "recursive", "R": "recursive"},
)
_INSTALL = _opts(
    "tSmogZ",
    "compare directory preserve-timestamps strip verbose help version",
    "target-directory suffix mode owner group",
    {"t": "target-directory", "S": "suffix"},
)
_LN = _opts(
    "tS",
    "force symbolic relative no-dereference logical physical verbose help version",
    "target-directory suffix",
    {"t": "target-directory", "S": "suffix"},
)
_SCP = _opts("cFiJlPSoDX")
_RSYNC = _opts(
    "eBfMT",
    "archive verbose recursive compress delete progress dry-run",
    "rsh filter exclude include exclude-from include-from files-from chmod chown temp-dir "
    "partial-dir compare-dest link-dest copy-dest log-file password-file",
)
_TEE = _opts(long="append ignore-interrupts help version", long_arg="output-error")
_SED = _opts(
    "efl",
    "quiet silent posix regexp-extended separate null-data",
    "expression file",
    {"e": "expression", "f": "file"},
    short_optional="i",
)
_PERL = _opts("eEIMmlx0", short_optional="i")
_TRUNCATE = _opts("sr", "no-create io-blocks", "size reference")
_SPONGE = _opts()
_PLAIN = _opts()
_GREP = _opts(
    "efmABCdD",
    "recursive ignore-case count files-with-matches line-number invert-match word-regexp "
    "extended-regexp fixed-strings perl-regexp only-matching no-filename with-filename",
    "regexp file max-count after-context before-context context label binary-files devices "
    "directories exclude include exclude-dir exclude-from",
    {"e": "regexp", "f": "file"},
)
_RG = _opts(
    "efmABCgtTjMrdE",
    "ignore-case count files-with-matches line-number invert-match word-regexp fixed-strings "
    "hidden no-ignore follow json",
    "regexp file max-count after-context before-context context glob type type-not replace "
    "max-depth threads encoding max-filesize pre sort sortr colors",
    {"e": "regexp", "f": "file"},
)
_AWK = _opts("fvF", long_arg="file assign field-separator", alias={"f": "file"})
_JQ = _opts(
    "fL",
    "raw-output compact-output slurp null-input exit-status",
    "from-file indent",
    {"f": "from-file"},
)
_TAR = _opts(
    "fCTXbKgLNV",
    "create extract list gzip bzip2 xz zstd verbose",
    "file directory files-from exclude-from exclude transform",
    {"T": "files-from", "f": "file", "C": "directory"},
)
_ZIP = _opts("bnPtx")

_WRITERS: dict[str, Extract] = {
    "tee": _operands(_TEE),
    "cp": _copy_targets(_CP),
    "mv": _copy_targets(_MV),
    "install": _copy_targets(_INSTALL),
    "ln": _copy_targets(_LN),
    "rsync": _copy_targets(_RSYNC),
    "scp": _copy_targets(_SCP),
    "dd": _keyed("of"),
    "sed": _in_place(_SED, ("--expression", "--file"), "-i"),
    "perl": _in_place(_PERL, ("-e", "-E"), "-i"),
    "truncate": _operands(_TRUNCATE),
    "shred": _operands(_opts("nsu", "force remove exact zero verbose", "iterations size")),
    "sponge": _operands(_SPONGE),
    "curl": _option_values(_CURL, "--output"),
    "wget": _option_values(_WGET, "--output-document"),
}


@dataclass(frozen=True, slots=True)
class _Reader:
    extract: Extract
    exempt: frozenset[str] = frozenset()  # sensitive rules that do not apply


_PLAIN_READERS = _set(
    "cat tac head tail less more most bat nl base64 base32 basenc xxd od hexdump hd strings "
    "sort uniq cut paste diff cmp comm fold fmt rev column iconv view xclip xsel gzip bzip2 "
    "xz zstd lz4 gpg split"
)

_READERS: dict[str, _Reader] = {
    **dict.fromkeys(_PLAIN_READERS, _Reader(_operands(_PLAIN))),
    "grep": _Reader(_pattern_first(_GREP, ("--regexp", "--file"), ("--file",))),
    "rg": _Reader(_pattern_first(_RG, ("--regexp", "--file"), ("--file",))),
    "ag": _Reader(_pattern_first(_RG, ("--regexp",), ())),
    "ack": _Reader(_pattern_first(_RG, ("--regexp",), ())),
    "sed": _Reader(_pattern_first(_SED, ("--expression", "--file"), ("--file",))),
    "awk": _Reader(_pattern_first(_AWK, ("--file",), ("--file",))),
    "jq": _Reader(_pattern_first(_JQ, ("--from-file",), ("--from-file",))),
    "cp": _Reader(_copy_sources(_CP)),
    "mv": _Reader(_copy_sources(_MV)),
    "install": _Reader(_copy_sources(_INSTALL)),
    "ln": _Reader(_copy_sources(_LN)),
    "scp": _Reader(_copy_sources(_SCP)),
    "rsync": _Reader(_copy_sources(_RSYNC)),
    "tar": _Reader(_tar_inputs),
    "zip": _Reader(_skip_operands(_ZIP, 1)),
    "7z": _Reader(_skip_operands(_PLAIN, 2)),
    "openssl": _Reader(_openssl_inputs),
    "dd": _Reader(_keyed("if")),
    "curl": _Reader(_curl_uploads),
    "wget": _Reader(_option_values(_WGET, "--post-file", "--body-file")),
    "source": _Reader(lambda inv: inv.args[:1], frozenset({"shell-profile"})),
    ".": _Reader(lambda inv: inv.args[:1], frozenset({"shell-profile"})),
}


def _rule_writes(inv: _Invocation, run: _Run) -> Finding | None:
    extract = _WRITERS.get(inv.name)
    if extract is None:
        return None
    for word in extract(inv):
        found = _judge_write(run, word, inv.name)
        if found is not None:
            return found
    return None


def _rule_reads(inv: _Invocation, run: _Run) -> Finding | None:
    reader = _READERS.get(inv.name)
    if reader is None:
        return None
    for word in reader.extract(inv):
        found = _judge_read(run, word, inv.name, reader.exempt)
        if found is not None:
            return found
    return None


def _rule_gpg(inv: _Invocation, run: _Run) -> Finding | None:
    for word in inv.args:
        if word.text.startswith("--export-secret"):
            return Finding(
                "sensitive-read",
                word.text,
                f"gpg {word.text} exports private keys from the keyring (token {word.text!r})",
            )
    return None


# -- code execution: shells, interpreters, downloads ------------------------------------------

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh"})
_DOWNLOADERS = _set(
    "curl wget fetch aria2c axel http https xh xhs lwp-request lwp-download get ftp tftp"
)
_NETWORK_TOOLS = frozenset({"nc", "socat", "telnet", "cryptcat", "pwncat", "openssl"})


@dataclass(frozen=True, slots=True)
class _Interpreter:
    inline: str  # short options whose value is program text (python -c, perl -e)
    module: str = ""  # short options that run a named module (python -m): no program text
    short_arg: str = ""  # other short options taking a value
    long_inline: frozenset[str] = frozenset()
    long_arg: frozenset[str] = frozenset()
    backticks: bool = False  # `...` in the program runs a shell command


_INTERPRETERS: dict[str, _Interpreter] = {
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
    "lua": _Interpreter("e", short_arg="l"),
}


@dataclass(frozen=True, slots=True)
class _Exec:
    """How a command takes program text."""

    kind: str  # "shell", "interpreter", "eval", "source"
    code: tuple[Word, ...]  # words holding program text or naming the program file
    inline: str | None  # program text given on the command line
    stdin: bool  # the program is read from standard input


def _shell_exec(args: Sequence[Word]) -> _Exec:
    i, n = 0, len(args)
    command = stdin = False
    while i < n:
        t = args[i].text
        if t in ("--", "-"):
            i += 1
            break
        if t.startswith("--"):
            i += 2 if t in ("--rcfile", "--init-file") else 1
            continue
        if len(t) > 1 and t[0] in "-+":
            letters = t[1:]
            command = command or (t[0] == "-" and "c" in letters)
            stdin = stdin or "s" in letters
            i += 2 if ("o" in letters or "O" in letters) else 1
            continue
        break
    operands = tuple(args[i:])
    if command:
        return _Exec("shell", operands[:1], operands[0].text if operands else "", False)
    if operands and not stdin:
        return _Exec("shell", operands[:1], None, operands[0].text in ("-", "/dev/stdin"))
    return _Exec("shell", (), None, True)


def _interpreter_exec(spec: _Interpreter, args: Sequence[Word]) -> _Exec:
    i, n = 0, len(args)
    while i < n:
        t = args[i].text
        if t == "-":
            return _Exec("interpreter", (), None, True)
        if t == "--":
            i += 1
            break
        if t.startswith("--"):
            name, eq, value = t[2:].partition("=")
            if name in spec.long_inline:
                word = _derived(value) if eq else (args[i + 1] if i + 1 < n else Word(""))
                return _Exec("interpreter", (word,), word.text, False)
            i += 2 if (name in spec.long_arg and not eq) else 1
            continue
        if len(t) > 1 and t[0] == "-":
            skip = 1
            for k in range(1, len(t)):
                ch, attached = t[k], t[k + 1 :]
                if ch in spec.inline:
                    word = (
                        _derived(attached) if attached else (args[i + 1] if i + 1 < n else Word(""))
                    )
                    return _Exec("interpreter", (word,), word.text, False)
                if ch in spec.module:
                    return _Exec("interpreter", (), None, False)
                if ch in spec.short_arg:
                    skip = 1 if attached else 2
                    break
            i += skip
            continue
        break
    operands = tuple(args[i:])
    if operands:
        return _Exec("interpreter", operands[:1], None, operands[0].text in ("-", "/dev/stdin"))
    return _Exec("interpreter", (), None, True)


def _exec_info(inv: _Invocation) -> _Exec | None:
    if inv.name in _SHELLS:
        return _shell_exec(inv.args)
    spec = _INTERPRETERS.get(inv.name)
    if spec is not None:
        return _interpreter_exec(spec, inv.args)
    if inv.name == "eval":
        return _Exec("eval", tuple(inv.args), " ".join(w.text for w in inv.args), False)
    if inv.name in ("source", "."):
        return _Exec("source", tuple(inv.args[:1]), None, False)
    return None


def _downloader(script: Script) -> str | None:
    """The first download command anywhere in ``script`` (substitutions included)."""
    for cmd in script.commands:
        if cmd.words:
            unwrapped = _unwrap(list(cmd.words))
            if unwrapped is not None and unwrapped.name in _DOWNLOADERS:
                return _snippet([Word(unwrapped.name), *unwrapped.args], 60)
        for word in (*cmd.words, *cmd.assignments):
            for sub in word.subs:
                found = _downloader(sub)
                if found is not None:
                    return found
    return None


def _rce(inv: _Invocation, source: str, how: str) -> Finding:
    return Finding("rce", source, f"{inv.shown} runs code downloaded by {source!r} ({how})")


def _rule_code(inv: _Invocation, run: _Run) -> Finding | None:
    """Program text given to a shell/interpreter: downloads, nested scripts, one-liners."""
    info = _exec_info(inv)
    if info is None:
        return None
    for word in info.code:
        for sub in word.subs:
            source = _downloader(sub)
            if source is not None:
                return _rce(inv, source, "as program text")
    if info.stdin:
        for r in inv.redirects:
            feeds = [r.target] if r.op in ("<", "<<<") else []
            if r.heredoc is not None:
                feeds.append(r.heredoc)
            for word in feeds:
                for sub in word.subs:
                    source = _downloader(sub)
                    if source is not None:
                        return _rce(inv, source, f"through {r.op!r}")
            if info.kind == "shell" and r.op in ("<<", "<<-", "<<<"):
                body = r.heredoc if r.heredoc is not None else r.target
                found = run.nested(body.text, f"script fed to {inv.shown} by {r.op!r}")
                if found is not None:
                    return found
    if info.inline is None:
        return None
    if info.kind in ("shell", "eval"):
        return run.nested(info.inline, f"{inv.shown} script")
    return _inline_program(inv, run, info.inline)


_NET_CODE = re.compile(
    r"\bsocket\b|fsockopen|TCPSocket|IO::Socket|\bnet\.(?:connect|Socket|createConnection)"
    r"|/inet/(?:tcp|udp)/",
    re.IGNORECASE,
)
_SPAWN_CODE = re.compile(
    r"dup2|pty\.spawn|subprocess|os\.system|\bexec(?:[lv]p?e?)?\s*\(|\bsystem\s*\(|popen"
    r"|proc_open|passthru|shell_exec|child_process|\bspawn\s*\(|/bin/(?:ba|z|da|k)?sh\b"
    r"|cmd\.exe",
    re.IGNORECASE,
)
_FORK_CODE = re.compile(
    r"fork\s*while\s*fork|while\s*\(?\s*(?:1|true)\s*\)?\s*[:{]?\s*(?:os\.)?fork\b"
    r"|for\s*\(\s*;\s*;\s*\)\s*\{?\s*fork\b",
    re.IGNORECASE,
)
_SHELL_CALL = re.compile(
    r"(?:os\.system|os\.popen|subprocess\.\w+|\bsystem|\bexec|shell_exec|passthru|popen"
    r"|execSync|spawnSync)\s*\(\s*(['\"])((?:(?!\1)[^\\]|\\.)*)\1"
)
_BACKTICK_CODE = re.compile(r"`([^`]+)`")
_STRING_LITERAL = re.compile(r"(['\"])((?:(?!\1)[^\\\n]|\\.){1,4096}?)\1")


def _inline_program(inv: _Invocation, run: _Run, code: str) -> Finding | None:
    """Heuristics for one-line programs (python -c, perl -e, awk '...')."""
    token = code if len(code) <= 60 else code[:57] + "..."
    if _NET_CODE.search(code) and (_SPAWN_CODE.search(code) or "/inet/" in code):
        return Finding(
            "reverse-shell", token, f"{inv.shown} program connects a socket to a process"
        )
    if _FORK_CODE.search(code):
        return Finding("fork-bomb", token, f"{inv.shown} program forks without bound")
    origin = f"shell command inside the {inv.shown} program"
    for m in _SHELL_CALL.finditer(code):
        found = run.nested(m.group(2), origin, lenient=True)
        if found is not None:
            return found
    if inv.name in _INTERPRETERS and _INTERPRETERS[inv.name].backticks:
        for m in _BACKTICK_CODE.finditer(code):
            found = run.nested(m.group(1), origin, lenient=True)
            if found is not None:
                return found
    for m in _STRING_LITERAL.finditer(code):
        literal = m.group(2)
        if "/" in literal or literal.startswith((".", "~")):
            found = _judge_read(run, _derived(literal), f"{inv.shown} program")
            if found is not None:
                return found
    return None


def _rule_awk(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _AWK)
    if parsed.has("--file") or not parsed.operands:
        return None
    return _inline_program(inv, run, parsed.operands[0].text)


# -- pipelines ------------------------------------------------------------------------------------


def _is_network_tool(inv: _Invocation) -> bool:
    if inv.name == "openssl":
        return any(w.text == "s_client" for w in inv.args)
    return inv.name in _NETWORK_TOOLS


def _piped_text(stages: Sequence[Sequence[_Invocation | None]]) -> str | None:
    """Text an ``echo``/``printf`` (optionally through ``base64 -d``) writes into a pipe."""
    decode = False
    for stage in reversed(stages):
        if len(stage) != 1 or stage[0] is None:
            return None
        inv = stage[0]
        if inv.name in ("base64", "base32") and any(
            w.text in ("-d", "--decode", "-D") for w in inv.args
        ):
            decode = True
            continue
        if inv.name not in ("echo", "printf"):
            return None
        words = [w.text for w in inv.args]
        while words and words[0] in ("-n", "-e", "-E", "-ne", "-en"):
            words = words[1:]
        text = " ".join(words).replace("\\n", "\n")
        if not decode:
            return text
        try:
            return base64.b64decode(text, validate=False).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            return None
    return None


def _pipeline_rules(stages: Sequence[Sequence[_Invocation | None]], run: _Run) -> Finding | None:
    for j in range(1, len(stages)):
        for inv in stages[j]:
            if inv is None:
                continue
            info = _exec_info(inv)
            if info is None or not info.stdin:
                continue
            others = [o for k, s in enumerate(stages) if k != j for o in s if o is not None]
            upstream = [o for s in stages[:j] for o in s if o is not None]
            network = next((o for o in others if _is_network_tool(o)), None)
            if network is not None and not _allowed(run, inv, network):
                return Finding(
                    "reverse-shell",
                    network.snippet(),
                    f"{inv.shown} reads commands through a pipe joined to {network.snippet()!r}",
                )
            download = next((o for o in upstream if o.name in _DOWNLOADERS), None)
            if download is not None and not _allowed(run, inv, download):
                return _rce(inv, download.snippet(), "piped into it")
            if info.kind == "shell":
                text = _piped_text(stages[:j])
                if text is not None:
                    found = run.nested(text, f"script piped into {inv.shown}", lenient=True)
                    if found is not None:
                        return found
    return None


def _allowed(run: _Run, *invs: _Invocation) -> bool:
    return bool(run.allow) and any(_first_match(run.allow, inv) for inv in invs)


def _emitted(upstream: Sequence[_Invocation | None], run: _Run) -> list[Word]:
    """Words an upstream command writes to a pipe, when they can be known (for xargs)."""
    values: list[Word] = []
    for inv in upstream:
        if inv is None:
            continue
        if inv.name == "echo":
            words = [w for w in inv.args if w.text not in ("-n", "-e", "-E")]
            values += [replace(w, text=part) for w in words for part in w.text.split()]
        elif inv.name == "printf" and len(inv.args) > 1:
            values += inv.args[1:]
        elif inv.name == "printf" and inv.args:
            values += [replace(inv.args[0], text=inv.args[0].text.replace("\\n", "").strip())]
        elif inv.name == "find":
            values += _find_plan(inv.args).entries()
    return values[: _MAX_FANOUT * 4]


# -- functions ------------------------------------------------------------------------------------


def _fork_bomb(fn: FunctionDef) -> Finding | None:
    body = fn.body
    calls = {i for i, c in enumerate(body.commands) if c.words and c.words[0].text == fn.name}
    if not calls:
        return None
    piped = any(i in calls for p in body.pipelines for stage in p.stages for i in stage)
    if piped or any(body.commands[i].background for i in calls):
        how = "a pipeline" if piped else "the background"
        return Finding(
            "fork-bomb",
            fn.name,
            f"function {fn.name!r} runs itself in {how}, multiplying processes without "
            f"bound (token {fn.name!r})",
        )
    return None


# -- remote / wrapped scripts ---------------------------------------------------------------------

_SU = _opts(
    "cgGsw",
    "login preserve-environment pty help version",
    "command session-command group supp-group shell whitelist-environment user",
    {"c": "command", "u": "user"},
)
_SSH = _opts("BbcDEeFIiJLlmOoPpQRSWw")
_WATCH = _opts(
    "nq",
    "differences beep errexit chgexit exec no-title precise color",
    "interval",
    {"x": "exec"},
)
_FLOCK = _opts(
    "wEc",
    "shared exclusive unlock nonblock close no-fork verbose",
    "timeout conflict-exit-code command",
    {"c": "command"},
)
_SCRIPT = _opts("cEIOTBm", "append quiet flush return", "command", {"c": "command"})


def _rule_su(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _SU)
    script = parsed.value("--command", "--session-command")
    if script is not None:
        return run.nested(script.text, f"{inv.shown} -c script")
    if parsed.value("-u", "--user") is not None and parsed.operands:
        return run.argv(parsed.operands, inv.name)
    return None


def _rule_ssh(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _SSH, stop_at_operand=True)
    remote = parsed.operands[1:]
    if not remote:
        return None
    return run.nested(" ".join(w.text for w in remote), "ssh remote command", lenient=True)


def _rule_watch(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _WATCH, stop_at_operand=True)
    if parsed.has("--exec"):
        return run.argv(parsed.operands, "watch -x")
    return run.nested(" ".join(w.text for w in parsed.operands), "watch command")


def _rule_flock(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _FLOCK, stop_at_operand=True)
    script = parsed.value("--command")
    if script is not None:
        return run.nested(script.text, "flock -c script")
    return run.argv(parsed.operands[1:], "flock")


def _rule_script(inv: _Invocation, run: _Run) -> Finding | None:
    script = _parse_opts(inv.args, _SCRIPT).value("--command")
    return None if script is None else run.nested(script.text, "script -c command")


# -- network ------------------------------------------------------------------------------------

_NC_ARG = "psSwiqxXIOTVMmgG"
_NC_LONG = _set(
    "exec sh-exec lua-exec listen keep-open verbose udp wait source-port source ssl proxy "
    "output hex-dump send-only recv-only allow deny chat broker nodns crlf idle-timeout"
)
_NC_EXEC = frozenset({"exec", "sh-exec", "lua-exec"})
_SOCAT_NET = ("tcp", "udp", "openssl", "ssl", "sctp", "socks", "proxy", "dccp", "udplite")
_SOCAT_EXEC = ("exec:", "system:", "exec,", "system,")


def _rule_netcat(inv: _Invocation, run: _Run) -> Finding | None:
    for word in inv.args:
        t = word.text
        if t.startswith("--"):
            name = t[2:].partition("=")[0]
            matches = [o for o in _NC_LONG if o.startswith(name)] if name else []
            full = name if name in _NC_LONG else matches[0] if len(matches) == 1 else ""
            if full in _NC_EXEC:
                return _reverse_shell(inv, t)
        elif len(t) > 1 and t[0] == "-":
            for ch in t[1:]:
                if ch in "ec":
                    return _reverse_shell(inv, t)
                if ch in _NC_ARG:
                    break
    return None


def _reverse_shell(inv: _Invocation, flag: str) -> Finding:
    return Finding(
        "reverse-shell",
        flag,
        f"{inv.shown} {flag} hands a program (a shell) to a network peer (token {flag!r})",
    )


def _rule_socat(inv: _Invocation, run: _Run) -> Finding | None:
    addresses = [w.text.lower() for w in inv.args if not w.text.startswith("-")]
    runs = next((a for a in addresses if a.startswith(_SOCAT_EXEC)), None)
    if runs is not None and any(a.startswith(_SOCAT_NET) for a in addresses):
        return _reverse_shell(inv, runs)
    return None


# -- git ---------------------------------------------------------------------------------------

_GIT_GLOBAL_ARG = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--super-prefix", "--config-env"}
)
_GIT_NO_VERIFY_COMMANDS = frozenset({"commit", "push", "merge", "pull", "rebase", "am"})
_GIT_SHORT_ARG = {
    "commit": "mFCct",
    "push": "o",
    "merge": "msXF",
    "pull": "msXoj",
    "rebase": "sXx",
    "am": "Cp",
}
_GIT_LONG_ARG = {
    "commit": _set(
        "message file author date template reuse-message reedit-message fixup squash cleanup "
        "trailer pathspec-from-file"
    ),
    "push": _set("repo receive-pack exec push-option"),
    "merge": _set("message file strategy strategy-option into-name"),
    "pull": _set("message strategy strategy-option depth upload-pack"),
    "rebase": _set("onto strategy strategy-option exec"),
    "am": _set("directory exclude include whitespace"),
}
_HOOKS_OFF = {"HUSKY": ("0", "false"), "HUSKY_SKIP_HOOKS": ("1", "true")}


def _no_verify(sub: str, args: Sequence[Word]) -> tuple[str | None, list[str]]:
    """(the flag that disables hooks, scripts given to --exec/-x) for a git subcommand."""
    short_arg = _GIT_SHORT_ARG.get(sub, "")
    long_arg = _GIT_LONG_ARG.get(sub, frozenset())
    execs: list[str] = []
    i, n = 0, len(args)
    while i < n:
        t = args[i].text
        if t == "--":
            break
        if t.startswith("--"):
            name, eq, value = t[2:].partition("=")
            if name.startswith("no-v") and "no-verify".startswith(name):
                return t, execs
            takes = [opt for opt in long_arg if opt.startswith(name)] if len(name) > 1 else []
            if takes and not eq:
                i += 1
                if takes[0] == "exec" and i < n:
                    execs.append(args[i].text)
            elif takes and takes[0] == "exec":
                execs.append(value)
        elif len(t) > 1 and t[0] == "-":
            for k in range(1, len(t)):
                ch = t[k]
                if ch == "n" and sub == "commit":
                    return t, execs
                if ch in short_arg:
                    value = t[k + 1 :]
                    if not value and i + 1 < n:
                        i += 1
                        value = args[i].text
                    if ch == "x" and sub == "rebase":
                        execs.append(value)
                    break
        i += 1
    return None, execs


def _hooks_path_escapes(value: str) -> bool:
    v = value.strip()
    return not v or v.startswith(("/", "~", "$")) or ".." in v.split("/") or v.lower() == "nul"


def _rule_git(inv: _Invocation, run: _Run) -> Finding | None:
    args = inv.args
    i, n = 0, len(args)
    configs: list[tuple[str, str]] = []
    while i < n and args[i].text.startswith("-"):
        t = args[i].text
        if t in _GIT_GLOBAL_ARG:
            if t in ("-c", "--config-env") and i + 1 < n:
                configs.append((t, args[i + 1].text))
            i += 2
            continue
        if t.startswith("--config-env="):
            configs.append(("--config-env", t.partition("=")[2]))
        i += 1
    for option, setting in configs:
        key, _, value = setting.partition("=")
        key = key.lower()
        if key == "core.hookspath" and (option == "--config-env" or _hooks_path_escapes(value)):
            return Finding(
                "git-no-verify",
                setting,
                f"git {option} {setting} points core.hooksPath away from the repository's "
                f"hooks (token {setting!r})",
            )
        if key.startswith("alias.") and value.startswith("!"):
            found = run.nested(value[1:], f"git alias {key[6:]!r}")
            if found is not None:
                return found
    if i >= n:
        return None
    sub = args[i].text
    if sub not in _GIT_NO_VERIFY_COMMANDS:
        return None
    flag, execs = _no_verify(sub, args[i + 1 :])
    if flag is not None:
        return Finding(
            "git-no-verify",
            flag,
            f"git {sub} {flag} skips the repository's hooks (token {flag!r})",
        )
    for name, values in _HOOKS_OFF.items():
        if inv.env.get(name, "").lower() in values:
            setting = f"{name}={inv.env[name]}"
            return Finding(
                "git-no-verify", setting, f"{setting} git {sub} disables the repository's hooks"
            )
    for script in execs:
        found = run.nested(script, f"git {sub} --exec command")
        if found is not None:
            return found
    return None


# -- docker --------------------------------------------------------------------------------------

_DOCKER_GLOBAL_ARG = _set(
    "-H --host -c --context --config -l --log-level --tlscacert --tlscert --tlskey"
)


def _docker_flags(args: Sequence[Word]) -> set[str]:
    flags: set[str] = set()
    for word in args:
        t = word.text
        if t.startswith("--"):
            name, eq, value = t.partition("=")
            if not eq or value.lower() not in ("false", "0"):
                flags.add(name)
        elif t.startswith("-"):
            flags.update("-" + ch for ch in t[1:])
    return flags


def _lists_volumes(word: Word) -> bool:
    for sub in word.subs:
        for cmd in sub.commands:
            texts = [w.text for w in cmd.words]
            if len(texts) >= 3 and _canon(texts[0]) == "docker" and texts[1:3] == ["volume", "ls"]:
                return True
    return False


def _rule_docker(inv: _Invocation, run: _Run) -> Finding | None:
    args = inv.args
    i, n = 0, len(args)
    while i < n and args[i].text.startswith("-"):
        i += 2 if args[i].text in _DOCKER_GLOBAL_ARG else 1
    words = [w.text for w in args[i : i + 2]]
    rest = args[i + 2 :]
    flags = _docker_flags(rest)
    every = bool(flags & {"-a", "--all"})
    shown = "docker " + " ".join([*words, *(w.text for w in rest)])
    if words == ["system", "prune"] and every and "--volumes" in flags:
        return Finding(
            "docker-prune",
            shown,
            f"{shown!r} deletes every unused image, container, network and volume",
        )
    if words == ["volume", "prune"] and every:
        return Finding("docker-prune", shown, f"{shown!r} deletes every unused volume and its data")
    if words in (["volume", "rm"], ["volume", "remove"]) and any(_lists_volumes(w) for w in rest):
        return Finding("docker-prune", shown, f"{shown!r} deletes every volume")
    return None


# -- shell state ------------------------------------------------------------------------------


def _rule_cd(inv: _Invocation, run: _Run) -> Finding | None:
    targets = [w for w in inv.args if not w.text.startswith("-") or w.text == "-"]
    if not targets:
        run.cwd = HOME
        return None
    target = targets[0]
    if target.text == "-" or SUBST in target.text:
        run.cwd = None
        return None
    path = run.path(target)
    run.cwd = None if "$" in path else path
    return None


def _rule_export(inv: _Invocation, run: _Run) -> Finding | None:
    for word in inv.args:
        if _ASSIGNMENT.match(word.text):
            run.assign(word.text, persistent=True)
    return None


# -- rule tables --------------------------------------------------------------------------------

_RULES: dict[str, tuple[Rule, ...]] = {
    "rm": (_rule_rm,),
    "mv": (_rule_mv,),
    "find": (_rule_find,),
    "mkfs": (_rule_mkfs,),
    **dict.fromkeys((*_READ_ONLY_FLAGS, "parted", "wipefs"), (_rule_partitioner,)),
    "chmod": (_rule_chmod,),
    "chown": (_rule_chown,),
    "chgrp": (_rule_chown,),
    "nc": (_rule_netcat,),
    "socat": (_rule_socat,),
    "git": (_rule_git,),
    "docker": (_rule_docker,),
    "gpg": (_rule_gpg,),
    "awk": (_rule_awk,),
    "su": (_rule_su,),
    "ssh": (_rule_ssh,),
    "watch": (_rule_watch,),
    "flock": (_rule_flock,),
    "script": (_rule_script,),
    "cd": (_rule_cd,),
    "pushd": (_rule_cd,),
    **dict.fromkeys(("export", "declare", "typeset", "local", "readonly"), (_rule_export,)),
}
"""Rules that apply to one command name (after unwrapping)."""

_GENERIC_RULES: tuple[Rule, ...] = (_rule_code, _rule_writes, _rule_reads)
"""Rules that consult their own tables for every command."""


# -- public API ----------------------------------------------------------------------------------


def _argv_words(argv: Sequence[str]) -> list[Word]:
    """An argv list is one simple command; ``~`` and globs are judged as if a shell saw
    them, because some runners hand the list to a shell."""
    return [
        Word(a, quoted=True, tilde=a.startswith("~"), glob=_GLOB_CHARS.search(a) is not None)
        for a in argv
    ]


def _analyze(
    command: str | Sequence[str],
    deny: Sequence[re.Pattern[str]],
    allow: Sequence[re.Pattern[str]],
) -> Finding | None:
    run = _Run(deny, allow)
    if isinstance(command, str):
        return run.source(command, "the command")
    return run.script(Script((SimpleCommand(tuple(_argv_words(command))),)))


def analyze_command(command: str | Sequence[str]) -> Finding | None:
    """Judge a shell command (or an argv list) with the built-in rules.

    >>> analyze_command("rm -rf /").reason
    "fs-destruction: rm -rf targets '/', the filesystem root (token '/')"
    >>> analyze_command("git commit -m 'rm -rf /'") is None
    True
    """
    return _analyze(command, (), ())


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

    Block reason: ``command-safety-guard: <rule>: <message>``.
    """

    tools: ClassVar[frozenset[str]] = frozenset({"exec"})
    """The (normalized) tools this guard is meant for."""

    __slots__ = ("_allow", "_deny")

    def __init__(self, *, extra_deny: Sequence[str] = (), allow: Sequence[str] = ()) -> None:
        self._deny = _compile(extra_deny, "extra_deny")
        self._allow = _compile(allow, "allow")

    def analyze(self, command: str | Sequence[str]) -> Finding | None:
        """Judge ``command`` with the built-in rules and this guard's extra rules."""
        return _analyze(command, self._deny, self._allow)

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.block:
            return
        command = out.args.get("command")
        if isinstance(command, list):
            if not command or not all(isinstance(a, str) for a in command):
                return
        elif not isinstance(command, str):
            return
        finding = _analyze(command, self._deny, self._allow)
        if finding is not None:
            out.block = True
            out.block_reason = f"command-safety-guard: {finding.reason}"
