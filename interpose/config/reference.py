"""The reference of every table and key, generated from the schema for docs/config.md."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, get_args
from typing import get_origin as _origin

import msgspec

from ..bus.events import EVENT_KINDS, EventKind
from .explain import literal_values, strip_annotations
from .schema import Config


def reference() -> str:
    """The reference of every table and key, as Markdown (docs/config.md embeds it)."""
    lines: list[str] = []
    _reference_tables(Config, "", lines, in_array=False)
    lines += [
        "### `[plugins.<name>]`",
        "",
        "A plugin, enabled by name (see Plugins below). Every key but `enabled` is the "
        "plugin's own and is passed to it.",
        "",
        "| key | type | default | meaning |",
        "|---|---|---|---|",
        "| `enabled` | bool | `true` | load and run the plugin |",
        "",
        "An *event kind* is one of " + ", ".join(f"`{kind}`" for kind in get_args(EventKind)) + ".",
        "",
    ]
    return "\n".join(lines)


def _reference_tables(
    cls: type[msgspec.Struct], header: str, lines: list[str], *, in_array: bool
) -> None:
    rows: list[str] = []
    nested: list[tuple[type[msgspec.Struct], str, bool]] = []
    for field, spec in _fields(cls):
        struct, kind = _table_kind(field.type)
        name = field.encode_name
        if struct is not None and kind == "table" and in_array:
            rows += _flattened(struct, name)
        elif struct is not None:
            path = f"{header}.{name}" if header else name
            nested.append((struct, path + (".<name>" if kind == "dict" else ""), kind == "list"))
        else:
            rows.append(_row(name, field, spec.type))
    if header:
        lines += [f"### `{f'[[{header}]]' if in_array else f'[{header}]'}`", ""]
        doc = " ".join((cls.__doc__ or "").split("\n\n")[0].split())
        summary = re.sub(r"^``\[[^`]*\]``:\s*", "", doc).replace("``", "`")
        lines += [summary[:1].upper() + summary[1:], ""]
        if rows:
            lines += ["| key | type | default | meaning |", "|---|---|---|---|", *rows]
        else:
            lines.append("Tables only, below.")
        lines.append("")
    for struct, path, array in nested:
        _reference_tables(struct, path, lines, in_array=array)


def _fields(
    cls: type[msgspec.Struct],
) -> Iterator[tuple[msgspec.inspect.Field, msgspec.structs.FieldInfo]]:
    """Each field as msgspec.inspect sees it, with its Python annotation."""
    info = msgspec.inspect.type_info(cls)
    if not isinstance(info, msgspec.inspect.StructType):  # pragma: no cover - never
        raise TypeError(f"{cls!r} is not a struct")
    yield from zip(info.fields, msgspec.structs.fields(cls), strict=True)


def _flattened(cls: type[msgspec.Struct], prefix: str) -> list[str]:
    """The rows of a table inside an array of tables, as dotted keys."""
    rows = []
    for field, spec in _fields(cls):
        struct, _ = _table_kind(field.type)
        name = f"{prefix}.{field.encode_name}"
        rows += _flattened(struct, name) if struct is not None else [_row(name, field, spec.type)]
    return rows


def _table_kind(t: msgspec.inspect.Type) -> tuple[type[msgspec.Struct] | None, str]:
    """(struct, "table" | "dict" | "list") when the field is a table of its own."""
    if isinstance(t, msgspec.inspect.UnionType):
        members = [m for m in t.types if not isinstance(m, msgspec.inspect.NoneType)]
        if len(members) == 1:
            t = members[0]
    if isinstance(t, msgspec.inspect.StructType):
        return t.cls, "table"
    if isinstance(t, msgspec.inspect.DictType) and isinstance(
        t.value_type, msgspec.inspect.StructType
    ):
        return t.value_type.cls, "dict"
    if isinstance(t, msgspec.inspect.ListType) and isinstance(
        t.item_type, msgspec.inspect.StructType
    ):
        return t.item_type.cls, "list"
    return None, ""


def _row(name: str, field: msgspec.inspect.Field, annotation: Any) -> str:
    t = field.type
    description = ""
    if isinstance(t, msgspec.inspect.Metadata):
        description = (t.extra_json_schema or {}).get("description", "")
        t = t.type
    if field.required:
        default = "required"
    elif field.default_factory is not msgspec.NODEFAULT:
        default = f"`{_toml(field.default_factory())}`"
    elif field.default is None:
        default = "unset"
    else:
        default = f"`{_toml(field.default)}`"
    return f"| `{name}` | {_type_name(t, annotation)} | {default} | {description} |"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return str(value)


def _type_name(t: msgspec.inspect.Type, annotation: Any = None) -> str:
    """A readable type: ``int > 0``, ``list of str``, ``"block" | "skip"`` (literals in
    the order of ``annotation``, which msgspec.inspect sorts)."""
    if isinstance(t, msgspec.inspect.Metadata):
        return _type_name(t.type, annotation)
    if isinstance(t, msgspec.inspect.UnionType):
        members = [m for m in t.types if not isinstance(m, msgspec.inspect.NoneType)]
        return " or ".join(_type_name(m, annotation) for m in members)
    if isinstance(t, msgspec.inspect.LiteralType):
        values = literal_values(annotation) or t.values
        if set(values) == EVENT_KINDS:
            return "event kind"
        return " \\| ".join(f'`"{v}"`' for v in values)
    if isinstance(t, msgspec.inspect.ListType):
        item = _type_name(t.item_type, _item_annotation(annotation))
        item = "event kinds" if item == "event kind" else item
        bound = f" (at least {t.min_length})" if t.min_length else ""
        return f"list of {item}{bound}"
    if isinstance(t, msgspec.inspect.DictType):
        return f"table of {_type_name(t.value_type)}"
    if isinstance(t, msgspec.inspect.StrType) and t.min_length:
        return "str (not empty)"
    bounds = []
    for attr, sign in (("gt", ">"), ("ge", ">="), ("lt", "<"), ("le", "<=")):
        limit = getattr(t, attr, None)
        if limit is not None:
            bounds.append(f"{sign} {limit}")
    names: dict[type, str] = {
        msgspec.inspect.IntType: "int",
        msgspec.inspect.FloatType: "float",
        msgspec.inspect.StrType: "str",
        msgspec.inspect.BoolType: "bool",
        msgspec.inspect.AnyType: "any",
    }
    base = names.get(type(t), type(t).__name__)
    return f"{base} {' '.join(bounds)}" if bounds else base


def _item_annotation(annotation: Any) -> Any:
    """The item type of a ``list[...]`` annotation (through Annotated and Optional)."""
    annotation = strip_annotations(annotation)
    if _origin(annotation) is list:
        return get_args(annotation)[0]
    for member in get_args(annotation):
        if _origin(strip_annotations(member)) is list:
            return get_args(strip_annotations(member))[0]
    return None
