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
   to a shell, ``system("...")``-style calls inside ``python -c``/``perl -e``/``awk``
   programs, and program text the guard can compute: the output of ``echo``, ``printf``
   (escapes and formats as bash, dash and zsh read them), ``yes`` and here-documents,
   through ``base64``/``base32``/``openssl base64`` decoding, ``xxd -r -p``, ``rev``,
   ``tac``, ``tr`` and ``gunzip``-style decompression, whether it is piped into a shell or
   an interpreter, substituted into a script (``sh -c "$(echo ...)"``, ``eval "$X"`` with
   ``X=$(printf ...)``) or used as a command name (``$(echo rm) -rf /``).
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
- ``dynamic-code``: program text a shell or interpreter will run that the guard cannot
  read, because it is made at run time.  The text of ``sh -c``, ``eval``, a here-string
  or a process substitution fed to a shell, or ``python -c``, that is wholly a variable or
  a command substitution whose value is unknown (``eval "$X"``, ``sh -c "$(cat f)"``,
  ``source <(cat f)``); a command name inside such text that is (``bash -c "$CMD -x"``);
  text piped into a shell or interpreter through a decoder or text transformer whose
  output the guard cannot compute (``base64 -d payload | sh``, ``xxd -r hex.txt | bash``,
  ``cat x | sed ... | sh``, ``python3 -c 'print(...)' | sh``, ``echo ... | head | sh``).
  Variables and substitutions as *arguments* in such text are data (``bash -c "cd $DIR
  && make"``); local text is visible to a reviewer and allowed (``cat install.sh |
  bash``, ``python3 gen.py | sh``).  ``eval "$(tool ...)"`` of the shell-setup tools in
  :data:`_SETUP_TOOLS` (``ssh-agent``, ``pyenv init``, ``direnv hook``, ``brew shellenv``,
  completion scripts...) is trusted.  On the command line itself, a command name known
  only at run time (``$CMD -rf /``, ``"$EDITOR" notes.txt``) is judged as each of
  :data:`_STAND_INS` (``rm``, ``chmod``, ``dd``, ``sh``, ``cat``...) and refused when one
  of them would be refused with those arguments; one that runs the words of a download
  (``$(curl ...)``, ``X=$(curl ...); $X``, rule ``rce``) or of a decoder is refused.
- ``extra-deny``: a constructor ``extra_deny`` regex matched a simple command.

