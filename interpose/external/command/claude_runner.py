"""Running a Claude Code settings file's hooks for one pipeline: selection by matcher,
parallel execution, Claude's precedence (deny > ask > allow), failure reporting.

As in Claude Code, a hook that fails (an exit code other than 0 and 2, a timeout, an
HTTP status other than 2xx, a connection error) is a non-blocking error: the call goes
on.  The failure is logged, counted in ``pipe.stats`` and published as an
``interceptor_failed`` event with ``policy="skip"``.  ``claude_settings`` loads the
file and registers what this module runs.

``async``/``asyncRewake`` hooks run in the background (``background``); what any hook
says for the caller (``systemMessage``, an async hook's ``additionalContext``, an
``asyncRewake`` reminder) is published as a ``hook_message`` event and kept for the
session's next tool result or message.  SessionStart hooks get a ``CLAUDE_ENV_FILE``
(``claude_env``); with a transcript directory every hook gets a real
``transcript_path`` (``transcript``).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, Protocol

import anyio

from ...bus.events import HookMessage, InterceptorFailed
from ...errors import AbortTurn
from ...pipeline.payloads import (
    Approval,
    ApprovalRequest,
    CompactInput,
    CompactOutput,
    LLMAfterInput,
    LLMAfterOutput,
    MessageBeforeInput,
    MessageBeforeOutput,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
    refusal,
)
from .background import BackgroundHooks
from .claude_env import Exports, exporting, read_env_file
from .tool_mapping import ToolMapping, tool_event
from .transcript import Transcripts
from .verdict import Answer

if TYPE_CHECKING:
    from ...pipeline.context import ToolContext, TurnContext
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
    @property
    def transcripts(self) -> Transcripts | None: ...


class _Outcome(NamedTuple):
    hook: SettingsHook
    answer: Answer | None
    abort: AbortTurn | None
    error: Exception | None


#: How a hook runs: in the call (""), in the background ("async"), in the background
#: and waking the agent on exit 2 ("rewake": ``asyncRewake``).
Background = Literal["", "async", "rewake"]

#: A hook's call: the event, and variables added to its environment for this run.
HookCall = Callable[[dict[str, Any], Mapping[str, str]], Awaitable[Answer]]

#: (interpose hook point, turn id, agent id, session key, tool name, tool call id)
Where = tuple[str, str, str, str, str, str]

_MAX_PENDING = 64  # messages kept per session for its calls
_MAX_SESSIONS = 1024  # sessions with pending messages or exports (least recent dropped)


class SettingsHook:
    """One ``{"type": "command" | "http", ...}`` entry of a settings file."""

    __slots__ = (
        "background",
        "call",
        "id",
        "key",
        "label",
        "matcher",
        "matches",
        "timeout",
        "when",
    )

    def __init__(
        self,
        id: str,
        key: str,
        label: str,
        matches: Callable[[str], bool],
        timeout: float,
        call: HookCall,
        matcher: str = "",
        background: Background = "",
    ) -> None:
        self.id = id
        self.background: Background = background
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
    precedence, failure reporting, background hooks and what they say.  Per-call state
    lives in locals, except (each bounded) the "ask" answers of PreToolUse hooks, kept
    until the same call's approval step, the messages waiting for a session's next
    call, and the variables its SessionStart hooks exported (``CLAUDE_ENV_FILE``)."""

    _MAX_ASKS = 4096

    def __init__(self, settings: HookTable, pipe: Pipeline) -> None:
        self.settings = settings
        self.pipe = pipe
        self.mapping = settings.mapping
        self.cwd = settings.project_dir
        self.transcripts = settings.transcripts
        self.background = BackgroundHooks(settings.name)
        self._asks: dict[tuple[str, str], str] = {}
        self._selected: dict[tuple[str, str], tuple[SettingsHook, ...]] = {}
        # session -> (channel, text) for its next call: what background hooks said, and
        # the system messages of hooks whose own call cannot carry them
        # session -> (channel, text, the call it is for: "" for the session's next one)
        self.pending: OrderedDict[str, list[tuple[str, str, str]]] = OrderedDict()
        self.exports: OrderedDict[str, Exports] = OrderedDict()
        self._env_dir: str | None = None

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
        where: Where,
        env: Mapping[str, str] | None = None,
    ) -> list[Answer]:
        """Run ``hooks`` in parallel on ``event``; the answers of those that answered, in
        file order.  Failures are reported and skipped; a ``continue: false`` raises
        ``AbortTurn`` once all have finished.  A hook with an ``if`` rule runs only on
        the calls it matches.  ``async`` hooks are started in the background and answer
        nothing here; the ``systemMessage`` of the others is published
        (``hook_message``) and kept for the session's next call."""
        hooks = [h for h in hooks if h.when is None or h.when(event)]  # their "if"
        extra: Mapping[str, str] = env or {}
        if any(hook.background for hook in hooks):
            for hook in hooks:
                if hook.background:
                    await self.start_background(hook, event, where, extra)
            hooks = [hook for hook in hooks if not hook.background]
        outcomes: list[_Outcome | None] = [None] * len(hooks)

        async def one(i: int, hook: SettingsHook) -> None:
            try:
                with anyio.fail_after(hook.timeout):
                    outcomes[i] = _Outcome(hook, await hook.call(event, extra), None, None)
            except AbortTurn as exc:
                outcomes[i] = _Outcome(hook, None, exc, None)
            except Exception as exc:  # a non-blocking error, as in Claude Code
                outcomes[i] = _Outcome(hook, None, None, exc)

        if len(hooks) == 1:
            await one(0, hooks[0])
        elif hooks:
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
                if outcome.answer.system_message:
                    text = outcome.answer.system_message
                    await self.say(outcome.hook, where, event, "system_message", text)
        if abort is not None:
            raise abort
        return answers

    # -- background hooks and what hooks say ----------------------------------------

    async def start_background(
        self, hook: SettingsHook, event: dict[str, Any], where: Where, env: Mapping[str, str]
    ) -> None:
        """Start an ``async`` hook; what it says arrives with the session's next call."""

        async def job() -> None:
            try:
                with anyio.fail_after(hook.timeout):
                    answer = await hook.call(event, env)
            except AbortTurn as exc:
                log.info(
                    "async hook %r asked to stop (ignored: it ran after its call): %s",
                    hook.id,
                    exc.reason,
                )
                return
            except Exception as exc:  # a non-blocking error, as in Claude Code
                await self.failed(hook, exc, where)
                return
            await self.background_answered(hook, answer, event, where)

        why = self.background.spawn(job)
        if why is not None:
            await self.failed(hook, RuntimeError(f"async hook not started: {why}"), where)

    async def background_answered(
        self, hook: SettingsHook, answer: Answer, event: dict[str, Any], where: Where
    ) -> None:
        if hook.background == "rewake" and answer.exit_code == 2:
            text = answer.reason or f"{hook.label} asks the agent to wake up"
            await self.say(hook, where, event, "rewake", text, background=True)
            return
        if answer.decision is not None or answer.updated_input is not None:
            log.debug("async hook %r: decision fields have no effect (ignored)", hook.id)
        if answer.system_message:
            await self.say(
                hook, where, event, "system_message", answer.system_message, background=True
            )
        for text in answer.context:
            await self.say(hook, where, event, "additional_context", text, background=True)

    async def say(
        self,
        hook: SettingsHook,
        where: Where,
        event: dict[str, Any],
        channel: Literal["system_message", "additional_context", "rewake"],
        text: str,
        *,
        background: bool = False,
    ) -> None:
        """Publish what a hook said (``hook_message``) and keep it for the call it ran
        for (a hook in the background: for the session's next call, or message): a
        system message goes to its result's details (``system_messages``) or its
        message's metadata, context and reminders to what the model reads."""
        hook_name, turn_id, agent_id, session_key, tool_name, call_id = where
        log.info("%s hook %r (%s): %s", event.get("hook_event_name", ""), hook.id, channel, text)
        queue = self.pending.get(session_key)
        if queue is None:
            queue = self.pending[session_key] = []
            if len(self.pending) > _MAX_SESSIONS:
                self.pending.popitem(last=False)
        if len(queue) < _MAX_PENDING:
            # a call's own hook: for that call (the session's other calls may be running)
            queue.append((channel, text, "" if background else call_id))
        if "hook_message" in self.pipe.bus.wanted:
            await self.pipe.emit(
                HookMessage,
                turn_id,
                agent_id,
                session_key,
                hook=hook_name,
                interceptor_id=hook.id,
                event=str(event.get("hook_event_name", "")),
                channel=channel,
                message=text,
                background=background,
                tool_name=tool_name,
                tool_call_id=call_id,
            )

    def take_pending(
        self, session_key: str, call_id: str | None = None
    ) -> tuple[list[str], list[str]]:
        """(system messages, context for the model) waiting in the session: those of
        the call ``call_id`` and the session's own, or (None: a new message) all."""
        queue = self.pending.pop(session_key, None) or []
        if call_id is not None:
            kept = [entry for entry in queue if entry[2] not in ("", call_id)]
            if kept:  # another call's, still running
                self.pending[session_key] = kept
                queue = [entry for entry in queue if entry[2] in ("", call_id)]
        messages = [text for channel, text, _ in queue if channel == "system_message"]
        context = [text for channel, text, _ in queue if channel != "system_message"]
        return messages, context

    async def failed(self, hook: SettingsHook, exc: Exception, where: Where) -> None:
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
            "transcript_path": self.transcript(session_key),
            "cwd": self.cwd,
            "permission_mode": "default",
            "hook_event_name": event_name,
        }

    def transcript(self, session_key: str) -> str | None:
        """The session's transcript file, when the settings keep transcripts."""
        return None if self.transcripts is None else self.transcripts.path(session_key)

    def env_file(self, session_key: str) -> str:
        """A fresh, empty ``CLAUDE_ENV_FILE`` for the session's SessionStart hooks."""
        if self._env_dir is None:
            self._env_dir = tempfile.mkdtemp(prefix="interpose-claude-env-")
            weakref.finalize(self, shutil.rmtree, self._env_dir, True)
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_key)
        path = Path(self._env_dir) / f"{name or 'default'}.sh"
        path.write_bytes(b"")
        os.chmod(path, 0o600)
        return str(path)

    # -- the handlers ---------------------------------------------------------------

    def tool_event(
        self,
        event_name: str,
        tool_name: str,
        raw_name: str,
        args: Mapping[str, Any],
        call_id: str,
        session_key: str,
        result: ToolResult | None = None,
    ) -> dict[str, Any]:
        event = tool_event(
            self.mapping,
            event_name,
            tool_name,
            raw_name,
            args,
            call_id=call_id,
            session_id=session_key,
            cwd=self.cwd,
            result=result,
        )
        event["transcript_path"] = self.transcript(session_key)
        return event

    async def pre_tool_use(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        subject = self.mapping.claude_name(inp.tool_name, inp.raw_name)
        if self.transcripts is not None:
            _, tool_input = self.mapping.to_claude(inp.tool_name, out.args, inp.raw_name)
            self.transcripts.assistant(
                inp.session_key, "", [(inp.tool_call_id, subject, tool_input)]
            )
        hooks = self.select("PreToolUse", subject)
        if not hooks:
            return
        event = self.tool_event(
            "PreToolUse",
            inp.tool_name,
            inp.raw_name,
            out.args,
            inp.tool_call_id,
            inp.session_key,
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
            event = self.tool_event(
                "PermissionRequest",
                request.tool_name,
                "",
                request.args,
                request.tool_call_id,
                request.session_key,
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
        if self.transcripts is not None:
            self.transcripts.tool_result(
                inp.session_key, inp.tool_call_id, result.output, result.is_error
            )
        if result.status in ("ok", "responded"):
            event_name = "PostToolUse"
        elif result.status == "error":
            event_name = "PostToolUseFailure"
        else:
            event_name = ""  # blocked, denied or aborted: the tool never ran, as in Claude Code
        subject = self.mapping.claude_name(inp.tool_name, inp.raw_name)
        hooks = self.select(event_name, subject) if event_name else ()
        answers: list[Answer] = []
        if hooks:
            event = self.tool_event(
                "PostToolUse",
                inp.tool_name,
                inp.raw_name,
                inp.args,
                inp.tool_call_id,
                inp.session_key,
                result,
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
        if self.deliver(inp.session_key, result.details, contexts, inp.tool_call_id) or hooks:
            out.result = result

    def after_tool(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        """tool.after of a file without PostToolUse hooks (sync: cheap): the transcript's
        line, and what waits for the session."""
        if self.transcripts is None and inp.session_key not in self.pending:
            return
        result = out.result if isinstance(out.result, ToolResult) else ToolResult(output=out.result)
        if self.transcripts is not None:
            self.transcripts.tool_result(
                inp.session_key, inp.tool_call_id, result.output, result.is_error
            )
        if self.deliver(inp.session_key, result.details, [], inp.tool_call_id):
            out.result = result

    def deliver(
        self,
        session_key: str,
        details: dict[str, Any],
        contexts: list[str],
        call_id: str | None = None,
    ) -> bool:
        """Add what waits for the session (for the call ``call_id``: see
        ``take_pending``), and ``contexts``, to ``details``; whether there was anything."""
        messages, waiting = self.take_pending(session_key, call_id)
        contexts = waiting + contexts
        if contexts:
            details.setdefault("additional_context", []).extend(contexts)
        if messages:
            details.setdefault("system_messages", []).extend(messages)
        return bool(contexts or messages)

    async def user_prompt_submit(self, inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        if self.transcripts is not None:
            self.transcripts.user(inp.session_key, out.message)
        hooks = self.select("UserPromptSubmit", "")
        event = {**self.common("UserPromptSubmit", inp.session_key), "prompt": out.message}
        where = ("message.before", inp.turn_id, inp.agent_id, inp.session_key, "", "")
        answers = await self.run(hooks, event, where) if hooks else []
        blocked = [a for a in answers if a.decision in ("deny", "ask")]
        if blocked:
            raise AbortTurn(_reasons(blocked, "prompt blocked by a UserPromptSubmit hook"))
        self.deliver_message(inp.session_key, out, [c for a in answers for c in a.context])

    def on_message(self, inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        """message.before of a file without UserPromptSubmit hooks (sync: cheap): the
        transcript's line, and what waits for the session."""
        if self.transcripts is not None:
            self.transcripts.user(inp.session_key, out.message)
        if inp.session_key in self.pending:
            self.deliver_message(inp.session_key, out, [])

    def deliver_message(
        self, session_key: str, out: MessageBeforeOutput, contexts: list[str]
    ) -> None:
        """Add what waits for the session, and ``contexts``, to the message."""
        before = len(out.metadata.get("additional_context", ()))
        if self.deliver(session_key, out.metadata, contexts):
            added = out.metadata.get("additional_context", [])[before:]
            if added:
                # the model sees the message only: the context goes with it, after it
                out.message = "\n\n".join([out.message, *added])

    async def llm_after(self, inp: LLMAfterInput, out: LLMAfterOutput) -> None:
        """Write the model's answer to the session's transcript."""
        assert self.transcripts is not None
        response = out.response
        uses = [
            (call.id, *self.mapping.to_claude(call.name, call.args, call.name))
            for call in response.tool_calls
        ]
        self.transcripts.assistant(inp.session_key, response.content, uses)

    async def exec_env(self, ctx: ToolContext, call_next: Callable[[], Awaitable[None]]) -> None:
        """Around a ``Bash`` call of a session whose SessionStart hooks exported
        variables: make them current (``claude_env.exported_env`` reads them)."""
        exports = self.exports.get(ctx.session_key)
        name = ctx.tool_name or ctx.raw_name
        if exports and self.mapping.claude_name(name, ctx.raw_name) == "Bash":
            with exporting(exports):
                await call_next()
        else:
            await call_next()

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
            await self.session_start(start, turn.session_key, where)
        try:
            await call_next()
            await self.stop(ctx, where)
        except AbortTurn:
            await self.end(turn.session_key, where)
            raise
        await self.end(turn.session_key, where)

    async def session_start(
        self, hooks: Sequence[SettingsHook], session_key: str, where: Where
    ) -> None:
        """Run the SessionStart hooks with a ``CLAUDE_ENV_FILE``; what they export there
        applies to the session's later ``Bash`` calls."""
        env_file = self.env_file(session_key)
        event = {**self.common("SessionStart", session_key), "source": "startup"}
        await self.run(hooks, event, where, {"CLAUDE_ENV_FILE": env_file})
        exports = read_env_file(env_file)
        if exports:
            self.exports[session_key] = exports
            self.exports.move_to_end(session_key)
            if len(self.exports) > _MAX_SESSIONS:
                self.exports.popitem(last=False)
        else:
            self.exports.pop(session_key, None)

    async def stop(self, ctx: TurnContext, where: Where) -> None:
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

    async def end(self, session_key: str, where: Where) -> None:
        hooks = self.select("SessionEnd", "other")
        if hooks:
            event = {**self.common("SessionEnd", session_key), "reason": "other"}
            await self.run(hooks, event, where)


def _reasons(answers: Sequence[Answer], default: str) -> str:
    return "; ".join(dict.fromkeys(a.reason for a in answers if a.reason)) or default
