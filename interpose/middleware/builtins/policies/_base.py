"""The base of the policy builtins: :class:`Policy` (``interceptors()`` and an all-or-nothing
``install()``) and the :data:`Clock` type the time-based policies take."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, Protocol, cast

from ....pipeline.hooks import Mode
from ....pipeline.registry import Interceptor, Registry
from ....pipeline.tools import ToolMatcher

__all__ = ["Clock", "Policy", "RegistryHost"]

Clock = Callable[[], float]


class RegistryHost(Protocol):
    """What ``install()`` needs of a pipeline: its registry (a ``Pipeline`` is one)."""

    @property
    def registry(self) -> Registry: ...


class Policy:
    """Base of the policy builtins: ``interceptors()`` lists the registrations,
    ``install(target)`` adds them to a pipeline or a registry."""

    __slots__ = ()

    # set by every policy's __init__
    id: str
    priority: int

    def interceptors(self) -> list[Interceptor]:
        """The registrations this policy needs, ready for ``Registry.add``."""
        raise NotImplementedError

    def install(self, target: RegistryHost | Registry) -> list[Interceptor]:
        """Add every registration of this policy to ``target`` (a ``Pipeline`` or a
        ``Registry``); returns them.  All or nothing: when one is rejected, the ones
        already added are removed again.

        Raises:
            RegistrationError: a registration was rejected (most often: this policy, or
                another with the same id, is already installed; pass ``id=`` to install
                a second one).
        """
        registry = target if isinstance(target, Registry) else target.registry
        added: list[Interceptor] = []
        try:
            for reg in self.interceptors():
                registry.add(reg)
                added.append(reg)
        except BaseException:
            for reg in reversed(added):
                registry.remove(reg.id)
            raise
        return added

    def _registration(
        self,
        hook: str,
        on_error: Literal["block", "skip"],
        tools: ToolMatcher | None = None,
        *,
        handler: Callable[..., Any] | None = None,
        suffix: str = "",
        mode: Mode = "enforce",
    ) -> Interceptor:
        """``handler`` (by default the policy itself, its ``__call__``) on ``hook``,
        under the policy's id (plus ``suffix``, for a policy with several handlers),
        priority and ``mode``."""
        return Interceptor(
            id=self.id + suffix,
            hook=hook,
            handler=cast(Callable[..., Any], self) if handler is None else handler,
            priority=self.priority,
            tool_matcher=tools,
            on_error=on_error,
            source="builtin",
            mode=mode,
        )
