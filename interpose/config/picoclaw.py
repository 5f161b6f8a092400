"""PicoClaw's config files: their forms rewritten to interpose's before decoding, with
notes on what is left out."""

from __future__ import annotations

from typing import Any

from .explain import ConfigFileError
from .explain import field_key as _key
from .schema import BuiltinsConfig, Config
from .schema import fields_of as _fields_of

_PICOCLAW_PROCESS_KEYS = ("transport", "dir", "trusted")


def _picoclaw_shaped(data: dict[str, Any]) -> bool:
    """Whether parsed data is a PicoClaw config: a process hook with one of PicoClaw's
    own keys (``transport``, ``dir``, ``trusted``), or a builtin with a ``config``."""
    hooks = data.get("hooks")
    if not isinstance(hooks, dict):
        return False
    processes = hooks.get("processes")
    if isinstance(processes, dict) and any(
        isinstance(table, dict) and any(key in table for key in _PICOCLAW_PROCESS_KEYS)
        for table in processes.values()
    ):
        return True
    builtins = hooks.get("builtins")
    return isinstance(builtins, dict) and any(
        isinstance(table, dict) and "config" in table for table in builtins.values()
    )


def _picoclaw(data: Any, file: str, *, json: bool) -> tuple[Any, list[str], dict[str, str]]:
    """Parsed data with PicoClaw's forms rewritten to interpose's; the notes on what
    was left out, and {flat field: the field it came from} for error messages.

    - ``hooks.builtins.<name>.config`` (PicoClaw's options of a builtin) is merged into
      its table;
    - a builtin interpose does not have is left out with a note when it is not enabled
      (PicoClaw does not look it up either), an error when it is;
    - in a PicoClaw-shaped file (JSON only: PicoClaw's config is ``config.json``, and an
      ``interpose.toml`` that uses ``dir`` or ``transport`` stays interpose's),
      ``hooks.priority_order`` defaults to ``picoclaw`` and top-level sections other than
      interpose's (``agents``, ``channels``, ...) are left out with a note.

    Raises:
        ConfigFileError: an enabled builtin interpose does not have; a key given both in
            a builtin's ``config`` and in its table.
    """
    notes: list[str] = []
    moved: dict[str, str] = {}
    if not isinstance(data, dict):
        return data, notes, moved
    data = dict(data)
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        hooks = data["hooks"] = dict(hooks)
        if json and _picoclaw_shaped(data):
            hooks.setdefault("priority_order", "picoclaw")
            _picoclaw_processes(hooks, notes)
            defaults = hooks.get("defaults")
            if isinstance(defaults, dict):
                # PicoClaw reads a timeout of 0 (Go's zero value) as "the default"
                hooks["defaults"] = {
                    key: value
                    for key, value in defaults.items()
                    if not (key.endswith("_timeout_ms") and value == 0 and value is not False)
                }
            foreign = [key for key in data if key not in Config.__struct_fields__]
            for key in foreign:
                del data[key]
            if foreign:
                notes.append(
                    "PicoClaw settings interpose has no use for were left out: "
                    + ", ".join(foreign)
                )
        builtins = hooks.get("builtins")
        if isinstance(builtins, dict):
            hooks["builtins"] = _picoclaw_builtins(
                builtins, file, notes, moved, shaped=hooks.get("priority_order") == "picoclaw"
            )
    return data, notes, moved


def _picoclaw_processes(hooks: dict[str, Any], notes: list[str]) -> None:
    """PicoClaw starts a process hook only when it says ``"enabled": true`` and so does
    ``hooks`` (Go's zero value is false); interpose's default is on.  In a PicoClaw
    file, the hooks PicoClaw would not start are not started here either."""
    processes = hooks.get("processes")
    if not isinstance(processes, dict):
        return
    hooks["processes"] = processes = dict(processes)
    for name, table in processes.items():
        if not isinstance(table, dict) or ("enabled" in table and table["enabled"] is not True):
            continue  # a wrong type is the schema's to report; false stays false
        if table.get("enabled") is not True or hooks.get("enabled") is not True:
            why = "it" if table.get("enabled") is not True else "hooks"
            processes[name] = {**table, "enabled": False}
            notes.append(
                f"hooks.processes.{_key(name)}: not started: PicoClaw starts a process hook "
                f'only when it and hooks say "enabled": true ({why} does not)'
            )


def _picoclaw_builtins(
    builtins: dict[str, Any],
    file: str,
    notes: list[str],
    moved: dict[str, str],
    *,
    shaped: bool,
) -> dict[str, Any]:
    """``hooks.builtins`` with each ``config`` merged; in a PicoClaw-ordered file, the
    builtins interpose does not have are left out when disabled, an error when enabled
    (elsewhere the schema reports them: a misspelt name must not pass)."""
    known = [field.encode_name for field in _fields_of(BuiltinsConfig)]
    result: dict[str, Any] = {}
    for name, table in builtins.items():
        where = f"hooks.builtins.{_key(name)}"
        if name not in known and shaped:
            if isinstance(table, dict) and table.get("enabled") is not True:
                notes.append(f"{where}: not an interpose builtin; left out (it is not enabled)")
                continue
            raise ConfigFileError(
                file,
                where,
                "not an interpose builtin (a PicoClaw builtin is Go code compiled into "
                "PicoClaw: run it as a process hook or a plugin instead, or disable it); "
                f"interpose's builtins: {', '.join(known)}",
            )
        if isinstance(table, dict) and isinstance(table.get("config"), dict):
            table = dict(table)
            options = table.pop("config")
            for key, value in options.items():
                if key in table:
                    raise ConfigFileError(
                        file,
                        f"{where}.config.{_key(str(key))}",
                        f"also given as {where}.{_key(str(key))}: give it once",
                    )
                table[key] = value
                moved[f"{where}.{_key(str(key))}"] = f"{where}.config.{_key(str(key))}"
        result[name] = table
    return result
