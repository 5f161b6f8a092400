"""Policy builtins: tool filter, rate limit, secret redaction, loop guard, result cache and
output size cap.

Unlike the two guards that ``Pipeline()`` registers, these are off until you install
them.  Each is a small class: the constructor validates its arguments (``ConfigError``,
a ``ValueError``, names the bad one), the instance is the handler, ``interceptors()``
returns its registrations and ``install(pipe)`` adds them::

    ToolFilter(deny=["group:automation"]).install(pipe)
    RateLimit(rate=10, per=60.0, tools=["exec"]).install(pipe)

Every handler is synchronous and never awaits, so a check and the update of the state
it reads happen in one step of the event loop: two concurrent calls cannot both take the
last token of a bucket.  (A lock makes that hold across threads too, for a policy shared
by pipelines running on several event loops.)  A chain made only of sync ``tool.before``
handlers takes the pipeline's fast path.

State (token buckets, per-turn counts, cached results) lives on the instance: install a
fresh instance per pipeline unless the pipelines should share it.  Every store is
bounded.

Default priorities, and why (higher runs first; the built-in guards are at 100 and 99):

=======================================  ===========  ====================================
registration                             hook         priority
=======================================  ===========  ====================================
``builtin:tool-filter``                  tool.before  120: the coarsest gate; a forbidden
                                                      tool is refused before anything
                                                      parses its arguments
``builtin:loop-guard``                   tool.before  105: counts every attempt, those the
                                                      guards refuse included (an agent
                                                      retrying a refused call *is* a loop)
``builtin:rate-limit``                   tool.before  95: after the security gates, so
                                                      refused calls spend no budget
``builtin:result-cache``                 tool.before  5: after argument transforms (10-99),
                                                      so its key is what the tool would get
``builtin:redact-secrets``               tool.after   100: first, so no later after-hook,
                                                      cache or audit log sees a secret
``builtin:output-cap``                   tool.after   90: after redaction, so a cut cannot
                                                      split a secret past recognition
``builtin:result-cache:store``,          tool.after   10: stores what the agent gets,
``builtin:result-cache:invalidate``                   redacted and capped
=======================================  ===========  ====================================
"""

from __future__ import annotations

import copy
import hashlib
import math
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias, cast

import msgspec

from ...errors import ConfigError
from ...pipeline.payloads import (
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
)
from ...pipeline.redaction import Redactor
from ...pipeline.registry import Interceptor, Registry
from ...pipeline.tools import TOOL_ALIASES, TOOL_GROUPS, ToolMatcher, normalize_tool_name

if TYPE_CHECKING:
    from ...pipeline.pipeline import Pipeline

__all__ = [
    "LOOP_GUARD_ID",
    "OUTPUT_CAP_ID",
    "RATE_LIMIT_ID",
    "REDACT_SECRETS_ID",
    "RESULT_CACHE_ID",
    "TOOL_FILTER_ID",
    "LoopGuard",
    "OutputCap",
    "Policy",
    "RateLimit",
    "RedactSecrets",
    "ResultCache",
    "ToolFilter",
    "ToolRule",
]

TOOL_FILTER_ID = "builtin:tool-filter"
RATE_LIMIT_ID = "builtin:rate-limit"
REDACT_SECRETS_ID = "builtin:redact-secrets"
LOOP_GUARD_ID = "builtin:loop-guard"
RESULT_CACHE_ID = "builtin:result-cache"
OUTPUT_CAP_ID = "builtin:output-cap"

Clock = Callable[[], float]


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

    def install(self, target: Pipeline | Registry) -> list[Interceptor]:
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
        self, hook: str, on_error: Literal["block", "skip"], tools: ToolMatcher | None
    ) -> Interceptor:
        """The policy itself (its ``__call__``) as the handler of ``hook``, under its id
        and priority."""
        return Interceptor(
            id=self.id,
            hook=hook,
            handler=cast(Callable[..., Any], self),
            priority=self.priority,
            tool_matcher=tools,
            on_error=on_error,
            source="builtin",
        )


# -- helpers ------------------------------------------------------------------------------


