"""Claude Code's tool names and fields, and interpose's, both ways.

``ToolMapping`` is the table between interpose's tools and arguments (``exec``
``{"command"}``, ``read`` ``{"path"}``...) and Claude Code's (``Bash`` ``{"command"}``,
``Read`` ``{"file_path"}``...), both ways, plus the per-tool ``tool_response`` shape.
A ``CommandHook(..., dialect="claude-code")`` uses it to send a script exactly what
Claude Code sends and to map the script's ``updatedInput`` back.  An application adds
rows for its own tools with ``ToolMapping.add``.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...errors import ConfigError
from ...pipeline.payloads import ToolResult
from ...pipeline.tools import normalize_tool_name

__all__ = ["ClaudeTool", "ResponseBuilder", "ToolMapping", "default_tool_mapping", "tool_event"]

#: Builds Claude's ``tool_response`` from the call's arguments (interpose's keys) and
#: its result; called only when the tool's output is not already a dict.
ResponseBuilder = Callable[[Mapping[str, Any], ToolResult], Any]


@dataclass(frozen=True)
class ClaudeTool:
    """One row of the mapping: an interpose tool and the Claude Code tool it is.

    Attributes:
        claude: Claude's tool name (``"Read"``), what scripts compare ``tool_name`` with.
        tool: interpose's normalized name (``"read"``).
        fields: interpose argument key -> Claude ``tool_input`` key, for the keys that
            differ (``{"path": "file_path"}``); every other key passes through as it
            is.  Several interpose keys may map to one Claude key; the first listed is
            the one used when mapping back (unless the call itself used another).
        response: builds Claude's ``tool_response`` from the arguments and the result;
            None: the tool's output is sent as it is.
    """

    claude: str
    tool: str
    fields: Mapping[str, str] = field(default_factory=dict)
    response: ResponseBuilder | None = None


class ToolMapping:
    """The table between interpose's tools and Claude Code's, both ways.

    ``default_tool_mapping()`` returns a fresh copy of the built-in table; ``add`` a row
    for an application's own tool::

        mapping = default_tool_mapping()
        mapping.add(ClaudeTool("Deploy", "deploy", {"env": "environment"}))
        CommandHook("hooks/gate.py", dialect="claude-code", tool_mapping=mapping)

    Tools without a row keep their name (as the agent spelled it: ``mcp__github__x``)
    and their arguments.
    """

    __slots__ = ("_by_claude", "_by_tool")

    def __init__(self, tools: Iterable[ClaudeTool] = ()) -> None:
        self._by_tool: dict[str, ClaudeTool] = {}
        self._by_claude: dict[str, ClaudeTool] = {}
        for tool in tools:
            self.add(tool)

    def __repr__(self) -> str:
        rows = ", ".join(f"{t.tool}<->{t.claude}" for t in self._by_tool.values())
        return f"<ToolMapping {rows}>"

    def __iter__(self) -> Iterator[ClaudeTool]:
        return iter(tuple(self._by_tool.values()))

    def add(self, tool: ClaudeTool) -> None:
        """Add a row (replacing any row for the same interpose or Claude name).

        Raises:
            ConfigError: an empty name, or ``fields`` that are not str -> str.
        """
        if not isinstance(tool, ClaudeTool):
            raise ConfigError(f"tool mapping: expected a ClaudeTool, got {tool!r}")
        if not tool.claude or not tool.tool:
            raise ConfigError(f"tool mapping: names must not be empty: {tool!r}")
        for key, value in tool.fields.items():
            if not isinstance(key, str) or not isinstance(value, str) or not key or not value:
                raise ConfigError(f"tool mapping {tool.claude}: fields must map str to str")
        canonical = normalize_tool_name(tool.tool)
        if canonical != tool.tool:
            tool = ClaudeTool(tool.claude, canonical, tool.fields, tool.response)
        for old in (self._by_tool.get(tool.tool), self._by_claude.get(tool.claude.lower())):
            if old is not None:
                self._by_tool.pop(old.tool, None)
                self._by_claude.pop(old.claude.lower(), None)
        self._by_tool[tool.tool] = tool
        self._by_claude[tool.claude.lower()] = tool

    def copy(self) -> ToolMapping:
        """An independent copy (rows are immutable and shared)."""
        return ToolMapping(self._by_tool.values())

    def row(self, tool_name: str) -> ClaudeTool | None:
        """The row of a normalized interpose tool name; a name that is Claude's name
        lower-cased (an agent that calls ``WebFetch`` has it normalized to
        ``webfetch``) finds the row too."""
        return self._by_tool.get(tool_name) or self._by_claude.get(tool_name)

    def claude_name(self, tool_name: str, raw_name: str = "") -> str:
        """The name Claude Code would send for an interpose call."""
        row = self.row(tool_name)
        if row is not None:
            return row.claude
        return raw_name or tool_name

    def to_claude(
        self, tool_name: str, args: Mapping[str, Any], raw_name: str = ""
    ) -> tuple[str, dict[str, Any]]:
        """(Claude tool name, ``tool_input``) for an interpose call."""
        row = self.row(tool_name)
        if row is None:
            return raw_name or tool_name, dict(args)
        tool_input: dict[str, Any] = {}
        for key, value in args.items():
            target = row.fields.get(key, key)
            if target != key and target in args:
                target = key  # the call has Claude's key itself: leave both alone
            tool_input.setdefault(target, value)
        if row.claude == "Bash" and isinstance(tool_input.get("command"), list | tuple):
            # interpose's exec takes an argv list too; Claude's Bash only a line
            tool_input["command"] = shlex.join(str(a) for a in tool_input["command"])
        return row.claude, tool_input

    def to_interpose(
        self,
        claude_name: str,
        tool_input: Mapping[str, Any],
        like: Mapping[str, Any] | None = None,
    ) -> tuple[str, dict[str, Any]]:
        """(normalized interpose tool name, arguments) for a Claude tool call.

        ``like``: the arguments of the interpose call this answers (for a hook's
        ``updatedInput``), whose spelling of each key and of an exec argv list is kept.
        """
        row = self._by_claude.get(claude_name.lower()) or self._by_tool.get(
            normalize_tool_name(claude_name)
        )
        if row is None:
            return normalize_tool_name(claude_name), dict(tool_input)
        back: dict[str, list[str]] = {}
        for ours, theirs in row.fields.items():
            back.setdefault(theirs, []).append(ours)
        args: dict[str, Any] = {}
        for key, value in tool_input.items():
            candidates = back.get(key)
            if not candidates or (like is not None and key in like):
                args[key] = value
                continue
            used = [c for c in candidates if like is not None and c in like]
            args[(used or candidates)[0]] = value
        if (
            row.claude == "Bash"
            and like is not None
            and isinstance(like.get("command"), list | tuple)
            and isinstance(args.get("command"), str)
        ):
            args["command"] = shlex.split(args["command"])
        return row.tool, args

    def tool_response(self, tool_name: str, args: Mapping[str, Any], result: ToolResult) -> Any:
        """Claude's ``tool_response`` for a result: the tool's own output when it is a
        dict (a tool that already answers in Claude's shape) or has no row; else the
        row's shape."""
        row = self.row(tool_name)
        if row is None or row.response is None or isinstance(result.output, dict):
            return result.output
        return row.response(args, result)


def _text(output: Any) -> str:
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    if isinstance(output, bytes):
        return output.decode("utf-8", "replace")
    return json.dumps(output, default=str) if isinstance(output, list) else str(output)


def _path(args: Mapping[str, Any], *keys: str) -> str:
    for key in (*keys, "path", "file_path", "file"):
        value = args.get(key)
        if isinstance(value, str):
            return value
    return ""


def _bash_response(args: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    text = _text(result.output)
    return {
        "stdout": "" if result.is_error else text,
        "stderr": text if result.is_error else "",
        "interrupted": result.status == "aborted",
        "isImage": False,
    }


def _read_response(args: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    content = _text(result.output)
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    start = args.get("offset")
    return {
        "type": "text",
        "file": {
            "filePath": _path(args),
            "content": content,
            "numLines": lines,
            "startLine": start if isinstance(start, int) else 1,
            "totalLines": lines,
        },
    }


def _write_response(args: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    return {
        "type": "create",
        "filePath": _path(args),
        "content": args.get("content", ""),
        "structuredPatch": [],
        "success": not result.is_error,
    }


def _edit_response(args: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    return {
        "filePath": _path(args),
        "oldString": args.get("old_string", ""),
        "newString": args.get("new_string", ""),
        "replaceAll": bool(args.get("replace_all", False)),
        "structuredPatch": [],
        "userModified": False,
        "success": not result.is_error,
    }


def _multi_edit_response(args: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    return {
        "filePath": _path(args),
        "edits": list(args.get("edits") or []),
        "structuredPatch": [],
        "userModified": False,
        "success": not result.is_error,
    }


def _names(output: Any) -> list[str]:
    if isinstance(output, list | tuple):
        return [str(item) for item in output]
    return [line for line in _text(output).splitlines() if line]


def _glob_response(args: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    names = _names(result.output)
    return {"filenames": names, "numFiles": len(names), "truncated": False, "durationMs": 0}


def _grep_response(args: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    mode = args.get("output_mode") or "files_with_matches"
    if mode == "content":
        content = _text(result.output)
        return {
            "mode": mode,
            "numFiles": 0,
            "filenames": [],
            "content": content,
            "numLines": len(content.splitlines()),
        }
    names = _names(result.output)
    return {"mode": mode, "numFiles": len(names), "filenames": names}


def _web_fetch_response(args: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    text = _text(result.output)
    return {
        "url": args.get("url", ""),
        "result": text,
        "bytes": len(text.encode("utf-8")),
        "code": 500 if result.is_error else 200,
        "codeText": "Error" if result.is_error else "OK",
        "durationMs": 0,
    }


def _web_search_response(args: Mapping[str, Any], result: ToolResult) -> dict[str, Any]:
    output = result.output
    return {
        "query": args.get("query", ""),
        "results": output if isinstance(output, list) else [_text(output)],
        "durationSeconds": 0,
    }


_FILE = {"path": "file_path", "file": "file_path"}

_DEFAULT_ROWS = (
    ClaudeTool("Bash", "exec", {}, _bash_response),
    ClaudeTool("Read", "read", _FILE, _read_response),
    ClaudeTool("Write", "write", _FILE, _write_response),
    ClaudeTool("Edit", "edit", _FILE, _edit_response),
    ClaudeTool("MultiEdit", "multi_edit", _FILE, _multi_edit_response),
    ClaudeTool("Glob", "glob", {}, _glob_response),
    ClaudeTool("Grep", "grep", {}, _grep_response),
    ClaudeTool("WebFetch", "web_fetch", {}, _web_fetch_response),
    ClaudeTool("WebSearch", "web_search", {}, _web_search_response),
    ClaudeTool("Task", "task", {}, None),
    ClaudeTool("NotebookEdit", "notebook_edit", {"path": "notebook_path"}, None),
)

_DEFAULT = ToolMapping(_DEFAULT_ROWS)


def default_tool_mapping() -> ToolMapping:
    """A fresh copy of the built-in table (add rows to it freely)."""
    return _DEFAULT.copy()


def tool_event(
    mapping: ToolMapping,
    event_name: str,
    tool_name: str,
    raw_name: str,
    args: Mapping[str, Any],
    *,
    call_id: str,
    session_id: str,
    cwd: str,
    result: ToolResult | None = None,
) -> dict[str, Any]:
    """The JSON Claude Code sends a hook for a tool event.  With ``result`` it is a
    PostToolUse event (``tool_response``), or a PostToolUseFailure one (``error``) when
    the result is an error."""
    claude_name, tool_input = mapping.to_claude(tool_name, args, raw_name)
    event: dict[str, Any] = {
        "session_id": session_id,
        "transcript_path": None,
        "cwd": cwd,
        "permission_mode": "default",
        "hook_event_name": event_name,
        "tool_name": claude_name,
        "tool_input": tool_input,
        "tool_use_id": call_id,
    }
    if result is not None:
        if result.status == "error":
            event["hook_event_name"] = "PostToolUseFailure"
            event["error"] = _text(result.output)
            event["is_interrupt"] = False
        else:
            event["tool_response"] = mapping.tool_response(tool_name, args, result)
    return event
