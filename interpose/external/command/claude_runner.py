"""Running a Claude Code settings file's hooks for one pipeline: selection by matcher,
parallel execution, Claude's precedence (deny > ask > allow), failure reporting.

As in Claude Code, a hook that fails (an exit code other than 0 and 2, a timeout, an
HTTP status other than 2xx, a connection error) is a non-blocking error: the call goes
on.  The failure is logged, counted in ``pipe.stats`` and published as an
``interceptor_failed`` event with ``policy="skip"``.  ``claude_settings`` loads the
file and registers what this module runs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import anyio

from ...bus.events import InterceptorFailed
from ...errors import AbortTurn
from ...pipeline.payloads import (
    Approval,
    ApprovalRequest,
    CompactInput,
    CompactOutput,
    MessageBeforeInput,
    MessageBeforeOutput,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
    refusal,
)
from .tool_mapping import ToolMapping, tool_event
from .verdict import Answer

if TYPE_CHECKING:
    from ...pipeline.context import TurnContext
    from ...pipeline.pipeline import Pipeline

__all__ = ["MAX_STOP_CONTINUES", "HookTable", "SettingsHook", "SettingsRunner"]

log = logging.getLogger("interpose.claude_code")

#: How often Stop hooks may continue one turn (Claude Code leaves loops to the hooks,
#: which see ``stop_hook_active``; a bound keeps a hook that always blocks from looping).
MAX_STOP_CONTINUES = 8


class HookTable(Protocol):
    """What the runner reads of a settings file (``ClaudeSettings``)."""

    @property
    def name(self) -> str: ...
    @property
    def project_dir(self) -> str: ...
    @property
    def mapping(self) -> ToolMapping: ...
    @property
    def hooks(self) -> Mapping[str, Sequence[SettingsHook]]: ...


class _Outcome(NamedTuple):
    hook: SettingsHook
    answer: Answer | None
    abort: AbortTurn | None
    error: Exception | None


class SettingsHook:
    """One ``{"type": "command" | "http", ...}`` entry of a settings file."""

    __slots__ = ("call", "id", "key", "label", "matcher", "matches", "timeout", "when")

    def __init__(
        self,
        id: str,
        key: str,
        label: str,
        matches: Callable[[str], bool],
        timeout: float,
        call: Callable[[dict[str, Any]], Awaitable[Answer]],
        matcher: str = "",
    ) -> None:
        self.id = id
        self.matcher = matcher
        self.key = key  # what Claude deduplicates on: the command line or the URL
        self.label = label
        self.matches = matches
        self.timeout = timeout
        self.call = call
        # the hook's "if" rule, on the event it would be sent (None: always runs)
        self.when: Callable[[Mapping[str, Any]], bool] | None = None


class SettingsRunner:
    """Runs a settings file's hooks for one pipeline: selection, parallel execution,
    precedence, failure reporting.  Per-call state lives in locals, except the "ask"
    answers of PreToolUse hooks, kept (bounded) until the same call's approval step."""

    _MAX_ASKS = 4096

    def __init__(self, settings: HookTable, pipe: Pipeline) -> None:
        self.settings = settings
        self.pipe = pipe
        self.mapping = settings.mapping
        self.cwd = settings.project_dir
        self._asks: dict[tuple[str, str], str] = {}
        self._selected: dict[tuple[str, str], tuple[SettingsHook, ...]] = {}

    def select(self, event: str, subject: str) -> tuple[SettingsHook, ...]:
        """The hooks of ``event`` whose matcher matches ``subject``, one per command or
        URL (Claude runs a duplicate once)."""
        key = (event, subject)
        found = self._selected.get(key)
        if found is None:
            unique: dict[str, SettingsHook] = {}
            for hook in self.settings.hooks.get(event, ()):
                if hook.matches(subject):
                    unique.setdefault(hook.key, hook)
            found = tuple(unique.values())
            if len(self._selected) < 1024:  # tool names are few; do not grow unbounded
                self._selected[key] = found
        return found

    async def run(
        self,
        hooks: Sequence[SettingsHook],
        event: dict[str, Any],
        where: tuple[str, str, str, str, str, str],
    ) -> list[Answer]:
        """Run ``hooks`` in parallel on ``event``; the answers of those that answered, in
        file order.  Failures are reported and skipped; a ``continue: false`` raises
        ``AbortTurn`` once all have finished."""
        hooks = [h for h in hooks if h.when is None or h.when(event)]  # their "if"
        outcomes: list[_Outcome | None] = [None] * len(hooks)

        async def one(i: int, hook: SettingsHook) -> None:
            try:
                with anyio.fail_after(hook.timeout):
                    outcomes[i] = _Outcome(hook, await hook.call(event), None, None)
            except AbortTurn as exc:
                outcomes[i] = _Outcome(hook, None, exc, None)
            except Exception as exc:  # a non-blocking error, as in Claude Code
                outcomes[i] = _Outcome(hook, None, None, exc)

        if len(hooks) == 1:
            await one(0, hooks[0])
        else:
            async with anyio.create_task_group() as tg:
                for i, hook in enumerate(hooks):
                    tg.start_soon(one, i, hook)
        answers: list[Answer] = []
        abort: AbortTurn | None = None
        for outcome in outcomes:
            assert outcome is not None
            if outcome.error is not None:
                await self.failed(outcome.hook, outcome.error, where)
            elif outcome.abort is not None:
                abort = abort or outcome.abort
            elif outcome.answer is not None:
                answers.append(outcome.answer)
        if abort is not None:
            raise abort
        return answers

    async def failed(
        self, hook: SettingsHook, exc: Exception, where: tuple[str, str, str, str, str, str]
    ) -> None:
        hook_name, turn_id, agent_id, session_key, tool_name, call_id = where
        pipe = self.pipe
        timed_out = isinstance(exc, TimeoutError)
        text = f"timed out after {hook.timeout:g}s" if timed_out else str(exc) or type(exc).__name__
        pipe.stats.failures[hook.id] = pipe.stats.failures.get(hook.id, 0) + 1
        if timed_out:
            pipe.stats.timeouts[hook.id] = pipe.stats.timeouts.get(hook.id, 0) + 1
        log.warning(
            "%s '%s' failed (non-blocking, as in Claude Code): %s", hook_name, hook.id, text
        )
        if "interceptor_failed" in pipe.bus.wanted:
            await pipe.emit(
                InterceptorFailed,
                turn_id,
                agent_id,
                session_key,
                hook=hook_name,
                interceptor_id=hook.id,
                error_type=type(exc).__name__,
                error=text,
                policy="skip",
                timed_out=timed_out,
                tool_name=tool_name,
                tool_call_id=call_id,
            )

    def common(self, event_name: str, session_key: str) -> dict[str, Any]:
        return {
            "session_id": session_key,
            "transcript_path": None,
            "cwd": self.cwd,
            "permission_mode": "default",
            "hook_event_name": event_name,
        }

    # -- the handlers ---------------------------------------------------------------

    async def pre_tool_use(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        subject = self.mapping.claude_name(inp.tool_name, inp.raw_name)
        hooks = self.select("PreToolUse", subject)
        if not hooks:
            return
        event = tool_event(
            self.mapping,
            "PreToolUse",
            inp.tool_name,
            inp.raw_name,
            out.args,
            call_id=inp.tool_call_id,
            session_id=inp.session_key,
            cwd=self.cwd,
        )
        where = (
            "tool.before",
            inp.turn_id,
            inp.agent_id,
            inp.session_key,
            inp.tool_name,
            inp.tool_call_id,
        )
        answers = await self.run(hooks, event, where)
        denied = [a for a in answers if a.decision == "deny"]
        if denied:
            out.block = True
            out.block_reason = _reasons(denied, "blocked by a PreToolUse hook")
            return
        asked = [a for a in answers if a.decision == "ask"]
        updated = [a.updated_input for a in answers if a.updated_input is not None]
        if updated:
            # several hooks rewriting one call is undefined in Claude Code: the last in
            # file order wins here
            _, out.args = self.mapping.to_interpose(subject, updated[-1], like=out.args)
        if asked:
            if len(self._asks) >= self._MAX_ASKS:
                self._asks.pop(next(iter(self._asks)))
            self._asks[(inp.turn_id, inp.tool_call_id)] = _reasons(
                asked, "a PreToolUse hook asks for approval"
            )

    async def permission_request(self, request: ApprovalRequest) -> Approval | None:
        asked = self._asks.pop((request.turn_id, request.tool_call_id), None)
        subject = self.mapping.claude_name(request.tool_name)
        hooks = self.select("PermissionRequest", subject)
        answers: list[Answer] = []
        if hooks:
            event = tool_event(
                self.mapping,
                "PermissionRequest",
                request.tool_name,
                "",
                request.args,
                call_id=request.tool_call_id,
                session_id=request.session_key,
                cwd=self.cwd,
            )
            where = (
                "tool.approve",
                request.turn_id,
                request.agent_id,
                request.session_key,
                request.tool_name,
                request.tool_call_id,
            )
            answers = await self.run(hooks, event, where)
        denied = [a for a in answers if a.decision == "deny"]
        if denied:
            return Approval.deny(_reasons(denied, "denied by a PermissionRequest hook"))
        allowed = [a for a in answers if a.decision == "allow"]
        asks = [a for a in answers if a.decision == "ask"]
        if asks:
            return Approval.ask(_reasons(asks, "a PermissionRequest hook asks for approval"))
        if allowed:
            # a PermissionRequest "allow" answers the dialog a PreToolUse "ask" opened
            return Approval.allow(_reasons(allowed, ""))
        if asked is not None:
            return Approval.ask(asked)
        return None

    async def post_tool_use(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        result = out.result if isinstance(out.result, ToolResult) else ToolResult(output=out.result)
        if result.status in ("ok", "responded"):
            event_name = "PostToolUse"
        elif result.status == "error":
            event_name = "PostToolUseFailure"
        else:
            return  # blocked, denied or aborted: the tool never ran, as in Claude Code
        subject = self.mapping.claude_name(inp.tool_name, inp.raw_name)
        hooks = self.select(event_name, subject)
        if not hooks:
            return
        event = tool_event(
            self.mapping,
            "PostToolUse",
            inp.tool_name,
            inp.raw_name,
            inp.args,
            call_id=inp.tool_call_id,
            session_id=inp.session_key,
            cwd=self.cwd,
            result=result,
        )
        where = (
            "tool.after",
            inp.turn_id,
            inp.agent_id,
            inp.session_key,
            inp.tool_name,
            inp.tool_call_id,
        )
        answers = await self.run(hooks, event, where)
        blocked = [a for a in answers if a.decision in ("deny", "ask")]
        if blocked and event_name == "PostToolUse":
            result = refusal(
                "blocked",
                inp.tool_name,
                _reasons(blocked, "blocked by a PostToolUse hook"),
                decided_by=f"claude:PostToolUse {self.settings.name}",
            )
        contexts = [c for a in answers for c in a.context]
        if contexts:
            result.details.setdefault("additional_context", []).extend(contexts)
        out.result = result

    async def user_prompt_submit(self, inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        hooks = self.select("UserPromptSubmit", "")
        event = {**self.common("UserPromptSubmit", inp.session_key), "prompt": out.message}
        where = ("message.before", inp.turn_id, inp.agent_id, inp.session_key, "", "")
        answers = await self.run(hooks, event, where)
        blocked = [a for a in answers if a.decision in ("deny", "ask")]
        if blocked:
            raise AbortTurn(_reasons(blocked, "prompt blocked by a UserPromptSubmit hook"))
        contexts = [c for a in answers for c in a.context]
        if contexts:
            out.metadata.setdefault("additional_context", []).extend(contexts)
            # the model sees the message only: the context goes with it, after it
            out.message = "\n\n".join([out.message, *contexts])

    async def pre_compact(self, inp: CompactInput, out: CompactOutput) -> None:
        trigger = "manual" if inp.reason == "manual" else "auto"
        hooks = self.select("PreCompact", trigger)
        if not hooks:
            return
        event = {
            **self.common("PreCompact", inp.session_key),
            "trigger": trigger,
            "custom_instructions": out.instructions,
        }
        where = ("session.compact", inp.turn_id, inp.agent_id, inp.session_key, "", "")
        for answer in await self.run(hooks, event, where):
            if answer.decision == "deny":
                log.info(
                    "PreCompact hook asked to block compaction (not supported): %s", answer.reason
                )

    async def turn(self, ctx: TurnContext, call_next: Callable[[], Awaitable[None]]) -> None:
        turn = ctx.turn
        where = ("turn", turn.turn_id, turn.agent_id, turn.session_key, "", "")
        start = self.select("SessionStart", "startup")
        if start:
            event = {**self.common("SessionStart", turn.session_key), "source": "startup"}
            await self.run(start, event, where)
        try:
            await call_next()
            await self.stop(ctx, where)
        except AbortTurn:
            await self.end(turn.session_key, where)
            raise
        await self.end(turn.session_key, where)

    async def stop(self, ctx: TurnContext, where: tuple[str, str, str, str, str, str]) -> None:
        """Run the Stop hooks; while one blocks, resume the turn with its reason (when
        the body can be resumed), at most ``MAX_STOP_CONTINUES`` times."""
        turn = ctx.turn
        hooks = self.select("Stop", "")
        resume = getattr(ctx.body, "resume", None)
        active = False
        for attempt in range(MAX_STOP_CONTINUES + 1):
            if not hooks:
                return
            event = {**self.common("Stop", turn.session_key), "stop_hook_active": active}
            blocked = [
                a for a in await self.run(hooks, event, where) if a.decision in ("deny", "ask")
            ]
            if not blocked:
                return
            reason = _reasons(blocked, "a Stop hook asks to go on")
            if resume is None:
                log.warning(
                    "a Stop hook asked to continue the turn (%s), but this turn's body "
                    "cannot be resumed: the turn ends",
                    reason,
                )
                return
            if attempt == MAX_STOP_CONTINUES:
                log.warning(
                    "Stop hooks asked to continue the turn %d times: it ends now (%s)",
                    MAX_STOP_CONTINUES,
                    reason,
                )
                return
            active = True
            ctx.result = await resume(turn, reason)

    async def end(self, session_key: str, where: tuple[str, str, str, str, str, str]) -> None:
        hooks = self.select("SessionEnd", "other")
        if hooks:
            event = {**self.common("SessionEnd", session_key), "reason": "other"}
            await self.run(hooks, event, where)


def _reasons(answers: Sequence[Answer], default: str) -> str:
    return "; ".join(dict.fromkeys(a.reason for a in answers if a.reason)) or default
