"""A .claude/settings.json and the scripts it names, as Claude Code users write them, run
unchanged through a real Pipeline and behave as they do in Claude Code."""

from __future__ import annotations

import json
import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import anyio
import anyio.abc
import pytest

from interpose import Approval, ApprovalRequest, ConfigError, Pipeline, ToolResult
from interpose.agent import Agent, ScriptedModel, reply, tool_use
from interpose.cli import main
from interpose.config import ConfigFileError
from interpose.middleware.claude_code import MAX_STOP_CONTINUES, ClaudeSettings, compile_matcher

pytestmark = pytest.mark.integration

SCRIPTS = Path(__file__).resolve().parent / "claude_hooks"
LIMIT = 20.0  # s: the most any call in these tests may take


async def bounded(pipe: Pipeline, name: str, args: dict[str, Any], **kw: Any) -> ToolResult:
    with anyio.fail_after(LIMIT):
        return await pipe.call_tool(name, args, **kw)


def hook(script: str, *args: str, timeout: float | None = None) -> dict[str, Any]:
    """A command hook entry naming a script the way Claude Code projects do."""
    line = f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/{script}' + "".join(f" {a}" for a in args)
    entry: dict[str, Any] = {"type": "command", "command": line}
    if timeout is not None:
        entry["timeout"] = timeout
    return entry


def settings_file(root: Path, hooks: dict[str, Any], **extra: Any) -> Path:
    """A project with the hook scripts under .claude/hooks and a settings.json."""
    claude = root / "project" / ".claude"
    shutil.copytree(SCRIPTS, claude / "hooks")
    (claude / "settings.json").write_text(json.dumps({"hooks": hooks, **extra}))
    return claude / "settings.json"


def recorded(path: Path) -> list[dict[str, Any]]:
    events = path.parent.parent / "events.jsonl"
    if not events.exists():
        return []
    return [json.loads(line) for line in events.read_text().splitlines()]


def shell(args: dict[str, Any]) -> str:
    return f"ran {args['command']}"


def write(args: dict[str, Any]) -> str:
    path = Path(args.get("path") or args["file_path"])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(args["content"])
    return f"wrote {path.name}"


# -- PreToolUse ----------------------------------------------------------------------


async def test_a_bash_guard_blocks_with_exit_2_and_its_stderr(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [hook("bash_guard.py")]}]}
    )
    pipe = Pipeline.from_config(path)
    blocked = await bounded(pipe, "bash", {"command": "git push --force origin main"}, call=shell)
    assert blocked.status == "blocked"
    assert blocked.output["reason"] == "force-pushing is not allowed"
    ok = await bounded(pipe, "Bash", {"command": "git status"}, call=shell)
    assert (ok.status, ok.output) == ("ok", "ran git status")


async def test_a_json_deny_names_the_protected_file(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path, {"PreToolUse": [{"matcher": "Edit|Write", "hooks": [hook("protect_files.sh")]}]}
    )
    project = path.parent.parent
    pipe = Pipeline.from_config(path)
    lock = await bounded(
        pipe, "write", {"path": str(project / "package-lock.json"), "content": "{}"}, call=write
    )
    assert lock.status == "blocked"
    assert lock.output["reason"] == "package-lock.json is protected"
    assert not (project / "package-lock.json").exists()
    ok = await bounded(
        pipe, "write", {"path": str(project / "app.py"), "content": "x = 1\n"}, call=write
    )
    assert ok.status == "ok"
    assert (project / "app.py").read_text() == "x = 1\n"


async def test_updated_input_rewrites_the_call(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [hook("quiet_pytest.py")]}]}
    )
    pipe = Pipeline.from_config(path)
    seen: list[dict[str, Any]] = []
    result = await bounded(
        pipe, "bash", {"command": "pytest tests", "description": "run the tests"}, call=seen.append
    )
    assert result.status == "ok"
    # an argv list goes to the script as one line and comes back as a list
    await bounded(pipe, "exec", {"command": ["pytest", "tests/unit"]}, call=seen.append)
    assert seen == [
        {"command": "pytest tests -q", "description": "run the tests"},
        {"command": ["pytest", "tests/unit", "-q"]},
    ]


