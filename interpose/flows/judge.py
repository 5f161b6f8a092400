"""The judgement of one sink call: secrets out first, then argument provenance, then
the sink's own rule after untrusted input (``requested`` when the user's messages asked
for its action, else ``sink``).  ``judge`` returns None when the flow rules have nothing
to say (no secret, no untrusted input in the session); ``judge_fetch`` judges the URL of
a tool that requests one (a read: only secrets and flagged values count there)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..bus.events import FlowFinding
from .model import FlowRules, Origin, SinkAction
from .state import SessionFlows
from .values import candidates, normalize, strings

__all__ = ["Verdict", "finding", "judge", "judge_fetch", "mask", "stricter"]


def mask(value: str) -> str:
    """A secret as events and reasons show it: its first 3 characters."""
    return value[:3] + "…" if len(value) > 3 else "…"


def finding(arg: str, value: str, origin: Origin | None, kind: str = "") -> FlowFinding:
    if origin is None:
        return FlowFinding(arg=arg, value=mask(value), label="secret", kind=kind)
    shown = mask(value) if origin.label == "secret" else value
    return FlowFinding(
        arg=arg,
        value=shown,
        label=origin.label,
        tool_name=origin.tool_name,
        tool_call_id=origin.call_id,
        ordinal=origin.ordinal,
        kind=kind,
    )


_ORDER = {"allow": 0, "ask": 1, "block": 2}


def stricter(a: SinkAction, b: SinkAction) -> SinkAction:
    return a if _ORDER[a] >= _ORDER[b] else b


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """What the flow rules decide about a sink call, and why."""

    decision: SinkAction
    reason: str
    sink: str
    findings: tuple[FlowFinding, ...] = ()


def judge(
    rules: FlowRules,
    session: SessionFlows | None,
    tool: str,
    sink: str,
    action: SinkAction | None,
    wanted: frozenset[str],
    args: Mapping[str, Any],
) -> Verdict | None:
    """The verdict on a call of ``tool`` (a sink: ``sink`` says why; ``action`` its own
    rule, None for the rules' default; ``wanted`` the words that ask for its action)."""
    secrets = _secrets(rules, session, args)
    if secrets:
        said = "; ".join(_said(f) for f in secrets)
        return Verdict(
            rules.on_secret, f"flows: {tool} {sink}, with a secret: {said}", sink, secrets
        )
    if session is None or not session.tainted:
        return None
    asked = not wanted.isdisjoint(session.asked)
    own = action or (rules.requested if asked else rules.sink)
    instructed = rules.flag == "instructed"
    flagged = _flagged(session, candidates(args, rules.min_length, texts=instructed), instructed)
    if flagged:
        said = "; ".join(_said(f, instructed) for f in flagged)
        return Verdict(
            stricter(own, rules.on_flagged), f"flows: {tool} {sink}: {said}", sink, flagged
        )
    first = next(origin for origin in session.labels if origin.label == "untrusted")
    why = "; asked for by the user" if asked and action is None else ""
    return Verdict(own, f"flows: {tool} {sink} after untrusted input ({first.where()}{why})", sink)


def judge_fetch(
    rules: FlowRules,
    session: SessionFlows | None,
    tool: str,
    params: tuple[str, ...],
    args: Mapping[str, Any],
) -> Verdict | None:
    """The verdict on a call of ``tool``, which requests the URLs in ``params``: a
    secret in them leaves with the request; a URL an untrusted instruction named is
    the attacker's (``visit www...``)."""
    urls = {p: args[p] for p in params if isinstance(args.get(p), str)}
    if not urls:
        return None
    secrets = _secrets(rules, session, urls)
    if secrets:
        said = "; ".join(_said(f) for f in secrets)
        return Verdict(
            rules.on_secret,
            f"flows: {tool} requests a URL with a secret: {said}",
            "requests a URL",
            secrets,
        )
    if session is None or not session.tainted:
        return None
    flagged = _flagged(session, candidates(urls, rules.min_length), instructed=True)
    if not flagged:
        return None
    said = "; ".join(_said(f, True) for f in flagged)
    return Verdict(
        rules.on_flagged, f"flows: {tool} requests a URL: {said}", "requests a URL", flagged
    )


def _said(f: FlowFinding, instructed: bool = False) -> str:
    if not f.tool_name:
        return f"{f.arg} holds a {f.kind or 'secret'} ({f.value})"
    where = f"{f.arg} {f.value} first seen in the result of {f.tool_name}, call {f.ordinal}"
    if instructed and f.label == "untrusted":
        return where + ", named by an instruction there"
    return where


def _secrets(
    rules: FlowRules, session: SessionFlows | None, args: Mapping[str, Any]
) -> tuple[FlowFinding, ...]:
    known = session.secrets if session is not None else None
    scanner = rules.secret_scanner
    if not known and scanner is None:
        return ()
    found: list[FlowFinding] = []
    for path, value in strings(args):
        if known:
            text = normalize(value)
            for secret, origin in known.items():
                if secret in text:
                    found.append(finding(path, secret, origin))
                    break
        if scanner is not None:
            for match in scanner(value):
                found.append(finding(path, match.value, None, match.kind))
    return tuple(found)


def _flagged(
    session: SessionFlows, values: list[tuple[str, str, str]], instructed: bool
) -> tuple[FlowFinding, ...]:
    """The flagged ``values`` (``candidates``): with ``instructed``, named by an
    instruction in an untrusted result and not by the user; else seen in an untrusted
    result and in no trusted one nor the user's messages."""
    found: list[FlowFinding] = []
    seen: set[str] = set()
    heard = session.said if instructed else None
    for path, value, shown in values:
        if value in seen:
            continue
        seen.add(value)
        origin = (session.instructed if instructed else session.untrusted).find(value)
        if origin is None:
            continue
        if heard is None:
            heard = session.index_trusted()
        if heard.find(value) is None:
            found.append(finding(path, shown, origin))
    return tuple(found)
