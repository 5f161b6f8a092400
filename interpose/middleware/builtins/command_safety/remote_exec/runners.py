"""Commands that run a command or a shell string, handed to the shared analysis:
``su``/``runuser -c``, ``sg``, ``ssh``, ``watch``, ``flock``, ``script``, ``nodemon``,
``expect``, ``nix-shell``, ``vagrant``, ``tmux``, ``screen``, ``parallel``, benchmark and
process runners whose operands are shell strings (``hyperfine``, ``concurrently``),
``start-stop-daemon --start`` and ``ip netns exec``.  (The runners with a regular
grammar, a command given as their arguments, are the ``WRAPPERS`` table of
:mod:`..wrappers`.)"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...shell import Word
from ..invocation import Invocation
from ..model import Finding
from ..options import opts, parse_opts, word_set
from ..run import Run

_SU = opts(
    "cgGswu",
    "login preserve-environment pty help version",
    "command session-command group supp-group shell whitelist-environment user",
    {"c": "command", "u": "user"},
)
SSH = opts("BbcDEeFIiJLlmOoPpQRSWw")
_WATCH = opts(
    "nq",
    "differences beep errexit chgexit exec no-title precise color",
    "interval",
    {"x": "exec"},
)
_FLOCK = opts(
    "wEc",
    "shared exclusive unlock nonblock close no-fork verbose",
    "timeout conflict-exit-code command",
    {"c": "command"},
)
_SCRIPT = opts("cEIOTBm", "append quiet flush return", "command", {"c": "command"})


def rule_su(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, _SU)
    script = parsed.value("--command", "--session-command")
    if script is not None:
        return run.nested(script.text, f"{inv.shown} -c script")
    if parsed.value("-u", "--user") is not None:  # runuser -u USER [--] COMMAND ARGS...
        command = parse_opts(inv.args, _SU, stop_at_operand=True).operands
        return run.argv(command, inv.name) if command else None
    return None


_SSH_COMMAND_OPTIONS = frozenset({"proxycommand", "localcommand", "knownhostscommand"})


def ssh_options(inv: Invocation, run: Run, values: Sequence[Word]) -> Finding | None:
    """``-o ProxyCommand=...`` (and LocalCommand, KnownHostsCommand): run by a local shell."""
    for word in values:
        key, _, value = word.text.replace("=", " ", 1).partition(" ")
        if key.lower() in _SSH_COMMAND_OPTIONS and value.strip():
            found = run.nested(value.strip(), f"{inv.shown} -o {key}", lenient=True)
            if found is not None:
                return found
    return None


def rule_ssh(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, SSH, stop_at_operand=True)
    found = ssh_options(inv, run, [w for flag, w in parsed.values if flag == "-o"])
    if found is not None:
        return found
    remote = parsed.operands[1:]
    if remote and remote[0].text == "--":
        remote = remote[1:]
    if not remote:
        return None
    return run.nested(" ".join(w.text for w in remote), "ssh remote command", lenient=True)


def rule_watch(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, _WATCH, stop_at_operand=True)
    if parsed.has("--exec"):
        return run.argv(parsed.operands, "watch -x")
    return run.nested(" ".join(w.text for w in parsed.operands), "watch command")


def rule_flock(inv: Invocation, run: Run) -> Finding | None:
    parsed = parse_opts(inv.args, _FLOCK, stop_at_operand=True)
    script = parsed.value("--command")
    rest = parsed.operands[1:]
    if script is None and len(rest) > 1 and rest[0].text in ("-c", "--command"):
        script = rest[1]  # "flock FILE -c CMD": flock looks for -c right after the file
    if script is not None:
        return run.nested(script.text, "flock -c script")
    return run.argv(rest, "flock")


def rule_script(inv: Invocation, run: Run) -> Finding | None:
    script = parse_opts(inv.args, _SCRIPT).value("--command")
    return None if script is None else run.nested(script.text, "script -c command")


def rule_nodemon(inv: Invocation, run: Run) -> Finding | None:
    """``nodemon --exec 'CMD' app.js``: the watcher runs CMD through a shell."""
    args = [w.text for w in inv.args]
    for k, t in enumerate(args):
        if t in ("--exec", "-x") and k + 1 < len(args):
            command = args[k + 1]
        elif t.startswith("--exec="):
            command = t.partition("=")[2]
        else:
            continue
        found = run.nested(command, "nodemon --exec command")
        if found is not None:
            return found
    return None


_EXPECT_SPAWN = re.compile(r"(?:^|[;\n\[{])\s*spawn\s+((?:-\S+\s+)*)([^;\n\]}]+)")


def rule_expect(inv: Invocation, run: Run) -> Finding | None:
    """``expect -c 'spawn CMD ARGS; ...'``: each spawned command runs (its Tcl words are
    read with shell quoting, close enough for the commands an agent spawns)."""
    args = [w.text for w in inv.args]
    scripts = [args[k + 1] for k, t in enumerate(args[:-1]) if t == "-c"]
    for script in scripts:
        for m in _EXPECT_SPAWN.finditer(script):
            found = run.nested(m.group(2), "expect spawn command")
            if found is not None:
                return found
    return None


def rule_nix_shell(inv: Invocation, run: Run) -> Finding | None:
    """``nix-shell --run CMD`` / ``--command CMD``: a shell command line."""
    words = inv.args
    for k, word in enumerate(words[:-1]):
        if word.text in ("--run", "--command"):
            return run.nested(words[k + 1].text, f"nix-shell {word.text} command")
    return None


def rule_vagrant(inv: Invocation, run: Run) -> Finding | None:
    """``vagrant ssh [NAME] -c CMD``: run by the guest's shell."""
    words = inv.args
    if not words or words[0].text != "ssh":
        return None
    for k, word in enumerate(words[:-1]):
        if word.text in ("-c", "--command"):
            return run.nested(words[k + 1].text, "vagrant ssh -c command", lenient=True)
    return None