Known limits -- what a check of the command text cannot see: symlinks and bind mounts
(``ln -s / x; rm -rf x/``... the link is allowed, the later ``rm`` judges the name);
values of variables set outside the command line or computed at run time, where they are
arguments (``rm -rf "$DIR"``; as a command name see ``dynamic-code``); the output of
local programs and files run as code (``cat x.sh | bash``, ``$(cat cmd.txt)``) and of
the trusted setup tools; substitutions in argument position of a ``-c`` script, which the
inner shell parses again (``bash -c "echo $(cat f)"``); aliases and shell functions defined
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
from collections import deque
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
    dynamic: str = ""  # the command name as written, when only run time knows it ($CMD)

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

    __slots__ = ("allow", "cwd", "deny", "depth", "inside", "made", "outputs", "paths", "vars")

    def __init__(self, deny: Sequence[re.Pattern[str]], allow: Sequence[re.Pattern[str]]) -> None:
        self.deny = deny
        self.allow = allow
        self.depth = 0
        self.vars: dict[str, str] = {}
        self.cwd: str | None = None
        self.inside = ""  # in program text handed to a shell: where it came from
        # created when first needed: most commands have no substitution
        self.made: dict[str, tuple[str, str]] | None = None  # X=$(curl ...): X -> (rule, by)
        self.outputs: dict[int, tuple[Script, _Stream]] | None = None  # id(script) -> output
        self.paths: dict[str, str] | None = None  # resolved paths, while probing stand-ins

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
        outer, self.inside = self.inside, origin
        try:
            return self.source(text, origin, lenient=lenient)
        finally:
            self.depth -= 1
            self.inside = outer

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
            self.assign(assignment, persistent=not cmd.words)
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
        head = unwrapped.layers[-1][0].text
        if ("$" in head or SUBST in head) and _dynamic_name(head):
            inv.dynamic = head
        if not unwrapped.via_xargs:
            return [inv]
        values = _emitted(upstream, self)
        marker = unwrapped.xargs_replace
        if marker is not None:  # xargs -I: one argument per input line
            values = _lines(_stream([upstream])) or values
            if marker in head:  # xargs -I{} {} ...: the input names the command
                inv.dynamic = head
        if not values:  # input the guard cannot know (base64 -d x | xargs sh -c)
            values = [Word(SUBST)]
        if marker is None:
            return [replace(inv, args=[*inv.args, *values])]
        return [_xargs_call(inv, marker, value) for value in values[:_MAX_FANOUT]]

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
        if inv.dynamic:
            return self._dynamic_command(inv)
        for rule in _RULES.get(inv.name, ()):
            found = rule(inv, self)
            if found is not None:
                return found
        for rule in _GENERIC_RULES:
            found = rule(inv, self)
            if found is not None:
                return found
        return None

    def _made_by(self, subs: Sequence[Script]) -> tuple[str, str] | None:
        """(rule, command) when one of ``subs`` downloads its output or makes it in a
        way the guard cannot follow (``$(curl ...)``, ``$(base64 -d f)``)."""
        for script in subs:
            source = _downloader(script)
            if source is not None:
                return "rce", source
            hidden = self.substitution(script).hidden
            if hidden:
                return "dynamic-code", hidden
        return None

    def _dynamic_command(self, inv: _Invocation) -> Finding | None:
        """A command whose name only run time knows (``$CMD -rf /``, ``$(cat f) x``).

        In program text handed to a shell it is refused outright.  On the command line
        itself it is judged as each command of :data:`_STAND_INS` in turn, and refused
        when one of them would be: ``"$EDITOR" notes.txt`` passes, ``$X -rf /`` does not.
        """
        shown = _show(inv.dynamic)
        head = inv.layers[-1][0] if inv.layers else Word(inv.dynamic)
        made = self._made_by(head.subs)
        if made is None and self.made:
            names = (m.group(1) or m.group(2) for m in _VAR_REF.finditer(inv.dynamic))
            made = next((self.made[n] for n in names if n in self.made), None)
        if made is not None:  # $(curl ...) or X=$(curl ...); $X: the words are the command
            rule, source = made
            what = "downloaded by" if rule == "rce" else "made at run time by"
            return Finding(
                rule,
                source,
                f"the command {shown!r} runs words {what} {source!r}; the guard judges only "
                f"commands it can read",
            )
        if self.inside:
            return Finding(
                "dynamic-code",
                shown,
                f"{self.inside} names its command with {shown!r}, which is known only at "
                f"run time; program text handed to a shell must name its commands literally",
            )
        if not inv.args:  # "$@", $CMD: nothing any stand-in would refuse
            return None
        found, outer, self.paths = None, self.paths, self.paths or {}
        try:
            for stand_in in _STAND_INS:
                probe = _Invocation(stand_in, inv.args, inv.env, (), [[Word(stand_in), *inv.args]])
                found = _judge(probe, self)
                if found is not None:
                    return Finding(
                        "dynamic-code",
                        shown,
                        f"the command name {shown!r} is known only at run time, and its "
                        f"arguments would be refused if it were {stand_in}: {found.message}",
                    )
        finally:
            self.paths = outer
        return None

    # -- variables and paths --------------------------------------------------------------------

    def assign(self, word: Word, *, persistent: bool) -> None:
        name, _, value = word.text.partition("=")
        name = name.rstrip("+")
        if not persistent or "[" in name:
            return
        value = self.expand_text(value)
        if self.made:
            self.made.pop(name, None)
        if self.outputs:  # outputs computed with the old value may differ now
            self.outputs.clear()
        if SUBST in value and word.subs:  # X=$(printf 'rm -rf /'): its output, when known
            spliced = self.spliced(word, value)
            if spliced is None:
                made = self._made_by(word.subs)
                if made is not None:
                    self.made = self.made or {}
                    self.made[name] = made
            value = spliced or value
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
            if (
                word.subs
                and not word.process  # <(...) is a file name, not the output
                and SUBST in text
                and (spliced := self.spliced(word, text)) is not None
            ):
                # $(echo rm): the output is known, so the word is too (and already judged)
                glob = word.glob or (not word.quoted and _GLOB_CHARS.search(spliced) is not None)
                word, text = replace(word, subs=(), glob=glob), spliced
            if text == word.text:
                out.append(word)
            elif word.quoted:
                out.append(replace(word, text=text))
            else:  # unquoted expansion: the shell splits it into words
                out.extend(replace(word, text=part) for part in text.split())
        return out

    # -- program text computed at run time ---------------------------------------------------

    def substitution(self, script: Script) -> _Stream:
        """What ``$(script)`` or ``<(script)`` outputs, as far as the guard can tell.

        The script itself has been judged already; this only evaluates its output.
        """
        if self.outputs is None:
            self.outputs = {}
        known = self.outputs.get(id(script))
        if known is not None and known[0] is script:  # holding it keeps its id unique
            return known[1]
        stream = self._evaluate(script)
        self.outputs[id(script)] = (script, stream)
        return stream

    def _evaluate(self, script: Script) -> _Stream:
        if not any(  # $(git describe), $(date +%s): local output, nothing to compute
            cmd.words and _canon(cmd.words[0].text) in _STREAM_NAMES for cmd in script.commands
        ):
            return _LOCAL
        invs: list[_Invocation | None] = []
        for cmd in script.commands:
            words = self._expand(cmd.words) if cmd.words else []
            unwrapped = _unwrap(words) if words else None
            if unwrapped is None:
                invs.append(None)
                continue
            # a command named at run time ($CMD) keeps its unknown name: local output
            invs.append(_Invocation(unwrapped.name, unwrapped.args, {}, cmd.redirects))
        if script.functions:
            return _LOCAL
        pipeline = script.pipelines[0] if len(script.pipelines) == 1 else None
        if pipeline is not None and sum(map(len, pipeline.stages)) == len(invs):
            return _stream([[invs[i] for i in stage] for stage in pipeline.stages])
        return _stream([invs])  # one command, or a list of them: their outputs in turn

    def spliced(self, word: Word, text: str) -> str | None:
        """``text`` (``word``'s, variables expanded) with each substitution replaced by
        its output, when every output is known and the same in every shell."""
        if text.count(SUBST) != len(word.subs):  # ${x:-$(...)} keeps its source text
            return None
        parts = text.split(SUBST)
        out = [parts[0]]
        for sub, part in zip(word.subs, parts[1:], strict=True):
            stream = self.substitution(sub)
            if not stream.complete or len(stream.readings) != 1:
                return None
            out += (_command_output(stream.readings[0]), part)
        return "".join(out)

    def _readings(self, word: Word) -> list[str]:
        """The texts a program word may be once its substitutions have run: known outputs
        spliced in, setup code (``$(pyenv init -)``) as ``:``, anything else left as
        :data:`SUBST` for the parse of the program to place (data or a command name)."""
        texts = [word.text]
        if not word.subs or word.text.count(SUBST) != len(word.subs):
            return texts
        parts = word.text.split(SUBST)
        texts = [parts[0]]
        for sub, part in zip(word.subs, parts[1:], strict=True):
            stream = self.substitution(sub)
            values = [SUBST]
            if stream.complete:
                values = [_command_output(r) for r in stream.readings]
            elif not stream.hidden and _setup_code(sub):
                values = [":"]  # the null command stands for setup code the guard trusts
            texts = [head + value + part for head in texts for value in values]
        return texts

    def program(
        self, inv: _Invocation, kind: str, words: Sequence[Word], origin: str
    ) -> Finding | None:
        """Judge program text given to ``inv`` (``kind`` as in :class:`_Exec`), made of
        ``words`` joined by spaces, in each of its readings."""
        if len(words) == 1 and not words[0].subs:  # the common case: bash -c '...'
            return self._judge_program(inv, kind, words[0].text, words, origin)
        texts = [""]
        for k, word in enumerate(words):
            sep = " " if k else ""
            texts = [head + sep + tail for head in texts for tail in self._readings(word)]
            if len(texts) > _MAX_READINGS:
                return Finding(
                    "dynamic-code",
                    _snippet(words),
                    f"{origin} may read in more than {_MAX_READINGS} ways once its "
                    f"substitutions have run; the guard judges only program text it can read",
                )
        for text in texts:
            found = self._judge_program(inv, kind, text, words, origin)
            if found is not None:
                return found
        return None

    def _judge_program(
        self, inv: _Invocation, kind: str, text: str, words: Sequence[Word], origin: str
    ) -> Finding | None:
        if ("$" in text or SUBST in text) and _WHOLE_EXPANSION.fullmatch(text):
            token = text.strip()
            subs = [sub for w in words for sub in w.subs]
            if token == SUBST and len(subs) == 1:
                token = f"$({_script_snippet(subs[0])})"
            what = (
                "text made at run time"
                if token == SUBST
                else f"{_show(token)!r}, text known only at run time,"
            )
            return Finding(
                "dynamic-code",
                _show(token),
                f"{inv.shown} runs {what} as its program; the guard judges only program text "
                f"it can read",
            )
        if kind in ("shell", "eval", "source"):
            return self.nested(text, origin)
        return _inline_program(inv, self, text)

    def stream_program(
        self, inv: _Invocation, info: _Exec, stream: _Stream, how: str
    ) -> Finding | None:
        """Judge what ``stream`` carries into ``inv``, which runs it as a program."""
        if stream.hidden:
            return Finding(
                "dynamic-code",
                stream.hidden,
                f"{inv.shown} runs program text that {stream.hidden!r} makes at run time "
                f"({how} it); the guard judges only program text it can read",
            )
        origin = f"script {how} {inv.shown}"
        for reading in stream.readings:
            text = reading.decode("utf-8", "replace")
            if not stream.holes:  # a shell drops NUL bytes; SUBST marks unknown text
                text = text.replace(SUBST, "")
            if info.kind in ("shell", "eval", "source"):
                found = self.nested(text, origin)
            else:
                found = _inline_program(inv, self, text)
            if found is not None:
                return found
        return None

    def program_file(self, inv: _Invocation, info: _Exec, word: Word, how: str) -> Finding | None:
        """``bash <(...)``, ``source <(...)``: the program is a process's output."""
        sub = word.subs[0]
        stream = self.substitution(sub)
        if stream.readings or stream.hidden or _setup_code(sub):
            return self.stream_program(inv, info, stream, how)
        token = f"<({_script_snippet(sub)})"
        return Finding(
            "dynamic-code",
            token,
            f"{inv.shown} runs the output of {token!r} as its program, text known only at "
            f"run time; the guard judges only program text it can read",
        )

    def path(self, word: Word) -> str:
        text = self.expand_text(word.text)
        if text.startswith("~") and not word.tilde:
            text = "./" + text  # a quoted '~' is a file literally named ~
        if self.paths is None:
            path = resolve_path(text, home=HOME)
        else:  # probing stand-ins: the same words, judged 14 times
            path = self.paths.get(text) or self.paths.setdefault(
                text, resolve_path(text, home=HOME)
            )
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
        stdin = bool(inv.args) and inv.args[0].text == "/dev/stdin"
        return _Exec("source", tuple(inv.args[:1]), None, stdin)
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
            found = None
            if r.op in ("<<", "<<-", "<<<"):
                body = r.heredoc if r.heredoc is not None else r.target
                origin = f"script fed to {inv.shown} by {r.op!r}"
                found = run.program(inv, info.kind, [body], origin)
            elif r.op == "<" and r.target.process:
                found = run.program_file(inv, info, r.target, f"fed by {r.op!r} to")
            if found is not None:
                return found
    if info.inline is None:
        if info.code and info.code[0].process:
            return run.program_file(inv, info, info.code[0], "handed as a file to")
        return None
    return run.program(inv, info.kind, info.code, f"{inv.shown} script")


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
            if _allowed(run, inv):
                continue
            found = run.stream_program(inv, info, _stream(stages[:j]), "piped into")
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
_MAX_READINGS = 8  # alternative texts of one program (shells differ on escapes)

