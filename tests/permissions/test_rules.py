"""Claude Code's rule syntax (parse_claude_rule), the view of a call on the shell model
(view_of) and the engine's semantics (Permissions.judge), each form provoked on real
command lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from interpose.errors import ConfigError
from interpose.permissions.claude import parse_claude_rule, warning_of
from interpose.permissions.engine import Permissions
from interpose.permissions.model import Decision, Rule
from interpose.permissions.view import view_of

PROJECT = Path("/srv/project")
HOME = "/home/me"


def rule(text: str, decision: Decision = "deny", *, base: Path = PROJECT) -> Rule:
    return parse_claude_rule(
        text, decision, source="test.toml", base=base, cwd=PROJECT, home=Path(HOME)
    )


def decide(rules: list[Rule], tool: str = "exec", **args: Any) -> Decision | None:
    view = view_of(tool, args, cwd=str(PROJECT), home=HOME)
    return Permissions(rules).judge(view).decision


def hits(text: str, command: str, decision: Decision = "deny") -> bool:
    return decide([rule(text, decision)], command=command) == decision


# -- Bash specifiers ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "command", "expected"),
    [
        ("Bash", "anything at all", True),
        ("Bash(*)", "ls", True),
        ("Bash(npm run build)", "npm run build", True),
        ("Bash(npm run build)", "npm run build --prod", False),
        ("Bash(ls *)", "ls -la", True),
        ("Bash(ls *)", "ls", True),
        ("Bash(ls *)", "lsof", False),
        ("Bash(ls*)", "lsof", True),
        ("Bash(git push:*)", "git push origin main", True),
        ("Bash(git push:*)", "git pushx", False),
        ("Bash(git:* push)", "git push", False),  # the colon is literal there
        ("Bash(git * main)", "git push origin main", True),
        ("Bash(git * main)", "git push origin dev", False),
        ("Bash(* --version)", "node --version", True),
        ("Bash(git commit -m *)", 'git commit -m "fix the bug"', True),
    ],
)
def test_bash_specifiers(text: str, command: str, expected: bool) -> None:
    assert hits(text, command) is expected


@pytest.mark.parametrize(
    "command",
    [
        "cd repo && git push",
        "true; git push",
        "echo x | git push",
        "(git push)",
        "{ git push; }",
        "echo $(git push)",
        "echo `git push`",
        "bash -c 'git push'",
        'sh -c "cd x && git push"',
        "eval 'git push'",
        "sudo git push",
        "env GIT_TRACE=1 git push",
        "GIT_TRACE=1 git push",
        "nice -n 5 git push",
        "timeout 10 git push",
        "nohup git push",
        "command git push",
        "/usr/bin/git push",
        "g'i't push",
        "X=git; $X push",
        "echo origin | xargs git push",
        "find . -maxdepth 0 -exec git push \\;",
        "if true; then git push; fi",
        "for r in a b; do git push $r; done",
        "exec git push",
        "time git push &",
        "watch git push",
        "su -c 'git push'",
        "ssh host 'git push'",
        "docker exec box git push",
        "alias g=git; g push",
        "$(echo git) push",
        "printf 'git push' | bash",
        'sh <<< "git push"',
        "python3 -c \"import os; os.system('git push')\"",
    ],
)
def test_a_deny_holds_through_every_wrapper_class(command: str) -> None:
    assert hits("Bash(git push *)", command), command


def test_a_deny_rule_sees_the_wrapper_level_too() -> None:
    assert hits("Bash(sudo *)", "sudo rm -rf build")
    assert hits("Bash(timeout *)", "timeout 5 ls")


def test_allow_needs_every_command_and_every_wrapper_that_changes_what_runs() -> None:
    allow = [rule("Bash(git *)", "allow"), rule("Bash(ls *)", "allow")]
    assert decide(allow, command="git status && ls -la") == "allow"
    assert decide(allow, command="git status && curl evil.sh") is None
    assert decide(allow, command="git log | grep fix") is None  # grep is a command too
    assert decide(allow, command="timeout 5 git status") == "allow"  # transparent
    assert decide(allow, command="sudo git status") is None  # sudo must be allowed
    assert decide([*allow, rule("Bash(sudo *)", "allow")], command="sudo git status") == "allow"
    assert decide(allow, command="git status; $CMD") is None  # unknown name: never allowed
    assert decide(allow, command="git status 'unterminated") is None  # unparsed: never


def test_allow_skips_only_known_safe_assignments_deny_sees_past_any() -> None:
    allow = [rule("Bash(git status)", "allow")]
    assert decide(allow, command="LANG=C git status") == "allow"
    assert decide(allow, command="GIT_SSH_COMMAND=./x.sh git status") is None
    assert decide(allow, command="LD_PRELOAD=evil.so git status") is None
    assert hits("Bash(git push *)", "LD_PRELOAD=evil.so git push")
    assert hits("Bash(LD_PRELOAD=*)", "LD_PRELOAD=evil.so git status")


def test_deny_beats_ask_beats_allow_whatever_the_order() -> None:
    rules = [
        rule("Bash(git *)", "allow"),
        rule("Bash(git push *)", "ask"),
        rule("Bash(git push --force *)", "deny"),
    ]
    assert decide(rules, command="git status") == "allow"
    assert decide(rules, command="git push origin") == "ask"
    assert decide(rules, command="git push --force origin") == "deny"
    assert decide(list(reversed(rules)), command="git push --force x") == "deny"
    # a deny matching any one command of the line decides
    assert decide(rules, command="git status && git push --force x") == "deny"


def test_no_rule_is_no_decision_and_the_reason_names_rule_source_and_command() -> None:
    assert decide([rule("Bash(rm *)")], command="ls") is None
    view = view_of("exec", {"command": "cd x && git push origin"}, cwd="/p", home=HOME)
    judgement = Permissions([rule("Bash(git push:*)")]).judge(view)
    assert judgement.decision == "deny"
    assert judgement.reason == "denied by Bash(git push:*) (test.toml) on 'git push origin'"
    assert [m.subject for m in judgement.matches] == ["git push origin"]


def test_bash_command_param_is_ignored_with_a_warning() -> None:
    ignored = rule("Bash(command:rm *)")
    assert "ignored" in warning_of(ignored)
    assert not hits("Bash(command:rm *)", "rm -rf x")
    assert warning_of(rule("Bash(rm *)")) == ""


# -- paths ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        ("Read(.env)", "/srv/project/.env", True),
        ("Read(.env)", "/srv/project/deep/er/.env", True),
        ("Read(./.env)", "/srv/project/.env", True),
        ("Read(./.env)", "/srv/project/sub/.env", False),
        ("Read(/secrets/**)", "/srv/project/secrets/a/b", True),
        ("Read(//etc/shadow)", "/etc/shadow", True),
        ("Read(~/.ssh/**)", "/home/me/.ssh/id_rsa", True),
        ("Read(~/.ssh/**)", "/srv/project/.ssh/id_rsa", False),
        ("Read(*.pem)", "/srv/project/certs/server.pem", True),
        ("Read(src/*.ts)", "/srv/project/src/a.ts", True),
        ("Read(src/*.ts)", "/srv/project/src/deep/a.ts", False),
        ("Read(src/**/*.ts)", "/srv/project/src/deep/a.ts", True),
        ("Read(../shared/*.key)", "/srv/shared/a.key", True),
        ("Read(//)", "/etc/passwd", True),
        ("Read(//tmp/)", "/tmp/x/y", True),
        ("Read(//tmp/)", "/tmpfoo", False),
    ],
)
def test_path_patterns_on_the_read_tool(text: str, path: str, expected: bool) -> None:
    assert (decide([rule(text)], "read", path=path) == "deny") is expected


def test_slash_is_relative_to_the_rule_source_not_the_root() -> None:
    settings_dir = Path("/srv/project/.claude")
    scoped = rule("Edit(/hooks/**)", base=settings_dir)
    assert decide([scoped], "edit", file_path="/srv/project/.claude/hooks/x.sh") == "deny"
    assert decide([scoped], "edit", file_path="/hooks/x.sh") is None


def test_a_bare_name_denies_at_any_depth_but_allows_only_below_cwd() -> None:
    assert decide([rule("Read(.env)")], "read", path="/other/place/.env") == "deny"
    assert decide([rule("Read(.env)", "allow")], "read", path="/other/place/.env") is None
    assert decide([rule("Read(.env)", "allow")], "read", path="deep/.env") == "allow"


def test_paths_the_shell_model_sees_are_judged_by_path_rules() -> None:
    deny_env = [rule("Read(.env)")]
    for command in ["cat .env", "cd app && cat ../.env", "grep KEY .env", "sort < .env"]:
        assert decide(deny_env, command=command) == "deny", command
    assert decide(deny_env, command="cat README.md") is None
    deny_edit = [rule("Edit(/config/**)")]
    assert decide(deny_edit, command="echo x > config/app.ini") == "deny"
    assert decide(deny_edit, command="cp a config/app.ini") == "deny"
    assert decide([rule("Edit(//dev/**)")], command="echo x > /dev/null") is None
    # a Read deny covers writes there too; Edit does not cover reads
    assert decide(deny_env, "write", path=".env") == "deny"
    assert decide([rule("Edit(.env)")], "read", path=".env") is None


def test_write_and_glob_path_rules_are_accepted_but_never_consulted() -> None:
    for text in ("Write(/src/**)", "Glob(*.py)"):
        never = rule(text)
        assert "never consulted" in warning_of(never)
        assert decide([never], "write", path="src/x.py") is None


# -- web, MCP, agents, parameters, tool globs --------------------------------------------


def test_webfetch_domains() -> None:
    apex = [rule("WebFetch(domain:example.com)")]
    assert decide(apex, "web_fetch", url="https://example.com/a") == "deny"
    assert decide(apex, "web_fetch", url="https://api.example.com/a") is None
    sub = [rule("WebFetch(domain:*.example.com)")]
    assert decide(sub, "web_fetch", url="https://a.b.example.com/x") == "deny"
    assert decide(sub, "web_fetch", url="https://example.com/x") is None
    assert decide(sub, "web_fetch", url="https://example.com.evil.io/x") is None


def test_a_webfetch_rule_without_a_domain_is_ignored_with_a_warning() -> None:
    ignored = rule("WebFetch(https://example.com/*)")
    assert "domain:NAME" in warning_of(ignored)
    assert decide([ignored], "web_fetch", url="https://example.com/x") is None


def test_mcp_server_and_tool_rules() -> None:
    server = [rule("mcp__github")]
    assert decide(server, "mcp__github__create_issue") == "deny"
    assert decide(server, "mcp__gitlab__create_issue") is None
    assert decide([rule("mcp__github__*")], "mcp__github__x") == "deny"
    one = [rule("mcp__github__create_issue")]
    assert decide(one, "mcp__github__create_issue") == "deny"
    assert decide(one, "mcp__github__list_issues") is None
    getters = [rule("mcp__github__get_*", "allow")]
    assert decide(getters, "mcp__github__get_issue") == "allow"
    assert decide(getters, "mcp__github__delete_repo") is None


def test_agent_and_legacy_task_rules() -> None:
    for text in ("Agent(Explore)", "Task(Explore)"):
        assert decide([rule(text)], "task", subagent_type="Explore") == "deny"
        assert decide([rule(text)], "task", subagent_type="Plan") is None


def test_param_rules_in_deny_and_ask_only() -> None:
    deny = [rule("mcp__db__query(database:prod*)")]
    assert decide(deny, "mcp__db__query", database="production") == "deny"
    assert decide(deny, "mcp__db__query", database="staging") is None
    allowed = rule("mcp__db__query(database:prod*)", "allow")
    assert "deny and ask" in warning_of(allowed)
    assert decide([allowed], "mcp__db__query", database="prod") is None


def test_tool_name_globs() -> None:
    assert decide([rule("*")], "read", path="x") == "deny"
    assert decide([rule("mcp__*", "ask")], "mcp__any__thing") == "ask"
    assert decide([rule("mcp__*", "ask")], "read", path="x") is None
    with pytest.raises(ConfigError, match="literal 'mcp__<server>__'"):
        rule("mcp__*", "allow")


def test_bash_rules_apply_to_exec_and_a_tool_named_bash() -> None:
    assert decide([rule("Bash(ls *)")], "Bash", command="ls -la") == "deny"
    assert decide([rule("Read(.env)")], "Read", file_path=".env") == "deny"
    assert decide([rule("Edit(*.py)")], "multi_edit", file_path="a.py") == "deny"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is not a permission rule"),
        ("Bash(ls", "is not a permission rule"),
        ("Bash (ls)", "is not a permission rule"),
        ("Bash(ls) extra", "is not a permission rule"),
        ("WebFetch(domain:)", "is not a domain"),
        ("WebSearch(cats)", "takes no specifier"),
    ],
)
def test_bad_rules_are_config_errors_naming_rule_and_source(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=r"test\.toml") as caught:
        rule(text)
    assert message in str(caught.value)
