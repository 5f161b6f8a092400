"""Plugins: third-party packages that add to a pipeline built from a config file.

A plugin is an entry point in the ``interpose.plugins`` group whose object is a callable
``plugin(pipe, config) -> None``: it registers interceptors, middleware, approvers,
observers or services on ``pipe`` (a ``Pipeline`` not yet entered), reading its settings
from ``config``, its own table of the config file without the ``enabled`` key.  A
package declares one in its ``pyproject.toml``::

    [project.entry-points."interpose.plugins"]
    ticket-gate = "ticket_gate:plugin"

and a config file enables it by name, with its settings::

    [plugins.ticket-gate]
    enabled = true
    project = "OPS"

A plugin is imported only when a config enables it.  It runs once per pipeline built
(``interpose check`` builds one too), so it should only register things: whatever must
run (a connection, a child process) belongs in a service (``pipe.add_service``), which
starts with ``async with pipe``.  It reports a bad setting by raising ``ConfigError``;
the config loader names the plugin's table in the error (any other exception is
reported as the plugin failing, with its type and message).  Registrations a plugin adds
through the plain API (``source="code"``) are labelled ``source="plugin:<name>"``.
"""

from __future__ import annotations

import dataclasses
import inspect
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any, Protocol

from .errors import ConfigError

if TYPE_CHECKING:
    from .pipeline.pipeline import Pipeline

__all__ = ["PLUGIN_GROUP", "Plugin", "apply_plugin", "installed_plugins", "load_plugin"]

#: The entry-point group plugins are declared in.
PLUGIN_GROUP = "interpose.plugins"


class Plugin(Protocol):
    """What a plugin's entry point loads: ``plugin(pipe, config)``."""

    def __call__(self, pipe: Pipeline, config: dict[str, Any], /) -> None: ...


def installed_plugins() -> dict[str, EntryPoint]:
    """The installed plugins by name (the first one found when two share a name)."""
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=PLUGIN_GROUP):
        found.setdefault(ep.name, ep)
    return found


def load_plugin(name: str) -> Plugin:
    """Import the plugin ``name`` and return its callable.

    Raises:
        ConfigError: no installed distribution declares it, importing it failed, or
            what it names is not a plain (non-async) callable.
    """
    installed = installed_plugins()
    ep = installed.get(name)
    if ep is None:
        have = ", ".join(sorted(installed)) or "none"
        raise ConfigError(
            f"no installed plugin named {name!r} (entry point group {PLUGIN_GROUP!r}; "
            f"installed: {have})"
        )
    try:
        plugin = ep.load()
    except Exception as exc:
        raise ConfigError(
            f"plugin {name!r} ({ep.value}) cannot be loaded: {type(exc).__name__}: {exc}"
        ) from exc
    if not callable(plugin):
        raise ConfigError(
            f"plugin {name!r} ({ep.value}) is not callable (it is a {type(plugin).__name__} "
            "object); a plugin is a function plugin(pipe, config)"
        )
    if inspect.iscoroutinefunction(plugin):
        raise ConfigError(
            f"plugin {name!r} ({ep.value}) is an async function; a plugin only registers "
            "things, so it is a plain function (start work in a service: pipe.add_service)"
        )
    return plugin  # type: ignore[no-any-return]


def apply_plugin(name: str, plugin: Plugin, pipe: Pipeline, config: dict[str, Any]) -> None:
    """Run ``plugin(pipe, config)`` and label what it registered ``plugin:<name>``.

    Raises:
        ConfigError: the plugin raised (its message says which plugin and what it said).
    """
    registry = pipe.registry
    before = {reg.id for reg in registry.list()}
    try:
        plugin(pipe, config)
    except ConfigError as exc:
        raise ConfigError(f"plugin {name!r}: {exc}") from exc
    except Exception as exc:
        raise ConfigError(f"plugin {name!r} failed: {type(exc).__name__}: {exc}") from exc
    added = [reg for reg in registry.list() if reg.id not in before]
    # Re-add what the plugin registered, relabelled.  Each hook's list is re-added in
    # its own order, so equal priorities keep their registration order; they were the
    # newest registrations anyway.
    for reg in added:
        registry.remove(reg.id)
    for reg in added:
        registry.add(
            dataclasses.replace(reg, source=f"plugin:{name}") if reg.source == "code" else reg
        )
