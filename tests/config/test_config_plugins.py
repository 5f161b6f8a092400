"""Plugins found through a real entry point: a distribution (``*.dist-info`` with METADATA
and entry_points.txt, plus its module) is written under tmp_path and put on sys.path,
where ``importlib.metadata`` finds it as it would an installed package."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interpose import Interceptor, Pipeline
from interpose.cli import main
from interpose.config import ConfigFileError, load_config
from interpose.plugins import PLUGIN_GROUP, installed_plugins

PLUGIN_SOURCE = '''
"""A plugin: commands must name a ticket of the configured project."""

from interpose import ConfigError

calls = []
VALUE = 42


def plugin(pipe, config):
    calls.append(dict(config))
    project = config.get("project")
    if not isinstance(project, str):
        raise ConfigError(f"project must be a str, got {project!r}")

    @pipe.intercept("tool.before", tools=["exec"], priority=60, id="ticket-gate")
    def need_ticket(inp, out):
        if project + "-" not in str(out.args.get("command", "")):
            out.block = True
            out.block_reason = f"commands must name a {project} ticket"

    if config.get("timed"):
        @pipe.middleware("tool", priority=5, id="ticket-timer")
        async def timer(ctx, call_next):
            await call_next()


async def async_plugin(pipe, config):
    pass


def crashing_plugin(pipe, config):
    return config["url"]
'''


class Dist:
    """The fake distribution: its module's name and the module once imported."""

    def __init__(self, module: str) -> None:
        self.module = module

    def loaded(self) -> Any:
        return sys.modules[self.module]