async def test_updated_input_comes_back_in_the_keys_the_call_used(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path, {"PreToolUse": [{"matcher": "Write", "hooks": [hook("sandbox_writes.py")]}]}
    )
    project = path.parent.parent.resolve()
    pipe = Pipeline.from_config(path)
    seen: list[dict[str, Any]] = []
    outside = str(tmp_path / "elsewhere" / "notes.txt")
    await bounded(pipe, "write", {"path": outside, "content": "hi"}, call=seen.append)
    await bounded(pipe, "Write", {"file_path": outside, "content": "hi"}, call=seen.append)
    moved = str(project / "sandbox" / "notes.txt")
    assert seen == [{"path": moved, "content": "hi"}, {"file_path": moved, "content": "hi"}]


async def test_ask_reaches_the_human_approval_handler(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [hook("ask_deploys.sh")]}]}
    )
    asked: list[tuple[str, str]] = []

    async def human(request: ApprovalRequest, reason: str) -> bool:
        asked.append((request.args["command"], reason))
        return str(request.args["command"]).endswith("staging")

    pipe = Pipeline(builtins=False, human_approval=human)
    ClaudeSettings(path).install(pipe)
    staging = await bounded(pipe, "bash", {"command": "deploy staging"}, call=shell)
    prod = await bounded(pipe, "bash", {"command": "deploy prod"}, call=shell)
    ls = await bounded(pipe, "bash", {"command": "ls"}, call=shell)
    assert (staging.status, prod.status, ls.status) == ("ok", "denied", "ok")
    assert asked == [
        ("deploy staging", "deployments need a human"),
        ("deploy prod", "deployments need a human"),
    ]


@pytest.mark.parametrize(
    ("decisions", "status", "asked"),
    [
        (["allow", "ask", "deny"], "blocked", False),
        (["deny", "allow"], "blocked", False),
        (["allow", "ask"], "ok", True),
        (["allow", "allow"], "ok", False),
    ],
)
async def test_parallel_answers_combine_deny_over_ask_over_allow(
    tmp_path: Path, decisions: list[str], status: str, asked: bool
) -> None:
    hooks = [hook("decide.sh", d, f"{d}-{i}") for i, d in enumerate(decisions)]
    path = settings_file(tmp_path, {"PreToolUse": [{"matcher": "*", "hooks": hooks}]})
    questions: list[str] = []

    def human(request: ApprovalRequest, reason: str) -> Approval:
        questions.append(reason)
        return Approval.allow()

    pipe = Pipeline(builtins=False, human_approval=human)
    ClaudeSettings(path).install(pipe)
    result = await bounded(pipe, "read", {"path": "a.txt"}, call=lambda args: "text")
    assert result.status == status
    if status == "blocked":
        assert result.output["reason"] == f"deny-{decisions.index('deny')}"
    assert questions == ([f"ask-{decisions.index('ask')}"] if asked else [])


async def test_the_hooks_of_one_event_run_at_the_same_time(tmp_path: Path) -> None:
    # each script waits for the other to start: run one after the other, the first
    # would give up and block the call
    hooks = [hook("rendezvous.py", "a", "b"), hook("rendezvous.py", "b", "a")]
    path = settings_file(tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": hooks}]})
    pipe = Pipeline.from_config(path)
    result = await bounded(pipe, "bash", {"command": "ls"}, call=shell)
    assert result.status == "ok", result.output


async def test_a_command_named_twice_runs_once(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [hook("record.py")]},
                {"matcher": "", "hooks": [hook("record.py")]},
            ]
        },
    )
    pipe = Pipeline.from_config(path)
    await bounded(pipe, "bash", {"command": "ls"}, call=shell)
    assert [e["tool_name"] for e in recorded(path)] == ["Bash"]


# -- what the scripts receive --------------------------------------------------------------


