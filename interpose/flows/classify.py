"""Which tools are untrusted sources and which are sinks, by what they do.

A tool's ``Role`` is decided once per tool name (then cached): from its name's words
(the first verb: ``send``, ``transfer``, ``create``...; ``read``, ``get``, ``search``...;
nouns: ``email``, ``inbox``, ``web``, ``file``...), its parameters (``recipient``,
``iban``, ``url`` with ``body``, ``path`` with ``content``...), its description's
verbs when the name has none, MCP annotations (hints: a missing one means open-world
and destructive; a server not trusted is not believed when it claims read-only for a
tool whose name or parameters say otherwise), then the user's overrides.  Never by a
benchmark's tool names.

A sink also knows the words a user's message asks for its action with (``send``,
``reply`` for a mail sender: ``Role.wanted``), and a tool that is no sink but requests a
URL its URL parameters (``Role.fetch``).

Some roles depend on the call: a file reader is a source when the file lies outside
the project (a secret source for an ``.env``-like file), a writer a sink when it
writes outside; ``exec`` is a sink and a source when its command uses the network.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ..middleware.builtins.security_audit.matching import sensitive_reason
from ..pipeline.tools import normalize_tool_name
from .model import FlowRules, SinkAction, ToolInfo

__all__ = ["Classifier", "Role", "ask_pattern", "words"]


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SEND = _set(
    "send post reply forward email mail message share invite publish tweet notify submit "
    "upload comment dm broadcast text sms announce respond"
)
_PAY = _set("pay transfer wire refund purchase buy order checkout withdraw deposit donate tip")
_CHANGE = _set(
    "create update delete remove write edit add set modify put patch rename move append "
    "insert book reserve cancel register grant revoke change kick ban reset save upsert "
    "drop clear commit push merge deploy install schedule assign close archive mark"
)
_EXEC = _set("exec execute run shell bash eval spawn sh cmd command")
_READ = _set(
    "read get search fetch list find query lookup show view check describe count browse "
    "download open load retrieve scan inspect summarize see look cat head tail"
)
_VERBS = _SEND | _PAY | _CHANGE | _EXEC | _READ
#: (the sink verbs of an action, the words a user's message asks for it with)
_ACTIONS = (
    (
        "send mail email message reply respond forward notify dm text tweet comment broadcast "
        "announce sms",
        "send email message reply respond forward write tell notify inform contact share post",
    ),
    (
        "pay transfer wire refund purchase buy order withdraw deposit donate tip",
        "pay transfer send refund wire reimburse buy purchase order",
    ),
    ("create add insert schedule register", "create add make schedule book set new organize"),
    (
        "update change modify edit set rename move reset patch append upsert assign mark",
        "update change modify adjust set edit correct fix rename move reschedule",
    ),
    ("delete remove clear cancel drop archive close", "delete remove erase clear cancel drop"),
    ("reserve book", "reserve book reservation"),
    ("invite", "invite add"),
    ("share grant", "share give grant"),
    ("post publish upload submit", "post publish share send write upload submit"),
    ("write save", "write save create edit update change add append put"),
)
#: by a sink's verb: the words a user's message asks for its action with
_ASKED_WITH: dict[str, frozenset[str]] = {
    verb: _set(asks) | {verb} for verbs, asks in _ACTIONS for verb in verbs.split()
}
_WEB = _set("web webpage page url site website internet browser browse http rss")
_MESSAGE = _set(
    "email emails mail mails inbox message messages msg msgs chat chats dm dms "
    "conversation conversations thread threads sms tweet tweets feed comment comments "
    "review reviews issue issues ticket tickets notification notifications post posts "
    "calendar meeting meetings invitation invitations transaction transactions channel channels"
)
_FILE = _set("file files document documents doc docs path dir directory")
_PAY_NOUNS = _set("payment payments transaction transactions money funds invoice")
_RECIPIENT = _set(
    "to recipient recipients cc bcc address addresses email emails phone number iban "
    "account receiver payee user users channel participants invitee"
)
_PAY_PARAMS = _set("iban amount account recipient payee")
_BODY = _set("body data json payload content form")
_URL = _set("url uri endpoint webhook href link")
_PATH = _set("path file_path file target_file notebook_path filepath filename paths file_paths")
_CONTENT = _set("content contents text data body patch new_string")
_NETWORK = re.compile(
    r"(?:^|[\s;&|(`$])(?:curl|wget|nc|ncat|netcat|ssh|scp|sftp|rsync|ftp|telnet|http|https"
    r"|socat|mail|sendmail|git\s+(?:push|clone|fetch|pull)|(?:pip3?|npm|pnpm|yarn)\s+"
    r"(?:install|publish|add))(?=$|[\s;&|)`])|\b(?:https?|ftp)://"
)
_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SENTENCE = re.compile(r"[.!?\n]")
_EXPECTED = {"read": "file", "write": "write", "edit": "write", "apply_patch": "write"}
_CANONICAL_SINKS = ("exec", "write", "edit", "apply_patch", "message", "sessions_send")


def ask_pattern(names: Iterable[str] = ()) -> re.Pattern[str]:
    """A regex over normalized tool names that matches every tool the classifier can
    call a sink by its name alone (a sink verb: anywhere for verbs of 4 letters or more,
    at a word's start for shorter ones), every MCP tool, the canonical sinks, and
    ``names`` (tools found sinks by their description or parameters).  It may match
    more: it keeps the approval step off the calls of tools that cannot ask."""
    verbs = _SEND | _PAY | _CHANGE | _EXEC
    long = sorted((v for v in verbs if len(v) >= 4), key=len, reverse=True)
    short = sorted((v for v in verbs if len(v) < 4), key=len, reverse=True)
    exact = sorted({*_CANONICAL_SINKS, *names})
    return re.compile(
        "|".join(map(re.escape, long))
        + r"|(?:^|[^a-z])(?:"
        + "|".join(map(re.escape, short))
        + r")|^mcp__|^(?:"
        + "|".join(map(re.escape, exact))
        + ")$"
    )


def words(name: str) -> tuple[str, ...]:
    """The lower-cased words of a name: ``sendEmail``, ``send_email``, ``send-email``
    all give ``("send", "email")``."""
    return tuple(w.lower() for w in _WORD.findall(name))


def _stem(word: str) -> str:
    """A description's verb in its base form: ``sends`` -> ``send``, ``creates`` ->
    ``create``, ``returns`` -> ``return``."""
    for suffix, repl in (("ies", "y"), ("ches", "ch"), ("shes", "sh"), ("sses", "ss"), ("s", "")):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            return word[: -len(suffix)] + repl
    return word


@dataclasses.dataclass(frozen=True, slots=True)
class Role:
    """What a tool is to the flow rules.

    ``source``: "" (its results are trusted), a kind of untrusted source (``web``,
    ``message``, ``mcp``, ``exec``, ``configured``), or ``file`` (untrusted when the
    file is outside the project, secret when it is ``.env``-like: decided per call);
    ``sink``: "" or what makes it one (``sends messages``...); ``per_call``: the sink
    is decided per call (``write``: by the path; ``exec``: by the command); ``action``:
    the user's decision for this sink (None: the rules' ``sink``); ``wanted``: the
    words a user's message asks for this sink's action with (``send``, ``email``,
    ``reply``... for a mail sender); ``fetch``: the names of its URL parameters, for a
    tool that is no sink but requests a URL (a URL an untrusted instruction named is
    flagged there too).
    """

    source: str = ""
    source_why: str = ""
    sink: str = ""
    per_call: str = ""
    action: SinkAction | None = None
    wanted: frozenset[str] = frozenset()
    fetch: tuple[str, ...] = ()


class Classifier:
    """Decides the ``Role`` of each tool once and caches it.

    Args:
        rules: the flow rules (overrides, trusted servers, source kinds, project).
    """

    def __init__(self, rules: FlowRules) -> None:
        self.rules = rules
        self._infos: dict[str, ToolInfo] = {}
        #: the roles decided so far, by normalized name (the policy reads it directly)
        self.roles: dict[str, Role] = {}
        self._sinks = {normalize_tool_name(k): v for k, v in rules.sinks.items()}
        self._sources = tuple(normalize_tool_name(s) for s in rules.sources)
        self._trusted = tuple(normalize_tool_name(s) for s in rules.trusted)
        self._servers = frozenset(s.lower() for s in rules.trusted_servers)

    def describe(self, info: ToolInfo) -> None:
        """Register what a tool says about itself; its role is decided again."""
        key = normalize_tool_name(info.name)
        self._infos[key] = info
        self.roles.pop(key, None)

    def role(self, name: str, raw_name: str = "") -> Role:
        """The role of the tool ``name`` (normalized); ``raw_name`` keeps its camelCase."""
        role = self.roles.get(name)
        if role is None:
            role = self.roles[name] = self._decide(name, raw_name or name)
        return role

    # -- deciding ---------------------------------------------------------------------------

    def _decide(self, name: str, raw: str) -> Role:
        info = self._infos.get(name)
        server, tool = _split_mcp(name, raw, info)
        sink, per_call = self._sink(name, tool, info, server)
        source, why = self._source(name, tool, info, server)
        action = _named(self._sinks, name)
        if action is not None and not sink and not per_call:
            sink = "named a sink in the flow rules"
        named = words(tool)
        verb = _verb(named) or _verb(_description_words(info))
        return Role(
            source=source,
            source_why=why,
            sink=sink,
            per_call=per_call,
            action=action,
            wanted=_wanted(sink, per_call, verb, named),
            fetch=() if sink or per_call else _url_params(info),
        )

    def _source(self, name: str, tool: str, info: ToolInfo | None, server: str) -> tuple[str, str]:
        kinds = self.rules.source_kinds
        if _named(self._trusted, name) is not None:
            return "", ""
        if _named(self._sources, name) is not None:
            return "configured", "named a source in the flow rules"
        if server and server.lower() not in self._servers and "mcp" in kinds:
            return "mcp", f"a tool of the MCP server {server!r}, not trusted"
        ws = set(words(tool))
        params = {p.lower() for p in info.params} if info is not None else set()
        verb = _verb(words(tool)) or _verb(_description_words(info))
        if name == "exec":
            return "exec", "a command that uses the network"
        if verb is None or verb in _READ:
            if name in ("web_fetch", "web_search", "browser") or ws & _WEB:
                if "web" in kinds:
                    return "web", "reads the web"
            elif ws & _MESSAGE:
                if "message" in kinds:
                    return "message", "reads messages"
            elif name == "read" or (verb in _READ and (ws & _FILE or params & _PATH)):
                return "file", "reads a file outside the project"
        if self.rules.all_results_untrusted:
            return "configured", "every result is untrusted (all_results_untrusted)"
        return "", ""

    def _sink(self, name: str, tool: str, info: ToolInfo | None, server: str) -> tuple[str, str]:
        """(what makes it a sink, or ""; the per-call check, or "")."""
        if name in _EXPECTED:
            return ("", _EXPECTED[name]) if name != "read" else ("", "")
        if name == "exec":
            return "", "exec"
        if name in ("message", "sessions_send"):
            return "sends messages", ""
        ws = words(tool)
        params = {p.lower() for p in info.params} if info is not None else set()
        verb = _verb(ws)
        from_description = verb is None
        if verb is None:
            verb = _verb(_description_words(info))
        if verb is None:
            found = _by_params(params)
        elif verb in _READ:  # a read with a body is a request that sends one
            found = (
                ("sends HTTP requests with a body", "")
                if params & _URL and params & _BODY
                else ("", "")
            )
        else:
            found = _by_verb(verb, ws, params)
        if from_description and verb is not None and found[0]:
            found = (found[0] + " (by its description)", found[1])
        if server:
            found = self._annotated(found, info, server, verb)
        return found

    def _annotated(
        self, found: tuple[str, str], info: ToolInfo | None, server: str, verb: str | None
    ) -> tuple[str, str]:
        """An MCP tool: its annotations make it a sink (missing ones mean the worst); a
        server not trusted is believed read-only only when nothing else says it acts."""
        if found[0]:
            return found
        hints: Mapping[str, Any] = (info.annotations or {}) if info is not None else {}
        trusted = server.lower() in self._servers
        if hints.get("readOnlyHint") is True and (trusted or verb in _READ):
            return found
        if hints.get("openWorldHint", True) is not False:
            if not hints:
                return "an MCP tool without annotations (assumed open-world)", ""
            if "openWorldHint" not in hints:
                return "an MCP tool without openWorldHint (assumed open-world)", ""
            return "an MCP tool in an open world (openWorldHint)", ""
        if hints.get("destructiveHint", True) is not False:
            return "an MCP tool that may be destructive (destructiveHint)", ""
        return found

    # -- per call -----------------------------------------------------------------------------

    def file_source(self, args: Mapping[str, Any]) -> tuple[str, str]:
        """For a file reader's call: (``secret`` or ``untrusted`` or "", why)."""
        for path in _paths(args):
            reason = sensitive_reason(path)
            if reason is not None:
                return "secret", f"reads {path} ({reason})"
        if "file" not in self.rules.source_kinds:
            return "", ""
        paths = _paths(args)
        if not paths:  # by id or by search: documents of a store, not of the project
            return "untrusted", "reads documents by id or search, not a project path"
        for path in paths:
            if not self.inside(path):
                return "untrusted", f"reads {path}, outside the project"
            if not os.path.exists(self.full(path)):
                return "untrusted", f"reads {path}, a document that is no file of the project"
        return "", ""

    def call_sink(self, kind: str, args: Mapping[str, Any]) -> str:
        """For a per-call sink: what makes this call one, or ""."""
        if kind == "write":
            for path in _paths(args):
                if not self.inside(path):
                    return f"writes {path}, outside the project"
            return ""
        command = args.get("command")
        text = " ".join(map(str, command)) if isinstance(command, list) else command
        if isinstance(text, str) and _NETWORK.search(text):
            return "runs a command that uses the network"
        return ""

    def exec_source(self, args: Mapping[str, Any]) -> tuple[str, str]:
        """For an ``exec`` call: (``secret`` / ``untrusted`` / "", why)."""
        command = args.get("command")
        text = " ".join(map(str, command)) if isinstance(command, list) else command
        if not isinstance(text, str):
            return "", ""
        for token in text.split():
            token = token.strip("'\"<>;&|()")
            if "/" in token or token.startswith("."):
                reason = sensitive_reason(token)
                if reason is not None:
                    return "secret", f"reads {token} ({reason})"
        if "exec" in self.rules.source_kinds and _NETWORK.search(text):
            return "untrusted", "a command that uses the network"
        return "", ""

    def inside(self, path: str) -> bool:
        """Whether ``path`` (relative: to the project) lies inside the project."""
        project = self.rules.project
        full = self.full(path)
        return full == project or full.startswith(project + os.sep)

    def full(self, path: str) -> str:
        """``path`` made absolute (relative: to the project) and normalized."""
        return os.path.normpath(os.path.join(self.rules.project, os.path.expanduser(path)))


