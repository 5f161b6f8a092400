"""``interpose demo``: a scripted agent session through a real pipeline, as a table.

A ``ScriptedModel`` plays a small coding session over real tools (``exec``, ``read``,
``write``) in a scratch directory.  Every step crosses a pipeline that holds the built-in
guards plus a few demo interceptors, so the session shows each kind of decision:

========== =================================================================
ok          the call ran as asked
rewritten   ``demo:no-color`` (tool.before, priority 10) added ``--color=never``
blocked     ``builtin:command-safety-guard`` stopped ``rm -rf /``;
            ``builtin:security-audit`` stopped a read of ``.env``
responded   ``demo:cache`` (trusted) answered a repeated read from its cache
denied      the ``demo:notes-only`` approver refused a write outside ``notes/``
aborted     ``demo:abort-deploy`` raised ``AbortTurn`` on a deploy command
========== =================================================================

An observer subscribed to tool_exec_end / turn_ended / turn_aborted collects the events;
once the pipeline has drained them the demo prints one row per tool call and one
summary line per turn.
"""

from __future__ import annotations

import io
import posixpath
import re
import shlex
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import anyio

from ..bus.events import Event, ToolExecEnd, TurnAborted, TurnEnded
from ..errors import AbortTurn
from ..pipeline.payloads import (
    Approval,
    ApprovalRequest,
    LLMRequest,
    LLMResponse,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
)
from ..pipeline.pipeline import Pipeline
from ..pipeline.registry import Interceptor
from ..pipeline.tools import TOOL_GROUPS
from .loop import Agent, AgentRun, ToolRecord
from .model import ScriptedModel, last_tool_result, reply, tool_use
from .tools import Toolbox

__all__ = ["run_demo"]

WIDTH = 100  # the output fits a terminal this wide
AGENT_ID = "coder"
SESSION = "demo"
MARKER = ".interpose-demo"  # marks a directory the demo seeded (safe to seed again)

# Commands the script asks for that must never really run.  The built-in guard blocks
# them; should it ever let one through, the demo's exec refuses it instead of running it.
HAZARDS = frozenset({"rm -rf /"})

DESCRIPTIONS = {
    "builtin:command-safety-guard": "blocks destructive shell commands",
    "builtin:security-audit": "blocks secrets and credentials",
    "demo:abort-deploy": "raises AbortTurn on deploys",
    "demo:cache": "trusted: answers repeated reads",
    "demo:no-color": "adds --color=never to ls/grep",
    "demo:notes-only": "denies writes outside notes/",
    "demo:cache-fill": "fills the cache; a write evicts",
    "demo:audit": "sees every final result",
}


def run_demo(workdir: str | None = None, *, out: TextIO = sys.stdout) -> int:
    """Run the scripted session and print its table to ``out``; returns the exit code.

    ``workdir`` is the scratch directory for the tools: it must be empty or one the demo
    seeded before (it is kept afterwards).  Without it a temporary directory is used and
    removed.  Returns 0, or 2 when ``workdir`` holds files the demo did not put there.

    Raises:
        OSError: the scratch directory cannot be created or written.
    """
    _tolerate_narrow_encodings(out)
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="interpose-demo-") as tmp:
            _seed(Path(tmp))
            return anyio.run(_session, Path(tmp), out, True)
    root = Path(workdir).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()) and not (root / MARKER).exists():
        print(
            f"interpose demo: {root} is not empty; give an empty directory (the demo writes "
            "and deletes files in it) or omit --workdir",
            file=sys.stderr,
        )
        return 2
    _seed(root)
    return anyio.run(_session, root, out, False)


def _seed(root: Path) -> None:
    for name, text in SEED.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


# -- the session ---------------------------------------------------------------------------


class Notes:
    """What the demo's own interceptors noticed, keyed by tool call id (for the table)."""

    def __init__(self) -> None:
        self.decided: dict[str, tuple[str, str, str]] = {}  # id -> (decision, by, reason)
        self.audit: list[tuple[str, str]] = []  # (tool, status) in the order calls ended


