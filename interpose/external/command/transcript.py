"""The transcript a Claude Code hook reads at ``transcript_path``: JSONL, one message a
line, in Claude Code's shape.

Given a directory (``ClaudeSettings(transcript_dir=...)``, ``hooks.claude_transcripts``),
the settings' runner appends what the pipeline sees of each session to
``<dir>/<session>.jsonl`` (a key with other characters than letters, digits, ``.``,
``_`` and ``-`` has them replaced by ``_`` and a hash of it added: ``s_1-<8 hex>``)
*before* the hooks of that moment run, and sends the path as ``transcript_path``::

    {"type": "user", "message": {"role": "user", "content": "fix the tests"}, ...}
    {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "..."},
        {"type": "tool_use", "id": "call-1", "name": "Bash", "input": {"command": "ls"}}]}}
    {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call-1", "content": "...", "is_error": false}]}}

Each line also has ``sessionId``, ``uuid``, ``parentUuid`` (the line before it),
``timestamp`` (ISO 8601, UTC) and ``cwd``.  Without a directory, ``transcript_path``
is null.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import re
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

import msgspec

__all__ = ["Transcripts"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_MAX_SESSIONS = 1024  # parent uuids and tool_use ids kept, per session (least recent dropped)
_MAX_IDS = 4096


def _encode_default(obj: Any) -> str:
    return str(obj)


_encode = msgspec.json.Encoder(enc_hook=_encode_default).encode


class Transcripts:
    """Appends each session's messages to ``<directory>/<session>.jsonl``."""

    def __init__(self, directory: str | os.PathLike[str], cwd: str) -> None:
        self.directory = Path(directory).resolve()
        self.cwd = cwd
        self._last: OrderedDict[str, str] = OrderedDict()  # session -> last line's uuid
        self._tool_uses: OrderedDict[str, set[str]] = OrderedDict()

    def path(self, session_key: str) -> str:
        """The transcript file of a session (it exists once something was written)."""
        name = _UNSAFE.sub("_", session_key)
        if name != session_key or not name:
            # keys that differ only where they were made safe stay apart
            digest = hashlib.sha256(session_key.encode()).hexdigest()[:8]
            name = f"{name or 'session'}-{digest}"
        return str(self.directory / f"{name}.jsonl")

    def user(self, session_key: str, text: str) -> str:
        """Append the user's message; returns the path."""
        return self._append(session_key, "user", {"role": "user", "content": text})

    def assistant(
        self, session_key: str, text: str, tool_uses: list[tuple[str, str, dict[str, Any]]]
    ) -> str:
        """Append an assistant message: its text, then its tool uses (id, Claude tool
        name, input); a tool use already written for the session is not repeated."""
        seen = self._ids(session_key)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for call_id, name, tool_input in tool_uses:
            if call_id and call_id in seen:
                continue
            if len(seen) >= _MAX_IDS:
                seen.clear()
            seen.add(call_id)
            content.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
        if not content:
            return self.path(session_key)
        return self._append(session_key, "assistant", {"role": "assistant", "content": content})

    def tool_result(self, session_key: str, call_id: str, content: Any, is_error: bool) -> str:
        """Append a tool's result (a user message, as Claude Code writes it)."""
        block = {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": content,
            "is_error": is_error,
        }
        return self._append(session_key, "user", {"role": "user", "content": [block]})

    def _ids(self, session_key: str) -> set[str]:
        seen = self._tool_uses.get(session_key)
        if seen is None:
            seen = self._tool_uses[session_key] = set()
            if len(self._tool_uses) > _MAX_SESSIONS:
                self._tool_uses.popitem(last=False)
        return seen

    def _append(self, session_key: str, kind: str, message: dict[str, Any]) -> str:
        path = self.path(session_key)
        line_id = str(uuid.uuid4())
        entry = {
            "type": kind,
            "sessionId": session_key,
            "uuid": line_id,
            "parentUuid": self._last.get(session_key),
            "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(
                timespec="milliseconds"
            ),
            "cwd": self.cwd,
            "message": message,
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(path, "ab") as file:
            file.write(_encode(entry) + b"\n")
        self._last[session_key] = line_id
        self._last.move_to_end(session_key)
        if len(self._last) > _MAX_SESSIONS:
            self._last.popitem(last=False)
        return path