def _split_mcp(name: str, raw: str, info: ToolInfo | None) -> tuple[str, str]:
    """(the MCP server, the tool's own name) of ``mcp__<server>__<tool>``."""
    server = info.server if info is not None else ""
    tool = info.name if info is not None else raw
    if name.startswith("mcp__"):
        parts = (raw if raw.lower().startswith("mcp__") else name).split("__", 2)
        if len(parts) == 3:
            server = server or parts[1]
            tool = parts[2]
    return server, tool


def _verb(ws: tuple[str, ...]) -> str | None:
    """The first verb of ``ws`` (``reschedule``, ``resend``: the verb after ``re``)."""
    for w in ws:
        if w in _VERBS:
            return w
        if w.startswith("re") and w[2:] in _VERBS:
            return w[2:]
    return None


def _description_words(info: ToolInfo | None) -> tuple[str, ...]:
    """The stemmed words of the description's first sentence."""
    if info is None or not info.description:
        return ()
    first = _SENTENCE.split(info.description.strip(), 1)[0]
    return tuple(_stem(w) for w in words(first)[:8])


def _by_verb(verb: str | None, ws: tuple[str, ...], params: set[str]) -> tuple[str, str]:
    nouns = set(ws)
    if verb in _PAY or (verb in _CHANGE | _SEND and nouns & _PAY_NOUNS):
        return "moves money", ""
    if verb in _SEND:
        return "sends messages", ""
    if verb in _EXEC:
        return "", "exec"
    if verb in _CHANGE:
        if params & _PATH or (verb in ("write", "edit", "save", "append") and nouns & _FILE):
            return "", "write"
        return f"changes data ({verb})", ""
    return "", ""


