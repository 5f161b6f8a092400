"""The labels of each session: ``SessionFlows`` (what one session has seen, with
provenance) and ``FlowSessions`` (the sessions, by ``session_key``, bounded)."""

from __future__ import annotations

from typing import Any

from .model import Origin
from .values import Haystack, normalize, render

__all__ = ["FlowSessions", "SessionFlows"]

#: trusted results kept unread per session before the oldest are rendered
MAX_PENDING = 256


class SessionFlows:
    """One session: its calls so far (``ordinal``), its labels (``labels``: every
    untrusted or secret source seen, in order), the text of untrusted results, the
    text of the user's messages and trusted results, and its secret values.

    Trusted results are kept as they came and rendered only when a sink call after
    untrusted input needs them: a session that never reads an untrusted source never
    pays for indexing.
    """

    __slots__ = ("labels", "ordinal", "pending", "secrets", "tainted", "trusted", "untrusted")

    def __init__(self) -> None:
        self.ordinal = 0
        self.labels: list[Origin] = []  # every source read, in order
        self.tainted = False  # whether it has read an untrusted source
        self.untrusted = Haystack()
        self.trusted = Haystack()
        self.pending: list[tuple[Any, Origin]] = []
        self.secrets: dict[str, Origin] = {}  # normalized secret value -> where it was read

    def label(self, origin: Origin) -> None:
        """Record a source read (``origin.label``: untrusted or secret)."""
        self.labels.append(origin)
        if origin.label == "untrusted":
            self.tainted = True

    def keep_trusted(self, output: Any, origin: Origin) -> None:
        self.pending.append((output, origin))
        if len(self.pending) > MAX_PENDING:
            self.index_trusted()

    def index_trusted(self) -> Haystack:
        """The trusted text, with the results kept since the last lookup rendered."""
        for output, origin in self.pending:
            self.trusted.add(render(output), origin)
        self.pending.clear()
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
    touched longest ago is forgotten first)."""

    __slots__ = ("_sessions", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._sessions: dict[str, SessionFlows] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: str) -> SessionFlows | None:
        return self._sessions.get(key)

    def open(self, key: str) -> SessionFlows:
        """The session ``key``, made when new; it becomes the most recent."""
        sessions = self._sessions
        session = sessions.pop(key, None)
        if session is None:
            session = SessionFlows()
            if len(sessions) >= self.limit:
                del sessions[next(iter(sessions))]
        sessions[key] = session
        return session

    def forget(self, key: str) -> None:
        self._sessions.pop(key, None)
