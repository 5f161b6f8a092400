"""What listens on the bus.

An observer is any callable taking one event, sync or async; subscribe it with
``pipe.subscribe(observer, events={...})``.  ``Observer`` is the protocol, for typing.

Ready-made observers, each with an ``attach(pipe)`` that subscribes it:

- ``AuditLog``: every event as a JSON line in a size-rotated file, nothing dropped;
- ``LoggingObserver``: every event as a readable line on a stdlib logger;
- ``MetricsObserver``: tool-call, interceptor and bus-drop metrics through the
  OpenTelemetry metrics API.

``attach`` takes any ``interpose.bus.host.Host`` (a ``Pipeline`` is one): observers sit
below the pipeline and never import it.

Each is imported on first use: ``import interpose.observers`` loads none of them, and
only ``MetricsObserver`` loads the OpenTelemetry metrics API (never the SDK).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol

from ..bus.events import Event

if TYPE_CHECKING:
    from .audit import AuditLog
    from .logs import LoggingObserver
    from .metrics import MetricsObserver

__all__ = ["AsyncObserver", "AuditLog", "LoggingObserver", "MetricsObserver", "Observer"]

_LAZY = {
    "AuditLog": ".audit",
    "LoggingObserver": ".logs",
    "MetricsObserver": ".metrics",
}


class Observer(Protocol):
    """A synchronous observer: called with each event it subscribed to."""

    def __call__(self, event: Event, /) -> Any: ...


class AsyncObserver(Protocol):
    """An asynchronous observer: awaited with each event, within its timeout."""

    async def __call__(self, event: Event, /) -> Any: ...


def __getattr__(name: str) -> Any:
    """Import a ready-made observer on first access.

    Raises:
        AttributeError: no such name in this package.
    """
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
