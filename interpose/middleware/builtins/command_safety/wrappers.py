"""Command names and the wrappers peeled off them: :func:`canon` folds a word to
the command it names (basename, version suffix, aliases), :func:`unwrap` peels ``sudo``,
``env``, ``xargs``, ``timeout``, terminals, container and sandbox runners... off a
command.

Most of this module is the :data:`WRAPPERS` table (one entry per wrapper and its option
grammar): a data table, read as one."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from ..shell import ShellSyntaxError, Word
from ..shell import parse as parse_shell
from .options import Opts, opts, parse_opts, word_set

ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
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
    "gmake": "make",
    "links2": "links",
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
def canon(text: str) -> str:
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

    opts: Opts = field(default_factory=Opts)
    leading: int = 0  # operands before the command (timeout DURATION, chroot DIR)
    assignments: bool = False  # NAME=value words may precede the command (env, sudo)
    no_command: frozenset[str] = frozenset()  # flags after which nothing is run
    arity: Mapping[str, int] = field(default_factory=dict)  # bwrap: --bind SRC DEST
    after: frozenset[str] = frozenset()  # the command follows one of these only (gdb --args)
    subcommands: frozenset[str] = frozenset()  # only these run a command (poetry run)
    # a lone command word with blanks in it is a shell string (``xterm -e 'make test'``,
    # ``entr -s 'make && ./t'``, ``watchexec 'npm start'``): judged as ``sh -c`` text
    shell_string: bool = False
    reparse: bool = False  # options may follow the leading operands (setarch ARCH -R CMD)


_TERMINAL = _Wrapper(after=frozenset({"-e"}), shell_string=True)
"""Terminal emulators: ``xterm -e CMD ARGS`` (options before ``-e`` are skipped whatever
they take: ``-hold``, ``-T title``, ``-geometry 80x24``)."""
_TERMINAL_X = _Wrapper(
    after=frozenset({"-e", "-x", "--execute", "--command", "--"}), shell_string=True
)
"""Terminals with ``-x``/``--execute`` (the rest) and ``-e``/``--command`` (one string):
``gnome-terminal -- CMD``, ``xfce4-terminal -x CMD``, ``terminator -e 'CMD'``."""


WRAPPERS: dict[str, _Wrapper] = {
    "sudo": _Wrapper(  # "sudo -s"/"sudo -i" alone: see _SHELL_FLAGS
        opts(
            "ugphCrtUDTR",
            "preserve-env login shell list validate edit non-interactive background stdin "
            "set-home reset-timestamp remove-timestamp version help askpass",
            "user group host prompt close-from role type other-user chdir command-timeout chroot",
            {"D": "chdir"},
        ),
        assignments=True,
        no_command=frozenset(
            {"-l", "--list", "-v", "--validate", "-V", "--version", "-K", "-e", "--edit"}
        ),
    ),
    "doas": _Wrapper(opts("uC")),
    "pkexec": _Wrapper(opts(long="disable-internal-agent help version", long_arg="user")),
    "env": _Wrapper(
        opts(
            "uCSP",
            "ignore-environment null debug help version",
            "unset chdir split-string",
            {"S": "split-string", "C": "chdir"},
        ),
        assignments=True,
    ),
    "command": _Wrapper(no_command=frozenset({"-v", "-V"})),
    "builtin": _Wrapper(),
    "exec": _Wrapper(opts("a")),
    "nohup": _Wrapper(),
    "time": _Wrapper(opts("of", "append verbose portability quiet help version", "output format")),
    "nice": _Wrapper(opts("n", "help version", "adjustment")),
    "timeout": _Wrapper(
        opts("sk", "preserve-status foreground verbose help version", "signal kill-after"),
        leading=1,
    ),
    "stdbuf": _Wrapper(opts("ioe", "help version", "input output error")),
    "ionice": _Wrapper(
        opts("cnpPu", "ignore help version", "class classdata pid pgid uid"),
        no_command=frozenset({"-p", "-P", "-u", "--pid", "--pgid", "--uid"}),
    ),
    "chroot": _Wrapper(opts(long="skip-chdir help version", long_arg="userspec groups"), 1),
    "setsid": _Wrapper(),
    "busybox": _Wrapper(),
    "toybox": _Wrapper(),
    "chronic": _Wrapper(),
    "unbuffer": _Wrapper(),
    "caffeinate": _Wrapper(opts("tw")),
    # programs that run a command given as their arguments (issue 10: wrappers)
    "systemd-run": _Wrapper(
        opts(
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
        opts(
            "SGRwl",
            "mount uts ipc net pid user cgroup time fork map-root-user map-current-user "
            "mount-proc kill-child keep-caps",
            "setuid setgid root wd propagation setgroups map-user map-group map-users "
            "map-groups monotonic boottime",
            short_optional="muinpUCT",
        )
    ),
    "nsenter": _Wrapper(
        opts(
            "tSGe",
            "all preserve-credentials no-fork follow-context",
            "target setuid setgid env",
            {"t": "target"},
            short_optional="muinpUCTrwZ",
        )
    ),
    "strace": _Wrapper(
        opts("eoOpPsSuEIaXbU", long_arg="output trace signal status string-limit"),
        no_command=frozenset({"-p", "--attach"}),
    ),
    "ltrace": _Wrapper(opts("aeFlnopsuxAD"), no_command=frozenset({"-p"})),
    "valgrind": _Wrapper(),
    "gdb": _Wrapper(after=frozenset({"--args"})),
    "taskset": _Wrapper(
        opts(long="all-tasks cpu-list help version"), leading=1, no_command=frozenset({"-p"})
    ),
    "chrt": _Wrapper(
        opts("TPD", "all-tasks batch deadline fifo idle other rr reset-on-fork max verbose"),
        leading=1,
        no_command=frozenset({"-p", "--pid", "-m", "--max"}),
    ),
    "setpriv": _Wrapper(
        opts(
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
                word_set(
                    "bind ro-bind dev-bind bind-try ro-bind-try dev-bind-try symlink setenv "
                    "file bind-data ro-bind-data chmod"
                ),
                2,
            ),
            **dict.fromkeys(
                word_set(
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
        opts("lpe", "lazy include-children verbose", "limit pid exe cpu"),
        no_command=frozenset({"-p", "--pid", "-e", "--exe"}),
    ),
    "faketime": _Wrapper(opts("p"), leading=1),
    "setarch": _Wrapper(opts(long="uname-2.6 verbose 3gb 4gb"), leading=1, reparse=True),
    "numactl": _Wrapper(
        opts(
            "NmCipPw",
            "localalloc all hardware show",
            "cpunodebind membind physcpubind interleave preferred weighted-interleave",
            {"N": "cpunodebind", "m": "membind", "C": "physcpubind", "i": "interleave"},
        ),
        no_command=frozenset({"--hardware", "--show", "-H", "-s"}),
    ),
    "prlimit": _Wrapper(
        opts("po", "noheadings raw verbose", "pid output", short_optional="cdefilmnqrstuvxy"),
        no_command=frozenset({"-p", "--pid"}),
    ),
    "catchsegv": _Wrapper(),
    "cgexec": _Wrapper(opts("g", "sticky")),  # cgexec -g CONTROLLERS:PATH CMD
    "rlwrap": _Wrapper(
        opts(
            "bCDefFgHlMOPqsStwz",
            "ansi-colour-aware case-insensitive complete-filenames no-children no-warnings "
            "one-shot only-cook pass-sigint-as-sigterm polling remember renice skip-setctty "
            "version help",
            "break-chars command-name histsize extra-char-after-completion file "
            "history-format forget-matching history-filename logfile multi-line-ext "
            "pre-given quote-characters substitute-prompt set-term-name wordchars filter",
            short_optional="apm",  # -a[PROMPT], -p[COLOUR], -m[NEWLINE]
        ),
    ),
    "ifne": _Wrapper(opts()),  # ifne [-n] CMD: runs CMD when stdin is not empty
    "trickle": _Wrapper(opts("duwtln")),
    "nocache": _Wrapper(),
    "daemonize": _Wrapper(opts("ceEoplu")),
    **dict.fromkeys(
        ("linux32", "linux64", "i386", "x86_64", "i686", "uname26"),
        _Wrapper(opts(long="uname-2.6 verbose 3gb 4gb")),
    ),
    "with-lock-ex": _Wrapper(opts(), leading=1),
    "lckdo": _Wrapper(opts("W"), leading=1),
    "setlock": _Wrapper(opts(), leading=1),
    "setuidgid": _Wrapper(leading=1),
    "envuidgid": _Wrapper(leading=1),
    "envdir": _Wrapper(leading=1),
    "softlimit": _Wrapper(opts("mdosalfpcrt")),
    **dict.fromkeys(
        (
            "run-one",
            "run-this-one",
            "keep-one-running",
            "run-one-constantly",
            "run-one-until-success",
            "run-one-until-failure",
        ),
        _Wrapper(),
    ),
    "tini": _Wrapper(opts("pe")),
    "dumb-init": _Wrapper(opts("r", "single-child verbose version help", "rewrite")),
    "catatonit": _Wrapper(),
    "ssh-agent": _Wrapper(opts("aEPtO"), no_command=frozenset({"-k", "-l"})),
    "npx": _Wrapper(after=frozenset({"-c", "--call"}), shell_string=True),
    "npm": _Wrapper(
        after=frozenset({"-c", "--call"}), subcommands=word_set("exec x"), shell_string=True
    ),
    "bun": _Wrapper(subcommands=frozenset({"exec"}), shell_string=True),  # bun exec 'CMD'
    "dtach": _Wrapper(opts("Acnaper"), no_command=frozenset({"-a", "-p"})),  # dtach -n SOCK CMD
    "abduco": _Wrapper(opts("e"), leading=1),  # abduco -n NAME CMD
    "systemd-inhibit": _Wrapper(opts(long="list help version", long_arg="what who why mode")),
    "run0": _Wrapper(
        opts(
            "uD",
            "no-ask-password machine background",
            "user group nice chdir setenv property unit description slice slice-inherit",
            {"u": "user", "D": "chdir"},
        )
    ),
    "sshpass": _Wrapper(opts("pfdP")),  # sshpass -p PASSWORD CMD
    **dict.fromkeys(("torify", "tsocks", "torsocks", "proxychains"), _Wrapper(opts("f"))),
    "nsjail": _Wrapper(after=frozenset({"--"})),
    "proot": _Wrapper(opts("rbmwvq", long_arg="rootfs bind mount cwd verbose qemu")),
    "fakechroot": _Wrapper(opts("ec", long_arg="environment config-dir")),
    "sandbox-exec": _Wrapper(opts("fpD")),
    "cross-env": _Wrapper(assignments=True),  # cross-env NODE_ENV=test CMD
    "env-cmd": _Wrapper(
        opts(
            "fer",
            "fallback no-override silent use-shell expand-envs verbose",
            "file environments rc-file",
            {"f": "file", "e": "environments", "r": "rc-file"},
        )
    ),
    "retry": _Wrapper(after=frozenset({"--"})),  # retry [--times=N] -- CMD
    "dbus-launch": _Wrapper(),
    "dbus-run-session": _Wrapper(opts(long_arg="config-file dbus-daemon")),
    "xvfb-run": _Wrapper(
        opts("efnpswl", "auto-servernum", "error-file auth-file server-num server-args")
    ),
    "ionice-wrapper": _Wrapper(),
    "eatmydata": _Wrapper(),
    "fakeroot": _Wrapper(opts("lsi")),
    "tsp": _Wrapper(),
    "ts": _Wrapper(),
    "sem": _Wrapper(opts("j", long_arg="id jobs timeout")),
    "with-contenv": _Wrapper(),
    "s6-setuidgid": _Wrapper(leading=1),
    "gosu": _Wrapper(leading=1),
    "su-exec": _Wrapper(leading=1),
    "chpst": _Wrapper(opts("ugUbenlmdofcpv")),
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
        opts(
            "Tcodw",
            "hold single-instance detach debug-rendering debug-input debug-keyboard",
            "title config override directory class name session instance-group listen-on "
            "start-as watcher position logo os-window-tag",
            {"T": "title", "c": "config", "o": "override", "d": "directory", "w": "watcher"},
        ),
        shell_string=True,
    ),
    "foot": _Wrapper(opts("ctTaLwWsoDl", "hold server login-shell", "config term title app-id")),
    "entr": _Wrapper(opts(), shell_string=True),  # entr [-acdnprsz] utility [args]
    "watchexec": _Wrapper(
        opts(
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
    **dict.fromkeys(("pnpm", "yarn"), _Wrapper(subcommands=frozenset({"exec"}))),
    "pdm": _Wrapper(opts("p", long_arg="project"), subcommands=frozenset({"run"})),
    "uv": _Wrapper(
        opts(
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
            opts(
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
    "aws-vault": _Wrapper(opts(long_arg="duration region"), 1, subcommands=frozenset({"exec"})),
    **dict.fromkeys(
        ("mise", "rtx"), _Wrapper(after=frozenset({"--"}), subcommands=word_set("exec x"))
    ),
    **dict.fromkeys(
        ("op", "doppler", "infisical"),
        _Wrapper(after=frozenset({"--"}), subcommands=word_set("run")),
    ),
    "dotenv": _Wrapper(after=frozenset({"--"})),
    "dotenvx": _Wrapper(after=frozenset({"--"}), subcommands=word_set("run")),
    "guix": _Wrapper(after=frozenset({"--"}), subcommands=word_set("shell environment")),
    **dict.fromkeys(("pixi", "devbox", "rye"), _Wrapper(subcommands=word_set("run exec"))),
    "distrobox": _Wrapper(after=frozenset({"--"}), subcommands=word_set("enter")),
    "nix": _Wrapper(after=frozenset({"-c", "--command"}), subcommands=word_set("develop shell")),
    "toolbox": _Wrapper(
        opts("cr", long_arg="container release distro"), subcommands=word_set("run")
    ),
    "flatpak-spawn": _Wrapper(
        opts(
            long="host clear-env watch-bus latest-version sandbox no-network",
            long_arg="env forward-fd directory app-path usr-path",
        )
    ),
    "host-spawn": _Wrapper(),
    "distrobox-host-exec": _Wrapper(),
}

_SHELL_FLAGS = {"sudo": frozenset({"-s", "--shell", "-i", "--login"})}
"""Wrapper flags that start a shell when no command follows."""

_XARGS = opts(
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
    while words and ASSIGNMENT.match(words[0].text):
        name, _, value = words[0].text.partition("=")
        env[name.rstrip("+")] = value
        words = words[1:]
    return words


def unwrap(words: list[Word]) -> _Unwrapped | None:
    """Peel wrappers off ``words``; None when nothing is executed (``command -v rm``)."""
    name = canon(words[0].text)
    if name != "xargs" and name not in WRAPPERS:  # most commands: nothing to peel
        return _Unwrapped(name, list(words[1:]), {}, [words])
    env: dict[str, str] = {}
    layers = [words]
    found = _Unwrapped("", [], env, layers)
    for _ in range(16):
        name = canon(words[0].text)
        rest: list[Word]
        if name == "xargs":
            parsed = parse_opts(words[1:], _XARGS, stop_at_operand=True)
            if parsed.has("--replace"):
                value = parsed.value("--replace")
                found.xargs_replace = value.text if value is not None and value.text else "{}"
            found.via_xargs = True
            rest = parsed.operands or [Word("echo")]
        else:
            wrapper = WRAPPERS.get(name)
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
            parsed = parse_opts(args, wrapper.opts, stop_at_operand=True)
            if name == "sudo" and parsed.has("-e", "--edit"):  # sudo -e FILE is sudoedit FILE
                words = [Word("sudoedit"), *parsed.operands]
                layers.append(words)
                break
            if parsed.has(*wrapper.no_command):
                return None
            rest = parsed.operands[wrapper.leading :]
            if wrapper.reparse:
                rest = parse_opts(rest, wrapper.opts, stop_at_operand=True).operands
            if rest and rest[0].text in ("-", "--"):  # "env -": an empty environment
                rest = rest[1:]
            if wrapper.assignments:
                rest = _take_assignments(rest, env)
            split = parsed.value("--split-string")
            if split is not None:
                rest = split_words(split.text) + rest
            if not rest and parsed.has(*_SHELL_FLAGS.get(name, ())):
                rest = [Word("sh")]
            if wrapper.shell_string:
                rest = _shell_string(rest)
        if not rest:
            break
        words = rest
        layers.append(words)
    found.name = canon(words[0].text)
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


def split_words(text: str) -> list[Word]:
    """Words of a string the way ``env -S`` splits it (shell quoting rules)."""
    try:
        script = parse_shell(text)
    except ShellSyntaxError:
        return [Word(part) for part in text.split()]
    return [w for cmd in script.commands[:1] for w in (*cmd.assignments, *cmd.words)]
