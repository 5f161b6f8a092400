"""``builtin:result-cache``: answer a repeated call from a cache (:class:`ResultCache`)."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from ....errors import ConfigError
from ....pipeline.payloads import (
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
)
from ....pipeline.registry import Interceptor
from ....pipeline.tools import ToolMatcher
from ._base import Clock, Policy
from ._helpers import (
    args_digest,
    canonical_encoder,
    check_clock,
    check_id,
    check_priority,
    count_at_least,
    detached,
    positive,
)

__all__ = ["RESULT_CACHE_ID", "ResultCache"]

RESULT_CACHE_ID = "builtin:result-cache"


class _Entry:
    __slots__ = ("details", "output", "stored")

    def __init__(self, stored: float, output: Any, details: dict[str, Any]) -> None:
        self.stored = stored
        self.output = output
        self.details = details


class ResultCache(Policy):
    """``builtin:result-cache``: answer a repeated call from a cache instead of running
    the tool again.

    ``tool.before`` (priority 5) looks the call up by tool and arguments (canonical
    JSON); a hit younger than ``ttl`` seconds becomes the result, with status
    ``"responded"`` and ``details["cached"] = True``, ``details["cache_age"]`` (seconds).
    ``tool.after`` (``builtin:result-cache:store``) stores results of calls that ran and
    returned ``"ok"``, as the agent got them (after redaction and the output cap).  An
    entry expires when its age reaches ``ttl``; past ``max_entries`` the least recently
    used entry goes.

    Trust: the lookup is registered ``trusted=True``, so a hit skips the approvers. An
    approver allowed the call that filled the entry (same tool, same arguments, same
    agent and session with the default ``scope``), but a hit is not asked again: do not
    cache tools whose approval depends on more than their arguments, and keep ``ttl``
    short where an approval should expire.  Blocks still win: a later ``tool.before``
    interceptor may block a hit, and the guards (priority 99-100) run before the lookup.

    Invalidation (``builtin:result-cache:invalidate``): a call of an ``invalidate_on``
    tool that ran (status ok or error) empties the whole cache, in every scope, since it
    may have changed files, memory or the world the cached answers describe.  A tool that
    is both cached and invalidating empties the cache and then has its own result stored.

    Args:
        ttl: seconds an entry answers for (> 0).
        tools: what is cached: a tool matcher; default the read-only tools ``read``,
            ``web_fetch``, ``web_search``, ``memory_search`` and ``memory_get``.
        invalidate_on: a tool matcher, or None for no invalidation; default
            ``write``, ``edit``, ``apply_patch``, ``exec`` and ``process``.
        scope: ``"session"`` (default) keys entries by agent and session too, so one
            session never gets another's answers; ``"global"`` shares them.
        max_entries: how many results are kept (an int >= 1).
        clock: seconds as a float, monotonic; default ``time.monotonic``.
        priority: of the lookup; the store and invalidation run at 10 on tool.after.
        id: the lookup's id; the after-hooks are ``<id>:store`` and ``<id>:invalidate``.

    Raises:
        ConfigError: a bad ``ttl``, ``scope``, ``max_entries``, ``clock``, priority or id.
    """

    ID: ClassVar[str] = RESULT_CACHE_ID
    PRIORITY: ClassVar[int] = 5
    AFTER_PRIORITY: ClassVar[int] = 10
    DEFAULT_TOOLS: ClassVar[tuple[str, ...]] = (
        "read",
        "web_fetch",
        "web_search",
        "memory_search",
        "memory_get",
    )
    DEFAULT_INVALIDATE_ON: ClassVar[tuple[str, ...]] = (
        "write",
        "edit",
        "apply_patch",
        "exec",
        "process",
    )

    __slots__ = (
        "_clock",
        "_encoder",
        "_entries",
        "_lock",
        "id",
        "invalidate_on",
        "max_entries",
        "priority",
        "scope",
        "tools",
        "ttl",
    )

    def __init__(
        self,
        ttl: float = 60.0,
        *,
        tools: ToolMatcher = DEFAULT_TOOLS,
        invalidate_on: ToolMatcher | None = DEFAULT_INVALIDATE_ON,
        scope: Literal["session", "global"] = "session",
        max_entries: int = 1024,
        clock: Clock = time.monotonic,
        priority: int = PRIORITY,
        id: str = ID,
    ) -> None:
        self.ttl = positive("ttl", ttl)
        if scope not in ("session", "global"):
            raise ConfigError(f"scope must be 'session' or 'global', got {scope!r}")
        self.scope = scope
        self.tools = tools
        self.invalidate_on = invalidate_on
        self.max_entries = count_at_least("max_entries", max_entries, 1)
        self._clock = check_clock(clock)
        self.priority = check_priority(priority)
        self.id = check_id(id)
        self._entries: OrderedDict[tuple[str, str, bytes], _Entry] = OrderedDict()
        self._encoder = canonical_encoder()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ResultCache(ttl={self.ttl:g}, scope={self.scope!r}, entries={len(self)})"

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Forget every cached result."""
        with self._lock:
            self._entries.clear()

    def _key(
        self, agent_id: str, session_key: str, tool: str, args: Mapping[str, Any]
    ) -> tuple[str, str, bytes]:
        digest = args_digest(self._encoder, tool, args)
        if self.scope == "global":
            return ("", "", digest)
        return (agent_id, session_key, digest)

    def lookup(
        self, tool: str, args: Mapping[str, Any], *, agent_id: str = "", session_key: str = ""
    ) -> ToolResult | None:
        """The cached result of this call as a fresh ``"responded"`` ToolResult, or None
        when there is none younger than ``ttl``."""
        key = self._key(agent_id, session_key, tool, args)
        now = self._clock()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            age = now - entry.stored
            if age >= self.ttl:
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            output, details = entry.output, entry.details
        details = detached(details)
        details["cached"] = True
        details["cache_age"] = age
        return ToolResult(output=detached(output), status="responded", details=details)

    def store(
        self,
        tool: str,
        args: Mapping[str, Any],
        result: ToolResult,
        *,
        agent_id: str = "",
        session_key: str = "",
    ) -> None:
        """Keep a copy of ``result`` as the answer to this call for ``ttl`` seconds.

        Raises:
            TypeError, copy.Error: the output cannot be deep-copied (a generator, an
                open file...).  Through the pipeline, the store's ``on_error="skip"``
                records the failure and the result is simply not cached.
        """
        key = self._key(agent_id, session_key, tool, args)
        entry = _Entry(self._clock(), detached(result.output), detached(result.details))
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.block or out.result is not None:
            return
        hit = self.lookup(
            inp.tool_name, out.args, agent_id=inp.agent_id, session_key=inp.session_key
        )
        if hit is not None:
            out.result = hit

    def after(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        """``tool.after``: store a result of a call that ran and succeeded."""
        result = out.result
        if inp.status != "ok" or not isinstance(result, ToolResult):
            return
        if result.status != "ok" or result.is_error:
            return
        self.store(
            inp.tool_name, inp.args, result, agent_id=inp.agent_id, session_key=inp.session_key
        )

    def invalidate(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        """``tool.after`` of the invalidating tools: empty the cache if the call ran."""
        if inp.status in ("ok", "error") and self._entries:
            self.clear()

    def interceptors(self) -> list[Interceptor]:
        regs = [
            Interceptor(
                id=self.id,
                hook="tool.before",
                handler=self,
                priority=self.priority,
                tool_matcher=self.tools,
                on_error="skip",  # a broken cache is a miss, not a refusal
                trusted=True,
                source="builtin",
            )
        ]
        if self.invalidate_on is not None:
            # registered before the store, at the same priority, so it runs first: a tool
            # that is both cached and invalidating empties the cache, then is stored
            regs.append(
                Interceptor(
                    id=f"{self.id}:invalidate",
                    hook="tool.after",
                    handler=self.invalidate,
                    priority=self.AFTER_PRIORITY,
                    tool_matcher=self.invalidate_on,
                    on_error="skip",
                    source="builtin",
                )
            )
        regs.append(
            Interceptor(
                id=f"{self.id}:store",
                hook="tool.after",
                handler=self.after,
                priority=self.AFTER_PRIORITY,
                tool_matcher=self.tools,
                on_error="skip",
                source="builtin",
            )
        )
        return regs
