"""Codex ``.rules`` files, written as Codex users write them, loaded unchanged and judged
on what the shell really runs; ``match``/``not_match`` examples checked at load; the
file is read, never run."""

from __future__ import annotations

from pathlib import Path

import pytest

from interpose.errors import ConfigError
from interpose.permissions.codex import codex_rules
from interpose.permissions.engine import Permissions
from interpose.permissions.model import Decision
from interpose.permissions.view import view_of

# as ~/.codex/rules/default.rules grows: approvals appended one per line by the TUI, and
# hand-written rules with alternatives, justifications, examples and trailing commas
DEFAULT_RULES = """\
# Codex appends the commands you approve "for this session and later" here.
prefix_rule(pattern=["gh", "pr", "view"], decision="allow")
prefix_rule(pattern=["npm", "test"])

# Network writes need a person.
prefix_rule(
    pattern = ["git", ["push", "fetch"]],   # alternatives: push or fetch
    decision = "prompt",
    justification = "talks to the remote",
    match = [
        "git push origin main",
        ["git", "fetch", "--all"],
    ],
    not_match = ["git status", "git pull"],
)

prefix_rule(
    pattern = ["rm"],
    decision = "forbidden",
    justification = "Use `trash` instead of `rm`.",
    match = ["rm -rf build", "rm x"],
)

prefix_rule(
    pattern = ["git"],
    decision = "allow",
    not_match = ["gitk"],
)

prefix_rule(
    pattern = ["npm", "run", "build"],
    decision = "prompt",
    justification = "Production builds require explicit approval",
    match = ["npm run build"],
    not_match = ["npm run dev"],
)

host_executable(
    name = "git",
    paths = ["/usr/bin/git", "~/.local/bin/git"],
)
"""

CWD, HOME = "/srv/project", "/home/me"


@pytest.fixture
def rules_file(tmp_path: Path) -> Path:
    path = tmp_path / "default.rules"
    path.write_text(DEFAULT_RULES)
    return path


def decide(path: Path, command: str) -> Decision | None:
    view = view_of("exec", {"command": command}, cwd=CWD, home=HOME)
    return Permissions(codex_rules(path)).judge(view).decision


def test_the_file_loads_each_rule_with_its_line(rules_file: Path) -> None:
    rules = codex_rules(rules_file)
    shown = {(r.text, r.decision, r.source.rsplit(":", 1)[1]) for r in rules}
    assert ('prefix_rule(pattern=["gh", "pr", "view"], decision="allow")', "allow", "2") in shown
    assert ('prefix_rule(pattern=["npm", "test"])', "allow", "3") in shown  # allow by default
    assert ('prefix_rule(pattern=["git", ["push", "fetch"]], decision="prompt")', "ask", "6") in (
        shown
    )
    assert ('prefix_rule(pattern=["rm"], decision="forbidden")', "deny", "17") in shown
    assert all(r.source.startswith(str(rules_file) + ":") for r in rules)
    forbidden = next(r for r in rules if r.decision == "deny")
    assert forbidden.justification == "Use `trash` instead of `rm`."


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # as Codex decides a single command
        ("git push origin main", "ask"),
        ("git fetch --all", "ask"),
        ("git status", "allow"),
        ("git status > status.txt", None),  # writes a file: Codex judges it whole
        ("git status > /dev/null", "allow"),
        ("gh pr view 7888 --json title,body", "allow"),
        ("gh pr list", None),  # no rule: the application decides
        ("npm test", "allow"),
        ("npm run build", "ask"),
        ("npm run dev", None),
        ("rm -rf build", "deny"),
        # forbidden > prompt > allow, whatever the order and the length of the prefixes
        ("git status && rm x", "deny"),
        ("git status; git push", "ask"),
        # through what a string match misses: the shell runs git push in each
        ("cd repo && git push", "ask"),
        ("env GIT_TRACE=1 git push", "ask"),
        ("GIT_TRACE=1 git push", "ask"),
        ("sudo git push", "ask"),
        ("bash -c 'git push --force'", "ask"),
        ('sh -c "cd /tmp && git fetch"', "ask"),
        ("echo $(git push)", "ask"),
        ("timeout 60 git push", "ask"),
        ("nohup git push &", "ask"),
        ("find . -name '*.o' -exec rm {} +", "deny"),
        ("ls | xargs rm", "deny"),
        ("eval 'rm -rf build'", "deny"),
        ("/bin/rm -rf build", "deny"),
        ("\\rm -rf build", "deny"),
        # an allow covers a line only when it covers every command in it
        ("git status | less", None),
        ("gh pr view 1 && npm test", "allow"),
        ("gh pr view 1 && curl https://x.example", None),
    ],
)
def test_decides_as_codex_on_what_the_shell_runs(
    rules_file: Path, command: str, expected: Decision | None
) -> None:
    assert decide(rules_file, command) == expected


def test_a_failing_match_example_refuses_the_file_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "team.rules"
    path.write_text(
        'prefix_rule(pattern=["git", "status"])\n'
        "\n"
        "prefix_rule(\n"
        '    pattern = ["gh", "pr", ["view", "list"]],\n'
        '    decision = "prompt",\n'
        '    match = ["gh pr view 12", "gh pr checkout 12"],\n'
        ")\n"
    )
    with pytest.raises(ConfigError) as caught:
        codex_rules(path)
    assert str(caught.value) == (
        f"{path}:3: match example 'gh pr checkout 12' does not match the rule"
    )


