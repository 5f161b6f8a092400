"""The shared shell model of the command guard: findings, option grammars, wrappers, paths.

Everything a rule needs to read a command the way it will run: :class:`Finding`;
GNU-style option parsing (:func:`_opts`, :class:`_Parsed`); command names and the
wrappers peeled off them (:func:`_unwrap`); path judgements (:func:`_critical`,
:func:`_glob_risk`, :func:`_is_device`); :class:`_Invocation`; ``find``'s expression
grammar; how shells and interpreters take program text (:func:`_exec_info`).  It imports
no rule family.
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..security_audit import PERSISTENCE_PATHS, match_sensitive_store
from ..shell import SUBST, Redirect, Script, ShellSyntaxError, Word
from ..shell import parse as parse_shell

HOME = "/home/user"
"""Where ``~`` and ``$HOME`` point during analysis (a fixed value keeps results
deterministic; every ``/home/*`` directory is treated alike anyway)."""

_MAX_DEPTH = 8  # shells inside shells (bash -c "sh -c '...'") before refusing


@dataclass(frozen=True, slots=True)
class Finding:
    """Why a command is refused: the rule id, the offending token and an explanation."""

    rule: str
    token: str
    message: str

    def __post_init__(self) -> None:
        # a token can carry any byte the agent typed; a reason shown to a person or a log
        # must not carry raw control characters (``\x00``, ``\x1b[2J``...)
        for name in ("token", "message"):
            text = getattr(self, name)
            if not text.isprintable():
                object.__setattr__(self, name, _escape_controls(text))

    @property
    def reason(self) -> str:
        """``"<rule>: <message>"``, e.g. ``"fs-destruction: rm -rf targets '/', ..."``."""
        return f"{self.rule}: {self.message}"


def _escape_controls(text: str) -> str:
    """``text`` with every non-printable character but the space written as ``repr`` does."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


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


_MKFS_LIKE = frozenset({"mkudffs", "mkexfatfs", "mkreiserfs", "mkfs", "mkhfs", "mkbtrfs"})


@functools.lru_cache(maxsize=4096)
def _canon(text: str) -> str:
    """The command a word names: basename, lower-cased, version suffix and aliases folded."""
    name = text.rsplit("/", 1)[-1].lower()
    if name.endswith(".exe"):
        name = name[:-4]
    if name in _NAME_ALIASES:
        return _NAME_ALIASES[name]
    if name.startswith(("mkfs.", "newfs_")) or name in _MKFS_LIKE:
        return "mkfs"
    if name.startswith("partclone."):
        return "partclone"
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
    arity: Mapping[str, int] = field(default_factory=dict)  # bwrap: --bind SRC DEST
    after: frozenset[str] = frozenset()  # the command follows one of these only (gdb --args)
    subcommands: frozenset[str] = frozenset()  # only these run a command (poetry run)
    # a lone command word with blanks in it is a shell string (``xterm -e 'make test'``,
    # ``entr -s 'make && ./t'``, ``watchexec 'npm start'``): judged as ``sh -c`` text
    shell_string: bool = False


_TERMINAL = _Wrapper(after=frozenset({"-e"}), shell_string=True)
"""Terminal emulators: ``xterm -e CMD ARGS`` (options before ``-e`` are skipped whatever
they take: ``-hold``, ``-T title``, ``-geometry 80x24``)."""
_TERMINAL_X = _Wrapper(
    after=frozenset({"-e", "-x", "--execute", "--command", "--"}), shell_string=True
)
"""Terminals with ``-x``/``--execute`` (the rest) and ``-e``/``--command`` (one string):
``gnome-terminal -- CMD``, ``xfce4-terminal -x CMD``, ``terminator -e 'CMD'``."""


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
    # programs that run a command given as their arguments (issue 10: wrappers)
    "systemd-run": _Wrapper(
        _opts(
            "pEuMHs",
            "user system scope pty pipe quiet wait collect remain-after-exit no-block same-dir "
            "send-sighup no-ask-password",
            "property unit description slice setenv uid gid nice working-directory machine host "
            "on-active on-boot on-startup on-unit-active on-unit-inactive on-calendar "
            "timer-property path-property socket-property service-type slice-inherit",
            {"p": "property", "u": "unit", "E": "setenv", "M": "machine", "H": "host"},
        ),
        no_command=frozenset({"--help", "--version"}),
    ),
    "unshare": _Wrapper(
        _opts(
            "SGRwl",
            "mount uts ipc net pid user cgroup time fork map-root-user map-current-user "
            "mount-proc kill-child keep-caps",
            "setuid setgid root wd propagation setgroups map-user map-group map-users "
            "map-groups monotonic boottime",
            short_optional="muinpUCT",
        )
    ),
    "nsenter": _Wrapper(
        _opts(
            "tSGe",
            "all preserve-credentials no-fork follow-context",
            "target setuid setgid env",
            {"t": "target"},
            short_optional="muinpUCTrwZ",
        )
    ),
    "strace": _Wrapper(
        _opts("eoOpPsSuEIaXbU", long_arg="output trace signal status string-limit"),
        no_command=frozenset({"-p", "--attach"}),
    ),
    "ltrace": _Wrapper(_opts("aeFlnopsuxAD"), no_command=frozenset({"-p"})),
    "valgrind": _Wrapper(),
    "gdb": _Wrapper(after=frozenset({"--args"})),
    "taskset": _Wrapper(
        _opts(long="all-tasks cpu-list help version"), leading=1, no_command=frozenset({"-p"})
    ),
    "chrt": _Wrapper(
        _opts("TPD", "all-tasks batch deadline fifo idle other rr reset-on-fork max verbose"),
        leading=1,
        no_command=frozenset({"-p", "--pid", "-m", "--max"}),
    ),
    "setpriv": _Wrapper(
        _opts(
            long="clear-groups keep-groups init-groups no-new-privs reset-env dump",
            long_arg="reuid regid ruid rgid euid egid groups inh-caps ambient-caps "
            "bounding-set securebits pdeathsig selinux-label apparmor-profile "
            "landlock-access landlock-rule",
        ),
        no_command=frozenset({"-d", "--dump"}),
    ),
    "firejail": _Wrapper(no_command=frozenset({"--list", "--tree", "--top"})),
    "bwrap": _Wrapper(
        arity={
            **dict.fromkeys(
                _set(
                    "bind ro-bind dev-bind bind-try ro-bind-try dev-bind-try symlink setenv "
                    "file bind-data ro-bind-data chmod"
                ),
                2,
            ),
            **dict.fromkeys(
                _set(
                    "tmpfs proc dev dir chdir unsetenv uid gid hostname lock-file sync-fd "
                    "info-fd json-status-fd seccomp exec-label file-label userns userns2 pidns "
                    "cap-add cap-drop perms size remount-ro argv0 args block-fd "
                    "userns-block-fd add-seccomp-fd overlay-src tmp-overlay ro-overlay"
                ),
                1,
            ),
        }
    ),
    "cpulimit": _Wrapper(
        _opts("lpe", "lazy include-children verbose", "limit pid exe cpu"),
        no_command=frozenset({"-p", "--pid", "-e", "--exe"}),
    ),
    "faketime": _Wrapper(_opts("p"), leading=1),
    "setarch": _Wrapper(leading=1),
    "numactl": _Wrapper(
        _opts(
            "NmCipPw",
            "localalloc all hardware show",
            "cpunodebind membind physcpubind interleave preferred weighted-interleave",
            {"N": "cpunodebind", "m": "membind", "C": "physcpubind", "i": "interleave"},
        ),
        no_command=frozenset({"--hardware", "--show", "-H", "-s"}),
    ),
    "prlimit": _Wrapper(
        _opts("po", "noheadings raw verbose", "pid output", short_optional="cdefilmnqrstuvxy"),
        no_command=frozenset({"-p", "--pid"}),
    ),
    "catchsegv": _Wrapper(),
    "dbus-launch": _Wrapper(),
    "dbus-run-session": _Wrapper(_opts(long_arg="config-file dbus-daemon")),
    "xvfb-run": _Wrapper(
        _opts("efnpswl", "auto-servernum", "error-file auth-file server-num server-args")
    ),
    "ionice-wrapper": _Wrapper(),
    "eatmydata": _Wrapper(),
    "fakeroot": _Wrapper(_opts("lsi")),
    "tsp": _Wrapper(),
    "ts": _Wrapper(),
    "sem": _Wrapper(_opts("j", long_arg="id jobs timeout")),
    "with-contenv": _Wrapper(),
    "s6-setuidgid": _Wrapper(leading=1),
    "gosu": _Wrapper(leading=1),
    "su-exec": _Wrapper(leading=1),
    "chpst": _Wrapper(_opts("ugUbenlmdofcpv")),
    # terminal emulators and file watchers run the command they are given
    **dict.fromkeys(
        ("xterm", "uxterm", "urxvt", "rxvt", "konsole", "x-terminal-emulator", "st", "tilix"),
        _TERMINAL,
    ),
    "alacritty": _Wrapper(after=frozenset({"-e", "--command"}), shell_string=True),
    **dict.fromkeys(
        ("gnome-terminal", "mate-terminal", "xfce4-terminal", "terminator", "lxterminal"),
        _TERMINAL_X,
    ),
    "kitty": _Wrapper(  # kitty [options] [program [args]]
        _opts(
            "Tcodw",
            "hold single-instance detach debug-rendering debug-input debug-keyboard",
            "title config override directory class name session instance-group listen-on "
            "start-as watcher position logo os-window-tag",
            {"T": "title", "c": "config", "o": "override", "d": "directory", "w": "watcher"},
        ),
        shell_string=True,
    ),
    "foot": _Wrapper(_opts("ctTaLwWsoDl", "hold server login-shell", "config term title app-id")),
    "entr": _Wrapper(_opts(), shell_string=True),  # entr [-acdnprsz] utility [args]
    "watchexec": _Wrapper(
        _opts(
            "wefidsEWo",
            "restart clear notify postpone quiet verbose no-vcs-ignore no-project-ignore "
            "no-global-ignore no-default-ignore no-meta no-shell",
            "watch exts filter ignore debounce signal shell env watch-non-recursive "
            "stop-signal stop-timeout delay-run on-busy-update project-origin workdir "
            "filter-file ignore-file fs-events emit-events-to",
            {"w": "watch", "e": "exts", "f": "filter", "i": "ignore", "d": "debounce"},
        ),
        shell_string=True,
    ),
    "reflex": _Wrapper(after=frozenset({"--"}), shell_string=True),
    # tools whose subcommand runs a command in an environment (poetry run, conda run...)
    **dict.fromkeys(("poetry", "pipenv", "hatch"), _Wrapper(subcommands=frozenset({"run"}))),
    "pdm": _Wrapper(_opts("p", long_arg="project"), subcommands=frozenset({"run"})),
    "uv": _Wrapper(
        _opts(
            "pw",
            "no-project isolated frozen locked no-sync all-extras all-packages active no-dev "
            "only-dev script module no-editable",
            "with python package extra group env-file directory project with-requirements "
            "index default-index",
            {"p": "python", "w": "with"},
        ),
        subcommands=frozenset({"run"}),
    ),
    **dict.fromkeys(
        ("conda", "mamba", "micromamba"),
        _Wrapper(
            _opts(
                "np",
                "no-capture-output live-stream debug-wrapper-scripts",
                "name prefix cwd",
                {"n": "name", "p": "prefix"},
            ),
            subcommands=frozenset({"run"}),
        ),
    ),
    **dict.fromkeys(
        ("bundle", "pyenv", "rbenv", "nodenv", "goenv", "asdf"),
        _Wrapper(subcommands=frozenset({"exec"})),
    ),
    "direnv": _Wrapper(leading=1, subcommands=frozenset({"exec"})),
    "aws-vault": _Wrapper(_opts(long_arg="duration region"), 1, subcommands=frozenset({"exec"})),
    **dict.fromkeys(("mise", "rtx"), _Wrapper(after=frozenset({"--"}), subcommands=_set("exec x"))),
    **dict.fromkeys(
        ("op", "doppler", "infisical"), _Wrapper(after=frozenset({"--"}), subcommands=_set("run"))
    ),
    "dotenv": _Wrapper(after=frozenset({"--"})),
    "distrobox": _Wrapper(after=frozenset({"--"}), subcommands=_set("enter")),
    "nix": _Wrapper(after=frozenset({"-c", "--command"}), subcommands=_set("develop shell")),
    "toolbox": _Wrapper(_opts("cr", long_arg="container release distro"), subcommands=_set("run")),
    "flatpak-spawn": _Wrapper(
        _opts(
            long="host clear-env watch-bus latest-version sandbox no-network",
            long_arg="env forward-fd directory app-path usr-path",
        )
    ),
    "host-spawn": _Wrapper(),
    "distrobox-host-exec": _Wrapper(),
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
            args = words[1:]
            if wrapper.subcommands:  # poetry run CMD; poetry install runs nothing
                if not args or args[0].text not in wrapper.subcommands:
                    break
                args = args[1:]
            if wrapper.after or wrapper.arity:
                rest = _skip_options(args, wrapper)
                if not rest:
                    break
                words = _shell_string(rest) if wrapper.shell_string else rest
                layers.append(words)
                continue
            parsed = _parse_opts(args, wrapper.opts, stop_at_operand=True)
            if name == "sudo" and parsed.has("-e", "--edit"):  # sudo -e FILE is sudoedit FILE
                words = [Word("sudoedit"), *parsed.operands]
                layers.append(words)
                break
            if parsed.has(*wrapper.no_command):
                return None
            rest = parsed.operands[wrapper.leading :]
            if rest and rest[0].text in ("-", "--"):  # "env -": an empty environment
                rest = rest[1:]
            if wrapper.assignments:
                rest = _take_assignments(rest, env)
            split = parsed.value("--split-string")
            if split is not None:
                rest = _split_words(split.text) + rest
            if not rest and parsed.has(*_SHELL_FLAGS.get(name, ())):
                rest = [Word("sh")]
            if wrapper.shell_string:
                rest = _shell_string(rest)
        if not rest:
            break
        words = rest
        layers.append(words)
    found.name = _canon(words[0].text)
    found.args = list(words[1:])
    return found


def _shell_string(words: list[Word]) -> list[Word]:
    """``['make test']`` -> ``sh -c 'make test'``: one command word with blanks in it is
    run by a shell (or would fail as a file name, so judging it as one costs nothing)."""
    if len(words) == 1 and any(c in words[0].text for c in " \t\n;|&"):
        return [Word("sh"), Word("-c"), words[0]]
    return words


def _skip_options(args: list[Word], wrapper: _Wrapper) -> list[Word]:
    """The command of a wrapper with an irregular grammar: after ``wrapper.after``
    (``gdb --args``), or after options that take ``wrapper.arity`` values (``bwrap``)."""
    if wrapper.after:
        k = next((k for k, w in enumerate(args) if w.text in wrapper.after), len(args))
        return args[k + 1 :]
    i = 0
    while i < len(args) and args[i].text.startswith("--"):
        if args[i].text == "--":
            return args[i + 1 :]
        i += 1 + wrapper.arity.get(args[i].text[2:].partition("=")[0], 0)
    return args[i:]


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
_APP_ROOTS = frozenset({"opt", "srv"})
"""System directories whose children each belong to one application (``/opt/<app>``,
``/srv/<site>``): removing a child is an uninstall, not damage to the system.  The
directory itself stays critical, as do the children of every other system directory
(``/usr/local``, ``/usr/lib``, ``/etc/ssl``, ``/var/lib``); deeper paths
(``/var/lib/<app>``, ``/usr/local/<app>``) are not critical."""
_TEMP_DIRS = frozenset({"/tmp", "/var/tmp", "/dev/shm", "/private/tmp"})
_SAFE_DEVICES = _set(
    "/dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/stdin /dev/stdout "
    "/dev/stderr /dev/tty /dev/console /dev/ptmx"
)
_SAFE_DEVICE_DIRS = ("/dev/fd/", "/dev/pts/", "/dev/shm/", "/dev/mqueue/")
_NET_DEVICES = ("/dev/tcp/", "/dev/udp/")
_CHAR_DEVICES = re.compile(
    r"^/dev/(?:dsp\d*|audio\d*|snd/[^/]+|fb\d+|lp\d+|usb/lp\d+"
    r"|tty(?:S|USB|ACM|AMA)\d+)$"
)
"""Character devices that hold no filesystem -- sound, framebuffer, printer and serial
ports: writing one (``dd if=beep.raw of=/dev/dsp``, flashing a board over
``/dev/ttyUSB0``) destroys no data.  Block devices (``sd*``, ``nvme*``, ``mmcblk*``,
``loop*``, ``dm-*``, ``mapper/*``, ``disk/by-*``, ``mtd*``...) and every name not listed
here stay devices: an unknown ``/dev`` name is refused rather than guessed harmless."""
_SYSTEM_FILES = re.compile(
    r"^(?:/private)?/etc/(?:passwd|shadow|gshadow|group|sudoers|master\.passwd)-?$"
    r"|^(?:/private)?/etc/sudoers\.d(?:/|$)"
)
_PERSISTENCE = PERSISTENCE_PATHS
"""Where a write plants code that runs later (shared with the file tools' guard)."""


def _persistence(path: str) -> bool:
    """Whether writing ``path`` (resolved) plants code that runs later (see
    :data:`_PERSISTENCE`)."""
    return _PERSISTENCE.match(path.lower()) is not None


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
            if parts[0] == "root" and (store := _home_store(parts)) is not None:
                return store  # /root/.ssh: say what it is, not where it lies
            if parts[0] in _HOME_ROOTS:
                return "a home directory"
            if parts[0] in _SYSTEM_DIRS and parts[0] not in _APP_ROOTS:
                return "a system directory"
        return _home_store(parts)
    if path == ".":
        return "the working directory"
    if all(part == ".." for part in path.split("/")):
        return "a parent of the working directory"
    return None


_HOME_WHOLES = frozenset({(".config",), (".local",), (".local", "share")})
"""Home directories whose children many programs keep their settings and data in: each
child may go (``~/.config/nvim``), the whole may not."""


def _home_store(parts: Sequence[str]) -> str | None:
    """Describe a home directory's credential or key store, or its settings as a whole
    (``parts``: a lowercase absolute path split at ``/``)."""
    if parts[0] in _HOME_ROOTS and len(parts) > 2:
        rest = [p for p in parts[2:] if p]
    elif parts[0] == "root" and len(parts) > 1:
        rest = [p for p in parts[1:] if p]
    else:
        return None
    if tuple(rest) in _HOME_WHOLES:
        return "a home directory holding every program's settings or data"
    found = match_sensitive_store(HOME + "/" + "/".join(rest), home=HOME)
    return None if found is None else f"a credential or key store ({found.description})"


def _keyed_values(args: Sequence[Word], keys: Sequence[str]) -> list[Word]:
    """Values of ``dd``-style ``key=value`` operands for any of ``keys``."""
    out: list[Word] = []
    for word in args:
        key, eq, value = word.text.partition("=")
        if eq and key in keys:
            out.append(_derived(value))
    return out


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


_UNKNOWN_PART = re.compile(  # ${...}, $NAME, $1, $(...) kept as source text, `...`
    r"\$\{[^{}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*#?$!-]|"
    + SUBST
    + r"|\$\((?:[^()]|\([^()]*\))*\)|`[^`]*`"
)


_SYSTEM_NAMES = _SYSTEM_DIRS | _HOME_ROOTS


def _unknown_risk(path: str) -> str | None:
    """What a recursive delete of ``path`` could reach when part of it is known only at
    run time (``$X``, ``$(cmd)``): None when the known part bounds it.

    Each unknown part is read as ``*`` (any text, the empty text included).  A path that
    *starts* unknown (``$X``, ``"$(cmd)"``, ``$X/*``) could be anything and is refused,
    unless a literal directory name follows and the last name is no system directory
    (``$BUILD/out``, ``$ROOT/build/*.pyc``, ``$(git rev-parse --show-toplevel)/dist``:
    whatever the unknown part is, only what is in or named ``out``/``build`` goes).  A
    known prefix decides the rest: ``./build/$X``, ``node_modules/$P``, ``/tmp/$X`` stay
    below it and pass; ``/$X`` and ``$HOME/$X`` can be ``/etc`` or the
    home directory itself and are refused.
    """
    if "$" not in path and SUBST not in path:
        return None
    pattern = _UNKNOWN_PART.sub("*", path)
    if pattern == path:  # a lone "$" is a literal dollar sign
        return None
    if pattern.startswith("*"):
        parts = pattern.rstrip("/").split("/")[1:]
        named = any(p not in ("", ".", "..") and not _GLOB_CHARS.search(p) for p in parts)
        if named and parts[-1] not in (".", "..") and parts[-1].lower() not in _SYSTEM_NAMES:
            return None  # below a literal name: $ROOT/build/*.pyc, $X/out
        return "a target known only at run time"
    risk = _glob_risk(pattern, recursive=True, cwd_counts=True)
    return None if risk is None else f"a target known only at run time ({risk})"


def _is_device(path: str) -> bool:
    return (
        path.startswith("/dev/")
        and len(path) > 5
        and path not in _SAFE_DEVICES
        and not path.startswith(_SAFE_DEVICE_DIRS)
        and not path.startswith(_NET_DEVICES)
        and _CHAR_DEVICES.match(path) is None
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
    # where ``read`` takes its input: the commands piped into it, the loop's redirections
    stdin: tuple[_Invocation | None, ...] = ()
    loop_input: tuple[Redirect, ...] = ()

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


def _verb(inv: _Invocation, parsed: _Parsed) -> str:
    return " ".join([inv.shown, *(w.text for w in parsed.options)])


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
        """What ``{}`` stands for: ``root/*`` for an unfiltered walk (every entry), each
        candidate otherwise -- all of them: the callers charge each judgement to the
        analysis budget."""
        if self.unfiltered:
            return [
                Word(w.text.rstrip("/") + "/*", tilde=w.tilde, glob=True) for w in self.candidates
            ]
        return list(self.candidates)


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


# -- code execution: shells, interpreters, downloads ------------------------------------------

_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "csh", "tcsh"})
_DOWNLOADERS = _set(
    "curl wget fetch aria2c axel http https xh xhs lwp-request lwp-download get ftp tftp"
)


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
    "bun": _Interpreter(
        "ep", short_arg="r", long_inline=frozenset({"eval", "print"}), long_arg=frozenset({"cwd"})
    ),
    "lua": _Interpreter("e", short_arg="l"),
    "rscript": _Interpreter("e"),
    "julia": _Interpreter("e", short_arg="JCOLp", backticks=True),
}


@dataclass(frozen=True, slots=True)
class _Exec:
    """How a command takes program text."""

    kind: str  # "shell", "interpreter", "eval", "source", "crontab" (schedule lines)
    code: tuple[Word, ...]  # words holding program text or naming the program file
    inline: str | None  # program text given on the command line
    stdin: bool  # the program is read from standard input
    params: tuple[Word, ...] = ()  # sh -c SCRIPT $0 $1...: the script's parameters


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
        return _Exec(
            "shell", operands[:1], operands[0].text if operands else "", False, operands[1:]
        )
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
    if inv.name == "deno" and inv.args and inv.args[0].text == "eval":  # deno eval CODE
        code = next((w for w in inv.args[1:] if not w.text.startswith("-")), None)
        if code is None:
            return None
        return _Exec("interpreter", (code,), code.text, False)
    if inv.name == "eval":
        return _Exec("eval", tuple(inv.args), " ".join(w.text for w in inv.args), False)
    if inv.name in ("source", "."):
        stdin = bool(inv.args) and inv.args[0].text == "/dev/stdin"
        return _Exec("source", tuple(inv.args[:1]), None, stdin)
    if inv.name in ("at", "batch"):  # the job's commands come from stdin or -f FILE
        parsed = _parse_opts(inv.args, _AT)
        if parsed.has(*_AT_NO_JOB):
            return None
        job = parsed.value("-f")
        if job is not None and job.text not in ("-", "/dev/stdin"):
            return _Exec("shell", (job,), None, False)
        return _Exec("shell", (), None, True)
    if inv.name == "crontab":  # a new crontab from stdin ("-" or nothing) or a file
        parsed = _parse_opts(inv.args, _CRONTAB)
        if parsed.has("-l", "-r", "-e", "-T", "-V"):
            return None
        table = parsed.operands[:1]
        if table and table[0].text not in ("-", "/dev/stdin"):
            return _Exec("crontab", tuple(table), None, False)
        return _Exec("crontab", (), None, True)
    if inv.name == "ssh":  # ssh HOST (a login shell) or ssh HOST bash: the script on stdin
        remote = _parse_opts(inv.args, _SSH_OPTS, stop_at_operand=True).operands[1:]
        if remote and remote[0].text == "--":
            remote = remote[1:]
        if not remote or (
            _canon(remote[0].text) in _SHELLS
            and not any(w.text.startswith("-") and "c" in w.text for w in remote[1:])
            and all(w.text.startswith("-") for w in remote[1:])
        ):
            return _Exec("shell", (), None, True)
        return None
    if inv.name == "sqlite3":  # SQL and dot-commands: operands after the database, stdin
        operands = _sqlite_operands(inv.args)
        if len(operands) > 1:
            sql = "\n".join(operands[1:])  # each argument is a separate statement
            return _Exec("interpreter", (Word(sql),), sql, False)
        return _Exec("interpreter", (), None, True)
    return None


_SSH_OPTS = _opts("BbcDEeFIiJLlmOoPpQRSWw")
_AT = _opts("fqtT")
_AT_NO_JOB = frozenset({"-l", "-r", "-d", "-c", "-V"})
_CRONTAB = _opts("us")
_SQLITE_ARG = _set("-cmd -init -separator -nullvalue -newline -vfs -maxsize -mmap -A -escape")


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


# -- program text and command names known at run time ------------------------------------

_MAX_READINGS = 8  # alternative texts of one program (shells differ on escapes)

_DYNAMIC_NAME = re.compile(r"\$[A-Za-z_0-9@*#?$!{(-]")
_WHOLE_EXPANSION = re.compile(
    r"\s*(?:\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9@*]|\$\{[^{}]*\}|" + SUBST + r")\s*"
)


def _dynamic_name(text: str) -> bool:
    """Whether a command word names its command only at run time: an unresolved variable
    or substitution in its last path component (``$CMD``, ``$(echo rm)``, ``${X:-rm}``).
    ``$HOME/bin/tool`` and ``"$(npm bin)/eslint"`` name ``tool`` and ``eslint``."""
    if "$" not in text and SUBST not in text:
        return False
    last = text.rsplit("/", 1)[-1]
    return SUBST in last or "}" in last or _DYNAMIC_NAME.search(last) is not None


def _script_snippet(script: Script, limit: int = 60) -> str:
    text = "; ".join(_snippet(cmd.words, limit) for cmd in script.commands if cmd.words)
    return text if len(text) <= limit else text[: limit - 3] + "..."
