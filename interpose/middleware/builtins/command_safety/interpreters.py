"""Library calls in interpreter programs (``python -c``, ``perl -e``, ``node -e``,
``bun -e``, ``deno eval``, ``ruby -e``, ``php -r``, and programs fed on stdin or by a
here-document) that delete or write files or run a command given as a list of arguments.

Path expressions the guard can compute are made literals first (:func:`_computed`: the
home directory joined to a literal, the working directory); ``os.walk(ROOT)`` in a
program that deletes is a recursive delete of ROOT; ``open(P, 'w')``,
``fs.writeFileSync(P)``, ``Deno.writeTextFile(P)`` are writes judged as the shell's.

Used by :mod:`.remote_exec`'s one-liner judgement.  The common calls are judged when
their path argument is a literal string or the home directory spelled the usual ways
(``shutil.rmtree('/etc')``, ``fs.rmSync(os.homedir(), {recursive: true})``,
``FileUtils.rm_rf(Dir.home)``, ``rmtree($ENV{HOME})``): a recursive delete is judged as
``rm -r`` of that path, a single-file delete as a write (system files, devices).  An
argument the guard cannot evaluate (``os.path.join('/', d)``, a variable) is refused when
the program names a critical path anywhere in its string literals or the home directory,
since the call may reach it; otherwise it is allowed.  Argument lists
(``subprocess.run(['rm', '-rf', '/'])``, ``system('rm', '-rf', '/')``,
``execFileSync('rm', ['-rf', '/'])``) are judged as the command they run.
"""

from __future__ import annotations

import re

from ..shell import Word
from .invocation import Invocation
from .model import Finding
from .paths import critical, display, show
from .reach import judge_write
from .run import Run

_RECURSIVE = (
    r"shutil\.rmtree|(?:File::Path::)?rmtree|remove_tree|FileUtils\.(?:rm_rf|rm_r|rmtree|"
    r"remove_dir|remove_entry(?:_secure)?|rm_f)|fs\.(?:rmSync|rm|promises\.rm|rmdirSync|"
    r"rmdir|promises\.rmdir)|fse?\.(?:removeSync|remove|emptyDirSync|emptyDir)|"
    r"rimraf(?:\.sync)?|Deno\.remove(?:Sync)?|rmSync|rmdirSync|removeSync|emptyDirSync"
)
_SINGLE = (
    r"os\.(?:remove|unlink)|File\.(?:delete|unlink)|fs\.(?:unlinkSync|unlink|promises\.unlink)"
    r"|unlinkSync|unlink|FileUtils\.rm"
)
_ARG = r"((?:[^,()]|\([^()]*\))*)"
_CALL = re.compile(
    rf"\b({_RECURSIVE}|{_SINGLE})\s*(?:\(\s*{_ARG}|\s((?:['\"])[^'\"]*['\"]))"
)  # perl: unlink "/x" needs no parentheses
_CALL_RECURSIVE = re.compile(rf"(?:{_RECURSIVE})$")
_PATHLIB = re.compile(
    r"\bPath\s*\(\s*" + _ARG + r"\)\s*(?:\.\s*(?:expanduser|resolve|absolute)\s*\(\s*\))*"
    r"\s*\.\s*(unlink|rmdir)\s*\("
)
_LITERAL = re.compile(r"""^\s*[rbuf]{0,2}(['"`])((?:(?!\1)[^\\]|\\.)*)\1\s*$""")
_HOME_EXPR = re.compile(
    r"Path\.home\(\)|os\.path\.expanduser\(\s*['\"]~['\"]\s*\)"
    r"|(?:require\(\s*['\"](?:node:)?os['\"]\s*\)\s*\.\s*|\bos\.)?\bhomedir\(\)|Dir\.home"
    r"|(?:os\.environ|ENV|\$ENV|process\.env|getenv|os\.getenv|Deno\.env\.get)"
    r"\s*[\[{(.]\s*['\"]?HOME\b['\"]?\s*[\])}]?"
    r"|File\.expand_path\(\s*['\"]~['\"]\s*\)|\$_SERVER\[\s*['\"]HOME['\"]\s*\]"
)
_EXPANDUSER = re.compile(r"""^\s*(?:os\.path\.expanduser|File\.expand_path)\s*\(\s*(.*)\)\s*$""")
_QUOTED = re.compile(r"""(['"`])((?:(?!\1)[^\\\n]|\\.){0,4096}?)\1""")
_ARGV_CALL = re.compile(
    r"\b(?:subprocess\.(?:run|call|check_call|check_output|Popen)|Popen|os\.exec[lv]p?e?"
    r"|os\.spawn[lv]p?e?|system|exec|spawnSync|spawn|execFileSync|execFile|Open3\.\w+)"
    r"\s*\(\s*(\[?(?:[^()]|\([^()]*\))*)\)"
)


