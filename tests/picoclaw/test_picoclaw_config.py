"""PicoClaw's config keys: transport, dir, trusted, hooks.builtins.<name>.config, its
event names in observe, its builtins interpose does not have, its priority order."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import Interceptor, Pipeline, ProcessHook
from interpose.cli import main
from interpose.config import ConfigFileError, describe, load_config

CHILDREN = Path(__file__).parent / "children"
WHERE = str(CHILDREN / "where.py")


def write(tmp_path: Path, data: dict[str, Any], name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def process(**table: Any) -> dict[str, Any]:
    return {
        "enabled": True,
        "transport": "stdio",
        "command": [sys.executable, WHERE],
        "intercept": ["before_tool"],
        **table,
    }


def picoclaw(processes: dict[str, Any], **hooks: Any) -> dict[str, Any]:
    return {"hooks": {"enabled": True, "processes": processes, **hooks}}


def error_of(path: Path) -> tuple[str, str]:
    with pytest.raises(ConfigFileError) as caught:
        load_config(path)
    return caught.value.field, caught.value.problem


def test_a_transport_other_than_stdio_is_an_error_naming_the_field(tmp_path: Path) -> None:
    path = write(tmp_path, picoclaw({"gate": process(transport="tcp")}))
    assert error_of(path) == (
        "hooks.processes.gate.transport",
        "expected one of 'stdio', got 'tcp'",
    )


async def test_dir_is_the_working_directory_of_the_child(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    pipe = Pipeline.from_config(write(tmp_path, picoclaw({"gate": process(dir="work")})))
    [hook] = [s for s in pipe._services if isinstance(s, ProcessHook)]
    with anyio.fail_after(10):
        async with pipe:
            await hook.wait_ready()
            result = await pipe.call_tool("read", {"path": "x"}, call=lambda args: "read")
    assert result.status == "ok"
    assert hook.child_name == str(tmp_path / "work")


def test_dir_and_cwd_together_are_an_error(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    path = write(tmp_path, picoclaw({"gate": process(dir="work", cwd="work")}))
    assert error_of(path) == (
        "hooks.processes.gate.dir",
        "give dir (PicoClaw's name) or cwd, not both",
    )


def test_a_missing_dir_is_an_error_naming_it(tmp_path: Path) -> None:
    path = write(tmp_path, picoclaw({"gate": process(dir="nowhere")}))
    assert error_of(path) == (
        "hooks.processes.gate.dir",
        f"{tmp_path / 'nowhere'} is not a directory",
    )


async def test_a_builtins_config_is_passed_to_it(tmp_path: Path) -> None:
    data = picoclaw(
        {},
        builtins={
            "command-safety-guard": {
                "enabled": True,
                "priority": 10,
                "config": {"deny": [r"^terraform destroy\b"]},
            }
        },
    )
    pipe = Pipeline.from_config(write(tmp_path, data))
    ran: list[dict[str, Any]] = []
    destroy = await pipe.call_tool(
        "exec", {"command": "terraform destroy -auto-approve"}, call=ran.append
    )
    plan = await pipe.call_tool("exec", {"command": "terraform plan"}, call=ran.append)
    assert destroy.status == "blocked"
    assert "terraform destroy" in destroy.output["reason"]
    assert plan.status == "ok"
    assert ran == [{"command": "terraform plan"}]


@pytest.mark.parametrize(
    ("table", "field", "problem"),
    [
        (
            {"enabled": True, "deny": ["a"], "config": {"deny": ["b"]}},
            "hooks.builtins.command-safety-guard.config.deny",
            "also given as hooks.builtins.command-safety-guard.deny: give it once",
        ),
        (
            {"enabled": True, "config": {"deny": "rm"}},
            "hooks.builtins.command-safety-guard.config.deny",
            "expected array, got str",
        ),
        (
            {"enabled": True, "config": {"colour": "red"}},
            "hooks.builtins.command-safety-guard.config.colour",
            "unknown field; expected one of: enabled, mode, priority, deny, allow, decisions",
        ),
    ],
    ids=["twice", "wrong-type", "unknown-key"],
)
def test_a_bad_builtin_config_names_its_field(
    tmp_path: Path, table: dict[str, Any], field: str, problem: str
) -> None:
    path = write(tmp_path, picoclaw({}, builtins={"command-safety-guard": table}))
    assert error_of(path) == (field, problem)


def test_an_enabled_picoclaw_builtin_interpose_lacks_is_an_error(tmp_path: Path) -> None:
    data = picoclaw(
        {"gate": process()},
        builtins={
            "example_logger": {"enabled": True, "priority": 10, "config": {"log_events": True}}
        },
    )
    field, problem = error_of(write(tmp_path, data))
    assert field == "hooks.builtins.example_logger"
    assert problem.startswith("not an interpose builtin (a PicoClaw builtin is Go code")
    assert "interpose's builtins: command-safety-guard, security-audit, tool-filter" in problem


def test_a_disabled_one_is_left_out_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    data = picoclaw({"gate": process()}, builtins={"example_logger": {"config": {}}})
    path = write(tmp_path, data)
    assert main(["check", str(path)]) == 0
    note = "hooks.builtins.example_logger: not an interpose builtin; left out (it is not enabled)"
    assert f"notes:\n  {note}\n" in capsys.readouterr().out
    with caplog.at_level(logging.WARNING, logger="interpose.config"):
        Pipeline.from_config(path)
    assert [r.getMessage() for r in caplog.records] == [f"{path}: {note}"]


def test_outside_a_picoclaw_file_a_misspelt_builtin_stays_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, {"hooks": {"builtins": {"comand-safety-guard": {"enabled": False}}}})
    field, problem = error_of(path)
    assert (field, problem.split(";")[0]) == ("hooks.builtins.comand-safety-guard", "unknown field")


def test_picoclaws_event_names_are_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    observe = ["agent.tool.exec_start", "turn_end", "tool_exec_skipped", "agent.llm.delta"]
    path = write(tmp_path, picoclaw({"gate": process(observe=observe)}))
    built = describe(load_config(path), base_dir=tmp_path, source=str(path))
    [sub] = built.pipeline.bus.subscriptions
    assert sub.kinds == frozenset({"tool_exec_start", "turn_ended", "tool_exec_skipped"})
    assert built.notes == [
        "hooks.processes.gate.observe[3]: PicoClaw's 'agent.llm.delta' has no interpose "
        "counterpart: it is never sent"
    ]
    [hook] = [s for s in built.pipeline._services if isinstance(s, ProcessHook)]
    assert hook.event_method == "hook.runtime_event"  # its names are PicoClaw's runtime ones


def test_an_unknown_event_name_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, picoclaw({"gate": process(observe=["tool_exec_start", "tool.ran"])}))
    field, problem = error_of(path)
    assert field == "hooks.processes.gate.observe[1]"
    assert "unknown event kind 'tool.ran'" in problem


def test_picoclaw_order_builtins_first_then_lower_priority_then_name(tmp_path: Path) -> None:
    data = picoclaw(
        {
            "zeta": process(priority=5),
            "alpha": process(priority=5),
            "early": process(priority=-3),
            "late": process(priority=50),
        },
        builtins={"security-audit": {"enabled": True, "priority": 200}},
    )
    built = describe(load_config(write(tmp_path, data)), base_dir=tmp_path)
    order = [reg.id for reg in built.pipeline.registry.get("tool.before", tool="read")]
    # in-process builtins before every process hook, whatever the numbers
    assert order == [
        "builtin:security-audit",
        "process:early:before_tool",
        "process:alpha:before_tool",
        "process:zeta:before_tool",
        "process:late:before_tool",
    ]
    assert built.order == [
        "1. builtin command-safety-guard: picoclaw priority -100 (unset: minus its default)"
        " -> priority 1000",
        "2. builtin security-audit: picoclaw priority 200 -> priority 999",
        "3. process early: picoclaw priority -3 -> priority 998",
        "4. process alpha: picoclaw priority 5 -> priority 997",
        "5. process zeta: picoclaw priority 5 -> priority 996",
        "6. process late: picoclaw priority 50 -> priority 995",
    ]


def test_the_order_can_be_set_to_interposes(tmp_path: Path) -> None:
    data = picoclaw(
        {"low": process(priority=1), "high": process(priority=9)}, priority_order="interpose"
    )
    built = describe(load_config(write(tmp_path, data)), base_dir=tmp_path)
    order = [reg.id for reg in built.pipeline.registry.get("tool.before", tool="web_fetch")]
    assert order == ["process:high:before_tool", "process:low:before_tool"]
    assert (built.priority_order, built.order) == ("interpose", [])


def test_an_interpose_file_keeps_interposes_order(tmp_path: Path) -> None:
    data = {"hooks": {"processes": {"low": process(priority=1), "high": process(priority=9)}}}
    del data["hooks"]["processes"]["low"]["transport"]
    del data["hooks"]["processes"]["high"]["transport"]
    built = describe(load_config(write(tmp_path, data)), base_dir=tmp_path)
    assert built.priority_order == "interpose"
    order = [reg.id for reg in built.pipeline.registry.get("tool.before", tool="exec")]
    assert order == [
        "builtin:command-safety-guard",
        "process:high:before_tool",
        "process:low:before_tool",
    ]


def test_a_whole_picoclaw_config_keeps_only_its_hooks(tmp_path: Path) -> None:
    data = {
        "agents": {"defaults": {"model": "gpt-4o"}},
        "channels": {"telegram": {"enabled": False}},
        **picoclaw({"gate": process()}),
    }
    built = describe(load_config(write(tmp_path, data)), base_dir=tmp_path)
    assert built.notes == [
        "PicoClaw settings interpose has no use for were left out: agents, channels"
    ]
    # in a file of interpose's own, such a key is a mistake
    plain = write(tmp_path, {"agents": {}, "hooks": {}}, "plain.json")
    field, problem = error_of(plain)
    assert field == "agents"
    assert problem.startswith("unknown field; expected one of: hooks, ")


def test_defaults_and_trusted(tmp_path: Path) -> None:
    data = picoclaw(
        {"gate": process(trusted=True, intercept=["before_tool", "approve_tool"])},
        defaults={
            "observer_timeout_ms": 250,
            "interceptor_timeout_ms": 2000,
            "approval_timeout_ms": 30000,
        },
    )
    pipe = describe(load_config(write(tmp_path, data)), base_dir=tmp_path).pipeline
    assert (pipe.observer_timeout, pipe.interceptor_timeout, pipe.approval_timeout) == (
        0.25,
        2.0,
        30.0,
    )
    [before] = pipe.registry.get("tool.before", tool="exec")[1:]  # after the guard
    [approve] = pipe.registry.get("tool.approve", tool="exec")[1:]  # after the guard's
    assert isinstance(before, Interceptor)
    assert isinstance(approve, Interceptor)
    assert (before.trusted, approve.trusted) == (True, False)
    assert approve.timeout == 2.0  # the hook's timeout: interceptor_timeout_ms


@pytest.mark.parametrize(
    ("hooks_enabled", "gate_enabled", "why"),
    [(None, True, "hooks"), (True, None, "it"), (False, True, "hooks")],
    ids=["hooks-unset", "hook-unset", "hooks-off"],
)
def test_a_process_hook_picoclaw_would_not_start_is_not_started(
    tmp_path: Path, hooks_enabled: bool | None, gate_enabled: bool | None, why: str
) -> None:
    gate = process()
    del gate["enabled"]
    if gate_enabled is not None:
        gate["enabled"] = gate_enabled
    hooks: dict[str, Any] = {"processes": {"gate": gate}}
    if hooks_enabled is not None:
        hooks["enabled"] = hooks_enabled
    built = describe(load_config(write(tmp_path, {"hooks": hooks})), base_dir=tmp_path)
    assert built.processes == {}
    if hooks_enabled is False:
        assert built.pipeline.registry.list() == []  # hooks.enabled = false: nothing at all
    else:  # interpose's guards are not PicoClaw's to switch off
        assert [r.id for r in built.pipeline.registry.list()] == [
            "builtin:command-safety-guard",
            "builtin:security-audit",
            "builtin:command-safety-guard.ask",
        ]
    assert built.notes == [
        "hooks.processes.gate: not started: PicoClaw starts a process hook only when it "
        f'and hooks say "enabled": true ({why} does not)'
    ]


def test_a_zero_timeout_means_the_default_as_in_picoclaw(tmp_path: Path) -> None:
    defaults = {"observer_timeout_ms": 0, "interceptor_timeout_ms": 0, "approval_timeout_ms": 0}
    data = picoclaw({"gate": process()}, defaults=defaults)
    pipe = describe(load_config(write(tmp_path, data)), base_dir=tmp_path).pipeline
    assert (pipe.observer_timeout, pipe.interceptor_timeout, pipe.approval_timeout) == (
        0.5,
        5.0,
        60.0,
    )
    # in interpose's own files, 0 stays out of range
    plain = write(tmp_path, {"hooks": {"defaults": {"observer_timeout_ms": 0}}}, "plain.json")
    assert error_of(plain) == ("hooks.defaults.observer_timeout_ms", "expected int >= 1, got 0")
