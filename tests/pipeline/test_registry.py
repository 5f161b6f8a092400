"""The registry validates registrations up front and keeps them in execution order."""

from __future__ import annotations

import re
from typing import Any

import pytest

from interpose import (
    HOOKS,
    STAGES,
    ApprovalRequest,
    Interceptor,
    Middleware,
    Pipeline,
    RegistrationError,
    Registry,
    ToolBeforeInput,
    ToolBeforeOutput,
)


def noop(inp: Any, out: Any) -> None:
    """A handler that does nothing (two arguments, fits every two-argument hook)."""


async def passthrough(ctx: Any, call_next: Any) -> None:
    """A middleware that only calls the next layer."""
    await call_next()


def snapshot(registry: Registry) -> list[tuple[str, int]]:
    """What a user can observe of a registry: ids and priorities in execution order."""
    return [(r.id, r.priority) for r in registry.list()]


# -- add / remove / get / list / clear ------------------------------------------------


def test_add_get_list_remove_clear() -> None:
    registry = Registry()
    a = Interceptor(id="a", hook="tool.before", handler=noop)
    m = Middleware(id="m", stage="tool", handler=passthrough)
    assert registry.add(a) is a
    registry.add(m)

    assert registry.list() == [a, m]
    assert registry.get("tool.before") == [a]
    assert registry.get("tool") == [m]
    assert len(registry) == 2
    assert "a" in registry

    assert registry.remove("a") is a
    assert registry.list() == [m]
    assert registry.get("tool.before") == []

    registry.clear()
    assert registry.list() == []
    assert len(registry) == 0


def test_remove_unknown_id_raises_key_error() -> None:
    registry = Registry()
    with pytest.raises(KeyError, match="nope"):
        registry.remove("nope")


def test_registration_error_is_a_value_error() -> None:
    assert issubclass(RegistrationError, ValueError)


def test_duplicate_explicit_id_is_rejected_and_registry_unchanged() -> None:
    registry = Registry()
    first = Interceptor(id="gate", hook="tool.before", handler=noop, priority=5)
    registry.add(first)
    before = snapshot(registry)

    with pytest.raises(RegistrationError, match="gate"):
        registry.add(Interceptor(id="gate", hook="tool.after", handler=noop, priority=50))

    assert snapshot(registry) == before
    assert registry.get("tool.before") == [first]
    assert registry.get("tool.after") == []


def test_duplicate_id_through_the_decorator_is_rejected(pipe: Pipeline) -> None:
    pipe.intercept("tool.before", id="same")(noop)
    with pytest.raises(RegistrationError, match="same"):
        pipe.intercept("tool.after", id="same")(noop)
    assert [r.id for r in pipe.registry.list()] == ["same"]


def test_unknown_hook_names_the_valid_hooks() -> None:
    registry = Registry()
    with pytest.raises(RegistrationError) as info:
        registry.add(Interceptor(id="x", hook="tool.bfore", handler=noop))
    message = str(info.value)
    assert "tool.bfore" in message
    for hook in HOOKS:
        assert hook in message
    assert registry.list() == []


def test_unknown_hook_in_the_decorator_names_the_valid_hooks(pipe: Pipeline) -> None:
    with pytest.raises(RegistrationError) as info:
        pipe.intercept("tool.during")
    for hook in HOOKS:
        assert hook in str(info.value)


def test_unknown_stage_names_the_valid_stages(pipe: Pipeline) -> None:
    with pytest.raises(RegistrationError) as info:
        pipe.registry.add(Middleware(id="m", stage="tools", handler=passthrough))
    for stage in STAGES:
        assert stage in str(info.value)
    with pytest.raises(RegistrationError) as info:
        pipe.middleware("network")
    for stage in STAGES:
        assert stage in str(info.value)
    assert pipe.registry.list() == []


