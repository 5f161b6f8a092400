"""Protocol conformance with PicoClaw: every message shape upstream sends or accepts
(files/upstream_messages.json) is replayed through a real child process hook.

- requests: interpose's request of each method carries every field PicoClaw's carries,
  with the same value, but for the fields listed as not sent (docs/process-hooks.md,
  "Compatibility with PicoClaw", says why);
- replies: each reply shape a PicoClaw hook gives has the effect PicoClaw gives it, seen
  through a call of the pipeline.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest

from interpose import HardAbort, LLMRequest, LLMResponse, Pipeline, ProcessHook, ToolCall

HERE = Path(__file__).parent
FIXTURE = json.loads((HERE / "files" / "upstream_messages.json").read_text(encoding="utf-8"))
REPLAY = HERE / "children" / "replay.py"
ANY = "*"
POINTS = ("before_llm", "after_llm", "before_tool", "after_tool", "approve_tool")
ECHO_TOOL = {
    "type": "function",
    "function": {"name": "echo", "description": "echo text", "parameters": {"type": "object"}},
}


def replay(
    script: dict[str, Any],
    record: Path,
    *,
    intercept: tuple[str, ...] = ("before_tool",),
    observe: tuple[str, ...] = (),
) -> tuple[Pipeline, ProcessHook]:
    pipe = Pipeline(builtins=False)
    pipe.register_tool("echo_text")
    hook = ProcessHook(
        "replay",
        [sys.executable, str(REPLAY)],
        intercept=intercept,
        observe=observe,
        env={"SCRIPT": json.dumps(script), "RECORD": str(record)},
        timeout=10,
    )
    hook.install(pipe)
    return pipe, hook


class Echo:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, args: dict[str, Any]) -> str:
        self.calls.append(dict(args))
        return f"echoed: {args.get('text')}"


def model(request: LLMRequest) -> LLMResponse:
    return LLMResponse(
        content="Hi!", tool_calls=[ToolCall(id="tc-1", name="echo", args={"text": "hi"})]
    )


def llm_request() -> LLMRequest:
    return LLMRequest(
        messages=[{"role": "user", "content": "hello"}],
        tools=[ECHO_TOOL],
        params={"model": "claude-sonnet", "temperature": 0.7},
    )


def recorded(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def contains(ours: Any, theirs: Any, path: str, not_sent: set[str]) -> list[str]:
    """Where ``ours`` lacks or differs from what ``theirs`` has (dicts: every key of
    theirs, recursively; lists: item by item; ``*``: any value)."""
    if theirs == ANY:
        return [] if ours is not None else [f"{path}: missing"]
    if isinstance(theirs, dict):
        if not isinstance(ours, dict):
            return [f"{path}: expected an object, got {ours!r}"]
        problems = []
        for key, value in theirs.items():
            where = f"{path}.{key}" if path else key
            if where in not_sent:
                continue
            if key not in ours:
                problems.append(f"{where}: missing")
            else:
                problems += contains(ours[key], value, where, not_sent)
        return problems
    if isinstance(theirs, list):
        if not isinstance(ours, list) or len(ours) != len(theirs):
            return [f"{path}: expected {theirs!r}, got {ours!r}"]
        problems = []
        for i, (mine, their) in enumerate(zip(ours, theirs, strict=True)):
            problems += contains(mine, their, f"{path}[{i}]", not_sent)
        return problems
    return [] if ours == theirs else [f"{path}: expected {theirs!r}, got {ours!r}"]


# -- requests -------------------------------------------------------------------------------


async def sent_requests(tmp_path: Path, observe: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """The params of the first message of each method interpose sends, for a tool call
    and an LLM call in one turn (every point intercepted)."""
    record = tmp_path / "record.jsonl"
    pipe, _ = replay({}, record, intercept=POINTS, observe=observe)
    with anyio.fail_after(20):
        async with pipe, pipe.turn(agent_id="agent-1", session_key="session-1") as turn:
            await turn.call_llm(llm_request(), call=model)
            await turn.call_tool("echo_text", {"text": "hello"}, call=Echo())
    first: dict[str, dict[str, Any]] = {}
    for message in recorded(record):
        first.setdefault(message["method"], message["params"])
    return first


async def test_requests_carry_every_field_picoclaw_sends(tmp_path: Path) -> None:
    not_sent = set(FIXTURE["not_sent"])
    ours = await sent_requests(tmp_path, observe=("agent.tool.exec_start",))
    problems = []
    for label, theirs in FIXTURE["requests"].items():
        method = label.split(" ")[0]
        if method == "hook.event":
            continue  # sent only when observe uses the older names: the next test
        problems += [f"{label}: {p}" for p in contains(ours[method], theirs, "", not_sent)]
    assert problems == []
    # what the hello tells the hook: its name and what it serves
    assert ours["hook.hello"]["name"] == "replay"


async def test_events_are_sent_as_picoclaw_sends_them(tmp_path: Path) -> None:
    not_sent = set(FIXTURE["not_sent"])
    # observe in the older names: hook.event, with PicoClaw's first fields and the seed's
    ours = await sent_requests(tmp_path, observe=("tool_exec_start",))
    assert "hook.runtime_event" not in ours
    for label in ("hook.event", "hook.event (seed)"):
        assert contains(ours["hook.event"], FIXTURE["requests"][label], "", not_sent) == []


# -- replies --------------------------------------------------------------------------------


async def effect(case: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """What the reply did to a call through the pipeline."""
    method = case["method"]
    point = "before_tool" if method == "hook.hello" else method.removeprefix("hook.")
    pipe, hook = replay({method: case["reply"]}, tmp_path / "record.jsonl", intercept=(point,))
    seen: dict[str, Any] = {}
    tool = Echo()
    try:
        with anyio.fail_after(20):
            async with pipe:
                if point.endswith("_llm"):
                    async with pipe.turn(agent_id="agent-1", session_key="session-1") as turn:
                        request = llm_request()
                        response = await turn.call_llm(request, call=model)
                        seen["request"] = msgspec.to_builtins(request)
                        seen["response"] = msgspec.to_builtins(response)
                    if turn.aborted:
                        seen["aborted"] = turn.abort_reason
                else:
                    result = await pipe.call_tool(
                        "echo_text",
                        {"text": "hello"},
                        call=tool,
                        agent_id="agent-1",
                        session_key="session-1",
                    )
                    seen.update(status=result.status, output=result.output)
                    seen["is_error"] = result.is_error
                    if isinstance(result.output, dict):
                        seen["reason"] = result.output.get("reason", "")
    except HardAbort as exc:
        seen["raised"] = f"HardAbort: {exc.reason}"
    seen["tool_args"] = tool.calls
    seen["child_name"] = hook.child_name
    return seen


@pytest.mark.parametrize("case", FIXTURE["replies"], ids=[c["name"] for c in FIXTURE["replies"]])
async def test_every_reply_shape_has_picoclaws_effect(case: dict[str, Any], tmp_path: Path) -> None:
    seen = await effect(case, tmp_path)
    for key, expected in case["expect"].items():
        if key == "reason_contains":
            assert expected in seen["reason"], seen
        elif key in ("request", "response"):
            assert contains(seen[key], expected, key, set()) == [], seen
        else:
            assert seen[key] == expected, (key, seen)
