"""Rule family ``remote_exec``: code run from elsewhere, reverse shells, fork bombs, and the
wrappers that run a command or a shell string (``su -c``, ``ssh``, ``watch``, ``flock``,
``script``), interpreters' inline code and program text made at run time.

Rules (the rule id leads the block reason):

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

Programs that run a command or a shell string hand it to the shared analysis, so the
rule that fires is the inner command's (``tmux new -d 'rm -rf /'`` is ``fs-destruction``):
``su``/``runuser -c``, ``sg``, ``ssh host CMD`` and ``ssh``/``scp -o ProxyCommand=``,
``watch``, ``flock``, ``script -c``, ``tmux`` (``-c``, ``new-session``, ``new-window``,
``split-window``, ``respawn-*``, ``run-shell``, ``display-popup``, ``if-shell``, and the
keys of ``send-keys`` as typed text), ``screen`` (its command, ``-X stuff``, ``-X
exec``), ``parallel`` (each ``:::`` value in ``{}``, or appended; every value, within the
analysis budget), ``at``/``batch`` and ``crontab`` (the job text on stdin; crontab lines lose their
schedule fields), ``rsync -e``, ``tar --checkpoint-action=exec=``/``--to-command``/
``-I``/``--info-script``, ``vim``/``vi``/``nvim``/``ex -c``/``+``/``--cmd`` with ``!cmd``,
``r !cmd``, ``system('cmd')`` or ``terminal``, ``less +'!cmd'``, ``gdb -ex 'shell cmd'``,
``sqlite3`` ``.shell``/``.system`` (arguments, ``-cmd`` and stdin), ``nodemon
--exec``, ``expect -c`` (each ``spawn``ed command), ``git -c`` settings
whose value is a command (``core.sshCommand``, ``core.pager``, ``core.editor``,
``credential.helper=!``, ``diff.*.textconv``...), variables whose value programs run
(``GIT_SSH_COMMAND``, ``GIT_PAGER``, ``PAGER``, ``EDITOR``, ``VISUAL``, ``LESSOPEN``...,
set on the command or earlier in the line), and ``>(sh)`` process substitutions a
command writes into (``echo ... > >(sh)``, ``... | tee >(bash)``); a download written
into one (``curl URL > >(bash)``, ``wget -O- URL | tee >(sh)``) is ``rce``, as a pipe.
``sh -c SCRIPT NAME ARGS`` gives the script its positional parameters.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ..shell import SUBST, FunctionDef, Word
from .interpreters import library_calls
from .invocation import _Invocation
from .model import Finding
from .operands import _AWK
from .options import _derived, _opts, _parse_opts, _set
from .paths import _show, _snippet
from .programs import (
    _DOWNLOADERS,
    _INTERPRETERS,
    _MAX_READINGS,
    _WHOLE_EXPANSION,
    _downloader,
    _Exec,
    _exec_info,
    _script_snippet,
)
from .run import FunctionRule, PipelineRule, Rule, _allowed, _judge_read, _Run
from .text import _setup_code, _Stream, _stream
from .wrappers import _unwrap

_NETWORK_TOOLS = frozenset({"nc", "socat", "telnet", "cryptcat", "pwncat", "openssl"})


def _rce(inv: _Invocation, source: str, how: str) -> Finding:
    return Finding("rce", source, f"{inv.shown} runs code downloaded by {source!r} ({how})")


def _program(
    run: _Run, inv: _Invocation, kind: str, words: Sequence[Word], origin: str
) -> Finding | None:
    """Judge program text given to ``inv`` (``kind`` as in :class:`_Exec`), made of
    ``words`` joined by spaces, in each of its readings."""
    if len(words) == 1 and not words[0].subs:  # the common case: bash -c '...'
        return _judge_program(run, inv, kind, words[0].text, words, origin)
    texts = [""]
    for k, word in enumerate(words):
        sep = " " if k else ""
        texts = [head + sep + tail for head in texts for tail in run.readings(word)]
        if len(texts) > _MAX_READINGS:
            return Finding(
                "dynamic-code",
                _snippet(words),
                f"{origin} may read in more than {_MAX_READINGS} ways once its "
                f"substitutions have run; the guard judges only program text it can read",
            )
    run.budget.made_text(sum(map(len, texts)))
    for text in texts:
        found = _judge_program(run, inv, kind, text, words, origin)
        if found is not None:
            return found
    return None


def _judge_program(
    run: _Run, inv: _Invocation, kind: str, text: str, words: Sequence[Word], origin: str
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
    if kind == "crontab":
        return run.nested(_crontab_commands(text), origin)
    if kind in ("shell", "eval", "source"):
        return run.nested(text, origin)
    return _inline_program(inv, run, text)


def _stream_program(
    run: _Run, inv: _Invocation, info: _Exec, stream: _Stream, how: str
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
    run.budget.made_text(sum(map(len, stream.readings)))
    for reading in stream.readings:
        text = reading.decode("utf-8", "replace")
        if not stream.holes:  # a shell drops NUL bytes; SUBST marks unknown text
            text = text.replace(SUBST, "")
        if info.kind == "crontab":
            found = run.nested(_crontab_commands(text), origin)
        elif info.kind in ("shell", "eval", "source"):
            found = run.nested(text, origin)
        else:
            found = _inline_program(inv, run, text)
        if found is not None:
            return found
    return None


def _program_file(run: _Run, inv: _Invocation, info: _Exec, word: Word, how: str) -> Finding | None:
    """``bash <(...)``, ``source <(...)``: the program is a process's output."""
    sub = word.subs[0]
    stream = run.substitution(sub)
    if stream.readings or stream.hidden or _setup_code(sub):
        return _stream_program(run, inv, info, stream, how)
    token = f"<({_script_snippet(sub)})"
    return Finding(
        "dynamic-code",
        token,
        f"{inv.shown} runs the output of {token!r} as its program, text known only at "
        f"run time; the guard judges only program text it can read",
    )


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
                found = _program(run, inv, info.kind, [body], origin)
            elif r.op == "<" and r.target.process:
                found = _program_file(run, inv, info, r.target, f"fed by {r.op!r} to")
            if found is not None:
                return found
    if info.inline is None:
        if info.code and info.code[0].process:
            return _program_file(run, inv, info, info.code[0], "handed as a file to")
        return None
    if info.kind != "shell":
        return _program(run, inv, info.kind, info.code, f"{inv.shown} script")
    # sh -c SCRIPT NAME ARGS...: "$1", "$@" in the script are ARGS
    params = [w.text for w in info.params]
    with run.positional(params[1:] if params else None, zero=params[0] if params else None):
        return _program(run, inv, info.kind, info.code, f"{inv.shown} script")


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
    r"|execSync|spawnSync|os\.execute|io\.popen|\bexecute)"
    r"(?:\s*\(\s*|\s+)(['\"])((?:(?!\1)[^\\]|\\.)*)\1"  # perl: system "cmd"
)
_BACKTICK_CODE = re.compile(r"`([^`]+)`")
_QX_CODE = re.compile(
    r"(?:\bqx|%x)\s*(?:\{(.*?)\}|\((.*?)\)|\[(.*?)\]|<(.*?)>|([|!/])(.*?)\5)", re.DOTALL
)
_SQLITE_SHELL = re.compile(r"^\s*\.(?:shell|system)\s+(.*)$", re.MULTILINE)
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
        for m in _QX_CODE.finditer(code):  # perl qx{...}, ruby %x(...)
            command = next(g for g in (*m.groups()[:4], m.group(6)) if g is not None)
            found = run.nested(command, origin, lenient=True)
            if found is not None:
                return found
    if inv.name == "sqlite3":
        for m in _SQLITE_SHELL.finditer(code):
            found = run.nested(m.group(1), "sqlite3 .shell command", lenient=True)
            if found is not None:
                return found
    found = library_calls(inv, run, code)
    if found is not None:
        return found
    for m in _STRING_LITERAL.finditer(code):
        literal = m.group(2)
        if "/" in literal or literal.startswith((".", "~")):
            run.budget.made_words(1)  # a path judged costs what a word does
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
            found = _stream_program(run, inv, info, _stream(stages[:j]), "piped into")
            if found is not None:
                return found
    return None


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
    "cgGswu",
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
    if parsed.value("-u", "--user") is not None:  # runuser -u USER [--] COMMAND ARGS...
        command = _parse_opts(inv.args, _SU, stop_at_operand=True).operands
        return run.argv(command, inv.name) if command else None
    return None