def _check_id(id: object) -> str:
    if not isinstance(id, str) or not id:
        raise ConfigError(f"id must be a non-empty str, got {id!r}")
    return id


def _check_priority(priority: object) -> int:
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ConfigError(f"priority must be an int, got {priority!r}")
    return priority


def _positive(name: str, value: object) -> float:
    """``value`` as a float when it is a finite number > 0; else ConfigError."""
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def _count_at_least(name: str, value: object, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def _check_clock(clock: object) -> Clock:
    if not callable(clock):
        raise ConfigError(f"clock must be a callable returning seconds, got {clock!r}")
    return clock


def _args_digest(encoder: msgspec.json.Encoder, tool: str, args: Mapping[str, Any]) -> bytes:
    """A fixed-size key for (tool, args): a hash of the tool name and the arguments as
    canonical JSON (keys sorted at every level; objects JSON cannot encode by their
    ``repr``).  Hashing keeps the stores small however large the arguments are."""
    try:
        text = encoder.encode(args)
    except (TypeError, ValueError, msgspec.EncodeError):  # e.g. keys of mixed types
        text = repr(sorted(args.items(), key=lambda kv: repr(kv[0]))).encode()
    return hashlib.blake2b(tool.encode() + b"\0" + text, digest_size=16).digest()


def _canonical_encoder() -> msgspec.json.Encoder:
    return msgspec.json.Encoder(order="sorted", enc_hook=repr)


_IMMUTABLE = (str, bytes, int, float, bool, type(None))


def _detached(value: Any) -> Any:
    """``value`` itself when it cannot change, else a deep copy (cached results must not
    share mutable objects with what later hooks or the agent might modify)."""
    if isinstance(value, _IMMUTABLE):
        return value
    if type(value) is dict and not value:  # the usual details: skip deepcopy's machinery
        return {}
    return copy.deepcopy(value)


# -- tool filter --------------------------------------------------------------------------

ToolRule: TypeAlias = "str | re.Pattern[str]"
"""A tool filter rule: a tool name (``"exec"``, aliases allowed: ``"bash"``), a group
(``"group:web"``) or a compiled regex (``re.compile(r"^mcp_")``, searched in the normalized
name and its aliases)."""

_NAME = re.compile(r"[\w.\-]+")

_ALIASES_OF: dict[str, tuple[str, ...]] = {}
for _alias, _canonical in TOOL_ALIASES.items():
    _ALIASES_OF[_canonical] = (*_ALIASES_OF.get(_canonical, ()), _alias)


def _compile_rule(rule: object, where: str) -> tuple[str, Callable[[str], bool]]:
    """(label for reasons, predicate over a normalized tool name)."""
    if isinstance(rule, re.Pattern):
        search = rule.search

        def matches(tool: str) -> bool:
            return search(tool) is not None or any(
                search(alias) is not None for alias in _ALIASES_OF.get(tool, ())
            )

        return f"/{rule.pattern}/", matches
    if not isinstance(rule, str):
        raise ConfigError(
            f"{where}: a rule is a tool name, a 'group:*' name or a compiled regex, "
            f"got {type(rule).__name__}"
        )
    if rule.startswith("group:"):
        members = TOOL_GROUPS.get(rule)
        if members is None:
            raise ConfigError(
                f"{where}: unknown tool group {rule!r}; groups: {', '.join(sorted(TOOL_GROUPS))}"
            )
        return rule, members.__contains__
    name = normalize_tool_name(rule)
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"{where}: {rule!r} is not a tool name; for a regex pass re.compile({rule!r})"
        )
    return rule, name.__eq__