_DYNAMIC_NAME = re.compile(r"\$[A-Za-z_0-9@*#?$!{(-]")
_WHOLE_EXPANSION = re.compile(
    r"\s*(?:\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*]|\$\{[^{}]*\}|" + SUBST + r")\s*"
)
_STAND_INS = ("rm", "find", "chmod", "dd", "mkfs", "sh", "cat", "tee", "nc", "git", "docker")
"""What a command name known only at run time is judged as (see ``_dynamic_command``).
Others are covered by these: ``mv`` and ``chown`` of critical paths by ``rm -r`` and
``tee``, ``fdisk`` by ``mkfs``."""


def _dynamic_name(text: str) -> bool:
    """Whether a command word names its command only at run time: an unresolved variable
    or substitution in its last path component (``$CMD``, ``$(echo rm)``, ``${X:-rm}``).
    ``$HOME/bin/tool`` and ``"$(npm bin)/eslint"`` name ``tool`` and ``eslint``."""
    if "$" not in text and SUBST not in text:
        return False
    last = text.rsplit("/", 1)[-1]
    return SUBST in last or "}" in last or _DYNAMIC_NAME.search(last) is not None


def _judge(inv: _Invocation, run: _Run) -> Finding | None:
    """The rules of ``inv``'s command name, then the generic ones."""
    for rule in _RULES.get(inv.name, ()):
        found = rule(inv, run)
        if found is not None:
            return found
    for rule in _GENERIC_RULES:
        found = rule(inv, run)
        if found is not None:
            return found
    return None


