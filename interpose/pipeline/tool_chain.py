"""A tool's compiled chain: everything a call of one tool by one agent needs.

``compile_tool`` builds it once per registry version (and tracer of interceptor
spans) and caches it in the pipeline's ``Runtime``; the tool stage (``tool_stage``)
runs it and builds the middleware onion around its own core.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .chain import Step, any_async, any_watched, callables, compile_steps
from .context import ToolContext
from .tools import normalize_tool_name
from .tracing import instrument, tool_span_base

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

    from .runtime import Runtime

__all__ = ["ToolChain", "compile_tool"]

_CACHE_LIMIT = 4096


class ToolChain:
    """Everything a call of one tool by one agent needs, compiled once per version."""

    __slots__ = (
        "after",
        "after_steps",
        "app",
        "approvers",
        "before",
        "before_steps",
        "empty",
        "layers",
        "quiet",
        "raw_name",
        "span_base",
        "sync_before",
        "tool_name",
        "track_responders",
        "variants",
        "version",
        "watched",
    )

    def __init__(self, version: int, raw_name: str, tool_name: str) -> None:
        self.version = version
        self.raw_name = raw_name
        self.tool_name = tool_name
        self.before: tuple[Callable[..., Any], ...] = ()
        self.before_steps: tuple[Step, ...] = ()
        # (handler, its step) pairs: one loop over a tuple (a zip costs ~200 ns a call)
        self.approvers: tuple[tuple[Callable[..., Any], Step], ...] = ()
        self.after: tuple[Callable[..., Any], ...] = ()
        self.after_steps: tuple[Step, ...] = ()
        self.layers: tuple[Step, ...] = ()  # the tool middleware, outermost first
        self.app: Callable[[ToolContext], Awaitable[None]] | None = None
        self.empty = True
        # only sync tool.before handlers: run them without a coroutine when nobody listens
        self.quiet = False
        # every tool.before handler is sync: with nobody listening, the full path runs
        # them without a coroutine (a chain with approvers: the rows with an approver)
        self.sync_before = True
        # track which before-step responds: a trusted one may respond past the
        # approvers, and reports (events, spans) name the responder
        self.track_responders = False
        # the same chain for traced calls, by the tracer of interceptor spans (or None)
        self.variants: dict[Tracer | None, ToolChain] = {}
        self.span_base: dict[str, Any] = {}  # execute_tool attributes shared by every call
        # some tool.before or tool.after handler is async with a timeout: under asyncio,
        # one chain._Watch per call gives them their deadlines if they suspend
        self.watched = False


def compile_tool(
    rt: Runtime,
    raw_name: str,
    agent_id: str,
    spans: Tracer | None = None,
    base: ToolChain | None = None,
) -> ToolChain:
    """Compile the chain of ``raw_name`` for ``agent_id`` and cache it in ``rt``; with
    ``base``, its variant for traced calls (a span per step with ``spans``), cached on it.

    Raises:
        TypeError: ``raw_name`` is not a str.
    """
    if not isinstance(raw_name, str):
        raise TypeError(f"tool name must be a str, got {type(raw_name).__name__}")
    host = rt.host
    reg = host.registry
    tool = normalize_tool_name(raw_name)
    chain = ToolChain(reg.version, raw_name, tool)

    def compiled(hook: str, timeout: float | None) -> tuple[Any, tuple[Step, ...]]:
        fns, steps = compile_steps(reg.entries(hook, tool=tool, agent=agent_id), timeout)
        if spans is None:
            return fns, steps
        steps = tuple(instrument(s, spans) for s in steps)
        return callables(steps), steps

    chain.before, chain.before_steps = compiled("tool.before", host.interceptor_timeout)
    approvers, approver_steps = compiled("tool.approve", host.approval_timeout)
    chain.approvers = tuple(zip(approvers, approver_steps, strict=True))
    chain.after, chain.after_steps = compiled("tool.after", host.interceptor_timeout)
    _, layers = compile_steps(reg.entries("tool", tool=tool, agent=agent_id), None, wrap=False)
    if spans is not None:
        layers = tuple(instrument(s, spans, layer=True) for s in layers)
    chain.layers = layers  # the stage builds the onion around its core from them
    chain.empty = not (chain.before or chain.approvers or chain.after or layers)
    chain.watched = any_watched(chain.before_steps) or any_watched(chain.after_steps)
    chain.sync_before = not any_async(chain.before_steps)
    chain.quiet = (
        bool(chain.before or chain.after)
        and not (chain.approvers or layers)
        and chain.sync_before
        and not any_async(chain.after_steps)
    )
    if base is not None:
        chain.span_base = tool_span_base(tool, raw_name, agent_id)
    chain.track_responders = base is not None or (
        bool(chain.approvers) and any(s.trusted for s in chain.before_steps)
    )
    if base is not None:
        base.variants[spans] = chain
        return chain
    chains = rt.chains.get(agent_id)
    if chains is None:
        if len(rt.chains) >= _CACHE_LIMIT:
            rt.chains.clear()
        chains = rt.chains[agent_id] = {}
    elif len(chains) >= _CACHE_LIMIT:
        chains.clear()
    chains[raw_name] = chain
    return chain