async def test_the_scripts_receive_what_claude_code_sends(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": [{"matcher": "Write", "hooks": [hook("record.py")]}],
            "PostToolUse": [{"matcher": "Write", "hooks": [hook("record.py")]}],
        },
    )
    project = str(path.parent.parent.resolve())
    target = str(Path(project) / "src" / "app.py")
    pipe = Pipeline.from_config(path)
    result = await bounded(
        pipe,
        "write",
        {"path": target, "content": "x = 1\n"},
        call=write,
        call_id="toolu_01",
        session_key="s1",
    )
    assert result.status == "ok"
    common = {
        "session_id": "s1",
        "transcript_path": None,
        "cwd": project,
        "permission_mode": "default",
    }
    tool_input = {"file_path": target, "content": "x = 1\n"}
    before, after = recorded(path)
    assert before == {
        **common,
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": tool_input,
        "tool_use_id": "toolu_01",
    }
    assert after == {
        **common,
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": tool_input,
        "tool_use_id": "toolu_01",
        "tool_response": {
            "type": "create",
            "filePath": target,
            "content": "x = 1\n",
            "structuredPatch": [],
            "success": True,
        },
    }


async def test_matchers_select_mcp_tools_by_server(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "mcp__github__.*", "hooks": [hook("record.py")]},
                {"matcher": "Notebook.*", "hooks": [hook("record.py", "again")]},
            ]
        },
    )
    pipe = Pipeline.from_config(path)
    for name in ("mcp__github__create_issue", "mcp__slack__post", "NotebookEdit", "bash"):
        await bounded(pipe, name, {"x": 1}, call=lambda args: None)
    assert [e["tool_name"] for e in recorded(path)] == ["mcp__github__create_issue", "NotebookEdit"]


@pytest.mark.parametrize(
    ("matcher", "matches", "misses"),
    [
        ("Write", ["Write"], ["MultiEdit", "write", "NotebookWrite"]),
        ("Edit|Write", ["Edit", "Write"], ["MultiEdit", "Read"]),
        ("Edit | Write", ["Edit", "Write"], ["Read"]),
        ("Notebook.*", ["NotebookEdit", "NotebookRead"], ["Edit"]),
        ("mcp__memory__.*", ["mcp__memory__create"], ["mcp__github__x", "Read"]),
        ("", ["Bash", "mcp__a__b"], []),
        ("*", ["Bash", "mcp__a__b"], []),
        (None, ["Bash"], []),
    ],
)
def test_claude_matcher_syntax(matcher: str | None, matches: list[str], misses: list[str]) -> None:
    compiled = compile_matcher(matcher)
    assert [name for name in matches if compiled(name)] == matches
    assert [name for name in misses if compiled(name)] == []


def test_an_invalid_matcher_regex_is_an_error() -> None:
    with pytest.raises(ConfigError, match="not a valid regex"):
        compile_matcher("Edit(")


# -- PostToolUse, PostToolUseFailure ---------------------------------------------------------


async def test_a_post_tool_use_formatter_formats_the_written_file(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path, {"PostToolUse": [{"matcher": "Write|Edit", "hooks": [hook("format_python.py")]}]}
    )
    target = path.parent.parent / "app.py"
    pipe = Pipeline.from_config(path)
    result = await bounded(
        pipe, "write", {"path": str(target), "content": "x = 1   \n\n\n"}, call=write
    )
    assert target.read_text() == "x = 1\n"
    assert result.status == "ok"
    assert result.details["additional_context"] == ["formatted app.py"]


async def test_a_failed_tool_goes_to_post_tool_use_failure(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {
            "PostToolUse": [{"matcher": "Bash", "hooks": [hook("record.py")]}],
            "PostToolUseFailure": [{"matcher": "Bash", "hooks": [hook("record.py", "failure")]}],
        },
    )

    def broken(args: dict[str, Any]) -> str:
        raise OSError("disk full")

    pipe = Pipeline.from_config(path)
    result = await bounded(pipe, "bash", {"command": "make"}, call=broken, call_id="c1")
    assert result.status == "error"
    (event,) = recorded(path)
    assert event["hook_event_name"] == "PostToolUseFailure"
    assert (event["error"], event["is_interrupt"]) == ("OSError: disk full", False)
    assert "tool_response" not in event


