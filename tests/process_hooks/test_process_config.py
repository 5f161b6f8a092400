"""What ProcessHook accepts, what it registers, and the errors a config gets: no child
process is started here."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import ConfigError, Pipeline, RegistrationError
from interpose.middleware.process import ProcessHook

PY = sys.executable
CHILD = str(Path(__file__).parent / "children" / "gate.py")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": "review gate"}, "process hook name must be letters, digits"),
        ({"command": []}, "process hook 'g': command is empty"),
        (
            {"command": "python3 hook.py"},
            "process hook 'g': command must be a list of arguments (the program first), "
            "not the string 'python3 hook.py'",
        ),
        (
            {"command": ["no-such-program-4f1c"]},
            "process hook 'g': command 'no-such-program-4f1c' not found on PATH",
        ),
        (
            {"command": ["./hooks/missing.py"]},
            "process hook 'g': command './hooks/missing.py' not found",
        ),
        (
            {"intercept": ["before_tools"]},
            "process hook 'g': intercept: unknown hook point 'before_tools'; expected one of "
            "before_tool, after_tool, approve_tool, before_llm, after_llm",
        ),
        ({"intercept": "before_tool"}, "process hook 'g': intercept must be a list of names"),
        (
            {"observe": ["tool_exec_begin"]},
            "process hook 'g': observe: unknown event kind 'tool_exec_begin'; expected one of",
        ),
        (
            {"intercept": [], "observe": []},
            "process hook 'g': it neither intercepts nor observes anything",
        ),
        ({"timeout": 0}, "process hook 'g': timeout must be a positive number of seconds"),
        (
            {"handshake_timeout": -1.0},
            "process hook 'g': handshake_timeout must be a positive number of seconds",
        ),
        ({"timeout": float("inf")}, "process hook 'g': timeout must be a positive number"),
        ({"on_error": "ignore"}, "process hook 'g': on_error must be 'block', 'skip' or 'raise'"),
        ({"max_line": 10}, "process hook 'g': max_line must be an int of at least 64 bytes"),
        (
            {"restart_backoff": (5.0, 1.0)},
            "process hook 'g': restart_backoff: first delay 5.0 exceeds longest",
        ),
        (
            {"restart_backoff": 1.0},
            "process hook 'g': restart_backoff must be (first, longest) seconds",
        ),
        ({"env": {"TOKEN": 1}}, "process hook 'g': env must map str to str"),
        ({"priority": "high"}, "process hook 'g': priority must be an int"),
    ],
    ids=lambda value: value if isinstance(value, str) else None,
)
def test_invalid_settings_are_refused_with_a_message_naming_them(
    kwargs: dict[str, Any], message: str
) -> None:
    settings: dict[str, Any] = {"name": "g", "command": [PY, CHILD], **kwargs}
    with pytest.raises(ConfigError) as caught:
        ProcessHook(settings.pop("name"), settings.pop("command"), **settings)
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, ValueError)


def test_a_relative_command_is_found_from_cwd(tmp_path: Path) -> None:
    script = tmp_path / "hooks" / "gate.py"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    hook = ProcessHook("g", ["hooks/gate.py"], cwd=str(tmp_path))
    assert hook.command == ("hooks/gate.py",)
    script.chmod(0o644)
    with pytest.raises(ConfigError, match=r"command 'hooks/gate\.py' is not executable"):
        ProcessHook("g", ["hooks/gate.py"], cwd=str(tmp_path))


def test_interceptors_cover_the_intercepted_points_with_the_hooks_settings() -> None:
    hook = ProcessHook(
        "gate",
        [PY, CHILD],
        intercept=["before_tool", "approve_tool", "after_tool", "before_llm", "after_llm"],
        tools="group:runtime",
        agents="^coder$",
        priority=50,
        timeout=2.0,
    )
    regs = hook.interceptors()
    assert [(r.id, r.hook) for r in regs] == [
        ("process:gate:before_tool", "tool.before"),
        ("process:gate:approve_tool", "tool.approve"),
        ("process:gate:after_tool", "tool.after"),
        ("process:gate:before_llm", "llm.before"),
        ("process:gate:after_llm", "llm.after"),
    ]
    assert {r.source for r in regs} == {"process:gate"}
    assert {(r.priority, r.agent_matcher) for r in regs} == {(50, "^coder$")}
    assert [r.tool_matcher for r in regs] == ["group:runtime"] * 3 + [None] * 2
    # the llm points cannot block: "block" fails closed by raising there
    assert [r.on_error for r in regs] == ["block"] * 3 + ["raise"] * 2
    # the hook bounds its own waits (2 s), so the pipeline puts no cancel scope around
    # its calls, except on approvals, where the pipeline's late-approver rule (deny)
    # applies
    inf = math.inf
    assert [r.timeout for r in regs] == [inf, 2.0, inf, inf, inf]


def test_install_registers_in_priority_order_among_other_interceptors() -> None:
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", priority=100, id="security")
    def security(inp: Any, out: Any) -> None:
        pass

    @pipe.intercept("tool.before", priority=0, id="audit")
    def audit(inp: Any, out: Any) -> None:
        pass

    ProcessHook("gate", [PY, CHILD], priority=50).install(pipe)
    order = [r.id for r in pipe.registry.get("tool.before", tool="exec")]
    assert order == ["security", "process:gate:before_tool", "audit"]


def test_a_rejected_install_leaves_the_pipeline_as_it_was() -> None:
    pipe = Pipeline(builtins=False)
    hook = ProcessHook("gate", [PY, CHILD], intercept=["after_tool", "before_tool"], tools="^nope$")
    with pytest.raises(RegistrationError, match="matches no known or registered tool"):
        hook.install(pipe)
    assert len(pipe.registry) == 0
    ProcessHook("gate", [PY, CHILD]).install(pipe)
    with pytest.raises(RegistrationError, match="duplicate id"):
        ProcessHook("gate", [PY, CHILD], intercept=["after_tool", "before_tool"]).install(pipe)
    assert [r.id for r in pipe.registry.list()] == ["process:gate:before_tool"]


async def test_installing_into_an_entered_pipeline_is_refused() -> None:
    pipe = Pipeline(builtins=False)
    with anyio.fail_after(5):
        async with pipe:
            with pytest.raises(RuntimeError, match="add services before entering the pipeline"):
                ProcessHook("gate", [PY, CHILD]).install(pipe)
    assert len(pipe.registry) == 0
