"""Reading a config file: parse (TOML or JSON), decode into ``Config``, check."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found]

from ..external.process.picoclaw import rewrite_config
from .building import Builder, build_pipeline
from .explain import ConfigFileError, explain_error
from .schema import BuiltinsConfig, Config, HooksConfig

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from ..pipeline.pipeline import Pipeline
    from ..pipeline.tracing import TracingLevel


def load_config(path: str | os.PathLike[str]) -> Config:
    """Read, decode and check a config file (``.toml`` or ``.json``).

    Checking builds the stack once into a scratch pipeline, without opening the audit
    log, setting up an exporter or running plugins: so a command that does not exist, a
    regex that does not compile or a plugin that is not installed fails here.

    Raises:
        ConfigFileError: (a ``ConfigError``) the file cannot be read, does not parse,
            does not match the schema, or names something that does not exist; the
            message names the file, the field and what was expected.
    """
    file = os.fspath(path)
    config = parse_config(file)
    Builder(config, Path(file).resolve().parent, file, dry=True, run_plugins=False).build()
    return config


def pipeline_from_file(
    path: str | os.PathLike[str],
    *,
    tracing: TracingLevel | None = None,
    tracer_provider: TracerProvider | None = None,
    observers: bool = True,
) -> Pipeline:
    """Read a config file and build the pipeline it describes, building it once
    (``Pipeline.from_config(path)``): the checks of ``load_config`` are those of the
    build, made before the audit log is opened or a plugin called.  Relative commands
    and paths resolve against the file's directory.  The keywords are
    ``build_pipeline``'s.

    Raises:
        ConfigFileError: as ``load_config``; the message names the file, the field and
            what was expected.
    """
    file = os.fspath(path)
    return build_pipeline(
        parse_config(file),
        base_dir=os.path.dirname(os.path.abspath(file)),
        source=file,
        tracing=tracing,
        tracer_provider=tracer_provider,
        observers=observers,
    )


def parse_config(path: str | os.PathLike[str]) -> Config:
    """Read and decode a config file, without the checks of ``load_config``.

    Raises:
        ConfigFileError: the file cannot be read, does not parse, or does not match the
            schema.
    """
    file = os.fspath(path)
    suffix = Path(file).suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ConfigFileError(
            file, "", f"unknown config format {suffix or '(no extension)'!r}: use .toml or .json"
        )
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(file, "", f"cannot read it: {exc}") from None
    data: Any
    if suffix == ".toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigFileError(file, "", f"invalid TOML: {exc}") from None
    else:
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates)
        except json.JSONDecodeError as exc:
            raise ConfigFileError(
                file, "", f"invalid JSON: {exc.msg} (at line {exc.lineno}, column {exc.colno})"
            ) from None
        except _DuplicateKey as exc:
            raise ConfigFileError(file, "", f"invalid JSON: duplicate key {exc.key!r}") from None
    if suffix == ".json":
        from ..external.command.claude_settings import is_claude_settings

        if is_claude_settings(data, file):
            where = Path(file)
            if where.name == "hooks.json" and where.parent.name == "hooks":
                # a plugin's hooks/hooks.json: the plugin is the directory above
                return Config(hooks=HooksConfig(claude_plugins=[".."]))
            # a Claude Code settings file: its hooks, behind interpose's default stack
            # (named relative to its own directory, which relative paths resolve against)
            return Config(hooks=HooksConfig(claude_settings=[where.name]))
    return decode_config(data, file=file, table="object" if suffix == ".json" else "table")


def decode_config(data: Any, *, file: str = "<config>", table: str = "table") -> Config:
    """Decode parsed TOML or JSON (dicts and lists) into a ``Config``.

    Raises:
        ConfigFileError: ``data`` does not match the schema.
    """
    data, notes, moved = rewrite_config(
        data, file, json=table == "object", sections=Config.__struct_fields__, builtins=_BUILTINS
    )
    try:
        config = msgspec.convert(data, Config)
    except msgspec.ValidationError as exc:
        field, problem = explain_error(str(exc), data, table)
        for flat, nested in moved.items():  # a key that came from a builtin's `config`
            if field == flat or field.startswith((flat + ".", flat + "[")):
                field = nested + field[len(flat) :]
                break
        raise ConfigFileError(file, field, problem) from None
    config._notes = tuple(notes)
    return config


# the names of interpose's builtins, as a config file spells them (for PicoClaw's files)
_BUILTINS = tuple(field.encode_name for field in msgspec.structs.fields(BuiltinsConfig))


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result
