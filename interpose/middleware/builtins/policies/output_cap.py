"""``builtin:output-cap``: truncate tool output longer than a limit (:class:`OutputCap`)."""

from __future__ import annotations

from typing import Any, ClassVar

import msgspec

from ....errors import ConfigError
from ....pipeline.payloads import ToolAfterInput, ToolAfterOutput, ToolResult
from ....pipeline.registry import Interceptor
from ....pipeline.tools import ToolMatcher
from ._base import Policy
from ._helpers import check_id, check_priority, count_at_least

__all__ = ["OUTPUT_CAP_ID", "OutputCap"]

OUTPUT_CAP_ID = "builtin:output-cap"


_REFUSALS = frozenset({"blocked", "denied", "aborted"})


def _chars(n: int) -> str:
    return f"{n:,} char" if n == 1 else f"{n:,} chars"


class OutputCap(Policy):
    """``builtin:output-cap``: truncate tool output longer than ``max_chars``.

    A string output longer than ``max_chars`` keeps its first ``max_chars`` characters,
    followed by the marker, and ``details["truncated_chars"]`` records how many were
    cut.  An output of exactly ``max_chars`` is left alone.

    Other outputs (dicts, lists, numbers...) are measured by their JSON text, the form a
    model usually reads them in; one that is too long is replaced by its truncated JSON
    text, a string, since half a dict is not a dict.  Shorter ones keep their type.  With
    ``strings_only=True`` non-string outputs are never touched.

    Refusals (blocked, denied, aborted) keep their ``{"status", "tool", "reason"}``
    shape and are never cut.  A result that already carries ``details["truncated_chars"]``
    is not cut again (a cached result answered from the result cache, say).

    Args:
        max_chars: the most characters kept (an int >= 1).
        marker: appended after the cut; ``{cut}`` is the number of characters cut (an
            int: ``{cut:,}`` groups thousands) and ``{chars}`` the same as words
            (``"12,345 chars"``, ``"1 char"``).  Default ``"\\n… [truncated {chars}]"``.
        strings_only: leave non-string outputs alone.
        tools: a tool matcher; default every tool.
        priority: default 90, after secret redaction.
        id: the registration id.

    Raises:
        ConfigError: a bad ``max_chars``, a ``marker`` that is not a str or does not
            format with ``cut`` and ``chars``, a bad priority or id.
    """

    ID: ClassVar[str] = OUTPUT_CAP_ID
    PRIORITY: ClassVar[int] = 90
    DEFAULT_MARKER: ClassVar[str] = "\n… [truncated {chars}]"

    __slots__ = ("_encoder", "id", "marker", "max_chars", "priority", "strings_only", "tools")

    def __init__(
        self,
        max_chars: int = 20_000,
        *,
        marker: str = DEFAULT_MARKER,
        strings_only: bool = False,
        tools: ToolMatcher | None = None,
        priority: int = PRIORITY,
        id: str = ID,
    ) -> None:
        self.max_chars = count_at_least("max_chars", max_chars, 1)
        if not isinstance(marker, str):
            raise ConfigError(f"marker must be a str, got {marker!r}")
        try:
            marker.format(cut=1, chars=_chars(1))
        except (KeyError, IndexError, ValueError) as exc:
            raise ConfigError(
                f"marker {marker!r} does not format with {{cut}} and {{chars}}: {exc!r}"
            ) from None
        self.marker = marker
        self.strings_only = bool(strings_only)
        self.tools = tools
        self.priority = check_priority(priority)
        self.id = check_id(id)
        self._encoder = msgspec.json.Encoder(enc_hook=repr)

    def __repr__(self) -> str:
        return f"OutputCap(max_chars={self.max_chars})"

    def cap(self, output: Any) -> tuple[Any, int]:
        """(``output`` capped, how many characters were cut); ``output`` itself when
        nothing was cut."""
        if isinstance(output, str):
            text = output
        elif self.strings_only or output is None:
            return output, 0
        else:
            try:
                text = self._encoder.encode(output).decode()
            except (TypeError, ValueError, msgspec.EncodeError):
                text = repr(output)
        cut = len(text) - self.max_chars
        if cut <= 0:
            return output, 0
        return text[: self.max_chars] + self.marker.format(cut=cut, chars=_chars(cut)), cut

    def __call__(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        result = out.result
        if not isinstance(result, ToolResult) or result.status in _REFUSALS:
            return
        if "truncated_chars" in result.details:
            return
        capped, cut = self.cap(result.output)
        if cut:
            result.output = capped
            result.details["truncated_chars"] = cut

    def interceptors(self) -> list[Interceptor]:
        return [self._registration("tool.after", "skip", self.tools)]