class Recorder:
    """The observer: keeps the events the table is built from."""

    def __init__(self) -> None:
        self.ends: dict[tuple[str, str], ToolExecEnd] = {}
        self.turns: dict[str, TurnEnded | TurnAborted] = {}

    def __call__(self, event: Event) -> None:
        if isinstance(event, ToolExecEnd):
            self.ends[event.turn_id, event.tool_call_id] = event
        elif isinstance(event, TurnEnded | TurnAborted):
            self.turns[event.turn_id] = event


TURNS = (
    "What is in this project?",
    "Check the config, and the README again.",
    "Clean up the build output.",
    "Write down the plan.",
    "Ship it to production.",
    "Then just show me the plan.",
)


def script() -> ScriptedModel:
    """The model's side of the session: one entry per LLM call, six turns in all."""

    # Callable steps read the last tool result, but always take one step: the script is
    # one list for all turns, so a step that ended a turn early would shift the rest.
    def refusal(req: LLMRequest) -> str:
        last = last_tool_result(req)
        content = last["content"] if last is not None else None
        return str(content.get("reason", "")) if isinstance(content, dict) else ""

    def after_rm(req: LLMRequest) -> LLMResponse:
        said = f"Refused ({refusal(req)}); " if refusal(req) else ""
        return tool_use(
            "exec", {"command": "rm -rf build"}, id="t3-rm-build", text=f"{said}only build/ then."
        )

    def after_write(req: LLMRequest) -> LLMResponse:
        said = f"Denied ({refusal(req)}); " if refusal(req) else ""
        return tool_use(
            "write",
            {"path": "notes/plan.md", "content": PLAN},
            id="t4-write-notes",
            text=f"{said}writing notes/plan.md instead.",
        )

    def summarize(req: LLMRequest) -> LLMResponse:
        last = last_tool_result(req)
        title = str(last["content"]).splitlines()[0] if last is not None else "?"
        return reply(f"A small project: {title.lstrip('# ')}")

    return ScriptedModel(
        [
            # 1: look around
            tool_use("exec", {"command": "ls -a"}, id="t1-ls"),
            tool_use("read", {"path": "README.md"}, id="t1-readme"),
            summarize,
            # 2: the cache answers the repeat; the audit guard keeps .env closed
            tool_use("read", {"path": "./README.md"}, id="t2-readme"),
            tool_use("read", {"path": ".env"}, id="t2-env"),
            reply("README unchanged; .env is off limits to me."),
            # 3: a destructive slip, then the command that was meant
            tool_use("exec", {"command": "rm -rf /"}, id="t3-rm-root"),
            after_rm,
            reply("Removed build/."),
            # 4: the approver wants notes under notes/
            tool_use("write", {"path": "plan.md", "content": PLAN}, id="t4-write"),
            after_write,
            tool_use("read", {"path": "notes/plan.md"}, id="t4-read"),
            reply("The plan is in notes/plan.md."),
            # 5: deploying is for humans: the turn is aborted mid-way
            tool_use("exec", {"command": "./deploy.sh --prod"}, id="t5-deploy"),
            # 6: the session goes on after an abort
            tool_use("read", {"path": "notes/plan.md"}, id="t6-read"),
            reply("Here is the plan (from the cache)."),
        ]
    )


PLAN = "# Plan\n1. fix the flaky test\n2. ship\n"
SEED = {
    "README.md": "# Widget service\nA tiny service the demo agent works on.\n",
    ".env": "API_TOKEN=demo-not-a-real-secret\n",
    "src/app.py": "print('hello')\n",
    "build/app.bin": "binary-ish\n",
    "deploy.sh": "#!/bin/sh\necho deploying\n",
    MARKER: "seeded by `interpose demo`\n",
}


