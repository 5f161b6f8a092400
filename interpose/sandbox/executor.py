"""``ExecTool``: the built-in executor of the ``exec`` tool, in the sandbox.

Installed on a pipeline (``ExecTool(sandbox).install(pipe)``, or a ``[sandbox]`` table
in the config), ``pipe.call_tool("exec", {"command": ...})`` without ``call=`` runs the
command in the sandbox, after the guards.  The result is the text a model reads: the
output, the exit status, and one ``[sandbox] ...`` line per violation; each violation is
also a ``sandbox_violation`` bus event and a ``sandbox.violation`` event on the tool's
span.  An adapter can pass the same object as the ``call`` of its exec tool.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import trace

from ..bus.events import SandboxViolation
from .runner import Sandbox, SandboxResult
from .violations import Violation, describe

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline

__all__ = ["ExecTool", "format_result", "report"]


class ExecTool:
    """Runs an ``exec`` call's ``command`` (a string or an argv) in ``sandbox``.

    Args:
        sandbox: the sandbox.
        cwd: the working directory (the project); default the current one.  An
            ``exec`` call's own ``cwd`` argument, when given, must lie inside it.
        env: the environment (default: this process's at each call).
    """

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.sandbox = sandbox
        self.cwd = os.path.realpath(cwd) if cwd is not None else None
        self.env = env
        self.pipeline: Pipeline | None = None

    def __repr__(self) -> str:
        return f"ExecTool({self.sandbox!r})"

    def install(self, pipe: Pipeline) -> ExecTool:
        """Make this the executor of ``exec`` on ``pipe``; its violations go to its bus."""
        self.pipeline = pipe
        pipe.executors["exec"] = self
        return self

    async def __call__(self, args: dict[str, Any]) -> str:
        """Run ``args["command"]``; the text of the result.

        Raises:
            TypeError: ``command`` is missing or not a string or list of strings.
            ValueError: ``cwd`` lies outside the working directory.
            SandboxUnavailable: the sandbox is required and cannot run here.
        """
        command = args.get("command")
        if not isinstance(command, str | list) or not command:
            raise TypeError("exec needs a `command`: a string or a list of strings")
        cwd = _workdir(self.cwd or os.getcwd(), args.get("cwd"))
        result = await self.sandbox.run(command, cwd=cwd, env=self.env)
        shown = command if isinstance(command, str) else " ".join(command)
        await report(self.pipeline, result.violations, tool_name="exec", command=shown)
        return format_result(result)


def _workdir(base: str, wanted: object) -> str:
    """``base``, or the call's ``cwd`` argument when it lies inside it.

    Raises:
        ValueError: it lies outside.
    """
    if not isinstance(wanted, str) or not wanted:
        return base
    inner = os.path.realpath(os.path.join(base, wanted))
    if inner != base and not inner.startswith(base + "/"):
        raise ValueError(f"exec: cwd {wanted!r} lies outside {base}")
    return inner


async def report(
    pipe: Pipeline | None, violations: tuple[Violation, ...], *, tool_name: str, command: str
) -> None:
    """Each violation as a ``sandbox.violation`` event of the current span and, when
    ``pipe`` has a subscriber for them, as a ``sandbox_violation`` bus event."""
    if not violations:
        return
    span = trace.get_current_span()
    if span.is_recording():
        for v in violations:
            span.add_event(
                "sandbox.violation",
                {
                    "sandbox.violation": v.kind,
                    "sandbox.target": v.target,
                    "sandbox.detail": v.detail,
                },
            )
    if pipe is not None and "sandbox_violation" in pipe.bus.wanted:
        for v in violations:
            await pipe.emit(
                SandboxViolation,
                "",
                "",
                "",
                violation=v.kind,
                target=v.target,
                detail=v.detail,
                tool_name=tool_name,
                command=command,
            )


def format_result(result: SandboxResult) -> str:
    """The text a model reads: stdout, stderr, a non-zero exit status, the violations."""
    parts = [result.stdout.rstrip("\n"), result.stderr.rstrip("\n")]
    if result.exit_code != 0 and not result.timed_out:  # a time-out is a violation below
        parts.append(f"[exit status {result.exit_code}]")
    if not result.sandboxed:
        parts.append("[not sandboxed: the sandbox cannot run here]")
    parts.append(describe(result.violations))
    return "\n".join(p for p in parts if p)
