"""Permission rules in a real Pipeline: a deny blocks before the tool runs, an ask goes
to the approval path and its answer holds, shadow mode only records; a config file's
``[permissions]`` table loads and decides; a Claude Code hook's ``if`` scopes a real
command hook script."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import Approval, ApprovalRequest, Pipeline, ToolResult
from interpose.config import ConfigFileError
from interpose.external.command import default_tool_mapping
from interpose.middleware.builtins import command_safety
from interpose.middleware.claude_code import ClaudeSettings
from interpose.permissions.claude import parse_claude_rule
from interpose.permissions.conditions import hook_condition
from interpose.permissions.engine import Permissions
from interpose.permissions.policy import PermissionPolicy

LIMIT = 20.0


def permissions(tmp_path: Path, **lists: list[str]) -> Permissions:
    rules = [
        parse_claude_rule(text, decision, source="test", base=tmp_path, cwd=tmp_path)  # type: ignore[arg-type]
        for decision, texts in lists.items()
        for text in texts
    ]
    return Permissions(rules)


async def call(pipe: Pipeline, command: str, ran: list[str]) -> ToolResult:
    def tool(args: dict[str, Any]) -> str:
        ran.append(args["command"])
        return "done"

    with anyio.fail_after(LIMIT):
        return await pipe.call_tool("exec", {"command": command}, call=tool)


async def test_a_deny_blocks_before_the_tool_runs(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    PermissionPolicy(permissions(tmp_path, deny=["Bash(git push:*)"])).install(pipe)
    assert [r.id for r in pipe.registry.list()] == ["permissions"]  # no ask rule: no approver
    ran: list[str] = []
    result = await call(pipe, "cd repo && env X=1 git push origin", ran)
    assert result.status == "blocked"
    assert ran == []
    assert "permissions: denied by Bash(git push:*) (test) on 'git push origin'" in str(
        result.output
    )
    assert (await call(pipe, "git status", ran)).status == "ok"
    assert ran == ["git status"]


async def test_an_ask_goes_to_the_human_approval_handler_and_its_answer_holds(
    tmp_path: Path,
) -> None:
    asked: list[tuple[ApprovalRequest, str]] = []
    answers = iter([Approval.allow(), Approval.deny("not today")])

    def human(request: ApprovalRequest, reason: str) -> Approval:
        asked.append((request, reason))
        return next(answers)

    pipe = Pipeline(builtins=False, human_approval=human)
    PermissionPolicy(permissions(tmp_path, ask=["Bash(rm *)"], allow=["Bash(ls *)"])).install(pipe)
    ran: list[str] = []
    assert (await call(pipe, "ls -la", ran)).status == "ok"
    assert asked == []  # an allow asks nobody
    assert (await call(pipe, "sudo rm -rf build", ran)).status == "ok"  # allowed by the human
    refused = await call(pipe, "xargs rm < list.txt", ran)
    assert refused.status == "denied"
    assert "not today" in str(refused.output)
    assert ran == ["ls -la", "sudo rm -rf build"]
    assert [r.args["command"] for r, _ in asked] == ["sudo rm -rf build", "xargs rm < list.txt"]
    assert all("approval asked by Bash(rm *) (test)" in reason for _, reason in asked)


async def test_an_approver_registered_after_the_rules_sees_an_allowed_ask(
    tmp_path: Path,
) -> None:
    pipe = Pipeline(builtins=False, human_approval=lambda request, reason: True)
    PermissionPolicy(permissions(tmp_path, ask=["WebFetch(domain:*.example.com)"])).install(pipe)
    seen: list[str] = []

    @pipe.approver
    def reviewer(request: ApprovalRequest) -> Approval:
        seen.append(request.args["url"])
        return Approval.deny("reviewer says no")

    with anyio.fail_after(LIMIT):
        result = await pipe.call_tool(
            "web_fetch", {"url": "https://api.example.com/x"}, call=lambda a: "page"
        )
    assert result.status == "denied"
    assert seen == ["https://api.example.com/x"]


async def test_shadow_mode_records_and_lets_the_call_run(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    decisions: list[Any] = []
    recorded = anyio.Event()

    def observe(event: Any) -> None:
        decisions.append(event)
        recorded.set()

    pipe.subscribe(observe, events=["shadow_decision"])
    policy = PermissionPolicy(permissions(tmp_path, deny=["Bash(git push *)"]), mode="shadow")
    policy.install(pipe)
    ran: list[str] = []
    async with pipe:
        result = await call(pipe, "bash -c 'git push'", ran)
        with anyio.fail_after(LIMIT):
            await recorded.wait()
    assert result.status == "ok"
    assert ran == ["bash -c 'git push'"]
    assert [(d.interceptor_id, d.decision, d.would_block) for d in decisions] == [
        ("permissions", "block", True)
    ]
    assert "Bash(git push *)" in decisions[0].reason


async def test_a_config_file_with_permissions_loads_and_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "interpose.toml").write_text(
        "[permissions]\n"
        'deny = ["Bash(git push:*)", "Read(/.env)"]\n'
        'ask = ["Bash(rm *)"]\n'
        'allow = ["Bash(git *)", "Write(notes/**)"]\n'
    )
    monkeypatch.chdir(tmp_path)
    pipe = Pipeline.from_config(tmp_path / "interpose.toml")
    pipe.human_approval = lambda request, reason: False
    ran: list[str] = []
    assert (await call(pipe, "git status", ran)).status == "ok"
    pushed = await call(pipe, "git status && git push", ran)
    assert pushed.status == "blocked"
    assert str(tmp_path / "interpose.toml") in str(pushed.output)
    assert (await call(pipe, "cat .env", ran)).status == "blocked"
    assert (await call(pipe, "rm -rf build", ran)).status == "denied"
    assert ran == ["git status"]


async def test_a_shadow_table_records_and_blocks_nothing(tmp_path: Path) -> None:
    (tmp_path / "interpose.toml").write_text(
        '[permissions]\nmode = "shadow"\ndeny = ["Bash(git push *)"]\nask = ["Bash(rm *)"]\n'
    )
    pipe = Pipeline.from_config(tmp_path / "interpose.toml")
    modes = {r.id: r.mode for r in pipe.registry.list() if r.id.startswith("permissions")}
    assert modes == {"permissions": "shadow", "permissions.ask": "shadow"}
    ran: list[str] = []
    assert (await call(pipe, "git push", ran)).status == "ok"
    assert ran == ["git push"]


def test_a_bad_rule_in_the_config_names_its_field(tmp_path: Path) -> None:
    (tmp_path / "interpose.toml").write_text('[permissions]\nallow = ["mcp__*"]\n')
    with pytest.raises(ConfigFileError, match=r"permissions\.allow\[0\]"):
        Pipeline.from_config(tmp_path / "interpose.toml")


def test_a_disabled_table_registers_nothing(tmp_path: Path) -> None:
    (tmp_path / "interpose.toml").write_text(
        '[permissions]\nenabled = false\ndeny = ["Bash(ls *)"]\n'
    )
    pipe = Pipeline.from_config(tmp_path / "interpose.toml")
    assert not [r for r in pipe.registry.list() if r.id.startswith("permissions")]


# -- the "if" field of a Claude Code hook ----------------------------------------------------

MARKER_HOOK = """\
#!{python}
import json, os, sys
event = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "marker.jsonl"), "a") as f:
    f.write(json.dumps(event["tool_input"]) + "\\n")
