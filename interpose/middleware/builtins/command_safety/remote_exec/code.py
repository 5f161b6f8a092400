"""Program text a shell or an interpreter runs (rules ``rce``, ``dynamic-code``, and the
``reverse-shell`` pipelines and inline programs): downloads run as code, text made at run
time, ``python -c``-style programs, ``>(sh)`` sinks and crontab job text."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from ...shell import SUBST, Word
from ..interpreters import library_calls
from ..invocation import Invocation
from ..model import Finding
from ..options import derived
from ..paths import show, words_snippet
from ..programs import (
    DOWNLOADERS,
    INTERPRETERS,
    MAX_READINGS,
    WHOLE_EXPANSION,
    Exec,
    downloader,
    exec_info,
    script_snippet,
)
from ..reach import judge_read
from ..run import Run, allowed
from ..text import Stream, pipe_stream, setup_code
from ..wrappers import unwrap
from .languages import OWN_SYNTAX

_NETWORK_TOOLS = frozenset({"nc", "socat", "telnet", "cryptcat", "pwncat", "openssl"})


def _rce(inv: Invocation, source: str, how: str) -> Finding:
    return Finding("rce", source, f"{inv.shown} runs code downloaded by {source!r} ({how})")


def _program(
    run: Run, inv: Invocation, kind: str, words: Sequence[Word], origin: str
) -> Finding | None:
    """Judge program text given to ``inv`` (``kind`` as in :class:`Exec`), made of
    ``words`` joined by spaces, in each of its readings."""
    if len(words) == 1 and not words[0].subs:  # the common case: bash -c '...'
        return _judge_program(run, inv, kind, words[0].text, words, origin)
    texts = [""]
    for k, word in enumerate(words):
        sep = " " if k else ""
        texts = [head + sep + tail for head in texts for tail in run.readings(word)]
        if len(texts) > MAX_READINGS:
            return Finding(
                "dynamic-code",
                words_snippet(words),
                f"{origin} may read in more than {MAX_READINGS} ways once its "
                f"substitutions have run; the guard judges only program text it can read",
            )
    run.budget.made_text(sum(map(len, texts)))
    for text in texts:
        found = _judge_program(run, inv, kind, text, words, origin)
        if found is not None:
            return found
    return None


_OWN_DOLLAR = re.compile(r"\s*\$(?:[0-9]+|NF|NR|[A-Za-z!=])\s*")
"""A program of awk (``$1``, ``$NF``) or sed (``$p``, ``$d``, ``$!N``) that looks like a
shell variable: ``'$p'`` and ``"$p"`` read alike once quotes are removed."""


def _judge_program(
    run: Run, inv: Invocation, kind: str, text: str, words: Sequence[Word], origin: str
) -> Finding | None:
    if (
        ("$" in text or SUBST in text)
        and WHOLE_EXPANSION.fullmatch(text)
        and not (kind in OWN_SYNTAX and _OWN_DOLLAR.fullmatch(text))
    ):
        token = text.strip()
        subs = [sub for w in words for sub in w.subs]
        if token == SUBST and len(subs) == 1:
            token = f"$({script_snippet(subs[0])})"
        what = (
            "text made at run time"
            if token == SUBST
            else f"{show(token)!r}, text known only at run time,"
        )
        return Finding(
            "dynamic-code",
            show(token),
            f"{inv.shown} runs {what} as its program; the guard judges only program text "
            f"it can read",
        )
    if kind == "crontab":
        return run.nested(_crontab_commands(text), origin)
    if kind in ("shell", "eval", "source"):
        return run.nested(text, origin)
    return _own_program(inv, run, kind, text)


def _own_program(inv: Invocation, run: Run, kind: str, text: str) -> Finding | None:
    """An interpreter's program, or one in its own syntax (awk, sed, make)."""
    judge = OWN_SYNTAX.get(kind)
    if judge is not None:
        found = judge(inv, run, text)
        if found is not None or kind != "awk":
            return found
    return _inline_program(inv, run, text)


