"""What can go wrong parsing: :class:`ShellSyntaxError`, and :class:`ShellLimitError`
past the :class:`ParseBudget` (words, nesting depth, a deadline) a parse runs within."""

from __future__ import annotations

import time

__all__ = ["MAX_NESTING", "ParseBudget", "ShellLimitError", "ShellSyntaxError"]

MAX_NESTING = 32
"""Deepest nesting of subshells, groups and substitutions the parser accepts."""


class ShellSyntaxError(ValueError):
    """The text is not a complete shell command (unbalanced quote, unterminated ``$(``...)."""

    def __init__(self, detail: str, offset: int) -> None:
        super().__init__(f"{detail} at offset {offset}")
        self.detail = detail
        self.offset = offset


class ShellLimitError(ShellSyntaxError):
    """The text exceeds the :class:`ParseBudget` it is parsed with (too many words, too
    deeply nested, too slow): it may be valid shell, but it is not analyzed.

    Attributes:
        limit: which budget ran out (``"words"``, ``"depth"``, ``"time"``).
        used: how much of it was needed when the parser stopped (words, levels, seconds).
        allowed: the budget.
    """

    def __init__(self, limit: str, used: float, allowed: float, offset: int) -> None:
        super().__init__(f"{limit} budget exceeded ({used:g} > {allowed:g})", offset)
        self.limit = limit
        self.used = used
        self.allowed = allowed


class ParseBudget:
    """How much work :func:`parse` may do: words and operators read, nesting depth
    (subshells, groups, substitutions, ``${...}``), and a :func:`time.monotonic` deadline,
    checked every :attr:`check_every` tokens.  Past a limit the parser raises
    :class:`ShellLimitError`; it never recurses deeper than :attr:`max_depth` levels, so
    its use of the Python stack is bounded too.

    The counters only grow (``depth`` goes back down as levels close), so one budget can
    be shared by several parses and by the analysis around them: the command guard's
    budget is a subclass that also counts its own nesting and expansions.
    """

    __slots__ = ("deadline", "depth", "max_depth", "max_words", "peak_depth", "words")

    check_every = 256
    """Tokens between two looks at the clock (a monotonic read costs ~50 ns)."""

    def __init__(
        self,
        *,
        max_words: int = 1 << 62,
        max_depth: int = MAX_NESTING,
        seconds: float = float("inf"),
    ) -> None:
        self.max_words = max_words
        self.max_depth = max_depth
        self.deadline = time.monotonic() + seconds
        self.words = 0
        self.depth = 0
        self.peak_depth = 0

    def word(self, offset: int, count: int = 1) -> None:
        """Count ``count`` words (or operators) read at ``offset``.

        Raises:
            ShellLimitError: more words than :attr:`max_words`, or past the deadline.
        """
        before = self.words
        self.words = before + count
        if self.words > self.max_words:
            raise ShellLimitError("words", self.words, self.max_words, offset)
        if before // self.check_every != self.words // self.check_every:
            self.check_time(offset)

    def take(self, count: int) -> bool:
        """Count ``count`` words at once when :meth:`word` would count them one by one
        without passing the limit or looking at the clock; else count nothing and return
        False (the caller counts them one by one, with their offsets)."""
        after = self.words + count
        if after > self.max_words or self.words // self.check_every != after // self.check_every:
            return False
        self.words = after
        return True

    def check_time(self, offset: int) -> None:
        """Raises:
        ShellLimitError: the deadline has passed."""
        now = time.monotonic()
        if now > self.deadline:
            raise ShellLimitError("time", round(now - self.deadline, 3), 0, offset)

    def enter(self, offset: int) -> None:
        """Open one nesting level.

        Raises:
            ShellLimitError: nesting deeper than :attr:`max_depth`.
        """
        depth = self.depth + 1
        if depth > self.max_depth:
            raise ShellLimitError("depth", depth, self.max_depth, offset)
        self.depth = depth
        if depth > self.peak_depth:
            self.peak_depth = depth

    def leave(self) -> None:
        """Close the level opened by the matching :meth:`enter`."""
        self.depth -= 1
