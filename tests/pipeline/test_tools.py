"""Tool names: normalization, the canonical set and groups, and tool/agent matchers."""

from __future__ import annotations

import re
from typing import Any

import pytest

from interpose import (
    KNOWN_TOOL_NAMES,
    TOOL_GROUPS,
    Interceptor,
    Pipeline,
    Registry,
    ToolBeforeInput,
    ToolBeforeOutput,
    normalize_tool_name,
)

DESIGN_GROUPS = {
    "group:fs": {"read", "write", "edit", "apply_patch"},
    "group:runtime": {"exec", "process"},
    "group:memory": {"memory_search", "memory_get"},
    "group:web": {"web_search", "web_fetch"},
    "group:sessions": {
        "sessions_list",
        "sessions_history",
        "sessions_send",
        "sessions_spawn",
        "session_status",
    },
    "group:ui": {"browser", "canvas"},
    "group:automation": {"cron", "gateway"},
    "group:messaging": {"message"},
    "group:nodes": {"nodes"},
}
OTHER_TOOLS = {"agents_list", "image", "tts"}


def tool(args: dict[str, Any]) -> str:
    return "ran"


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("read", "read"),
        ("READ", "read"),
        ("  Write \n", "write"),
        ("bash", "exec"),
        ("Bash", "exec"),
        (" BASH ", "exec"),
        ("apply-patch", "apply_patch"),
        ("Apply-Patch", "apply_patch"),
        ("apply_patch", "apply_patch"),
        ("exec", "exec"),
        ("my_custom_tool", "my_custom_tool"),
    ],
)
def test_normalize_tool_name(raw: str, canonical: str) -> None:
    assert normalize_tool_name(raw) == canonical


def test_known_tool_names_are_the_design_set() -> None:
    expected = set().union(*DESIGN_GROUPS.values(), OTHER_TOOLS)
    assert set(KNOWN_TOOL_NAMES) == expected
    assert "bash" not in KNOWN_TOOL_NAMES  # aliases are not canonical names


def test_groups_are_the_design_groups() -> None:
    assert {name: set(members) for name, members in TOOL_GROUPS.items()} == DESIGN_GROUPS


@pytest.mark.parametrize(("group", "members"), sorted(DESIGN_GROUPS.items()))
def test_group_matcher_selects_exactly_its_members(
    pipe: Pipeline, group: str, members: set[str]
) -> None:
    pipe.intercept("tool.before", tools=group, id="g")(lambda inp, out: None)
    selected = {t for t in KNOWN_TOOL_NAMES if pipe.registry.get("tool.before", tool=t)}
    assert selected == members


def test_list_matcher_mixes_names_and_groups(pipe: Pipeline) -> None:
    pipe.intercept("tool.before", tools=["bash", "group:web", "Image"], id="m")(
        lambda inp, out: None
    )
    selected = {t for t in KNOWN_TOOL_NAMES if pipe.registry.get("tool.before", tool=t)}
    assert selected == {"exec", "web_search", "web_fetch", "image"}


def test_compiled_pattern_matcher(pipe: Pipeline) -> None:
    pipe.intercept("tool.before", tools=re.compile(r"^web_"), id="p")(lambda inp, out: None)
    selected = {t for t in KNOWN_TOOL_NAMES if pipe.registry.get("tool.before", tool=t)}
    assert selected == {"web_search", "web_fetch"}


def test_regex_uses_search_not_fullmatch(pipe: Pipeline) -> None:
    pipe.intercept("tool.before", tools="session", id="s")(lambda inp, out: None)
    selected = {t for t in KNOWN_TOOL_NAMES if pipe.registry.get("tool.before", tool=t)}
    assert selected == DESIGN_GROUPS["group:sessions"]


@pytest.mark.parametrize("matcher", ["bash", r"^bash$", r"^exec$", ["bash"], ["BASH"]])
@pytest.mark.parametrize("called_as", ["exec", "bash", "Bash", " EXEC "])
async def test_alias_matchers_match_exec_calls(
    pipe: Pipeline, matcher: Any, called_as: str
) -> None:
    seen: list[tuple[str, str]] = []

    @pipe.intercept("tool.before", tools=matcher, id="gate")
    def gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        seen.append((inp.tool_name, inp.raw_name))

    result = await pipe.call_tool(called_as, {"command": "ls"}, call=tool)

    assert result.output == "ran"
    assert seen == [("exec", called_as)]


