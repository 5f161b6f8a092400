"""The labels of each session: ``SessionFlows`` (what one session has seen, with
provenance) and ``FlowSessions`` (the sessions, by ``session_key``, bounded)."""

from __future__ import annotations

from typing import Any

from .model import Origin
from .values import Haystack, leaves, normalize, words_of

__all__ = ["FlowSessions", "SessionFlows"]

#: trusted results kept unread per session before the oldest are rendered
MAX_PENDING = 256
_TRUSTED = Origin("trusted")
_USER = Origin("user")


class SessionFlows:
    """One session: its calls so far (``ordinal``), its labels (``labels``: every
    untrusted or secret source seen, in order), the text of untrusted results, the
    text of the user's messages and trusted results, and its secret values.

    Trusted results are kept as they came and rendered only when a sink call after
    untrusted input needs them: a session that never reads an untrusted source never
    pays for indexing.
    """

    __slots__ = (
        "asked",
        "instructed",
        "labels",
        "ordinal",
        "pending",
        "said",
        "secrets",
        "tainted",
        "trusted",
        "untrusted",
    )

    def __init__(self) -> None:
        self.ordinal = 0
        self.labels: list[Origin] = []  # every source read, in order
        self.tainted = False  # whether it has read an untrusted source
        self.untrusted = Haystack()
        self.instructed = Haystack()  # the instructions inside untrusted results
        self.said = Haystack()  # the user's own messages
        self.asked: set[str] = set()  # the words of the user's messages
        self.trusted = Haystack()  # the user's messages and trusted results
        self.pending: list[Any] = []  # trusted results not rendered yet
        self.secrets: dict[str, Origin] = {}  # normalized secret value -> where it was read

    def label(self, origin: Origin) -> None:
        """Record a source read (``origin.label``: untrusted or secret)."""
        self.labels.append(origin)
        if origin.label == "untrusted":
            self.tainted = True

    def hear(self, text: str) -> None:
        """Keep the user's message ``text``: trusted, the user's own words, and what
        the user asked for."""
        said = normalize(text)
        self.trusted.add(said, _USER)
        self.said.add(said, _USER)
        self.asked.update(words_of(said))

    def keep_trusted(self, output: Any) -> None:
        """Keep a trusted result for later lookups."""
        pending = self.pending
        pending.append(output)
        if len(pending) > MAX_PENDING:
            self.index_trusted()

    def index_trusted(self) -> Haystack:
        """The trusted text, with the results kept since the last lookup rendered (as
        one piece: a value found there is trusted, whichever result showed it)."""
        pending = self.pending
        if pending:
            try:
                text = "\n".join(pending)  # most results are text
            except TypeError:
                text = "\n".join(o if isinstance(o, str) else "\n".join(leaves(o)) for o in pending)
            self.trusted.add(normalize(text), _TRUSTED)
            pending.clear()
        return self.trusted

    def add_secrets(self, values: list[str], origin: Origin) -> int:
        """Label ``values`` secret (seen first at ``origin``); how many are new."""
        new = 0
        for value in values:
            key = normalize(value)
            if key not in self.secrets:
                self.secrets[key] = origin
                new += 1
        return new


class FlowSessions:
    """The sessions' labels by ``session_key``, at most ``limit`` sessions (the one
    made longest ago is forgotten first)."""

    __slots__ = ("_sessions", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._sessions: dict[str, SessionFlows] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: str) -> SessionFlows | None:
        return self._sessions.get(key)

    def open(self, key: str) -> SessionFlows:
        """The session ``key``, made when new (then, past ``limit``, the session made
        longest ago is forgotten)."""
        session = self._sessions.get(key)
        if session is None:
            sessions = self._sessions
            if len(sessions) >= self.limit:
                del sessions[next(iter(sessions))]
            session = sessions[key] = SessionFlows()
        return session

    def forget(self, key: str) -> None:
        self._sessions.pop(key, None)
