"""``interpose explain`` run as a user runs it (a child process): the commands the shell
model finds, each rule and guard that matched, the decision, its exit code; nothing the
call names is run, hooks included.  And ``interpose check`` running
``[[permissions.tests]]``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CONFIG = """\
[permissions]
deny = ["Bash(git push:*)", "Read(./.env)"]
ask = ["Bash(npm publish:*)"]
allow = ["Bash(git status)", "Bash(ls *)"]
sources = ["team.rules"]
"""

TEAM_RULES = """\
prefix_rule(
    pattern = ["terraform", ["apply", "destroy"]],
    decision = "forbidden",
    justification = "infrastructure changes go through CI",
    match = ["terraform apply -auto-approve"],
)
"""

MARK_HOOK = """\
#!{python}
import pathlib, sys
pathlib.Path(sys.argv[0]).with_name("hook-ran").touch()
"""


def explain(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "interpose", "explain", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "interpose.toml").write_text(CONFIG)
    (tmp_path / "team.rules").write_text(TEAM_RULES)
    return tmp_path


def lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    assert not proc.stderr, proc.stderr
    return proc.stdout.splitlines()


def test_a_compound_command_is_denied_by_the_rule_on_the_command_that_runs(
    project: Path,
) -> None:
    proc = explain("--config", "interpose.toml", "--", "exec", "cd x && git push", cwd=project)
    assert proc.returncode == 1
    out = lines(proc)
    assert out[:5] == [
        "config: interpose.toml",
        'call: exec {"command": "cd x && git push"}',
        "commands (2):",
        "  cd x",
        "  git push",
    ]
    assert "  deny   Bash(git push:*)  (interpose.toml)  on 'git push'" in out
    assert "  builtin:command-safety-guard (priority 100): passed" in out
    assert out[-1] == (
        "decision: deny -- denied by Bash(git push:*) (interpose.toml) on 'git push'"
    )


def test_wrappers_are_shown_and_a_codex_rule_names_its_line(project: Path) -> None:
    proc = explain("--", "exec", "sudo terraform destroy -auto-approve", cwd=project)
    assert proc.returncode == 1
    out = lines(proc)
    assert out[0] == "config: interpose.toml"  # found in the working directory
    assert "  terraform destroy -auto-approve  [in: sudo terraform destroy -auto-approve]" in out
    shown = 'prefix_rule(pattern=["terraform", ["apply", "destroy"]], decision="forbidden")'
    assert any(
        line.startswith(f"  deny   {shown}  (team.rules:1)  on ")
        and line.endswith("-- infrastructure changes go through CI")
        for line in out
    ), out


@pytest.mark.parametrize(
    ("command", "code", "decision"),
    [
        ("git status && ls -la", 0, "allow"),
        ("ls && npm publish --tag next", 3, "ask"),
        ("git status && make", 0, "none"),  # make: no allow rule covers it
        ("echo hello", 0, "none"),
    ],
)
def test_exit_codes_say_the_decision(project: Path, command: str, code: int, decision: str) -> None:
    proc = explain("--", "exec", command, cwd=project)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert lines(proc)[-1].startswith(f"decision: {decision} -- ")


def test_a_guard_that_blocks_is_the_reason_when_no_rule_denies(project: Path) -> None:
    # the command is data here: explain never runs it
    proc = explain("--", "exec", "ls && rm -rf /", cwd=project)
    assert proc.returncode == 1
    out = lines(proc)
    assert any(
        line.startswith("  builtin:command-safety-guard (priority 100): blocked: ")
        and "fs-destruction" in line
        for line in out
    ), out
    assert out[-1].startswith("decision: deny -- builtin:command-safety-guard: ")


def test_file_tools_take_key_value_pairs_and_the_path_rule_and_guard_both_match(
    project: Path,
) -> None:
    proc = explain("--", "read", "path=.env", cwd=project)
    assert proc.returncode == 1
    out = lines(proc)
    assert f"reads: {project / '.env'}" in out
    assert f"  deny   Read(./.env)  (interpose.toml)  on '{project / '.env'}'" in out
    assert any(line.startswith("  builtin:security-audit (priority 99): blocked: ") for line in out)


def test_json_output(project: Path) -> None:
    proc = explain("--json", "--", "exec", '{"command": "timeout 5 git push origin"}', cwd=project)
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["config"] == "interpose.toml"
    assert data["commands"] == [
        {
            "text": "git push origin",
            "argv": ["git", "push", "origin"],
            "wrappers": [["timeout", "5", "git", "push", "origin"]],
        }
    ]
    assert data["rules"] == [
        {
            "decision": "deny",
            "rule": "Bash(git push:*)",
            "source": "interpose.toml",
            "subject": "git push origin",
            "justification": "",
        }
    ]
    assert data["permissions"]["decision"] == "deny"
    assert data["permissions"]["enforced"] is True
    assert [g["id"] for g in data["guards"]] == ["builtin:command-safety-guard"]
    assert data["decision"] == "deny"


def test_hooks_are_listed_not_run_and_shadow_rules_are_not_enforced(tmp_path: Path) -> None:
    hook = tmp_path / "hook.py"
    hook.write_text(MARK_HOOK.format(python=sys.executable))
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    (tmp_path / "interpose.toml").write_text(
        '[permissions]\nmode = "shadow"\ndeny = ["Bash(git push:*)"]\n'
        '[[hooks.commands]]\nevent = "tool.before"\ncommand = "./hook.py"\n'
    )
    proc = explain("--", "exec", "git push", cwd=tmp_path)
    out = lines(proc)
    assert proc.returncode == 0
    assert any(": not run: out of process" in line for line in out), out
    assert any(line.startswith("rules decide: deny (") and "[not enforced" in line for line in out)
    assert out[-1] == "decision: none -- the rules would decide deny but are not enforced"
    assert not (tmp_path / "hook-ran").exists()


def test_the_decision_follows_the_order_of_tool_before(tmp_path: Path) -> None:
    # the tool filter (priority 120) runs before the rules (110): it is what blocks
    (tmp_path / "interpose.toml").write_text(
        '[hooks.builtins.tool-filter]\ndeny = ["exec"]\n'
        '[permissions]\ndeny = ["Bash(git push:*)"]\n'
    )
    proc = explain("--json", "--", "exec", "git push", cwd=tmp_path)
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["permissions"]["decision"] == "deny"
    assert data["guards"][0]["id"] == "builtin:tool-filter"
    assert data["guards"][0]["outcome"] == "blocked"
    assert data["reason"].startswith("builtin:tool-filter: ")


def test_a_guard_rule_that_asks_is_the_decision_even_where_a_rule_allows(project: Path) -> None:
    # "git status" is allowed by the project's rules; the guard asks for the cloud delete
    proc = explain("--", "exec", "git status && aws s3 rm --recursive s3://prod", cwd=project)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    out = lines(proc)
    assert any(
        line.startswith("  builtin:command-safety-guard.ask (priority 100): asks: ")
        and "cloud-destruction" in line
        for line in out
    ), out
    assert out[-1].startswith("decision: ask -- builtin:command-safety-guard.ask: ")
    # a block later in the line is the decision, and the approval step is never reached
    proc = explain("--", "exec", "aws s3 rm --recursive s3://prod; rm -rf /", cwd=project)
    assert proc.returncode == 1
    assert not any("command-safety-guard.ask" in line for line in lines(proc))


def test_without_a_config_the_default_guards_judge(tmp_path: Path) -> None:
    proc = explain("--", "exec", "git push", cwd=tmp_path)
    assert proc.returncode == 0
    out = lines(proc)
    assert out[0] == "config: (none: the default guards, no rules)"
    assert "rules matched: none" in out


def check(config: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "interpose", "check", str(config)],
        cwd=config.parent,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


TESTS = """
[[permissions.tests]]
tool = "exec"
command = "cd repo && git push origin main"
expect = "deny"