async def test_bash_output_reaches_post_tool_use_as_stdout(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path, {"PostToolUse": [{"matcher": "Bash", "hooks": [hook("record.py")]}]}
    )
    pipe = Pipeline.from_config(path)
    await bounded(pipe, "bash", {"command": "echo hi"}, call=lambda args: "hi\n")
    (event,) = recorded(path)
    assert event["tool_response"] == {
        "stdout": "hi\n",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
    }


# -- failures are non-blocking, as in Claude Code -------------------------------------------


async def test_a_timeout_or_a_crash_lets_the_call_go_on_and_is_reported(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": "sleep 30", "timeout": 0.5}],
                },
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": "echo boom >&2; exit 1"}],
                },
            ]
        },
    )
    pipe = Pipeline.from_config(path)
    failures: list[Any] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    async with pipe:
        result = await bounded(pipe, "bash", {"command": "ls"}, call=shell)
    assert result.status == "ok"
    seen = sorted((f.interceptor_id, f.timed_out, f.policy) for f in failures)
    assert seen == [
        ("claude:PreToolUse:echo boom >&2; exit 1", False, "skip"),
        ("claude:PreToolUse:sleep 30", True, "skip"),
    ]
    assert "exited 1: boom" in next(f.error for f in failures if not f.timed_out)
    assert pipe.stats.timeouts == {"claude:PreToolUse:sleep 30": 1}


# -- UserPromptSubmit ----------------------------------------------------------------------


async def test_user_prompt_submit_adds_context_and_blocks_secrets(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {"UserPromptSubmit": [{"hooks": [hook("prompt_context.py"), hook("project_name.sh")]}]},
    )
    pipe = Pipeline.from_config(path)
    async with pipe.turn(agent_id="coder", session_key="s1") as turn:
        msg = await turn.message("fix the tests")
    assert msg.message == (
        "fix the tests\n\nCoding style: PEP 8, type hints everywhere.\n\nProject: project"
    )
    assert msg.metadata["additional_context"] == [
        "Coding style: PEP 8, type hints everywhere.",
        "Project: project",
    ]
    async with pipe.turn(agent_id="coder", session_key="s1") as turn:
        await turn.message("use password: hunter2")
    assert turn.aborted
    assert turn.abort_reason == "the prompt contains a secret"


# -- the turn: SessionStart, Stop, SessionEnd; PreCompact -----------------------------------


async def test_session_events_frame_the_turn_and_pre_compact_sees_its_trigger(
    tmp_path: Path,
) -> None:
    record = [{"hooks": [hook("record.py")]}]
    path = settings_file(
        tmp_path,
        {
            "SessionStart": [{"matcher": "startup", "hooks": [hook("record.py")]}],
            "Stop": record,
            "SessionEnd": record,
            "PreCompact": [{"matcher": "manual", "hooks": [hook("record.py")]}],
        },
    )
    pipe = Pipeline.from_config(path)

    async def body(turn: Any) -> str:
        await turn.compact(
            ["a", "b"], call=lambda messages, instructions: "summary", reason="manual"
        )
        await turn.compact(["a", "b"], call=lambda messages, instructions: "summary", reason="auto")
        return "done"

    assert await pipe.run_turn(body, session_key="s9") == "done"
    events = recorded(path)
    assert [e["hook_event_name"] for e in events] == [
        "SessionStart",
        "PreCompact",
        "Stop",
        "SessionEnd",
    ]
    assert events[0]["source"] == "startup"
    assert (events[1]["trigger"], events[1]["custom_instructions"]) == ("manual", "")
    assert events[2]["stop_hook_active"] is False
    assert events[3]["reason"] == "other"
    assert {e["session_id"] for e in events} == {"s9"}