def test_invalid_regex_is_rejected() -> None:
    registry = Registry()
    with pytest.raises(RegistrationError, match="regex"):
        registry.add(Interceptor(id="x", hook="tool.before", handler=noop, tool_matcher="(exec"))
    with pytest.raises(RegistrationError, match="regex"):
        registry.add(Interceptor(id="y", hook="tool.before", handler=noop, agent_matcher="[a-"))
    assert registry.list() == []


@pytest.mark.parametrize("matcher", [r"^ls$", "group:nope", ["exec", "frobnicate"]])
def test_tool_matcher_matching_no_known_tool_lists_valid_names(matcher: Any) -> None:
    registry = Registry()
    with pytest.raises(RegistrationError) as info:
        registry.add(Interceptor(id="x", hook="tool.before", handler=noop, tool_matcher=matcher))
    message = str(info.value)
    # the message tells the user what they could have written
    assert "group:fs" in message
    if matcher != "group:nope":
        assert "exec" in message
        assert "web_fetch" in message
    assert registry.list() == []


def test_register_tool_extends_the_known_set(pipe: Pipeline) -> None:
    with pytest.raises(RegistrationError, match="deploy"):
        pipe.intercept("tool.before", tools=r"^deploy$", id="gate")(noop)

    assert pipe.register_tool("Deploy") == "deploy"
    pipe.intercept("tool.before", tools=r"^deploy$", id="gate")(noop)
    pipe.intercept("tool.after", tools=["deploy"], id="after")(noop)

    assert [r.id for r in pipe.registry.get("tool.before", tool="deploy")] == ["gate"]
    assert pipe.registry.get("tool.before", tool="exec") == []


def test_tool_matcher_on_a_non_tool_hook_is_rejected() -> None:
    registry = Registry()
    with pytest.raises(RegistrationError, match=r"message\.before"):
        registry.add(
            Interceptor(id="x", hook="message.before", handler=noop, tool_matcher=r"^exec$")
        )
    with pytest.raises(RegistrationError, match="tool"):
        registry.add(Middleware(id="m", stage="llm", handler=passthrough, tool_matcher="exec"))
    assert registry.list() == []


def test_handler_with_wrong_arity_is_rejected(pipe: Pipeline) -> None:
    def one_arg(x: Any) -> None: ...

    def two_args(x: Any, y: Any) -> None: ...

    with pytest.raises(RegistrationError) as info:
        pipe.intercept("tool.before", id="one")(one_arg)
    assert "one_arg" in str(info.value)
    assert "handler(input, output)" in str(info.value)

    with pytest.raises(RegistrationError) as info:
        pipe.approver(id="approver")(two_args)
    assert "two_args" in str(info.value)
    assert "handler(request)" in str(info.value)

    assert pipe.registry.list() == []


def test_handler_with_defaults_or_varargs_is_accepted(pipe: Pipeline) -> None:
    def with_default(inp: Any, out: Any, extra: int = 1) -> None: ...

    def var(*args: Any) -> None: ...

    pipe.intercept("tool.before", id="d")(with_default)
    pipe.intercept("tool.after", id="v")(var)
    pipe.approver(id="a")(var)
    assert len(pipe.registry) == 3


def test_middleware_must_be_async(pipe: Pipeline) -> None:
    def sync_mw(ctx: Any, call_next: Any) -> None: ...

    with pytest.raises(RegistrationError, match="async"):
        pipe.middleware("tool")(sync_mw)
    assert pipe.registry.list() == []


def test_non_callable_handler_is_rejected() -> None:
    registry = Registry()
    with pytest.raises(RegistrationError, match="callable"):
        registry.add(Interceptor(id="x", hook="tool.before", handler=42))  # type: ignore[arg-type]


