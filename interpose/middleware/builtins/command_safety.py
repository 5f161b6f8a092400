"""Placeholder while the command guard is being written."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...pipeline.payloads import ToolBeforeInput, ToolBeforeOutput


@dataclass(frozen=True, slots=True)
class Finding:
    rule: str
    token: str
    message: str

    @property
    def reason(self) -> str:
        return f"{self.rule}: {self.message}"


def analyze_command(command: str | list[str]) -> Finding | None:
    return None


class CommandSafetyGuard:
    def __init__(self, *, extra_deny: Sequence[str] = (), allow: Sequence[str] = ()) -> None:
        pass

    def __call__(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        return None
