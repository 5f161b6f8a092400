"""What a user sees in Phoenix: a real ``phoenix serve`` receives a turn over OTLP/HTTP.

The ``phoenix`` fixture starts Phoenix (the ``arize-phoenix`` package of the dev extra)
once for this module, on free loopback ports, with its database in a temporary working
directory and its telemetry and other outbound requests switched off.  Each test exports
one turn (an LLM call and a tool call) to its own Phoenix project and reads the spans back
through Phoenix's REST API, which returns them as Phoenix stores them: the span kind it
derived and the OpenInference attributes its UI shows (``llm.input_messages.*``,
``input.value``...).

Without Phoenix the tests are skipped, except under CI (``CI=true``), where they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import anyio
import pytest

from interpose import LLMRequest, LLMResponse, Pipeline, ToolCall
from interpose.observers.otel import configure

STARTUP_TIMEOUT = 120.0  # s: database migrations on a fresh directory, on a shared machine
SPAN_TIMEOUT = 30.0  # s: until Phoenix has stored the spans of one export
STOP_TIMEOUT = 10.0  # s: after SIGTERM, before SIGKILL

SYSTEM = "You are a careful coding agent."
KEY = "sk-ant-api03-" + "K" * 40  # a secret the redactor masks wherever it appears
USER = f"list the files; my key is {KEY}"
ARGS = {"command": "ls -la", "api_key": KEY}
OUTPUT = {"stdout": "a.txt\nb.txt", "exit_code": 0}
ANSWER = "There are two files: a.txt and b.txt."

Span = dict[str, Any]


def find_phoenix() -> Path | None:
    """The ``phoenix`` command of this interpreter's environment, or one on PATH."""
    found = shutil.which("phoenix", path=str(Path(sys.executable).parent)) or shutil.which(
        "phoenix"
    )
    return Path(found) if found is not None else None


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class Phoenix:
    """A running ``phoenix serve`` and what it has printed (kept in ``log_path``)."""

    def __init__(self, command: Path, workdir: Path) -> None:
        self.port, grpc_port = _free_ports(2)
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = workdir / "phoenix.log"
        self._text = ""
        self._changed = threading.Condition()
        self._log = self.log_path.open("w", encoding="utf-8")
        env = {key: value for key, value in os.environ.items() if not key.startswith("PHOENIX_")}
        env.update(
            PHOENIX_WORKING_DIR=str(workdir / "data"),
            PHOENIX_HOST="127.0.0.1",
            PHOENIX_PORT=str(self.port),
            PHOENIX_GRPC_PORT=str(grpc_port),
            # nothing leaves the machine: no telemetry pixels, fonts or downloads
            PHOENIX_TELEMETRY_ENABLED="false",
            PHOENIX_ALLOW_EXTERNAL_RESOURCES="false",
            # and nothing the tests do not need
            PHOENIX_DISABLE_AGENT_ASSISTANT="true",
            PHOENIX_ENABLE_MCP_SERVER="false",
        )
        self.process = subprocess.Popen(
            [str(command), "serve"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env=env,
        )
        assert self.process.stdout is not None
        self._reader = threading.Thread(
            target=self._read, args=(self.process.stdout,), name="phoenix-reader", daemon=True
        )
        self._reader.start()

    def _read(self, stream: IO[bytes]) -> None:
        while chunk := os.read(stream.fileno(), 65536):
            text = chunk.decode("utf-8", errors="replace")
            self._log.write(text)
            self._log.flush()
            with self._changed:
                self._text = (self._text + text)[-20_000:]  # the tail is enough
                self._changed.notify_all()
        with self._changed:  # end of output: the process has exited
            self._changed.notify_all()

    def _tail(self) -> str:
        with self._changed:
            return "\n".join(self._text.splitlines()[-30:])

    def wait_ready(self) -> None:
        """Wait until Phoenix says it serves, then until its health check answers.

        Raises:
            AssertionError: not within STARTUP_TIMEOUT s, or Phoenix exited first.
        """
        deadline = time.monotonic() + STARTUP_TIMEOUT
        with self._changed:
            while f"Uvicorn running on {self.url}" not in self._text:
                if self.process.poll() is not None:
                    raise AssertionError(
                        f"phoenix exited ({self.process.returncode}) before serving:\n"
                        f"{self._text[-3000:]}"
                    )
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"phoenix did not serve within {STARTUP_TIMEOUT}s:\n{self._text[-3000:]}"
                    )
                self._changed.wait(min(remaining, 0.5))
        status, _ = self.get("/healthz")
        assert status == 200, f"GET /healthz answered {status}"

    def get(self, path: str) -> tuple[int, bytes]:
        """GET ``path`` from Phoenix: (status, body)."""
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def spans(self, project: str) -> list[Span]:
        """The spans Phoenix stored in ``project`` (none while it does not exist yet)."""
        status, body = self.get(f"/v1/projects/{urllib.parse.quote(project)}/spans?limit=1000")
        if status == 404:
            return []
        assert status == 200, f"GET spans of {project}: {status} {body[:500]!r}"
        spans: list[Span] = json.loads(body)["data"]
        return spans

    def wait_for_spans(self, project: str, count: int) -> list[Span]:
        """Wait until ``project`` holds ``count`` spans; return them, oldest first.

        Phoenix stores what it receives from a queue, in batches: it is asked again, at
        most every 0.2 s, until the spans are there.

        Raises:
            AssertionError: fewer within SPAN_TIMEOUT s.
        """
        deadline = time.monotonic() + SPAN_TIMEOUT
        while len(spans := self.spans(project)) < count:
            if self.process.poll() is not None:
                raise AssertionError(f"phoenix exited ({self.process.returncode})")
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"{len(spans)} of {count} spans in {project!r} after {SPAN_TIMEOUT}s: "
                    f"{[span['name'] for span in spans]}\n{self._tail()}"
                )
            with self._changed:  # woken early if Phoenix prints (or exits)
                self._changed.wait(0.2)
        return sorted(spans, key=lambda span: str(span["start_time"]))

    def stop(self) -> None:
        """Stop Phoenix by its PID: SIGTERM, then SIGKILL after STOP_TIMEOUT s."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=STOP_TIMEOUT)
        self._reader.join(timeout=STOP_TIMEOUT)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    command = find_phoenix()
    if command is None:
        message = (
            "phoenix not found: install the dev extra (pip install -e '.[dev]'), which brings "
            "arize-phoenix, the trace viewer these tests export to"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    server = Phoenix(command, tmp_path_factory.mktemp("phoenix"))
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def export_turn(phoenix: Phoenix, project: str, *, trace_content: bool) -> None:
    """One turn to ``project``, as an agent loop runs it: the user's message, an LLM call
    that asks for a tool, the tool call, and an LLM call that gets the tool's result and
    answers; sent over OTLP/HTTP, every span accepted."""
    batches: list[bool] = []
    provider = configure(
        phoenix.url,
        service_name="interpose-tests",
        resource_attributes={"openinference.project.name": project},
        set_global=False,
        timeout=10.0,
        on_export=lambda count, accepted: batches.append(accepted),
    )

    def model(request: LLMRequest) -> LLMResponse:
        if request.messages[-1]["role"] == "tool":
            return LLMResponse(content=ANSWER, usage={"input_tokens": 52, "output_tokens": 6})
        return LLMResponse(
            content="I will list them.",
            tool_calls=[ToolCall(id="call-1", name="exec", args=dict(ARGS))],
            usage={"input_tokens": 31, "output_tokens": 9},
            stop_reason="tool_use",
        )

    async def run() -> None:
        pipe = Pipeline(tracer_provider=provider, trace_content=trace_content)
        async with (
            pipe,
            pipe.turn(
                agent_id="coder", session_key="s1", provider="anthropic", model="claude-x"
            ) as turn,
        ):
            await turn.message(USER)
            history: list[dict[str, Any]] = [{"role": "user", "content": USER}]
            asked = await turn.call_llm({"system": SYSTEM, "messages": history}, call=model)
            [call] = asked.tool_calls
            history.append(
                {
                    "role": "assistant",
                    "content": asked.content,
                    "tool_calls": [{"id": call.id, "name": call.name, "args": call.args}],
                }
            )
            result = await turn.call_tool(
                call.name, call.args, call=lambda a: OUTPUT, call_id=call.id
            )
            history.append({"role": "tool", "tool_call_id": call.id, "content": result.output})
            await turn.call_llm({"system": SYSTEM, "messages": history}, call=model)

    try:
        anyio.run(run)
        assert provider.force_flush()
    finally:
        provider.shutdown()
    assert batches, "nothing was exported"
    assert all(batches), "Phoenix refused a batch"


def attrs(span: Span) -> dict[str, Any]:
    attributes: dict[str, Any] = span["attributes"]
    return attributes


def messages(span: Span, which: str) -> list[dict[str, str]]:
    """``llm.{which}_messages.{i}.message.*`` as Phoenix stored them, in order."""
    prefix = f"llm.{which}_messages."
    found: dict[int, dict[str, str]] = {}
    for key, value in attrs(span).items():
        if key.startswith(prefix):
            index, _, field = key[len(prefix) :].partition(".message.")
            found.setdefault(int(index), {})[field] = value
    return [found[i] for i in sorted(found)]


@pytest.mark.integration
def test_phoenix_shows_the_messages_and_the_tool_input_with_trace_content(
    phoenix: Phoenix,
) -> None:
    project = f"interpose-{uuid.uuid4().hex[:12]}"
    export_turn(phoenix, project, trace_content=True)
    spans = phoenix.wait_for_spans(project, count=4)

    assert [(span["name"], span["span_kind"]) for span in spans] == [
        ("invoke_agent coder", "AGENT"),
        ("chat claude-x", "LLM"),
        ("execute_tool exec", "TOOL"),
        ("chat claude-x", "LLM"),
    ]
    turn, chat, tool, last_chat = spans
    redacted_user = USER.replace(KEY, "[REDACTED]")
    redacted_args = {**ARGS, "api_key": "[REDACTED]"}

    # the model call: its messages in Phoenix's LLM view, its input and output columns
    assert messages(chat, "input") == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": redacted_user},
    ]
    [answer] = messages(chat, "output")
    assert answer["role"] == "assistant"
    assert answer["content"] == "I will list them."
    assert answer["tool_calls.0.tool_call.function.name"] == "exec"
    assert json.loads(answer["tool_calls.0.tool_call.function.arguments"]) == redacted_args
    assert json.loads(attrs(chat)["input.value"]) == [
        {"role": "user", "parts": [{"type": "text", "content": redacted_user}]}
    ]
    assert attrs(chat)["input.mime_type"] == "application/json"
    assert json.loads(attrs(chat)["output.value"])[0]["finish_reason"] == "tool_call"
    assert attrs(chat)["llm.token_count.prompt"] == 31

    # the model call after the tool: the call it asked for and the tool's result
    asked, answered = messages(last_chat, "input")[2:]
    assert asked["role"] == "assistant"
    assert asked["tool_calls.0.tool_call.id"] == "call-1"
    assert json.loads(asked["tool_calls.0.tool_call.function.arguments"]) == redacted_args
    assert answered == {"role": "tool", "tool_call_id": "call-1", "content": json.dumps(OUTPUT)}
    assert messages(last_chat, "output") == [
        {"role": "assistant", "content": ANSWER, "finish_reason": "stop"}
    ]

    # the tool call: its arguments in the input column, its result in the output column
    assert json.loads(attrs(tool)["input.value"]) == redacted_args
    assert attrs(tool)["input.mime_type"] == "application/json"
    assert json.loads(attrs(tool)["output.value"]) == OUTPUT
    assert attrs(tool)["tool.name"] == "exec"

    # the turn: the user's message in the trace's root row
    assert attrs(turn)["input.value"] == redacted_user

    assert KEY not in json.dumps(spans), "a secret reached Phoenix"


def is_content(key: str) -> bool:
    return key.startswith(CONTENT_PREFIXES) or key in CONTENT_KEYS


CONTENT_PREFIXES = (
    "input.",
    "output.",
    "llm.input_messages.",
    "llm.output_messages.",
    "tool.param",
)
CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments")


@pytest.mark.integration
def test_phoenix_gets_no_content_without_trace_content(phoenix: Phoenix) -> None:
    project = f"interpose-{uuid.uuid4().hex[:12]}"
    export_turn(phoenix, project, trace_content=False)
    spans = phoenix.wait_for_spans(project, count=4)

    assert [span["span_kind"] for span in spans] == ["AGENT", "LLM", "TOOL", "LLM"]
    for span in spans:
        assert [key for key in attrs(span) if is_content(key)] == [], span["name"]
    assert "list the files" not in json.dumps(spans)