_CWD_EXPR = re.compile(r"\b(?:os\.getcwd|process\.cwd|Deno\.cwd)\(\s*\)|\bDir\.pwd\b")
_PATH_PART = r"""\s*(['"])([^'"\\\n]*)\1"""
_HOME_PLUS = re.compile(r"(?:" + _HOME_EXPR.pattern + r")\s*\+" + _PATH_PART)
_HOME_DIV = re.compile(r"Path\.home\(\)((?:\s*/\s*(['\"])[^'\"\\\n]*\2)+)")
_HOME_JOIN = re.compile(
    r"(?:os\.path\.join|(?:require\(\s*['\"](?:node:)?path['\"]\s*\)\s*\.\s*|\bpath\.)"
    r"(?:join|resolve))\(\s*(?:" + _HOME_EXPR.pattern + r")((?:\s*,\s*(['\"])[^'\"\\\n]*\2)+)\s*\)"
)
_HOME_TEMPLATE = re.compile(r"`\$\{\s*(?:" + _HOME_EXPR.pattern + r")\s*\}(/[^`$\\]*)`")
"""A JavaScript template literal: ``${os.homedir()}/.ssh/id_rsa``."""
_CWD_PLUS = re.compile(r"(?:" + _CWD_EXPR.pattern + r")\s*\+" + _PATH_PART)
_CWD_JOIN = re.compile(
    r"os\.path\.join\(\s*(?:" + _CWD_EXPR.pattern + r")((?:\s*,\s*(['\"])[^'\"\\\n]*\2)+)\s*\)"
)
_PARTS = re.compile(r"""(['"])([^'"\\\n]*)\1""")
_WALK = re.compile(r"\bos\.walk\(\s*" + r"((?:[^,()]|\([^()]*\))*)")
_WALK_DELETE = re.compile(r"\bos\.(?:remove|unlink|rmdir)\s*\(|\bshutil\.rmtree\s*\(")
_WRITE_CALL = re.compile(
    r"\b(?:(?:fs\.)?(?:writeFileSync|appendFileSync|promises\.writeFile|promises\.appendFile)"
    r"|fs\.(?:writeFile|appendFile)|Deno\.(?:writeTextFile|writeFile)(?:Sync)?)"
    r"\s*\(\s*((?:[^,()]|\([^()]*\))*)"
)
_OPEN_WRITE = re.compile(
    r"\b(?:open|io\.open)\(\s*((?:[^,()]|\([^()]*\))*),\s*(?:mode\s*=\s*)?['\"]([rwabxt+]*)['\"]"
)


def _computed(code: str) -> str:
    """``code`` with the path expressions the guard can compute turned into literals:
    the home directory joined to a literal (``os.environ['HOME'] + '/.netrc'``,
    ``Path.home() / '.aws' / 'credentials'``, ``os.path.join(os.path.expanduser('~'),
    '.ssh')``, ``require('os').homedir() + '/.bashrc'``) and the working directory
    (``os.getcwd()``, ``process.cwd()``)."""

    def joined(parts: str, root: str = "~") -> str:
        names = [m.group(2).strip("/") for m in _PARTS.finditer(parts)]
        return f"'{root}/" + "/".join(n for n in names if n) + "'"

    # substring tests first: most programs name neither, and a regex pass over a long
    # program is what the 64 KB benchmark pays for
    if "HOME" in code or "home" in code or "expanduser" in code:
        code = _HOME_PLUS.sub(lambda m: "'~" + m.group(m.lastindex or 0) + "'", code)
        code = _HOME_DIV.sub(lambda m: joined(m.group(1)), code)
        code = _HOME_JOIN.sub(lambda m: joined(m.group(1)), code)
        if "`" in code:
            code = _HOME_TEMPLATE.sub(lambda m: "'~" + m.group(m.lastindex or 0) + "'", code)
    if "cwd" in code or "pwd" in code:
        code = _CWD_PLUS.sub(lambda m: "'." + m.group(m.lastindex or 0) + "'", code)
        code = _CWD_JOIN.sub(lambda m: joined(m.group(1), "."), code)
        code = _CWD_EXPR.sub("'.'", code)
    return code