def build_pipeline(notes: Notes) -> Pipeline:
    """The built-in guards plus the demo's interceptors (see the module docstring)."""
    pipe = Pipeline()
    cache: dict[tuple[str, str], tuple[str, Any]] = {}  # (session, path) -> (call id, text)

    @pipe.intercept("tool.before", tools=["exec"], priority=50, id="demo:abort-deploy")
    def abort_deploy(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        words = _words(out.args.get("command"))
        if words and posixpath.basename(words[0]).startswith("deploy"):
            reason = f"deploying needs a human: {' '.join(words)}"
            notes.decided[inp.tool_call_id] = ("aborted", "demo:abort-deploy", reason)
            raise AbortTurn(reason)

    @pipe.intercept("tool.before", tools=["read"], priority=20, id="demo:cache", trusted=True)
    def respond_from_cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        hit = cache.get((inp.session_key, _path_key(out.args)))
        if hit is not None:
            first_id, text = hit
            out.result = ToolResult(output=text, details={"cache": "hit"})
            notes.decided[inp.tool_call_id] = ("responded", "demo:cache", f"same as {first_id}")

    @pipe.intercept("tool.before", tools=["exec"], priority=10, id="demo:no-color")
    def no_color(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        command = out.args.get("command")
        rewritten = _without_color(command)
        if rewritten is not None:
            out.args["command"] = rewritten
            notes.decided[inp.tool_call_id] = (
                "rewritten",
                "demo:no-color",
                f"{_shown(command)} → {_shown(rewritten)}",
            )

    @pipe.approver(tools=["write"], id="demo:notes-only")
    def notes_only(request: ApprovalRequest) -> Approval:
        path = posixpath.normpath(str(request.args.get("path", "")))
        if path.split("/")[0] == "notes" and path != "notes":
            return Approval.allow()
        return Approval.deny(f"writes go under notes/, not {path!r}")

    @pipe.intercept("tool.after", tools=["read", "write"], id="demo:cache-fill")
    def fill_cache(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        key = (inp.session_key, _path_key(inp.args))
        if inp.tool_name == "write":
            cache.pop(key, None)
        elif inp.status == "ok":
            cache[key] = (inp.tool_call_id, out.result.output)

    def audit(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        notes.audit.append((inp.tool_name, out.result.status))

    # the registration object, equivalent to the decorators above
    pipe.add(Interceptor(id="demo:audit", hook="tool.after", priority=-100, handler=audit))
    return pipe


async def _session(root: Path, out: TextIO, temporary: bool) -> int:
    notes = Notes()
    recorder = Recorder()
    pipe = build_pipeline(notes)
    pipe.subscribe(recorder, events={"tool_exec_end", "turn_ended", "turn_aborted"})
    box = Toolbox(root)

    async def exec_tool(args: dict[str, Any]) -> Any:
        command = args.get("command")
        if isinstance(command, str) and command.strip() in HAZARDS:
            raise PermissionError("demo safety net: the command-safety guard let this through")
        return await box.exec(args)

    tools = {**box.tools, "exec": exec_tool}
    agent = Agent(
        pipe,
        script(),
        tools,
        agent_id=AGENT_ID,
        system="You are a careful coding agent.",
        schemas=box.schemas,
        provider="scripted",
        model_name="scripted-demo",
    )
    runs: list[AgentRun] = []
    async with pipe:
        for message in TURNS:
            runs.append(await agent.run(message, session_key=SESSION))
    # leaving `async with pipe` drained every event into the recorder
    _print_report(out, pipe, root, temporary, runs, recorder, notes)
    return 0


# -- the report ----------------------------------------------------------------------------

_HEAD = ("turn", "stage", "tool", "ran", "decision", "by", "µs", "reason")
_RIGHT = {"µs"}
_SKIPPED = {"blocked", "denied", "responded", "aborted"}


def _print_report(
    out: TextIO,
    pipe: Pipeline,
    root: Path,
    temporary: bool,
    runs: Sequence[AgentRun],
    recorder: Recorder,
    notes: Notes,
) -> None:
    def say(text: str = "") -> None:
        print(text, file=out)

    letters = _legend(pipe)
    say(
        _fit(
            f"interpose demo: a scripted agent works in {root}"
            + (" (temporary)" if temporary else "")
        )
    )
    say("Every tool call crosses these tool hooks, in this order (ran = their letters):")
    for reg in _tool_hooks(pipe):
        say(
            _fit(
                f"  {letters[reg.id]}  {reg.hook:<12} {reg.priority:>4}  {reg.id:<28}  "
                f"{_matcher(reg.tool_matcher):<10}  {DESCRIPTIONS.get(reg.id, '')}".rstrip()
            )
        )
    say()

    grid: list[tuple[str, ...] | str] = []
    for number, run in enumerate(runs, 1):
        grid.append(f"turn {number}, user: {run.message}")
        grid.extend(_row(number, run, r, recorder, notes, letters, pipe) for r in run.calls)
        grid.append(_summary(run, recorder))
    for line in _table(grid):
        say(line)

    counts: dict[str, int] = {}
    for _, status in notes.audit:
        counts[status] = counts.get(status, 0) + 1
    tally = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    calls = sum(len(run.calls) for run in runs)
    say()
    say(f"{len(runs)} turns ({sum(run.aborted for run in runs)} aborted), {calls} tool calls")
    say(_fit(f"demo:audit (tool.after, priority -100) saw {len(notes.audit)} results: {tally}"))
    if len(notes.audit) < calls:
        say("(an aborted call leaves its turn at once: it never reaches tool.after)")


def _table(grid: Sequence[tuple[str, ...] | str]) -> list[str]:
    """Aligned lines: tuples are rows (the last cell, the reason, wraps within the width
    left), strings are full-width lines between them."""
    rows = [item for item in grid if isinstance(item, tuple)]
    widths = [max(len(row[i]) for row in [_HEAD, *rows]) for i in range(len(_HEAD) - 1)]
    room = max(WIDTH - sum(widths) - 2 * len(widths), 20)

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.rjust(width) if head in _RIGHT else cell.ljust(width)
            for cell, width, head in zip(cells, widths, _HEAD, strict=False)
        ]
        return "  ".join([*parts, cells[-1]]).rstrip()

    lines = [line(_HEAD), line([*("─" * w for w in widths), "─" * min(room, 30)])]
    for item in grid:
        if isinstance(item, str):
            lines.append(_fit(item))
            continue
        wrapped = textwrap.wrap(item[-1], room, break_on_hyphens=False) or [""]
        lines.append(line([*item[:-1], wrapped[0]]))
        lines.extend(line([*("" for _ in widths), more]) for more in wrapped[1:])
    return lines


def _row(
    number: int,
    run: AgentRun,
    record: ToolRecord,
    recorder: Recorder,
    notes: Notes,
    letters: dict[str, str],
    pipe: Pipeline,
) -> tuple[str, ...]:
    call_id = record.call.id
    noted = notes.decided.get(call_id)
    event = recorder.ends.get((run.turn_id, call_id))
    if event is None:
        # an AbortTurn leaves the call before it ends, so there is no tool_exec_end:
        # the agent's record and the aborting interceptor's note tell what happened
        by = noted[1] if noted is not None else ""
        ran = [
            r.id for r in pipe.registry.get("tool.before", tool=record.call.name, agent=AGENT_ID)
        ]
        ran = ran[: ran.index(by) + 1] if by in ran else ran
        reason = noted[2] if noted is not None else str(record.result.output)
        return (
            str(number),
            "tool",
            record.call.name,
            _letters(ran, letters),
            record.result.status,
            by,
            "-",
            reason,
        )
    decision, by, reason = event.status, event.decided_by, event.reason
    if noted is not None and noted[0] == "rewritten" and decision == "ok":
        decision, by, reason = noted
    elif noted is not None and noted[0] == decision and not reason:
        reason = noted[2]
    elif decision == "error":
        reason = str(record.result.output).splitlines()[0]
    elif decision == "ok" and isinstance(record.result.output, dict):
        code = record.result.output.get("exit_code")
        reason = "" if code in (0, None) else f"exit code {code}"
    # "builtin:x" decided and its reason starts "x: ...": the by column already says so
    name = by.rpartition(":")[2]
    if name and reason.startswith(f"{name}: "):
        reason = reason[len(name) + 2 :]
    micros = "-" if decision in _SKIPPED else f"{event.duration_ns // 1000:,}"
    return (
        str(number),
        "tool",
        event.tool_name,
        _letters(event.interceptors, letters),
        decision,
        by,
        micros,
        reason,
    )


def _summary(run: AgentRun, recorder: Recorder) -> str:
    event = recorder.turns.get(run.turn_id)
    took = f" in {_duration(event.duration_ns)}" if event is not None else ""
    calls = _plural(len(run.calls), "tool call")
    steps = _plural(run.steps, "LLM step")
    if run.aborted:
        return f"  ↳ turn ABORTED{took} ({steps}, {calls}): {run.abort_reason}"
    return f"  ↳ turn ended{took} ({steps}, {calls}): “{run.answer}”"


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _duration(ns: int) -> str:
    return f"{ns / 1e6:.1f} ms" if ns >= 1_000_000 else f"{ns // 1000} µs"


def _tool_hooks(pipe: Pipeline) -> list[Interceptor]:
    hooks = ("tool.before", "tool.approve", "tool.after")
    regs = [r for hook in hooks for r in pipe.registry.get(hook)]
    return [r for r in regs if isinstance(r, Interceptor)]


def _legend(pipe: Pipeline) -> dict[str, str]:
    return {reg.id: chr(ord("A") + i) for i, reg in enumerate(_tool_hooks(pipe))}


def _letters(ids: Sequence[str], letters: dict[str, str]) -> str:
    return "".join(letters.get(i, "?") for i in ids)


def _matcher(matcher: object) -> str:
    if matcher is None:
        return "every tool"
    if isinstance(matcher, re.Pattern):
        return str(matcher.pattern)
    if isinstance(matcher, str):
        return matcher
    names = frozenset(str(m) for m in matcher)  # type: ignore[attr-defined]
    group = next((g for g, members in TOOL_GROUPS.items() if members == names), None)
    return group or ", ".join(sorted(names))


def _fit(text: str) -> str:
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


# -- small helpers of the interceptors --------------------------------------------------


def _words(command: object) -> list[str]:
    if isinstance(command, list):
        return [str(part) for part in command]
    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError:
            return command.split()
    return []


def _without_color(command: object) -> str | list[str] | None:
    """``command`` with ``--color=never`` after ``ls``/``grep``, or None to leave it."""
    words = _words(command)
    if not words or posixpath.basename(words[0]) not in ("ls", "grep"):
        return None
    if any(w.startswith("--color") for w in words):
        return None
    if isinstance(command, list):
        return [command[0], "--color=never", *command[1:]]
    assert isinstance(command, str)
    head, _, rest = command.strip().partition(" ")
    return f"{head} --color=never {rest}".rstrip()


def _shown(command: object) -> str:
    return command if isinstance(command, str) else shlex.join(_words(command))


def _path_key(args: dict[str, Any]) -> str:
    return posixpath.normpath(str(args.get("path", "")))


def _tolerate_narrow_encodings(out: TextIO) -> None:
    # a console that cannot show "µ" or "→" gets "?" rather than a UnicodeEncodeError
    if isinstance(out, io.TextIOWrapper) and out.encoding.lower().replace("-", "") != "utf8":
        out.reconfigure(errors="replace")
