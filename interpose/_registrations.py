"""Registrations: what a user adds to a registry (an interceptor or a middleware).

A leaf below every layer: the registry orders them, the shadow mode wraps them, the
recording layers of the audit log (an observer) build them; each imports them from
here.  The pipeline re-exports them (``interpose.pipeline.registry``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = [
    "Handler",
    "Interceptor",
    "Middleware",
    "Mode",
    "OnError",
    "Registration",
    "ToolMatcher",
]

OnError: TypeAlias = Literal["block", "skip", "raise"]
"""What a failing handler does to the call: fail closed, be skipped, or raise."""

Mode: TypeAlias = Literal["enforce", "shadow"]
"""``shadow``: the registration runs and what it decides is recorded, never applied."""

ToolMatcher: TypeAlias = "str | re.Pattern[str] | Sequence[str]"
"""Which tools a registration applies to (see ``interpose.pipeline.tools``)."""

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
