"""Gemini CLI policy files (``~/.gemini/policies/*.toml``), written as its docs write
them, loaded unchanged and judged on every simple command; a file whose priorities would
decide differently from deny > ask > allow is refused, naming both rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from interpose.errors import ConfigError
from interpose.permissions.engine import Permissions
from interpose.permissions.gemini import gemini_rules
from interpose.permissions.model import Decision
from interpose.permissions.view import view_of

# the docs' examples, as a user puts them together in ~/.gemini/policies/my-rules.toml
MY_RULES = """\
# Block recursive deletes everywhere.
[[rule]]
toolName = "run_shell_command"
commandPrefix = "rm -rf"
decision = "deny"
priority = 100
denyMessage = "Deletion is permanent"

[[rule]]
toolName = "run_shell_command"
commandPrefix = ["git push", "git fetch"]
decision = "ask_user"
priority = 90

[[rule]]
toolName = "run_shell_command"
commandRegex = "npm (test|run lint)"
decision = "allow"
priority = 50

[[rule]]
toolName = "run_shell_command"
commandPrefix = "make"
decision = "allow"
priority = 40
allowRedirection = true

[[rule]]
toolName = ["write_file", "replace"]
decision = "ask_user"
priority = 10

[[rule]]
toolName = "read_file"
argsPattern = '"file_path":"[^"]*\\.env"'
decision = "deny"
priority = 300

# Denies all tools from the `untrusted-server` MCP
[[rule]]
mcpName = "untrusted-server"
decision = "deny"
priority = 500
denyMessage = "This server is not trusted by the admin."