[[permissions.tests]]
tool = "exec"
command = "git status && ls -la"
expect = "allow"

[[permissions.tests]]
tool = "read"
args = { path = ".env" }
expect = "deny"

[[permissions.tests]]
tool = "exec"
command = "echo hi"
expect = "none"
"""


def test_check_runs_the_inline_tests(project: Path) -> None:
    config = project / "interpose.toml"
    config.write_text(CONFIG + TESTS)
    proc = check(config)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.splitlines()
    assert out[0] == f"{config}: OK (4 permission tests passed)"
    assert out[-3:] == [
        "permission rules: 6",
        f"  {config}: 2 deny, 1 ask, 2 allow",
        "  team.rules: 1 deny",  # as the config names it
    ]


def test_check_fails_on_a_mismatch_one_line_per_failing_test(project: Path) -> None:
    config = project / "interpose.toml"
    config.write_text(
        CONFIG + TESTS + '\n[[permissions.tests]]\ntool = "exec"\ncommand = "ls && npm publish"\n'
        'expect = "allow"\n'
        '\n[[permissions.tests]]\ntool = "exec"\ncommand = "sudo terraform apply"\n'
        'expect = "ask"\n'
    )
    proc = check(config)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"interpose: {config}: permissions.tests[4]: exec 'ls && npm publish': expected "
        f"allow, got ask (approval asked by Bash(npm publish:*) ({config}) on "
        "'npm publish')",
        f"interpose: {config}: permissions.tests[5]: exec 'sudo terraform apply': expected "
        'ask, got deny (denied by prefix_rule(pattern=["terraform", ["apply", "destroy"]], '
        "decision=\"forbidden\") (team.rules:1) on 'terraform apply': "
        "infrastructure changes go through CI)",
    ]
