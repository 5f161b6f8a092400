"""The guards remember their verdicts: a repeated command or path is judged once per
guard, the memory is bounded, and a verdict never leaks between guards with different
rules.  The analyses are counted by wrapping the module functions the guards call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import interpose.middleware.builtins.command_safety as command_safety
import interpose.middleware.builtins.security_audit.guard as security_audit
from interpose import ToolBeforeInput, ToolBeforeOutput
from interpose.middleware.builtins import CommandSafetyGuard, SecurityAudit
from interpose.middleware.builtins.security_audit import normalize_path


class Counted:
    """A module function, wrapped to count its calls by first argument."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.calls: list[Any] = []

    def __call__(self, first: Any, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(first)
        return self.fn(first, *args, **kwargs)


@pytest.fixture
def analyses(monkeypatch: pytest.MonkeyPatch) -> Counted:
    command_safety.forget_analyses()  # what the permission rules read (shared per process)
    counted = Counted(command_safety._analyze)
    monkeypatch.setattr(command_safety, "_analyze", counted)
    return counted


@pytest.fixture
def path_checks(monkeypatch: pytest.MonkeyPatch) -> Counted:
    counted = Counted(normalize_path)  # as the guard module looks it up
    monkeypatch.setattr(security_audit, "normalize_path", counted)
    return counted


def judge(guard: Any, tool: str, **args: Any) -> str:
    """The guard called as the pipeline calls it: its block reason, or "" (allowed)."""
    out = ToolBeforeOutput(args=args)
    guard(ToolBeforeInput(tool_name=tool), out)
    return out.block_reason if out.block else ""


def test_a_repeated_command_is_analyzed_once(analyses: Counted) -> None:
    guard = CommandSafetyGuard()
    verdicts = [judge(guard, "exec", command=c) for c in ["ls -la src", "rm -rf /"] * 3]
    assert verdicts[0::2] == [""] * 3
    assert verdicts[1::2] == [verdicts[1]] * 3
    assert verdicts[1].startswith("command-safety-guard: fs-destruction: ")
    assert analyses.calls == ["ls -la src", "rm -rf /"]
    # an argv list is a command of its own, remembered as a tuple; so is analyze()'s
    for _ in range(3):
        assert judge(guard, "exec", command=["git", "status"]) == ""
        assert guard.analyze(["git", "status"]) is None
    assert guard.analyze("rm -rf /") == command_safety.analyze_command("rm -rf /")
    assert analyses.calls[2:] == [("git", "status"), "rm -rf /"]  # the last: analyze_command


def test_the_memory_is_bounded_least_recently_used_first_out(analyses: Counted) -> None:
    guard = CommandSafetyGuard()
    assert CommandSafetyGuard.CACHE_SIZE == 1024
    commands = [f"echo {i}" for i in range(1025)]
    for command in commands:
        judge(guard, "exec", command=command)
    assert len(analyses.calls) == 1025
    judge(guard, "exec", command=commands[-1])  # still remembered
    assert len(analyses.calls) == 1025
    judge(guard, "exec", command=commands[0])  # the oldest was let go
    assert analyses.calls[-1] == commands[0]
    assert len(analyses.calls) == 1026

    class Small(CommandSafetyGuard):
        CACHE_SIZE = 2

    small = Small()
    for command in ["echo a", "echo b", "echo a", "echo c", "echo a", "echo b"]:
        judge(small, "exec", command=command)
    # "echo a" was used again before "echo c" came: "echo b" went, then came back
    assert analyses.calls[1026:] == ["echo a", "echo b", "echo c", "echo b"]


def test_guards_with_different_rules_share_nothing(analyses: Counted) -> None:
    strict = CommandSafetyGuard(extra_deny=[r"^ls\b"])
    lenient = CommandSafetyGuard(allow=[r"^rm -rf build$"])
    default = CommandSafetyGuard()
    for _ in range(2):
        assert judge(strict, "exec", command="ls").startswith("command-safety-guard: extra-deny")
        assert judge(lenient, "exec", command="ls") == ""
        assert judge(default, "exec", command="rm -rf build") == ""
        assert judge(lenient, "exec", command="rm -rf /").startswith("command-safety-guard: ")
        assert judge(strict, "exec", command="rm -rf /").startswith("command-safety-guard: ")
    # each guard analyzed each of its commands once
    assert analyses.calls == ["ls", "ls", "rm -rf build", "rm -rf /", "rm -rf /"]


def test_verdicts_that_depend_on_more_than_the_command_are_not_remembered(
    analyses: Counted,
) -> None:
    guard = CommandSafetyGuard()
    # too-complex depends on the clock and the stack: judged again every time
    exploding = "x='rm '; " + 'x="$x$x"; ' * 40 + "$x -rf /"
    reasons = {judge(guard, "exec", command=exploding) for _ in range(2)}
    assert len(reasons) == 1
    assert next(iter(reasons)).startswith("command-safety-guard: too-complex: ")
    # a long command is rarely repeated: not kept (the cache's memory stays bounded)
    long = "echo " + "a" * 5000
    for _ in range(2):
        assert judge(guard, "exec", command=long) == ""
    assert analyses.calls == [exploding, exploding, long, long]


def test_a_repeated_path_is_checked_once_and_home_is_part_of_the_key(
    path_checks: Counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    audit = SecurityAudit()
    monkeypatch.setenv("HOME", "/home/alice")
    for _ in range(3):
        assert judge(audit, "read", path="src/app.py") == ""
        assert "'/home/alice/.ssh/id_rsa'" in judge(audit, "read", path="~/.ssh/id_rsa")
    assert path_checks.calls == ["src/app.py", "~/.ssh/id_rsa"]
    # reading and writing are judged apart (writes have stricter rules)
    assert judge(audit, "write", path="src/app.py") == ""
    assert len(path_checks.calls) == 3
    # ~ follows $HOME: a new home is a new verdict, naming the new path
    monkeypatch.setenv("HOME", "/home/bob")
    assert "'/home/bob/.ssh/id_rsa'" in judge(audit, "read", path="~/.ssh/id_rsa")
    assert len(path_checks.calls) == 4
    # a guard with other rules remembers its own verdicts
    allowing = SecurityAudit(allow=[r"/\.ssh/id_rsa$"])
    assert judge(allowing, "read", path="~/.ssh/id_rsa") == ""
    assert "'/home/bob/.ssh/id_rsa'" in judge(audit, "read", path="~/.ssh/id_rsa")
    assert len(path_checks.calls) == 5
