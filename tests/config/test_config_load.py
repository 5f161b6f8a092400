"""Valid config files: what they decode to, the stack they build, and that the stack does
what the file says (command hooks, policies, guards and observers run for real; process
hooks are only built here -- run-hook-test in test_config_cli.py starts one)."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest

from interpose import Pipeline, ToolResult
from interpose.config import (
    CommandHookConfig,
    Config,
    HooksConfig,
    build_pipeline,
    describe,
    load_config,
)

FILES = Path(__file__).parent / "files"
FULL = FILES / "full.toml"


def echo(args: dict[str, Any]) -> str:
    return f"ran {args}"


def ids(pipe: Pipeline, hook: str, tool: str | None = None) -> list[str]:
    return [reg.id for reg in pipe.registry.get(hook, tool=tool)]


def write_config(directory: Path, text: str, name: str = "interpose.toml") -> Path:
    path = directory / name
    path.write_text(text)
    return path


# -- the full example of DESIGN.md --------------------------------------------------------


def test_the_design_example_loads_with_every_value() -> None:
    config = load_config(FULL)
    hooks = config.hooks
    assert hooks.enabled is True
    defaults = hooks.defaults
    assert (
        defaults.observer_timeout_ms,
        defaults.interceptor_timeout_ms,
        defaults.approval_timeout_ms,
    ) == (500, 5000, 60000)
    guard = hooks.builtins.command_safety_guard
    assert (guard.enabled, guard.priority) == (True, 100)
    gate = hooks.processes["review_gate"]
    assert gate.command == ["python3", "hooks/review_gate.py"]
    assert gate.priority == 50
    assert gate.observe == ["tool_exec_start", "tool_exec_end"]
    assert gate.intercept == ["before_tool", "approve_tool"]
    assert gate.on_error == "block"
    (command,) = hooks.commands
    assert command.event == "tool.before"
    assert command.command == "hooks/check.sh"
    assert command.timeout_ms == 10000
    assert command.filter.tool.allow == ["exec", "group:fs"]
    assert command.filter.tool.deny == ["web_fetch"]


def test_the_same_example_as_json_decodes_to_the_same_config() -> None:
    assert load_config(FILES / "full.json") == load_config(FULL)


def test_the_design_example_builds_the_stack_in_order() -> None:
    pipe = Pipeline.from_config(FULL)
    assert ids(pipe, "tool.before") == [
        "builtin:command-safety-guard",
        "builtin:security-audit",
        "process:review_gate:before_tool",
        "command:hooks/check.sh",
    ]
    assert ids(pipe, "tool.approve") == [
        "builtin:command-safety-guard.ask",  # the guard's approver: some of its rules ask
        "process:review_gate:approve_tool",
    ]
    # the command hook's filter: exec and group:fs, not web_fetch
    assert "command:hooks/check.sh" in ids(pipe, "tool.before", tool="write")
    assert "command:hooks/check.sh" not in ids(pipe, "tool.before", tool="web_fetch")
    assert (pipe.interceptor_timeout, pipe.approval_timeout, pipe.observer_timeout) == (
        5.0,
        60.0,
        0.5,
    )
    command = pipe.registry["command:hooks/check.sh"]
    assert command.timeout == 10.0
    assert command.source == "command"
    gate = pipe.registry["process:review_gate:before_tool"]
    assert (gate.priority, gate.on_error, gate.source) == (50, "block", "process:review_gate")
    (observer,) = pipe.bus.subscriptions
    assert observer.name == "process:review_gate"
    assert observer.kinds == frozenset({"tool_exec_start", "tool_exec_end"})


def test_relative_commands_resolve_against_the_file_not_the_cwd(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(FILES.parent)  # hooks/ is not here but under files/
    pipe = Pipeline.from_config("files/full.toml")
    assert "command:hooks/check.sh" in pipe.registry
    assert "process:review_gate:before_tool" in pipe.registry


# -- command hooks and builtins, run ------------------------------------------------------


async def test_a_command_hook_from_the_file_blocks_and_passes_for_real(tmp_path: Path) -> None:
    shutil.copytree(FILES / "hooks", tmp_path / "hooks")
    path = write_config(
        tmp_path,
        '[[hooks.commands]]\ncommand = "hooks/check.sh"\nfilter.tool.allow = ["exec"]\n',
    )
    pipe = Pipeline.from_config(path)
    pushed = await pipe.call_tool("exec", {"command": "git push"}, call=echo)
    assert pushed.status == "blocked"
    assert pushed.output == {
        "status": "blocked",
        "tool": "exec",
        "reason": "check.sh: pushes go through CI",
    }
    assert pushed.details["decided_by"] == "command:hooks/check.sh"
    listed = await pipe.call_tool("exec", {"command": "git status"}, call=echo)
    assert (listed.status, listed.output) == ("ok", "ran {'command': 'git status'}")


async def test_an_empty_file_gives_the_default_pipeline(tmp_path: Path) -> None:
    pipe = Pipeline.from_config(write_config(tmp_path, ""))
    default = Pipeline()
    assert [r.id for r in pipe.registry.list()] == [r.id for r in default.registry.list()]
    assert pipe.tracing == default.tracing == "tool"
    blocked = await pipe.call_tool("exec", {"command": "rm -rf /"}, call=echo)
    assert blocked.details["decided_by"] == "builtin:command-safety-guard"


def test_hooks_enabled_false_registers_nothing(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        "[hooks]\nenabled = false\n[hooks.builtins.tool-filter]\ndeny = ['exec']\n",
    )
    assert len(Pipeline.from_config(path).registry) == 0


async def test_the_guards_take_priority_and_extra_rules_from_the_file(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
[hooks.builtins.command-safety-guard]
priority = 7
deny = ['^terraform destroy\\b']
[hooks.builtins.security-audit]
enabled = false
""",
    )
    pipe = Pipeline.from_config(path)
    assert [(r.id, r.priority) for r in pipe.registry.list()] == [
        ("builtin:command-safety-guard", 7),
        ("builtin:command-safety-guard.ask", 7),  # its approver: some of its rules ask
    ]
    result = await pipe.call_tool("exec", {"command": "terraform destroy -auto-approve"}, call=echo)
    assert result.status == "blocked"
    assert "extra-deny" in result.output["reason"]
    env = await pipe.call_tool("read", {"path": ".env"}, call=echo)
    assert env.status == "ok"  # security-audit is off