def _xargs_call(inv: _Invocation, marker: str, value: Word) -> _Invocation:
    """``xargs -I{} CMD {}`` for one input value (which may name the command itself)."""
    args = [_substitute(arg, marker, value) for arg in inv.args]
    if marker not in inv.dynamic:
        return replace(inv, args=args)
    head = _substitute(Word(inv.dynamic), marker, value).text
    return replace(
        inv,
        name=_canon(head),
        args=args,
        layers=[*inv.layers[:-1], [Word(head), *args]],
        dynamic=head if _dynamic_name(head) else "",
    )


@dataclass(frozen=True, slots=True)
class _Stream:
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


_LOCAL = _Stream()

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
    {*_DECOMPRESS, *_INTERPRETERS, "awk", "base64", "base32", "basenc", "openssl", "xxd"}
    | _set("rev tac tr sed cut iconv uudecode zstd unzstd zstdcat od hexdump")
)
"""Commands that turn the text they read into other text: between a literal and a shell
they hide what the shell will run, unless the guard can compute their output."""

_STREAM_NAMES = frozenset(
    {*_TRANSFORMERS, *_PASS_THROUGH, *_WRAPPERS, "echo", "printf", "yes", "xargs"}
)
"""A substitution whose commands have none of these names outputs local text."""

