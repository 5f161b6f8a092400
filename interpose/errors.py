"""Exceptions raised by interpose.

The tree, drawn once::

    InterposeError                      base of everything interpose raises
    ├── RegistrationError (ValueError)  a registration was rejected; the registry is unchanged
    ├── ConfigError (ValueError)        a config value is invalid
    │   └── ConfigFileError             a config file is invalid: <file>: <field>: <problem>
    ├── UsageError (ValueError)         bad command-line input: `interpose` prints one line, exits 2
    ├── MiddlewareError (RuntimeError)  a middleware broke the onion's contract
    ├── SandboxUnavailable (RuntimeError) a required sandbox cannot be applied here
    ├── AbortTurn                       raised by a handler: end the current turn cleanly
    └── HardAbort                       raised by a handler: stop the whole agent loop

``AbortTurn`` and ``HardAbort`` are control flow, not failures: they bypass every
``on_error`` policy.  ``AbortTurn`` is absorbed by the turn it was raised in (``async with
pipe.turn(...)``) or turned into a ``status="aborted"`` result by ``Pipeline.call_tool``;
``HardAbort`` always reaches the caller.
"""

from __future__ import annotations

import json
import re

__all__ = [
    "AbortTurn",
    "ConfigError",
    "ConfigFileError",
    "HardAbort",
    "InterposeError",
    "MiddlewareError",
    "RegistrationError",
    "SandboxUnavailable",
    "UsageError",
    "field_key",
]


class InterposeError(Exception):
    """Base class of every exception interpose raises."""


class RegistrationError(InterposeError, ValueError):
    """A registration was rejected (duplicate id, unknown hook, bad matcher, bad handler).

    Attributes:
        registration_id: the id of the rejected registration, if it had one.
    """

    def __init__(self, message: str, *, registration_id: str | None = None) -> None:
        super().__init__(message)
        self.registration_id = registration_id


class ConfigError(InterposeError, ValueError):
    """A configuration value is invalid; the message names the value and the expectation."""


class ConfigFileError(ConfigError):
    """A config file is invalid.

    The message is ``<file>: <field>: <problem>`` (``<file>: <problem>`` when the problem
    is the whole file, e.g. a syntax error).  Importable from ``interpose.config``, the
    documented path; defined here so that every layer that reads a file (the config
    loader, a Claude Code settings file of ``interpose.external``) raises the same one.

    Attributes:
        file: the file, as it was given.
        field: the dotted path of the bad field (``hooks.commands[0].event``), or "".
        problem: what is wrong, and what was expected.
    """

    def __init__(self, file: str, field: str, problem: str) -> None:
        super().__init__(f"{file}: {field}: {problem}" if field else f"{file}: {problem}")
        self.file = file
        self.field = field
        self.problem = problem


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def field_key(name: str) -> str:
    """One key of a ``ConfigFileError.field`` path: as it is when it is letters, digits,
    ``_`` and ``-``, else JSON-quoted (``hooks.processes."my gate"``)."""
    return name if _BARE_KEY.fullmatch(name) else json.dumps(name)


class UsageError(InterposeError, ValueError):
    """Bad input to an ``interpose`` subcommand (a path that does not exist, a value out of
    range, a server that cannot be reached).  The command prints ``interpose <command>:
    <message>`` on one line, no traceback, and exits with ``exit_code`` (2 unless said).
    """

    def __init__(self, message: str, *, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class SandboxUnavailable(InterposeError, RuntimeError):
    """The sandbox a policy requires (``required = true``) cannot be applied here: no
    bubblewrap, no user namespaces, not Linux.  Nothing was run.

    Attributes:
        problems: what is missing, one sentence each.
    """

    def __init__(self, problems: tuple[str, ...]) -> None:
        super().__init__("the sandbox cannot be applied, nothing was run: " + "; ".join(problems))
        self.problems = problems


class MiddlewareError(InterposeError, RuntimeError):
    """A middleware returned without calling ``call_next()`` or setting the stage's
    result (``ctx.result``; ``ctx.response`` on the llm stage).

    Attributes:
        stage: the stage whose onion produced no result.
    """

    def __init__(self, stage: str) -> None:
        result = "ctx.response" if stage == "llm" else "ctx.result"
        super().__init__(
            f"{stage} stage: a middleware returned without calling call_next() or setting {result}"
        )
        self.stage = stage


class _Abort(InterposeError):
    def __init__(self, reason: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        #: id of the interceptor or middleware it was raised in (set by the pipeline)
        self.source = ""


class AbortTurn(_Abort):
    """End the current turn cleanly; the turn is marked aborted with ``reason``."""


class HardAbort(_Abort):
    """Stop the whole agent loop; always propagates to the caller."""