# -- HTTP hooks ----------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, dict[str, Any], str]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.received.append((self.path, body, self.headers.get("X-Team", "")))
        if self.path == "/broken":
            self.send_response(500)
            payload = b"internal error"
        else:
            self.send_response(200)
            answer = {}
            if body.get("tool_name") == "Bash" and "sudo" in body["tool_input"]["command"]:
                answer = {
                    "hookSpecificOutput": {
                        "hookEventName": "PreToolUse",
                        "permissionDecision": "deny",
                        "permissionDecisionReason": "no sudo (policy server)",
                    }
                }
            payload = json.dumps(answer).encode()
        if self.path == "/chunked":
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            half = len(payload) // 2
            for part in (payload[:half], payload[half:], b""):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            return
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def policy_server() -> Iterator[str]:
    _Handler.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_http_hooks_post_the_event_and_their_answer_decides(
    tmp_path: Path, policy_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM", "infra")
    monkeypatch.setenv("SECRET", "not sent")
    headers = {"X-Team": "$TEAM/${SECRET}"}
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {
                            "type": "http",
                            "url": policy_server + "/check",
                            "headers": headers,
                            "allowedEnvVars": ["TEAM"],
                            "timeout": 10,
                        },
                        {"type": "http", "url": policy_server + "/broken"},
                        {"type": "http", "url": f"http://127.0.0.1:{_closed_port()}/gone"},
                    ],
                }
            ]
        },
    )
    pipe = Pipeline.from_config(path)
    failures: list[Any] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    async with pipe:
        denied = await bounded(pipe, "bash", {"command": "sudo reboot"}, call=shell, call_id="c1")
        allowed = await bounded(pipe, "bash", {"command": "ls"}, call=shell, call_id="c2")
    assert denied.status == "blocked"
    assert denied.output["reason"] == "no sudo (policy server)"
    # a 500 and a refused connection are non-blocking errors: the call goes on
    assert allowed.status == "ok"
    assert sorted(path for path, _, _ in _Handler.received) == [
        "/broken",
        "/broken",
        "/check",
        "/check",
    ]
    checked = [body for p, body, _ in _Handler.received if p == "/check"]
    assert {b["tool_use_id"] for b in checked} == {"c1", "c2"}
    assert checked[0]["hook_event_name"] == "PreToolUse"
    assert {team for p, _, team in _Handler.received if p == "/check"} == {"infra/"}
    broken = [f for f in failures if f.interceptor_id.endswith("/broken")]
    gone = [f for f in failures if f.interceptor_id.endswith("/gone")]
    assert (len(failures), len(broken), len(gone)) == (4, 2, 2)
    assert {f.error_type for f in broken} == {"HttpHookError"}
    assert "HTTP 500: internal error" in broken[0].error
    assert {f.error_type for f in gone} == {"HttpHookError"}
    assert "cannot connect" in gone[0].error


# -- loading -------------------------------------------------------------------------------


async def test_an_interpose_toml_includes_a_settings_file(tmp_path: Path) -> None:
    settings_file(tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [hook("bash_guard.py")]}]})
    toml = tmp_path / "interpose.toml"
    toml.write_text('[hooks]\nclaude_settings = ["project/.claude/settings.json"]\n')
    pipe = Pipeline.from_config(toml)
    result = await bounded(pipe, "bash", {"command": "git push --force"}, call=shell)
    assert result.output["reason"] == "force-pushing is not allowed"


def test_interpose_check_lists_the_hooks_and_what_does_not_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": [{"matcher": "Bash|Edit", "hooks": [hook("bash_guard.py")]}],
            "Stop": [
                {
                    "hooks": [
                        {"type": "prompt", "prompt": "Is the work done? $ARGUMENTS"},
                        hook("record.py"),
                    ]
                }
            ],
            "SubagentStop": [{"hooks": [{"type": "agent", "prompt": "verify"}]}],
            "Notification": [{"hooks": [hook("record.py")]}],
        },
        permissions={"allow": ["Bash(npm run test:*)"]},
    )
    assert main(["check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "claude:PreToolUse" in out
    assert "Bash|Edit" in out
    assert "hooks.Stop[0].hooks[0]: hooks of type 'prompt' are not supported" in out
    assert "hooks.Notification: an event interpose does not run; its hooks never run" in out
    assert "hooks.SubagentStop: an event interpose does not run; its hooks never run" in out
    assert 'hooks.Stop: a decision "block" continues the turn only when its body' in out


@pytest.mark.parametrize(
    ("hooks", "field", "problem"),
    [
        (
            {"PreToolUse": [{"matcher": "Edit(", "hooks": []}]},
            "hooks.PreToolUse[0].matcher",
            "not a valid regex",
        ),
        (
            {"Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": -1}]}]},
            "hooks.Stop[0].hooks[0].timeout",
            "positive",
        ),
        (
            {"Stop": [{"hooks": [{"type": "http", "url": "ftp://x"}]}]},
            "hooks.Stop[0].hooks[0].url",
            "http://",
        ),
        ({"Stop": {"hooks": []}}, "hooks.Stop", "Expected `array`"),
    ],
)
def test_a_bad_settings_file_names_the_field(
    tmp_path: Path, hooks: dict[str, Any], field: str, problem: str
) -> None:
    path = settings_file(tmp_path, hooks)
    with pytest.raises(ConfigFileError) as info:
        Pipeline.from_config(path)
    assert info.value.field == field
    assert problem in info.value.problem
    assert info.value.file == str(path)