_SSH_COMMAND_OPTIONS = frozenset({"proxycommand", "localcommand", "knownhostscommand"})


def _ssh_options(inv: _Invocation, run: _Run, values: Sequence[Word]) -> Finding | None:
    """``-o ProxyCommand=...`` (and LocalCommand, KnownHostsCommand): run by a local shell."""
    for word in values:
        key, _, value = word.text.replace("=", " ", 1).partition(" ")
        if key.lower() in _SSH_COMMAND_OPTIONS and value.strip():
            found = run.nested(value.strip(), f"{inv.shown} -o {key}", lenient=True)
            if found is not None:
                return found
    return None


def _rule_ssh(inv: _Invocation, run: _Run) -> Finding | None:
    parsed = _parse_opts(inv.args, _SSH, stop_at_operand=True)
    found = _ssh_options(inv, run, [w for flag, w in parsed.values if flag == "-o"])
    if found is not None:
        return found
    remote = parsed.operands[1:]
    if remote and remote[0].text == "--":
        remote = remote[1:]
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


def _rule_nodemon(inv: _Invocation, run: _Run) -> Finding | None:
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


def _rule_expect(inv: _Invocation, run: _Run) -> Finding | None:
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


# -- programs that run a command or a shell string ---------------------------------------------


def _rule_scp(inv: _Invocation, run: _Run) -> Finding | None:
    return _ssh_options(
        inv, run, [w for flag, w in _parse_opts(inv.args, _SSH).values if flag == "-o"]
    )


