"""``FlowPolicy``: the flow rules in a pipeline.

Four handlers, built from one ``FlowRules``:

- ``flows.message`` on ``message.before``: the user's own message is trusted text of
  its session (a value the user typed is never flagged) and says which actions the user
  asked for;
- ``flows.after`` on ``tool.after``: each result labels its session (untrusted source,
  secret file) with provenance, its instructions found (``instructions``), or is kept
  as trusted text; ``flow_labeled`` events;
- ``flows`` on ``tool.before``: a sink call is judged (``judge``): a secret or a flagged
  value blocks (or asks) by ``on_secret`` / ``on_flagged``; after untrusted input the
  sink's rule applies (``requested`` when asked for, else ``sink``: ``ask`` by
  default); a URL request is judged by its URL (``judge_fetch``); ``flow_flagged``
  events;
- ``flows.ask`` on ``tool.approve``, when a rule can ask: the calls ``tool.before``
  marked go to the human-approval handler (docs/approvals.md).

Labels live on the session (``session_key``; a turn without one is its own session,
and a call outside a turn without one labels nothing beyond itself).  With
``mode="shadow"`` the decisions are only recorded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from ..bus.events import FlowLabeled
from ..middleware.builtins.policies._base import Policy, RegistryHost
from ..pipeline.hooks import Mode
from ..pipeline.payloads import (
    Approval,
    ApprovalRequest,
    MessageBeforeInput,
    MessageBeforeOutput,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
)
from ..pipeline.registry import Interceptor, Registry
from ..pipeline.tools import normalize_tool_name
from .classify import Classifier, ask_pattern
from .events import FlowEvents
from .instructions import instructions
from .judge import Verdict, judge, judge_fetch
from .model import FlowRules, Origin, ToolInfo
from .state import FlowSessions, SessionFlows
from .values import leaves, render, secret_values

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline

__all__ = ["FLOWS_PRIORITY", "FlowPolicy", "installed"]

FLOWS_PRIORITY = 108
"""After the permission rules (110), before the built-in guards (100)."""

_REFUSED = frozenset({"blocked", "denied", "aborted"})


class FlowPolicy(Policy):
    """The flow rules as interceptors: ``FlowPolicy(FlowRules(...)).install(pipe)``.

    Args:
        rules: the rules (default ``FlowRules()``: sinks ask after untrusted input,
            flagged values and secrets are blocked).
        id: the registrations' id prefix.
        priority: their priority.
        mode: ``enforce``, or ``shadow`` (decide and record, never apply).
    """

    __slots__ = (
        "_ask_names",
        "_asks",
        "_covers",
        "_events",
        "_registry",
        "classifier",
        "id",
        "mode",
        "priority",
        "rules",
        "sessions",
    )

    def __init__(
        self,
        rules: FlowRules | None = None,
        *,
        id: str = "flows",
        priority: int = FLOWS_PRIORITY,
        mode: Mode = "enforce",
    ) -> None:
        self.rules = rules or FlowRules()
        self.id = id
        self.priority = priority
        self.mode = mode
        self.classifier = Classifier(self.rules)
        self.sessions = FlowSessions(self.rules.max_sessions)
        self._events = FlowEvents()
        # (session, call id, tool) -> the reason, of the calls tool.before sends to ask
        self._asks: dict[tuple[str, str, str], str] = {}
        # the approver runs only on calls of tools that may be sinks (its matcher)
        self._ask_names = {normalize_tool_name(name) for name in self.rules.sinks}
        self._covers = ask_pattern(self._ask_names).search
        self._registry: Registry | None = None

    # -- what users call ----------------------------------------------------------------------

    def describe(self, *tools: ToolInfo) -> None:
        """Register what tools say about themselves (description, input schema, MCP
        annotations): they are classified again with it."""
        for info in tools:
            self.classifier.describe(info)
            name = normalize_tool_name(info.name)
            role = self.classifier.role(name, info.name)
            if (role.sink or role.per_call) and not self._covers(name):
                self._cover(name)

    def said(self, session_key: str, text: str) -> None:
        """Index ``text`` as the user's own words in the session (what ``message.before``
        does with the user's message), for callers without a message stage (a benchmark
        harness replaying a task's prompt, an adapter that sees only tools)."""
        if session_key and text:
            self.sessions.open(session_key).hear(text)

    def labels(self, session_key: str) -> tuple[Origin, ...]:
        """The sources the session has read, in order, with provenance."""
        session = self.sessions.get(session_key)
        return tuple(session.labels) if session is not None else ()

    def follow(self, event: FlowLabeled) -> None:
        """Take over a label another process published (a ``flow_labeled`` event read
        from the fleet): its session is then labelled here too (without the values, which
        events do not carry)."""
        if not event.session_key:
            return
        session = self.sessions.open(event.session_key)
        origin = Origin(
            event.label, event.tool_name, event.tool_call_id, event.ordinal, event.reason
        )
        if origin not in session.labels:
            session.label(origin)

    def install(self, target: RegistryHost | Registry) -> list[Interceptor]:
        """Add the registrations to ``target``; on a ``Pipeline``, events go to its bus."""
        self._registry = target if isinstance(target, Registry) else target.registry
        added = super().install(target)
        if not isinstance(target, Registry):
            self._events.pipe = _pipeline(target)
        return added

    def interceptors(self) -> list[Interceptor]:
        """The registrations: the approver only when a rule can ask."""
        regs = [
            self._handler("message.before", ".message", self.message),
            self._handler("tool.before", "", self.before),
            self._handler("tool.after", ".after", self.after),
        ]
        if self._may_ask:
            regs.append(self._approver())
        return regs

    @property
    def _may_ask(self) -> bool:
        rules = self.rules
        return "ask" in (rules.sink, rules.on_flagged, rules.on_secret, *rules.sinks.values())

    def _approver(self) -> Interceptor:
        reg = self._handler("tool.approve", ".ask", self.approve)
        return dataclasses.replace(reg, tool_matcher=ask_pattern(self._ask_names))

    def _cover(self, name: str) -> None:
        """Put the approver on the calls of ``name`` too (a sink its name does not
        show: found by its description or parameters)."""
        self._ask_names.add(name)
        self._covers = ask_pattern(self._ask_names).search
        registry = self._registry
        if registry is None or not self._may_ask:
            return
        try:
            registry.remove(self.id + ".ask")
        except KeyError:  # removed by its user: stays so
            return
        registry.add(self._approver())

    # -- the handlers ---------------------------------------------------------------------------

    def message(self, inp: MessageBeforeInput, out: MessageBeforeOutput) -> None:
        """``message.before``: the user's message is trusted text of its session."""
        self.said(inp.session_key or inp.turn_id, out.message)

    def before(self, inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        """``tool.before``: judge a sink call, or the URL of a request."""
        if out.block:
            return
        role = self.classifier.roles.get(inp.tool_name) or self.classifier.role(
            inp.tool_name, inp.raw_name
        )
        sink = role.sink
        if not sink and role.per_call:
            sink = self.classifier.call_sink(role.per_call, out.args)
        if not sink and not role.fetch:
            return
        key = inp.session_key or inp.turn_id
        session = self.sessions.get(key) if key else None
        if (session is None or not (session.tainted or session.secrets)) and (
            self.rules.secret_scanner is None
        ):
            return
        if sink:
            verdict = judge(
                self.rules, session, inp.tool_name, sink, role.action, role.wanted, out.args
            )
        else:  # no sink: a request of a URL, judged by its URL alone
            verdict = judge_fetch(self.rules, session, inp.tool_name, role.fetch, out.args)
        if verdict is not None:
            self._apply(inp, out, key, verdict)

    def _apply(
        self, inp: ToolBeforeInput, out: ToolBeforeOutput, key: str, verdict: Verdict
    ) -> None:
        """Record ``verdict`` on the bus and apply it to the call."""
        self._events.flagged(inp, verdict, self.mode)
        if verdict.decision == "block":
            out.block = True
            out.block_reason = verdict.reason
        elif verdict.decision == "ask":
            if not self._covers(inp.tool_name):
                # no approval step on this call (its chain was built without it): the
                # next call of the tool asks; this one is refused
                self._cover(inp.tool_name)
                out.block = True
                out.block_reason = verdict.reason + " (approval needed; ask again)"
                return
            self._asks[(key, inp.tool_call_id, inp.tool_name)] = verdict.reason

    def approve(self, request: ApprovalRequest) -> Approval | None:
        """``tool.approve``: a call ``tool.before`` marked asks the human-approval handler."""
        if not self._asks:
            return None
        key = (request.session_key or request.turn_id, request.tool_call_id, request.tool_name)
        reason = self._asks.pop(key, None)
        if reason is None:
            return None
        return Approval.ask(reason, rule=f"flows({request.tool_name})")

    def after(self, inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        """``tool.after``: the result labels its session, or is kept as trusted text."""
        key = inp.session_key or inp.turn_id
        if self._asks:  # a call that was asked and never reached the approver
            self._asks.pop((key, inp.tool_call_id, inp.tool_name), None)
        if not key:
            return
        session = self.sessions.open(key)
        session.ordinal += 1
        if inp.status in _REFUSED:
            return
        role = self.classifier.roles.get(inp.tool_name) or self.classifier.role(
            inp.tool_name, inp.raw_name
        )
        output = out.result.output
        text: str | None = None  # the result as text, made once when needed
        if not role.source:
            session.keep_trusted(output)
            label = ""
        else:
            label, why = "untrusted", role.source_why
            if role.source == "file":
                label, why = self.classifier.file_source(inp.args)
            elif role.source == "exec":
                label, why = self.classifier.exec_source(inp.args)
            origin = Origin(
                label or "trusted", inp.tool_name, inp.tool_call_id, session.ordinal, why
            )
            if label == "secret":
                self._secrets(inp, session, origin, secret_values(_text(output)))
            elif label == "untrusted":
                session.untrusted.add(render(output), origin)
                text = _text(output)
                said = instructions(text)
                if said:
                    session.instructed.add("\n".join(said), origin)
                session.label(origin)
                self._events.labeled(inp.session_key, inp.agent_id, origin, why)
            else:
                session.keep_trusted(output)
        scanner = self.rules.secret_scanner
        if scanner is not None and label != "secret":
            found = [m.value for m in scanner(_text(output) if text is None else text)]
            if found:
                secret = Origin("secret", inp.tool_name, inp.tool_call_id, session.ordinal)
                self._secrets(inp, session, secret, found, "a result with secrets in it")

    def _secrets(
        self,
        inp: ToolAfterInput,
        session: SessionFlows,
        origin: Origin,
        values: list[str],
        why: str = "",
    ) -> None:
        if why:
            origin = Origin("secret", origin.tool_name, origin.call_id, origin.ordinal, why)
        new = session.add_secrets(values, origin)
        if new:
            session.label(origin)
            self._events.labeled(inp.session_key, inp.agent_id, origin, origin.reason, new)

    def _handler(self, hook: str, suffix: str, handler: Callable[..., Any]) -> Interceptor:
        # a gate fails closed; labelling (message.before, tool.after) fails open
        on_error: Literal["block", "skip"] = (
            "block" if hook in ("tool.before", "tool.approve") else "skip"
        )
        return self._registration(hook, on_error, handler=handler, suffix=suffix, mode=self.mode)


def _text(output: Any) -> str:
    """A result as text, not normalized (secrets keep their case)."""
    if isinstance(output, str):
        return output
    return "\n".join(leaves(output))


def _pipeline(target: RegistryHost) -> Pipeline | None:
    from ..pipeline.pipeline import Pipeline

    return target if isinstance(target, Pipeline) else None


def installed(registry: Registry) -> list[FlowPolicy]:
    """The flow policies installed in ``registry`` (the MCP gateway tells them what each
    listed tool says about itself)."""
    found: list[FlowPolicy] = []
    for reg in registry.list():
        owner = getattr(reg.handler, "__self__", None)
        if isinstance(owner, FlowPolicy) and owner not in found:
            found.append(owner)
    return found