def test_a_settings_file_is_told_apart_from_interpose_json(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [hook("record.py")]}]}
    )
    pipe = Pipeline.from_config(path)
    ids = [reg.id for reg in pipe.registry.list()]
    assert "builtin:command-safety-guard" in ids  # interpose's default stack, then the hooks
    assert "claude:PreToolUse settings.json" in ids
    plain = tmp_path / "interpose.json"
    plain.write_text(json.dumps({"hooks": {"tools": ["deploy"]}}))
    assert "deploy" in Pipeline.from_config(plain).registry.known_tools


async def test_the_result_of_a_blocked_call_is_not_sent_to_post_tool_use(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": [{"matcher": "Bash", "hooks": [hook("bash_guard.py")]}],
            "PostToolUse": [{"matcher": "Bash", "hooks": [hook("record.py")]}],
        },
    )
    pipe = Pipeline.from_config(path)
    result = await bounded(pipe, "bash", {"command": "git push --force"}, call=shell)
    assert result.status == "blocked"
    assert recorded(path) == []


async def test_permission_request_hooks_answer_the_approval_step(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": [{"matcher": "Bash", "hooks": [hook("ask_deploys.sh")]}],
            "PermissionRequest": [
                {"matcher": "Bash", "hooks": [hook("decide.sh", "allow", "'staging is fine'")]},
                {"matcher": "Write", "hooks": [hook("decide.sh", "deny", "'no writes today'")]},
            ],
        },
    )
    questions: list[str] = []

    def human(request: ApprovalRequest, reason: str) -> bool:
        questions.append(reason)
        return False

    pipe = Pipeline(builtins=False, human_approval=human)
    ClaudeSettings(path).install(pipe)
    # the PreToolUse "ask" opens the approval step; the PermissionRequest hook answers it
    deploy = await bounded(pipe, "bash", {"command": "deploy staging"}, call=shell)
    written = await bounded(pipe, "write", {"path": "a", "content": ""}, call=lambda a: "ok")
    assert (deploy.status, written.status) == ("ok", "denied")
    assert written.output["reason"] == "no writes today"
    assert questions == []


async def test_a_user_prompt_submit_exit_2_aborts_the_turn(tmp_path: Path) -> None:
    blocker = {"type": "command", "command": "cat >/dev/null; echo 'not on Fridays' >&2; exit 2"}
    path = settings_file(tmp_path, {"UserPromptSubmit": [{"hooks": [blocker]}]})
    pipe = Pipeline.from_config(path)
    with anyio.fail_after(LIMIT):
        async with pipe.turn(agent_id="coder") as turn:
            await turn.message("deploy")
            raise AssertionError("the turn went on")  # pragma: no cover
    assert (turn.aborted, turn.abort_reason) == (True, "not on Fridays")


async def test_a_chunked_http_answer_is_read(tmp_path: Path, policy_server: str) -> None:
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "http", "url": policy_server + "/chunked"}]}
            ]
        },
    )
    pipe = Pipeline.from_config(path)
    denied = await bounded(pipe, "bash", {"command": "sudo ls"}, call=shell)
    assert denied.output["reason"] == "no sudo (policy server)"


