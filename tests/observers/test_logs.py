"""The logging observer as an operator relies on it: one readable line per event, at a
level that makes refusals and failures stand out, the fields attached for structured
handlers, user content kept out unless asked for, and no work for disabled levels."""

from __future__ import annotations

import logging
import os
import re
from typing import Any

import pytest

from interpose import (
    AbortTurn,
    Approval,
    ApprovalRequest,
    MessageBeforeInput,
    MessageBeforeOutput,
    Pipeline,
    ToolBeforeInput,
    ToolBeforeOutput,
)
from interpose.bus import events as ev
from interpose.bus.events import Event
from interpose.observers import LoggingObserver

NAME = "interpose.events"


def run(args: dict[str, Any]) -> str:
    return "ran"


def fail(args: dict[str, Any]) -> str:
    raise OSError("disk full")


def guarded_pipeline() -> Pipeline:
    """A pipeline whose interceptors block, answer, deny, and fail (policy skip)."""
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", tools=["exec"], id="no-rm")
    def no_rm(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if "rm" in out.args["command"]:
            out.block, out.block_reason = True, "rm is not allowed"

    @pipe.intercept("tool.before", tools=["read"], id="cache")
    def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        out.result = "from the cache"

    @pipe.intercept("tool.before", tools=["write"], id="buggy", on_error="skip")
    def buggy(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise KeyError("path")

    @pipe.approver(tools=["write"], id="no-etc")
    def no_etc(request: ApprovalRequest) -> Approval | None:
        return Approval.deny("not under /etc") if request.args["path"][:5] == "/etc/" else None

    return pipe


async def one_turn(pipe: Pipeline) -> None:
    async with pipe.turn(agent_id="coder", session_key="s1", turn_id="t1") as turn:
        await turn.message("tidy up", {"channel": "cli"})
        await turn.call_tool("exec", {"command": "ls"}, call=run, call_id="c1")
        await turn.call_tool("exec", {"command": "rm -rf /"}, call=run, call_id="c2")
        await turn.call_tool("read", {"path": "x"}, call=run, call_id="c3")
        await turn.call_tool("write", {"path": "/etc/passwd"}, call=run, call_id="c4")
        await turn.call_tool("write", {"path": "/tmp/x"}, call=fail, call_id="c5")


def _relative(path: str) -> str:
    """``path`` as the lines show it: relative to the working directory."""
    return os.path.relpath(path)


def ours(caplog: pytest.LogCaptureFixture, name: str = NAME) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == name]


# -- lines and levels ------------------------------------------------------------------


async def test_each_event_is_one_line_at_its_level(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=NAME)
    pipe = guarded_pipeline()
    recorded: list[Event] = []
    pipe.subscribe(recorded.append)
    LoggingObserver().attach(pipe)
    async with pipe:
        await one_turn(pipe)

    records = ours(caplog)
    assert [r.getMessage().split()[0] for r in records] == [e.kind for e in recorded]
    lines = [(r.levelname, r.getMessage()) for r in records]
    assert ("INFO", "turn_started agent=coder session=s1 turn=t1") in lines
    assert ("INFO", "message_received chars=7 turn=t1") in lines
    assert ("INFO", "tool_exec_start exec call=c1 turn=t1") in lines
    assert (
        "WARNING",
        "tool_exec_skipped exec call=c2 why=blocked decided_by=no-rm "
        "reason='rm is not allowed' turn=t1",
    ) in lines
    assert (
        "WARNING",
        "tool_exec_end exec call=c2 status=blocked decided_by=no-rm interceptors=no-rm "
        "reason='rm is not allowed' turn=t1",
    ) in lines
    assert (
        "INFO",
        "tool_exec_skipped read call=c3 why=responded decided_by=cache turn=t1",
    ) in lines
    assert (
        "INFO",
        "tool_exec_end read call=c3 status=responded decided_by=cache interceptors=cache turn=t1",
    ) in lines
    # where the failed handler is (under the working directory: relative to it): its
    # definition starts at its decorator's line, and it raises two lines below
    buggy = next(reg.handler for reg in pipe.registry.list() if reg.id == "buggy")
    code = buggy.__code__
    assert (
        "WARNING",
        "interceptor_failed tool.before buggy policy=skip tool=write call=c4 "
        "error=\"KeyError: 'path'\" "
        f"handler={buggy.__module__}.{buggy.__qualname__} "
        f"defined_at={_relative(code.co_filename)}:{code.co_firstlineno} "
        f"raised_at={_relative(code.co_filename)}:{code.co_firstlineno + 2} turn=t1",
    ) in lines
    assert (
        "WARNING",
        "tool_exec_end write call=c4 status=denied decided_by=no-etc interceptors=buggy,no-etc "
        "reason='not under /etc' turn=t1",
    ) in lines
    timed = re.compile(r"tool_exec_end (\w+) call=(c\d) status=(\w+) duration=\d+\.\d{3}ms ")
    assert [(level, m.groups()) for level, line in lines if (m := timed.match(line))] == [
        ("INFO", ("exec", "c1", "ok")),
        ("WARNING", ("write", "c5", "error")),
    ]
    assert re.fullmatch(r"turn_ended duration=\d+\.\d{3}ms turn=t1", lines[-1][1])


async def test_the_fields_travel_as_extra(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=NAME)
    pipe = guarded_pipeline()
    ends: list[Event] = []
    pipe.subscribe(ends.append, events={"tool_exec_end"})
    LoggingObserver().attach(pipe, events={"tool_exec_end"})
    async with pipe:
        await one_turn(pipe)

    extras = [r.event for r in ours(caplog)]  # type: ignore[attr-defined]
    assert [x["kind"] for x in extras] == ["tool_exec_end"] * 5
    assert [(x["tool_call_id"], x["status"]) for x in extras] == [
        (e.tool_call_id, e.status) for e in ends if isinstance(e, ev.ToolExecEnd)
    ]
    blocked = extras[1]
    assert blocked["decided_by"] == "no-rm"
    assert blocked["reason"] == "rm is not allowed"
    assert blocked["agent_id"] == "coder"
    assert blocked["session_key"] == "s1"
    assert blocked["interceptors"] == ("no-rm",)
    assert blocked["seq"] == ends[1].seq


async def test_a_failure_that_reaches_the_caller_is_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=NAME)
    pipe = Pipeline(builtins=False)

    @pipe.intercept("message.before", id="profile", on_error="raise")
    def profile(inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        raise LookupError("no profile")

    LoggingObserver().attach(pipe, events={"interceptor_failed"})
    async with pipe:
        with pytest.raises(LookupError):
            async with pipe.turn(turn_id="t1") as turn:
                await turn.message("hi")

    code = profile.__code__
    assert [(r.levelname, r.getMessage()) for r in ours(caplog)] == [
        (
            "ERROR",
            "interceptor_failed message.before profile policy=raise "
            "error='LookupError: no profile' "
            f"handler={profile.__module__}.{profile.__qualname__} "
            f"defined_at={_relative(code.co_filename)}:{code.co_firstlineno} "
            f"raised_at={_relative(code.co_filename)}:{code.co_firstlineno + 2} turn=t1",
        )
    ]


async def test_an_aborted_turn_is_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=NAME)
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", id="budget")
    def budget(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        raise AbortTurn("budget used up")

    LoggingObserver().attach(pipe, events={"tool_exec_end", "turn_aborted"})
    async with pipe, pipe.turn(turn_id="t1") as turn:
        await turn.call_tool("read", {}, call=run, call_id="c1")

    records = ours(caplog)
    assert [(r.levelname, r.getMessage().split()[0]) for r in records] == [
        ("WARNING", "tool_exec_end"),
        ("WARNING", "turn_aborted"),
    ]
    assert "status=aborted decided_by=budget" in records[0].getMessage()
    assert "reason='budget used up'" in records[1].getMessage()


async def test_a_failing_observer_is_named_in_its_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=NAME)
    pipe = Pipeline(builtins=False)

    def broken(event: Event) -> None:
        raise RuntimeError("out of disk")

    pipe.subscribe(broken, events={"tool_exec_end"}, name="uploader")
    LoggingObserver().attach(pipe, events={"interceptor_failed"})
    async with pipe:
        await pipe.call_tool("read", {}, call=run)

    [record] = ours(caplog)
    assert record.levelname == "WARNING"
    # an observer's error carries only the message: the line adds the type; the tool
    # call whose event the observer failed on is named
    assert record.getMessage().startswith(
        "interceptor_failed observer uploader policy=skip tool=read call=call-1 "
        "error='RuntimeError: out of disk'"
    )


