"""The public surface is pinned: nothing leaks in or out by accident."""

from __future__ import annotations

import importlib

import interpose

PINNED = [
    "AbortTurn",
    "Approval",
    "ApprovalRequest",
    "CommandBeforeInput",
    "CommandBeforeOutput",
    "CommandContext",
    "CompactContext",
    "CompactInput",
    "CompactOutput",
    "ConfigError",
    "Event",
    "HOOKS",
    "HardAbort",
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
    "Redactor",
    "RegistrationError",
    "Registry",
    "STAGES",
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

# The names DESIGN.md "The public API" fixes.
DESIGN_NAMES = {
    "Pipeline",
    "Registry",
    "Interceptor",
    "Turn",
    "ToolResult",
    "Approval",
    "AbortTurn",
    "HardAbort",
    "RegistrationError",
    "KNOWN_TOOL_NAMES",
    "normalize_tool_name",
    "initialize_global_interceptors",
    "get_global_interceptor_registry",
    "reset_global_interceptors",
}


def test_all_is_sorted_and_pinned() -> None:
    assert sorted(interpose.__all__) == interpose.__all__
    assert interpose.__all__ == PINNED


def test_every_name_imports() -> None:
    module = importlib.import_module("interpose")
    for name in interpose.__all__:
        assert getattr(module, name) is not None, name


def test_design_names_are_public() -> None:
    assert set(interpose.__all__) >= DESIGN_NAMES


def test_no_private_module_leaks() -> None:
    public = {n for n in dir(interpose) if not n.startswith("_")}
    modules = {
        "bus",
        "errors",
        "pipeline",
        "middleware",
        "observers",
        "agent",
        "cli",
        "config",
        "plugins",
    }
    assert public - modules == set(interpose.__all__)


def test_registration_error_is_value_error() -> None:
    assert issubclass(interpose.RegistrationError, ValueError)
    assert issubclass(interpose.AbortTurn, interpose.InterposeError)
    assert issubclass(interpose.HardAbort, interpose.InterposeError)


def test_py_typed_is_shipped() -> None:
    from importlib.resources import files

    assert files("interpose").joinpath("py.typed").is_file()
