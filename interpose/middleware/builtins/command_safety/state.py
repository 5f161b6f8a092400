"""Commands that change the analysis state rather than the system: ``cd``/``pushd`` move
the working directory, ``export``/``declare``... assign variables, ``for``/``select`` and
``read`` give a variable the values it will take in turn (``read`` splits on a known
``$IFS``; ``read -a`` makes an array), ``set --``/``shift`` the positional parameters,
``alias`` defines a name that later commands expand; and a runner that names its
command's working directory (``env -C``, ``sudo -D``) has the command judged there.

Values that vary: a loop variable (``for d in / /etc``), what ``read`` reads from a pipe,
a here-string, a here-document or the loop's redirection (``while read f; do ...; done
<<< x``; a pipe into ``read`` is followed as zsh runs it, though bash drops the value in
a subshell), and a function's arguments (``f(){ rm -rf "$1"; }; f /``, one judgement per
call) are each judged in turn, every value, within the analysis budget; when the input
is a file or the terminal, the value is unknown, and a dangerous verb with an unknown target is
refused (see :func:`.paths.unknown_risk`).
"""

from __future__ import annotations

import re

from ..shell import SUBST, Redirect, Script, SimpleCommand, Word
from .expansion import PARAM
from .find import find_plan
from .invocation import Invocation
from .model import HOME, Finding
from .options import opts, parse_opts, word_set
from .run import Rule, Run, tilde
from .text import pipe_stream, printf_readings
from .wrappers import ASSIGNMENT, WRAPPERS, canon

# -- shell state ------------------------------------------------------------------------------


def _rule_cd(inv: Invocation, run: Run) -> Finding | None:
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


def _rule_export(inv: Invocation, run: Run) -> Finding | None:
    nameref = any(w.text.startswith("-") and "n" in w.text for w in inv.args)
    for word in inv.args:
        if ASSIGNMENT.match(word.text):
            if nameref and inv.name != "export":  # declare -n r=HOME: $r is $HOME
                name, _, target = word.text.partition("=")
                run.bind(name, [f"${{{target}}}" if ASSIGNMENT.match(target + "=") else None])
                continue
            run.assign(word, persistent=True)
    return None


def _rule_printf(inv: Invocation, run: Run) -> Finding | None:
    """``printf -v NAME FORMAT ARGS``: NAME takes what printf would print."""
    args = [w.text for w in inv.args]
    if len(args) < 3 or args[0] != "-v":
        return None
    readings = printf_readings(args[2:])
    texts = [r.decode("utf-8", "replace") for r in readings] if readings else [None]
    run.bind(args[1], [t if t is None or SUBST not in t else None for t in texts])
    return None


def _value(run: Run, text: str) -> str | None:
    """A value as the guard knows it; None when part of it is made at run time."""
    if SUBST in text or ("$" in text and PARAM.search(text.replace("$HOME", ""))):
        return None
    return text


def _rule_for(inv: Invocation, run: Run) -> Finding | None:
    """``for NAME in WORDS``: NAME takes each word (``for NAME``: the unknown ``$@``)."""
    if not inv.args or not ASSIGNMENT.match(inv.args[0].text + "="):
        return None
    name, rest = inv.args[0].text, inv.args[1:]
    if rest and rest[0].text == "in":
        run.bind(name, [_value(run, tilde(w)) for w in rest[1:]])
        if len(rest) == 2 and len(rest[1].subs) == 1:  # for v in $(cmd): cmd's lines
            run.listings = run.listings or {}
            run.listings[name] = rest[1].subs[0]
    elif "@" in run.vars:  # for NAME; do: the positional parameters
        run.bind(name, run.vars["@"].split() or [""])
    else:
        run.bind(name, [None])
    return None


_READ = opts("adinNptu")
_MAX_READ = 1 << 16  # characters of input split into lines and fields


def _fed_text(run: Run, redirects: tuple[Redirect, ...]) -> list[str | None] | None:
    """The texts redirections feed to stdin (None: not known); None when none does."""
    for r in reversed(redirects):
        if r.op == "<<<":
            text = run.expand_text(r.target.text)
            return [None if SUBST in text else text + "\n"]
        if r.op in ("<<", "<<-") and r.heredoc is not None:
            body = r.heredoc.text
            return [None if r.heredoc.subs or ("$" in body and PARAM.search(body)) else body]
        if r.op == "<":
            listed = run.listed(r.target.subs[0]) if r.target.process else None
            return [None] if listed is None else ["\n".join(w.text for w in listed)]
    return None


def _read_input(run: Run, inv: Invocation) -> list[str | None]:
    texts = _fed_text(run, inv.redirects)
    if texts is not None:
        return texts
    if any(up is not None for up in inv.stdin):
        stream = pipe_stream([list(inv.stdin)])
        if stream.complete:
            return [r.decode("utf-8", "replace") for r in stream.readings]
        found = [up for up in inv.stdin if up is not None and up.name == "find"]
        if found and len(found) == len([up for up in inv.stdin if up is not None]):
            return ["\n".join(w.text for f in found for w in find_plan(f.args).entries())]
        return [None]
    return _fed_text(run, inv.loop_input) or [None]


