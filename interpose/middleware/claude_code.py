"""Claude Code compatibility: its tool names and fields, and its ``.claude/settings.json``.

Two pieces, usable separately:

- ``ToolMapping``: the table between interpose's tools and arguments (``exec``
  ``{"command"}``, ``read`` ``{"path"}``…) and Claude Code's (``Bash`` ``{"command"}``,
  ``Read`` ``{"file_path"}``…), both ways, plus the per-tool ``tool_response`` shape.
  A ``CommandHook(..., dialect="claude-code")`` uses it to send a script exactly what
  Claude Code sends and to map the script's ``updatedInput`` back.  An application adds
  rows for its own tools with ``ToolMapping.add``.
- ``ClaudeSettings``: the ``hooks`` of a Claude Code settings file, installed into a
  pipeline: each event becomes one registration that runs the hooks whose ``matcher``
  matches, in parallel, and combines their answers with Claude's precedence
  (deny > ask > allow)::

      PreToolUse          tool.before (+ a tool.approve step for "ask")
      PermissionRequest   tool.approve
      PostToolUse         tool.after, for results that are ok or responded
      PostToolUseFailure  tool.after, for results that are errors
      UserPromptSubmit    message.before
      PreCompact          session.compact
      SessionStart        turn-stage middleware, before the turn (observed)
      Stop                turn-stage middleware, after the turn's work: a block resumes
                          a turn whose body has resume() (the reference Agent's)
      SessionEnd          turn-stage middleware, after the turn (observed)

As in Claude Code, a hook that fails (an exit code other than 0 and 2, a timeout, an
HTTP status other than 2xx, a connection error) is a non-blocking error: the call goes
on.  The failure is logged, counted in ``pipe.stats`` and published as an
``interceptor_failed`` event with ``policy="skip"``.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shlex
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple
from urllib.parse import urlsplit

import anyio
import anyio.abc
import msgspec

from ..bus.events import InterceptorFailed
from ..errors import AbortTurn, ConfigError, InterposeError
from ..pipeline.payloads import (
    Approval,
    ApprovalRequest,
    CompactInput,
    CompactOutput,
    MessageBeforeInput,
    MessageBeforeOutput,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
    refusal,
)
from ..pipeline.registry import Handler, Interceptor, Middleware, Registration
from ..pipeline.tools import normalize_tool_name

if TYPE_CHECKING:
    from ..pipeline.context import TurnContext
    from ..pipeline.pipeline import Pipeline
    from .command_hooks import CommandHook

__all__ = [
    "CLAUDE_EVENTS",
    "SUPPORTED_EVENTS",
    "ClaudeSettings",
    "ClaudeTool",
    "HttpHookError",
    "ResponseBuilder",
    "ToolMapping",
    "compile_matcher",
    "default_tool_mapping",
    "is_claude_settings",
    "tool_event",
]

log = logging.getLogger("interpose.claude_code")

#: The events of Claude Code's hooks reference, supported or not (a settings file that
#: names another event gets a note saying so).
CLAUDE_EVENTS: frozenset[str] = frozenset(
    {
        "PreToolUse",
        "PermissionRequest",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "Notification",
        "Stop",
        "SubagentStart",
        "SubagentStop",
        "PreCompact",
        "SessionStart",
        "SessionEnd",
    }
)

#: The events interpose runs, and where.
SUPPORTED_EVENTS: dict[str, str] = {
    "PreToolUse": "tool.before",
    "PermissionRequest": "tool.approve",
    "PostToolUse": "tool.after",
    "PostToolUseFailure": "tool.after",
    "UserPromptSubmit": "message.before",
    "PreCompact": "session.compact",
    "SessionStart": "turn",
    "Stop": "turn",
    "SessionEnd": "turn",
}

# -- the tool mapping ---------------------------------------------------------------------

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


# -- the settings file --------------------------------------------------------------------


class _HookSpec(msgspec.Struct, kw_only=True):
    # unknown keys (statusMessage, async, once…) are allowed: Claude adds them often
    type: str = "command"
    command: str | None = None
    url: str | None = None
    timeout: float | None = None
    headers: dict[str, str] = {}
    allowed_env_vars: list[str] = msgspec.field(default_factory=list, name="allowedEnvVars")


class _MatcherGroup(msgspec.Struct, kw_only=True):
    matcher: str | None = None
    hooks: list[_HookSpec] = []


class _SettingsFile(msgspec.Struct, kw_only=True):
    hooks: dict[str, list[_MatcherGroup]] = {}
    env: dict[str, str] = {}


_EVENT_KEY = re.compile(r"[A-Z][A-Za-z]*")
#: How often Stop hooks may continue one turn (Claude Code leaves loops to the hooks,
#: which see ``stop_hook_active``; a bound keeps a hook that always blocks from looping).
MAX_STOP_CONTINUES = 8
_PLAIN_MATCHER = re.compile(r"[A-Za-z0-9_|\s]+")
DEFAULT_TIMEOUT = 60.0


def is_claude_settings(data: object, path: str | os.PathLike[str] = "") -> bool:
    """Whether parsed JSON is a Claude Code settings file: its ``hooks`` are keyed by
    Claude event names (``PreToolUse``…), or it has no ``hooks`` and lives in a
    ``.claude`` directory."""
    if not isinstance(data, dict):
        return False
    hooks = data.get("hooks")
    if isinstance(hooks, dict) and hooks:
        return all(isinstance(k, str) and _EVENT_KEY.fullmatch(k) for k in hooks)
    return hooks is None and Path(os.fspath(path)).parent.name == ".claude"


def compile_matcher(matcher: str | None) -> Callable[[str], bool]:
    """Claude's matcher: empty or ``*`` matches everything; letters, digits, ``_`` and
    ``|`` only are exact names (``Edit|Write``); anything else is a regex searched in
    the name (``mcp__github__.*``, ``Notebook.*``).  Case-sensitive.

    Raises:
        ConfigError: an invalid regex.
    """
    text = (matcher or "").strip()
    if text in ("", "*"):
        return _everything
    if _PLAIN_MATCHER.fullmatch(text):
        names = frozenset(part.strip() for part in text.split("|") if part.strip())
        return names.__contains__
    try:
        search = re.compile(text).search
    except re.error as exc:
        raise ConfigError(f"matcher {text!r} is not a valid regex: {exc}") from None
    return lambda name: search(name) is not None


def _everything(name: str) -> bool:
    return True


class _Answer(NamedTuple):
    """What one hook said, whatever the transport."""

    decision: Literal["allow", "deny", "ask"] | None = None
    reason: str = ""
    updated_input: dict[str, Any] | None = None
    context: tuple[str, ...] = ()


class _Outcome(NamedTuple):
    hook: _Hook
    answer: _Answer | None
    abort: AbortTurn | None
    error: Exception | None


class _Hook:
    """One ``{"type": "command" | "http", ...}`` entry of a settings file."""

    __slots__ = ("call", "id", "key", "label", "matcher", "matches", "timeout")

    def __init__(
        self,
        id: str,
        key: str,
        label: str,
        matches: Callable[[str], bool],
        timeout: float,
        call: Callable[[dict[str, Any]], Awaitable[_Answer]],
        matcher: str = "",
    ) -> None:
        self.id = id
        self.matcher = matcher
        self.key = key  # what Claude deduplicates on: the command line or the URL
        self.label = label
        self.matches = matches
        self.timeout = timeout
        self.call = call


def _command_call(hook: CommandHook) -> Callable[[dict[str, Any]], Awaitable[_Answer]]:
    async def call(event: dict[str, Any]) -> _Answer:
        returncode, stdout, stderr = await hook._run(event)
        verdict = hook._verdict(hook.id, returncode, stdout, stderr)
        context: tuple[str, ...] = ()
        if verdict.additional_context is not None:
            context = (verdict.additional_context,)
        text = stdout.strip()
        if returncode == 0 and text and not text.startswith(b"{"):
            # UserPromptSubmit and SessionStart add plain stdout to the context
            context += (text.decode("utf-8", "replace"),)
        return _Answer(verdict.decision, verdict.reason, verdict.updated_input, context)

    return call


class HttpHookError(InterposeError, RuntimeError):
    """An HTTP hook of a settings file answered with a status other than 2xx, with
    something that is not HTTP, or with a JSON body of the wrong shape.  Like every
    failure of a settings hook it is non-blocking: reported, then the call goes on.

    Attributes:
        url: the hook's URL.
        status: the HTTP status, None when the answer was not HTTP.
    """

    def __init__(self, message: str, *, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


_MAX_HTTP_BYTES = 1 << 20


def _http_call(
    url: str, headers: dict[str, str], label: str
) -> Callable[[dict[str, Any]], Awaitable[_Answer]]:
    from .command_hooks import _decode_output, _encode_event, _read_verdict

    parts = urlsplit(url)
    host = parts.hostname or ""
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    head = f"POST {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
    head += "Content-Type: application/json\r\nConnection: close\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())

    async def call(event: dict[str, Any]) -> _Answer:
        body = _encode_event(event)
        request = (head + f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1") + body
        try:
            stream: anyio.abc.ByteStream = (
                await anyio.connect_tcp(host, port, tls=True)
                if tls
                else await anyio.connect_tcp(host, port)
            )
        except OSError as exc:
            raise HttpHookError(f"http hook {label}: cannot connect: {exc}", url=url) from None
        async with stream:
            await stream.send(request)
            data = bytearray()
            try:
                # Connection: close asks the server to end the answer by closing; one
                # that keeps it open anyway is read up to its Content-Length or last chunk
                while len(data) <= _MAX_HTTP_BYTES and not _complete(data):
                    data.extend(await stream.receive())
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
        status, payload = _parse_response(bytes(data), label)
        if not 200 <= status < 300:
            raise HttpHookError(
                f"http hook {label}: HTTP {status}: {_short(payload)}", url=url, status=status
            )
        text = payload.strip()
        if not text.startswith(b"{"):
            return _Answer(context=(text.decode("utf-8", "replace"),) if text else ())
        try:
            output = _decode_output(text)
        except msgspec.DecodeError as exc:
            raise HttpHookError(
                f"http hook {label}: the answer is not valid: {exc}", url=url, status=status
            ) from None
        if output.system_message:
            log.info("http hook %s: %s", label, output.system_message)
        if not output.continue_:
            raise AbortTurn(output.stop_reason or f"stopped by http hook {label}")
        verdict = _read_verdict(output)
        context = () if verdict.additional_context is None else (verdict.additional_context,)
        return _Answer(verdict.decision, verdict.reason, verdict.updated_input, context)

    return call


_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:\s*(\d+)\s*\r\n", re.IGNORECASE)
_CHUNKED = re.compile(rb"\r\ntransfer-encoding:\s*chunked\s*\r\n", re.IGNORECASE)


def _complete(data: bytearray) -> bool:
    """Whether ``data`` holds a whole HTTP answer (headers and the body they announce)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False
    head = bytes(data[: end + 2])
    length = _CONTENT_LENGTH.search(head)
    if length is not None:
        return len(data) - end - 4 >= int(length.group(1))
    if _CHUNKED.search(head) is not None:
        return data.endswith(b"\r\n0\r\n\r\n") or data[end + 4 :].startswith(b"0\r\n\r\n")
    return False