def _wanted(sink: str, per_call: str, verb: str | None, named: tuple[str, ...]) -> frozenset[str]:
    """The words a user's message asks for a sink's action with: its verb's kin
    (``_ASKED_WITH``), those of sending or paying for a sink that sends or pays, and the
    verb of its name as spelled (``reschedule``); none for what is no sink, nor for
    ``exec`` (a networked command after untrusted input is never taken as asked for)."""
    if per_call == "exec" or not (sink or per_call):
        return frozenset()
    found = _ASKED_WITH.get(verb, frozenset({verb})) if verb else frozenset()
    if per_call == "write":
        found = _ASKED_WITH["write"]
    elif sink.startswith("moves money"):
        found |= _ASKED_WITH["pay"]
    elif sink.startswith("sends messages"):
        found |= _ASKED_WITH["send"]
    for w in named:
        if w in _VERBS or (w.startswith("re") and w[2:] in _VERBS):
            return found if w in _READ else found | {w}
    return found


def _url_params(info: ToolInfo | None) -> tuple[str, ...]:
    """The URL parameters of a tool that is no sink (``url`` for one never described)."""
    return tuple(p for p in (info.params if info is not None else ("url",)) if p.lower() in _URL)


def _by_params(params: set[str]) -> tuple[str, str]:
    """A tool whose name says nothing: its parameters."""
    if params & _PAY_PARAMS and "amount" in params:
        return "moves money", ""
    if params & _URL and params & _BODY:
        return "sends HTTP requests with a body", ""
    if params & _RECIPIENT and params & _CONTENT:
        return "sends messages", ""
    if params & _PATH and params & _CONTENT:
        return "", "write"
    return "", ""


def _named(table: Mapping[str, Any] | tuple[str, ...], name: str) -> Any:
    """The entry of ``table`` for ``name``: its exact name, or an ``mcp__<server>__``
    prefix of it (None when neither)."""
    if isinstance(table, tuple):
        return (
            True
            if name in table or any(p.endswith("__") and name.startswith(p) for p in table)
            else None
        )
    found = table.get(name)
    if found is None:
        for prefix, value in table.items():
            if prefix.endswith("__") and name.startswith(prefix):
                return value
    return found


def _paths(args: Mapping[str, Any]) -> list[str]:
    found: list[str] = []
    for key, value in args.items():
        if key in _PATH:
            if isinstance(value, str):
                found.append(value)
            elif isinstance(value, list):
                found += [v for v in value if isinstance(v, str)]
    return found
