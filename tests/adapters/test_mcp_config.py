"""``[mcp.servers.<name>]`` and tool namespaces: a config may name an MCP server's tools
before the proxy has listed them, and only those of a declared server."""

from __future__ import annotations

from pathlib import Path

import pytest

from interpose import Pipeline, RegistrationError
from interpose.config import ConfigFileError, load_config


def test_matchers_may_name_tools_of_a_declared_namespace_before_they_are_listed() -> None:
    pipe = Pipeline(builtins=False)

    def noop(inp: object, out: object) -> None:
        return None

    with pytest.raises(RegistrationError, match="matches no known or registered tool"):
        pipe.intercept("tool.before", tools=r"mcp__time__.*", id="early")(noop)
    pipe.registry.register_tool_namespace("mcp__time__")
    pipe.intercept("tool.before", tools=r"mcp__time__.*", id="by-regex")(noop)
    pipe.intercept("tool.before", tools=["mcp__time__get_current_time"], id="by-name")(noop)
    # another server's tools are still unknown
    with pytest.raises(RegistrationError, match="matches no known or registered tool"):
        pipe.intercept("tool.before", tools=r"mcp__git__.*", id="other")(noop)
    regs = pipe.registry.get("tool.before", tool="mcp__time__convert_time")
    assert [r.id for r in regs] == ["by-regex"]


def test_a_config_names_mcp_tools_of_its_servers(tmp_path: Path) -> None:
    path = tmp_path / "interpose.toml"
    path.write_text(
        """
[mcp.servers.time]
command = "python3"
args = ["-m", "mcp_server_time"]

[hooks.builtins.tool-filter]
deny = ["mcp__time__convert_time"]

[[hooks.commands]]
event = "tool.before"
command = "true"
filter.tool.allow = ["mcp__time__get_current_time"]
""",
        encoding="utf-8",
    )
    config = load_config(path)
    assert config.mcp.servers["time"].args == ["-m", "mcp_server_time"]


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ('[mcp.servers.x]\nargs = ["a"]', "set either `command`"),
        ('[mcp.servers.x]\ncommand = "a"\nurl = "http://127.0.0.1:1/mcp"', "not both"),
        ('[mcp.servers.x]\nurl = "ftp://example.invalid"', "expected an http"),
        (
            '[mcp.servers.x]\ncommand = "a"\n[hooks.builtins.tool-filter]\ndeny = ["mcp__y__z"]',
            "unknown tool 'mcp__y__z'",
        ),
    ],
)
def test_an_invalid_mcp_table_names_its_field(tmp_path: Path, table: str, problem: str) -> None:
    path = tmp_path / "interpose.toml"
    path.write_text(table, encoding="utf-8")
    with pytest.raises(ConfigFileError, match=problem):
        load_config(path)
