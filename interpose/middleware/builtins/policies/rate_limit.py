"""``builtin:rate-limit``: a token bucket per (tool, session) (:class:`RateLimit`)."""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from typing import ClassVar

from ....pipeline.payloads import ToolBeforeInput, ToolBeforeOutput
from ....pipeline.registry import Interceptor
from ....pipeline.tools import ToolMatcher
from ._base import Clock, Policy
from ._helpers import check_clock, check_id, check_priority, count_at_least, positive

__all__ = ["RATE_LIMIT_ID", "RateLimit"]

RATE_LIMIT_ID = "builtin:rate-limit"


class _Bucket:
    __slots__ = ("stamp", "tokens")

    def __init__(self, tokens: float, stamp: float) -> None:
        self.tokens = tokens
        self.stamp = stamp


class RateLimit(Policy):
    """``builtin:rate-limit``: a token bucket per (tool, session).

    Each bucket holds up to ``burst`` tokens and gains ``rate`` tokens every ``per``
    seconds; a call takes one token, and a call that finds less than one is blocked with
    the time until the next token: ``rate limit for exec in session s1: retry in 1.4s``
    (rounded up to a tenth of a second; ``in session ...`` is left out when the call has
    no session key).  A new bucket starts full.

    Args:
        rate: tokens added every ``per`` seconds (> 0).
        per: the period in seconds (> 0); ``RateLimit(rate=10, per=60)`` is 10 calls a
            minute.
        burst: the bucket's size, how many calls may come at once (an int >= 1);
            default ``max(1, ceil(rate))``.
        tools: a tool matcher (as ``tools=`` of ``pipe.intercept``) limiting which tools
            are rate limited; default every tool, each in its own bucket.
        clock: seconds as a float, monotonic; default ``time.monotonic``.  Tests pass a
            fake clock to step over refill boundaries without sleeping.
        max_buckets: how many buckets are kept; past it the least recently used bucket is
            dropped (a dropped bucket starts full again, so keep this above the number of
            (tool, session) pairs active at once).
        priority: default 95, right after the built-in guards.
        id: the registration id.

    Raises:
        ConfigError: a non-positive or non-finite ``rate`` or ``per``, a bad ``burst``,
            ``max_buckets``, ``clock``, priority or id.
    """

    ID: ClassVar[str] = RATE_LIMIT_ID
    PRIORITY: ClassVar[int] = 95
    _EPSILON: ClassVar[float] = 1e-9  # float noise in refill sums must not cost a token

    __slots__ = (
        "_buckets",
        "_clock",
        "_lock",
        "_refill",
        "burst",
        "id",
        "max_buckets",
        "per",
        "priority",
        "rate",
        "tools",
    )

    def __init__(
        self,
        rate: float,
        per: float = 1.0,
        *,
        burst: int | None = None,
        tools: ToolMatcher | None = None,
        clock: Clock = time.monotonic,
        max_buckets: int = 10_000,
        priority: int = PRIORITY,
        id: str = ID,
    ) -> None:
        self.rate = positive("rate", rate)
        self.per = positive("per", per)
        self.burst = (
            max(1, math.ceil(self.rate)) if burst is None else count_at_least("burst", burst, 1)
        )
        self.tools = tools
        self._clock = check_clock(clock)
        self.max_buckets = count_at_least("max_buckets", max_buckets, 1)
        self.priority = check_priority(priority)
        self.id = check_id(id)
        self._refill = self.rate / self.per  # tokens per second
        self._buckets: OrderedDict[tuple[str, str], _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RateLimit(rate={self.rate:g}, per={self.per:g}, burst={self.burst})"

    def take(self, tool: str, session_key: str = "") -> float:
        """Take a token for ``tool`` in ``session_key``: 0.0 if one was taken, else the
        seconds until one will be there (nothing is taken then)."""
        now = self._clock()
        key = (tool, session_key)
        with self._lock:
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = _Bucket(float(self.burst), now)
                self._buckets[key] = bucket
                if len(self._buckets) > self.max_buckets:
                    self._buckets.popitem(last=False)
            else:
                self._buckets.move_to_end(key)
                elapsed = now - bucket.stamp
                if elapsed > 0:
                    bucket.tokens = min(float(self.burst), bucket.tokens + elapsed * self._refill)
                    bucket.stamp = now
            if bucket.tokens >= 1.0 - self._EPSILON:
                bucket.tokens = max(0.0, bucket.tokens - 1.0)
                return 0.0
            return (1.0 - bucket.tokens) / self._refill

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.block:
            return
        wait = self.take(inp.tool_name, inp.session_key)
        if wait:
            # round up: "retry in 0.0s" would invite an immediate, refused retry
            tenths = math.ceil(wait * 10 - 1e-6) / 10
            where = f" in session {inp.session_key}" if inp.session_key else ""
            out.block = True
            out.block_reason = f"rate limit for {inp.tool_name}{where}: retry in {tenths:.1f}s"

    def interceptors(self) -> list[Interceptor]:
        return [self._registration("tool.before", "block", self.tools)]
