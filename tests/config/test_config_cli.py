"""``interpose check`` and ``interpose run-hook-test`` on real files: what they print and
how they exit."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from interpose.cli import main

FILES = Path(__file__).parent / "files"
FULL = FILES / "full.toml"
HOOK_TEST = FILES / "run_hook_test.toml"


def rows(out: str) -> list[list[str]]:
    """The stack table of ``check``'s output, split into cells (header excluded)."""
    lines = out.split("stack (execution order):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return [re.split(r"\s{2,}", line.strip()) for line in lines[1:]]


def test_check_prints_the_stack_in_execution_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(FULL)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith(f"{FULL}: OK\n")
    assert (
        "defaults: interceptor_timeout=5s approval_timeout=60s observer_timeout=0.5s "
        "max_retries=0\n" in out
    )
    assert rows(out) == [
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
            "99",
            "builtin:security-audit",
            "read, write, edit, apply_patch",
            "block",
            "enforce",
            "builtin",
        ],
        [
            "tool",
            "tool.before",
            "50",
            "process:review_gate:before_tool",
            "*",
            "block",
            "enforce",
            "process:review_gate",
        ],
        [
            "tool",
            "tool.before",
            "0",
            "command:hooks/check.sh",
            "allow exec, group:fs; deny web_fetch",
            "block",
            "enforce",
            "command",
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
        [
            "tool",
            "tool.approve",
            "50",
            "process:review_gate:approve_tool",
            "*",
            "block",
            "enforce",
            "process:review_gate",
        ],
    ]
    assert "process hooks:\n  review_gate  python3 hooks/review_gate.py\n" in out
    assert (
        "observers:\n  process:review_gate  tool_exec_end, tool_exec_start (overflow=block)\n"
        in out
    )
    assert out.endswith("tracing: tool\n")


def test_check_shows_middleware_and_other_stages_in_stage_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "interpose.toml"
    config.write_text(
        """
[hooks.builtins.command-safety-guard]
enabled = false
[hooks.builtins.security-audit]
enabled = false
[hooks.builtins.redact-secrets]
tools = "group:web"
[hooks.builtins.tool-filter]
allow = ["group:fs", "^mcp_"]
[observers.audit]
path = "audit.jsonl"
[tracing]
level = "interceptor"
content = true
"""
    )
    assert main(["check", str(config)]) == 0
    out = capsys.readouterr().out
    assert rows(out) == [
        ["tool", "tool.before", "120", "builtin:tool-filter", "*", "block", "enforce", "builtin"],
        [
            "tool",
            "tool.after",
            "100",
            "builtin:redact-secrets",
            "group:web",
            "block",
            "enforce",
            "builtin",
        ],
    ]
    assert f"  audit-log {tmp_path / 'audit.jsonl'}  every event (overflow=block)\n" in out
    assert not (tmp_path / "audit.jsonl").exists()  # check opens nothing
    assert out.endswith("tracing: interceptor, content recorded (redacted)\n")


def test_check_on_an_invalid_file_prints_the_field_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = FILES / "invalid" / "wrong_type.toml"
    assert main(["check", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == f"interpose: {path}: hooks.processes.gate.priority: expected int, got str\n"


def test_the_installed_command_checks_a_file() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "interpose.cli", "check", "files/invalid/bad_on_error.toml"],
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 1
    assert proc.stderr == (
        "interpose: files/invalid/bad_on_error.toml: hooks.processes.gate.on_error: "
        "expected one of 'block', 'skip', 'raise', got 'explode'\n"
    )


def test_run_hook_test_shows_the_hook_that_blocks(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "run-hook-test",
            str(HOOK_TEST),
            "--tool",
            "bash",
            "--args",
            '{"command": "git push origin main"}',
            "--agent",
            "coder",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith('call: bash {"command": "git push origin main"} (agent coder)\n')
    assert re.search(r"\n  tool\.before  log-it   continue  \d+\.\d\d ms\n", out)
    assert re.search(r"\n  tool\.before  no-push  block     \d+\.\d\d ms\n", out)
    assert (
        "events:\n"
        "  tool_exec_skipped: blocked by no-push: check.sh: pushes go through CI\n"
        "  tool_exec_end: status=blocked by no-push\n" in out
    )
    assert "the tool (a stub) did not run\n" in out
    assert out.endswith(
        'result: blocked (decided by no-push) {"status": "blocked", "tool": "exec", '
        '"reason": "check.sh: pushes go through CI"}\n'
    )


def test_run_hook_test_shows_a_call_that_passes(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run-hook-test", str(HOOK_TEST), "--tool", "exec", "--args", '{"command": "ls"}']
    assert main(argv) == 0
    out = capsys.readouterr().out
    decisions = re.findall(r"^  tool\.before  (\S+)\s+(\S+)", out, re.MULTILINE)
    assert decisions == [("log-it", "continue"), ("no-push", "continue")]
    assert "events:\n  tool_exec_start: exec\n  tool_exec_end: status=ok\n" in out
    assert 'the tool (a stub) ran with: {"command": "ls"}\n' in out
    assert out.endswith('result: ok {"echo": {"command": "ls"}}\n')


def test_run_hook_test_starts_the_process_hooks(capsys: pytest.CaptureFixture[str]) -> None:
    # the DESIGN example: review_gate.py is a real child, started when the pipeline is
    # entered; it refuses sudo
    argv = ["run-hook-test", str(FULL), "--tool", "exec", "--args", '{"command": "sudo ls"}']
    assert main(argv) == 0
    out = capsys.readouterr().out
    decisions = re.findall(r"^  (tool\.\w+)\s+(\S+)\s+(\S+)", out, re.MULTILINE)
    assert decisions == [
        ("tool.before", "builtin:command-safety-guard", "continue"),
        ("tool.before", "process:review_gate:before_tool", "block"),
    ]
    assert out.endswith(
        'result: blocked (decided by process:review_gate:before_tool) {"status": "blocked", '
        '"tool": "exec", "reason": "review_gate: no sudo"}\n'
    )


def test_run_hook_test_shows_an_approver_deny(capsys: pytest.CaptureFixture[str]) -> None:
    args = '{"path": "/etc/hosts", "content": ""}'
    assert main(["run-hook-test", str(FULL), "--tool", "write", "--args", args]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^  tool\.approve  process:review_gate:approve_tool  deny ", out, re.M)
    assert "tool_exec_skipped: denied by process:review_gate:approve_tool" in out


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["--args", "{not json"], 2, "interpose run-hook-test: --args is not JSON: "),
        (["--args", "[1, 2]"], 2, "interpose run-hook-test: --args must be a JSON object"),
    ],
)
def test_run_hook_test_refuses_bad_arguments(
    capsys: pytest.CaptureFixture[str], argv: list[str], code: int, message: str
) -> None:
    assert main(["run-hook-test", str(HOOK_TEST), "--tool", "exec", *argv]) == code
    assert capsys.readouterr().err.startswith(message)


def test_run_hook_test_on_an_invalid_file_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    path = FILES / "invalid" / "negative_timeout.toml"
    assert main(["run-hook-test", str(path), "--tool", "exec"]) == 1
    assert capsys.readouterr().err == (
        f"interpose: {path}: hooks.commands[0].timeout_ms: expected int >= 1, got -5\n"
    )
