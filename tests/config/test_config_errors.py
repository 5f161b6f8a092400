"""Invalid config files: each error names the file, the exact field and what was expected.

Every file under files/invalid/ is one mistake; the table says where it must be reported
and what the message must say.  Commands in these files point at ../hooks/, the real
scripts of the valid examples, so that only the intended mistake is wrong.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from interpose import ConfigError, Pipeline
from interpose.adapters.mcp.config import McpConfig, McpServerConfig
from interpose.config import (
    AuditConfig,
    BuiltinsConfig,
    CommandHookConfig,
    Config,
    ConfigFileError,
    FlowsConfig,
    HooksConfig,
    LoggingConfig,
    LoopGuardConfig,
    MetricsConfig,
    ObserversConfig,
    OTLPConfig,
    OutputCapConfig,
    ProcessHookConfig,
    RateLimitConfig,
    RedactSecretsConfig,
    RedisConfig,
    ResultCacheConfig,
    SandboxConfig,
    ToolFilterConfig,
    decode_config,
    load_config,
    reference,
)
from interpose.config.mcp import McpAuthConfig
from interpose.config.schema import ApprovalsConfig

FILES = Path(__file__).parent / "files"
INVALID = FILES / "invalid"

# observe takes interpose's kinds and PicoClaw's names of them: the message lists both
EVENT_KINDS_LISTED = (
    "unknown event kind 'tool_exploded'; expected one of approval_decided, approval_expired, "
    "approval_requested, call_recorded, flow_flagged, flow_labeled, grant_added, grant_revoked, "
    "grant_used, hook_message, "
    "interceptor_failed, llm_request, llm_response, message_received, params_resolved, "
    "sandbox_violation, shadow_decision, tool_exec_end, tool_exec_skipped, tool_exec_start, "
    "tool_set_changed, "
    "turn_aborted, turn_ended, "
    "turn_started (or PicoClaw's names of them, "
    "such as 'agent.tool.exec_start', or '*' for every event)"
)

# file -> (field path, a part of the problem that states the expectation)
CASES: dict[str, tuple[str, str]] = {
    "wrong_type.toml": ("hooks.processes.gate.priority", "expected int, got str"),
    "wrong_type.json": ("hooks.processes.gate.priority", "expected int, got str"),
    "unknown_key.toml": (
        "hooks.defaults.interceptor_timeout",
        "unknown field; expected one of: interceptor_timeout_ms, approval_timeout_ms, "
        "observer_timeout_ms, max_retries",
    ),
    "unknown_top_level.toml": (
        "hoks",
        "unknown field; expected one of: hooks, observers, tracing, plugins",
    ),
    "unknown_top_level.json": (
        "hoks",
        "unknown field; expected one of: hooks, observers, tracing, plugins",
    ),
    "missing_command.toml": ("hooks.processes.gate.command", "required field is missing"),
    "bad_on_error.toml": (
        "hooks.processes.gate.on_error",
        "expected one of 'block', 'skip', 'raise', got 'explode'",
    ),
    "negative_timeout.toml": ("hooks.commands[0].timeout_ms", "expected int >= 1, got -5"),
    "missing_script.toml": (
        "hooks.commands[1].command",
        f"{FILES / 'hooks' / 'missing.sh'} does not exist",
    ),
    "missing_process_script.json": (
        "hooks.processes.gate.command",
        f"{FILES / 'hooks' / 'nope.py'} does not exist (the script given to python3)",
    ),
    "bad_regex.toml": (
        "hooks.commands[0].filter.tool.deny[1]",
        "invalid regex '^mcp_(github': missing ), unterminated subpattern",
    ),
    "unknown_event_kind.toml": ("hooks.processes.gate.observe[1]", EVENT_KINDS_LISTED),
    "unknown_intercept.toml": (
        "hooks.processes.gate.intercept[1]",
        "expected one of 'before_tool', 'after_tool', 'approve_tool', 'before_llm', "
        "'after_llm', got 'before_everything'",
    ),
    "unknown_builtin.toml": (
        "hooks.builtins.comand-safety-guard",
        "unknown field; expected one of: command-safety-guard, security-audit, tool-filter, "
        "rate-limit, redact-secrets, loop-guard, result-cache, output-cap",
    ),
    "unknown_plugin.toml": (
        "plugins.ticket-gate",
        "no installed plugin named 'ticket-gate' (entry point group 'interpose.plugins'",
    ),
    "unknown_group.toml": (
        "hooks.builtins.tool-filter.deny[0]",
        "unknown tool group 'group:filesystem'; groups: group:automation, group:fs",
    ),
    "unknown_tool.json": (
        "hooks.commands[0].filter.tool.allow[1]",
        "unknown tool 'deploy' (add it to hooks.tools if the application has it)",
    ),
    "missing_rate.toml": ("hooks.builtins.rate-limit.rate", "required field is missing"),
    "audit_dir_missing.toml": (
        "observers.audit.path",
        f"{INVALID / 'no' / 'such' / 'dir'} is not a directory",
    ),
    "matcher_matches_nothing.toml": (
        "hooks.builtins.loop-guard.tools",
        "tool matcher ^nothing$ matches no known or registered tool; valid tool names: ",
    ),
    "table_expected.toml": ("hooks", "expected table, got int"),
    "list_expected.json": ("hooks.commands", "expected array, got object"),
    "plugin_enabled_not_bool.toml": ("plugins.ticket-gate.enabled", "expected bool, got str"),
    "logging_level.toml": ("observers.logging.level", "unknown logging level 'LOUD'"),
    "empty_argv.toml": ("hooks.processes.gate.command", "expected array of length >= 1, got []"),
    "env_value.json": ("hooks.processes.gate.env.TIMEOUT", "expected str, got int"),
    "tracing_level.json": (
        "tracing.level",
        "expected one of 'off', 'tool', 'interceptor', got 'verbose'",
    ),
}

# errors about the file as a whole: no field, the problem says where
WHOLE_FILE: dict[str, str] = {
    "syntax.toml": "invalid TOML: Expected ']' at the end of a table declaration (at line 4, ",
    "syntax.json": "invalid JSON: Expecting property name enclosed in double quotes "
    "(at line 2, column 29)",
    "duplicate_key.json": "invalid JSON: duplicate key 'hooks'",
    "top_level.json": "expected object, got array",
    "unknown_extension.yaml": "unknown config format '.yaml': use .toml or .json",
}


def test_every_invalid_file_has_an_expectation() -> None:
    on_disk = {path.name for path in INVALID.iterdir()}
    assert on_disk == set(CASES) | set(WHOLE_FILE)
    assert len(CASES) + len(WHOLE_FILE) >= 15
    assert {Path(name).suffix for name in CASES} == {".toml", ".json"}


@pytest.mark.parametrize(("name", "expected"), sorted(CASES.items()))
def test_an_invalid_file_names_the_field_and_the_expectation(
    name: str, expected: tuple[str, str]
) -> None:
    field, problem = expected
    path = INVALID / name
    with pytest.raises(ConfigFileError) as caught:
        load_config(path)
    error = caught.value
    assert error.file == str(path)
    assert error.field == field
    assert problem in error.problem
    assert str(error).startswith(f"{path}: {field}: ")
    assert isinstance(error, ConfigError)
    assert isinstance(error, ValueError)


@pytest.mark.parametrize(("name", "problem"), sorted(WHOLE_FILE.items()))
def test_an_unreadable_file_says_why_and_where(name: str, problem: str) -> None:
    path = INVALID / name
    with pytest.raises(ConfigFileError) as caught:
        load_config(path)
    assert caught.value.field == ""
    assert problem in caught.value.problem
    assert str(caught.value).startswith(f"{path}: {problem}")


def test_from_config_raises_the_same_error() -> None:
    path = INVALID / "wrong_type.toml"
    with pytest.raises(
        ConfigError,
        match=re.escape(f"{path}: hooks.processes.gate.priority: expected int, got str"),
    ):
        Pipeline.from_config(path)


def test_a_missing_file_is_an_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "interpose.toml"
    with pytest.raises(ConfigFileError, match=r"interpose\.toml: cannot read it: .*No such file"):
        load_config(path)


def test_a_key_that_is_not_a_bare_toml_key_is_quoted_in_the_path(tmp_path: Path) -> None:
    path = tmp_path / "interpose.toml"
    path.write_text('[hooks.processes."review gate"]\ncommand = ["true"]\npriority = 1.5\n')
    with pytest.raises(ConfigFileError) as caught:
        load_config(path)
    assert caught.value.field == 'hooks.processes."review gate".priority'
    assert caught.value.problem == "expected int, got float"


def test_the_failing_entry_of_a_table_of_tables_is_the_one_named(tmp_path: Path) -> None:
    # msgspec reports dict entries as [...]; the loader finds which one failed
    path = tmp_path / "interpose.toml"
    path.write_text(
        "[hooks.processes.first]\ncommand = ['true']\n"
        "[hooks.processes.second]\ncommand = ['true']\nhandshake_timeout_ms = 0\n"
    )
    with pytest.raises(ConfigFileError) as caught:
        load_config(path)
    assert caught.value.field == "hooks.processes.second.handshake_timeout_ms"
    assert caught.value.problem == "expected int >= 1, got 0"


def test_json_says_object_and_null_where_toml_says_table(tmp_path: Path) -> None:
    problems = {}
    for name, text in (
        ("interpose.json", '{"observers": {"audit": "audit.jsonl"}}'),
        ("interpose.toml", 'observers.audit = "audit.jsonl"'),
    ):
        path = tmp_path / name
        path.write_text(text)
        with pytest.raises(ConfigFileError) as caught:
            load_config(path)
        assert caught.value.field == "observers.audit"
        problems[name] = caught.value.problem
    # JSON may write null for an absent table; TOML has no null
    assert problems == {
        "interpose.json": "expected object | null, got str",
        "interpose.toml": "expected table, got str",
    }


def test_decode_config_reports_under_the_given_name() -> None:
    with pytest.raises(ConfigFileError) as caught:
        decode_config({"tracing": {"content": "yes"}}, file="settings")
    assert str(caught.value) == "settings: tracing.content: expected bool, got str"


def test_the_loaders_notes_are_not_a_key_of_the_file() -> None:
    # Config keeps what the loader left out of a PicoClaw file beside its fields: a file
    # cannot set it, and it is not written back out
    with pytest.raises(ConfigFileError) as caught:
        decode_config({"_notes": ["all is well"]}, file="settings")
    assert str(caught.value) == (
        "settings: _notes: unknown field; expected one of: "
        "hooks, observers, tracing, plugins, mcp, permissions, approvals, sandbox, flows"
    )
    assert decode_config({})._notes == ()
    assert Config()._notes == ()
    gate = {"command": ["true"], "transport": "stdio", "enabled": True}
    picoclaw_hooks = {"enabled": True, "processes": {"gate": gate}}
    picoclaw = {"hooks": picoclaw_hooks, "_notes": ["hi"]}
    config = decode_config(picoclaw, file="config.json", table="object")
    assert config._notes == ("PicoClaw settings interpose has no use for were left out: _notes",)
    assert "_notes" not in msgspec.to_builtins(config)
    assert "_notes" not in reference()


def test_a_process_command_that_is_not_on_path_is_named(tmp_path: Path) -> None:
    path = tmp_path / "interpose.toml"
    path.write_text('[hooks.processes.gate]\ncommand = ["no-such-program-xyz", "--serve"]\n')
    with pytest.raises(ConfigFileError) as caught:
        load_config(path)
    assert caught.value.field == "hooks.processes.gate.command"
    assert caught.value.problem.startswith("'no-such-program-xyz' not found on PATH")


def test_a_relative_cwd_that_does_not_exist_is_named(tmp_path: Path) -> None:
    path = tmp_path / "interpose.toml"
    path.write_text('[[hooks.commands]]\ncommand = "true"\ncwd = "work"\n')
    with pytest.raises(ConfigFileError) as caught:
        load_config(path)
    assert caught.value.field == "hooks.commands[0].cwd"
    assert caught.value.problem == f"{tmp_path / 'work'} is not a directory"


def _every_table() -> dict[str, Any]:
    """A config with every table present (optional ones included), as plain data."""
    config = Config(
        hooks=HooksConfig(
            builtins=BuiltinsConfig(
                tool_filter=ToolFilterConfig(deny=["exec"]),
                rate_limit=RateLimitConfig(rate=1.0),
                redact_secrets=RedactSecretsConfig(),
                loop_guard=LoopGuardConfig(),
                result_cache=ResultCacheConfig(),
                output_cap=OutputCapConfig(),
            ),
            processes={"gate": ProcessHookConfig(command=["true"], env={"A": "b"})},
            commands=[CommandHookConfig(command="true", env={"A": "b"})],
        ),
        observers=ObserversConfig(
            audit=AuditConfig(path="audit.jsonl"),
            logging=LoggingConfig(),
            metrics=MetricsConfig(),
            otlp=OTLPConfig(headers={"x-key": "v"}),
            redis=RedisConfig(),
        ),
        mcp=McpConfig(
            servers={
                "time": McpServerConfig(command="true", env={"A": "b"}),
                "remote": McpServerConfig(url="http://127.0.0.1:1/mcp", headers={"x": "y"}),
            },
            auth=McpAuthConfig(jwks="keys.json", audience=["gateway"]),
        ),
        approvals=ApprovalsConfig(),
        sandbox=SandboxConfig(),
        flows=FlowsConfig(sinks={"send_email": "block"}),
    )
    data: dict[str, Any] = msgspec.to_builtins(config)
    return data


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, list[str | int]]]:
    """(rendered path, raw path) of every value in ``value`` (tables included)."""
    items: Iterable[tuple[str | int, Any]]
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, item in items:
        shown = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}".lstrip(".")
        yield shown, [key]
        for inner, raw in _leaves(item, shown):
            yield inner, [key, *raw]


def test_a_wrong_value_anywhere_is_reported_at_its_own_path() -> None:
    data = _every_table()
    checked = 0
    for shown, raw in _leaves(data):
        if raw[0] == "plugins":
            continue
        broken = copy.deepcopy(data)
        parent: Any = broken  # tables and arrays, indexed by str and int
        for key in raw[:-1]:
            parent = parent[key]
        value = parent[raw[-1]]
        # a table where a scalar or list belongs, a number where a table belongs
        parent[raw[-1]] = 7 if isinstance(value, dict) else {"oops": 1}
        with pytest.raises(ConfigFileError) as caught:
            decode_config(broken)
        assert caught.value.field == shown, (shown, str(caught.value))
        assert caught.value.problem.startswith("expected "), str(caught.value)
        checked += 1
    assert checked > 100


# the tables whose keys are names the user chooses, not fields
FREE_FORM = {
    "hooks.processes",
    "hooks.processes.gate.env",
    "hooks.claude_tools",
    "hooks.commands[0].env",
    "observers.otlp.headers",
    "plugins",
    "mcp.servers",
    "mcp.servers.time.env",
    "mcp.servers.time.headers",
    "mcp.servers.remote.env",
    "mcp.servers.remote.headers",
    "flows.sinks",
    "hooks.builtins.command-safety-guard.decisions",  # rule ids: checked by the builder
}


def test_an_unknown_key_in_any_table_names_its_path_and_the_valid_keys() -> None:
    data = _every_table()
    tables: list[tuple[str, list[str | int]]] = [("", []), *_leaves(data)]
    checked: list[str] = []
    for shown, raw in tables:
        table: Any = data
        for key in raw:
            table = table[key]
        if not isinstance(table, dict) or shown in FREE_FORM or raw[:1] == ["plugins"]:
            continue
        broken = copy.deepcopy(data)
        target: Any = broken
        for key in raw:
            target = target[key]
        target["typo"] = True
        with pytest.raises(ConfigFileError) as caught:
            decode_config(broken)
        assert caught.value.field == f"{shown}.typo".lstrip("."), str(caught.value)
        problem = caught.value.problem
        assert problem.startswith("unknown field; expected one of: "), str(caught.value)
        # every key the table has (all of them: _every_table writes out every field)
        listed = problem.removeprefix("unknown field; expected one of: ").split(", ")
        assert sorted(listed) == sorted(table), shown
        checked.append(shown)
    assert {"", "hooks", "hooks.defaults", "hooks.commands[0].filter.tool"} <= set(checked)
    assert len(checked) >= 20
