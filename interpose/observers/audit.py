"""A JSON Lines audit log: one line per event, flushed as it is written, rotated by size.

Every line is ``encode_event(event)`` followed by ``\\n`` and decodes back with
``interpose.bus.events.decode_event``.  The log is a synchronous observer; subscribe it
with ``AuditLog.attach(pipe)``, which uses the ``block`` overflow policy so that no event
is ever dropped (a full buffer makes the agent wait instead).

Rotation works like ``logging.handlers.RotatingFileHandler``: when the next line would
take the file past ``max_bytes``, ``path`` becomes ``path.1``, ``path.1`` becomes
``path.2`` and so on, the oldest beyond ``backups`` is deleted, and a new ``path`` is
started.  A line is never split across files: it goes whole into the new file, even when
it alone is longer than ``max_bytes``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO

from ..bus.events import Event, encode_event

if TYPE_CHECKING:
    from ..bus.memory import Subscription
    from .recording import RecordingHost

__all__ = ["AuditLog"]

_DEFAULT_MAX_BYTES = 64 * 1024 * 1024


class AuditLog:
    """Append every event it receives to ``path`` as one JSON line.

    The file is opened (in append mode, so a restarted process adds to an existing log)
    when the ``AuditLog`` is created: a missing directory or a permission problem shows
    up here, not as an observer failure in the middle of a turn.  Each line is flushed
    to the operating system before the call returns.

    Args:
        path: the file to write; rotated files are ``path.1`` (newest) to
            ``path.<backups>`` (oldest).
        max_bytes: the size a file may reach before the log moves on to a new one;
            ``None`` never rotates.
        backups: how many rotated files to keep (at least 1).

    Raises:
        ValueError: ``max_bytes`` is not a positive int or None, or ``backups`` is not
            an int >= 1.
        OSError: the file cannot be opened (e.g. its directory does not exist).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int | None = _DEFAULT_MAX_BYTES,
        backups: int = 5,
    ) -> None:
        if max_bytes is not None and (
            not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1
        ):
            raise ValueError(f"max_bytes must be a positive int or None, got {max_bytes!r}")
        if not isinstance(backups, int) or isinstance(backups, bool) or backups < 1:
            raise ValueError(f"backups must be an int >= 1, got {backups!r}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        # the consumer task is the only writer of one subscription, but one log may be
        # shared by pipelines running in several threads: a line is written whole or not
        self._lock = threading.Lock()
        self._file: BinaryIO | None = None
        self._size = 0
        self._open()

    def __repr__(self) -> str:
        state = "closed" if self._file is None else f"{self._size} bytes"
        return f"<AuditLog {str(self.path)!r} {state}>"

    @property
    def closed(self) -> bool:
        """True once ``close()`` was called."""
        return self._file is None

    def __call__(self, event: Event, /) -> None:
        """Write ``event`` as one line, rotating first if the line would not fit.

        Raises:
            ValueError: the log is closed.
            OSError: writing failed, or rotating did (the line is then still written,
                to the unrotated file).  On the bus, this is counted as an observer
                failure and published as an ``interceptor_failed`` event.
        """
        line = encode_event(event) + b"\n"
        with self._lock:
            if self._file is None:
                raise ValueError(f"I/O on a closed audit log ({self.path})")
            failure: OSError | None = None
            if (
                self.max_bytes is not None
                and self._size > 0
                and self._size + len(line) > self.max_bytes
            ):
                failure = self._rotate()
            file = self._file
            file.write(line)
            file.flush()
            self._size += len(line)
        if failure is not None:
            # the line is safe in the (unrotated) file; report that rotation failed
            raise failure

    def attach(
        self,
        pipe: RecordingHost,
        *,
        events: Iterable[str] | None = None,
        buffer: int = 1024,
        name: str | None = None,
        record_args: bool = False,
        record_results: bool = False,
        record_llm: bool = False,
        record_messages: bool = False,
    ) -> Subscription:
        """Subscribe this log to ``pipe`` with ``overflow="block"``: no event is lost.

        The ``record_*`` options add ``call_recorded`` events (see
        ``interpose.observers.recording``), redacted by ``pipe.redactor``, so that the
        log can be replayed through another stack (``interpose replay``).

        Args:
            pipe: the pipeline whose events to record.
            events: the kinds to record; None (the default) records every kind.
            buffer: how many events may wait to be written before the agent waits.
            name: the subscription's name (default ``"audit-log <path>"``).
            record_args: record each tool call's arguments (as sent, as the tool got
                them) and its outcome.
            record_results: record each tool call's result output too (and, with
                ``record_llm``, each LLM response).
            record_llm: record each LLM request.
            record_messages: record each user message and the turn's params (as they
                came, as the stack left them).

        Raises:
            ValueError: an unknown event kind or a non-positive buffer.
            RegistrationError: recording is on for ``pipe`` already.
        """
        if record_args or record_llm or record_messages:
            from .recording import CallRecorder

            CallRecorder(
                args=record_args,
                results=record_results,
                llm=record_llm,
                messages=record_messages,
            ).install(pipe)
        return pipe.subscribe(
            self,
            events=events,
            buffer=buffer,
            overflow="block",
            name=name or f"audit-log {self.path}",
        )

    def close(self) -> None:
        """Close the file.  Closing twice is harmless; writing afterwards raises."""
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- files ------------------------------------------------------------------------

    def _open(self) -> None:
        file = open(self.path, "ab")  # noqa: SIM115 - kept open until close()
        self._file = file
        self._size = os.fstat(file.fileno()).st_size

    def _rotate(self) -> OSError | None:
        """Shift ``path`` to ``path.1`` (and so on) and start a new, empty ``path``.

        Returns the error if a rename failed: ``path`` is then reopened as it is, so
        the log writes on to the full file rather than losing the event.

        Raises:
            OSError: ``path`` could not be reopened (the log is then closed).
        """
        assert self._file is not None
        self._file.close()
        self._file = None
        base = str(self.path)
        failure: OSError | None = None
        try:
            for n in range(self.backups - 1, 0, -1):
                older = f"{base}.{n}"
                if os.path.exists(older):
                    os.replace(older, f"{base}.{n + 1}")
            os.replace(base, f"{base}.1")
        except OSError as exc:
            failure = exc
        self._open()
        return failure