_SETUP_TOOLS: dict[str, frozenset[str] | None] = {
    **dict.fromkeys(("ssh-agent", "gpg-agent", "keychain", "dircolors", "thefuck"), None),
    **dict.fromkeys(
        ("pyenv", "rbenv", "nodenv", "goenv", "jenv", "plenv", "phpenv", "luaenv", "scalaenv"),
        _set("init virtualenv-init"),
    ),
    **dict.fromkeys(("zoxide", "starship", "atuin", "mcfly"), _set("init")),
    **dict.fromkeys(("mise", "rtx"), _set("activate env hook-env")),
    **dict.fromkeys(
        ("conda", "mamba", "micromamba"),
        _set("shell shell.bash shell.zsh shell.posix shell.fish shell-hook"),
    ),
    **dict.fromkeys(("kubectl", "helm", "gh", "npm", "pip", "pip3", "glab"), _set("completion")),
    **dict.fromkeys(("rustup", "poetry", "deno"), _set("completions")),
    "direnv": _set("hook export"),
    "brew": _set("shellenv"),
    "opam": _set("env config"),
    "fnm": _set("env completions"),
    "docker-machine": _set("env"),
    "minikube": _set("docker-env podman-env"),
    "luarocks": _set("path"),
    "pixi": _set("shell-hook"),
    "devbox": _set("shellenv"),
    "uv": _set("generate-shell-completion"),
}
"""Tools whose output is shell setup code meant for ``eval "$(tool ...)"`` (with the
subcommand that prints it; None: any).  The guard trusts that output as it trusts running
the tool: ``eval "$(pyenv init -)"`` is allowed without knowing what it prints."""


def _setup_code(script: Script) -> bool:
    """``script`` is one call of a :data:`_SETUP_TOOLS` tool that prints setup code."""
    if len(script.commands) != 1 or script.pipelines or script.functions:
        return False
    words = script.commands[0].words
    if not words or _dynamic_name(words[0].text):
        return False
    subcommands = _SETUP_TOOLS.get(_canon(words[0].text), frozenset())
    if subcommands is None:
        return True
    first = next((w.text for w in words[1:] if not w.text.startswith("-")), "")
    return first in subcommands


def _script_snippet(script: Script, limit: int = 60) -> str:
    text = "; ".join(_snippet(cmd.words, limit) for cmd in script.commands if cmd.words)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


def _printf_readings(args: Sequence[str]) -> tuple[bytes, ...] | None:
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


def _transform(inv: _Invocation, data: bytes) -> bytes | None:
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


def _fed_text(inv: _Invocation) -> Word | None:
    """The here-document or here-string a command reads as its stdin, if any."""
    for r in reversed(inv.redirects):
        if r.op in ("<<", "<<-"):
            return r.heredoc
        if r.op == "<<<":
            return r.target
    return None


