"""Parameter expansion as the shell performs it, for values the guard knows.

``${NAME:-default}``, ``${NAME%suffix}``, ``${NAME/a/b}``, ``${NAME^^}``... are computed
from a known value (or a known default), so ``D=/etc/x; rm -rf ${D%/x}`` is judged as
``rm -rf /etc``.  What cannot be computed stays as written, and the path judgements treat
text that still holds ``$`` as a value known only at run time (see
:func:`.paths.unknown_risk`).
"""

from __future__ import annotations

import itertools
import re
from collections import deque
from collections.abc import Callable

PARAM = re.compile(
    r"\$\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*])([^{}]*)\}|\$([A-Za-z_][A-Za-z0-9_]*|[0-9@*])"
)
"""``${NAME<op>}`` (name, operator text) or ``$NAME`` (name), positional parameters too."""

_MAX_VALUE = 4096  # longer values are not pattern-matched (cost grows with the square)
_OFFSET = re.compile(r":\s*(-?\s*[0-9]+)\s*(?::\s*([0-9]+)\s*)?")


def _pattern(glob: str) -> re.Pattern[str]:
    """A shell pattern (``*``, ``?``, ``[...]``) as a regex for :func:`re.fullmatch`."""
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            out.append(".*")
        elif c == "?":
            out.append(".")
        elif c == "[" and (end := glob.find("]", i + 2)) > 0:
            body = glob[i + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _strip(value: str, op: str, glob: str) -> str | None:
    """``#``/``##`` (shortest/longest prefix) and ``%``/``%%`` (suffix) removal."""
    if len(value) > _MAX_VALUE:
        return None
    pattern = _pattern(glob)
    n = len(value)
    if op[0] == "#":
        cuts = range(n + 1) if op == "#" else range(n, -1, -1)
        return next((value[i:] for i in cuts if pattern.fullmatch(value[:i])), value)
    cuts = range(n, -1, -1) if op == "%" else range(n + 1)
    return next((value[:i] for i in cuts if pattern.fullmatch(value[i:])), value)


def _replace(value: str, op: str) -> str | None:
    """``/pat/rep`` (first), ``//pat/rep`` (all), ``/#pat/rep``, ``/%pat/rep``."""
    if len(value) > _MAX_VALUE:
        return None
    body = op[1:]
    every = body.startswith("/")
    anchor = body[0] if body[:1] in ("#", "%") else ""
    if every or anchor:
        body = body[1:]
    glob, _, rep = body.partition("/")
    if not glob:
        return value
    regex = _pattern(glob).pattern
    if anchor == "#":
        regex = "^(?:" + regex + ")"
    elif anchor == "%":
        regex = "(?:" + regex + ")$"
    try:
        return re.sub(regex, rep.replace("\\", "\\\\"), value, count=0 if every else 1)
    except re.error:
        return None


def _case(value: str, op: str) -> str:
    if op == "^^":
        return value.upper()
    if op == ",,":
        return value.lower()
    if op == "^":
        return value[:1].upper() + value[1:]
    return value[:1].lower() + value[1:]


_MAX_BRACES = 64  # words one brace expansion may make


def braces(text: str) -> list[str] | None:
    """Brace expansion of an unquoted word (``~/{.,}*`` is ``~/.*`` and ``~/*``), done by
    bash before any other expansion; None when ``text`` has no ``{a,b}`` list.  Sequences
    (``{1..9}``) are left as written; past :data:`_MAX_BRACES` words, the rest is dropped."""
    if _brace_list(text) is None:
        return None
    out: list[str] = []
    pending = deque([text])
    while pending and len(out) < _MAX_BRACES:
        word = pending.popleft()
        found = _brace_list(word)
        if found is None:
            out.append(word)
            continue
        open_, close, commas = found
        head, tail = word[:open_], word[close + 1 :]
        cuts = [open_, *commas, close]
        pending.extend(head + word[a + 1 : b] + tail for a, b in itertools.pairwise(cuts))
    return out


def _brace_list(text: str) -> tuple[int, int, list[int]] | None:
    """The first ``{...,...}`` list in ``text`` (not ``${...}``): its braces and commas."""
    i = text.find("{")
    while i >= 0:
        if i == 0 or text[i - 1] != "$":
            depth = 0
            commas: list[int] = []
            for j in range(i, len(text)):
                c = text[j]
                if c == "{":
                    depth += 1
                elif c == "}":
                    depth -= 1
                    if depth == 0:
                        if commas:
                            return i, j, commas
                        break
                elif c == "," and depth == 1:
                    commas.append(j)
        i = text.find("{", i + 1)
    return None


def expand(
    m: re.Match[str], lookup: Callable[[str], str | None], default: Callable[[str], str]
) -> str:
    """The text of one :data:`PARAM` match ``m``: ``lookup`` gives a variable's known value
    (None: unknown), ``default`` expands the words of a default or a pattern.  Unknown
    results stay as written (``m.group(0)``)."""
    name = m.group(1) or m.group(3)
    op = m.group(2) or ""
    value = lookup(name)
    if not op:
        return m.group(0) if value is None else value
    head = op[:2] if op[:1] == ":" else op[:1]
    if head in (":-", "-", ":=", "="):  # a default stands in for an unknown value
        if value is not None and (value or head[0] != ":"):
            return value
        return default(op[len(head) :])
    if value is None:
        return m.group(0)
    result: str | None = None
    if head in (":?", "?"):
        result = value
    elif head in (":+", "+"):
        result = default(op[len(head) :]) if value or head == "+" else ""
    elif op[0] in "#%":
        twice = op[:2] in ("##", "%%")
        result = _strip(value, op[: 2 if twice else 1], default(op[2 if twice else 1 :]))
    elif op[0] == "/":
        result = _replace(value, op)
    elif op in ("^^", ",,", "^", ","):
        result = _case(value, op)
    elif (offset := _OFFSET.fullmatch(op)) is not None:
        start = int(offset.group(1).replace(" ", ""))
        if name in ("@", "*"):  # ${@:2}: the parameters from $2 on, not characters
            words = value.split()
            chosen = words[start - 1 :] if start > 0 else words[start:]
            count = offset.group(2)
            return " ".join(chosen[: int(count)] if count is not None else chosen)
        result = value[start:]
        if offset.group(2) is not None:
            result = result[: int(offset.group(2))]
    return m.group(0) if result is None else result


def split_ifs(text: str, ifs: str) -> list[str]:
    """``text`` split on the characters of a known ``$IFS`` (empty: not split)."""
    return re.split(f"[{re.escape(ifs)}]+", text) if ifs else [text]


def uses_variable(text: str, name: str) -> bool:
    """Whether ``text`` expands variable ``name`` (``$d``, ``${d}``, ``${d%/}``)."""
    return any((m.group(1) or m.group(3)) == name for m in PARAM.finditer(text))
