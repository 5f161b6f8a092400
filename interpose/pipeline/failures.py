"""Where a handler failed: its name, where it is defined, where it raised.

A ``Fault`` is made only when a handler fails (the loops do nothing for a handler that
returns), and read by everything that reports the failure: the log line, the
``interceptor_failed`` event, and the details of the result it blocked
(``details["failure"]``).  The reason the agent reads stays what it always was:
``interceptor '<id>' failed: <ExcType>: <msg>``.

A ``tool.before`` or ``command.before`` failure that blocks is reported by the stage,
which builds the refusal from ``out.block_reason``: the policy leaves a
``FailureReason`` there, a ``str`` that also holds its ``Fault``, and ``blocked``
turns it into the refusal with the failure in its details.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
from types import CodeType
from typing import Any

from .._locations import relative_location
from .payloads import ToolResult, refusal

__all__ = ["FailureReason", "Fault", "blocked", "debug_env", "relative_location"]


@dataclasses.dataclass(frozen=True, slots=True)
class Fault:
    """One failure of one handler, located.

    Attributes:
        handler: the handler's qualified name, with its module (``app.guards.no_rm``);
            the function a decorator wrapped (``functools.wraps``), the method of a
            bound method, the class of a callable object.
        defined_at: ``file:line`` where the handler is defined ("" when it has no
            Python code, a builtin say).
        raised_at: ``file:line`` of the frame that raised, the innermost of the
            traceback ("" for a deadline that passed: the handler raised nothing).
        error_type: the exception's class name.
        error: ``<ExcType>: <message>`` (a deadline: ``TimeoutError: timed out after
            <t>s``).
    """

    handler: str
    defined_at: str
    raised_at: str
    error_type: str
    error: str

    @classmethod
    def of(cls, handler: object, exc: BaseException, error: str, *, deadline: bool) -> Fault:
        """Locate the failure ``exc`` of ``handler``; ``error`` describes it,
        ``deadline`` says that ``exc`` is the handler's deadline passing (raised by
        the pipeline, not by the handler)."""
        target = _unwrapped(handler)
        code = _code(target)
        return cls(
            handler=_name(target),
            defined_at=f"{code.co_filename}:{code.co_firstlineno}" if code is not None else "",
            raised_at="" if deadline else _raised_at(exc),
            error_type=type(exc).__name__,
            error=error,
        )

    def details(self) -> dict[str, str]:
        """The fields as a dict: ``details["failure"]`` of a blocked result."""
        return {
            "handler": self.handler,
            "defined_at": self.defined_at,
            "raised_at": self.raised_at,
            "error_type": self.error_type,
            "error": self.error,
        }

    def where(self) -> str:
        """``handler <name> (<file:line>), raised at <file:line>``, for a log line:
        the files under the working directory named relative to it."""
        text = f"handler {self.handler}"
        if self.defined_at:
            text += f" ({relative_location(self.defined_at)})"
        if self.raised_at:
            text += f", raised at {relative_location(self.raised_at)}"
        return text


class FailureReason(str):
    """A block reason written by a failure policy: the text, and its ``fault``."""

    fault: Fault

    def __new__(cls, text: str, fault: Fault) -> FailureReason:
        reason = super().__new__(cls, text)
        reason.fault = fault
        return reason


def blocked(tool: str, reason: str, decided_by: str) -> ToolResult:
    """The refusal of a call that a before-hook blocked with ``reason``; when a
    failure policy blocked it, its details hold the failure (``details["failure"]``)."""
    if type(reason) is FailureReason:
        return refusal(
            "blocked", tool, str(reason), decided_by=decided_by, failure=reason.fault.details()
        )
    return refusal("blocked", tool, reason, decided_by=decided_by)


def debug_env() -> bool:
    """Whether ``INTERPOSE_DEBUG`` asks for tracebacks (1, true, yes, on)."""
    return os.environ.get("INTERPOSE_DEBUG", "").strip().lower() in ("1", "true", "yes", "on")


def _unwrapped(handler: object) -> object:
    """The user's own callable behind decorators, partials and bound methods."""
    seen = 0
    while seen < 100:  # bounded: a __wrapped__ cycle must not hang a failure report
        seen += 1
        if isinstance(handler, functools.partial):
            handler = handler.func
        elif inspect.ismethod(handler):
            handler = handler.__func__
        elif getattr(handler, "__wrapped__", None) is not None:
            handler = handler.__wrapped__  # type: ignore[attr-defined]
        else:
            break
    return handler


def _code(fn: object) -> CodeType | None:
    code = getattr(fn, "__code__", None)
    if isinstance(code, CodeType):
        return code
    if not inspect.isroutine(fn) and not isinstance(fn, type):
        # a callable object: where its class's __call__ is defined
        call: Any = getattr(type(fn), "__call__", None)  # noqa: B004 - the method itself
        code = getattr(call, "__code__", None)
        if isinstance(code, CodeType):
            return code
    return None


def _name(fn: object) -> str:
    named = fn if inspect.isroutine(fn) or isinstance(fn, type) else type(fn)
    qualname = getattr(named, "__qualname__", None) or type(named).__qualname__
    module = getattr(named, "__module__", None)
    return f"{module}.{qualname}" if module else str(qualname)


def _raised_at(exc: BaseException) -> str:
    tb = exc.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f"{tb.tb_frame.f_code.co_filename}:{tb.tb_lineno}"