def _tilde(word: Word) -> str:
    """The word's text after tilde expansion (``echo ~/x`` prints ``/home/user/x``)."""
    text = word.text
    if word.tilde and (text == "~" or text.startswith("~/")):
        return HOME + text[1:]
    return text


def _literal(word: Word, trailing_newline: bool) -> _Stream:
    data = _encode(word.text) + (b"\n" if trailing_newline else b"")
    return _Stream((data,), holes=SUBST in word.text)


def _reads_stdin(inv: _Invocation) -> bool:
    """No file operand (the rough test: every argument is an option or ``-``)."""
    return all(w.text.startswith("-") for w in inv.args)


def _source(inv: _Invocation) -> _Stream:
    """What ``inv`` writes to its stdout when it starts a pipeline."""
    texts = [_tilde(w) for w in inv.args]
    if inv.name == "echo":
        return _Stream(_echo_readings(texts), holes=any(SUBST in t for t in texts))
    if inv.name == "yes":  # the same line without end: one piece is enough to judge
        line = _encode(" ".join(texts) if texts else "y") + b"\n"
        return _Stream((line,), partial=True, holes=any(SUBST in t for t in texts))
    if inv.name == "printf":
        readings = _printf_readings(texts)
        if readings is None:
            return _Stream(hidden=inv.snippet())
        return _Stream(readings, holes=any(SUBST in t for t in texts))
    fed = _fed_text(inv)
    if fed is not None and _reads_stdin(inv):
        text = _literal(fed, trailing_newline=True)
        if inv.name in _PASS_THROUGH:
            return text
        if inv.name in _TRANSFORMERS:
            return _through(inv, text)
        return _LOCAL
    if inv.name not in _TRANSFORMERS:
        return _LOCAL
    if inv.name in _INTERPRETERS:
        info = _exec_info(inv)
        if info is not None and info.inline is None and not info.stdin:
            return _LOCAL  # python gen.py: a program on disk, like ./gen.sh
    return _Stream(hidden=inv.snippet())


def _through(inv: _Invocation, incoming: _Stream) -> _Stream:
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
            return _Stream(hidden=inv.snippet())
        out: dict[bytes, None] = {}
        for reading in incoming.readings:
            data = _transform(inv, reading)
            if data is None:
                return _Stream(hidden=inv.snippet())
            out[data] = None
        return _Stream(tuple(out))
    if incoming.readings:  # echo 'rm -rf /' | head -1: what head makes of it is unknown
        return _Stream(hidden=inv.snippet())
    return _LOCAL


def _group(invs: Sequence[_Invocation | None]) -> _Stream:
    """What a subshell or group of commands writes: their outputs one after another.

    Consecutive known outputs are joined (``{ printf r; printf 'm -rf /'; }`` is one
    text); a local file among them splits the text into pieces, each judged alone.
    """
    runs: list[list[_Stream]] = [[]]
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
            if len(joined) > _MAX_READINGS:  # refuse rather than sample the readings
                return _Stream(hidden="; ".join(i.snippet() for i in invs if i)[:60])
        if run:
            texts.update(dict.fromkeys(joined))
    if not texts:
        return _LOCAL
    partial = split or any(p.partial for run in runs for p in run)
    return _Stream(tuple(texts), partial=partial, holes=holes)


def _stream(stages: Sequence[Sequence[_Invocation | None]]) -> _Stream:
    """What the last of ``stages`` writes into the next pipe."""
    state = _LOCAL
    for k, stage in enumerate(stages):
        if len(stage) == 1 and stage[0] is not None:
            state = _source(stage[0]) if k == 0 else _through(stage[0], state)
        elif not state.hidden:
            state = _group(stage)
    return state


def _lines(stream: _Stream) -> list[Word]:
    """The input lines of ``xargs -I`` (leading blanks dropped, empty lines skipped)."""
    lines: dict[str, None] = {}
    for reading in stream.readings:
        for line in reading.decode("utf-8", "replace").split("\n"):
            if line.strip():
                lines[line.lstrip(" \t")] = None
    return [Word(line, quoted=True) for line in list(lines)[:_MAX_FANOUT]]


def _command_output(data: bytes) -> str:
    """A reading as ``$(...)`` yields it: decoded, trailing newlines removed."""
    return data.decode("utf-8", "replace").rstrip("\n")


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
            run.assign(word, persistent=True)
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