def _rule_read(inv: Invocation, run: Run) -> Finding | None:
    """``read NAME...``: each name takes its field of each line read, split on ``$IFS``
    (``IFS=, read a b <<< x,y``); ``read -a NAME``: the fields of the line, as an array."""
    parsed = parse_opts(inv.args, _READ)
    ifs = inv.env.get("IFS", run.vars.get("IFS"))
    array = parsed.value("-a")
    if array is not None:
        texts = _read_input(run, inv)
        known = len(texts) == 1 and texts[0] is not None and len(texts[0]) <= _MAX_READ
        line = texts[0].split("\n", 1)[0] if known and texts[0] is not None else None
        run.vars.pop(array.text, None)
        if line is None:
            run.vars.pop(array.text + "[]", None)
        else:  # a=(FIELDS...), read by "${a[@]}"
            run.vars[array.text + "[]"] = " ".join(f for f in _fields(line, ifs, -1) if f)
        return None
    names = [w.text for w in parsed.operands if ASSIGNMENT.match(w.text + "=")] or ["REPLY"]
    values: list[list[str | None]] = [[] for _ in names]
    for text in _read_input(run, inv):
        if text is None or len(text) > _MAX_READ:
            for column in values:
                column.append(None)
            continue
        for line in text.split("\n"):
            if not line.strip():
                continue
            fields = _fields(line, ifs, len(names) - 1)
            for k, column in enumerate(values):
                column.append(fields[k] if k < len(fields) else "")
    for name, column in zip(names, values, strict=True):
        run.bind(name, column or [None])
    upstream = [up for up in inv.stdin if up is not None]
    if upstream:  # cmd | while read v: cmd's lines
        run.listings = run.listings or {}
        run.listings[names[0]] = Script(
            tuple(SimpleCommand((Word(up.name), *up.args)) for up in upstream)
        )
    return None


def _fields(line: str, ifs: str | None, most: int) -> list[str]:
    """``line`` split on the characters of ``ifs`` (None: blanks) into at most
    ``most + 1`` fields (``most`` < 0: all), the last keeping the rest."""
    if ifs is None:
        return line.split(None, most)
    if not ifs:
        return [line]
    pattern = f"[{re.escape(ifs)}]+" if ifs.isspace() else f"[{re.escape(ifs)}]"
    return re.split(pattern, line.strip(" \t\n"), maxsplit=max(most, 0))


def _rule_alias(inv: Invocation, run: Run) -> Finding | None:
    """``alias NAME=VALUE...``: later commands expand NAME; VALUE is judged now, since
    defining it is the first step of running it."""
    for word in inv.args:
        name, eq, value = word.text.partition("=")
        if eq and name and not name.startswith("-"):
            run.define_alias(name, value)
            found = run.nested(value, f"alias {name!r}", lenient=True)
            if found is not None:
                return found
    return None


def _rule_set(inv: Invocation, run: Run) -> Finding | None:
    """``set -- A B``: the positional parameters become A, B."""
    texts = [tilde(w) for w in inv.args]  # set -- ~: the home directory, expanded now
    if "--" not in texts:
        return None
    _positional(run, texts[texts.index("--") + 1 :])
    return None


def _positional(run: Run, args: list[str]) -> None:
    for k in range(1, 10):
        run.bind(str(k), [args[k - 1] if k <= len(args) else ""])
    run.bind("@", [" ".join(args)])
    run.bind("*", [" ".join(args)])
    run.bind("#", [str(len(args))])


def _rule_shift(inv: Invocation, run: Run) -> Finding | None:
    """``shift [N]``: the positional parameters move down by N, when they are known
    (a count or parameters the guard does not know: they become unknown)."""
    count = inv.args[0].text if inv.args else "1"
    known = run.vars.get("@")
    if known is None or not count.isdigit():
        for name in ("1", "2", "3", "4", "5", "6", "7", "8", "9", "@", "*", "#"):
            run.bind(name, [None])
        return None
    args = known.split()
    if int(count) <= len(args):  # past the count, bash leaves them as they are
        _positional(run, args[int(count) :])
    return None


_CHDIR_RUNNERS = word_set("env sudo run0 systemd-run")
"""Runners with an option naming their command's working directory (``env -C DIR``,
``sudo -D DIR``, ``run0 --chdir``, ``systemd-run --working-directory``)."""


def _rule_runner_cwd(inv: Invocation, run: Run) -> Finding | None:
    """``env -C / rm -rf etc``: the command is judged again in the directory a runner
    gives it (a relative target is below that directory, not the shell's)."""
    if len(inv.layers) < 2:
        return None
    for layer in inv.layers[:-1]:
        name = canon(layer[0].text)
        if name not in _CHDIR_RUNNERS:
            continue
        parsed = parse_opts(layer[1:], WRAPPERS[name].opts, stop_at_operand=True)
        where = parsed.value("--chdir", "--working-directory")
        if where is not None:
            origin = f"{name} --chdir {where.text}"
            return run.inside_container(inv.layers[-1], origin, run.mounts, run.path(where))
    return None


RULES: dict[str, tuple[Rule, ...]] = {
    "set": (_rule_set,),
    "shift": (_rule_shift,),
    "printf": (_rule_printf,),
    "for": (_rule_for,),
    "select": (_rule_for,),
    "read": (_rule_read,),
    "alias": (_rule_alias,),
    "cd": (_rule_cd,),
    "pushd": (_rule_cd,),
    **dict.fromkeys(("export", "declare", "typeset", "local", "readonly"), (_rule_export,)),
}
GENERIC: tuple[Rule, ...] = (_rule_runner_cwd,)
