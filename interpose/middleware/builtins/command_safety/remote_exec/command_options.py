"""Options, settings and variables whose value is a command: ``scp``/``rsync -e``,
``tar --to-command``/``--checkpoint-action``, editors' ``-c '!cmd'``, ``less +!``, ``gdb
-ex``, ``git -c core.sshCommand=``..., ``GIT_SSH_COMMAND``/``PAGER``/``EDITOR``."""

from __future__ import annotations

import re

from ...shell import Word
from ..arithmetic import PROMPTS, has_code
from ..invocation import Invocation
from ..model import Finding
from ..options import opts, parse_opts
from ..run import Run
from .runners import SSH, ssh_options


def rule_scp(inv: Invocation, run: Run) -> Finding | None:
    return ssh_options(
        inv, run, [w for flag, w in parse_opts(inv.args, SSH).values if flag == "-o"]
    )


_RSYNC_E = opts(
    "eBfMTx",
    "archive verbose recursive compress delete progress dry-run",
    "rsh rsync-path filter exclude include exclude-from include-from files-from chmod chown "
    "temp-dir partial-dir compare-dest link-dest copy-dest log-file password-file",
    {"e": "rsh"},
)


def rule_rsync(inv: Invocation, run: Run) -> Finding | None:
    """``rsync -e CMD``: the remote shell is a local command line."""
    for flag, word in parse_opts(inv.args, _RSYNC_E).values:
        if flag == "--rsh":
            found = run.nested(word.text, "rsync -e command", lenient=True)
            if found is not None:
                return found
    return None


_TAR_COMMANDS = opts(
    "fCTXbKgLNVIF",
    "create extract list gzip bzip2 xz zstd verbose",
    "file directory files-from exclude-from exclude transform checkpoint-action to-command "
    "use-compress-program info-script new-volume-script rsh-command checkpoint",
    {
        "T": "files-from",
        "f": "file",
        "C": "directory",
        "I": "use-compress-program",
        "F": "info-script",
    },
)
_TAR_RUNS = frozenset(
    {
        "--to-command",
        "--use-compress-program",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
    }
)


def rule_tar(inv: Invocation, run: Run) -> Finding | None:
    """``--checkpoint-action=exec=CMD``, ``--to-command``, ``-I CMD``: command lines."""
    args = list(inv.args)
    if args and not args[0].text.startswith("-") and args[0].text.isalpha():
        args[0] = Word("-" + args[0].text)  # old style: tar xf a.tar
    for flag, word in parse_opts(args, _TAR_COMMANDS).values:
        text = word.text
        if flag == "--checkpoint-action":
            action, eq, text = text.partition("=")
            if action != "exec" or not eq:
                continue
        elif flag not in _TAR_RUNS:
            continue
        found = run.nested(text, f"tar {flag} command", lenient=True)
        if found is not None:
            return found
    return None