async def test_matcher_does_not_fire_for_other_tools(pipe: Pipeline) -> None:
    seen: list[str] = []

    @pipe.intercept("tool.before", tools=r"^bash$", id="gate")
    def gate(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        seen.append(inp.tool_name)

    await pipe.call_tool("read", {"path": "x"}, call=tool)
    await pipe.call_tool("process", {}, call=tool)
    assert seen == []


async def test_apply_patch_alias_matches(pipe: Pipeline) -> None:
    seen: list[str] = []

    @pipe.intercept("tool.before", tools="group:fs", id="fs")
    def fs(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        seen.append(inp.tool_name)

    await pipe.call_tool("Apply-Patch", {"patch": ""}, call=tool)
    assert seen == ["apply_patch"]


async def test_agent_matcher_regex(pipe: Pipeline) -> None:
    seen: list[str] = []

    @pipe.intercept("tool.before", agents=r"^coder", id="coders")
    def coders(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        seen.append(inp.agent_id)

    for agent in ["coder", "coder-2", "reviewer", "main", "my-coder"]:
        await pipe.call_tool("read", {"path": "x"}, call=tool, agent_id=agent)

    assert seen == ["coder", "coder-2"]


async def test_agent_matcher_compiled_pattern(pipe: Pipeline) -> None:
    seen: list[str] = []

    def reviewers(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        seen.append(inp.agent_id)

    pipe.registry.add(
        Interceptor(
            id="r",
            hook="tool.before",
            handler=reviewers,
            agent_matcher=re.compile("REVIEW", re.IGNORECASE),
        )
    )

    await pipe.call_tool("read", {}, call=tool, agent_id="code-reviewer")
    await pipe.call_tool("read", {}, call=tool, agent_id="coder")
    assert seen == ["code-reviewer"]


async def test_unknown_application_tool_runs_without_matchers(pipe: Pipeline) -> None:
    seen: list[str] = []

    @pipe.intercept("tool.before", id="all")
    def all_tools(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        seen.append(inp.tool_name)

    result = await pipe.call_tool("Deploy", {}, call=tool)
    assert result.status == "ok"
    assert seen == ["deploy"]


def test_a_negative_regex_is_not_turned_around_by_aliases() -> None:
    registry = Registry()
    registry.add(
        Interceptor(id="not-exec", hook="tool.before", tool_matcher=r"^(?!exec$)", handler=noop)
    )
    registry.add(Interceptor(id="bash", hook="tool.before", tool_matcher=r"^bash$", handler=noop))
    assert [r.id for r in registry.get("tool.before", tool="exec")] == ["bash"]
    assert [r.id for r in registry.get("tool.before", tool="read")] == ["not-exec"]


def noop(inp: Any, out: Any) -> None:
    pass


@pytest.mark.parametrize(
    "lookalike",
    [
        "\u0435\u0445\u0435\u0441",  # Cyrillic ie, ha, ie, es
        "\uff45\uff58\uff45\uff43",  # fullwidth e x e c
        "ex\u200bec",  # a zero-width space inside
        "\u0392\u0430sh",  # Greek Beta, Cyrillic a: an alias (bash) in lookalikes
    ],
)
def test_lookalike_characters_fold_onto_the_latin_name(lookalike: str) -> None:
    assert normalize_tool_name(lookalike) == "exec"


def test_a_matcher_naming_a_tool_matches_its_cyrillic_lookalike() -> None:
    registry = Registry()
    registry.register_tool("mcp__git__git_reset")
    registry.add(
        Interceptor(
            id="deny-reset",
            hook="tool.before",
            handler=lambda inp, out: None,
            tool_matcher=["mcp__git__git_reset"],
        )
    )
    found = registry.get("tool.before", tool="mcp__git__git_r\u0435set")
    assert [reg.id for reg in found] == ["deny-reset"]


def test_non_latin_names_that_imitate_nothing_are_kept() -> None:
    assert normalize_tool_name("\u691c\u7d22") == "\u691c\u7d22"  # Japanese 検索