# -- options -----------------------------------------------------------------------------


async def test_user_content_only_when_asked_for(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=NAME)
    secret = "my password is hunter2"
    for content in (False, True):
        pipe = Pipeline(builtins=False)
        LoggingObserver(content=content).attach(pipe, events={"message_received"})
        async with pipe, pipe.turn(turn_id="t1") as turn:
            await turn.message(secret, {"user": "ada"})

    without, with_content = ours(caplog)
    assert without.getMessage() == "message_received chars=22 turn=t1"
    assert "message" not in without.event  # type: ignore[attr-defined]
    assert "metadata" not in without.event  # type: ignore[attr-defined]
    assert with_content.getMessage() == (
        f"message_received message={secret!r} metadata={{'user': 'ada'}} turn=t1"
    )
    assert with_content.event["message"] == secret  # type: ignore[attr-defined]
    assert with_content.event["metadata"] == {"user": "ada"}  # type: ignore[attr-defined]


def test_nothing_is_formatted_for_a_disabled_level(caplog: pytest.LogCaptureFixture) -> None:
    class Spy:
        formatted = 0

        def __repr__(self) -> str:
            Spy.formatted += 1
            return "spy"

    event = ev.MessageReceived(metadata={"spy": Spy()})
    observer = LoggingObserver("interpose.test.quiet", content=True)

    caplog.set_level(logging.WARNING, logger="interpose.test.quiet")
    observer(event)
    assert Spy.formatted == 0
    assert ours(caplog, "interpose.test.quiet") == []

    caplog.set_level(logging.INFO, logger="interpose.test.quiet")
    observer(event)
    assert Spy.formatted == 1
    [record] = ours(caplog, "interpose.test.quiet")
    assert record.getMessage() == "message_received metadata={'spy': spy}"


def test_level_sets_the_level_of_ordinary_events(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="interpose.test.debug")
    observer = LoggingObserver("interpose.test.debug", level="debug")
    observer(ev.ToolExecEnd(tool_name="read", status="ok"))
    observer(ev.ToolExecEnd(tool_name="read", status="denied"))
    assert [r.levelno for r in ours(caplog, "interpose.test.debug")] == [
        logging.DEBUG,
        logging.WARNING,
    ]


def test_the_logger_can_be_named_given_or_defaulted() -> None:
    given = logging.getLogger("interpose.test.given")
    assert LoggingObserver(given).logger is given
    assert LoggingObserver("interpose.test.named").logger is logging.getLogger(
        "interpose.test.named"
    )
    assert LoggingObserver().logger is logging.getLogger(NAME)


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(TypeError, match="logger"):
        LoggingObserver(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="LOUD"):
        LoggingObserver(level="LOUD")
    with pytest.raises(ValueError, match="level"):
        LoggingObserver(level=None)  # type: ignore[arg-type]
