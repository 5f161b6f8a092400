"""A command hook's tool filter: its allow/deny lists as one tool matcher."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...errors import ConfigError
from ...pipeline.tools import TOOL_ALIASES, TOOL_GROUPS, normalize_tool_name

__all__ = ["tool_matcher"]

# A plain tool name, as the tool filter builtin defines it; any other string is a regex.
_NAME = re.compile(r"[\w.\-]+")
_GLOBAL_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")
_FLAG_LETTERS = ((re.ASCII, "a"), (re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"))


def tool_matcher(
    allow: Sequence[object], deny: Sequence[object], where: str
) -> tuple[re.Pattern[str] | None, frozenset[str]]:
    """One compiled pattern selecting the tools (None: every tool), and the plain tool
    names the lists mention (checked against the known tools at install).

    The registry searches a tool matcher in the normalized name and then in that name's
    aliases; a negative (deny) part would be bypassed by the alias search, so the
    pattern refuses the alias spellings outright and accounts for them itself: a regex
    that matches an alias also selects the canonical name.

    Raises:
        ConfigError: an item that is not a str or a compiled pattern, an unknown group,
            an invalid regex.
    """
    names: set[str] = set()
    allowed = _alternation(allow, "allow", where, names)
    denied = _alternation(deny, "deny", where, names)
    if not allowed and not denied:
        return None, frozenset(names)
    aliases = "|".join(re.escape(a) for a in sorted(TOOL_ALIASES))
    source = f"^(?!(?:{aliases})$)"
    if denied:
        source += f"(?!.*?(?:{denied}))"
    if allowed:
        source += f"(?=.*?(?:{allowed}))"
    try:
        return re.compile(source), frozenset(names)
    except re.error as exc:  # e.g. two regexes defining the same group name
        raise ConfigError(f"{where}: allow/deny regexes cannot be combined: {exc}") from None


def _alternation(items: Sequence[object], field: str, where: str, names_out: set[str]) -> str:
    """An alternation that ``re.search`` finds in a normalized tool name exactly when one
    of ``items`` matches it ("" for no items)."""
    names: set[str] = set()
    patterns: list[str] = []
    for item in items:
        pattern: re.Pattern[str] | None = None
        if isinstance(item, re.Pattern):
            pattern = item
        elif not isinstance(item, str) or not item.strip():
            raise ConfigError(
                f"{where}: {field} items are tool names, group:* names or regexes, got {item!r}"
            )
        elif item.startswith("group:"):
            if item not in TOOL_GROUPS:
                raise ConfigError(
                    f"{where}: {field}: unknown tool group {item!r}; "
                    f"groups: {', '.join(sorted(TOOL_GROUPS))}"
                )
            names |= TOOL_GROUPS[item]
        elif _NAME.fullmatch(item.strip()):
            name = normalize_tool_name(item)
            names.add(name)
            names_out.add(name)
        else:
            try:
                pattern = re.compile(item)
            except re.error as exc:
                raise ConfigError(
                    f"{where}: {field}: {item!r} is not a valid regex: {exc}"
                ) from None
        if pattern is not None:
            patterns.append(_scoped(pattern, where))
            names |= {
                canonical for alias, canonical in TOOL_ALIASES.items() if pattern.search(alias)
            }
    parts = [f"^(?:{'|'.join(re.escape(n) for n in sorted(names))})$"] if names else []
    parts += patterns
    return "|".join(parts)


def _scoped(pattern: re.Pattern[str], where: str) -> str:
    """``pattern`` as a group that keeps its meaning inside a larger pattern: its flags
    scoped to it, its group names dropped (two items may use the same name).

    Raises:
        ConfigError: the pattern refers to a group (``\\1``, ``(?P=name)``, ``(?(1)…)``),
            whose number or name would change in the combined pattern.
    """
    source = pattern.pattern
    while match := _GLOBAL_FLAGS.match(source):  # global flags are only legal up front
        source = source[match.end() :]
    parts: list[str] = []
    i, n, in_class = 0, len(source), False
    while i < n:
        char = source[i]
        if char == "\\":
            if source[i + 1 : i + 2] in _NONZERO_DIGITS and not in_class:
                raise ConfigError(_GROUP_REFERENCE.format(where=where, pattern=pattern.pattern))
            parts.append(source[i : i + 2])
            i += 2
        elif in_class:
            in_class = char != "]"
            parts.append(char)
            i += 1
        elif char == "[":
            # a "]" right after "[" or "[^" is a literal, not the end of the class
            start = i + 1 + (source[i + 1 : i + 2] == "^")
            start += source[start : start + 1] == "]"
            parts.append(source[i:start])
            i, in_class = start, True
        elif source.startswith(("(?P=", "(?("), i):
            raise ConfigError(_GROUP_REFERENCE.format(where=where, pattern=pattern.pattern))
        elif source.startswith("(?P<", i):
            parts.append("(")  # a plain capturing group: numbers stay as they were
            i = source.index(">", i) + 1
        else:
            parts.append(char)
            i += 1
    source = "".join(parts)
    letters = "".join(letter for flag, letter in _FLAG_LETTERS if pattern.flags & flag)
    if pattern.flags & re.VERBOSE:
        # a comment may run to the end of the pattern: close the group on a new line
        return f"(?{letters}x:{source}\n)"
    return f"(?{letters}:{source})" if letters else f"(?:{source})"


_NONZERO_DIGITS = frozenset("123456789")
_GROUP_REFERENCE = (
    "{where}: the regex {pattern!r} refers to a group, which a tool filter cannot do; "
    "write it without backreferences"
)
