"""The analysis budget: how much work judging one command may take.

The guard runs synchronously on the event loop, so no timeout can interrupt it: it must
bound itself.  One :class:`Budget` is created per analysis and charged as the analysis
goes -- words parsed and made by expansion, text made by variable expansion and computed
output, expansion steps, nesting depth (parser and analysis together), wall time.  Past a
limit it raises :class:`TooComplex`, which the guard turns into the refusal
``too-complex: too complex to analyze (<budget>: <used> > <allowed> ...)``.

The nesting limit also bounds the guard's use of the Python stack: each level costs at
most :data:`FRAMES_PER_LEVEL` frames, so an analysis needs at most :func:`frames_needed`
frames, and the guard moves it to a fresh thread when the caller's stack is too deep for
that (and lowers the depth limit when even a fresh stack is too small).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..shell import ParseBudget, ShellLimitError

__all__ = ["DEFAULT_LIMITS", "FRAMES_PER_LEVEL", "Budget", "Limits", "TooComplex"]


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits of one analysis (see docs/guards.md, "Budget", for how they were chosen).

    Attributes:
        size: characters of command text; longer commands are refused before parsing.
        words: words and operators the parser reads, plus words made by expansion
            (unquoted variables split into words, ``xargs``/``find -exec`` fan-out),
            path literals judged inside inline programs (``python -c``) and the
            arguments of a command named at run time once per stand-in it is judged as.
        text: characters of text made at run time that the guard computes: expanded
            variable values, substitution outputs, decoded program text.
        steps: expansion steps: variable assignments and expansions, commands prepared,
            nested analyses, substitution outputs evaluated.
        depth: nesting levels: subshells, groups, ``$(...)``, backticks, ``${...}``,
            here-documents, and scripts handed to another shell, counted together.
        seconds: wall time (:func:`time.monotonic`), read every ``check_every`` steps
            or parsed words -- a backstop: the other limits keep typical worst cases far
            below it.
    """

    size: int = 1 << 20
    words: int = 4096
    text: int = 1 << 20
    steps: int = 20_000
    depth: int = 32
    seconds: float = 0.5


DEFAULT_LIMITS = Limits()

FRAMES_PER_LEVEL = 16
"""Python frames one nesting level may use, at most: ``$(...)`` in the parser is the
deepest (~12: list, and-or, pipeline, command, simple command, lexer, word, quotes,
dollar, nested); the margin covers the analysis side (a ``bash -c`` level is ~9)."""

BASE_FRAMES = 120
"""Frames an analysis uses outside its nesting levels (entry points, rules, regexes and
library calls at the deepest leaf), with a margin."""


def frames_needed(depth: int) -> int:
    """Stack frames an analysis allowed ``depth`` nesting levels may use, at most."""
    return depth * FRAMES_PER_LEVEL + BASE_FRAMES


class TooComplex(Exception):
    """An analysis ran out of budget: ``budget`` names the limit, ``detail`` the numbers.

    Internal to the guard: :func:`.analyze_command` turns it into a ``too-complex``
    finding; it never reaches a caller.
    """

    def __init__(self, budget: str, detail: str) -> None:
        super().__init__(f"{budget}: {detail}")
        self.budget = budget
        self.detail = detail

    @classmethod
    def from_parse(cls, exc: ShellLimitError) -> TooComplex:
        return cls(exc.limit, _numbers(exc.limit, exc.used, exc.allowed))


def _numbers(limit: str, used: float, allowed: float) -> str:
    if limit == "time":
        return f"over the {allowed:g} s limit"
    unit = {"depth": "levels", "size": "characters", "text": "characters"}.get(limit, limit)
    return f"{int(used):,} {unit} > {int(allowed):,}"


class Budget(ParseBudget):
    """The counters of one analysis against its :class:`Limits`.

    It is the parser's :class:`ParseBudget` too, so words and nesting levels of every
    parse (the command line, ``bash -c`` scripts, substitutions) add up with the
    analysis's own.  ``peak_depth``, ``words``, ``text`` and ``steps`` stay readable
    after the analysis (the property tests assert they never pass the limits).
    """

    __slots__ = ("limits", "seconds", "started", "steps", "text")

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        super().__init__(max_words=limits.words, max_depth=limits.depth, seconds=limits.seconds)
        self.limits = limits
        self.started = time.monotonic()
        self.seconds = limits.seconds
        self.steps = 0
        self.text = 0

    def fit_stack(self, frames: int) -> None:
        """Lower the depth limit so that an analysis fits in ``frames`` stack frames (only
        under a recursion limit set far below Python's default of 1000)."""
        fitting = max(1, (frames - BASE_FRAMES) // FRAMES_PER_LEVEL)
        if fitting < self.max_depth:
            self.max_depth = fitting

    def size(self, length: int) -> None:
        """Raises:
        TooComplex: the command is longer than the size limit."""
        if length > self.limits.size:
            raise TooComplex("size", _numbers("size", length, self.limits.size))

    def step(self, count: int = 1) -> None:
        """Count expansion steps; read the clock every ``check_every`` of them.

        Raises:
            TooComplex: more steps than the limit, or past the deadline.
        """
        before = self.steps
        self.steps = before + count
        if self.steps > self.limits.steps:
            raise TooComplex("steps", _numbers("steps", self.steps, self.limits.steps))
        if before // self.check_every != self.steps // self.check_every:
            self.clock()

    def clock(self) -> None:
        """Raises:
        TooComplex: the analysis has run past its wall-time limit."""
        if time.monotonic() > self.deadline:
            raise TooComplex("time", _numbers("time", 0, self.seconds))

    def made_text(self, length: int) -> None:
        """Count ``length`` characters of text made at run time.

        Raises:
            TooComplex: more than the text limit in this analysis.
        """
        self.text += length
        if self.text > self.limits.text:
            raise TooComplex("text", _numbers("text", self.text, self.limits.text))

    def made_words(self, count: int) -> None:
        """Count words made by expansion.

        Raises:
            TooComplex: more words (parsed and made) than the limit.
        """
        try:
            self.word(0, count)
        except ShellLimitError as exc:
            raise TooComplex.from_parse(exc) from None

    def open(self) -> None:
        """Enter one nesting level of the analysis (a nested script, a substitution).

        Raises:
            TooComplex: deeper than the depth limit.
        """
        try:
            self.enter(0)
        except ShellLimitError as exc:
            raise TooComplex.from_parse(exc) from None
