"""What listens on the bus.

An observer is any callable taking one event, sync or async; subscribe it with
``pipe.subscribe(observer, events={...})``.  ``Observer`` is the protocol, for typing.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..bus.events import Event

__all__ = ["AsyncObserver", "Observer"]


class Observer(Protocol):
    """A synchronous observer: called with each event it subscribed to."""

    def __call__(self, event: Event, /) -> Any: ...


class AsyncObserver(Protocol):
    """An asynchronous observer: awaited with each event, within its timeout."""

    async def __call__(self, event: Event, /) -> Any: ...