_RSYNC_E = _opts(
    "eBfMTx",
    "archive verbose recursive compress delete progress dry-run",
    "rsh rsync-path filter exclude include exclude-from include-from files-from chmod chown "
    "temp-dir partial-dir compare-dest link-dest copy-dest log-file password-file",
    {"e": "rsh"},
)


def _rule_rsync(inv: _Invocation, run: _Run) -> Finding | None:
    """``rsync -e CMD``: the remote shell is a local command line."""
    for flag, word in _parse_opts(inv.args, _RSYNC_E).values:
        if flag == "--rsh":
            found = run.nested(word.text, "rsync -e command", lenient=True)
            if found is not None:
                return found
    return None


_TAR_COMMANDS = _opts(
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


def _rule_tar(inv: _Invocation, run: _Run) -> Finding | None:
    """``--checkpoint-action=exec=CMD``, ``--to-command``, ``-I CMD``: command lines."""
    args = list(inv.args)
    if args and not args[0].text.startswith("-") and args[0].text.isalpha():
        args[0] = Word("-" + args[0].text)  # old style: tar xf a.tar
    for flag, word in _parse_opts(args, _TAR_COMMANDS).values:
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


_EDITORS = frozenset({"vim", "vi", "nvim", "ex", "view", "gvim", "vimdiff", "nex", "nview"})
_VIM = _opts("cSTuUwWsioOpq", long_arg="cmd", alias={"c": "--cmd-c"})
_VIM_BANG = re.compile(
    r"(?:^|\|)\s*:*\s*(?:sil(?:ent)?!?\s*)?[%.$,0-9'<>]*\s*(?:r(?:ead)?\s*|w(?:rite)?\s*)?!(?!=)(.*)",
    re.DOTALL,
)
_VIM_SYSTEM = re.compile(r"\b(?:system|systemlist|jobstart|termopen)\s*\(\s*(['\"])(.*?)\1")


def _editor_command(inv: _Invocation, run: _Run, command: str, how: str) -> Finding | None:
    """An ex command (``-c``, ``+``, ``--cmd``): ``!cmd``, ``r !cmd``, ``system('cmd')``."""
    for pattern, group in ((_VIM_BANG, 1), (_VIM_SYSTEM, 2)):
        for m in pattern.finditer(command):
            found = run.nested(m.group(group), f"{inv.shown} {how} shell command", lenient=True)
            if found is not None:
                return found
    if re.match(r"\s*:*\s*(?:ter(?:minal)?)\b", command):
        return run.nested(command.split(None, 1)[-1], f"{inv.shown} {how} terminal", lenient=True)
    return None


def _rule_editor(inv: _Invocation, run: _Run) -> Finding | None:
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


def _rule_less(inv: _Invocation, run: _Run) -> Finding | None:
    """``less +'!cmd'``: a start-up command that runs a shell command."""
    for word in inv.args:
        t = word.text
        if t.startswith("+") and "!" in t:
            found = run.nested(t[t.index("!") + 1 :], "less + command", lenient=True)
            if found is not None:
                return found
    return None


_GDB_EX = frozenset({"-ex", "--ex", "-eval-command", "--eval-command", "-iex", "--iex"})


def _rule_gdb(inv: _Invocation, run: _Run) -> Finding | None:
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


def _rule_nix_shell(inv: _Invocation, run: _Run) -> Finding | None:
    """``nix-shell --run CMD`` / ``--command CMD``: a shell command line."""
    words = inv.args
    for k, word in enumerate(words[:-1]):
        if word.text in ("--run", "--command"):
            return run.nested(words[k + 1].text, f"nix-shell {word.text} command")
    return None


def _rule_vagrant(inv: _Invocation, run: _Run) -> Finding | None:
    """``vagrant ssh [NAME] -c CMD``: run by the guest's shell."""
    words = inv.args
    if not words or words[0].text != "ssh":
        return None
    for k, word in enumerate(words[:-1]):
        if word.text in ("-c", "--command"):
            return run.nested(words[k + 1].text, "vagrant ssh -c command", lenient=True)
    return None


def _rule_sg(inv: _Invocation, run: _Run) -> Finding | None:
    """``sg GROUP -c CMD`` / ``sg GROUP CMD``."""
    args = inv.args[1:]
    if args and args[0].text == "-c":
        args = args[1:]
    return run.nested(" ".join(w.text for w in args), "sg command", lenient=True) if args else None


_TMUX = _opts("LSfcT")
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
_TMUX_KEYS = _set("Enter C-m C-j KPEnter Space Tab Escape")


def _rule_tmux(inv: _Invocation, run: _Run) -> Finding | None:
    """tmux commands that run a shell command, and keys typed into a pane's shell."""
    parsed = _parse_opts(inv.args, _TMUX, stop_at_operand=True)
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
        words = _parse_opts(command, _opts(_TMUX_ARGS[sub])).operands
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


_SCREEN = _opts("SpcehstTXL")


def _rule_screen(inv: _Invocation, run: _Run) -> Finding | None:
    """``screen [-dmS name] CMD ARGS``, ``screen -X stuff TEXT``, ``-X exec CMD``."""
    parsed = _parse_opts(inv.args, _SCREEN, stop_at_operand=True)
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


_PARALLEL = _opts(
    "jSaEdInNLCX",
    "keep-order group line-buffer dry-run verbose pipe null halt-on-error tag eta progress "
    "bar xargs quote no-notice",
    "jobs sshlogin arg-file delimiter colsep delay joblog results tmpdir timeout retries "
    "halt load memfree max-args max-lines workdir env shebang",
    {"j": "jobs", "a": "arg-file"},
)
_PARALLEL_SEPARATORS = frozenset({":::", "::::", ":::+", "::::+"})
_PARALLEL_SLOT = re.compile(r"\{[^{}\s]*\}")  # {}, {.}, {/}, {1}...


def _rule_parallel(inv: _Invocation, run: _Run) -> Finding | None:
    """``parallel CMD ::: VALUES``: each value in ``{}`` (or appended), run by a shell."""
    parsed = _parse_opts(inv.args, _PARALLEL, stop_at_operand=True)
    words = parsed.operands
    k = next((k for k, w in enumerate(words) if w.text in _PARALLEL_SEPARATORS), len(words))
    command = " ".join(w.text for w in words[:k])
    values = [w.text for w in words[k + 1 :] if w.text not in _PARALLEL_SEPARATORS]
    if not command:
        return None
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


def _rule_git_commands(inv: _Invocation, run: _Run) -> Finding | None:
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


def _rule_command_vars(inv: _Invocation, run: _Run) -> Finding | None:
    for name in _COMMAND_VARS.intersection(inv.env):
        found = _command_var(run, name, inv.env[name])
        if found is not None:
            return found
    for name in _COMMAND_VARS.intersection(run.vars):
        value = run.vars.pop(name)  # judged once: the commands inside must not see it again
        try:
            found = _command_var(run, name, value)
        finally:
            run.vars[name] = value
        if found is not None:
            return found
    return None


def _command_var(run: _Run, name: str, value: str) -> Finding | None:
    command = value.lstrip("|").replace("%s", "file")  # LESSOPEN='|cmd %s'
    return run.nested(command, f"{name} command", lenient=True)


_SINK_OPS = frozenset({">", ">>", ">|", "&>", "&>>"})


def _sink_readers(inv: _Invocation) -> list[tuple[_Invocation, _Exec]]:
    """Shells and interpreters reading a program from ``>(...)`` sinks of ``inv``
    (``CMD > >(sh)``, ``tee >(bash)``)."""
    sinks = [r.target for r in inv.redirects if r.op in _SINK_OPS and r.target.process]
    if inv.name == "tee":
        sinks += [w for w in inv.args if w.process]
    readers = []
    for sink in sinks:
        for cmd in sink.subs[0].commands:
            unwrapped = _unwrap(list(cmd.words)) if cmd.words else None
            if unwrapped is None:
                continue
            reader = _Invocation(unwrapped.name, unwrapped.args, {}, cmd.redirects)
            info = _exec_info(reader)
            if info is not None and info.stdin:
                readers.append((reader, info))
    return readers


def _without_sinks(inv: _Invocation) -> _Invocation:
    return replace(
        inv,
        args=[w for w in inv.args if not w.process],
        redirects=tuple(r for r in inv.redirects if not r.target.process),
    )


def _rule_process_sinks(inv: _Invocation, run: _Run) -> Finding | None:
    """``CMD > >(sh)``, ``tee >(bash) <<< TEXT``: a shell reads what ``inv`` writes."""
    if not inv.redirects and inv.name != "tee":
        return None
    for reader, info in _sink_readers(inv):
        # a download written into >(sh) is the same as one piped into sh
        if inv.name in _DOWNLOADERS and not _allowed(run, reader, inv):
            return _rce(reader, inv.snippet(), "written into it")
        stream = _stream([[_without_sinks(inv)]])
        found = _stream_program(run, reader, info, stream, "written into")
        if found is not None:
            return found
    return None


def _pipeline_sinks(stages: Sequence[Sequence[_Invocation | None]], run: _Run) -> Finding | None:
    """``echo TEXT | tee >(sh)``: the pipe's text reaches the shell through ``tee``."""
    for j in range(1, len(stages)):
        for inv in stages[j]:
            if inv is None or inv.name != "tee":
                continue
            upstream = [o for stage in stages[:j] for o in stage if o is not None]
            download = next((o for o in upstream if o.name in _DOWNLOADERS), None)
            for reader, info in _sink_readers(inv):
                if download is not None and not _allowed(run, reader, download):
                    return _rce(reader, download.snippet(), "written into it")
                stream = _stream([*stages[:j], [_without_sinks(inv)]])
                found = _stream_program(run, reader, info, stream, "written into")
                if found is not None:
                    return found
    return None


def _crontab_commands(text: str) -> str:
    """The commands of crontab lines: five time fields (or ``@daily``...) then a command;
    comments and ``NAME=value`` lines dropped."""
    commands = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or re.match(r"[A-Za-z_][A-Za-z0-9_]*\s*=", line):
            continue
        fields = line.split(None, 1 if line.startswith("@") else 5)
        if len(fields) == (2 if line.startswith("@") else 6):
            commands.append(fields[-1].replace("%", "\n"))
    return "\n".join(commands)


RULES: dict[str, tuple[Rule, ...]] = {
    "scp": (_rule_scp,),
    "sftp": (_rule_scp,),
    "rsync": (_rule_rsync,),
    "tar": (_rule_tar,),
    **dict.fromkeys(_EDITORS, (_rule_editor,)),
    "less": (_rule_less,),
    "gdb": (_rule_gdb,),
    "sg": (_rule_sg,),
    "nix-shell": (_rule_nix_shell,),
    "vagrant": (_rule_vagrant,),
    "tmux": (_rule_tmux,),
    "screen": (_rule_screen,),
    "parallel": (_rule_parallel,),
    "git": (_rule_git_commands,),
    "nc": (_rule_netcat,),
    "socat": (_rule_socat,),
    "awk": (_rule_awk,),
    "su": (_rule_su,),
    "ssh": (_rule_ssh,),
    "watch": (_rule_watch,),
    "flock": (_rule_flock,),
    "script": (_rule_script,),
    "nodemon": (_rule_nodemon,),
    "expect": (_rule_expect,),
}
GENERIC: tuple[Rule, ...] = (_rule_code, _rule_command_vars, _rule_process_sinks)
PIPELINES: tuple[PipelineRule, ...] = (_pipeline_rules, _pipeline_sinks)
FUNCTIONS: tuple[FunctionRule, ...] = (_fork_bomb,)
