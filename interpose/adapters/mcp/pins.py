"""The pinned tool set of the MCP gateway: the pin file, and what changed against it.

Each tool (``mcp__<server>__<tool>``) is pinned as its description (the text, shortened
past ``DESCRIPTION_CHARS``), its input schema's argument names, its annotations
(``readOnlyHint``, ``destructiveHint``, ...) and a digest of each.  A later listing of the
server is compared with the pins: a tool added, removed, renamed (a new name with the
description and schema of one that left), or with a changed description, input schema or
annotations is a ``Change`` that says what, in words a person can act on.

The pin file is JSON meant to be committed and reviewed: keys sorted, one entry per tool,
a ``version`` field::

    {
      "tools": {
        "mcp__fs__read_file": {
          "annotations": {"readOnlyHint": true},
          "arguments": ["path"],
          "description": "Read a file.",
          "digests": {"annotations": "…", "description": "…", "input_schema": "…"}
        }
      },
      "version": 1
    }
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Literal, NamedTuple

import mcp_types as mt

from ...errors import ConfigError

__all__ = ["DESCRIPTION_CHARS", "PIN_VERSION", "Change", "ToolPin", "ToolPins"]

PIN_VERSION = 1
DESCRIPTION_CHARS = 2000  # longer descriptions are kept shortened (their digest is whole)

ChangeKind = Literal["added", "removed", "renamed", "changed"]


class ToolPin(NamedTuple):
    """One tool as pinned."""

    description: str
    arguments: tuple[str, ...]
    annotations: dict[str, Any]
    digests: dict[str, str]  # description, input_schema, annotations -> sha256

    @classmethod
    def of(cls, tool: mt.Tool) -> ToolPin:
        """The pin of a tool as a server lists it."""
        description = tool.description or ""
        schema = tool.input_schema or {}
        properties = schema.get("properties")
        annotations = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
            if tool.annotations is not None
            else {}
        )
        return cls(
            _short(description),
            tuple(sorted(properties)) if isinstance(properties, dict) else (),
            annotations,
            {
                "annotations": _digest(annotations),
                "description": _digest(description),
                "input_schema": _digest(schema),
            },
        )

    @property
    def digest(self) -> str:
        """One short digest of the whole pin (what events show as old and new)."""
        return _digest(self.digests)[:16]

    def to_json(self) -> dict[str, Any]:
        return {
            "annotations": self.annotations,
            "arguments": list(self.arguments),
            "description": self.description,
            "digests": self.digests,
        }


class Change(NamedTuple):
    """One difference between a server's listing and its pins."""

    kind: ChangeKind
    tool: str  # mcp__<server>__<tool> (for a rename: the new name)
    detail: str  # what changed, for a person: "input schema gained `exfil_to`"
    old: str = ""  # the pin's digest
    new: str = ""  # the listing's digest


class ToolPins:
    """The pins of every server, kept in ``path`` (None: in memory).

    Raises:
        ConfigError: ``path`` exists and is not a pin file.
    """

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.pins: dict[str, ToolPin] = {}
        if path is not None and path.exists():
            self.pins = load(path)

    def compare(self, namespace: str, listed: dict[str, ToolPin]) -> list[Change]:
        """What differs between ``listed`` (the tools of one server, by their interpose
        names, all in ``namespace``) and the pins of that namespace.  A server with no
        pins yet is pinned as listed (trust on first use) and nothing differs."""
        pinned = {name: pin for name, pin in self.pins.items() if name.startswith(namespace)}
        if not pinned:
            self.accept(namespace, listed)
            return []
        changes: list[Change] = []
        gone = {name: pin for name, pin in pinned.items() if name not in listed}
        for name, pin in listed.items():
            old = pinned.get(name)
            if old is None:
                was = next((n for n, p in gone.items() if _same_tool(p, pin)), None)
                if was is not None:
                    del gone[was]
                    changes.append(Change("renamed", name, f"renamed from {was}", "", pin.digest))
                else:
                    changes.append(Change("added", name, "added since the tool set was pinned"))
            elif old.digests != pin.digests:
                changes.append(
                    Change("changed", name, _what_changed(old, pin), old.digest, pin.digest)
                )
        for name, pin in gone.items():
            changes.append(
                Change("removed", name, "removed since the tool set was pinned", pin.digest)
            )
        return changes

    def accept(self, namespace: str, listed: dict[str, ToolPin]) -> None:
        """Pin ``listed`` as the tool set of ``namespace`` (its old pins dropped) and
        write the pin file."""
        kept = {name: pin for name, pin in self.pins.items() if not name.startswith(namespace)}
        self.pins = {**kept, **listed}
        if self.path is not None:
            save(self.path, self.pins)