# Allows the `search` tool on the `my-jira-server` MCP
[[rule]]
mcpName = "my-jira-server"
toolName = "search"
decision = "allow"
priority = 200
"""

CWD, HOME = "/srv/project", "/home/me"


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    path = tmp_path / "my-rules.toml"
    path.write_text(MY_RULES)
    return path


def decide(policy: Path, tool: str = "exec", **args: Any) -> Decision | None:
    view = view_of(tool, args, cwd=CWD, home=HOME)
    return Permissions(gemini_rules(policy)).judge(view).decision


def test_each_rule_loads_with_its_line_and_message(policy: Path) -> None:
    rules = gemini_rules(policy)
    assert [r.source for r in rules] == [
        f"{policy}:{line}" for line in (2, 9, 15, 21, 28, 33, 40, 47)
    ]
    assert [r.decision for r in rules] == [
        "deny",
        "ask",
        "allow",
        "allow",
        "ask",
        "deny",
        "deny",
        "allow",
    ]
    assert rules[0].justification == "Deletion is permanent"
    assert rules[0].text == (
        '[[rule]] toolName="run_shell_command", commandPrefix="rm -rf", decision="deny", '
        "priority=100"
    )


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("rm -rf build", "deny"),
        ("cd /tmp && rm -rf build", "deny"),
        ("sudo rm -rf /var/tmp/x", "deny"),
        ("bash -c 'rm -rf build'", "deny"),
        ("echo ok; $(rm -rf build)", "deny"),
        ("rm -r -f build", None),  # a prefix is a prefix: spell it out in another rule
        ("git push origin main", "ask"),
        ("env GIT_SSH_COMMAND=ssh git fetch", "ask"),
        ("git pushy", None),  # whole words, as Gemini's \\s" boundary
        ("npm test", "allow"),
        ("npm run lint -- --fix", "allow"),
        ("npm test && npm run lint", "allow"),
        ("npm test && curl https://x.example", None),
        ("npm test > report.txt", None),  # redirection: Gemini asks unless allowed
        ("make all > build.log", "allow"),  # allowRedirection = true
        ("npm test && git push", "ask"),
    ],
)
def test_shell_rules_judge_every_simple_command(
    policy: Path, command: str, expected: Decision | None
) -> None:
    assert decide(policy, command=command) == expected


def test_tool_names_either_spelling(policy: Path) -> None:
    assert decide(policy, "write_file", file_path="a.py", content="x") == "ask"
    assert decide(policy, "write", path="a.py", content="x") == "ask"
    assert decide(policy, "replace", file_path="a.py") == "ask"
    assert decide(policy, "run_shell_command", command="rm -rf build") == "deny"


def test_args_pattern_searches_the_sorted_json_of_the_arguments(policy: Path) -> None:
    assert decide(policy, "read_file", file_path="config/.env") == "deny"
    assert decide(policy, "read_file", file_path="config/.env.example") is None


def test_mcp_servers_by_name(policy: Path) -> None:
    assert decide(policy, "mcp__untrusted-server__delete_all") == "deny"
    assert decide(policy, "mcp__my-jira-server__search", query="x") == "allow"
    assert decide(policy, "mcp__my-jira-server__delete") is None
    rules = gemini_rules(policy)
    assert rules[6].justification == "This server is not trusted by the admin."


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    return path


def test_an_allow_outranking_an_overlapping_ask_is_refused(tmp_path: Path) -> None:
    # Gemini would allow `git status` here; deny > ask > allow would ask: refuse the file
    path = write(
        tmp_path,
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "git"\n'
        'decision = "ask_user"\npriority = 100\n\n'
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "git status"\n'
        'decision = "allow"\npriority = 200\n',
    )
    with pytest.raises(ConfigError) as caught:
        gemini_rules(path)
    assert str(caught.value).startswith(f"{path}: rule[1]: allow at priority 200 outranks ask ")
    assert "(rule[0])" in str(caught.value)


def test_equal_priorities_follow_gemini_file_order(tmp_path: Path) -> None:
    allow = 'toolName = "run_shell_command"\ncommandPrefix = "git"\ndecision = "allow"\n'
    deny = 'toolName = "run_shell_command"\ncommandPrefix = "git push"\ndecision = "deny"\n'
    first_deny = write(tmp_path, f"[[rule]]\n{deny}priority = 5\n[[rule]]\n{allow}priority = 5\n")
    assert [r.decision for r in gemini_rules(first_deny)] == ["deny", "allow"]
    first_allow = write(tmp_path, f"[[rule]]\n{allow}priority = 5\n[[rule]]\n{deny}priority = 5\n")
    with pytest.raises(ConfigError, match="outranks deny"):
        gemini_rules(first_allow)


def test_rules_that_cannot_meet_may_rank_any_way(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "ls"\n'
        'decision = "allow"\npriority = 900\n'
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "lsof"\n'
        'decision = "deny"\npriority = 1\n'
        '[[rule]]\ntoolName = "read_file"\ndecision = "allow"\npriority = 999\n'
        '[[rule]]\ntoolName = "write_file"\ndecision = "deny"\npriority = 0\n',
    )
    rules = gemini_rules(path)
    view = view_of("exec", {"command": "ls && lsof -i"}, cwd=CWD, home=HOME)
    assert Permissions(rules).judge(view).decision == "deny"


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        ('toolName = "x"\ndecision = "allow"\npriority = 1\nmodes = ["yolo"]', "modes"),
        ('toolName = "x"\ndecision = "allow"\npriority = 1\nsubagent = "a"', "subagent"),
        ('toolName = "x"\ndecision = "allow"\npriority = 1\ninteractive = true', "interactive"),
        (
            'toolName = "x"\ndecision = "allow"\ntoolAnnotations = {readOnlyHint = true}\n'
            "priority = 1",
            "toolAnnotations",
        ),
        ('toolName = "x"\ndecision = "maybe"\npriority = 1', "expected allow, ask_user or deny"),
        ('toolName = "x"\ndecision = "allow"', "expected an integer from 0 to 999"),
        ('toolName = "x"\ndecision = "allow"\npriority = 1000', "expected an integer from 0"),
        ('decision = "allow"\npriority = 1', 'required (use "*" for every tool)'),
        (
            'toolName = "read_file"\ncommandPrefix = "git"\ndecision = "allow"\npriority = 1',
            'need toolName = "run_shell_command"',
        ),
        (
            'toolName = "run_shell_command"\ncommandPrefix = "git"\ncommandRegex = "x"\n'
            'decision = "allow"\npriority = 1',
            "mutually exclusive",
        ),
        (
            'toolName = "run_shell_command"\ncommandRegex = "(x"\ndecision = "deny"\npriority = 1',
            "invalid regex",
        ),
        ('toolName = "mcp__github__x"\ndecision = "deny"\npriority = 1', "mcp_<server>_<tool>"),
        ('toolName = "x"\ndecision = "allow"\npriority = 1\nsomething = 1', "unknown field"),
    ],
)
def test_what_interpose_cannot_honour_is_refused(tmp_path: Path, rule: str, problem: str) -> None:
    path = write(tmp_path, f"[[rule]]\n{rule}\n")
    with pytest.raises(ConfigError) as caught:
        gemini_rules(path)
    assert str(caught.value).startswith(f"{path}: rule[0]")
    assert problem in str(caught.value)


def test_safety_checkers_and_bad_toml_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path, '[[safety_checker]]\ntoolName = "x"\n')
    with pytest.raises(ConfigError, match="only \\[\\[rule\\]\\] tables are read"):
        gemini_rules(path)
    path = write(tmp_path, "[[rule]\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        gemini_rules(path)
