"""interpose: policy, telemetry and control between an AI agent and everything it touches.

>>> import interpose
>>> pipe = interpose.Pipeline(builtins=False)
"""

import os as _os

from ._version import __version__ as __version__
from .bus.events import Event
from .bus.memory import InMemoryBus, Subscription, SubscriptionStats
from .errors import (
    AbortTurn,
    ConfigError,
    HardAbort,
    InterposeError,
    MiddlewareError,
    RegistrationError,
)
from .external.command.runner import CommandHook, CommandHookError
from .external.process import ProcessHook, ProcessHookError, ProcessHookStats, ProcessHookTimeout
from .middleware.builtins import register_builtins as _register_builtins
from .pipeline import defaults as _defaults
from .pipeline.context import (
    CommandContext,
    CompactContext,
    LLMContext,
    MessageContext,
    ParamsContext,
    ToolContext,
    TurnContext,
)
from .pipeline.global_registry import (
    get_global_interceptor_registry,
    initialize_global_interceptors,
    reset_global_interceptors,
)
from .pipeline.hooks import HOOKS, STAGES
from .pipeline.payloads import (
    Approval,
    ApprovalRequest,
    CommandBeforeInput,
    CommandBeforeOutput,
    CompactInput,
    CompactOutput,
    LLMAfterInput,
    LLMAfterOutput,
    LLMBeforeInput,
    LLMRequest,
    LLMResponse,
    MessageBeforeInput,
    MessageBeforeOutput,
    ParamsBeforeInput,
    ParamsBeforeOutput,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolCall,
    ToolResult,
)
from .pipeline.pipeline import Pipeline
from .pipeline.redaction import Redactor
from .pipeline.registry import Interceptor, Middleware, Registry
from .pipeline.tools import KNOWN_TOOL_NAMES, TOOL_ALIASES, TOOL_GROUPS, normalize_tool_name
from .pipeline.turn import Turn


def _pipeline_from_config(path: str | _os.PathLike[str]) -> Pipeline:
    """``Pipeline.from_config``: the config layer, above the pipeline, builds it."""
    from .config import pipeline_from_file

    return pipeline_from_file(path)


# the pipeline layer imports nothing above it: the builtins and the config builder
# are plugged in here, so Pipeline() registers the guards and from_config works
_defaults.install(builtins=_register_builtins, from_config=_pipeline_from_config)

# ``interpose.external`` (the out-of-process hooks) is reached through the names above
# and its own import path; the package attribute its import leaves here is removed, so
# that this namespace holds only ``__all__`` and the subsystems (tests/test_public_api.py)
del external  # type: ignore[name-defined]  # noqa: F821

__all__ = [
    "AbortTurn",
    "Approval",
    "ApprovalRequest",
    "CommandBeforeInput",
    "CommandBeforeOutput",
    "CommandContext",
    "CommandHook",
    "CommandHookError",
    "CompactContext",
    "CompactInput",
    "CompactOutput",
    "ConfigError",
    "Event",
    "HOOKS",
    "HardAbort",
    "InMemoryBus",
    "Interceptor",
    "InterposeError",
    "KNOWN_TOOL_NAMES",
    "LLMAfterInput",
    "LLMAfterOutput",
    "LLMBeforeInput",
    "LLMContext",
    "LLMRequest",
    "LLMResponse",
    "MessageBeforeInput",
    "MessageBeforeOutput",
    "MessageContext",
    "Middleware",
    "MiddlewareError",
    "ParamsBeforeInput",
    "ParamsBeforeOutput",
    "ParamsContext",
    "Pipeline",
    "ProcessHook",
    "ProcessHookError",
    "ProcessHookStats",
    "ProcessHookTimeout",
    "Redactor",
    "RegistrationError",
    "Registry",
    "STAGES",
    "Subscription",
    "SubscriptionStats",
    "TOOL_ALIASES",
    "TOOL_GROUPS",
    "ToolAfterInput",
    "ToolAfterOutput",
    "ToolBeforeInput",
    "ToolBeforeOutput",
    "ToolCall",
    "ToolContext",
    "ToolResult",
    "Turn",
    "TurnContext",
    "get_global_interceptor_registry",
    "initialize_global_interceptors",
    "normalize_tool_name",
    "reset_global_interceptors",
]
