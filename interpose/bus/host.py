"""What a sink needs of the thing it attaches to: the ``Host`` protocol.

``attach(pipe)`` methods (the Redis publisher, the audit log, the logging and the
metrics observers) are typed against ``Host``, not against ``Pipeline``: the bus and the
observers sit below the pipeline and never import it, the way an OpenTelemetry span
processor never imports its provider.  ``interpose.Pipeline`` is a ``Host``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

import anyio.abc

from .memory import InMemoryBus, Overflow, Subscription

__all__ = ["Host", "Service"]


class Service(Protocol):
    """Something that runs while a host is entered (see ``Host.add_service``)."""

    async def start(self, tg: anyio.abc.TaskGroup) -> None: ...

    async def aclose(self) -> None: ...


class Host(Protocol):
    """A pipeline, as its sinks see it: its bus, subscribing, services."""

    @property
    def bus(self) -> InMemoryBus:
        """The bus the host publishes its events on."""
        ...

    def subscribe(
        self,
        observer: Callable[[Any], Any],
        *,
        events: Iterable[str] | None = None,
        buffer: int = 1024,
        overflow: Overflow = "block",
        timeout: float | None = None,
        name: str | None = None,
    ) -> Subscription:
        """Subscribe ``observer`` to the host's bus (``Pipeline.subscribe``)."""
        ...

    def add_service(self, service: Service) -> None:
        """Run ``service`` while the host is entered (``Pipeline.add_service``)."""
        ...
