"""What the stages read of their pipeline: one object, public names only.

A ``Pipeline`` builds one ``Runtime`` and hands it to the tool stage and to its
turns: the bus, the failure policy and counters (``Failures``), the tracing
settings, the compiled tool chains, the call and event counters, and whether the
pipeline is entered.  The pipeline's own settings that a user may change after
construction (``max_retries``, the timeouts, ``human_approval``) are read through
``host``, typed by the small ``Host`` protocol: nothing here imports the pipeline.
"""

from __future__ import annotations

import itertools
import sys
from asyncio.events import _get_running_loop
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from .failures import Failures
from .registry import Registry
from .tracing import Tracing

if TYPE_CHECKING:
    from ..bus.memory import InMemoryBus
    from .payloads import Approval, ApprovalRequest

__all__ = ["Host", "Runtime", "event_loop_running"]


class Host(Protocol):
    """The settings of a pipeline that the stages read per call."""

    registry: Registry
    max_retries: int
    interceptor_timeout: float | None
    approval_timeout: float | None

    @property
    def human_approval(
        self,
    ) -> Callable[[ApprovalRequest, str], bool | Approval | Awaitable[bool | Approval]] | None: ...


class Runtime:
    """The state the stages share with their pipeline (see the module docstring)."""

    __slots__ = (
        "bus",
        "call_ids",
        "chains",
        "entered",
        "failures",
        "hook_failed",
        "host",
        "seq",
        "services",
        "settle",
        "trace",
    )

    def __init__(self, host: Host, bus: InMemoryBus, trace: Tracing, services: list[Any]) -> None:
        self.host = host
        self.bus = bus
        self.trace = trace
        self.services = services  # the pipeline's services: calls need it entered
        self.entered = False
        self.seq = itertools.count(1)  # the events' sequence numbers
        self.call_ids = itertools.count(1)
        self.failures = Failures(bus, self.seq, debug=False)
        # its two entries the handler loops take, bound once rather than on every call
        self.hook_failed = self.failures.hook_failed
        self.settle = self.failures.settle
        # agent id -> tool name as called -> its compiled chain (no key tuple per call)
        self.chains: dict[str, dict[str, Any]] = {}

    def check_running(self) -> None:
        """Raise unless calls may run now: the pipeline is entered, or it has neither
        subscribers nor services.

        Raises:
            RuntimeError: as said, naming what needs the pipeline entered.
        """
        if self.entered:
            return
        if self.bus.subscriptions:
            raise RuntimeError(
                "this pipeline has subscribers: enter it with `async with pipe:` before "
                "calling it, so that observers run and are drained"
            )
        if self.services:
            raise RuntimeError(
                "this pipeline has services (process hooks...): enter it with `async with "
                "pipe:` before calling it, so that they are started"
            )


def event_loop_running() -> bool:
    """Whether an event loop (asyncio's, or trio's) runs in this thread."""
    if _get_running_loop() is not None:
        return True
    trio = sys.modules.get("trio")
    if trio is None:
        return False
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        return False
    return True
