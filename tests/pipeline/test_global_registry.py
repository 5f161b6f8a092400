"""The process-wide registry and the built-in guards a default Pipeline carries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from interpose import (
    Interceptor,
    Pipeline,
    Registry,
    get_global_interceptor_registry,
    initialize_global_interceptors,
    reset_global_interceptors,
)

GUARD = "builtin:command-safety-guard"
AUDIT = "builtin:security-audit"


@pytest.fixture(autouse=True)
def fresh_global_registry() -> Iterator[None]:
    """Every test starts and ends without a global registry."""
    reset_global_interceptors()
    yield
    reset_global_interceptors()


def builtin_summary(registry: Registry) -> list[tuple[str, str, int]]:
    regs = [r for r in registry.list() if isinstance(r, Interceptor)]
    return sorted((r.id, r.hook, r.priority) for r in regs)


EXPECTED_BUILTINS = [
    (GUARD, "tool.before", 100),
    (AUDIT, "tool.before", 99),
    (GUARD + ".ask", "tool.approve", 100),  # the guard's approver: some of its rules ask
]


def test_no_global_registry_before_initialization() -> None:
    assert get_global_interceptor_registry() is None


def test_initialize_registers_the_builtins() -> None:
    registry = initialize_global_interceptors()

    assert isinstance(registry, Registry)
    assert get_global_interceptor_registry() is registry
    assert builtin_summary(registry) == sorted(EXPECTED_BUILTINS)
    assert [r.id for r in registry.get("tool.before", tool="exec")] == [GUARD]
    assert [r.id for r in registry.get("tool.before", tool="bash")] == [GUARD]
    for tool in ["read", "write", "edit"]:
        assert [r.id for r in registry.get("tool.before", tool=tool)] == [AUDIT]
    assert registry.get("tool.before", tool="web_fetch") == []


def test_initialize_is_idempotent() -> None:
    first = initialize_global_interceptors()
    first.add(Interceptor(id="mine", hook="tool.after", handler=lambda i, o: None))
    second = initialize_global_interceptors()

    assert second is first
    assert sorted(r.id for r in second.list()) == sorted([GUARD, AUDIT, GUARD + ".ask", "mine"])


def test_reset_forgets_the_global_registry() -> None:
    first = initialize_global_interceptors()
    reset_global_interceptors()
    assert get_global_interceptor_registry() is None

    second = initialize_global_interceptors()
    assert second is not first
    assert builtin_summary(second) == sorted(EXPECTED_BUILTINS)


def test_pipelines_can_share_the_global_registry() -> None:
    shared = initialize_global_interceptors()
    a = Pipeline(registry=shared)
    b = Pipeline(registry=initialize_global_interceptors())

    assert a.registry is shared
    assert b.registry is shared

    a.intercept("tool.after", id="shared-after")(lambda i, o: None)
    assert "shared-after" in [r.id for r in b.registry.list()]
    assert builtin_summary(shared).count((GUARD, "tool.before", 100)) == 1


def test_default_pipeline_has_its_own_registry_with_the_builtins() -> None:
    a = Pipeline()
    b = Pipeline()

    assert a.registry is not b.registry
    assert builtin_summary(a.registry) == sorted(EXPECTED_BUILTINS)
    assert get_global_interceptor_registry() is None  # a fresh registry, not the global one

    a.intercept("tool.after", id="only-a")(lambda i, o: None)
    assert "only-a" not in [r.id for r in b.registry.list()]


def test_pipeline_without_builtins_is_empty() -> None:
    assert Pipeline(builtins=False).registry.list() == []


def test_passing_a_registry_ignores_builtins_flag() -> None:
    registry = Registry()
    assert Pipeline(registry=registry).registry.list() == []


async def test_default_pipeline_blocks_destructive_commands_and_secret_reads() -> None:
    pipe = Pipeline()
    ran: list[dict[str, Any]] = []

    blocked = await pipe.call_tool("bash", {"command": "rm -rf /"}, call=ran.append)
    secret = await pipe.call_tool("read", {"path": "~/.ssh/id_rsa"}, call=ran.append)
    fine = await pipe.call_tool("exec", {"command": "ls -la"}, call=lambda a: "listing")

    assert ran == []
    assert blocked.status == "blocked"
    assert blocked.details["decided_by"] == GUARD
    assert blocked.output["tool"] == "exec"
    assert secret.status == "blocked"
    assert secret.details["decided_by"] == AUDIT
    assert fine.status == "ok"
    assert fine.output == "listing"


async def test_builtins_run_before_user_interceptors_of_lower_priority() -> None:
    pipe = Pipeline()
    seen: list[str] = []
    pipe.intercept("tool.before", tools=["exec"], priority=50, id="user")(
        lambda inp, out: seen.append(out.args["command"])
    )

    result = await pipe.call_tool("exec", {"command": "rm -rf /"}, call=lambda a: None)
    assert result.status == "blocked"
    assert seen == []  # the guard (priority 100) ended the before-phase first
