"""Canonical tool names, groups, aliases and tool matchers.

Matchers are compiled once, at registration, into a predicate over the normalized tool
name; the per-call path never sees a regex that was not already applied when the chain
for that tool was compiled.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from .._registrations import ToolMatcher as ToolMatcher
from ..errors import RegistrationError
from .confusables import fold_confusables

__all__ = [
    "KNOWN_TOOL_NAMES",
    "TOOL_ALIASES",
    "TOOL_GROUPS",
    "ToolMatcher",
    "compile_tool_matcher",
    "in_namespace",
    "normalize_tool_name",
]

TOOL_GROUPS: dict[str, frozenset[str]] = {
    "group:fs": frozenset({"read", "write", "edit", "apply_patch"}),
    "group:runtime": frozenset({"exec", "process"}),
    "group:memory": frozenset({"memory_search", "memory_get"}),
    "group:web": frozenset({"web_search", "web_fetch"}),
    "group:sessions": frozenset(
        {"sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "session_status"}
    ),
    "group:ui": frozenset({"browser", "canvas"}),
    "group:automation": frozenset({"cron", "gateway"}),
    "group:messaging": frozenset({"message"}),
    "group:nodes": frozenset({"nodes"}),
}

KNOWN_TOOL_NAMES: frozenset[str] = frozenset().union(
    *TOOL_GROUPS.values(), {"agents_list", "image", "tts"}
)

TOOL_ALIASES: dict[str, str] = {
    "bash": "exec",
    "apply-patch": "apply_patch",
    # shells of another language: still exec (every exec gate applies); the command guard
    # reads the call's raw name to judge the text as PowerShell or cmd
    "powershell": "exec",
    "pwsh": "exec",
    "cmd": "exec",
}

# canonical name -> the aliases that normalize to it (regex matchers see these too)
_ALIASES_OF: dict[str, tuple[str, ...]] = {}
for _alias, _canonical in TOOL_ALIASES.items():
    _ALIASES_OF[_canonical] = (*_ALIASES_OF.get(_canonical, ()), _alias)


# names normalized so far (a process sees few tool names): the lookup costs less than
# trimming and lower-casing an ASCII name again; past the bound, names are not remembered
NORMALIZED_CACHE_SIZE = 4096
_NORMALIZED: dict[str, str] = {}


def normalize_tool_name(name: str) -> str:
    """Return the canonical form of a tool name: trimmed, lower-cased, lookalike
    characters folded (NFKC, zero-width characters dropped, Cyrillic and Greek
    lookalikes of Latin letters: ``fold_confusables``), aliases resolved.

    >>> normalize_tool_name(" Bash ")
    'exec'
    """
    found = _NORMALIZED.get(name)
    if found is not None:
        return found
    key = name.strip().lower()
    if not key.isascii():
        key = fold_confusables(key).strip()
    key = TOOL_ALIASES.get(key, key)
    if len(_NORMALIZED) < NORMALIZED_CACHE_SIZE:
        _NORMALIZED[name] = key
    return key


def _describe_valid(known: Iterable[str]) -> str:
    names = ", ".join(sorted(known))
    groups = ", ".join(sorted(TOOL_GROUPS))
    return f"valid tool names: {names}; groups: {groups}"


def _names_predicate(names: frozenset[str]) -> Callable[[str], bool]:
    return names.__contains__


def _regex_predicate(pattern: re.Pattern[str]) -> Callable[[str], bool]:
    search = pattern.search
    # an alias is tried only when the pattern names it (r"^bash$" matches exec), so a
    # negative pattern such as r"^(?!exec$)" is not turned around by exec's aliases
    named = {
        tool: tuple(alias for alias in aliases if alias in pattern.pattern)
        for tool, aliases in _ALIASES_OF.items()
    }

    def matches(tool: str) -> bool:
        if search(tool) is not None:
            return True
        return any(search(alias) is not None for alias in named.get(tool, ()))

    return matches


def in_namespace(name: str, namespaces: Iterable[str]) -> bool:
    """Whether the normalized ``name`` lies in one of the declared tool ``namespaces``
    (prefixes such as ``mcp__time__``, whose tools are known only at run time)."""
    return any(name.startswith(prefix) for prefix in namespaces)


def _names_namespace(pattern: str, namespaces: Iterable[str]) -> bool:
    # a regex "names" a namespace when its literal start is the prefix (``mcp__time__.*``,
    # ``^mcp__time__get_``): it can match inside it once the tools are listed
    source = pattern.removeprefix("^")
    return any(source.startswith(prefix) for prefix in namespaces)


def compile_tool_matcher(
    matcher: ToolMatcher,
    known: frozenset[str],
    *,
    where: str,
    namespaces: frozenset[str] = frozenset(),
) -> Callable[[str], bool]:
    """Compile a tool matcher into a predicate over normalized tool names.

    ``matcher`` is a regex string or compiled pattern (``re.search`` on the normalized
    name, aliases included), a ``group:*`` name, or a list of names and groups.  ``known``
    is the set of tool names the matcher must be able to match (known + registered).
    ``namespaces`` are declared prefixes of tools not listed yet (an MCP server's
    ``mcp__<server>__``): a name inside one, or a regex that starts with one, is accepted.

    Raises:
        RegistrationError: invalid regex, unknown group, or a matcher that matches no
            known or registered tool (the message lists the valid names).
    """
    if isinstance(matcher, re.Pattern):
        predicate = _regex_predicate(matcher)
        shown = matcher.pattern
    elif isinstance(matcher, str):
        if matcher.startswith("group:"):
            predicate = _names_predicate(_group(matcher, where))
        else:
            try:
                pattern = re.compile(matcher)
            except re.error as exc:
                raise RegistrationError(
                    f"{where}: tool matcher {matcher!r} is not a valid regex: {exc}"
                ) from None
            predicate = _regex_predicate(pattern)
        shown = matcher
    elif isinstance(matcher, Sequence):
        names: set[str] = set()
        for item in matcher:
            if not isinstance(item, str):
                raise RegistrationError(
                    f"{where}: tool matcher list items must be str, got {type(item).__name__}"
                )
            if item.startswith("group:"):
                names |= _group(item, where)
            else:
                names.add(normalize_tool_name(item))
        predicate = _names_predicate(frozenset(names))
        unknown = sorted(n for n in names - known if not in_namespace(n, namespaces))
        if unknown:
            raise RegistrationError(
                f"{where}: tool matcher names unknown tools {unknown}; {_describe_valid(known)}"
            )
        shown = repr(list(matcher))
    else:
        raise RegistrationError(
            f"{where}: tool matcher must be a regex string, a compiled pattern, a group:* name "
            f"or a list of names, got {type(matcher).__name__}"
        )
    if not any(predicate(name) for name in known) and not (
        namespaces
        and (
            _names_namespace(shown, namespaces)
            if isinstance(matcher, str | re.Pattern)
            else any(in_namespace(normalize_tool_name(n), namespaces) for n in matcher)
        )
    ):
        raise RegistrationError(
            f"{where}: tool matcher {shown} matches no known or registered tool; "
            f"{_describe_valid(known)}"
        )
    return predicate


def compile_agent_matcher(matcher: str | re.Pattern[str], *, where: str) -> Callable[[str], bool]:
    """Compile an agent matcher (regex string or pattern, ``re.search`` on agent_id)."""
    if isinstance(matcher, re.Pattern):
        pattern = matcher
    elif isinstance(matcher, str):
        try:
            pattern = re.compile(matcher)
        except re.error as exc:
            raise RegistrationError(
                f"{where}: agent matcher {matcher!r} is not a valid regex: {exc}"
            ) from None
    else:
        raise RegistrationError(
            f"{where}: agent matcher must be a regex string or compiled pattern, "
            f"got {type(matcher).__name__}"
        )
    search = pattern.search
    return lambda agent: search(agent) is not None


def _group(name: str, where: str) -> frozenset[str]:
    try:
        return TOOL_GROUPS[name]
    except KeyError:
        raise RegistrationError(
            f"{where}: unknown tool group {name!r}; groups: {', '.join(sorted(TOOL_GROUPS))}"
        ) from None
