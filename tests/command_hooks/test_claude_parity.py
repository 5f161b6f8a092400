"""Claude Code hook parity: async and asyncRewake hooks, plugin hooks.json files,
$CLAUDE_ENV_FILE, systemMessage on the bus, a real transcript_path, a missing program.

The hook scripts are written the way public hook collections write them (bash reading
JSON from stdin through python3, exit 0/2, JSON on stdout) and run as real child
processes through a real Pipeline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest

from interpose import Pipeline, ToolResult
from interpose.agent import Agent, ScriptedModel, Toolbox, reply, tool_use
from interpose.bus.events import HookMessage, InterceptorFailed
from interpose.cli import main

pytestmark = pytest.mark.integration

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "claude_hooks"
PLUGIN = HERE / "plugins" / "audit-trail"
LIMIT = 20.0  # s: the most any wait in these tests may take


def hook(script: str, *args: str, **fields: Any) -> dict[str, Any]:
    """A command hook entry naming a script the way Claude Code projects do."""
    line = f'"$CLAUDE_PROJECT_DIR"/.claude/hooks/{script}' + "".join(f" {a}" for a in args)
    return {"type": "command", "command": line, **fields}


def settings_file(root: Path, hooks: dict[str, Any], **extra: Any) -> Path:
    """A project with the hook scripts under .claude/hooks and a settings.json."""
    claude = root / "project" / ".claude"
    shutil.copytree(SCRIPTS, claude / "hooks")
    (claude / "settings.json").write_text(json.dumps({"hooks": hooks, **extra}))
    return claude / "settings.json"


def write(args: dict[str, Any]) -> str:
    path = Path(args["path"])
    path.write_text(args["content"])
    return f"wrote {path.name}"


def shell(args: dict[str, Any]) -> str:
    return f"ran {args['command']}"


def edited(args: dict[str, Any]) -> str:
    return f"edited {args['path']}"


class Messages:
    """The hook_message events of a pipeline, and a way to wait for the next ones."""

    def __init__(self, pipe: Pipeline) -> None:
        self.seen: list[HookMessage] = []
        self._arrived = anyio.Event()
        pipe.subscribe(self._on, events={"hook_message"})

    def _on(self, event: HookMessage) -> None:
        self.seen.append(event)
        self._arrived.set()

    async def wait_for(self, count: int) -> list[HookMessage]:
        with anyio.fail_after(LIMIT):
            while len(self.seen) < count:
                self._arrived = anyio.Event()
                await self._arrived.wait()
        return self.seen


# -- async: true ---------------------------------------------------------------------------


async def test_an_async_hook_answers_after_its_call_and_its_message_arrives_later(
    tmp_path: Path,
) -> None:
    path = settings_file(
        tmp_path,
        {
            "PostToolUse": [
                {"matcher": "Write", "hooks": [hook("slow_lint.sh", **{"async": True})]}
            ],
            # decision fields of an async hook have no effect: this deny comes too late
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [hook("bash_guard.py", **{"async": True})]}
            ],
        },
    )
    project = path.parent.parent
    pipe = Pipeline.from_config(path)
    messages = Messages(pipe)
    async with pipe:
        with anyio.fail_after(LIMIT):
            written = await pipe.call_tool(
                "write", {"path": str(project / "app.py"), "content": "import os\n"}, call=write
            )
        # the call is back while the linter still waits for lint.go: it runs behind it
        assert written.status == "ok"
        assert "system_messages" not in written.details
        assert messages.seen == []
        (project / "lint.go").touch()
        said = await messages.wait_for(2)
        assert [(m.channel, m.message, m.background, m.event) for m in said] == [
            ("system_message", "lint: 2 warnings in app.py", True, "PostToolUse"),
            (
                "additional_context",
                "The linter found 2 warnings in app.py: unused import os (line 1), line too "
                "long (line 3).",
                True,
                "PostToolUse",
            ),
        ]
        assert said[0].interceptor_id.startswith("claude:PostToolUse:")
        # the next call carries them to the caller: the user's note and the model's context
        with anyio.fail_after(LIMIT):
            pushed = await pipe.call_tool("bash", {"command": "git push --force"}, call=shell)
        assert pushed.status == "ok"  # the async guard's exit 2 did not block it
        assert pushed.details["system_messages"] == ["lint: 2 warnings in app.py"]
        assert pushed.details["additional_context"][0].startswith("The linter found 2 warnings")
        with anyio.fail_after(LIMIT):
            again = await pipe.call_tool("bash", {"command": "ls"}, call=shell)
        assert "system_messages" not in again.details  # delivered once


async def test_async_hooks_need_the_pipeline_entered_and_die_with_it(tmp_path: Path) -> None:
    later = {"async": True}
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listeners:
        (listener,) = listeners.listeners
        assert isinstance(listener, anyio.abc.SocketListener)
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        path = settings_file(
            tmp_path,
            {"PostToolUse": [{"matcher": "Bash", "hooks": [hook("pid_and_wait.sh", **later)]}]},
            env={"BUILD_PORT": str(port)},
        )
        pipe = Pipeline.from_config(path)
        with pytest.raises(RuntimeError, match="async with pipe"):
            await pipe.call_tool("bash", {"command": "make"}, call=shell)
        messages = Messages(pipe)
        started = anyio.current_time()
        async with pipe:
            with anyio.fail_after(LIMIT):
                result = await pipe.call_tool("bash", {"command": "make"}, call=shell)
                assert result.status == "ok"  # back while the build runs, in the background
                build = await listener.accept()
                assert await build.receive() == b"build started\n"
        # closing the pipeline killed it (its `sleep 30` too) and did not wait for it
        assert anyio.current_time() - started < LIMIT
        with anyio.fail_after(LIMIT), pytest.raises(anyio.EndOfStream):
            await build.receive()
        await build.aclose()
    assert messages.seen == []


async def test_an_async_hook_is_bounded_by_its_timeout(tmp_path: Path) -> None:
    slow = {"type": "command", "command": "sleep 30", "async": True, "timeout": 0.5}
    path = settings_file(tmp_path, {"PostToolUse": [{"matcher": "Bash", "hooks": [slow]}]})
    pipe = Pipeline.from_config(path)
    failed = anyio.Event()
    failures: list[InterceptorFailed] = []

    def on_failure(event: InterceptorFailed) -> None:
        failures.append(event)
        failed.set()

    pipe.subscribe(on_failure, events={"interceptor_failed"})
    async with pipe:
        with anyio.fail_after(LIMIT):
            result = await pipe.call_tool("bash", {"command": "ls"}, call=shell, call_id="c1")
            assert result.status == "ok"
            await failed.wait()
    (failure,) = failures
    assert (failure.interceptor_id, failure.timed_out, failure.policy) == (
        "claude:PostToolUse:sleep 30",
        True,
        "skip",
    )
    assert (failure.hook, failure.tool_call_id) == ("tool.after", "c1")
    assert pipe.stats.timeouts == {"claude:PostToolUse:sleep 30": 1}


# -- asyncRewake: true ---------------------------------------------------------------------


async def test_async_rewake_exit_2_wakes_the_agent_with_stderr_or_stdout(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {
            "PostToolUse": [
                {"matcher": "Bash", "hooks": [hook("watch_tests.sh", asyncRewake=True)]},
                {"matcher": "Edit", "hooks": [hook("watch_tests.sh", "stdout", asyncRewake=True)]},
                {"matcher": "Write", "hooks": [hook("watch_tests.sh", "pass", asyncRewake=True)]},
            ]
        },
    )
    pipe = Pipeline.from_config(path)
    messages = Messages(pipe)
    async with pipe:
        with anyio.fail_after(LIMIT):
            result = await pipe.call_tool("bash", {"command": "pytest"}, call=shell)
        assert result.status == "ok"  # the call did not wait for the tests
        (woken,) = await messages.wait_for(1)
        assert (woken.channel, woken.background, woken.event, woken.tool_name) == (
            "rewake",
            True,
            "PostToolUse",
            "exec",
        )
        assert woken.message == (
            "tests failed after Bash: 1 failed, 12 passed (test_parse: expected 3, got 4)"
        )
        # the agent reads it as a system reminder with its next message
        with anyio.fail_after(LIMIT):
            async with pipe.turn(session_key="") as turn:
                msg = await turn.message("what next?")
        assert msg.message == f"what next?\n\n{woken.message}"
        with anyio.fail_after(LIMIT):
            await pipe.call_tool("edit", {"path": "a.py", "old": "x", "new": "y"}, call=edited)
        (_, from_stdout) = await messages.wait_for(2)
        assert from_stdout.message == "tests failed after Edit: test_parse (expected 3, got 4)"
        with anyio.fail_after(LIMIT):
            await pipe.call_tool(
                "write", {"path": str(tmp_path / "b.py"), "content": ""}, call=write
            )
    # exit 0 woke nobody (the pipeline waited for it to close, then it was done or killed)
    assert [m.channel for m in messages.seen] == ["rewake", "rewake"]


# -- systemMessage -------------------------------------------------------------------------


async def test_a_system_message_is_a_bus_event_and_reaches_the_result(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path, {"PreToolUse": [{"matcher": "Bash", "hooks": [hook("warn_sudo.py")]}]}
    )
    pipe = Pipeline.from_config(path)
    messages = Messages(pipe)
    async with pipe:
        with anyio.fail_after(LIMIT):
            result = await pipe.call_tool(
                "bash", {"command": "sudo apt-get update"}, call=shell, call_id="c7"
            )
            plain = await pipe.call_tool("bash", {"command": "ls"}, call=shell)
    assert result.status == "ok"
    assert result.details["system_messages"] == ["heads up: running as root: sudo apt-get update"]
    assert "system_messages" not in plain.details
    (said,) = messages.seen
    assert (said.channel, said.event, said.hook, said.background) == (
        "system_message",
        "PreToolUse",
        "tool.before",
        False,
    )
    assert (said.tool_name, said.tool_call_id) == ("exec", "c7")
    assert said.message == "heads up: running as root: sudo apt-get update"


# -- plugins -------------------------------------------------------------------------------


def plugin_copy(root: Path) -> Path:
    plugins = root / "plugins"
    shutil.copytree(PLUGIN, plugins / "audit-trail")
    return plugins / "audit-trail"


async def test_a_plugin_hooks_json_runs_with_its_root_and_data_dir(tmp_path: Path) -> None:
    plugin = plugin_copy(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    toml = project / "interpose.toml"
    toml.write_text(
        "[hooks]\n"
        f'claude_plugins = ["{plugin}"]\n'
        f'claude_plugin_data = "{tmp_path / "plugin-data"}"\n'
    )
    pipe = Pipeline.from_config(toml)
    with anyio.fail_after(LIMIT):

        async def body(turn: Any) -> list[ToolResult]:
            return [
                await turn.call_tool("bash", {"command": "ls"}, call=shell),
                await turn.call_tool("bash", {"command": "rm -rf build"}, call=shell),
            ]

        listed, deleted = await pipe.run_turn(body, session_key="s1")
    assert listed.status == "ok"
    assert deleted.status == "blocked"
    assert deleted.output["reason"] == f"audit-trail: recursive delete blocked (plugin at {plugin})"
    data = tmp_path / "plugin-data" / "audit-trail"  # the name of .claude-plugin/plugin.json
    assert (data / "audit.log").read_text() == "audit-trail\tls\naudit-trail\trm -rf build\n"
    # the exec form (command + args) with ${CLAUDE_PLUGIN_DATA} substituted in args
    assert (data / "sessions.log").read_text() == f"session started in {project}\n"


async def test_a_plugin_hooks_json_loads_as_a_config_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = plugin_copy(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["check", str(plugin / "hooks" / "hooks.json")]) == 0
    pipe = Pipeline.from_config(plugin / "hooks" / "hooks.json")
    data = home / ".claude" / "plugins" / "data" / "audit-trail"
    assert not data.exists()  # loading and checking leave the home alone
    with anyio.fail_after(LIMIT):
        result = await pipe.call_tool("bash", {"command": "rm -fr /tmp/x"}, call=shell)
    assert result.status == "blocked"
    assert (data / "audit.log").read_text() == "audit-trail\trm -fr /tmp/x\n"


# -- CLAUDE_ENV_FILE -----------------------------------------------------------------------


async def test_session_start_exports_reach_the_sessions_exec_commands(tmp_path: Path) -> None:
    path = settings_file(tmp_path, {"SessionStart": [{"hooks": [hook("session_env.sh")]}]})
    project = path.parent.parent
    (project / "bin").mkdir()
    pipe = Pipeline.from_config(path)
    box = Toolbox(project)
    line = 'echo "$DEPLOY_STAGE|$GREETING|$PATH"'
    model = ScriptedModel([tool_use("exec", {"command": line}, id="e1"), reply("done")])
    agent = Agent(pipe, model, box.tools, schemas=box.schemas)
    with anyio.fail_after(LIMIT):
        run = await agent.run("deploy", session_key="s1")
    stage, greeting, search = run.calls[0].result.output["stdout"].strip().split("|")
    assert (stage, greeting) == ("staging", "hello from SessionStart")
    assert search == f"{box.env['PATH']}:{project}/bin"  # $PATH expanded, as sourcing does
    # outside the session's calls the Toolbox's environment is its own
    direct = await box.exec({"command": line})
    assert direct["stdout"] == f"||{box.env['PATH']}\n"


# -- transcript_path -----------------------------------------------------------------------


async def test_hooks_read_the_sessions_transcript(tmp_path: Path) -> None:
    path = settings_file(
        tmp_path,
        {
            "PreToolUse": [{"matcher": "Bash", "hooks": [hook("last_message.py")]}],
            "Stop": [{"hooks": [hook("last_message.py")]}],
        },
    )
    project = path.parent.parent
    toml = project / "interpose.toml"
    toml.write_text(
        '[hooks]\nclaude_settings = [".claude/settings.json"]\nclaude_transcripts = "transcripts"\n'
    )
    pipe = Pipeline.from_config(toml)
    box = Toolbox(project)
    model = ScriptedModel(
        [tool_use("exec", {"command": "echo hi"}, id="c1", text="Let me look."), reply("All done.")]
    )
    agent = Agent(pipe, model, box.tools, schemas=box.schemas)
    with anyio.fail_after(LIMIT):
        await agent.run("say hi", session_key="s/1")
    (transcript,) = (project / "transcripts").glob("s_1-*.jsonl")  # "s/1", made safe
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert [(e["type"], e["message"]["role"]) for e in lines] == [
        ("user", "user"),
        ("assistant", "assistant"),
        ("user", "user"),
        ("assistant", "assistant"),
    ]
    assert lines[0]["message"]["content"] == "say hi"
    assert lines[1]["message"]["content"] == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "c1", "name": "Bash", "input": {"command": "echo hi"}},
    ]
    (result,) = lines[2]["message"]["content"]
    assert (result["type"], result["tool_use_id"], result["is_error"]) == (
        "tool_result",
        "c1",
        False,
    )
    assert result["content"]["stdout"] == "hi\n"
    assert lines[3]["message"]["content"] == [{"type": "text", "text": "All done."}]
    assert {e["sessionId"] for e in lines} == {"s/1"}
    assert [e["parentUuid"] for e in lines] == [None] + [e["uuid"] for e in lines[:-1]]
    seen = [
        json.loads(line) for line in (project / "transcript_seen.jsonl").read_text().splitlines()
    ]
    # the PreToolUse hook read the call it was asked about; Stop read the final answer
    assert seen == [
        {"event": "PreToolUse", "lines": 2, "last_text": "Let me look."},
        {"event": "Stop", "lines": 4, "last_text": "All done."},
    ]


async def test_without_a_transcript_dir_transcript_path_is_null(tmp_path: Path) -> None:
    path = settings_file(tmp_path, {"PreToolUse": [{"hooks": [hook("record.py")]}]})
    pipe = Pipeline.from_config(path)
    with anyio.fail_after(LIMIT):
        await pipe.call_tool("bash", {"command": "ls"}, call=shell)
    lines = (path.parent.parent / "events.jsonl").read_text().splitlines()
    (event,) = [json.loads(line) for line in lines]
    assert event["transcript_path"] is None


# -- a missing program; what interpose does not support -------------------------------------


def unsupported(tmp_path: Path) -> Path:
    return settings_file(
        tmp_path,
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        hook("not-installed.sh"),
                        {"type": "command", "command": "eslint-hook --fix"},
                        hook("bash_guard.py", statusMessage="Checking the command…"),
                        hook("record.py", once=True, shell="powershell", colour="blue"),
                        {"type": "mcp_tool", "server": "policy", "tool": "check"},
                    ],
                }
            ],
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "Is the work done?"}]}],
        },
    )


async def test_a_missing_program_is_a_non_blocking_error_of_that_hook(tmp_path: Path) -> None:
    path = unsupported(tmp_path)
    pipe = Pipeline.from_config(path)  # the file loads
    failures: list[InterceptorFailed] = []
    pipe.subscribe(failures.append, events={"interceptor_failed"})
    async with pipe:
        with anyio.fail_after(LIMIT):
            ok = await pipe.call_tool("bash", {"command": "ls"}, call=shell)
            pushed = await pipe.call_tool("bash", {"command": "git push --force"}, call=shell)
    assert (ok.status, ok.output) == ("ok", "ran ls")  # the call went on
    assert pushed.output["reason"] == "force-pushing is not allowed"  # the others still run
    missing = sorted({(f.interceptor_id, f.policy) for f in failures})
    assert missing == [
        ('claude:PreToolUse:"$CLAUDE_PROJECT_DIR"/.claude/hooks/not-installed.sh', "skip"),
        ("claude:PreToolUse:eslint-hook --fix", "skip"),
    ]
    assert any("not-installed.sh does not exist" in f.error for f in failures)
    assert any("'eslint-hook' not found on PATH" in f.error for f in failures)
    assert len(failures) == 4  # each call, each missing program
    assert (path.parent.parent / "events.jsonl").exists()  # the hook with unknown keys ran


def test_interpose_check_warns_about_missing_programs_and_unsupported_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = unsupported(tmp_path)
    assert main(["check", str(path)]) == 0  # accepted, with a line per problem
    out = capsys.readouterr().out
    where = "settings.json: hooks.PreToolUse[0].hooks"
    for line in (
        f"{where}[0].command: {path.parent / 'hooks' / 'not-installed.sh'} does not exist; "
        "the hook fails each time it runs (a non-blocking error: the call goes on)",
        f"{where}[1].command: 'eslint-hook' not found on PATH",
        f"{where}[2].statusMessage: no spinner to show it in; ignored",
        f"{where}[3].once: ignored: the hook runs every time",
        f"{where}[3].shell: ignored: a command runs with /bin/sh -c",
        f"{where}[3].colour: a field interpose does not know; ignored",
        f"{where}[4]: hooks of type 'mcp_tool' are not supported by interpose; it never runs",
        "settings.json: hooks.Stop[0].hooks[0]: hooks of type 'prompt' are not supported",
    ):
        assert line in out, line
