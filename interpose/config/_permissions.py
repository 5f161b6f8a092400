"""The builder's step for ``[permissions]``: the rules parsed, then registered."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import ConfigError
from ._builder import BuilderBase, Built

if TYPE_CHECKING:
    from ..permissions.model import Decision, Rule
    from ..pipeline.pipeline import Pipeline
    from .schema import PermissionsConfig

__all__ = ["PermissionSteps"]


class PermissionSteps(BuilderBase):
    """Parses ``[permissions] allow/ask/deny`` (Claude Code's syntax; ``/path`` patterns
    relative to the config file's directory) and registers them when enabled."""

    def permissions(self, pipe: Pipeline, built: Built, table: PermissionsConfig) -> None:
        from ..permissions.engine import Permissions
        from ..permissions.policy import PermissionPolicy

        rules = self.permission_rules(built, table)
        built.permissions = Permissions(rules)
        if table.enabled and rules:
            with self.at("permissions"):
                PermissionPolicy(built.permissions, mode=table.mode).install(pipe)

    def permission_rules(self, built: Built, table: PermissionsConfig) -> list[Rule]:
        """The table's own rules, then :meth:`more_permission_rules`'s; a rule that has
        no effect (``Write(path)``...) is a note of the build."""
        from ..permissions.claude import parse_claude_rule, warning_of

        rules: list[Rule] = []
        lists: tuple[tuple[Decision, list[str]], ...] = (
            ("deny", table.deny),
            ("ask", table.ask),
            ("allow", table.allow),
        )
        for decision, texts in lists:
            for i, text in enumerate(texts):
                try:
                    rule = parse_claude_rule(text, decision, source=self.source, base=self.base_dir)
                except ConfigError as exc:  # the field names the file already
                    problem = str(exc).removeprefix(f"{self.source}: ")
                    self.fail(f"permissions.{decision}[{i}]", problem)
                rules.append(rule)
        self.more_permission_rules(built, table, rules)
        built.notes += [w for w in map(warning_of, rules) if w]
        return rules

    def more_permission_rules(
        self, built: Built, table: PermissionsConfig, rules: list[Rule]
    ) -> None:
        """Append the rules of other sources to ``rules`` (``permissions.sources``: Claude
        Code settings files, Codex ``.rules``, Gemini CLI policies).  None yet."""
