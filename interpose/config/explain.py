"""What is wrong with a config file, in its own words: ``ConfigFileError``, and
msgspec's validation errors rewritten as ``<field path>: expected ..., got ...``."""

from __future__ import annotations

import json
import re
import types
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union, get_args
from typing import get_origin as _origin

import msgspec

from ..errors import ConfigFileError as ConfigFileError  # documented here
from .schema import Config

_AT = re.compile(r"^(?P<message>.*?) - at `(?P<path>[^`]*)`(?: in `(?P<container>[^`]*)`)?$", re.S)
_SEGMENT = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[\.\.\.\]")
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_MISSING: Any = object()


class _Step:
    """One step of a field path: a struct field, a list index or a dict key."""

    __slots__ = ("kind", "name")

    def __init__(self, kind: Literal["field", "index", "key"], name: str | int) -> None:
        self.kind = kind
        self.name = name


def explain_error(error: str, data: Any, table: str) -> tuple[str, str]:
    """(field path, problem) for a msgspec validation error about ``data``."""
    match = _AT.match(error)
    # msgspec locates nothing at the top level itself ("$" is implied)
    message = error if match is None else match.group("message")
    path = "$" if match is None else match.group("path")
    raw = match.group("container") if match is not None and path == "key" else path
    steps, typ, value = _locate(raw, data)
    if path == "key":
        key = _failing_key(value, _key_type(typ))
        if key is not None:
            steps.append(_Step("key", key))
        return _render(steps), _problem(message, None, key, table, what="key")
    unknown = re.fullmatch(r"Object contains unknown field `(.*)`", message)
    if unknown is not None:
        steps.append(_Step("field", unknown.group(1)))
        known = _field_names(typ)
        return _render(steps), "unknown field" + (
            f"; expected one of: {', '.join(known)}" if known else ""
        )
    missing = re.fullmatch(r"Object missing required field `(.*)`", message)
    if missing is not None:
        steps.append(_Step("field", missing.group(1)))
        return _render(steps), "required field is missing"
    if match is None:  # the file as a whole is of the wrong type (a list, say)
        return "", _problem(message, None, _MISSING, table)
    return _render(steps), _problem(message, typ, value, table)


def _locate(raw: str, data: Any) -> tuple[list[_Step], Any, Any]:
    """Walk ``data`` and the ``Config`` types along msgspec's path (``$.a[0][...].b``),
    finding the dict keys msgspec leaves out (``[...]``); returns the steps, the type and
    the value at the end (``_MISSING`` where the data has none)."""
    steps: list[_Step] = []
    typ: Any = Config
    value: Any = data
    for match in _SEGMENT.finditer(raw.removeprefix("$")):
        name, index = match.group(1), match.group(2)
        typ = _concrete(typ, value)
        if name is not None:
            field = next(
                (f for f in _struct_fields(typ) if f.encode_name == name),
                None,
            )
            steps.append(_Step("field", name))
            typ = field.type if field is not None else Any
            value = value.get(name, _MISSING) if isinstance(value, dict) else _MISSING
        elif index is not None:
            steps.append(_Step("index", int(index)))
            args = get_args(typ)
            typ = args[0] if args else Any
            value = value[int(index)] if isinstance(value, list) else _MISSING
        else:
            args = get_args(typ)
            value_type = args[1] if len(args) == 2 else Any
            key = _failing_value(value, value_type)
            if key is None:
                steps.append(_Step("key", "..."))
                value = _MISSING
            else:
                steps.append(_Step("key", key))
                value = value[key]
            typ = value_type
    return steps, _concrete(typ, value), value


def strip_annotations(typ: Any) -> Any:
    while _origin(typ) is Annotated:
        typ = get_args(typ)[0]
    return typ


def _concrete(typ: Any, value: Any) -> Any:
    """``typ`` without Annotated, and of a union the member ``value`` was meant as."""
    typ = strip_annotations(typ)
    args = get_args(typ)
    if _origin(typ) is Union or isinstance(typ, types.UnionType):
        members = [strip_annotations(a) for a in args if a is not type(None)]
        for member in members:
            if isinstance(value, dict) and (_is_struct(member) or _origin(member) is dict):
                return member
            if isinstance(value, list) and _origin(member) is list:
                return member
        return members[0] if len(members) == 1 else typ
    return typ


def _is_struct(typ: Any) -> bool:
    return isinstance(typ, type) and issubclass(typ, msgspec.Struct)


def _struct_fields(typ: Any) -> tuple[msgspec.structs.FieldInfo, ...]:
    return msgspec.structs.fields(typ) if _is_struct(typ) else ()


def _field_names(typ: Any) -> list[str]:
    return [f.encode_name for f in _struct_fields(typ)]


def _key_type(typ: Any) -> Any:
    args = get_args(typ)
    return args[0] if len(args) == 2 else Any


def _failing_value(value: Any, value_type: Any) -> str | None:
    """The first key of the dict ``value`` whose value does not convert (msgspec reports
    the first failure, in order)."""
    if not isinstance(value, dict):
        return None
    for key, item in value.items():
        try:
            msgspec.convert(item, value_type)
        except msgspec.ValidationError:
            return str(key)
    return None


def _failing_key(value: Any, key_type: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    for key in value:
        try:
            msgspec.convert(key, key_type)
        except msgspec.ValidationError:
            return str(key)
    return None


def _render(steps: Sequence[_Step]) -> str:
    """``hooks.processes.gate.priority``, ``hooks.commands[0].event``, ``plugins."a b"``."""
    out = ""
    for step in steps:
        if step.kind == "index":
            out += f"[{step.name}]"
        elif step.kind == "key" and not _BARE_KEY.fullmatch(str(step.name)):
            out += "." + json.dumps(step.name)
        else:
            out += f".{step.name}" if out else str(step.name)
    return out


def _problem(message: str, typ: Any, value: Any, table: str, *, what: str = "value") -> str:
    """msgspec's message as ``expected <what>, got <what>``."""
    words = {"object": table}  # TOML says table where msgspec (and JSON) say object

    def word(match: re.Match[str]) -> str:
        kinds = [w.strip() for w in match.group(1).split("|")]
        if table == "table":  # TOML has no null: a key is left out instead
            kinds = [k for k in kinds if k != "null"] or kinds
        return " | ".join(words.get(k, k) for k in kinds)

    enum = re.fullmatch(r"Invalid enum value (.*)", message)
    if enum is not None:
        choices = literal_values(typ)
        if choices:
            return f"expected one of {', '.join(map(repr, choices))}, got {enum.group(1)}"
        return f"invalid value {enum.group(1)}"
    text = re.sub(r"`([^`]*)`", word, message)
    text = text[:1].lower() + text[1:]
    if text.startswith("expected ") and ", got " not in text and value is not _MISSING:
        text += f", got {_show(value)}"
    if what == "key" and value is not _MISSING and value is not None:
        text = f"key {_show(value)}: {text}"
    return text


def literal_values(typ: Any) -> tuple[Any, ...]:
    typ = strip_annotations(typ)
    if _origin(typ) is Literal:
        return get_args(typ)
    for member in get_args(typ):  # e.g. Literal[...] | None
        values = literal_values(member)
        if values:
            return values
    return ()


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