def _stream_program(
    run: Run, inv: Invocation, info: Exec, stream: Stream, how: str
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
            found = _own_program(inv, run, info.kind, text)
        if found is not None:
            return found
    return None


def _program_file(run: Run, inv: Invocation, info: Exec, word: Word, how: str) -> Finding | None:
    """``bash <(...)``, ``source <(...)``: the program is a process's output."""
    sub = word.subs[0]
    stream = run.substitution(sub)
    if stream.readings or stream.hidden or setup_code(sub):
        return _stream_program(run, inv, info, stream, how)
    token = f"<({script_snippet(sub)})"
    return Finding(
        "dynamic-code",
        token,
        f"{inv.shown} runs the output of {token!r} as its program, text known only at "
        f"run time; the guard judges only program text it can read",
    )


def rule_code(inv: Invocation, run: Run) -> Finding | None:
    """Program text given to a shell/interpreter: downloads, nested scripts, one-liners."""
    info = exec_info(inv)
    if info is None:
        return None
    for word in info.code:
        for sub in word.subs:
            source = downloader(sub)
            if source is not None:
                return _rce(inv, source, "as program text")
    if info.stdin:
        for r in inv.redirects:
            feeds = [r.target] if r.op in ("<", "<<<") else []
            if r.heredoc is not None:
                feeds.append(r.heredoc)
            for word in feeds:
                for sub in word.subs:
                    source = downloader(sub)
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
        return _program(run, inv, info.kind, info.code, info.origin or f"{inv.shown} script")
    # sh -c SCRIPT NAME ARGS...: "$1", "$@" in the script are ARGS
    params = [w.text for w in info.params]
    with run.positional(params[1:] if params else None, zero=params[0] if params else None):
        return _program(run, inv, info.kind, info.code, f"{inv.shown} script")


_NET_CODE = re.compile(
    r"\bsocket\b|fsockopen|TCPSocket|IO::Socket|\bnet\.(?:connect|Socket|createConnection)"
    r"|/inet/(?:tcp|udp)/|require\s*\(\s*['\"](?:node:)?(?:net|tls)['\"]\s*\)"
    r"|from\s+['\"](?:node:)?(?:net|tls)['\"]",
    re.IGNORECASE,
)
_SPAWN_CODE = re.compile(
    r"dup2|pty\.spawn|subprocess|os\.system|\bexec(?:[lv]p?e?)?\s*\(|\bsystem\s*\(|popen"
    r"|proc_open|passthru|shell_exec|child_process|\bspawn\s*\(|/bin/(?:ba|z|da|k)?sh\b"
    r"|cmd\.exe|\b(?:system|exec)\s*[$\"']|fdopen|open\s*\(\s*STD(?:IN|OUT)\b"
    r"|os\.execute|io\.popen",
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
_STRING_LITERAL = re.compile(r"(['\"`])((?:(?!\1)[^\\\n]|\\.){1,4096}?)\1")


def _inline_program(inv: Invocation, run: Run, code: str) -> Finding | None:
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
    if inv.name in INTERPRETERS and INTERPRETERS[inv.name].backticks:
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
            found = judge_read(run, derived(literal), f"{inv.shown} program")
            if found is not None:
                return found
    return None


def _is_network_tool(inv: Invocation) -> bool:
    if inv.name == "openssl":
        return any(w.text == "s_client" for w in inv.args)
    return inv.name in _NETWORK_TOOLS


def pipeline_rules(stages: Sequence[Sequence[Invocation | None]], run: Run) -> Finding | None:
    for j in range(1, len(stages)):
        for inv in stages[j]:
            if inv is None:
                continue
            info = exec_info(inv)
            if info is None or not info.stdin:
                continue
            others = [o for k, s in enumerate(stages) if k != j for o in s if o is not None]
            upstream = [o for s in stages[:j] for o in s if o is not None]
            network = next((o for o in others if _is_network_tool(o)), None)
            if network is not None and not allowed(run, inv, network):
                return Finding(
                    "reverse-shell",
                    network.snippet(),
                    f"{inv.shown} reads commands through a pipe joined to {network.snippet()!r}",
                )
            download = next((o for o in upstream if o.name in DOWNLOADERS), None)
            if download is not None and not allowed(run, inv, download):
                return _rce(inv, download.snippet(), "piped into it")
            if allowed(run, inv):
                continue
            found = _stream_program(run, inv, info, pipe_stream(stages[:j]), "piped into")
            if found is not None:
                return found
    return None


_SINK_OPS = frozenset({">", ">>", ">|", "&>", "&>>"})


def pipeline_fifo(stages: Sequence[Sequence[Invocation | None]], run: Run) -> Finding | None:
    """``sh -i < F 2>&1 | nc HOST PORT > F``: a shell reads its commands from a file (a
    named pipe made by ``mkfifo F`` or ``mknod F p``) that the pipeline, joined to a
    network tool, writes."""
    invs = [inv for stage in stages for inv in stage if inv is not None]
    network = next((o for o in invs if _is_network_tool(o)), None)
    if network is None:
        return None
    written = {
        r.target.text
        for inv in invs
        for r in inv.redirects
        if r.op in _SINK_OPS and r.fd in (None, 1)
    }
    for inv in invs:
        info = exec_info(inv) if inv is not network else None
        if info is None or not info.stdin:
            continue
        feeds = {r.target.text for r in inv.redirects if r.op == "<" and r.fd in (None, 0)}
        if feeds & written and not allowed(run, inv, network):
            return Finding(
                "reverse-shell",
                network.snippet(),
                f"{inv.shown} reads commands from a pipe file that {network.snippet()!r} "
                f"writes (a loop through a named pipe)",
            )
    return None


def _sink_readers(inv: Invocation) -> list[tuple[Invocation, Exec]]:
    """Shells and interpreters reading a program from ``>(...)`` sinks of ``inv``
    (``CMD > >(sh)``, ``tee >(bash)``)."""
    sinks = [r.target for r in inv.redirects if r.op in _SINK_OPS and r.target.process]
    if inv.name == "tee" or inv.name in DOWNLOADERS:  # tee >(sh), curl -o >(sh) URL
        sinks += [w for w in inv.args if w.process]
    readers = []
    for sink in sinks:
        for cmd in sink.subs[0].commands:
            unwrapped = unwrap(list(cmd.words)) if cmd.words else None
            if unwrapped is None:
                continue
            reader = Invocation(unwrapped.name, unwrapped.args, {}, cmd.redirects)
            info = exec_info(reader)
            if info is not None and info.stdin:
                readers.append((reader, info))
    return readers


def _without_sinks(inv: Invocation) -> Invocation:
    return replace(
        inv,
        args=[w for w in inv.args if not w.process],
        redirects=tuple(r for r in inv.redirects if not r.target.process),
    )


def rule_process_sinks(inv: Invocation, run: Run) -> Finding | None:
    """``CMD > >(sh)``, ``tee >(bash) <<< TEXT``: a shell reads what ``inv`` writes."""
    if not inv.redirects and inv.name != "tee" and inv.name not in DOWNLOADERS:
        return None
    for reader, info in _sink_readers(inv):
        # a download written into >(sh) is the same as one piped into sh
        if inv.name in DOWNLOADERS and not allowed(run, reader, inv):
            return _rce(reader, inv.snippet(), "written into it")
        stream = pipe_stream([[_without_sinks(inv)]])
        found = _stream_program(run, reader, info, stream, "written into")
        if found is not None:
            return found
    return None


def pipeline_sinks(stages: Sequence[Sequence[Invocation | None]], run: Run) -> Finding | None:
    """``echo TEXT | tee >(sh)``: the pipe's text reaches the shell through ``tee``."""
    for j in range(1, len(stages)):
        for inv in stages[j]:
            if inv is None or inv.name != "tee":
                continue
            upstream = [o for stage in stages[:j] for o in stage if o is not None]
            download = next((o for o in upstream if o.name in DOWNLOADERS), None)
            for reader, info in _sink_readers(inv):
                if download is not None and not allowed(run, reader, download):
                    return _rce(reader, download.snippet(), "written into it")
                stream = pipe_stream([*stages[:j], [_without_sinks(inv)]])
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