async def test_policy_builtins_are_built_from_their_tables(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
[hooks]
tools = ["deploy"]
[hooks.builtins.tool-filter]
deny = ["group:automation", "^mcp_"]
[hooks.builtins.rate-limit]
rate = 1
per_ms = 60000
tools = ["deploy"]
[hooks.builtins.output-cap]
max_chars = 5
marker = "…"
tools = ["read"]
[hooks.builtins.redact-secrets]
patterns = ['ticket-[0-9]{4}']
""",
    )
    pipe = Pipeline.from_config(path)
    assert ids(pipe, "tool.before", tool="deploy") == ["builtin:tool-filter", "builtin:rate-limit"]
    assert ids(pipe, "tool.after") == ["builtin:redact-secrets", "builtin:output-cap"]

    cron = await pipe.call_tool("cron", {}, call=echo)
    assert cron.output["reason"] == "tool filter: cron is denied by 'group:automation'"
    mcp = await pipe.call_tool("mcp_github_search", {}, call=echo)
    assert mcp.output["reason"] == "tool filter: mcp_github_search is denied by '/^mcp_/'"

    first = await pipe.call_tool("deploy", {}, call=lambda args: "ok")
    second = await pipe.call_tool("deploy", {}, call=lambda args: "ok")
    assert first.status == "ok"
    assert second.output["reason"] == "rate limit for deploy: retry in 60.0s"

    secret = await pipe.call_tool("read", {"path": "a"}, call=lambda args: "ticket-1234")
    assert (secret.output, secret.details["redacted"]) == ("[REDA…", 1)
    assert secret.details["truncated_chars"] == len("[REDACTED]") - 5


async def test_loop_guard_and_result_cache_from_the_file(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
[hooks.builtins.loop-guard]
max_repeats = 2
tools = ["exec"]
[hooks.builtins.result-cache]
ttl_ms = 60000
tools = ["read"]
invalidate_on = []
""",
    )
    pipe = Pipeline.from_config(path)
    assert "builtin:result-cache:invalidate" not in pipe.registry
    runs: list[dict[str, Any]] = []

    def read(args: dict[str, Any]) -> str:
        runs.append(args)
        return "contents"

    async with pipe.turn() as turn:
        again = [await turn.call_tool("exec", {"command": "ls"}, call=echo) for _ in range(2)]
        cached = [await turn.call_tool("read", {"path": "a"}, call=read) for _ in range(2)]
    assert [r.status for r in again] == ["ok", "blocked"]
    assert [r.status for r in cached] == ["ok", "responded"]
    assert len(runs) == 1


# -- observers and tracing ----------------------------------------------------------------