async def test_a_server_that_keeps_the_connection_open_is_read_to_its_content_length(
    tmp_path: Path,
) -> None:
    answer = json.dumps({"decision": "block", "reason": "held open"}).encode()
    served = anyio.Event()

    async def serve(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            request = b""
            while b"\r\n\r\n" not in request:
                request += await stream.receive()
            await stream.send(
                b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(answer), answer)
            )
            await served.wait()  # keep the connection open until the call is over

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    url = f"http://127.0.0.1:{port}/hold"
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "http", "url": url, "timeout": 5}]}
            ]
        },
    )
    pipe = Pipeline.from_config(path)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve)
        result = await bounded(pipe, "bash", {"command": "ls"}, call=shell)
        served.set()
        tg.cancel_scope.cancel()
    # a hook that had waited for the close would have timed out: a non-blocking failure
    assert (result.status, result.output["reason"]) == ("blocked", "held open")
    assert pipe.stats.failures == {}


async def test_a_stop_hook_that_blocks_makes_the_agent_go_on(tmp_path: Path) -> None:
    path = settings_file(tmp_path, {"Stop": [{"hooks": [hook("tests_before_stop.py")]}]})
    pipe = Pipeline.from_config(path)
    pipe.register_tool("run_tests")
    model = ScriptedModel(
        [
            reply("Done."),
            tool_use("run_tests", {}, id="t1"),
            reply("Done, and the tests pass."),
        ]
    )
    agent = Agent(pipe, model, {"run_tests": lambda args: "3 passed"}, max_steps=5)
    with anyio.fail_after(LIMIT):
        run = await agent.run("fix the bug", session_key="s1")
    assert (run.answer, run.stop_reason, run.steps) == ("Done, and the tests pass.", "answer", 3)
    assert [r.result.output for r in run.calls] == ["3 passed"]
    users = [m["content"] for m in run.history if m["role"] == "user"]
    assert users == ["fix the bug", "Run the tests before you finish."]
    assert [e["stop_hook_active"] for e in recorded(path)] == [False, True]


async def test_a_stop_hook_cannot_resume_a_plain_turn_body(tmp_path: Path) -> None:
    path = settings_file(tmp_path, {"Stop": [{"hooks": [hook("tests_before_stop.py")]}]})
    pipe = Pipeline.from_config(path)
    bodies: list[str] = []

    async def body(turn: Any) -> str:
        bodies.append(turn.turn_id)
        return "done"

    with anyio.fail_after(LIMIT):
        assert await pipe.run_turn(body) == "done"
    assert len(bodies) == 1  # the body ran once; the hook's block was logged
    assert [e["stop_hook_active"] for e in recorded(path)] == [False]


async def test_a_stop_hook_that_always_blocks_is_bounded(tmp_path: Path) -> None:
    always = {"type": "command", "command": "cat >/dev/null; echo 'keep going' >&2; exit 2"}
    path = settings_file(tmp_path, {"Stop": [{"hooks": [always]}]})
    pipe = Pipeline.from_config(path)
    agent = Agent(pipe, ScriptedModel([]), {}, max_steps=100)
    with anyio.fail_after(LIMIT):
        run = await agent.run("hi")
    assert run.steps == 1 + MAX_STOP_CONTINUES
    users = [m["content"] for m in run.history if m["role"] == "user"]
    assert users == ["hi"] + ["keep going"] * MAX_STOP_CONTINUES


async def test_the_settings_env_reaches_the_hooks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_TOKEN", "secret")  # the agent's own environment stays out
    echo = {"type": "command", "command": 'echo "team=$TEAM token=$API_TOKEN"'}
    path = settings_file(tmp_path, {"UserPromptSubmit": [{"hooks": [echo]}]}, env={"TEAM": "infra"})
    pipe = Pipeline.from_config(path)
    with anyio.fail_after(LIMIT):
        async with pipe.turn() as turn:
            msg = await turn.message("hi")
    assert msg.metadata["additional_context"] == ["team=infra token="]


def test_an_included_settings_file_that_does_not_exist_names_the_entry(tmp_path: Path) -> None:
    toml = tmp_path / "interpose.toml"
    toml.write_text('[hooks]\nclaude_settings = ["nowhere/.claude/settings.json"]\n')
    with pytest.raises(ConfigFileError) as info:
        Pipeline.from_config(toml)
    assert info.value.field == "hooks.claude_settings[0]"
    assert "does not exist" in info.value.problem