@pytest.fixture
def dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Dist]:
    site = tmp_path / "site"
    module = f"ticket_gate_{abs(hash(tmp_path)) % 10**8}"
    info = site / "interpose_ticket_gate-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: interpose-ticket-gate\nVersion: 1.0\n"
    )
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            f"""\
            [{PLUGIN_GROUP}]
            ticket-gate = {module}:plugin
            broken = {module}_missing:plugin
            not-callable = {module}:VALUE
            async-plugin = {module}:async_plugin
            crashing = {module}:crashing_plugin
            """
        )
    )
    (site / f"{module}.py").write_text(PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(str(site))
    yield Dist(module)
    sys.modules.pop(module, None)


def write_config(directory: Path, text: str) -> Path:
    path = directory / "interpose.toml"
    path.write_text(text)
    return path


def test_the_entry_points_are_found(dist: Dist) -> None:
    found = installed_plugins()
    assert {"ticket-gate", "broken", "not-callable", "async-plugin"} <= set(found)
    assert found["ticket-gate"].value == f"{dist.module}:plugin"


async def test_an_enabled_plugin_gets_its_own_table_and_registers(
    dist: Dist, tmp_path: Path
) -> None:
    path = write_config(
        tmp_path,
        '[plugins.ticket-gate]\nenabled = true\nproject = "OPS"\nstrict = false\n',
    )
    pipe = Pipeline.from_config(path)
    assert dist.loaded().calls == [{"project": "OPS", "strict": False}]
    reg = pipe.registry["ticket-gate"]
    assert isinstance(reg, Interceptor)
    assert (reg.hook, reg.priority, reg.source) == ("tool.before", 60, "plugin:ticket-gate")
    # after the guards (priority 100), before the default bands
    assert [r.id for r in pipe.registry.get("tool.before", tool="exec")] == [
        "builtin:command-safety-guard",
        "ticket-gate",
    ]
    refused = await pipe.call_tool("exec", {"command": "deploy"}, call=lambda a: "ran")
    assert refused.output["reason"] == "commands must name a OPS ticket"
    allowed = await pipe.call_tool("exec", {"command": "deploy OPS-12"}, call=lambda a: "ran")
    assert allowed.output == "ran"


def test_loading_a_config_finds_the_plugin_but_does_not_run_it(dist: Dist, tmp_path: Path) -> None:
    load_config(write_config(tmp_path, '[plugins.ticket-gate]\nproject = "OPS"\n'))
    assert dist.loaded().calls == []


def test_a_plugin_that_rejects_its_settings_is_named(dist: Dist, tmp_path: Path) -> None:
    path = write_config(tmp_path, "[plugins.ticket-gate]\nproject = 7\n")
    with pytest.raises(ConfigFileError) as caught:
        Pipeline.from_config(path)
    assert caught.value.field == "plugins.ticket-gate"
    assert caught.value.problem == "plugin 'ticket-gate': project must be a str, got 7"


def test_a_plugin_that_crashes_is_named_with_its_error(dist: Dist, tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError) as caught:
        Pipeline.from_config(write_config(tmp_path, "[plugins.crashing]\n"))
    assert caught.value.field == "plugins.crashing"
    assert caught.value.problem == "plugin 'crashing' failed: KeyError: 'url'"


def test_a_disabled_plugin_is_not_even_imported(dist: Dist, tmp_path: Path) -> None:
    path = write_config(
        tmp_path, "[plugins.broken]\nenabled = false\n[plugins.ticket-gate]\nenabled = false\n"
    )
    pipe = Pipeline.from_config(path)
    assert "ticket-gate" not in pipe.registry
    assert dist.module not in sys.modules


def test_a_plugin_whose_import_fails_is_a_config_error_naming_it(
    dist: Dist, tmp_path: Path
) -> None:
    path = write_config(tmp_path, "[plugins.broken]\n")
    with pytest.raises(ConfigFileError) as caught:
        load_config(path)
    assert caught.value.field == "plugins.broken"
    assert caught.value.problem == (
        f"plugin 'broken' ({dist.module}_missing:plugin) cannot be loaded: "
        f"ModuleNotFoundError: No module named '{dist.module}_missing'"
    )


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("not-callable", "is not callable (it is a int object); a plugin is a function"),
        ("async-plugin", "is an async function; a plugin only registers things"),
    ],
)
def test_a_plugin_that_is_not_a_plain_function_is_refused(
    dist: Dist, tmp_path: Path, name: str, problem: str
) -> None:
    with pytest.raises(ConfigFileError) as caught:
        load_config(write_config(tmp_path, f"[plugins.{name}]\n"))
    assert caught.value.field == f"plugins.{name}"
    assert problem in caught.value.problem


def test_an_unknown_plugin_lists_the_installed_ones(dist: Dist, tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError) as caught:
        load_config(write_config(tmp_path, "[plugins.ticket-gates]\n"))
    assert caught.value.field == "plugins.ticket-gates"
    problem = caught.value.problem
    assert problem.startswith("no installed plugin named 'ticket-gates'")
    assert "async-plugin, broken, crashing, not-callable, ticket-gate" in problem


def test_check_lists_what_a_plugin_registered_with_its_source(
    dist: Dist, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(
        tmp_path,
        "[hooks.builtins.security-audit]\nenabled = false\n"
        '[plugins.ticket-gate]\nproject = "OPS"\ntimed = true\n',
    )
    assert main(["check", str(path)]) == 0
    table = capsys.readouterr().out.split("stack (execution order):\n")[1].split("\n\n")[0]
    assert [line.split() for line in table.splitlines()[1:]] == [
        ["tool", "middleware", "5", "ticket-timer", "*", "block", "enforce", "plugin:ticket-gate"],
        [
            "tool",
            "tool.before",
            "100",
            "builtin:command-safety-guard",
            "exec",
            "block",
            "enforce",
            "builtin",
        ],
        [
            "tool",
            "tool.before",
            "60",
            "ticket-gate",
            "exec",
            "block",
            "enforce",
            "plugin:ticket-gate",
        ],
        [
            "tool",
            "tool.approve",
            "100",
            "builtin:command-safety-guard.ask",
            "exec",
            "block",
            "enforce",
            "builtin",
        ],
    ]