class ToolFilter(Policy):
    """``builtin:tool-filter``: allow or deny tools by name, group or regex.

    Args:
        allow: rules (see :data:`ToolRule`); when given, every tool no rule matches is
            blocked.  ``None`` (the default) means no allow list; an empty list is
            refused, since it would block every tool.
        deny: rules; a tool one of them matches is blocked, whatever ``allow`` says.
        priority: default 120, ahead of the built-in guards.
        id: the registration id.

    Block reasons: ``tool filter: exec is denied by 'group:runtime'`` and
    ``tool filter: web_fetch is not on the allow list (read, group:memory)``.

    Raises:
        ConfigError: neither list given, an empty allow list, an unknown group, a rule
            that is neither a name nor a compiled regex (a string such as ``"^web_"`` is
            refused rather than silently matched as a name), a bad priority or id.
    """

    ID: ClassVar[str] = TOOL_FILTER_ID
    PRIORITY: ClassVar[int] = 120
    _MEMO_LIMIT: ClassVar[int] = 1024

    __slots__ = ("_allow", "_allow_label", "_deny", "_memo", "id", "priority")

    def __init__(
        self,
        *,
        allow: Iterable[ToolRule] | None = None,
        deny: Iterable[ToolRule] = (),
        priority: int = PRIORITY,
        id: str = ID,
    ) -> None:
        if isinstance(allow, str | re.Pattern) or isinstance(deny, str | re.Pattern):
            raise ConfigError("tool filter: allow and deny are lists of rules, not one rule")
        self._deny = tuple(_compile_rule(r, "tool filter deny") for r in deny)
        if allow is None:
            self._allow: tuple[tuple[str, Callable[[str], bool]], ...] | None = None
        else:
            self._allow = tuple(_compile_rule(r, "tool filter allow") for r in allow)
            if not self._allow:
                raise ConfigError(
                    "tool filter: an empty allow list would block every tool; "
                    "pass allow=None for no allow list"
                )
        if self._allow is None and not self._deny:
            raise ConfigError("tool filter: give an allow list, a deny list, or both")
        self._allow_label = ", ".join(label for label, _ in self._allow or ())
        # the decision depends on the tool name only: remember it per name
        self._memo: dict[str, str | None] = {}
        self.priority = _check_priority(priority)
        self.id = _check_id(id)

    def __repr__(self) -> str:
        allow = None if self._allow is None else [label for label, _ in self._allow]
        return f"ToolFilter(allow={allow!r}, deny={[label for label, _ in self._deny]!r})"

    def check(self, tool: str) -> str | None:
        """The block reason for ``tool`` (any spelling), or None when it may run."""
        name = normalize_tool_name(tool)
        try:
            return self._memo[name]
        except KeyError:
            pass
        reason = self._judge(name)
        if len(self._memo) < self._MEMO_LIMIT:
            self._memo[name] = reason
        return reason

    def _judge(self, name: str) -> str | None:
        for label, matches in self._deny:
            if matches(name):
                return f"tool filter: {name} is denied by {label!r}"
        if self._allow is not None and not any(matches(name) for _, matches in self._allow):
            return f"tool filter: {name} is not on the allow list ({self._allow_label})"
        return None

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if out.block:
            return
        try:
            reason = self._memo[inp.tool_name]
        except KeyError:
            reason = self.check(inp.tool_name)
        if reason is not None:
            out.block = True
            out.block_reason = reason

    def interceptors(self) -> list[Interceptor]:
        return [self._registration("tool.before", "block", None)]


# -- rate limit ---------------------------------------------------------------------------


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
        self.rate = _positive("rate", rate)
        self.per = _positive("per", per)
        self.burst = (
            max(1, math.ceil(self.rate)) if burst is None else _count_at_least("burst", burst, 1)
        )
        self.tools = tools
        self._clock = _check_clock(clock)
        self.max_buckets = _count_at_least("max_buckets", max_buckets, 1)
        self.priority = _check_priority(priority)
        self.id = _check_id(id)
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


# -- secret redaction ---------------------------------------------------------------------


def _count_mask(value: Any, mask: str) -> int:
    """How often ``mask`` occurs in the strings of ``value`` (walked like Redactor.redact)."""
    if isinstance(value, str):
        return value.count(mask)
    if isinstance(value, Mapping):
        return sum(_count_mask(v, mask) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_count_mask(v, mask) for v in value)
    if isinstance(value, msgspec.Struct):
        return _count_mask(msgspec.structs.asdict(value), mask)
    return 0