def load(path: Path) -> dict[str, ToolPin]:
    """The pins in ``path``.

    Raises:
        ConfigError: unreadable, not JSON, or not in the pin file's format.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"pin file {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"pin file {path}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("version") != PIN_VERSION:
        raise ConfigError(
            f"pin file {path}: not an interpose pin file (expected an object with "
            f'"version": {PIN_VERSION}); delete it to pin the tool set again'
        )
    tools = data.get("tools")
    if not isinstance(tools, dict):
        raise ConfigError(f'pin file {path}: "tools" must be an object of tool entries')
    return {name: _entry(path, name, entry) for name, entry in tools.items()}


def _entry(path: Path, name: str, entry: Any) -> ToolPin:
    where = f"pin file {path}: tools.{name}"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected an object")
    description = entry.get("description", "")
    arguments = entry.get("arguments", [])
    annotations = entry.get("annotations", {})
    digests = entry.get("digests")
    if not isinstance(description, str):
        raise ConfigError(f"{where}.description: expected a string")
    if not isinstance(arguments, list) or not all(isinstance(a, str) for a in arguments):
        raise ConfigError(f"{where}.arguments: expected a list of strings")
    if not isinstance(annotations, dict):
        raise ConfigError(f"{where}.annotations: expected an object")
    keys = ("annotations", "description", "input_schema")
    if not isinstance(digests, dict) or sorted(digests) != list(keys):
        raise ConfigError(f"{where}.digests: expected an object with {', '.join(keys)}")
    if not all(isinstance(value, str) for value in digests.values()):
        raise ConfigError(f"{where}.digests: expected strings")
    return ToolPin(description, tuple(arguments), annotations, dict(digests))


def save(path: Path, pins: dict[str, ToolPin]) -> None:
    """Write ``pins`` to ``path`` (keys sorted, one entry per tool), replacing it whole."""
    data = {"tools": {name: pins[name].to_json() for name in sorted(pins)}, "version": PIN_VERSION}
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _what_changed(old: ToolPin, new: ToolPin) -> str:
    parts = []
    if old.digests["description"] != new.digests["description"]:
        parts.append("description changed")
    if old.digests["input_schema"] != new.digests["input_schema"]:
        gained = sorted(set(new.arguments) - set(old.arguments))
        lost = sorted(set(old.arguments) - set(new.arguments))
        said = [f"gained {_names(gained)}"] if gained else []
        said += [f"lost {_names(lost)}"] if lost else []
        parts.append("input schema " + (" and ".join(said) if said else "changed"))
    if old.digests["annotations"] != new.digests["annotations"]:
        keys = sorted(set(old.annotations) | set(new.annotations))
        moved = [
            f"{key} {_value(old.annotations, key)} -> {_value(new.annotations, key)}"
            for key in keys
            if old.annotations.get(key) != new.annotations.get(key)
        ]
        parts.append("annotations changed" + (f" ({', '.join(moved)})" if moved else ""))
    return "; ".join(parts)


def _same_tool(a: ToolPin, b: ToolPin) -> bool:
    return (
        a.digests["description"] == b.digests["description"]
        and a.digests["input_schema"] == b.digests["input_schema"]
    )


def _names(names: list[str]) -> str:
    return ", ".join(f"`{name}`" for name in names)


def _value(annotations: dict[str, Any], key: str) -> str:
    return json.dumps(annotations[key]) if key in annotations else "unset"


def _short(text: str) -> str:
    return text if len(text) <= DESCRIPTION_CHARS else text[: DESCRIPTION_CHARS - 1] + "…"


def _digest(value: Any) -> str:
    encoded = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(encoded.encode()).hexdigest()