EDITORS = frozenset({"vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "nex", "nview"})
_VIM = opts("cSTuUwWsioOpq", long_arg="cmd", alias={"c": "--cmd-c"})
_VIM_BANG = re.compile(
    r"(?:^|\|)\s*:*\s*(?:sil(?:ent)?!?\s*)?[%.$,0-9'<>]*\s*(?:r(?:ead)?\s*|w(?:rite)?\s*)?!(?!=)(.*)",
    re.DOTALL,
)
_VIM_SYSTEM = re.compile(r"\b(?:system|systemlist|jobstart|termopen)\s*\(\s*(['\"])(.*?)\1")


def _editor_command(inv: Invocation, run: Run, command: str, how: str) -> Finding | None:
    """An ex command (``-c``, ``+``, ``--cmd``): ``!cmd``, ``r !cmd``, ``system('cmd')``."""
    for pattern, group in ((_VIM_BANG, 1), (_VIM_SYSTEM, 2)):
        for m in pattern.finditer(command):
            found = run.nested(m.group(group), f"{inv.shown} {how} shell command", lenient=True)
            if found is not None:
                return found
    if re.match(r"\s*:*\s*(?:ter(?:minal)?)\b", command):
        return run.nested(command.split(None, 1)[-1], f"{inv.shown} {how} terminal", lenient=True)
    return None


def rule_editor(inv: Invocation, run: Run) -> Finding | None:
    words = inv.args
    for k, word in enumerate(words):
        t = word.text
        command = None
        if t.startswith("+") and len(t) > 1:
            command, how = t[1:], "+"
        elif t in ("-c", "--cmd") and k + 1 < len(words):
            command, how = words[k + 1].text, t
        if command is not None:
            found = _editor_command(inv, run, command, how)
            if found is not None:
                return found
    return None


def rule_less(inv: Invocation, run: Run) -> Finding | None:
    """``less +'!cmd'`` (``more``, ``most``): a start-up command that runs a shell
    command."""
    for word in inv.args:
        t = word.text
        if t.startswith("+") and "!" in t:
            found = run.nested(t[t.index("!") + 1 :], f"{inv.shown} + command", lenient=True)
            if found is not None:
                return found
    return None


_ZIP_COMMAND = re.compile(r"^(?:-TT|--unzip-command|--unzip-c\w*)(?:=(.*))?$", re.DOTALL)


def rule_zip(inv: Invocation, run: Run) -> Finding | None:
    """``zip -TT CMD`` / ``--unzip-command CMD``: the archive test runs CMD (``{}`` is
    the archive)."""
    words = inv.args
    for k, word in enumerate(words):
        m = _ZIP_COMMAND.match(word.text)
        if m is None:
            continue
        command = m.group(1)
        if command is None:
            command = words[k + 1].text if k + 1 < len(words) else ""
        found = run.nested(command.replace("{}", "archive.zip"), "zip -TT command", lenient=True)
        if found is not None:
            return found
    return None


_MAN_COMMAND = opts("PHMSmCLRKsEe", long_arg="pager html manpath sections extension encoding")


def rule_man(inv: Invocation, run: Run) -> Finding | None:
    """``man -P CMD`` (the pager) and ``man -H CMD`` (the browser) run CMD."""
    for flag, word in parse_opts(inv.args, _MAN_COMMAND).values:
        if flag in ("-P", "--pager", "-H", "--html") and word.text:
            found = run.nested(word.text, f"man {flag} command", lenient=True)
            if found is not None:
                return found
    return None


_GDB_EX = frozenset({"-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--iex"})


def rule_gdb(inv: Invocation, run: Run) -> Finding | None:
    """``gdb -ex 'shell cmd'`` / ``-ex '!cmd'``."""
    words = inv.args
    for k, word in enumerate(words[:-1]):
        if word.text in _GDB_EX or word.text.startswith(("-ex=", "--eval-command=")):
            command = words[k + 1].text if "=" not in word.text else word.text.split("=", 1)[1]
            m = re.match(r"\s*(?:shell\b|!|pipe\b.*?\|)(.*)", command, re.DOTALL)
            if m is not None:
                found = run.nested(m.group(1), "gdb shell command", lenient=True)
                if found is not None:
                    return found
    return None


_GIT_COMMAND_KEYS = frozenset(
    {
        "core.sshcommand",
        "core.pager",
        "core.editor",
        "core.askpass",
        "core.fsmonitor",
        "sequence.editor",
        "diff.external",
        "gpg.program",
        "gpg.ssh.program",
        "web.browser",
        "credential.helper",
        "uploadpack.packobjectshook",
        "core.gitproxy",
    }
)
_GIT_COMMAND_SUFFIXES = (
    ".textconv",
    ".command",
    ".clean",
    ".smudge",
    ".process",
    ".driver",
    ".cmd",
    ".tool",
)


def rule_git_commands(inv: Invocation, run: Run) -> Finding | None:
    """``git -c core.sshCommand=CMD`` and the other settings whose value is a command line
    (``core.pager``, ``core.editor``, ``credential.helper=!CMD``, ``diff.*.textconv``...)."""
    args = inv.args
    for k, word in enumerate(args[:-1]):
        if word.text != "-c":
            continue
        key, _, value = args[k + 1].text.partition("=")
        key = key.lower()
        if (
            key in _GIT_COMMAND_KEYS
            or key.startswith("pager.")
            or key.endswith(_GIT_COMMAND_SUFFIXES)
        ):
            command = value[1:] if value.startswith("!") else value
            found = run.nested(command, f"git -c {key} command", lenient=True)
            if found is not None:
                return found
    return None


_COMMAND_VARS = frozenset(
    {
        "GIT_SSH_COMMAND",
        "GIT_PAGER",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "GIT_EXTERNAL_DIFF",
        "GIT_PROXY_COMMAND",
        "PAGER",
        "MANPAGER",
        "SYSTEMD_PAGER",
        "EDITOR",
        "VISUAL",
        "SUDO_EDITOR",
        "FCEDIT",
        "BROWSER",
        "PROMPT_COMMAND",
        "LESSOPEN",
        "LESSCLOSE",
        "RSYNC_RSH",
    }
)
"""Variables whose value programs run as a command line (``GIT_SSH_COMMAND='...' git
fetch``, ``PAGER='...' man ls``, ``LESSOPEN='|cmd %s'``)."""
_VARS = _COMMAND_VARS | PROMPTS


def rule_command_vars(inv: Invocation, run: Run) -> Finding | None:
    for name in _VARS.intersection(inv.env):
        found = _command_var(run, name, inv.env[name])
        if found is not None:
            return found
    for name in _VARS.intersection(run.vars):
        value = run.vars.pop(name)  # judged once: the commands inside must not see it again
        try:
            found = _command_var(run, name, value)
        finally:
            run.vars[name] = value
        if found is not None:
            return found
    return None


def _command_var(run: Run, name: str, value: str) -> Finding | None:
    if name in PROMPTS:  # a prompt string: its substitutions run (PS4='$(...)' bash -x)
        return run.expanded(value, f"the prompt string {name}") if has_code(value) else None
    command = value.lstrip("|").replace("%s", "file")  # LESSOPEN='|cmd %s'
    return run.nested(command, f"{name} command", lenient=True)
