"""The public surface is pinned: nothing leaks in or out by accident."""

from __future__ import annotations

import importlib
from pathlib import Path

import interpose

PINNED = [
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
        "adapters",
        "approvals",
        "bus",
        "errors",
        "flows",
        "pipeline",
        "middleware",
        "observers",
        "permissions",
        "agent",
        "cli",
        "config",
        "plugins",
        "replay",
        "sandbox",
        "secrets",
    }
    assert public - modules == set(interpose.__all__)


def test_the_fleet_surface() -> None:
    # DESIGN.md: interpose.bus.redis.RedisStreamPublisher / RedisStreamConsumer; the
    # module imports without redis-py (it is imported when a publisher or consumer is made)
    fleet = importlib.import_module("interpose.bus.redis")
    assert fleet.__all__ == [
        "ConsumerStats",
        "PublisherStats",
        "RedisStreamConsumer",
        "RedisStreamPublisher",
        "read_entries",
    ]
    for name in fleet.__all__:
        assert getattr(fleet, name) is not None, name
    cli = importlib.import_module("interpose.bus.fleet_cli")
    assert cli.__all__ == ["add_parsers", "format_row", "run_audit", "run_tail"]


def test_registration_error_is_value_error() -> None:
    assert issubclass(interpose.RegistrationError, ValueError)
    assert issubclass(interpose.AbortTurn, interpose.InterposeError)
    assert issubclass(interpose.HardAbort, interpose.InterposeError)


def test_py_typed_is_shipped() -> None:
    from importlib.resources import files

    assert files("interpose").joinpath("py.typed").is_file()


def _exception_table() -> list[tuple[str, str]]:
    """(dotted name, "also a" column) of each row of docs/errors.md#the-exceptions."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "errors.md").read_text()
    section = text.split("## The exceptions", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 3:
            rows.append((cells[0].strip("`"), cells[1]))
    return rows


def _resolve(dotted: str) -> type:
    module, _, name = dotted.rpartition(".")
    found = getattr(importlib.import_module(module or "interpose"), name)
    assert isinstance(found, type)
    return found


def test_the_errors_page_lists_every_exception_with_its_bases() -> None:
    # importing these defines their subclasses of InterposeError
    for module in ("config", "middleware.process", "middleware.command_hooks", "approvals"):
        importlib.import_module(f"interpose.{module}")
    rows = _exception_table()
    listed = {_resolve(name): also for name, also in rows}
    assert len(listed) == len(rows)
    for cls, also in listed.items():
        assert issubclass(cls, interpose.InterposeError)
        for base in filter(None, (b.strip(" `") for b in also.split(","))):
            assert base in {c.__name__ for c in cls.__mro__[1:]}, (cls, base)

    def public_subclasses(cls: type[BaseException]) -> set[type]:
        found: set[type] = {cls} if not cls.__name__.startswith("_") else set()
        for sub in cls.__subclasses__():
            if sub.__module__.startswith("interpose"):
                found |= public_subclasses(sub)
        return found

    assert public_subclasses(interpose.InterposeError) == set(listed)


def test_the_sandbox_surface_is_pinned() -> None:
    from interpose import sandbox

    assert sandbox.__all__ == [
        "Capabilities",
        "DEFAULT_HIDDEN",
        "ExecTool",
        "Limits",
        "NetworkMode",
        "Plan",
        "Sandbox",
        "SandboxPolicy",
        "SandboxResult",
        "SandboxUnavailable",
        "Violation",
        "probe",
        "resolve",
    ]
    for name in sandbox.__all__:
        assert getattr(sandbox, name) is not None


def test_the_openai_agents_adapter_surface_is_pinned() -> None:
    from interpose.adapters import openai_agents

    assert openai_agents.__all__ == [
        "InterposeModel",
        "InterposeModelProvider",
        "InterposeRunner",
        "interpose_agent",
    ]
    for name in openai_agents.__all__:
        assert getattr(openai_agents, name).__module__ == openai_agents.__name__
