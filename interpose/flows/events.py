"""The flow rules' bus events: ``flow_labeled`` when a session reads a source,
``flow_flagged`` when a sink call is judged.  Built only when somebody subscribes to
them (a Redis publisher attached to the pipeline forwards them to the fleet)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..bus.events import FlowFlagged, FlowLabeled

if TYPE_CHECKING:
    from ..pipeline.payloads import ToolBeforeInput
    from ..pipeline.pipeline import Pipeline
    from .judge import Verdict
    from .model import Origin

__all__ = ["FlowEvents"]


class FlowEvents:
    """Publishes on the bus of the pipeline the policy was installed on (none: nothing)."""

    __slots__ = ("pipe",)

    def __init__(self) -> None:
        self.pipe: Pipeline | None = None

    def labeled(
        self, session_key: str, agent_id: str, origin: Origin, reason: str, values: int = 0
    ) -> None:
        pipe = self.pipe
        if pipe is None or "flow_labeled" not in pipe.bus.wanted:
            return
        pipe.bus.publish_now(
            FlowLabeled(
                ts=time.time_ns(),
                seq=next(pipe.runtime.seq),
                agent_id=agent_id,
                session_key=session_key,
                label=origin.label,
                tool_name=origin.tool_name,
                tool_call_id=origin.call_id,
                ordinal=origin.ordinal,
                reason=reason,
                values=values,
            )
        )

    def flagged(self, inp: ToolBeforeInput, verdict: Verdict, mode: str) -> None:
        pipe = self.pipe
        if pipe is None or "flow_flagged" not in pipe.bus.wanted:
            return
        pipe.bus.publish_now(
            FlowFlagged(
                ts=time.time_ns(),
                seq=next(pipe.runtime.seq),
                turn_id=inp.turn_id,
                agent_id=inp.agent_id,
                session_key=inp.session_key,
                tool_name=inp.tool_name,
                tool_call_id=inp.tool_call_id,
                sink=verdict.sink,
                decision=verdict.decision,
                reason=verdict.reason,
                findings=verdict.findings,
                mode=mode,
            )
        )
