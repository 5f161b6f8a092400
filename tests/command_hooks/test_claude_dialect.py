"""The claude-code dialect: the tool table both ways, Claude's tool_response shapes, and
a CommandHook (code and config) that sends exactly Claude Code's event."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from interpose import ConfigError, Pipeline, ToolResult
from interpose.middleware.claude_code import (
    ClaudeTool,
    ToolMapping,
    default_tool_mapping,
    tool_event,
)
from interpose.middleware.command_hooks import CommandHook

HOOKS = Path(__file__).resolve().parent / "claude_hooks"
LIMIT = 20.0

# (interpose tool, interpose args, Claude tool, Claude tool_input): every default row
ROWS: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("exec", {"command": "ls -la", "description": "list", "timeout": 5000,
              "run_in_background": False},
     "Bash", {"command": "ls -la", "description": "list", "timeout": 5000,
              "run_in_background": False}),
    ("read", {"path": "/p/a.py", "offset": 10, "limit": 5},
     "Read", {"file_path": "/p/a.py", "offset": 10, "limit": 5}),
    ("write", {"path": "/p/a.py", "content": "x = 1\n"},
     "Write", {"file_path": "/p/a.py", "content": "x = 1\n"}),
    ("edit", {"path": "/p/a.py", "old_string": "1", "new_string": "2", "replace_all": True},
     "Edit", {"file_path": "/p/a.py", "old_string": "1", "new_string": "2", "replace_all": True}),
    ("multi_edit", {"path": "/p/a.py", "edits": [{"old_string": "1", "new_string": "2"}]},
     "MultiEdit", {"file_path": "/p/a.py", "edits": [{"old_string": "1", "new_string": "2"}]}),
    ("glob", {"pattern": "**/*.py", "path": "/p"},
     "Glob", {"pattern": "**/*.py", "path": "/p"}),
    ("grep", {"pattern": "TODO", "path": "/p", "glob": "*.py", "output_mode": "content"},
     "Grep", {"pattern": "TODO", "path": "/p", "glob": "*.py", "output_mode": "content"}),
    ("web_fetch", {"url": "https://example.net", "prompt": "summarize"},
     "WebFetch", {"url": "https://example.net", "prompt": "summarize"}),
    ("web_search", {"query": "msgspec"}, "WebSearch", {"query": "msgspec"}),
    ("task", {"description": "review", "prompt": "review the diff", "subagent_type": "general"},
     "Task", {"description": "review", "prompt": "review the diff", "subagent_type": "general"}),
    ("notebook_edit", {"path": "/p/n.ipynb", "new_source": "print(1)", "cell_id": "c2"},
     "NotebookEdit", {"notebook_path": "/p/n.ipynb", "new_source": "print(1)", "cell_id": "c2"}),
]  # fmt: skip


def test_every_default_row_is_covered() -> None:
    assert sorted(row.claude for row in default_tool_mapping()) == sorted(r[2] for r in ROWS)


@pytest.mark.parametrize(("tool", "args", "claude", "tool_input"), ROWS, ids=[r[2] for r in ROWS])
def test_each_row_maps_both_ways(
    tool: str, args: dict[str, Any], claude: str, tool_input: dict[str, Any]
) -> None:
    mapping = default_tool_mapping()
    assert mapping.to_claude(tool, args) == (claude, tool_input)
    assert mapping.to_interpose(claude, tool_input) == (tool, args)
    # an agent that calls Claude's names directly (normalized: "webfetch", "bash"…)
    assert mapping.claude_name(claude.lower()) == claude


def test_names_without_a_row_keep_the_agents_spelling() -> None:
    mapping = default_tool_mapping()
    args = {"title": "bug"}
    assert mapping.to_claude(
        "mcp__github__create_issue", args, raw_name="mcp__GitHub__create_issue"
    ) == (
        "mcp__GitHub__create_issue",
        args,
    )
    assert mapping.to_interpose("mcp__github__create_issue", args) == (
        "mcp__github__create_issue",
        args,
    )
    assert mapping.to_claude("apply_patch", {"patch": "x"}) == ("apply_patch", {"patch": "x"})


def test_mapping_back_keeps_the_keys_and_argv_the_call_used() -> None:
    mapping = default_tool_mapping()
    # a call that already used Claude's key keeps it; one that used "file" gets "file"
    assert mapping.to_interpose("Read", {"file_path": "b"}, like={"file_path": "a"}) == (
        "read",
        {"file_path": "b"},
    )
    assert mapping.to_interpose("Read", {"file_path": "b"}, like={"file": "a"}) == (
        "read",
        {"file": "b"},
    )
    assert mapping.to_claude("exec", {"command": ["git", "commit", "-m", "a b"]}) == (
        "Bash",
        {"command": "git commit -m 'a b'"},
    )
    assert mapping.to_interpose(
        "Bash", {"command": "git commit -m 'a b' -q"}, like={"command": ["git"]}
    ) == ("exec", {"command": ["git", "commit", "-m", "a b", "-q"]})


def test_an_application_adds_its_own_tools() -> None:
    def deployed(args: Any, result: ToolResult) -> dict[str, Any]:
        return {"deployed": result.output, "env": args["env"]}

    mapping = default_tool_mapping()
    mapping.add(ClaudeTool("Deploy", "deploy", {"env": "environment"}, deployed))
    assert mapping.to_claude("deploy", {"env": "prod"}) == ("Deploy", {"environment": "prod"})
    assert mapping.to_interpose("Deploy", {"environment": "prod"}) == ("deploy", {"env": "prod"})
    assert mapping.tool_response("deploy", {"env": "prod"}, ToolResult(output="v2")) == {
        "deployed": "v2",
        "env": "prod",
    }
    # a row replaces the row of the same name; the default table is not touched
    mapping.add(ClaudeTool("Bash", "exec", {"command": "cmd"}))
    assert mapping.to_claude("exec", {"command": "ls"}) == ("Bash", {"cmd": "ls"})
    assert default_tool_mapping().to_claude("exec", {"command": "ls"}) == (
        "Bash",
        {"command": "ls"},
    )
    with pytest.raises(ConfigError, match="fields must map str to str"):
        mapping.add(ClaudeTool("X", "x", {"a": 1}))  # type: ignore[dict-item]
    assert ToolMapping().to_claude("exec", {"command": "ls"}) == ("exec", {"command": "ls"})


@pytest.mark.parametrize(
    ("tool", "args", "output", "response"),
    [
        ("exec", {"command": "ls"}, "a\nb\n",
         {"stdout": "a\nb\n", "stderr": "", "interrupted": False, "isImage": False}),
        ("read", {"path": "/p/a.py"}, "x\ny\n",
         {"type": "text", "file": {"filePath": "/p/a.py", "content": "x\ny\n", "numLines": 2,
                                   "startLine": 1, "totalLines": 2}}),
        ("edit", {"path": "/p/a.py", "old_string": "1", "new_string": "2"}, "ok",
         {"filePath": "/p/a.py", "oldString": "1", "newString": "2", "replaceAll": False,
          "structuredPatch": [], "userModified": False, "success": True}),
        ("glob", {"pattern": "*.py"}, ["a.py", "b.py"],
         {"filenames": ["a.py", "b.py"], "numFiles": 2, "truncated": False, "durationMs": 0}),
        ("grep", {"pattern": "x"}, "a.py\nb.py",
         {"mode": "files_with_matches", "numFiles": 2, "filenames": ["a.py", "b.py"]}),
        ("web_fetch", {"url": "https://e.net"}, "<html>",
         {"url": "https://e.net", "result": "<html>", "bytes": 6, "code": 200, "codeText": "OK",
          "durationMs": 0}),
        ("web_search", {"query": "q"}, [{"title": "t"}],
         {"query": "q", "results": [{"title": "t"}], "durationSeconds": 0}),
        ("task", {"prompt": "p"}, "done", "done"),
        ("exec", {"command": "ls"}, {"stdout": "own"}, {"stdout": "own"}),
    ],
)  # fmt: skip
def test_tool_response_has_claudes_shape(
    tool: str, args: dict[str, Any], output: Any, response: Any
) -> None:
    assert default_tool_mapping().tool_response(tool, args, ToolResult(output=output)) == response


def test_a_failed_result_is_a_post_tool_use_failure_event() -> None:
    event = tool_event(
        default_tool_mapping(),
        "PostToolUse",
        "exec",
        "bash",
        {"command": "make"},
        call_id="c1",
        session_id="s1",
        cwd="/p",
        result=ToolResult(output="OSError: boom", is_error=True, status="error"),
    )
    assert event == {
        "session_id": "s1",
        "transcript_path": None,
        "cwd": "/p",
        "permission_mode": "default",
        "hook_event_name": "PostToolUseFailure",
        "tool_name": "Bash",
        "tool_input": {"command": "make"},
        "tool_use_id": "c1",
        "error": "OSError: boom",
        "is_interrupt": False,
    }


# -- a CommandHook in the dialect ------------------------------------------------------------


async def test_a_command_hook_in_the_dialect_speaks_claude(tmp_path: Path) -> None:
    pipe = Pipeline(builtins=False)
    env = {"CLAUDE_PROJECT_DIR": str(tmp_path)}
    CommandHook(
        str(HOOKS / "record.py"), dialect="claude-code", allow=["write"], cwd=tmp_path, env=env
    ).install(pipe)
    CommandHook(
        str(HOOKS / "sandbox_writes.py"), dialect="claude-code", allow=["write"], cwd=tmp_path,
        env=env, priority=-1,
    ).install(pipe)  # fmt: skip
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(LIMIT):
        await pipe.call_tool(
            "write", {"path": "/elsewhere/x.txt", "content": "hi"}, call=seen.append, call_id="t1"
        )
    assert seen == [{"path": str(tmp_path / "sandbox" / "x.txt"), "content": "hi"}]
    (event,) = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert event == {
        "session_id": "",
        "transcript_path": None,
        "cwd": str(tmp_path),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": "/elsewhere/x.txt", "content": "hi"},
        "tool_use_id": "t1",
    }


async def test_the_dialect_from_a_config_file(tmp_path: Path) -> None:
    (tmp_path / "hooks").mkdir()
    for name in ("bash_guard.py", "record.py"):
        (tmp_path / "hooks" / name).write_bytes((HOOKS / name).read_bytes())
        (tmp_path / "hooks" / name).chmod(0o755)
    (tmp_path / "interpose.toml").write_text(
        "[[hooks.commands]]\n"
        'command = "hooks/bash_guard.py"\n'
        'dialect = "claude-code"\n'
        'filter.tool.allow = ["exec"]\n'
    )
    pipe = Pipeline.from_config(tmp_path / "interpose.toml")
    with anyio.fail_after(LIMIT):
        blocked = await pipe.call_tool("bash", {"command": "git push --force"}, call=str)
    assert blocked.output["reason"] == "force-pushing is not allowed"


def test_an_unknown_dialect_is_refused() -> None:
    with pytest.raises(ConfigError, match="dialect must be 'interpose' or 'claude-code'"):
        CommandHook("true", dialect="codex")  # type: ignore[arg-type]


async def test_a_config_adds_the_applications_tools_to_the_table(tmp_path: Path) -> None:
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "record.py").write_bytes((HOOKS / "record.py").read_bytes())
    (tmp_path / "hooks" / "record.py").chmod(0o755)
    (tmp_path / "interpose.toml").write_text(
        "[hooks]\n"
        'tools = ["deploy"]\n'
        "[hooks.claude_tools.Deploy]\n"
        'tool = "deploy"\n'
        'fields = { env = "environment" }\n'
        "[[hooks.commands]]\n"
        'command = "hooks/record.py"\n'
        'dialect = "claude-code"\n'
        'filter.tool.allow = ["deploy"]\n'
        f'env = {{ CLAUDE_PROJECT_DIR = "{tmp_path}" }}\n'
    )
    pipe = Pipeline.from_config(tmp_path / "interpose.toml")
    with anyio.fail_after(LIMIT):
        await pipe.call_tool("deploy", {"env": "prod"}, call=str)
    (event,) = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert (event["tool_name"], event["tool_input"]) == ("Deploy", {"environment": "prod"})
