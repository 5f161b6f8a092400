"""The builder's step for ``[approvals]``: the approval store and the waiting call that
answers the pipeline's asks from it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._builder import BuilderBase, Built, seconds

if TYPE_CHECKING:
    from ..approvals.store import ApprovalStore
    from ..pipeline.pipeline import Pipeline
    from .schema import ApprovalsConfig

__all__ = ["ApprovalSteps"]


class ApprovalSteps(BuilderBase):
    """Checks ``[approvals]``, makes its store (memory, or Redis: connected on first use,
    closed when the pipeline exits) and installs ``DurableApprovals`` as the pipeline's
    human-approval handler."""

    def approvals(self, pipe: Pipeline, built: Built, table: ApprovalsConfig | None) -> None:
        from ..approvals.waiting import DurableApprovals

        if table is None or not table.enabled:
            return
        bound = pipe.approval_timeout
        timeout = seconds(table.timeout_ms) if table.timeout_ms is not None else None
        if timeout is not None and bound is not None and timeout > bound:
            self.fail(
                "approvals.timeout_ms",
                f"{table.timeout_ms} is longer than hooks.defaults.approval_timeout_ms "
                f"({seconds_ms(bound)}): every request would be denied at that bound first",
            )
        store = self.approval_store(table)
        handler = DurableApprovals(store, timeout=timeout).install(pipe)
        built.approvals = handler
        if table.store == "redis":
            pipe.add_service(handler)

    def approval_store(self, table: ApprovalsConfig) -> ApprovalStore:
        if table.store == "memory":
            from ..approvals.memory import MemoryApprovalStore

            return MemoryApprovalStore()
        try:
            from ..approvals.redis import RedisApprovalStore

            return RedisApprovalStore(table.url, prefix=table.prefix)
        except ImportError:
            self.fail(
                "approvals.store", "the Redis store needs redis-py: pip install 'interpose[redis]'"
            )
        except ValueError as exc:
            self.fail("approvals.url", str(exc))


def seconds_ms(value: float) -> int:
    return round(value * 1000)