def test_a_failing_not_match_example_refuses_the_file(tmp_path: Path) -> None:
    path = tmp_path / "team.rules"
    path.write_text(
        'prefix_rule(pattern=["git"], decision="forbidden", not_match=[["git", "status"]])\n'
    )
    with pytest.raises(ConfigError, match=r"team\.rules:1: not_match example 'git status' "):
        codex_rules(path)


def test_host_executable_paths_are_checked_like_codex(tmp_path: Path) -> None:
    path = tmp_path / "hosts.rules"
    path.write_text('host_executable(name="git", paths=["/usr/bin/gitk"])\n')
    with pytest.raises(ConfigError, match="must have basename 'git'"):
        codex_rules(path)
    path.write_text('host_executable(name="git", paths=["bin/git"])\n')
    with pytest.raises(ConfigError, match="absolute or ~/"):
        codex_rules(path)


def test_examples_see_the_host_executables_of_the_whole_file(tmp_path: Path) -> None:
    # Codex checks examples once the file is read: a host_executable after the rule
    # already limits which absolute paths fall back to the rule's base name
    path = tmp_path / "hosts.rules"
    path.write_text(
        "prefix_rule(\n"
        '    pattern = ["git", "status"],\n'
        '    match = ["/usr/bin/git status"],\n'
        '    not_match = ["/opt/evil/git status"],\n'
        ")\n"
        'host_executable(name = "git", paths = ["/usr/bin/git"])\n'
    )
    assert [r.decision for r in codex_rules(path)] == ["allow"]


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("git status", "allow"),
        ("/usr/bin/git status", "allow"),  # a listed path falls back to the git rule
        ("/opt/evil/git status", None),  # an unlisted one does not (Codex)
        ("./git status", None),  # nor a relative one
        ("sudo /opt/evil/git status", None),
        ("/bin/ls -la", "allow"),  # no host_executable for ls: any absolute path
        ("./ls", None),
        ("/opt/x/rm -rf build", "deny"),  # forbidden holds for every path
        ("./rm -rf build", "deny"),
        ("bash -c '/tmp/rm -rf build'", "deny"),
    ],
)
def test_host_executable_narrows_allow_rules_only(
    tmp_path: Path, command: str, expected: Decision | None
) -> None:
    path = tmp_path / "hosts.rules"
    path.write_text(
        'prefix_rule(pattern=["git", "status"])\n'
        'prefix_rule(pattern=["ls"])\n'
        'prefix_rule(pattern=["rm"], decision="forbidden")\n'
        'host_executable(name="git", paths=["/usr/bin/git", "/opt/homebrew/bin/git"])\n'
    )
    assert decide(path, command) == expected


def test_names_assigned_in_the_file_may_be_used(tmp_path: Path) -> None:
    path = tmp_path / "named.rules"
    path.write_text(
        'REMOTE = ["push", "fetch", "pull"]\n'
        'prefix_rule(pattern=["git", REMOTE], decision="prompt", match=["git pull"])\n'
    )
    assert decide(path, "git pull --rebase") == "ask"


def test_network_rules_judge_the_domains_a_call_fetches(tmp_path: Path) -> None:
    path = tmp_path / "net.rules"
    path.write_text('network_rule(host="Pastebin.com", protocol="https", decision="deny")\n')
    rules = codex_rules(path)
    view = view_of("web_fetch", {"url": "https://pastebin.com/raw/x"}, cwd=CWD, home=HOME)
    assert Permissions(rules).judge(view).decision == "deny"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('prefix_rule(pattern=[], decision="allow")\n', "pattern must be a non-empty list"),
        ('prefix_rule(pattern=["git"], decision="deny")\n', "decision must be allow, prompt"),
        ('prefix_rule(pattern=["git", []])\n', "a pattern element must be a string or"),
        ('prefix_rule(pattern=["git"], justification="  ")\n', "justification must be"),
        ('prefix_rule(pattern=["git"], reviewer="user")\n', "has no argument 'reviewer'"),
        ("prefix_rule(decision='allow')\n", "missing 'pattern'"),
        ('load("//x.star", "rules")\n', "unknown call load()"),
        ('for x in ["a"]:\n    prefix_rule(pattern=[x])\n', "only prefix_rule(...)"),
        ('prefix_rule(pattern=["git"] + ["push"])\n', "expected a string or a list"),
        ("prefix_rule(pattern=[CMD])\n", "'CMD' is not defined"),
        ('prefix_rule(pattern=["git"], match=["git \'unclosed"])\n', "invalid shell syntax"),
        ('prefix_rule(pattern=["git"]\n', "invalid syntax"),
        ('prefix_rule(pattern=["a\x00"])\n', "invalid syntax"),
        ("prefix_rule(pattern=" + "[" * 5000 + "]" * 5000 + ")\n", "invalid syntax"),
    ],
)
def test_what_is_not_a_rules_file_is_refused_naming_the_line(
    tmp_path: Path, text: str, problem: str
) -> None:
    path = tmp_path / "bad.rules"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        codex_rules(path)
    assert str(caught.value).startswith(f"{path}")
    assert problem in str(caught.value)


def test_the_file_is_read_never_run(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = tmp_path / "evil.rules"
    path.write_text(f"__import__('pathlib').Path({str(marker)!r}).touch()\n")
    with pytest.raises(ConfigError, match="unknown call"):
        codex_rules(path)
    path.write_text(f"prefix_rule(pattern=[open({str(marker)!r}, 'w').name])\n")
    with pytest.raises(ConfigError, match="expected a string"):
        codex_rules(path)
    assert not marker.exists()
