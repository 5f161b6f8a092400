"""The replay itself: the candidate pipeline (``build_candidate``), each recorded call run
through it with a stand-in for the tool or model (``replay``, ``replay_files``), and the
comparison of its decision with the recorded one."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import anyio.lowlevel
import msgspec

from ..bus.events import CallRecorded, ShadowDecision
from ..errors import AbortTurn, HardAbort, InterposeError
from ..pipeline.payloads import LLMRequest, LLMResponse, ToolResult
from ._asks import RecordedAsks
from ._log import LogReader, RecordedCall, RecordedLog
from ._probe import ProbeProvider
from ._report import CallDiff, Outcome, ReplayReport

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline
    from ..pipeline.turn import Turn

__all__ = [
    "NOT_RECORDED",
    "REFUSED",
    "ReplayError",
    "build_candidate",
    "replay",
    "replay_files",
]

REFUSED = frozenset({"blocked", "denied", "aborted"})
#: what the stand-in tool answers when the recorded run never ran the tool
NOT_RECORDED = "<not recorded: the tool did not run in the recorded session>"


class ReplayError(InterposeError, RuntimeError):
    """The candidate stack raised on a recorded call (a handler whose policy is
    ``raise``, a middleware that broke the onion's contract): the replay stops there.

    Attributes:
        path: the file of the call's record.
        line: its line number.
        error: what was raised.
    """

    def __init__(self, call: RecordedCall, error: BaseException) -> None:
        super().__init__(
            f"{call.path}:{call.line}: the new stack raised on this call: "
            f"{type(error).__name__}: {error}"
        )
        self.path = call.path
        self.line = call.line
        self.error = error


# -- the candidate --------------------------------------------------------------------


def build_candidate(config_path: str | os.PathLike[str]) -> tuple[Pipeline, ProbeProvider]:
    """The pipeline ``config_path`` builds, for a replay: without its observers (a
    replay writes no audit log and exports nothing) and with the decision probe.

    Raises:
        ConfigError: the file is invalid (the message names the field).
    """
    from ..config import pipeline_from_file

    probe = ProbeProvider()
    pipe = pipeline_from_file(
        config_path,
        tracing="interceptor",
        tracer_provider=probe,  # no span is exported: a replay only reads decisions
        observers=False,  # checked, not attached
    )
    return pipe, probe


def _outcome(event: CallRecorded) -> Outcome:
    return Outcome(event.status, event.decided_by, event.reason)


def _classify(
    recorded: Outcome, new: Outcome, rewritten: str, result_changed: bool, stage: str
) -> str:
    was, now = recorded.status in REFUSED, new.status in REFUSED
    if now and not was:
        return "allowed -> blocked"
    if was and not now:
        return "blocked -> allowed"
    if was and now:
        if (recorded.status, recorded.decided_by) != (new.status, new.decided_by):
            return f"now {new.status} by {new.decided_by or '?'}"
        return ""
    if recorded.status != new.status:
        return f"status changed ({recorded.status} -> {new.status})"
    if rewritten:
        return f"{rewritten} rewritten"
    if result_changed:
        return "response rewritten" if stage == "llm" else "result rewritten"
    return ""


class _RecordedFailure(Exception):
    """Raised by the stand-in tool to give back a recorded error result."""


def _stand_in_error(output: Any) -> Exception:
    """An exception whose error result reads as the recorded ``output``
    (``"<ExcType>: <message>"``)."""
    text = output if isinstance(output, str) else str(output)
    name, sep, message = text.partition(": ")
    if sep and name.isidentifier():
        cls: type[Exception] = type(name, (_RecordedFailure,), {})
        return cls(message)
    return _RecordedFailure(text)


async def replay(
    log: RecordedLog | LogReader,
    pipe: Pipeline,
    probe: ProbeProvider | None = None,
    *,
    every: bool = False,
    on_call: Callable[[CallDiff], None] | None = None,
) -> ReplayReport:
    """Run every recorded call of ``log`` through ``pipe``, in order, never running a
    tool or a model, and compare each outcome with the recorded one.

    A ``LogReader`` is read as the replay goes: the report keeps the changed calls (with
    ``every``, every replayed call) and counts the rest, so memory holds the report, not
    the log.  ``on_call`` sees every replayed call, kept or not, as it is replayed.

    ``pipe`` must not be entered (the replay enters it: its process hooks start).
    While it runs, its tracing goes to the decision probe (``probe``, from
    ``build_candidate``, or one made here), which attributes rewrites to the handlers
    that made them; its own tracing settings are restored afterwards.

    Raises:
        ReplayError: the pipeline raised on a call (not a refusal, not an abort: a
            handler whose policy is ``raise``, say); the replay stops there.
        LogError: a line of a ``LogReader``'s logs cannot be read; the replay stops there.
    """
    if probe is None:
        probe = ProbeProvider()
    trace = pipe._trace
    saved = (trace.explicit, trace.level)
    trace.explicit, trace.level = probe, "interceptor"
    try:
        report = ReplayReport(every=every)
        await _replay(log, pipe, probe, report, on_call)
    finally:
        trace.explicit, trace.level = saved
    # the reader's counts are final now that it has been read to its end
    report.skipped += log.unrecorded
    report.unknown, report.lines, report.paths = log.unknown, log.lines, list(log.paths)
    report.recorded = log.recorded
    return report


async def _replay(
    log: Iterable[RecordedCall],
    pipe: Pipeline,
    probe: ProbeProvider,
    report: ReplayReport,
    on_call: Callable[[CallDiff], None] | None,
) -> None:
    shadows: dict[tuple[str, str], list[str]] = {}

    def on_shadow(event: ShadowDecision) -> None:
        key = (event.turn_id, event.tool_call_id)
        shadows.setdefault(key, []).append(f"{event.interceptor_id}: {event.decision}")

    watch = pipe.subscribe(on_shadow, events={"shadow_decision"}, name="replay: shadow decisions")
    asks, saved = RecordedAsks(), pipe.human_approval
    pipe.human_approval = asks  # a replay asks no one: the recorded answers, or deny
    try:
        async with pipe:
            for call in log:
                stage = call.event.stage
                probe.decisions.clear()
                if not isinstance(call.event.input, dict) or stage not in _REPLAYERS:
                    report.skipped += 1
                    continue
                asks.start(call)
                try:
                    diff = await _REPLAYERS[stage](pipe, call, probe)
                except Exception as exc:
                    raise ReplayError(call, exc) from exc
                diff.asked = asks.answered
                # the call's shadow decisions are on their way to on_shadow: let them
                # arrive, so that they are this call's and none are kept for later
                while not watch.idle:
                    await anyio.lowlevel.checkpoint()
                if shadows:
                    if stage == "tool":
                        key = (call.event.turn_id, call.event.tool_call_id)
                        diff.shadow = shadows.get(key, [])
                    shadows.clear()
                report.add(diff)
                if on_call is not None:
                    on_call(diff)
    finally:
        pipe.human_approval = saved


def _attribute(
    diff: CallDiff, probe: ProbeProvider | None, hooks: Iterable[str], rewritten: bool
) -> None:
    """Name the rules behind ``diff.change``."""
    if not diff.change:
        return
    if diff.change == "blocked -> allowed":
        diff.rules = [diff.recorded.decided_by] if diff.recorded.decided_by else []
        return
    if diff.new.decided_by:
        diff.rules = [diff.new.decided_by]
        return
    if probe is not None and rewritten:
        wanted = set(hooks)
        diff.rules = list(
            dict.fromkeys(
                rid
                for rid, hook, decision in probe.decisions
                if hook in wanted and decision in ("modify", "respond", "retry")
            )
        )


def _turn(pipe: Pipeline, event: CallRecorded, *, provider: str = "", model: str = "") -> Turn:
    """A turn carrying the ids of the turn ``event`` was recorded in."""
    return pipe.turn(
        agent_id=event.agent_id or "main",
        session_key=event.session_key,
        provider=provider,
        model=model,
        turn_id=event.turn_id or None,
    )


def _setup_diff(
    call: RecordedCall,
    recorded: Outcome,
    new: Outcome,
    left: Any,
    stage: str,
    probe: ProbeProvider | None,
) -> CallDiff:
    """The diff of a ``message`` or ``params`` call: ``left`` is what the stage's hooks
    left of its input now (None when the turn aborted)."""
    applied = call.event.applied
    rewritten = stage if left is not None and applied is not None and left != applied else ""
    diff = CallDiff(call, recorded, new, _classify(recorded, new, rewritten, False, stage))
    _attribute(diff, probe, (f"{stage}.before", stage), bool(rewritten))
    return diff


async def _replay_tool(pipe: Pipeline, call: RecordedCall, probe: ProbeProvider | None) -> CallDiff:
    event = call.event
    recorded = _outcome(event)
    applied: list[Any] = []
    has_output = "results" in event.recorded

    def stand_in(args: dict[str, Any]) -> Any:
        applied.append(msgspec.json.decode(msgspec.json.encode(args)))
        if event.applied is None and recorded.status not in ("ok", "error"):
            return NOT_RECORDED
        if recorded.status == "error":
            raise _stand_in_error(event.output)
        return event.output if has_output else None

    args = msgspec.json.decode(msgspec.json.encode(event.input))
    turn = _turn(pipe, event)
    result: ToolResult | None = None
    aborted: Outcome | None = None
    async with turn:
        try:
            result = await turn.call_tool(
                event.raw_name or event.tool_name,
                args,
                call=stand_in,
                call_id=event.tool_call_id or None,
            )
        except (AbortTurn, HardAbort) as exc:
            aborted = Outcome("aborted", exc.source, exc.reason)
    if aborted is not None or result is None:
        new = aborted or Outcome("aborted", "", turn.abort_reason)
    else:
        output = result.output
        reason = output.get("reason", "") if isinstance(output, dict) and result.is_error else ""
        new = Outcome(result.status, str(result.details.get("decided_by", "") or ""), str(reason))
    ran_both = bool(applied) and event.applied is not None
    rewritten = "args" if ran_both and applied[-1] != event.applied else ""
    result_changed = (
        has_output
        and result is not None
        and new.status == recorded.status
        and not _same_output(result.output, event.output)
    )
    diff = CallDiff(
        call, recorded, new, _classify(recorded, new, rewritten, result_changed, "tool")
    )
    _attribute(
        diff,
        probe,
        ("tool.after", "tool") if result_changed and not rewritten else ("tool.before", "tool"),
        bool(rewritten or result_changed),
    )
    return diff


def _same_output(new: Any, recorded: Any) -> bool:
    try:
        return bool(msgspec.json.decode(msgspec.json.encode(new)) == recorded)
    except (TypeError, msgspec.EncodeError):
        return False


async def _replay_llm(pipe: Pipeline, call: RecordedCall, probe: ProbeProvider | None) -> CallDiff:
    event = call.event
    recorded = _outcome(event)
    sent: list[Any] = []
    has_output = "results" in event.recorded and isinstance(event.output, dict)

    def stand_in(request: LLMRequest) -> LLMResponse:
        sent.append(msgspec.to_builtins(request))
        if has_output:
            return msgspec.convert(event.output, LLMResponse)
        return LLMResponse(content="", stop_reason="end_turn")

    request = msgspec.convert(event.input, LLMRequest)
    turn = _turn(pipe, event)
    response: LLMResponse | None = None
    status, reason, source = "ok", "", ""
    async with turn:
        try:
            response = await turn.call_llm(request, call=stand_in)
        except (AbortTurn, HardAbort) as exc:
            status, reason, source = "aborted", exc.reason, exc.source
        except Exception as exc:
            status, reason = "error", f"{type(exc).__name__}: {exc}"
    new = Outcome(status, source, reason)
    rewritten = (
        "request" if sent and event.applied is not None and sent[-1] != event.applied else ""
    )
    changed = has_output and response is not None and not _same_output(response, event.output)
    diff = CallDiff(call, recorded, new, _classify(recorded, new, rewritten, changed, "llm"))
    _attribute(diff, probe, ("llm.before", "llm.after", "llm"), bool(rewritten or changed))
    return diff


async def _replay_message(
    pipe: Pipeline, call: RecordedCall, probe: ProbeProvider | None
) -> CallDiff:
    event = call.event
    recorded = _outcome(event)
    given = event.input
    turn = _turn(pipe, event)
    left: Any = None
    new = Outcome("ok")
    async with turn:
        try:
            out = await turn.message(
                str(given.get("message", "")), dict(given.get("metadata") or {})
            )
            left = msgspec.to_builtins(out)
        except (AbortTurn, HardAbort) as exc:
            new = Outcome("aborted", exc.source, exc.reason)
    return _setup_diff(call, recorded, new, left, "message", probe)


async def _replay_params(
    pipe: Pipeline, call: RecordedCall, probe: ProbeProvider | None
) -> CallDiff:
    event = call.event
    recorded = _outcome(event)
    given = event.input
    turn = _turn(
        pipe,
        event,
        provider=str(given.get("provider") or ""),
        model=str(given.get("model") or ""),
    )
    # what the params hooks see of the turn: its message, as recorded
    turn.user_message = str(given.get("message") or "")
    turn.metadata = dict(given.get("metadata") or {})
    left: Any = None
    new = Outcome("ok")
    async with turn:
        try:
            left = msgspec.to_builtins(await turn.params())
        except (AbortTurn, HardAbort) as exc:
            new = Outcome("aborted", exc.source, exc.reason)
    return _setup_diff(call, recorded, new, left, "params", probe)


_REPLAYERS: dict[str, Callable[[Pipeline, RecordedCall, ProbeProvider | None], Any]] = {
    "tool": _replay_tool,
    "llm": _replay_llm,
    "message": _replay_message,
    "params": _replay_params,
}


async def replay_files(
    logs: Sequence[str | os.PathLike[str]],
    config_path: str | os.PathLike[str],
    *,
    every: bool = False,
) -> ReplayReport:
    """The logs, streamed (``LogReader``), replayed through the stack ``config_path``
    builds; the report keeps the changed calls, or ``every`` call.

    Raises:
        LogError: a line of a log cannot be read.
        ConfigError: the config is invalid.
        OSError: a log cannot be opened (checked before the replay starts).
    """
    reader = LogReader(logs)
    reader.check()
    pipe, probe = build_candidate(config_path)
    return await replay(reader, pipe, probe, every=every)
