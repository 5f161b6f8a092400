"""Building command hooks: what is refused at construction and at install, and which
tools an allow/deny filter selects (checked against a reference model).  Nothing here
runs a command."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from interpose import ConfigError, RegistrationError, Registry, normalize_tool_name
from interpose.middleware.command_hooks import CommandHook
from interpose.pipeline.tools import TOOL_ALIASES, TOOL_GROUPS

SCRIPTS = Path(__file__).parent / "scripts"
REPLY = str(SCRIPTS / "reply.sh")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project directory with an executable hooks/check.sh and a non-executable one."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "check.sh").write_text("#!/bin/sh\nexit 0\n")
    (hooks / "check.sh").chmod(0o755)
    (hooks / "plain.sh").write_text("#!/bin/sh\nexit 0\n")
    (hooks / "plain.sh").chmod(0o644)
    return tmp_path


# -- the command must exist ---------------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        "hooks/missing.sh",
        "hooks/missing.sh --strict",
        "./hooks/missing.sh",
        "DEBUG=1 hooks/missing.sh",
        "$CLAUDE_PROJECT_DIR/hooks/missing.sh",
        '"${CLAUDE_PROJECT_DIR}"/hooks/missing.sh',
        ["hooks/missing.sh"],
    ],
)
def test_a_missing_script_fails_at_construction_with_its_path(
    project: Path, command: str | list[str]
) -> None:
    with pytest.raises(ValueError, match="does not exist") as caught:
        CommandHook(command, cwd=project)
    assert str(project / "hooks" / "missing.sh") in str(caught.value)
    assert isinstance(caught.value, ConfigError)


def test_an_absolute_missing_path_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape(f"{tmp_path}/nope/check.sh does not exist")):
        CommandHook([f"{tmp_path}/nope/check.sh", "--fast"])


@pytest.mark.parametrize("command", ["no-such-program-3f9a --flag", ["no-such-program-3f9a"]])
def test_a_program_not_on_path_fails_at_construction(command: str | list[str]) -> None:
    with pytest.raises(ConfigError, match="'no-such-program-3f9a' not found on PATH"):
        CommandHook(command)


def test_the_hook_path_is_searched_not_ours(project: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape("'check.sh' not found on PATH")):
        CommandHook("check.sh", cwd=project)
    hook = CommandHook("check.sh", cwd=project, env={"PATH": str(project / "hooks")})
    assert hook.command_line == "check.sh"


def test_a_script_that_is_not_executable_is_refused(project: Path) -> None:
    with pytest.raises(ConfigError, match=r"plain\.sh is not executable .*'bash hooks/plain\.sh'"):
        CommandHook("hooks/plain.sh", cwd=project)
    CommandHook("bash hooks/plain.sh", cwd=project)  # through an interpreter it is fine


@pytest.mark.parametrize(
    "command",
    [
        "hooks/check.sh",
        "$CLAUDE_PROJECT_DIR/hooks/check.sh --strict",
        "cd hooks && ./check.sh",  # the first word is a shell builtin
        "echo '{}'",
        "if true; then exit 0; fi",
        "$UNSET_VARIABLE/check.sh",  # cannot be resolved before it runs: not checked
        ["sh", "-c", "exit 0"],
    ],
)
def test_commands_that_can_run_are_accepted(project: Path, command: str | list[str]) -> None:
    hook = CommandHook(command, cwd=project)
    assert hook.id == f"command:{hook.command_line}"


def test_a_relative_script_is_found_from_cwd_not_from_here(project: Path) -> None:
    # the process runs in cwd, so the path is resolved there (and only there)
    hook = CommandHook(["hooks/check.sh", "x"], cwd=project)
    assert hook.command_line == "hooks/check.sh x"
    with pytest.raises(ConfigError, match="does not exist"):
        CommandHook(["hooks/check.sh"], cwd=project / "hooks")


# -- other arguments ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"command": ""}, "the command is empty"),
        ({"command": "   "}, "the command is empty"),
        ({"command": []}, "must be a str or a list of str"),
        ({"command": ["bash", 3]}, "must be a str or a list of str"),
        ({"command": "echo 'unbalanced"}, "cannot split the command line"),
        ({"event": "tool.sometimes"}, "unknown event 'tool.sometimes'; events: 'tool.before'"),
        ({"event": "Stop"}, "unknown event 'Stop'"),
        ({"timeout": 0}, "timeout must be a positive number of seconds, got 0"),
        ({"timeout": -1.5}, "timeout must be a positive"),
        ({"timeout": True}, "timeout must be a positive"),
        ({"timeout": "5"}, "timeout must be a positive"),
        ({"max_output_bytes": 0}, "max_output_bytes must be a positive int"),
        ({"on_error": "ignore"}, "on_error must be 'block', 'skip' or 'raise', got 'ignore'"),
        ({"priority": "high"}, "priority must be an int, got 'high'"),
        ({"id": ""}, "id must be a non-empty str"),
        ({"env": {"A": 1}}, "env must map names to str values"),
        ({"env": {"A=B": "x"}}, "env must map names to str values"),
        ({"cwd": "/no/such/dir"}, "cwd /no/such/dir is not a directory"),
        ({"allow": ["group:filesystem"]}, "allow: unknown tool group 'group:filesystem'"),
        ({"deny": ["(unclosed"]}, "deny: '(unclosed' is not a valid regex"),
        ({"allow": [3]}, "allow items are tool names, group:* names or regexes, got 3"),
        ({"deny": [""]}, "deny items are tool names"),
        ({"allow": [r"^(ex)\1c$"]}, "refers to a group, which a tool filter cannot do"),
        ({"deny": [r"(?P<x>a)(?P=x)"]}, "refers to a group"),
        ({"deny": [r"(a)?(?(1)b|c)"]}, "refers to a group"),
    ],
)
def test_bad_arguments_are_config_errors(options: dict[str, object], message: str) -> None:
    options.setdefault("command", REPLY)
    with pytest.raises(ConfigError, match=re.escape(message)):
        CommandHook(**options)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("given", "hook"),
    [
        ("tool.before", "tool.before"),
        ("PreToolUse", "tool.before"),
        ("tool.after", "tool.after"),
        ("PostToolUse", "tool.after"),
        ("tool.approve", "tool.approve"),
        ("PermissionRequest", "tool.approve"),
    ],
)
def test_events_have_interpose_and_claude_code_names(given: str, hook: str) -> None:
    (reg,) = CommandHook(REPLY, event=given).interceptors()
    assert reg.hook == hook


def test_the_interceptor_carries_the_hook_settings() -> None:
    hook = CommandHook(
        [REPLY, "--x"], event="tool.approve", timeout=2.5, priority=50, on_error="skip"
    )
    (reg,) = hook.interceptors()
    assert (reg.id, reg.hook, reg.priority, reg.on_error, reg.timeout, reg.source) == (
        f"command:{REPLY} --x",
        "tool.approve",
        50,
        "skip",
        2.5,
        "command",
    )
    (named,) = CommandHook(REPLY, id="gate").interceptors()
    assert named.id == "gate"


# -- install ------------------------------------------------------------------------------


def test_install_refuses_unknown_tool_names() -> None:
    registry = Registry()
    with pytest.raises(RegistrationError, match=r"unknown tools \['exce'\]; valid tool names: "):
        CommandHook(REPLY, allow=["exce", "read"]).install(registry)
    assert len(registry) == 0
    registry.register_tool("deploy")
    CommandHook(REPLY, deny=["deploy"]).install(registry)


def test_install_refuses_a_filter_that_matches_no_tool() -> None:
    with pytest.raises(RegistrationError, match="matches no known or registered tool"):
        CommandHook(REPLY, allow=[r"^mcp__"]).install(Registry())
    registry = Registry()
    registry.register_tool("mcp__github__create_issue")
    CommandHook(REPLY, allow=[r"^mcp__"]).install(registry)


def test_install_refuses_a_taken_explicit_id() -> None:
    registry = Registry()
    CommandHook(REPLY, id="gate").install(registry)
    with pytest.raises(RegistrationError, match="duplicate id"):
        CommandHook(REPLY, id="gate", event="tool.after").install(registry)


# -- which tools a filter selects ---------------------------------------------------------

_NAME = re.compile(r"[\w.\-]+")
_ALIASES_OF = {c: [a for a, c2 in TOOL_ALIASES.items() if c2 == c] for c in TOOL_ALIASES.values()}


def _reference(tool: str, allow: tuple[object, ...], deny: tuple[object, ...]) -> bool:
    """The documented semantics, written the obvious way."""
    name = normalize_tool_name(tool)

    def hit(item: object) -> bool:
        if isinstance(item, str) and item.startswith("group:"):
            return name in TOOL_GROUPS[item]
        if isinstance(item, str) and _NAME.fullmatch(item):
            return normalize_tool_name(item) == name
        pattern = item if isinstance(item, re.Pattern) else re.compile(str(item))
        return any(pattern.search(n) for n in [name, *_ALIASES_OF.get(name, [])])

    return (not allow or any(hit(i) for i in allow)) and not any(hit(i) for i in deny)


_ITEMS: list[object] = [
    "exec",
    "Bash",
    "group:fs",
    "group:web",
    r"^web_",
    r"^bash$",
    r"(?i)^READ$",
    re.compile("FETCH", re.IGNORECASE),
    r"_get$",
    "mcp__x",
    r"^mcp__",
    r"(?P<p>apply)[-_]patch",  # the same group name in allow and deny is fine
    r"^[]w](?P<p>e)b",  # "]" first in a class is a literal
]
_EXTRA_TOOLS = ["mcp__x", "mcp__files_get"]
_CALLED = sorted(
    {*TOOL_GROUPS["group:fs"], *TOOL_GROUPS["group:web"], "exec", "process", "memory_get", "tts"}
    | {*_EXTRA_TOOLS, "bash", "BASH", "apply-patch", "Read"}
)
_LISTS = [c for n in range(3) for c in itertools.combinations(_ITEMS, n)]


@pytest.mark.parametrize("allow", _LISTS, ids=repr)
def test_filters_select_what_the_documented_rules_say(allow: tuple[object, ...]) -> None:
    for deny in _LISTS:
        registry = Registry()
        for tool in _EXTRA_TOOLS:
            registry.register_tool(tool)
        hook = CommandHook(REPLY, allow=allow, deny=deny)  # type: ignore[arg-type]
        expected = {t for t in _CALLED if _reference(t, allow, deny)}
        try:
            hook.install(registry)
        except RegistrationError:
            # refused only when nothing known is selected
            assert not {t for t in registry.known_tools if _reference(t, allow, deny)}
            continue
        selected = {t for t in _CALLED if registry.get("tool.before", tool=t)}
        assert selected == expected, f"allow={allow!r} deny={deny!r}"


def test_no_filter_means_every_tool() -> None:
    hook = CommandHook(REPLY)
    assert hook.tool_matcher is None
    registry = Registry()
    hook.install(registry)
    assert registry.get("tool.before", tool="anything_at_all")
