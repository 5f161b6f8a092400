"""``builtin:loop-guard``: block a call repeated with the same arguments in a turn
(:class:`LoopGuard`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, ClassVar

from ....pipeline.payloads import ToolBeforeInput, ToolBeforeOutput
from ....pipeline.registry import Interceptor
from ....pipeline.tools import ToolMatcher
from ._base import Policy
from ._helpers import args_digest, canonical_encoder, check_id, check_priority, count_at_least

__all__ = ["LOOP_GUARD_ID", "LoopGuard"]

LOOP_GUARD_ID = "builtin:loop-guard"


class LoopGuard(Policy):
    """``builtin:loop-guard``: block a call repeated with the same arguments in a turn.

    The ``max_repeats``-th call of the same tool with the same arguments (compared as
    canonical JSON: key order does not matter) within one turn is blocked, and so is
    every later one: ``loop guard: exec called 3 times with the same arguments in this
    turn``.  Attempts count whatever became of them, refused ones included.  Calls made
    outside a turn (``pipe.call_tool`` with nobody subscribed has no turn id) are each
    their own one-call turn and are never blocked.

    Memory: counts are kept per turn id for the ``max_turns`` most recently active turns;
    interceptors are not told when a turn ends, so the least recently active turn is
    forgotten when a new one starts past that bound (a turn idle for that long starts
    counting again).  Arguments are stored as a 16-byte hash, however large they are.

    Args:
        max_repeats: the count that is blocked (an int >= 2); default 3, so two identical
            calls pass and the third is refused.
        tools: a tool matcher; default every tool.
        max_turns: how many turns' counts are kept (an int >= 1).
        priority: default 105, ahead of the built-in guards.
        id: the registration id.

    Raises:
        ConfigError: ``max_repeats`` < 2 (1 would block every call), a bad ``max_turns``,
            priority or id.
    """

    ID: ClassVar[str] = LOOP_GUARD_ID
    PRIORITY: ClassVar[int] = 105

    __slots__ = (
        "_encoder",
        "_lock",
        "_turns",
        "id",
        "max_repeats",
        "max_turns",
        "priority",
        "tools",
    )

    def __init__(
        self,
        max_repeats: int = 3,
        *,
        tools: ToolMatcher | None = None,
        max_turns: int = 1024,
        priority: int = PRIORITY,
        id: str = ID,
    ) -> None:
        self.max_repeats = count_at_least("max_repeats", max_repeats, 2)
        self.max_turns = count_at_least("max_turns", max_turns, 1)
        self.tools = tools
        self.priority = check_priority(priority)
        self.id = check_id(id)
        self._turns: OrderedDict[str, dict[bytes, int]] = OrderedDict()
        self._encoder = canonical_encoder()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LoopGuard(max_repeats={self.max_repeats})"

    @property
    def tracked_turns(self) -> int:
        """How many turns' counts are held right now (at most ``max_turns``)."""
        return len(self._turns)

    def count(self, turn_id: str, tool: str, args: Mapping[str, Any]) -> int:
        """Record one call and return how many times, this one included, ``tool`` was
        called with ``args`` in ``turn_id``."""
        key = args_digest(self._encoder, tool, args)
        with self._lock:
            counts = self._turns.get(turn_id)
            if counts is None:
                counts = self._turns[turn_id] = {}
                if len(self._turns) > self.max_turns:
                    self._turns.popitem(last=False)
            else:
                self._turns.move_to_end(turn_id)
            n = counts[key] = counts.get(key, 0) + 1
        return n

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.block or not inp.turn_id:
            return
        n = self.count(inp.turn_id, inp.tool_name, out.args)
        if n >= self.max_repeats:
            out.block = True
            out.block_reason = (
                f"loop guard: {inp.tool_name} called {n} times with the same arguments in this turn"
            )

    def interceptors(self) -> list[Interceptor]:
        return [self._registration("tool.before", "block", self.tools)]
