"""The builder's step for ``[flows]``: the flow rules made, then registered."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._builder import BuilderBase, Built

if TYPE_CHECKING:
    from ..flows import FlowRules
    from ..pipeline.pipeline import Pipeline
    from .schema import FlowsConfig

__all__ = ["FlowSteps", "flow_rules"]


def flow_rules(table: FlowsConfig, base_dir: Path) -> FlowRules:
    """The rules of a ``[flows]`` table (``project`` relative to ``base_dir``).

    Raises:
        ValueError: a value the rules reject (the message says which).
    """
    from ..flows import FlowRules
    from ..secrets import scan

    return FlowRules(
        sink=table.sink,
        requested=table.requested,
        sinks=dict(table.sinks),
        flag=table.flag,
        on_flagged=table.on_flagged,
        on_secret=table.on_secret,
        sources=tuple(table.sources),
        trusted=tuple(table.trusted),
        trusted_servers=tuple(table.trusted_servers),
        source_kinds=frozenset(table.source_kinds),
        all_results_untrusted=table.all_results_untrusted,
        project=str(base_dir / Path(table.project).expanduser()),
        min_length=table.min_length,
        max_sessions=table.max_sessions,
        secret_scanner=scan if table.detect_secrets else None,
    )


class FlowSteps(BuilderBase):
    """Checks ``[flows]`` and installs ``FlowPolicy`` when enabled."""

    def flows(self, pipe: Pipeline, built: Built, table: FlowsConfig | None) -> None:
        from ..flows import FlowPolicy

        if table is None:
            return
        try:
            rules = flow_rules(table, self.base_dir)
        except ValueError as exc:
            self.fail("flows", str(exc))
        if not Path(rules.project).is_dir():
            self.fail("flows.project", f"{rules.project} is not a directory")
        built.flows = (
            f"sinks after untrusted input: {rules.sink} ({rules.requested} when asked for); "
            f"flagged values ({rules.flag}): {rules.on_flagged}; "
            f"secrets: {rules.on_secret}; project {rules.project}"
            + ("" if table.enabled else ", disabled")
        )
        if table.enabled:
            with self.at("flows"):
                FlowPolicy(rules, mode=table.mode).install(pipe)