def _short(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= 200 else text[:200] + "…"


def _parse_response(data: bytes, label: str) -> tuple[int, bytes]:
    """(status, body) of an HTTP/1.x response read to the end of the connection.

    Raises:
        HttpHookError: not an HTTP response, or one over the size limit.
    """
    if len(data) > _MAX_HTTP_BYTES:
        raise HttpHookError(
            f"http hook {label}: the answer is over {_MAX_HTTP_BYTES} bytes", url=label
        )
    head, sep, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status_line = lines[0].split(None, 2)
    if not sep or len(status_line) < 2 or not status_line[0].startswith(b"HTTP/"):
        raise HttpHookError(f"http hook {label}: not an HTTP response: {_short(data)}", url=label)
    try:
        status = int(status_line[1])
    except ValueError:
        raise HttpHookError(f"http hook {label}: bad status line {lines[0]!r}", url=label) from None
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = _dechunk(body)
    elif b"content-length" in fields:
        try:
            body = body[: int(fields[b"content-length"])]
        except ValueError:
            pass
    return status, body


def _dechunk(body: bytes) -> bytes:
    out = bytearray()
    while body:
        size_line, _, body = body.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out += body[:size]
        body = body[size + 2 :]
    return bytes(out)


_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def _headers(
    raw: Mapping[str, str], allowed: Sequence[str], env: Mapping[str, str]
) -> dict[str, str]:
    """Header values with ``$VAR``/``${VAR}`` expanded from the variables listed in
    ``allowedEnvVars`` only (others expand to "", as in Claude Code).

    Raises:
        ConfigError: a name or value that would break the request (CR, LF, ":" in a name).
    """
    permitted = set(allowed)
    out: dict[str, str] = {}
    for name, value in raw.items():
        expanded = _VAR.sub(
            lambda m: (
                env.get(m.group(1) or m.group(2), "")
                if (m.group(1) or m.group(2)) in permitted
                else ""
            ),
            value,
        )
        if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name) or re.search(r"[\r\n]", expanded):
            raise ConfigError(f"header {name!r} is not a valid HTTP header")
        out[name] = expanded
    return out