def _evaluate(arg: str) -> str | None:
    """The path an argument expression names, when the guard can tell."""
    if _HOME_EXPR.fullmatch(arg.strip()):
        return "~"
    m = _EXPANDUSER.match(arg)
    if m is not None:
        arg = m.group(1)
    m = _LITERAL.match(arg)
    if m is None or "${" in m.group(2) or ("{" in m.group(2) and arg.lstrip()[:1] == "f"):
        return None
    return m.group(2)


def _names_critical(code: str) -> str | None:
    """A critical path the program's literals (or home expressions) name, if any."""
    if _HOME_EXPR.search(code):
        return "~"
    for m in _QUOTED.finditer(code):
        text = m.group(2)
        if text.startswith(("/", "~")) and critical(text.rstrip("/") or "/") is not None:
            return text
    return None


def library_calls(inv: Invocation, run: Run, code: str) -> Finding | None:
    """Judge the delete calls, writes and argument-list commands in ``code`` (see module
    doc)."""
    code = _computed(code)
    for m in _CALL.finditer(code):
        found = _judge_delete(inv, run, code, m.group(1), m.group(2) or m.group(3) or "")
        if found is not None:
            return found
    for m in _PATHLIB.finditer(code):
        found = _judge_delete(inv, run, code, f"Path(...).{m.group(2)}", m.group(1))
        if found is not None:
            return found
    if "os.walk" in code and _WALK_DELETE.search(code):  # os.walk(ROOT) + os.remove
        for m in _WALK.finditer(code):
            found = _judge_delete(inv, run, code, "os.walk+os.remove", m.group(1), recursive=True)
            if found is not None:
                return found
    for m in _WRITE_CALL.finditer(code) if "File" in code else ():
        found = _judge_written(inv, run, m.group(1))
        if found is not None:
            return found
    for m in _OPEN_WRITE.finditer(code) if "open" in code else ():
        if any(c in m.group(2) for c in "wax+"):
            found = _judge_written(inv, run, m.group(1))
            if found is not None:
                return found
    for m in _ARGV_CALL.finditer(code):
        words = [Word(q.group(2), quoted=True) for q in _QUOTED.finditer(m.group(1))]
        if len(words) > 1:
            found = run.argv(words, f"{inv.shown} program")
            if found is not None:
                return found
    return None


def _judge_written(inv: Invocation, run: Run, arg: str) -> Finding | None:
    """A file the program writes (``open(P, 'wb')``, ``fs.appendFileSync(P, ...)``),
    judged as a shell write: devices, system files, persistence."""
    path = _evaluate(arg)
    if path is None:
        return None
    word = Word(path, quoted=True, tilde=path.startswith("~"))
    return judge_write(run, word, f"{inv.shown} program")


def _judge_delete(
    inv: Invocation,
    run: Run,
    code: str,
    function: str,
    arg: str,
    *,
    recursive: bool = False,
) -> Finding | None:
    recursive = (
        recursive
        or _CALL_RECURSIVE.match(function) is not None
        or (function.endswith("rmdir") and "recursive" in code)
    )
    call = f"{function}({arg.strip()[:40]})"
    path = _evaluate(arg)
    if path is None:
        named = _names_critical(code) if recursive else None
        if named is None:
            return None
        return Finding(
            "fs-destruction",
            call,
            f"{inv.shown} program calls {call}, whose target the guard cannot evaluate, "
            f"in a program that names {show(named)!r}; refused as unknown",
        )
    word = Word(path, quoted=True, tilde=path.startswith("~"))
    if not recursive:
        return judge_write(run, word, f"{inv.shown} program {function}")
    hit = run.doomed(word, recursive=True, unknown=True)
    if hit is None:
        return None
    shown, why = hit
    return Finding(
        "fs-destruction",
        call,
        f"{inv.shown} program calls {call} on {display(shown)!r}, {why} (token {path!r})",
    )