class RedactSecrets(Policy):
    """``builtin:redact-secrets``: scrub secrets out of tool results before the agent, or
    any later after-hook, sees them.

    Runs on ``tool.after`` for every outcome (a refusal's reason is scrubbed too).  The
    output is replaced by a redacted copy when, and only when, something was redacted:
    strings have every secret replaced by the mask, dicts, lists, tuples and msgspec
    structs are walked (containers come back as dicts and lists), and values of
    sensitive keys (``password``, ``api_key``, ``authorization``...) are masked.  The
    result then carries ``details["redacted"]``: how many secrets were masked.

    It fails closed: if redaction raises, the agent gets a blocked result instead of an
    unredacted one.

    Args:
        redactor: the rules; default ``Redactor()``: API keys of common providers
            (Anthropic, OpenAI, GitHub, GitLab, Slack, Stripe, Google, Hugging Face),
            bearer tokens, private key blocks, AWS access and secret keys, JWTs and
            ``password=...``-style assignments.  ``Redactor(patterns=[...])`` adds yours.
        tools: a tool matcher; default every tool.
        priority: default 100, first among after-hooks.
        id: the registration id.

    Raises:
        ConfigError: ``redactor`` is not a ``Redactor``, a bad priority or id.
    """

    ID: ClassVar[str] = REDACT_SECRETS_ID
    PRIORITY: ClassVar[int] = 100

    __slots__ = ("id", "priority", "redactor", "tools")

    def __init__(
        self,
        redactor: Redactor | None = None,
        *,
        tools: ToolMatcher | None = None,
        priority: int = PRIORITY,
        id: str = ID,
    ) -> None:
        if redactor is not None and not isinstance(redactor, Redactor):
            raise ConfigError(f"redactor must be an interpose.Redactor, got {redactor!r}")
        self.redactor = redactor or Redactor()
        self.tools = tools
        self.priority = _check_priority(priority)
        self.id = _check_id(id)

    def __repr__(self) -> str:
        return f"RedactSecrets({self.redactor!r})"

    def redact(self, value: Any) -> tuple[Any, int]:
        """(``value`` redacted, how many secrets were masked); ``value`` itself when none."""
        mask = self.redactor.mask
        if isinstance(value, str):
            text = self.redactor.redact_text(value)
            if text == value:
                return value, 0
            return text, max(1, text.count(mask) - value.count(mask))
        if not isinstance(value, Mapping | list | tuple | msgspec.Struct):
            return value, 0
        redacted = self.redactor.redact(value)
        masked = _count_mask(redacted, mask) - _count_mask(value, mask)
        return (redacted, masked) if masked > 0 else (value, 0)

    def __call__(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        result = out.result
        if not isinstance(result, ToolResult):
            return
        redacted, masked = self.redact(result.output)
        if masked:
            result.output = redacted
            result.details["redacted"] = result.details.get("redacted", 0) + masked

    def interceptors(self) -> list[Interceptor]:
        return [self._registration("tool.after", "block", self.tools)]


# -- loop guard ---------------------------------------------------------------------------


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
        self.max_repeats = _count_at_least("max_repeats", max_repeats, 2)
        self.max_turns = _count_at_least("max_turns", max_turns, 1)
        self.tools = tools
        self.priority = _check_priority(priority)
        self.id = _check_id(id)
        self._turns: OrderedDict[str, dict[bytes, int]] = OrderedDict()
        self._encoder = _canonical_encoder()
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
        key = _args_digest(self._encoder, tool, args)
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


# -- result cache -------------------------------------------------------------------------


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
        self.ttl = _positive("ttl", ttl)
        if scope not in ("session", "global"):
            raise ConfigError(f"scope must be 'session' or 'global', got {scope!r}")
        self.scope = scope
        self.tools = tools
        self.invalidate_on = invalidate_on
        self.max_entries = _count_at_least("max_entries", max_entries, 1)
        self._clock = _check_clock(clock)
        self.priority = _check_priority(priority)
        self.id = _check_id(id)
        self._entries: OrderedDict[tuple[str, str, bytes], _Entry] = OrderedDict()
        self._encoder = _canonical_encoder()
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
        digest = _args_digest(self._encoder, tool, args)
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
        details = _detached(details)
        details["cached"] = True
        details["cache_age"] = age
        return ToolResult(output=_detached(output), status="responded", details=details)

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
        entry = _Entry(self._clock(), _detached(result.output), _detached(result.details))
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


# -- output size cap ----------------------------------------------------------------------


_REFUSALS = frozenset({"blocked", "denied", "aborted"})


def _chars(n: int) -> str:
    return f"{n:,} char" if n == 1 else f"{n:,} chars"


class OutputCap(Policy):
    """``builtin:output-cap``: truncate tool output longer than ``max_chars``.

    A string output longer than ``max_chars`` keeps its first ``max_chars`` characters,
    followed by the marker, and ``details["truncated_chars"]`` records how many were
    cut.  An output of exactly ``max_chars`` is left alone.

    Other outputs (dicts, lists, numbers...) are measured by their JSON text, the form a
    model usually reads them in; one that is too long is replaced by its truncated JSON
    text, a string, since half a dict is not a dict.  Shorter ones keep their type.  With
    ``strings_only=True`` non-string outputs are never touched.

    Refusals (blocked, denied, aborted) keep their ``{"status", "tool", "reason"}``
    shape and are never cut.  A result that already carries ``details["truncated_chars"]``
    is not cut again (a cached result answered from the result cache, say).

    Args:
        max_chars: the most characters kept (an int >= 1).
        marker: appended after the cut; ``{cut}`` is the number of characters cut (an
            int: ``{cut:,}`` groups thousands) and ``{chars}`` the same as words
            (``"12,345 chars"``, ``"1 char"``).  Default ``"\\n… [truncated {chars}]"``.
        strings_only: leave non-string outputs alone.
        tools: a tool matcher; default every tool.
        priority: default 90, after secret redaction.
        id: the registration id.

    Raises:
        ConfigError: a bad ``max_chars``, a ``marker`` that is not a str or does not
            format with ``cut`` and ``chars``, a bad priority or id.
    """

    ID: ClassVar[str] = OUTPUT_CAP_ID
    PRIORITY: ClassVar[int] = 90
    DEFAULT_MARKER: ClassVar[str] = "\n… [truncated {chars}]"

    __slots__ = ("_encoder", "id", "marker", "max_chars", "priority", "strings_only", "tools")

    def __init__(
        self,
        max_chars: int = 20_000,
        *,
        marker: str = DEFAULT_MARKER,
        strings_only: bool = False,
        tools: ToolMatcher | None = None,
        priority: int = PRIORITY,
        id: str = ID,
    ) -> None:
        self.max_chars = _count_at_least("max_chars", max_chars, 1)
        if not isinstance(marker, str):
            raise ConfigError(f"marker must be a str, got {marker!r}")
        try:
            marker.format(cut=1, chars=_chars(1))
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(
                f"marker {marker!r} does not format with {{cut}} and {{chars}}: {exc!r}"
            ) from None
        self.marker = marker
        self.strings_only = bool(strings_only)
        self.tools = tools
        self.priority = _check_priority(priority)
        self.id = _check_id(id)
        self._encoder = msgspec.json.Encoder(enc_hook=repr)

    def __repr__(self) -> str:
        return f"OutputCap(max_chars={self.max_chars})"

    def cap(self, output: Any) -> tuple[Any, int]:
        """(``output`` capped, how many characters were cut); ``output`` itself when
        nothing was cut."""
        if isinstance(output, str):
            text = output
        elif self.strings_only or output is None:
            return output, 0
        else:
            try:
                text = self._encoder.encode(output).decode()
            except (TypeError, ValueError, msgspec.EncodeError):
                text = repr(output)
        cut = len(text) - self.max_chars
        if cut <= 0:
            return output, 0
        return text[: self.max_chars] + self.marker.format(cut=cut, chars=_chars(cut)), cut

    def __call__(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        result = out.result
        if not isinstance(result, ToolResult) or result.status in _REFUSALS:
            return
        if "truncated_chars" in result.details:
            return
        capped, cut = self.cap(result.output)
        if cut:
            result.output = capped
            result.details["truncated_chars"] = cut

    def interceptors(self) -> list[Interceptor]:
        return [self._registration("tool.after", "skip", self.tools)]
