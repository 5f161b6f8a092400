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

The package has one module per policy (:mod:`.tool_filter`, :mod:`.rate_limit`,
:mod:`.redact_secrets`, :mod:`.loop_guard`, :mod:`.result_cache`, :mod:`.output_cap`),
the base class in :mod:`._base` and the argument checks and keys they share in
:mod:`._helpers`; every public name is re-exported here.
"""

from __future__ import annotations

from ._base import Policy
from .loop_guard import LOOP_GUARD_ID, LoopGuard
from .output_cap import OUTPUT_CAP_ID, OutputCap
from .rate_limit import RATE_LIMIT_ID, RateLimit
from .redact_secrets import REDACT_SECRETS_ID, RedactSecrets
from .result_cache import RESULT_CACHE_ID, ResultCache
from .tool_filter import TOOL_FILTER_ID, ToolFilter, ToolRule

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