def rule_sg(inv: Invocation, run: Run) -> Finding | None:
    """``sg GROUP -c CMD`` / ``sg GROUP CMD``."""
    args = inv.args[1:]
    if args and args[0].text == "-c":
        args = args[1:]
    return run.nested(" ".join(w.text for w in args), "sg command", lenient=True) if args else None


_TMUX = opts("LSfcT")
_TMUX_ARGS = {  # per subcommand: the options that take a value
    "new-session": "cefFnstxy",
    "new": "cefFnstxy",
    "new-window": "cefFnt",
    "neww": "cefFnt",
    "split-window": "celtF",
    "splitw": "celtF",
    "respawn-pane": "cet",
    "respawnp": "cet",
    "respawn-window": "cet",
    "respawnw": "cet",
    "run-shell": "dt",
    "run": "dt",
    "display-popup": "bcdehsStTwxy",
    "popup": "bcdehsStTwxy",
    "send-keys": "Nt",
    "send": "Nt",
    "if-shell": "t",
    "if": "t",
    "pipe-pane": "t",
    "pipep": "t",
}
_TMUX_KEYS = word_set("Enter C-m C-j KPEnter Space Tab Escape")


def rule_tmux(inv: Invocation, run: Run) -> Finding | None:
    """tmux commands that run a shell command, and keys typed into a pane's shell."""
    parsed = parse_opts(inv.args, _TMUX, stop_at_operand=True)
    start = parsed.value("-c")
    if start is not None:
        found = run.nested(start.text, "tmux -c command")
        if found is not None:
            return found
    rest = parsed.operands
    while rest:  # commands separated by ";" or "\;"
        sub = rest[0].text
        end = next((k for k, w in enumerate(rest) if w.text in (";", "\\;")), len(rest))
        command, rest = rest[1:end], rest[end + 1 :]
        if sub not in _TMUX_ARGS:
            continue
        words = parse_opts(command, opts(_TMUX_ARGS[sub])).operands
        if sub in ("send-keys", "send"):
            text = " ".join(w.text for w in words if w.text not in _TMUX_KEYS)
            words = [Word(text)] if text else []
        elif sub in ("if-shell", "if"):
            words = words[:1]
        if not words:
            continue
        text = " ".join(w.text for w in words)
        found = run.nested(text, f"tmux {sub} command", lenient=sub in ("send-keys", "send"))
        if found is not None:
            return found
    return None


_SCREEN = opts("SpcehstTXL")


def rule_screen(inv: Invocation, run: Run) -> Finding | None:
    """``screen [-dmS name] CMD ARGS``, ``screen -X stuff TEXT``, ``-X exec CMD``."""
    parsed = parse_opts(inv.args, _SCREEN, stop_at_operand=True)
    command = parsed.value("-X")
    operands = parsed.operands
    if command is not None:
        if command.text == "stuff" and operands:
            typed = operands[0].text.replace("\\n", "\n").replace("\\r", "\n")
            return run.nested(typed, "screen -X stuff text", lenient=True)
        if command.text == "exec":
            return run.argv(operands, "screen -X exec")
        return None
    return run.argv(operands, "screen") if operands else None


