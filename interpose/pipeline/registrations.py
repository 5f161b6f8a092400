"""Registrations: what a user adds to a registry (an interceptor or a middleware).

A leaf of the registry: the registry orders them, the shadow mode wraps them; both
import them from here, so neither imports the other's module for them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .hooks import Mode, OnError
from .tools import ToolMatcher

__all__ = ["Handler", "Interceptor", "Middleware", "Registration"]

Handler = Callable[..., Any]


@dataclass(frozen=True, slots=True)
class Interceptor:
    """An interceptor registration: ``handler(input, output)`` on one hook.

    ``tool.approve`` handlers take one argument, the ``ApprovalRequest``.  ``on_error``
    and ``timeout`` default to the hook's policy and the pipeline's timeouts;
    ``timeout=math.inf`` means none (for a handler that bounds its own waits).  A
    ``trusted`` interceptor that responds (sets ``output.result``) skips the approvers.
    ``mode="shadow"`` runs the handler on copies and records what it decided (a
    ``shadow_decision`` event) without enforcing it (see ``interpose.pipeline.shadow``).
    """

    id: str
    hook: str
    handler: Handler
    priority: int = 0
    tool_matcher: ToolMatcher | None = None
    agent_matcher: str | re.Pattern[str] | None = None
    on_error: OnError | None = None
    timeout: float | None = None
    trusted: bool = False
    source: str = "code"
    mode: Mode = "enforce"


@dataclass(frozen=True, slots=True)
class Middleware:
    """A middleware registration: ``async handler(ctx, call_next)`` wrapping a stage.

    ``mode="shadow"``: the layer runs on a copy of the context and its ``call_next``
    runs the real inner layers once; what it would have changed is recorded, the
    stage's outcome is the one without it.
    """

    id: str
    stage: str
    handler: Handler
    priority: int = 0
    tool_matcher: ToolMatcher | None = None
    agent_matcher: str | re.Pattern[str] | None = None
    on_error: OnError | None = None
    timeout: float | None = None
    source: str = "code"
    mode: Mode = "enforce"


Registration = Interceptor | Middleware
