"""The command guard's verdict and the constants every part of the shell model shares:
:class:`Finding`, :data:`HOME`, :data:`MAX_DEPTH`, :data:`DEFERRED`.

The shell model is a set of modules that import no rule family: :mod:`.options` (GNU-style
option grammars), :mod:`.wrappers` (command names and the wrappers peeled off them),
:mod:`.paths` (what a path is: critical, a device, a persistence file, a glob's reach),
:mod:`.invocation` (one command as it will run), :mod:`.find` (``find``'s expression
grammar) and :mod:`.programs` (how shells and interpreters take program text, downloads,
command names known only at run time).
"""

from __future__ import annotations

from dataclasses import dataclass

HOME = "/home/user"
"""Where ``~`` and ``$HOME`` point during analysis (a fixed value keeps results
deterministic; every ``/home/*`` directory is treated alike anyway)."""

MAX_DEPTH = 8  # shells inside shells (bash -c "sh -c '...'") before refusing

DEFERRED = "trap action"
"""The origin of program text that runs later, when the shell exits or meets a signal
(``trap 'rm -rf "$tmp"' EXIT``): what it names literally is judged, but a delete whose
target is a variable is not refused as unknown there -- the variable takes its value by
then, in the lines that are judged where they set it."""


@dataclass(frozen=True, slots=True)
class Finding:
    """Why a command is refused: the rule id, the offending token and an explanation."""

    rule: str
    token: str
    message: str

    def __post_init__(self) -> None:
        # a token can carry any byte the agent typed; a reason shown to a person or a log
        # must not carry raw control characters (``\x00``, ``\x1b[2J``...)
        for name in ("token", "message"):
            text = getattr(self, name)
            if not text.isprintable():
                object.__setattr__(self, name, _escape_controls(text))

    @property
    def reason(self) -> str:
        """``"<rule>: <message>"``, e.g. ``"fs-destruction: rm -rf targets '/', ..."``."""
        return f"{self.rule}: {self.message}"


def _escape_controls(text: str) -> str:
    """``text`` with every non-printable character but the space written as ``repr`` does."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