def test_on_error_block_on_a_hook_that_cannot_block_is_rejected(pipe: Pipeline) -> None:
    with pytest.raises(RegistrationError, match=r"message\.before"):
        pipe.intercept("message.before", on_error="block", id="m")(noop)
    with pytest.raises(RegistrationError, match="block"):
        pipe.registry.add(Interceptor(id="p", hook="params.before", handler=noop, on_error="block"))
    # the same policy is fine where the operation can be refused
    pipe.intercept("tool.before", on_error="block", id="t")(noop)
    assert [r.id for r in pipe.registry.list()] == ["t"]


def test_invalid_on_error_value_is_rejected(pipe: Pipeline) -> None:
    policy: Any = "ignore"
    with pytest.raises(RegistrationError, match="on_error"):
        pipe.registry.add(Interceptor(id="x", hook="tool.before", handler=noop, on_error=policy))


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_non_positive_timeout_is_rejected(pipe: Pipeline, timeout: float) -> None:
    with pytest.raises(RegistrationError, match="timeout"):
        pipe.intercept("tool.before", timeout=timeout, id="x")(noop)


# -- derived ids ------------------------------------------------------------------------


def test_derived_ids_are_the_qualname_then_numbered(pipe: Pipeline) -> None:
    def guard(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None: ...

    pipe.intercept("tool.before")(guard)
    pipe.intercept("tool.before")(guard)
    pipe.intercept("tool.after")(guard)

    base = guard.__qualname__
    assert base.endswith("guard")
    assert [r.id for r in pipe.registry.list()] == [base, f"{base}#2", f"{base}#3"]


def test_derived_ids_for_approvers_and_middleware(pipe: Pipeline) -> None:
    @pipe.approver
    def gate(req: ApprovalRequest) -> None: ...

    @pipe.middleware("tool")
    async def timing(ctx: Any, call_next: Any) -> None:
        await call_next()

    ids = {r.id for r in pipe.registry.list()}
    assert ids == {gate.__qualname__, timing.__qualname__}


def test_explicit_id_is_kept(pipe: Pipeline) -> None:
    pipe.intercept("tool.before", id="no-rm")(noop)
    assert pipe.registry.list()[0].id == "no-rm"


# -- get() ----------------------------------------------------------------------------


def test_get_filters_by_tool_and_agent_in_execution_order(pipe: Pipeline) -> None:
    reg = pipe.registry
    reg.add(Interceptor(id="all-low", hook="tool.before", handler=noop, priority=-5))
    reg.add(Interceptor(id="exec", hook="tool.before", handler=noop, tool_matcher=r"^exec$"))
    reg.add(
        Interceptor(
            id="fs-high", hook="tool.before", handler=noop, tool_matcher="group:fs", priority=50
        )
    )
    reg.add(
        Interceptor(
            id="coder-only",
            hook="tool.before",
            handler=noop,
            agent_matcher=re.compile(r"^coder"),
            priority=10,
        )
    )

    assert [r.id for r in reg.get("tool.before")] == ["fs-high", "coder-only", "exec", "all-low"]
    assert [r.id for r in reg.get("tool.before", tool="read")] == [
        "fs-high",
        "coder-only",
        "all-low",
    ]
    assert [r.id for r in reg.get("tool.before", tool="Bash", agent="reviewer")] == [
        "exec",
        "all-low",
    ]
    assert [r.id for r in reg.get("tool.before", tool="exec", agent="coder-2")] == [
        "coder-only",
        "exec",
        "all-low",
    ]
    assert reg.get("tool.after", tool="exec") == []


def test_get_on_an_unknown_hook_raises(pipe: Pipeline) -> None:
    with pytest.raises(RegistrationError, match="unknown hook"):
        pipe.registry.get("tool.whenever")


def test_failed_add_does_not_bump_order_or_state(pipe: Pipeline) -> None:
    pipe.intercept("tool.before", id="a")(noop)
    with pytest.raises(RegistrationError):
        pipe.intercept("tool.before", tools=r"^nothing-like-this$", id="b")(noop)
    pipe.intercept("tool.before", id="b")(noop)
    assert [r.id for r in pipe.registry.get("tool.before")] == ["a", "b"]
