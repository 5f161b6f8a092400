"""The flow rules' data: ``FlowRules`` (what the user decides), ``ToolInfo`` (what a tool
says about itself), ``Origin`` (where a session first saw a value) and the secret
detector's shape (``SecretScanner``)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeAlias

__all__ = [
    "SOURCE_KINDS",
    "Origin",
    "FlagMode",
    "FlowRules",
    "SecretMatchLike",
    "SecretScanner",
    "SinkAction",
    "SourceKind",
    "ToolInfo",
]

SinkAction: TypeAlias = Literal["ask", "block", "allow"]
FlagMode: TypeAlias = Literal["instructed", "untrusted"]
SourceKind: TypeAlias = Literal["web", "message", "file", "mcp", "exec"]
#: every kind of untrusted source the classifier knows (``FlowRules.source_kinds``)
SOURCE_KINDS: frozenset[str] = frozenset({"web", "message", "file", "mcp", "exec"})


class SecretMatchLike(Protocol):
    """What a secret detector reports for one match (``interpose.secrets.SecretMatch``
    has these and more)."""

    @property
    def kind(self) -> str: ...

    @property
    def value(self) -> str: ...


#: a detector of secrets in a text: ``scan(text) -> matches``
SecretScanner: TypeAlias = Callable[[str], Sequence[SecretMatchLike]]


@dataclasses.dataclass(frozen=True, slots=True)
class ToolInfo:
    """What a tool says about itself, for the classifier: the MCP gateway registers every
    tool of ``tools/list``; an in-process user (or a benchmark harness) registers its own
    with ``FlowPolicy.describe``.

    Attributes:
        name: the tool's name as the pipeline sees it (``send_email``,
            ``mcp__mail__send``).
        description: its description (the first sentences are read for verbs).
        input_schema: its JSON Schema (the names of ``properties`` are read).
        annotations: MCP tool annotations (``readOnlyHint``, ``destructiveHint``,
            ``openWorldHint``); hints only: a missing one means the worst.
        server: the MCP server it comes from ("" for an in-process tool).
    """

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    annotations: Mapping[str, Any] | None = None
    server: str = ""

    @property
    def params(self) -> tuple[str, ...]:
        """The names of the schema's properties."""
        props = self.input_schema.get("properties")
        return tuple(props) if isinstance(props, Mapping) else ()


@dataclasses.dataclass(frozen=True, slots=True)
class Origin:
    """Where a session saw something: the ``ordinal``-th call of the session, tool
    ``tool_name``, call id ``call_id``; ``label`` is ``untrusted``, ``secret``,
    ``trusted`` or ``user`` (the user's own message); ``reason``, for a label, why the
    result is a source (``reads messages``)."""

    label: str
    tool_name: str = ""
    call_id: str = ""
    ordinal: int = 0
    reason: str = ""

    def where(self) -> str:
        """``the result of read_inbox, call 3`` (``the user's message``)."""
        if self.label == "user":
            return "the user's message"
        return f"the result of {self.tool_name}, call {self.ordinal}"


@dataclasses.dataclass(frozen=True, slots=True)
class FlowRules:
    """What the flow rules decide (docs/flows.md); ``[flows]`` in the config file.

    Attributes:
        sink: the decision for a sink call after untrusted input in its session, when
            the user's messages did not ask for its action: ``ask`` (the approval
            path), ``block`` or ``allow``.
        requested: the same when the user's messages asked for the sink's action (a
            word of it: ``send``, ``email``, ``reply`` for a mail sender; ``pay``,
            ``refund`` for a payment; ``book``, ``reserve`` for a booking).
        sinks: per tool (normalized name, or a ``mcp__<server>__`` prefix): its decision
            instead of ``sink`` and ``requested``; naming a tool here makes it a sink.
        flag: which values of untrusted results are flagged in a sink call (and in the
            URL of a request): ``instructed``, the values an instruction inside an
            untrusted result names (``send it to mallory@...``; see
            ``interpose.flows.instructions``) unless the user's messages hold them;
            ``untrusted``, every value first seen in an untrusted result and never in
            the user's messages or a trusted result (stricter: values the agent
            merely read are flagged too).
        on_flagged: the decision for a sink call carrying a flagged value.
        on_secret: the decision for a sink call carrying a secret (a value of an
            ``.env``-like file the session read, or what ``secret_scanner`` finds).
        sources: tools (names, ``mcp__<server>__`` prefixes) whose results are
            untrusted, besides the ones the classifier finds.
        trusted: tools whose results are trusted, whatever the classifier says.
        trusted_servers: MCP servers whose tools' results are trusted and whose
            annotations are believed.
        source_kinds: which kinds of source the classifier marks untrusted: ``web``
            (fetch, search, browser), ``message`` (email, chat, inbox readers), ``file``
            (files outside ``project``), ``mcp`` (tools of servers not trusted),
            ``exec`` (commands that use the network).
        all_results_untrusted: every result not of a ``trusted`` tool is untrusted
            (for agents whose every tool reads data others wrote).
        project: the project directory: reads and writes inside it are not sources or
            sinks; default the working directory when the rules are made.
        min_length: the shortest string value (after normalizing) that counts as a
            value; numbers count from 3 digits.
        secret_scanner: a detector of secrets, run on the string arguments of sink
            calls and on results (``interpose.secrets.scan``); None: only the values of
            secret files the session read are secrets.
        max_sessions: sessions whose labels are kept (the oldest are forgotten).
    """

    sink: SinkAction = "ask"
    requested: SinkAction = "allow"
    sinks: Mapping[str, SinkAction] = dataclasses.field(default_factory=dict)
    flag: FlagMode = "instructed"
    on_flagged: SinkAction = "block"
    on_secret: SinkAction = "block"
    sources: Sequence[str] = ()
    trusted: Sequence[str] = ()
    trusted_servers: Sequence[str] = ()
    source_kinds: frozenset[str] = SOURCE_KINDS
    all_results_untrusted: bool = False
    project: str = dataclasses.field(default_factory=os.getcwd)
    min_length: int = 4
    secret_scanner: SecretScanner | None = None
    max_sessions: int = 4096

    def __post_init__(self) -> None:
        for where, action in (
            ("sink", self.sink),
            ("requested", self.requested),
            ("on_flagged", self.on_flagged),
            ("on_secret", self.on_secret),
            *((f"sinks[{k!r}]", v) for k, v in self.sinks.items()),
        ):
            if action not in ("ask", "block", "allow"):
                raise ValueError(f"{where}: expected ask, block or allow, got {action!r}")
        if self.flag not in ("instructed", "untrusted"):
            raise ValueError(f"flag: expected instructed or untrusted, got {self.flag!r}")
        unknown = set(self.source_kinds) - SOURCE_KINDS
        if unknown:
            raise ValueError(
                f"source_kinds: unknown {', '.join(sorted(unknown))}; expected some of "
                + ", ".join(sorted(SOURCE_KINDS))
            )
        if self.min_length < 1 or self.max_sessions < 1:
            raise ValueError("min_length and max_sessions must be positive")
        object.__setattr__(self, "project", os.path.realpath(os.path.expanduser(self.project)))