class ClaudeSettings:
    """The hooks of a Claude Code settings file (``.claude/settings.json``).

    Args:
        path: the settings file.
        project_dir: ``$CLAUDE_PROJECT_DIR`` and the directory hooks run in; default the
            parent of the ``.claude`` directory holding the file (else the file's own
            directory).
        tool_mapping: the tool table (default ``default_tool_mapping()``).
        priority: the priority of each registration.
        name: how the registrations are labelled (``claude:<Event> <name>``); default
            the path as given.

    Attributes:
        notes: what the file asks for that interpose does not do (unsupported hook
            types and events, Stop's ``decision: block``), one line each; ``interpose
            check`` prints them.

    Raises:
        ConfigFileError: the file cannot be read, is not JSON of the settings shape, or
            a hook is invalid (a command that does not exist, a bad matcher, timeout or
            URL); the message names the field (``hooks.PreToolUse[0].hooks[1].command``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        project_dir: str | os.PathLike[str] | None = None,
        tool_mapping: ToolMapping | None = None,
        priority: int = 0,
        name: str | None = None,
    ) -> None:
        from ..config import ConfigFileError
        from .command_hooks import CommandHook

        self.path = os.path.abspath(os.fspath(path))
        self.name = os.fspath(path) if name is None else name
        source = os.fspath(path)
        parent = Path(self.path).parent
        default_dir = parent.parent if parent.name == ".claude" else parent
        self.project_dir = os.path.abspath(os.fspath(project_dir or default_dir))
        self.mapping = tool_mapping if tool_mapping is not None else default_tool_mapping()
        self.priority = priority
        self.notes: list[str] = []
        try:
            data = Path(self.path).read_bytes()
        except OSError as exc:
            raise ConfigFileError(source, "", f"cannot read it: {exc}") from None
        try:
            raw = msgspec.json.decode(data)
        except msgspec.DecodeError as exc:
            raise ConfigFileError(source, "", f"invalid JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise ConfigFileError(source, "", "expected a JSON object")
        hooks_table = raw.get("hooks", {})
        try:
            settings = msgspec.convert({"hooks": {}, "env": raw.get("env", {})}, _SettingsFile)
            if not isinstance(hooks_table, dict):
                raise msgspec.ValidationError("Expected `object` - at `$.hooks`")
            for event, value in hooks_table.items():
                try:
                    settings.hooks[event] = msgspec.convert(value, list[_MatcherGroup])
                except msgspec.ValidationError as exc:
                    # msgspec writes dict keys as [...]: name the event instead
                    raise msgspec.ValidationError(
                        str(exc).replace("at `$", f"at `$.hooks.{event}")
                        if " - at `$" in str(exc)
                        else f"{exc} - at `$.hooks.{event}`"
                    ) from None
        except msgspec.ValidationError as exc:
            message, _, where = str(exc).partition(" - at `$.")
            raise ConfigFileError(source, where.rstrip("`"), message) from None
        self.env = dict(settings.env)
        self.hooks: dict[str, list[_Hook]] = {}
        for event, groups in settings.hooks.items():
            if event not in SUPPORTED_EVENTS:
                what = (
                    "an event interpose does not run"
                    if event in CLAUDE_EVENTS
                    else ("an unknown event")
                )
                self.notes.append(f"hooks.{event}: {what}; its hooks never run")
                continue
            hooks: list[_Hook] = []
            for i, group in enumerate(groups):
                where = f"hooks.{event}[{i}]"
                try:
                    matches = compile_matcher(group.matcher)
                except ConfigError as exc:
                    raise ConfigFileError(source, where + ".matcher", str(exc)) from None
                for j, spec in enumerate(group.hooks):
                    hook = self._hook(
                        source,
                        f"{where}.hooks[{j}]",
                        event,
                        spec,
                        matches,
                        (group.matcher or "").strip(),
                        CommandHook,
                    )
                    if hook is not None:
                        hooks.append(hook)
            if hooks:
                self.hooks[event] = hooks
        if "Stop" in self.hooks:
            self.notes.append(
                'hooks.Stop: a decision "block" continues the turn only when its body can '
                "be resumed (the reference Agent's can); otherwise it is logged"
            )

    def __repr__(self) -> str:
        return f"<ClaudeSettings {self.name!r} events={sorted(self.hooks)}>"

    def _hook(
        self,
        source: str,
        where: str,
        event: str,
        spec: _HookSpec,
        matches: Callable[[str], bool],
        matcher: str,
        command_hook: type[CommandHook],
    ) -> _Hook | None:
        from ..config import ConfigFileError

        if spec.type not in ("command", "http"):
            self.notes.append(
                f"{where}: hooks of type {spec.type!r} are not supported by interpose; "
                "it never runs"
            )
            return None
        timeout = DEFAULT_TIMEOUT if spec.timeout is None else spec.timeout
        if not (isinstance(timeout, int | float) and math.isfinite(timeout) and timeout > 0):
            raise ConfigFileError(
                source, where + ".timeout", "expected a positive number of seconds"
            )
        if spec.type == "command":
            if not spec.command or not spec.command.strip():
                raise ConfigFileError(source, where + ".command", "required for a command hook")
            try:
                hook = command_hook(
                    spec.command,
                    event="tool.before",
                    timeout=timeout,
                    cwd=self.project_dir,
                    env=self.env,
                    dialect="claude-code",
                    tool_mapping=self.mapping,
                    id=f"claude:{event}:{spec.command}",
                )
            except ConfigError as exc:
                problem = re.sub(r"^command hook '[^']*': ", "", str(exc))
                raise ConfigFileError(source, where + ".command", problem) from None
            return _Hook(
                hook.id,
                "command:" + spec.command,
                spec.command,
                matches,
                timeout,
                _command_call(hook),
                matcher,
            )
        url = spec.url or ""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigFileError(
                source, where + ".url", f"expected an http:// or https:// URL, got {url!r}"
            )
        environ = {**os.environ, **self.env}
        try:
            headers = _headers(spec.headers, spec.allowed_env_vars, environ)
        except ConfigError as exc:
            raise ConfigFileError(source, where + ".headers", str(exc)) from None
        return _Hook(
            f"claude:{event}:{url}",
            "http:" + url,
            url,
            matches,
            timeout,
            _http_call(url, headers, url),
            matcher,
        )

    # -- registration ---------------------------------------------------------------

    def registrations(self, pipe: Pipeline) -> list[Registration]:
        """The registrations that run the file's hooks in ``pipe`` (failures are
        reported to it)."""
        runner = _Runner(self, pipe)
        regs: list[Registration] = []
        label = f" {self.name}"
        hooks = self.hooks
        # (id's event, pipeline hook, handler, the file's events that call for it)
        interceptors: tuple[tuple[str, str, Handler, tuple[str, ...]], ...] = (
            ("PreToolUse", "tool.before", runner.pre_tool_use, ("PreToolUse",)),
            (
                "PermissionRequest",
                "tool.approve",
                runner.permission_request,
                ("PreToolUse", "PermissionRequest"),
            ),
            (
                "PostToolUse",
                "tool.after",
                runner.post_tool_use,
                ("PostToolUse", "PostToolUseFailure"),
            ),
            (
                "UserPromptSubmit",
                "message.before",
                runner.user_prompt_submit,
                ("UserPromptSubmit",),
            ),
            ("PreCompact", "session.compact", runner.pre_compact, ("PreCompact",)),
        )
        for event, hook, handler, wanted_by in interceptors:
            if any(name in hooks for name in wanted_by):
                regs.append(
                    Interceptor(
                        id=f"claude:{event}{label}",
                        hook=hook,
                        handler=handler,
                        priority=self.priority,
                        # each hook bounds itself (its own timeout): no cancel scope per call
                        timeout=math.inf,
                        on_error="skip",
                        source="claude-settings",
                    )
                )
        if {"SessionStart", "Stop", "SessionEnd"} & hooks.keys():
            regs.append(
                Middleware(
                    id=f"claude:SessionStart/Stop/SessionEnd{label}",
                    stage="turn",
                    handler=runner.turn,
                    priority=self.priority,
                    source="claude-settings",
                )
            )
        return regs

    def install(self, pipe: Pipeline) -> list[Registration]:
        """Add the registrations to ``pipe``; returns them.

        Raises:
            RegistrationError: an id is taken (the same file installed twice under the
                same name); nothing is added then.
        """
        regs = self.registrations(pipe)
        added: list[Registration] = []
        try:
            for reg in regs:
                added.append(pipe.registry.add(reg))
        except Exception:
            for reg in added:
                pipe.registry.remove(reg.id)
            raise
        return added

    def matchers(self, event: str) -> str:
        """The matchers of an event's hooks, for ``interpose check``."""
        return ", ".join(dict.fromkeys(h.matcher or "*" for h in self.hooks.get(event, ())))

    def describe(self, reg: Registration) -> str:
        """What a registration of ``registrations()`` runs for, for ``interpose check``:
        its events' matchers (``Bash, Edit|Write``)."""
        events = reg.id.split(" ", 1)[0].removeprefix("claude:").split("/")
        shown = [self.matchers(event) for event in events if event in self.hooks]
        if not shown and events == ["PermissionRequest"]:
            return "(answers the asks of PreToolUse)"
        return "; ".join(shown) or "*"