"""


def project_with_if_hook(root: Path, condition: str, event: str = "PreToolUse") -> Path:
    claude = root / ".claude"
    hooks = claude / "hooks"
    hooks.mkdir(parents=True)
    script = hooks / "mark.py"
    script.write_text(MARKER_HOOK.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    entry = {
        "type": "command",
        "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/mark.py',
        "if": condition,
    }
    settings = {"hooks": {event: [{"matcher": "Bash", "hooks": [entry]}]}}
    (claude / "settings.json").write_text(json.dumps(settings))
    return claude / "settings.json"


def marked(root: Path) -> list[str]:
    marker = root / "marker.jsonl"
    if not marker.exists():
        return []
    return [json.loads(line)["command"] for line in marker.read_text().splitlines()]


async def test_a_hook_with_if_runs_only_for_the_commands_its_rule_matches(
    tmp_path: Path,
) -> None:
    path = project_with_if_hook(tmp_path, "Bash(git commit *)")
    pipe = Pipeline(builtins=False)
    ClaudeSettings(path).install(pipe)
    ran: list[str] = []
    for command in [
        "ls",
        "git commit -m 'x'",
        "git status",
        "cd sub && git commit -am wip",
        "echo 'git commit'",
        "$TOOL commit",  # cannot be resolved: fails open
        "git $SUBCOMMAND",  # known only at run time: fails open
        "ls 'unterminated",  # cannot be parsed: fails open
    ]:
        await call(pipe, command, ran)
    assert marked(tmp_path) == [
        "git commit -m 'x'",
        "cd sub && git commit -am wip",
        "$TOOL commit",
        "git $SUBCOMMAND",
        "ls 'unterminated",
    ]


def test_a_hook_with_if_on_a_non_tool_event_never_runs(tmp_path: Path) -> None:
    path = project_with_if_hook(tmp_path, "Bash(git *)", event="UserPromptSubmit")
    settings = ClaudeSettings(path)
    assert "UserPromptSubmit" not in settings.hooks
    assert any(".if: evaluated only on tool events" in note for note in settings.notes)


def test_a_bad_if_rule_is_an_error_of_that_field(tmp_path: Path) -> None:
    path = project_with_if_hook(tmp_path, "Bash(git commit")
    with pytest.raises(ConfigFileError, match=r"hooks\.PreToolUse\[0\]\.hooks\[0\]\.if"):
        ClaudeSettings(path)


# -- one parse per call, shared by the guard and the rules -------------------------------------


@pytest.mark.parametrize("priority", [110, 50])  # the rules before the guard (100), or after
async def test_the_guard_and_the_rules_share_one_analysis_per_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, priority: int
) -> None:
    command_safety.forget_analyses()
    parsed: list[object] = []
    analyze = command_safety._analyze

    def counted(command: object, *args: Any, **kwargs: Any) -> Any:
        parsed.append(command)
        return analyze(command, *args, **kwargs)

    monkeypatch.setattr(command_safety, "_analyze", counted)
    pipe = Pipeline()  # with the built-in guards
    rules = permissions(tmp_path, deny=["Bash(git push *)"], allow=["Bash(git *)"])
    PermissionPolicy(rules, priority=priority, id=f"permissions-{priority}").install(pipe)
    ran: list[str] = []
    line = f"cd repo-{priority} && git status"
    for _ in range(3):
        assert (await call(pipe, line, ran)).status == "ok"
    pushed = await call(pipe, f"cd repo-{priority} && git push", ran)
    assert pushed.status == "blocked"
    assert parsed == [line, f"cd repo-{priority} && git push"]  # once each, for both


def test_an_if_rule_on_file_tools_sees_claude_code_fields(tmp_path: Path) -> None:
    runs = hook_condition(
        "Edit(*.ts)", default_tool_mapping(), source="settings.json", base=tmp_path
    )

    def event(tool: str, **tool_input: Any) -> dict[str, Any]:
        return {"tool_name": tool, "tool_input": tool_input, "cwd": str(tmp_path)}

    assert runs(event("Edit", file_path="src/app.ts", old_string="a", new_string="b"))
    assert runs(event("Write", file_path=str(tmp_path / "x.ts"), content=""))
    assert not runs(event("Edit", file_path="src/app.py", old_string="a", new_string="b"))
    assert not runs(event("Read", file_path="src/app.ts"))
    assert runs({"hook_event_name": "PreToolUse"})  # nothing to judge: open