_PARALLEL = opts(
    "jSaEdInNLCX",
    "keep-order group line-buffer dry-run verbose pipe null halt-on-error tag eta progress "
    "bar xargs quote no-notice",
    "jobs sshlogin arg-file delimiter colsep delay joblog results tmpdir timeout retries "
    "halt load memfree max-args max-lines workdir env shebang",
    {"j": "jobs", "a": "arg-file"},
)
_PARALLEL_SEPARATORS = frozenset({":::", "::::", ":::+", "::::+"})
_PARALLEL_SLOT = re.compile(r"\{[^{}\s]*\}")  # {}, {.}, {/}, {1}...


def rule_parallel(inv: Invocation, run: Run) -> Finding | None:
    """``parallel CMD ::: VALUES``: each value in ``{}`` (or appended), run by a shell."""
    parsed = parse_opts(inv.args, _PARALLEL, stop_at_operand=True)
    words = parsed.operands
    k = next((k for k, w in enumerate(words) if w.text in _PARALLEL_SEPARATORS), len(words))
    command = " ".join(w.text for w in words[:k])
    values = [w.text for w in words[k + 1 :] if w.text not in _PARALLEL_SEPARATORS]
    if not command:
        if not values:
            return None
        command = "{}"  # "parallel ::: 'CMD' ...": with no command, each value is one
    listed: list[str | None] = list(values) or [None]
    for value in listed:  # every value: each nested analysis is charged to the budget
        shown = value if value is not None else "$PARALLEL_VALUE"
        text = _PARALLEL_SLOT.sub(shown.replace("\\", "\\\\"), command)
        if text == command:
            text = f"{command} {shown}"
        found = run.nested(text, "parallel command")
        if found is not None:
            return found
    return None


_SHELL_STRINGS = {  # runner -> (options taking a value, those whose value is a command)
    "hyperfine": (
        opts(
            "wrmMpcsPLSnuNo",
            long_arg="warmup runs min-runs max-runs prepare conclude cleanup setup "
            "parameter-scan parameter-step-size parameter-list shell command-name "
            "time-unit export-asciidoc export-csv export-json export-markdown "
            "export-orgmode style sort input output reference",
            alias={"p": "prepare", "c": "cleanup", "s": "setup", "S": "shell"},
        ),
        frozenset({"--prepare", "--cleanup", "--setup", "--conclude", "--reference"}),
    ),
    "concurrently": (
        opts(
            "nmcpslkrPi",
            long_arg="names name-separator max-processes prefix prefix-colors prefix-length "
            "timestamp-format success restart-tries restart-after kill-signal handle-input "
            "default-input-target passthrough-arguments",
        ),
        frozenset(),
    ),
}
"""Runners whose every operand is a shell command line (``hyperfine 'make a' 'make
b'``, ``concurrently 'npm:watch' 'rm -rf dist'``)."""


def rule_shell_strings(inv: Invocation, run: Run) -> Finding | None:
    spec, command_options = _SHELL_STRINGS[inv.name]
    parsed = parse_opts(inv.args, spec)
    commands = [w for flag, w in parsed.values if flag in command_options]
    for word in (*commands, *parsed.operands):
        found = run.nested(word.text, f"{inv.name} command", lenient=True)
        if found is not None:
            return found
    return None


_START_STOP = opts(
    "xapnugrdNckRsPIO",
    "start stop status test oknodo quiet verbose background make-pidfile remove-pidfile "
    "no-close help version",
    "exec startas pidfile name user group chroot chdir nicelevel iosched procsched signal "
    "retry umask output notify-await notify-timeout",
    {"x": "exec", "a": "startas", "S": "start", "d": "chdir", "r": "chroot"},
)


def rule_start_stop_daemon(inv: Invocation, run: Run) -> Finding | None:
    """``start-stop-daemon --start --exec PROG [-- ARGS]``: runs PROG (``--startas``)."""
    parsed = parse_opts(inv.args, _START_STOP)
    program = parsed.value("--startas", "--exec")
    if not parsed.has("--start") or program is None:
        return None
    return run.argv([program, *parsed.operands], "start-stop-daemon")


def rule_ip(inv: Invocation, run: Run) -> Finding | None:
    """``ip [-n NS] netns exec NAME CMD...`` and ``ip vrf exec NAME CMD...``."""
    args = inv.args
    k = next((k for k, w in enumerate(args) if w.text in ("netns", "vrf")), len(args))
    if k + 3 < len(args) and args[k + 1].text == "exec":
        return run.argv(args[k + 3 :], f"ip {args[k].text} exec")
    return None