class _Runner:
    """Runs a settings file's hooks for one pipeline: selection, parallel execution,
    precedence, failure reporting.  Per-call state lives in locals, except the "ask"
    answers of PreToolUse hooks, kept (bounded) until the same call's approval step."""

    _MAX_ASKS = 4096

    def __init__(self, settings: ClaudeSettings, pipe: Pipeline) -> None:
        self.settings = settings
        self.pipe = pipe
        self.mapping = settings.mapping
        self.cwd = settings.project_dir
        self._asks: dict[tuple[str, str], str] = {}
        self._selected: dict[tuple[str, str], tuple[_Hook, ...]] = {}

    def select(self, event: str, subject: str) -> tuple[_Hook, ...]:
        """The hooks of ``event`` whose matcher matches ``subject``, one per command or
        URL (Claude runs a duplicate once)."""
        key = (event, subject)
        found = self._selected.get(key)
        if found is None:
            unique: dict[str, _Hook] = {}
            for hook in self.settings.hooks.get(event, ()):
                if hook.matches(subject):
                    unique.setdefault(hook.key, hook)
            found = tuple(unique.values())
            if len(self._selected) < 1024:  # tool names are few; do not grow unbounded
                self._selected[key] = found
        return found

    async def run(
        self,
        hooks: Sequence[_Hook],
        event: dict[str, Any],
        where: tuple[str, str, str, str, str, str],
    ) -> list[_Answer]:
        """Run ``hooks`` in parallel on ``event``; the answers of those that answered, in
        file order.  Failures are reported and skipped; a ``continue: false`` raises
        ``AbortTurn`` once all have finished."""
        outcomes: list[_Outcome | None] = [None] * len(hooks)

        async def one(i: int, hook: _Hook) -> None:
            try:
                with anyio.fail_after(hook.timeout):
                    outcomes[i] = _Outcome(hook, await hook.call(event), None, None)
            except AbortTurn as exc:
                outcomes[i] = _Outcome(hook, None, exc, None)
            except Exception as exc:  # a non-blocking error, as in Claude Code
                outcomes[i] = _Outcome(hook, None, None, exc)

        if len(hooks) == 1:
            await one(0, hooks[0])
        else:
            async with anyio.create_task_group() as tg:
                for i, hook in enumerate(hooks):
                    tg.start_soon(one, i, hook)
        answers: list[_Answer] = []
        abort: AbortTurn | None = None
        for outcome in outcomes:
            assert outcome is not None
            if outcome.error is not None:
                await self.failed(outcome.hook, outcome.error, where)
            elif outcome.abort is not None:
                abort = abort or outcome.abort
            elif outcome.answer is not None:
                answers.append(outcome.answer)
        if abort is not None:
            raise abort
        return answers

    async def failed(
        self, hook: _Hook, exc: Exception, where: tuple[str, str, str, str, str, str]
    ) -> None:
        hook_name, turn_id, agent_id, session_key, tool_name, call_id = where
        pipe = self.pipe
        timed_out = isinstance(exc, TimeoutError)
        text = f"timed out after {hook.timeout:g}s" if timed_out else str(exc) or type(exc).__name__
        pipe.stats.failures[hook.id] = pipe.stats.failures.get(hook.id, 0) + 1
        if timed_out:
            pipe.stats.timeouts[hook.id] = pipe.stats.timeouts.get(hook.id, 0) + 1
        log.warning(
            "%s '%s' failed (non-blocking, as in Claude Code): %s", hook_name, hook.id, text
        )
        if "interceptor_failed" in pipe.bus.wanted:
            await pipe.emit(
                InterceptorFailed,
                turn_id,
                agent_id,
                session_key,
                hook=hook_name,
                interceptor_id=hook.id,
                error_type=type(exc).__name__,
                error=text,
                policy="skip",
                timed_out=timed_out,
                tool_name=tool_name,
                tool_call_id=call_id,
            )

    def common(self, event_name: str, session_key: str) -> dict[str, Any]:
        return {
            "session_id": session_key,
            "transcript_path": None,
            "cwd": self.cwd,
            "permission_mode": "default",
            "hook_event_name": event_name,
        }

    # -- the handlers ---------------------------------------------------------------

    async def pre_tool_use(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        subject = self.mapping.claude_name(inp.tool_name, inp.raw_name)
        hooks = self.select("PreToolUse", subject)
        if not hooks:
            return
        event = tool_event(
            self.mapping,
            "PreToolUse",
            inp.tool_name,
            inp.raw_name,
            out.args,
            call_id=inp.tool_call_id,
            session_id=inp.session_key,
            cwd=self.cwd,
        )
        where = (
            "tool.before",
            inp.turn_id,
            inp.agent_id,
            inp.session_key,
            inp.tool_name,
            inp.tool_call_id,
        )
        answers = await self.run(hooks, event, where)
        denied = [a for a in answers if a.decision == "deny"]
        if denied:
            out.block = True
            out.block_reason = _reasons(denied, "blocked by a PreToolUse hook")
            return
        asked = [a for a in answers if a.decision == "ask"]
        updated = [a.updated_input for a in answers if a.updated_input is not None]
        if updated:
            # several hooks rewriting one call is undefined in Claude Code: the last in
            # file order wins here
            _, out.args = self.mapping.to_interpose(subject, updated[-1], like=out.args)
        if asked:
            if len(self._asks) >= self._MAX_ASKS:
                self._asks.pop(next(iter(self._asks)))
            self._asks[(inp.turn_id, inp.tool_call_id)] = _reasons(
                asked, "a PreToolUse hook asks for approval"
            )

    async def permission_request(self, request: ApprovalRequest) -> Approval | None:
        asked = self._asks.pop((request.turn_id, request.tool_call_id), None)
        subject = self.mapping.claude_name(request.tool_name)
        hooks = self.select("PermissionRequest", subject)
        answers: list[_Answer] = []
        if hooks:
            event = tool_event(
                self.mapping,
                "PermissionRequest",
                request.tool_name,
                "",
                request.args,
                call_id=request.tool_call_id,
                session_id=request.session_key,
                cwd=self.cwd,
            )
            where = (
                "tool.approve",
                request.turn_id,
                request.agent_id,
                request.session_key,
                request.tool_name,
                request.tool_call_id,
            )
            answers = await self.run(hooks, event, where)
        denied = [a for a in answers if a.decision == "deny"]
        if denied:
            return Approval.deny(_reasons(denied, "denied by a PermissionRequest hook"))
        allowed = [a for a in answers if a.decision == "allow"]
        asks = [a for a in answers if a.decision == "ask"]
        if asks:
            return Approval.ask(_reasons(asks, "a PermissionRequest hook asks for approval"))
        if allowed:
            # a PermissionRequest "allow" answers the dialog a PreToolUse "ask" opened
            return Approval.allow(_reasons(allowed, ""))
        if asked is not None:
            return Approval.ask(asked)
        return None

    async def post_tool_use(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        result = out.result if isinstance(out.result, ToolResult) else ToolResult(output=out.result)
        if result.status in ("ok", "responded"):
            event_name = "PostToolUse"
        elif result.status == "error":
            event_name = "PostToolUseFailure"
        else:
            return  # blocked, denied or aborted: the tool never ran, as in Claude Code
        subject = self.mapping.claude_name(inp.tool_name, inp.raw_name)
        hooks = self.select(event_name, subject)
        if not hooks:
            return
        event = tool_event(
            self.mapping,
            "PostToolUse",
            inp.tool_name,
            inp.raw_name,
            inp.args,
            call_id=inp.tool_call_id,
            session_id=inp.session_key,
            cwd=self.cwd,
            result=result,
        )
        where = (
            "tool.after",
            inp.turn_id,
            inp.agent_id,
            inp.session_key,
            inp.tool_name,
            inp.tool_call_id,
        )
        answers = await self.run(hooks, event, where)
        blocked = [a for a in answers if a.decision in ("deny", "ask")]
        if blocked and event_name == "PostToolUse":
            result = refusal(
                "blocked",
                inp.tool_name,
                _reasons(blocked, "blocked by a PostToolUse hook"),
                decided_by=f"claude:PostToolUse {self.settings.name}",
            )
        contexts = [c for a in answers for c in a.context]
        if contexts:
            result.details.setdefault("additional_context", []).extend(contexts)
        out.result = result

    async def user_prompt_submit(self, inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        hooks = self.select("UserPromptSubmit", "")
        event = {**self.common("UserPromptSubmit", inp.session_key), "prompt": out.message}
        where = ("message.before", inp.turn_id, inp.agent_id, inp.session_key, "", "")
        answers = await self.run(hooks, event, where)
        blocked = [a for a in answers if a.decision in ("deny", "ask")]
        if blocked:
            raise AbortTurn(_reasons(blocked, "prompt blocked by a UserPromptSubmit hook"))
        contexts = [c for a in answers for c in a.context]
        if contexts:
            out.metadata.setdefault("additional_context", []).extend(contexts)
            # the model sees the message only: the context goes with it, after it
            out.message = "\n\n".join([out.message, *contexts])

    async def pre_compact(self, inp: CompactInput, out: CompactOutput) -> None:
        trigger = "manual" if inp.reason == "manual" else "auto"
        hooks = self.select("PreCompact", trigger)
        if not hooks:
            return
        event = {
            **self.common("PreCompact", inp.session_key),
            "trigger": trigger,
            "custom_instructions": out.instructions,
        }
        where = ("session.compact", inp.turn_id, inp.agent_id, inp.session_key, "", "")
        for answer in await self.run(hooks, event, where):
            if answer.decision == "deny":
                log.info(
                    "PreCompact hook asked to block compaction (not supported): %s", answer.reason
                )

    async def turn(self, ctx: TurnContext, call_next: Callable[[], Awaitable[None]]) -> None:
        turn = ctx.turn
        where = ("turn", turn.turn_id, turn.agent_id, turn.session_key, "", "")
        start = self.select("SessionStart", "startup")
        if start:
            event = {**self.common("SessionStart", turn.session_key), "source": "startup"}
            await self.run(start, event, where)
        try:
            await call_next()
            await self.stop(ctx, where)
        except AbortTurn:
            await self.end(turn.session_key, where)
            raise
        await self.end(turn.session_key, where)

    async def stop(self, ctx: TurnContext, where: tuple[str, str, str, str, str, str]) -> None:
        """Run the Stop hooks; while one blocks, resume the turn with its reason (when
        the body can be resumed), at most ``MAX_STOP_CONTINUES`` times."""
        turn = ctx.turn
        hooks = self.select("Stop", "")
        resume = getattr(ctx.body, "resume", None)
        active = False
        for attempt in range(MAX_STOP_CONTINUES + 1):
            if not hooks:
                return
            event = {**self.common("Stop", turn.session_key), "stop_hook_active": active}
            blocked = [
                a for a in await self.run(hooks, event, where) if a.decision in ("deny", "ask")
            ]
            if not blocked:
                return
            reason = _reasons(blocked, "a Stop hook asks to go on")
            if resume is None:
                log.warning(
                    "a Stop hook asked to continue the turn (%s), but this turn's body "
                    "cannot be resumed: the turn ends",
                    reason,
                )
                return
            if attempt == MAX_STOP_CONTINUES:
                log.warning(
                    "Stop hooks asked to continue the turn %d times: it ends now (%s)",
                    MAX_STOP_CONTINUES,
                    reason,
                )
                return
            active = True
            ctx.result = await resume(turn, reason)

    async def end(self, session_key: str, where: tuple[str, str, str, str, str, str]) -> None:
        hooks = self.select("SessionEnd", "other")
        if hooks:
            event = {**self.common("SessionEnd", session_key), "reason": "other"}
            await self.run(hooks, event, where)


def _reasons(answers: Sequence[_Answer], default: str) -> str:
    return "; ".join(dict.fromkeys(a.reason for a in answers if a.reason)) or default