async def test_the_audit_log_records_while_entered_and_closes_on_exit(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        '[observers.audit]\npath = "logs/audit.jsonl"\nevents = ["tool_exec_end"]\n',
    )
    (tmp_path / "logs").mkdir()
    pipe = Pipeline.from_config(path)
    log = tmp_path / "logs" / "audit.jsonl"
    for _ in range(2):  # a second entry reopens the file and appends
        async with pipe:
            await pipe.call_tool("read", {"path": "README.md"}, call=echo)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(e["kind"], e["tool_name"], e["status"]) for e in lines] == [
        ("tool_exec_end", "read", "ok")
    ] * 2


def test_from_config_builds_the_stack_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from interpose.config.building import Builder

    stacks: list[bool] = []
    build = Builder.stack

    def counted(self: Builder) -> Any:
        stacks.append(self.dry)
        return build(self)

    monkeypatch.setattr(Builder, "stack", counted)
    path = write_config(tmp_path, "[hooks.builtins.loop-guard]\nmax_repeats = 3\n")
    pipe = Pipeline.from_config(path)
    assert stacks == [False]  # one real build, no dry check before it
    assert "builtin:loop-guard" in ids(pipe, "tool.before")


def test_a_rejected_config_opens_no_audit_log(tmp_path: Path) -> None:
    from interpose.errors import ConfigError

    path = write_config(
        tmp_path,
        '[observers.audit]\npath = "audit.jsonl"\n[plugins.no-such-plugin-of-interpose]\n',
    )
    with pytest.raises(ConfigError, match=r"plugins\.no-such-plugin-of-interpose"):
        Pipeline.from_config(path)
    assert not (tmp_path / "audit.jsonl").exists()  # checked before anything is opened


async def test_the_logging_observer_logs_what_the_file_selects(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write_config(
        tmp_path,
        '[observers.logging]\nlogger = "ops.events"\nlevel = "DEBUG"\n'
        'events = ["tool_exec_skipped"]\n',
    )
    pipe = Pipeline.from_config(path)
    with caplog.at_level(logging.DEBUG, logger="ops.events"):
        async with pipe:
            await pipe.call_tool("exec", {"command": "rm -rf /"}, call=echo)
            await pipe.call_tool("exec", {"command": "ls"}, call=echo)
    records = [r for r in caplog.records if r.name == "ops.events"]
    assert len(records) == 1
    assert "tool_exec_skipped exec" in records[0].getMessage()
    assert "decided_by=builtin:command-safety-guard" in records[0].getMessage()


def test_metrics_and_otlp_are_described_without_side_effects(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        """
[observers.metrics]
[observers.otlp]
endpoint = "http://127.0.0.1:4318"
service_name = "ops-agent"
[tracing]
level = "interceptor"
content = true
""",
    )
    built = describe(load_config(path), base_dir=tmp_path)
    assert [s.name for s in built.pipeline.bus.subscriptions] == ["metrics"]
    assert built.exporter == ("http://127.0.0.1:4318/v1/traces (OTLP/HTTP, service.name=ops-agent)")
    assert built.trace_content is True
    assert built.pipeline.tracing == "interceptor"


async def test_a_given_tracer_provider_receives_the_spans(tmp_path: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = load_config(write_config(tmp_path, '[observers.otlp]\nendpoint = "http://x:1"\n'))
    pipe = build_pipeline(config, tracing="interceptor", tracer_provider=provider)
    await pipe.call_tool("exec", {"command": "ls"}, call=echo)
    names = [span.name for span in exporter.get_finished_spans()]
    assert names == [
        "tool.before builtin:command-safety-guard",
        "tool.approve builtin:command-safety-guard.ask",
        "execute_tool exec",
    ]
    provider.shutdown()


async def test_an_otlp_export_is_set_up_without_touching_the_global_provider(
    tmp_path: Path,
) -> None:
    from opentelemetry import trace

    before = trace.get_tracer_provider()
    path = write_config(
        tmp_path,
        '[observers.otlp]\nendpoint = "http://127.0.0.1:9"\ntimeout_ms = 100\n'
        '[tracing]\nlevel = "off"\n',
    )
    pipe = Pipeline.from_config(path)
    async with pipe:  # on exit, queued spans are flushed (none here: tracing is off)
        result = await pipe.call_tool("exec", {"command": "ls"}, call=echo)
    assert result.status == "ok"
    assert trace.get_tracer_provider() is before


# -- building from code --------------------------------------------------------------------


async def test_a_config_built_in_code_resolves_against_base_dir() -> None:
    config = Config(
        hooks=HooksConfig(
            commands=[CommandHookConfig(command="hooks/check.sh", id="no-push")],
        )
    )
    pipe = build_pipeline(config, base_dir=FILES)
    result = await pipe.call_tool("exec", {"command": "git push"}, call=echo)
    assert result.details["decided_by"] == "no-push"
    assert isinstance(result, ToolResult)
