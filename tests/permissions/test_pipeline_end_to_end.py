"""Permission rules end to end: an ``interpose.toml`` with ``[permissions]`` built into a
real pipeline (``Pipeline.from_config``, the default guards included), and tool calls
through ``call_tool``.  A denied call is blocked before the tool runs, an asked one goes
to the pipeline's human-approval handler, an allowed one runs; the tool is a recording
function, so nothing here runs a command.  The corpus's ``git push`` rows (every wrapper
class: denied, asked, only mentioned) also go through the policy installed on a pipeline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from interpose import Pipeline
from interpose.permissions.claude import parse_claude_rule
from interpose.permissions.engine import Permissions
from interpose.permissions.policy import PermissionPolicy
from interpose.pipeline.payloads import ApprovalRequest

CONFIG = """\
[permissions]
deny = ["Bash(git push:*)", "Read(./.env)"]
ask = ["Bash(npm publish:*)"]
allow = ["Bash(git status:*)", "Bash(git diff:*)", "Bash(npm publish:*)"]
"""


class Tool:
    """The tool behind the pipeline: records the arguments it was called with."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, args: dict[str, Any]) -> str:
        self.calls.append(dict(args))
        return "done"


@pytest.fixture
def pipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Pipeline:
    project = tmp_path / "project"
    project.mkdir()
    (project / "interpose.toml").write_text(CONFIG, encoding="utf-8")
    monkeypatch.chdir(project)  # ./.env is the project's
    return Pipeline.from_config(project / "interpose.toml")


@pytest.mark.parametrize(
    "command",
    [
        "git push origin main",
        "cd src && git push origin main",
        "bash -c 'git push origin main'",
        "env GIT_TRACE=1 timeout 60 git push origin main",
        "git status && git push origin main",
    ],
)
async def test_a_denied_command_is_blocked_before_the_tool_runs(
    pipe: Pipeline, command: str
) -> None:
    tool = Tool()
    result = await pipe.call_tool("exec", {"command": command}, call=tool)
    assert result.status == "blocked"
    assert "Bash(git push:*)" in result.output["reason"]
    assert tool.calls == []


async def test_a_read_the_shell_would_do_is_judged_by_the_path_rule(pipe: Pipeline) -> None:
    tool = Tool()
    result = await pipe.call_tool("exec", {"command": "sudo cat .env"}, call=tool)
    assert result.status == "blocked"
    assert "Read(./.env)" in result.output["reason"]
    assert tool.calls == []


@pytest.mark.parametrize("answer", [True, False])
async def test_an_asked_command_goes_to_the_human(pipe: Pipeline, answer: bool) -> None:
    questions: list[tuple[str, str]] = []

    async def human(request: ApprovalRequest, reason: str) -> bool:
        questions.append((request.args["command"], reason))
        return answer

    pipe.human_approval = human
    tool = Tool()
    command = "timeout 600 npm publish --access public"
    result = await pipe.call_tool("exec", {"command": command}, call=tool)
    assert [q for q, _ in questions] == [command]
    assert "Bash(npm publish:*)" in questions[0][1]
    if answer:
        assert result.status == "ok"
        assert tool.calls == [{"command": command}]
    else:
        assert result.status == "denied"
        assert tool.calls == []


async def test_an_ask_with_no_human_is_a_deny(pipe: Pipeline) -> None:
    tool = Tool()
    result = await pipe.call_tool("exec", {"command": "npm publish"}, call=tool)
    assert result.status == "denied"
    assert tool.calls == []


CORPUS = json.loads((Path(__file__).with_name("data") / "corpus.json").read_text("utf-8"))
# one base command through every wrapper class: denied, asked, and only mentioned
THROUGH = [
    row
    for row in CORPUS["rows"]
    if row["id"].split("/")[0] in ("deny", "ask", "data")
    and row["id"].split("/")[2] == "0"
    and row["id"].split("/")[-1] in ("0", "legacy-prefix")
]
STATUS = {"deny": "blocked", "ask": "denied", None: "ok"}  # no human: an ask is a deny


@pytest.mark.parametrize("row", THROUGH, ids=[row["id"] for row in THROUGH])
async def test_the_corpus_through_the_policy_in_a_pipeline(row: dict[str, Any]) -> None:
    rules = [
        parse_claude_rule(
            text,
            decision,
            source="corpus",
            base=Path(CORPUS["base"]),
            cwd=Path(CORPUS["cwd"]),
            home=Path(CORPUS["home"]),
        )
        for decision in ("deny", "ask", "allow")
        for text in row["rules"][decision]
    ]
    pipe = Pipeline(builtins=False)
    PermissionPolicy(Permissions(rules), cwd=CORPUS["cwd"], home=CORPUS["home"]).install(pipe)
    tool = Tool()
    result = await pipe.call_tool("exec", dict(row["args"]), call=tool)
    assert result.status == STATUS[row["expect"]], result.output
    assert len(tool.calls) == (result.status == "ok")


@pytest.mark.parametrize(
    "command", ["git status", "git status && git diff --stat", "nice git diff | git status"]
)
async def test_an_allowed_command_runs_without_asking(pipe: Pipeline, command: str) -> None:
    asked: list[str] = []

    async def human(request: ApprovalRequest, reason: str) -> bool:
        asked.append(reason)
        return False

    pipe.human_approval = human
    tool = Tool()
    result = await pipe.call_tool("exec", {"command": command}, call=tool)
    assert result.status == "ok"
    assert tool.calls == [{"command": command}]
    assert asked == []
