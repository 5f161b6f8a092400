"""macOS (placeholder, filled below)."""
from __future__ import annotations
from .run import Rule
RULES: dict[str, tuple[Rule, ...]] = {}
