"""Command hooks: a shell command per tool event, compatible with Claude Code hook scripts.

A ``CommandHook`` registers one interceptor (``source="command"``) that, for every tool
call it matches, starts the command, writes the event as one JSON object to its stdin,
and reads its answer from the exit code, stdout and stderr::

    exit 0   continue; stdout may be a JSON object carrying a decision (see below)
    exit 2   block (tool.before / tool.after) or deny (tool.approve); stderr is the reason
    other    a failure: the hook's ``on_error`` policy applies, interceptor_failed is published

With ``dialect="claude-code"`` the event is exactly Claude Code's (its tool names and
``tool_input`` fields, per-tool ``tool_response``; see ``tool_mapping``)
and ``updatedInput`` is mapped back to interpose's argument keys (``tool_mapping``).
What a command may print is read by ``verdict``; its allow/deny lists become one tool
matcher in ``filter``.

The events and what they are called on the hook's stdin (``hook_event_name``)::

    tool.before   PreToolUse          may block, rewrite the arguments, abort the turn
    tool.approve  PermissionRequest   may allow, deny, ask a human, abort the turn
    tool.after    PostToolUse         may block the result, add context, abort the turn

The command runs in a process group of its own, which dies with the call: at the
command's exit (a process it left in the background would otherwise hold its pipes,
and the call, until the timeout) and whenever the handler leaves before that.  The
answer is what the command wrote before it exited.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.abc
import msgspec

from ...errors import AbortTurn, ConfigError, InterposeError, RegistrationError
from ...pipeline.hooks import OnError
from ...pipeline.payloads import (
    Approval,
    ApprovalRequest,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
    refusal,
)
from ...pipeline.registry import Interceptor, Registry
from ...pipeline.shadow import MODES, Mode
from ...pipeline.tools import TOOL_GROUPS, in_namespace
from .._process_group import kill_group, wait_exited
from .filter import tool_matcher
from .tool_mapping import ToolMapping, default_tool_mapping, tool_event
from .verdict import NO_VERDICT, Verdict, decode_output, encode_event, read_verdict

if TYPE_CHECKING:
    from ...pipeline.pipeline import Pipeline

__all__ = [
    "CLAUDE_EVENT_NAMES",
    "DEFAULT_MAX_OUTPUT_BYTES",
    "PASSED_ENV_VARS",
    "CommandHook",
    "CommandHookError",
]

log = logging.getLogger("interpose.command_hooks")

#: The Claude Code event name sent as ``hook_event_name`` for each interpose hook.
CLAUDE_EVENT_NAMES: dict[str, str] = {
    "tool.before": "PreToolUse",
    "tool.after": "PostToolUse",
    "tool.approve": "PermissionRequest",
}
_EVENTS_BY_CLAUDE_NAME = {claude: hook for hook, claude in CLAUDE_EVENT_NAMES.items()}

#: The variables a command inherits from this process (when set); everything else is
#: dropped unless passed in ``env``.
PASSED_ENV_VARS: tuple[str, ...] = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ")

#: How much of stdout a command may write before it is killed (and of stderr is kept).
DEFAULT_MAX_OUTPUT_BYTES = 1 << 20

_POSIX = os.name == "posix"
_SHELL = ("/bin/sh", "-c")
_STDERR_QUOTED = 500  # characters of stderr quoted in a failure message
_DRAIN_GRACE = 1.0  # s: after the command exits, for the rest of its output


class CommandHookError(InterposeError, RuntimeError):
    """A command hook failed: it exited with a code other than 0 or 2, was killed by a
    signal, wrote more than its output limit to stdout, or printed a JSON object of the
    wrong shape.  The pipeline applies the hook's ``on_error`` policy to it.

    Attributes:
        command: the command line, as configured.
        returncode: the exit code (negative: killed by that signal), None if it had not
            exited.
        stderr: the end of what it wrote to stderr, decoded.
    """

    def __init__(
        self, message: str, *, command: str, returncode: int | None = None, stderr: str = ""
    ) -> None:
        super().__init__(message)
        self.command = command
        self.returncode = returncode
        self.stderr = stderr


# -- the hook -----------------------------------------------------------------------------


class CommandHook:
    """Run ``command`` on each matching tool event, Claude Code style.

    Args:
        command: a command line (run with ``/bin/sh -c``) or an argv list (run directly).
        event: "tool.before", "tool.after" or "tool.approve"; the Claude Code names
            "PreToolUse", "PostToolUse" and "PermissionRequest" are accepted too.
        allow: the tools it runs for: names (``"exec"``, aliases allowed), ``group:*``
            names and regexes (a string that is not a plain name, e.g. ``"^mcp__"``, or
            a compiled pattern), searched in the normalized name.  Empty: every tool.
        deny: tools it never runs for, in the same forms; deny wins over allow.
        timeout: seconds the command may run; then it is killed and the call follows
            ``on_error`` (a timed-out approver denies).
        on_error: the policy for failures; default that of the hook (block before and
            at approval, skip after).
        priority: its place among the interceptors of its hook.
        env: variables added to the minimal environment (see ``PASSED_ENV_VARS``).
        cwd: the directory it runs in (default: the current one, when constructed);
            also sent as ``cwd`` and as ``CLAUDE_PROJECT_DIR``.
        id: the registration id; default ``"command:<command>"``.
        shell: run a string command through ``/bin/sh -c`` (default: whether ``command``
            is a string); an argv list with ``shell=True`` is quoted into one line.
        max_output_bytes: how much the command may write to stdout before it is killed
            and the call fails; the same amount of stderr is kept (the end of it).
        dialect: ``"interpose"`` (interpose's tool names and argument keys on stdin) or
            ``"claude-code"`` (exactly what Claude Code sends: ``Bash``, ``file_path``,
            Claude's ``tool_response``; ``updatedInput`` is mapped back).  See
            ``interpose.external.command.tool_mapping``.
        tool_mapping: the tool table of the ``claude-code`` dialect (default
            ``default_tool_mapping()``); extend it for the application's own tools.
        mode: ``"shadow"``: the command runs on every matching call and what it
            answers is recorded (``shadow_decision`` events), never enforced; its exit
            codes, timeouts and crashes never affect the call.

    Raises:
        ConfigError: an unknown event, an empty command, a program that does not exist
            or is not executable (the message names its path), a bad timeout, on_error,
            priority, id, cwd, env, output limit or dialect, or an allow/deny item that
            is not a valid name, group or regex.
    """

    __slots__ = (
        "_argv",
        "_derived_id",
        "_env",
        "_mapping",
        "_names",
        "allow",
        "command",
        "command_line",
        "cwd",
        "deny",
        "dialect",
        "env",
        "event",
        "id",
        "max_output_bytes",
        "mode",
        "on_error",
        "priority",
        "shell",
        "timeout",
        "tool_matcher",
    )

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        event: str = "tool.before",
        allow: Iterable[str | re.Pattern[str]] = (),
        deny: Iterable[str | re.Pattern[str]] = (),
        timeout: float = 60.0,
        on_error: OnError | None = None,
        priority: int = 0,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        id: str | None = None,
        shell: bool | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        dialect: Literal["interpose", "claude-code"] = "interpose",
        tool_mapping: ToolMapping | None = None,
        mode: Mode = "enforce",
    ) -> None:
        self.event = _check_event(event)
        self.command = command if isinstance(command, str) else tuple(command)
        if isinstance(self.command, str):
            line = self.command
        else:
            if not self.command or not all(isinstance(a, str) for a in self.command):
                raise ConfigError(
                    f"command hook: command must be a str or a list of str, got {command!r}"
                )
            line = shlex.join(self.command)
        if not line.strip():
            raise ConfigError("command hook: the command is empty")
        self.command_line = line
        where = f"command hook {line!r}"
        self.shell = isinstance(command, str) if shell is None else bool(shell)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise ConfigError(
                f"{where}: timeout must be a positive number of seconds, got {timeout!r}"
            )
        self.timeout = float(timeout)
        if (
            isinstance(max_output_bytes, bool)
            or not isinstance(max_output_bytes, int)
            or max_output_bytes <= 0
        ):
            raise ConfigError(
                f"{where}: max_output_bytes must be a positive int, got {max_output_bytes!r}"
            )
        self.max_output_bytes = max_output_bytes
        if on_error not in (None, "block", "skip", "raise"):
            raise ConfigError(
                f"{where}: on_error must be 'block', 'skip' or 'raise', got {on_error!r}"
            )
        self.on_error = on_error
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise ConfigError(f"{where}: priority must be an int, got {priority!r}")
        self.priority = priority
        self.cwd = os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())
        if not os.path.isdir(self.cwd):
            raise ConfigError(f"{where}: cwd {self.cwd} is not a directory")
        self.env = dict(env or {})
        for key, value in self.env.items():
            if not isinstance(key, str) or not isinstance(value, str) or not key or "=" in key:
                raise ConfigError(
                    f"{where}: env must map names to str values, got {key!r}: {value!r}"
                )
        self._env = _child_env(self.cwd, self.env)
        self._argv = _argv(self.command, self.shell, self.cwd, self._env, where)
        if id is not None and (not isinstance(id, str) or not id):
            raise ConfigError(f"{where}: id must be a non-empty str, got {id!r}")
        self._derived_id = id is None
        self.id = f"command:{line}" if id is None else id
        self.allow = tuple(allow) if not isinstance(allow, str | re.Pattern) else (allow,)
        self.deny = tuple(deny) if not isinstance(deny, str | re.Pattern) else (deny,)
        self.tool_matcher, self._names = tool_matcher(self.allow, self.deny, where)
        if dialect not in ("interpose", "claude-code"):
            raise ConfigError(
                f"{where}: dialect must be 'interpose' or 'claude-code', got {dialect!r}"
            )
        self.dialect = dialect
        if mode not in MODES:
            raise ConfigError(f"{where}: mode must be 'enforce' or 'shadow', got {mode!r}")
        self.mode: Mode = mode
        self._mapping: ToolMapping | None = None
        if dialect == "claude-code":
            self._mapping = tool_mapping if tool_mapping is not None else default_tool_mapping()

    def __repr__(self) -> str:
        return f"<CommandHook {self.id!r} on {self.event}>"

    # -- registration ---------------------------------------------------------------

    def interceptors(self, *, id: str | None = None) -> list[Interceptor]:
        """The one interceptor that runs the command (``id`` overrides ``self.id``)."""
        rid = self.id if id is None else id
        handler: Any
        if self.event == "tool.before":
            handler = functools.partial(self._before, rid)
        elif self.event == "tool.after":
            handler = functools.partial(self._after, rid)
        else:
            handler = functools.partial(self._approve, rid)
        return [
            Interceptor(
                id=rid,
                hook=self.event,
                handler=handler,
                priority=self.priority,
                tool_matcher=self.tool_matcher,
                on_error=self.on_error,
                timeout=self.timeout,
                source="command",
                mode=self.mode,
            )
        ]

    def install(self, pipe: Pipeline | Registry) -> Interceptor:
        """Add the interceptor to ``pipe`` (a Pipeline or a Registry); returns it.

        A default id that is already taken gets a ``#2``, ``#3``… suffix, so one script
        may serve several events; an explicit ``id`` must be free.

        Raises:
            RegistrationError: a tool named in allow/deny is neither known nor
                registered (the message lists the valid names), the filter matches no
                known or registered tool, or the explicit id is taken.
        """
        registry = pipe if isinstance(pipe, Registry) else pipe.registry
        namespaces = registry.tool_namespaces  # tools listed at run time (MCP servers)
        for name in self._names - registry.known_tools:
            if in_namespace(name, namespaces):
                registry.register_tool(name)  # named by the user: a tool of that server
        unknown = sorted(self._names - registry.known_tools)
        if unknown:
            raise RegistrationError(
                f"registration {self.id!r}: allow/deny name unknown tools {unknown}; "
                f"valid tool names: {', '.join(sorted(registry.known_tools))}; "
                f"groups: {', '.join(sorted(TOOL_GROUPS))}",
                registration_id=self.id,
            )
        rid = registry.unique_id(self.id) if self._derived_id else self.id
        (reg,) = self.interceptors(id=rid)
        registry.add(reg)
        return reg

    # -- the handlers (per-call state stays in locals) ----------------------------------

    async def _before(self, rid: str, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        returncode, stdout, stderr = await self.run(
            self._event(
                inp.tool_name,
                inp.raw_name,
                out.args,
                inp.tool_call_id,
                inp.agent_id,
                inp.session_key,
                inp.turn_id,
            )
        )
        verdict = self.verdict(rid, returncode, stdout, stderr)
        if verdict.decision == "deny":
            out.block = True
            out.block_reason = verdict.reason or f"blocked by command hook {self.command_line!r}"
            return
        if verdict.decision == "ask":
            # nobody can be asked before the approvers run: fail closed, and say where
            # an "ask" works
            out.block = True
            out.block_reason = (
                f"approval required ({verdict.reason or self.command_line}): a tool.before "
                "command hook cannot ask; register it with event='tool.approve'"
            )
            return
        if verdict.updated_input is not None:
            if self._mapping is not None:
                # Claude's field names back to the ones this call uses
                claude_name = self._mapping.claude_name(inp.tool_name, inp.raw_name)
                _, out.args = self._mapping.to_interpose(
                    claude_name, verdict.updated_input, like=out.args
                )
            else:
                out.args = verdict.updated_input
        if verdict.additional_context is not None:
            log.warning(
                "command hook %r: additionalContext is only used on tool.after; ignored", rid
            )

    async def _after(self, rid: str, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        result = out.result if isinstance(out.result, ToolResult) else ToolResult(output=out.result)
        event = self._event(
            inp.tool_name,
            inp.raw_name,
            inp.args,
            inp.tool_call_id,
            inp.agent_id,
            inp.session_key,
            inp.turn_id,
            result,
        )
        if self._mapping is None:
            event["tool_response"] = {
                "output": result.output,
                "is_error": result.is_error,
                "status": result.status,
            }
            event["duration_ms"] = inp.duration_ns / 1e6
        returncode, stdout, stderr = await self.run(event)
        verdict = self.verdict(rid, returncode, stdout, stderr)
        if verdict.updated_input is not None:
            log.warning("command hook %r: updatedInput is ignored on tool.after", rid)
        if verdict.decision in ("deny", "ask"):
            reason = verdict.reason or f"blocked by command hook {self.command_line!r}"
            result = refusal("blocked", inp.tool_name, reason, decided_by=rid)
        if verdict.additional_context is not None:
            result.details.setdefault("additional_context", []).append(verdict.additional_context)
        out.result = result

    async def _approve(self, rid: str, request: ApprovalRequest) -> Approval | None:
        returncode, stdout, stderr = await self.run(
            self._event(
                request.tool_name,
                request.tool_name,
                request.args,
                request.tool_call_id,
                request.agent_id,
                request.session_key,
                request.turn_id,
            )
        )
        verdict = self.verdict(rid, returncode, stdout, stderr)
        if verdict.updated_input is not None:
            log.warning(
                "command hook %r: updatedInput is ignored on tool.approve (approvers "
                "cannot rewrite arguments; use event='tool.before')",
                rid,
            )
        if verdict.additional_context is not None:
            log.warning(
                "command hook %r: additionalContext is only used on tool.after; ignored", rid
            )
        if verdict.decision == "deny":
            return Approval.deny(verdict.reason or f"denied by command hook {self.command_line!r}")
        if verdict.decision == "ask":
            return Approval.ask(
                verdict.reason or f"command hook {self.command_line!r} asks for approval"
            )
        if verdict.decision == "allow":
            return Approval.allow(verdict.reason)
        return None  # no opinion: like any approver that returns None, it allows

    # -- the command --------------------------------------------------------------------

    def _event(
        self,
        tool_name: str,
        raw_name: str,
        args: dict[str, Any],
        call_id: str,
        agent_id: str,
        session_key: str,
        turn_id: str,
        result: ToolResult | None = None,
    ) -> dict[str, Any]:
        """The JSON object written to the command's stdin: Claude Code's field names
        plus interpose's own, or in the claude-code dialect exactly Claude's event."""
        if self._mapping is not None:
            return tool_event(
                self._mapping,
                CLAUDE_EVENT_NAMES[self.event],
                tool_name,
                raw_name,
                args,
                call_id=call_id,
                session_id=session_key,
                cwd=self.cwd,
                result=result,
            )
        return {
            "session_id": session_key,
            "transcript_path": None,
            "cwd": self.cwd,
            "hook_event_name": CLAUDE_EVENT_NAMES[self.event],
            "tool_name": tool_name,
            "raw_tool_name": raw_name or tool_name,
            "tool_input": args,
            "tool_use_id": call_id,
            "tool_call_id": call_id,
            "agent_id": agent_id,
            "turn_id": turn_id,
            "interpose_hook": self.event,
        }

    async def run(
        self, event: dict[str, Any], env: Mapping[str, str] | None = None
    ) -> tuple[int, bytes, bytes]:
        """Run the command with ``event`` on stdin; returns (exit code, stdout, stderr).
        ``env`` adds variables to its environment for this run (``CLAUDE_ENV_FILE``).

        Raises:
            CommandHookError: stdout over ``max_output_bytes`` (the command is killed).
            OSError: the command could not be started.
        """
        payload = encode_event(event)
        limit = self.max_output_bytes
        stdout = bytearray()
        stderr = bytearray()
        flooded = False
        errors: list[BaseException] = []
        process = await anyio.open_process(
            self._argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=self.cwd,
            env={**self._env, **env} if env else self._env,
            # its own process group, so that a timeout kills what it started too
            start_new_session=_POSIX,
        )
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        stdin_stream, stdout_stream, stderr_stream = process.stdin, process.stdout, process.stderr

        async def feed() -> None:
            try:
                await stdin_stream.send(payload)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass  # it exited without reading its input: allowed
            except Exception as exc:  # re-raised after the task group
                errors.append(exc)
            finally:
                with anyio.CancelScope(shield=True):
                    try:
                        await stdin_stream.aclose()
                    except (anyio.BrokenResourceError, OSError):
                        pass

        async def read_stdout() -> None:
            nonlocal flooded
            try:
                async for chunk in stdout_stream:
                    if len(stdout) + len(chunk) > limit:
                        flooded = True
                        kill_group(process)
                        return
                    stdout.extend(chunk)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            except Exception as exc:  # re-raised after the task group
                errors.append(exc)

        async def read_stderr() -> None:
            try:
                async for chunk in stderr_stream:
                    stderr.extend(chunk)
                    if len(stderr) > limit:
                        del stderr[:-limit]  # keep the end: that is where errors are
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            except Exception as exc:  # re-raised after the task group
                errors.append(exc)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(feed)
                tg.start_soon(read_stdout)
                tg.start_soon(read_stderr)
                # The command's own exit ends the hook, not the end of its output: a
                # process it left in the background (`sleep 600 &`) holds the pipes open
                # and would hold the call until the timeout.  Its group dies now, so the
                # pipes close once the readers have what was written before the exit.
                returncode = await wait_exited(process)
                kill_group(process)
                # bounded: a process that left the group (setsid) may still hold a pipe
                tg.cancel_scope.deadline = anyio.current_time() + _DRAIN_GRACE
        finally:
            # finished, cancelled (the pipeline's timeout, or the caller's) or flooded:
            # the command and everything in its process group die with the call, even
            # when the command itself has exited already
            kill_group(process)
            with anyio.CancelScope(shield=True):
                await process.aclose()
        if errors:
            raise errors[0]
        if flooded:
            raise CommandHookError(
                f"command hook {self.command_line!r} wrote more than {limit} bytes to stdout "
                "and was killed",
                command=self.command_line,
                returncode=returncode,
                stderr=_tail(stderr),
            )
        return returncode, bytes(stdout), bytes(stderr)

    def verdict(self, rid: str, returncode: int, stdout: bytes, stderr: bytes) -> Verdict:
        """Read what the command decided.

        Raises:
            AbortTurn: ``continue: false``, or a PermissionRequest deny with
                ``interrupt: true``.
            CommandHookError: an exit code other than 0 and 2, or JSON of the wrong shape.
        """
        if returncode == 2:
            return Verdict("deny", stderr.decode("utf-8", "replace").strip())
        if returncode != 0:
            tail = _tail(stderr)
            if returncode < 0:
                try:
                    how = f"was killed by {signal.Signals(-returncode).name}"
                except ValueError:
                    how = f"was killed by signal {-returncode}"
            else:
                how = f"exited {returncode}"
            raise CommandHookError(
                f"command hook {self.command_line!r} {how}: {tail or '(no stderr)'}",
                command=self.command_line,
                returncode=returncode,
                stderr=tail,
            )
        text = stdout.strip()
        if not text.startswith(b"{"):
            if text:
                log.debug("command hook %r printed (not JSON, ignored): %.200r", rid, text)
            return NO_VERDICT
        try:
            output = decode_output(text)
        except msgspec.ValidationError as exc:
            raise CommandHookError(
                f"command hook {self.command_line!r} printed a JSON object of the wrong "
                f"shape: {exc}",
                command=self.command_line,
                returncode=returncode,
                stderr=_tail(stderr),
            ) from None
        except msgspec.DecodeError:
            # Claude Code treats output it cannot parse as plain text, and so do we
            log.debug("command hook %r printed (not JSON, ignored): %.200r", rid, text)
            return NO_VERDICT
        if output.system_message:
            log.info("command hook %r: %s", rid, output.system_message)
        if not output.continue_:
            raise AbortTurn(output.stop_reason or f"stopped by command hook {self.command_line!r}")
        return read_verdict(output)


# -- construction helpers -----------------------------------------------------------------


def _check_event(event: object) -> str:
    if isinstance(event, str):
        hook = _EVENTS_BY_CLAUDE_NAME.get(event, event)
        if hook in CLAUDE_EVENT_NAMES:
            return hook
    choices = ", ".join(f"{h!r} ({c})" for h, c in CLAUDE_EVENT_NAMES.items())
    raise ConfigError(f"command hook: unknown event {event!r}; events: {choices}")


def _child_env(cwd: str, extra: Mapping[str, str]) -> dict[str, str]:
    env = {name: os.environ[name] for name in PASSED_ENV_VARS if name in os.environ}
    env.setdefault("PATH", os.defpath)
    env["CLAUDE_PROJECT_DIR"] = cwd
    env.update(extra)
    return env


# the words that may start a `sh -c` line without being a program on PATH
_SHELL_BUILTINS = """
    . : alias bg break cd command continue echo eval exec exit export false fg getopts hash
    jobs kill printf pwd read readonly return set shift test times trap true type ulimit
    umask unalias unset wait if then else elif fi case esac for while until do done in time
"""
_SHELL_WORDS = frozenset(_SHELL_BUILTINS.split())
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
_PLAIN_WORD = re.compile(r"[\w.+\-]+")
_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def _argv(
    command: str | tuple[str, ...], shell: bool, cwd: str, env: Mapping[str, str], where: str
) -> list[str]:
    """The argv to start, after checking that the program exists.

    Raises:
        ConfigError: the program does not exist or is not executable, or a command line
            that cannot be split into words.
    """
    if shell:
        line = command if isinstance(command, str) else shlex.join(command)
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise ConfigError(f"{where}: cannot split the command line: {exc}") from None
        while words and _ASSIGNMENT.match(words[0]):
            words.pop(0)  # FOO=bar cmd ...: the program is the first word after them
        first = _expand(words[0], env) if words else None
        if first is not None and "/" in first:
            _check_path(first, cwd, where)
        elif first is not None and first not in _SHELL_WORDS and _PLAIN_WORD.fullmatch(first):
            _check_on_path(first, env, where)
        return [*_SHELL, line]
    argv = [command] if isinstance(command, str) else list(command)
    if "/" in argv[0]:
        argv[0] = _check_path(argv[0], cwd, where)
    else:
        _check_on_path(argv[0], env, where)
    return argv


def _expand(word: str, env: Mapping[str, str]) -> str | None:
    """``word`` with ``$VAR``/``${VAR}`` and a leading ``~`` expanded from the command's
    environment; None when that cannot be done before running it."""
    if "`" in word or "$(" in word:
        return None
    missing = False

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        name = match.group(1) or match.group(2)
        if name not in env:
            missing = True
        return env.get(name, "")

    word = _VARIABLE.sub(value, word)
    if missing:
        return None
    if word == "~" or word.startswith("~/"):
        home = env.get("HOME")
        if home is None:
            return None
        word = home + word[1:]
    return word


def _check_path(path: str, cwd: str, where: str) -> str:
    full = os.path.normpath(os.path.join(cwd, path))
    if not os.path.isfile(full):
        raise ConfigError(f"{where}: {full} does not exist")
    if not os.access(full, os.X_OK):
        raise ConfigError(
            f"{where}: {full} is not executable (chmod +x it, or run it through an "
            f"interpreter: 'bash {path}')"
        )
    return full


def _check_on_path(name: str, env: Mapping[str, str], where: str) -> None:
    search = env.get("PATH", os.defpath)
    if shutil.which(name, path=search) is None:
        raise ConfigError(f"{where}: {name!r} not found on PATH ({search})")


def _tail(data: bytes | bytearray) -> str:
    text = bytes(data).decode("utf-8", "replace").strip()
    return text if len(text) <= _STDERR_QUOTED else "…" + text[-_STDERR_QUOTED:]
