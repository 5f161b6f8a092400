"""A real OTLP collector for the integration tests: rotel, and a parser for what it prints.

The ``collector`` fixture starts ``rotel-agent`` once per test session on two free
loopback ports (OTLP/gRPC and OTLP/HTTP), with the blackhole exporter and the detailed
trace debug log: for every batch it receives, rotel prints each span (ids, name, kind,
status, attributes) on its stdout.  A reader thread collects that output; tests wait, with
a deadline, until the spans they expect have been printed, then assert on the parsed
records.

Without the rotel binary (the ``rotel`` package of the dev extra) the tests are skipped,
except under CI (``CI=true``), where a missing collector fails the run.
"""

from __future__ import annotations

import codecs
import importlib.util
import os
import re
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import pytest

STARTUP_TIMEOUT = 20.0  # s: until rotel accepts connections on both ports
SPAN_TIMEOUT = 20.0  # s: until the spans a test waits for have been printed
STOP_TIMEOUT = 5.0  # s: after SIGTERM, before SIGKILL

# -- parsing rotel's detailed trace output -------------------------------------------------

AttributeValue = str | int | float | bool | tuple["AttributeValue", ...] | None


@dataclass(frozen=True)
class SpanEvent:
    """An event recorded on a span (e.g. an exception)."""

    name: str
    attributes: dict[str, AttributeValue]


@dataclass(frozen=True)
class SpanRecord:
    """One span as the collector received it.

    ``parent_span_id`` is "" for a root span; ``kind`` is INTERNAL, CLIENT, SERVER, …;
    ``status_code`` is UNSET, OK or ERROR; ``resource`` holds the resource attributes
    (``service.name``, …) of the batch the span came in.
    """

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    kind: str
    status_code: str
    status_message: str
    attributes: dict[str, AttributeValue]
    resource: dict[str, AttributeValue]
    scope: str
    events: tuple[SpanEvent, ...] = ()


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# A line that starts an entry; any other line continues the previous entry (a string
# value or a status message with newlines in it).
_ENTRY = re.compile(
    r"^(?:"
    r"\d{4}-\d\d-\d\dT\S+\s"  # a log line of rotel's own
    r"|ResourceSpans #\d+$|Resource SchemaURL:|Resource attributes:$"
    r"|ScopeSpans #\d+$|ScopeSpans SchemaURL:|InstrumentationScope\b"
    r"|Span #\d+$|Start time:|End time:|Attributes:$|Events:$|Links:$"
    r"|SpanEvent #\d+$|SpanLink #\d+$"
    r"|\s+(?:Trace ID|Parent ID|ID|Name|Kind|Status code|Status message|TraceState)\s+:"
    r"|\s+-> "
    r")"
)
_FIELD = re.compile(r"^\s+(Trace ID|Parent ID|ID|Name|Kind|Status code|Status message)\s+: ?")
_ARROW = re.compile(r"^(\s+)-> ([^:]+?): ?(.*)$", re.DOTALL)
_VALUE = re.compile(r"^(\w+)\((.*)\)$", re.DOTALL)
_ITEM_SPLIT = re.compile(r"\), (?=(?:Str|Int|Bool|Double|Slice|Map|Bytes)\()")


def parse_value(text: str) -> AttributeValue:
    """``Str(x)`` → "x", ``Int(3)`` → 3, ``Double(1.5)`` → 1.5, ``Bool(true)`` → True,
    ``Slice(Str(a), Str(b))`` → ("a", "b"); anything else is returned as printed."""
    match = _VALUE.match(text)
    if match is None:
        return text
    kind, inner = match.groups()
    if kind == "Str":
        return inner
    if kind == "Int":
        return int(inner)
    if kind == "Double":
        return float(inner)
    if kind == "Bool":
        return inner == "true"
    if kind == "Slice":
        if not inner:
            return ()
        items = _ITEM_SPLIT.split(inner)
        return tuple(parse_value(item if item.endswith(")") else item + ")") for item in items)
    return text


def _entries(text: str) -> Iterator[str]:
    """The logical entries of rotel's output: lines, with continuation lines joined."""
    entry: str | None = None
    for line in _ANSI.sub("", text).splitlines():
        if _ENTRY.match(line) or entry is None:
            if entry is not None:
                yield entry
            entry = line
        else:
            entry += "\n" + line
    if entry is not None:
        yield entry


@dataclass
class _SpanDraft:
    fields: dict[str, str] = field(default_factory=dict)
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)


def parse_spans(text: str) -> list[SpanRecord]:
    """Every span in rotel's ``--debug-log traces --debug-log-verbosity detailed`` output.

    Values are parsed from rotel's rendering (``Str(...)``, ``Int(...)``, …); a string
    value that itself contains a line looking like an attribute entry would be split
    there (the tests send no such values).
    """
    spans: list[SpanRecord] = []
    resource: dict[str, AttributeValue] = {}
    scope = ""
    draft: _SpanDraft | None = None
    section = ""  # which block the "->" entries belong to
    event: tuple[str, dict[str, AttributeValue]] | None = None

    def close_event() -> None:
        nonlocal event
        if draft is not None and event is not None:
            draft.events.append(SpanEvent(event[0], event[1]))
        event = None

    def close_span() -> None:
        nonlocal draft
        close_event()
        if draft is not None:
            f = draft.fields
            spans.append(
                SpanRecord(
                    name=f.get("Name", ""),
                    trace_id=f.get("Trace ID", ""),
                    span_id=f.get("ID", ""),
                    parent_span_id=f.get("Parent ID", ""),
                    kind=f.get("Kind", "").removeprefix("SPAN_KIND_"),
                    status_code=f.get("Status code", "").removeprefix("STATUS_CODE_"),
                    status_message=f.get("Status message", ""),
                    attributes=draft.attributes,
                    resource=dict(resource),
                    scope=scope,
                    events=tuple(draft.events),
                )
            )
        draft = None

    for entry in _entries(text):
        if entry.startswith("ResourceSpans #"):
            close_span()
            resource, scope, section = {}, "", ""
        elif entry.startswith("Resource attributes:"):
            section = "resource"
        elif entry.startswith("InstrumentationScope"):
            close_span()
            scope = entry.removeprefix("InstrumentationScope").strip()
        elif entry.startswith("Span #"):
            close_span()
            draft, section = _SpanDraft(), ""
        elif entry == "Attributes:":
            section = "span"
        elif entry == "Events:":
            section = "events"
        elif entry == "Links:":
            close_event()
            section = "links"
        elif entry.startswith("SpanEvent #"):
            close_event()
            event = ("", {})
        elif draft is not None and (found := _FIELD.match(entry)):
            draft.fields[found.group(1)] = entry[found.end() :].rstrip(" ")
        elif arrow := _ARROW.match(entry):
            indent, key, value = len(arrow.group(1)), arrow.group(2), arrow.group(3)
            if section == "resource":
                resource[key] = parse_value(value)
            elif section == "span" and draft is not None:
                draft.attributes[key] = parse_value(value)
            elif section == "events" and event is not None:
                if key == "Name" and indent <= 5:
                    event = (value, event[1])
                elif indent > 5:  # an event attribute, nested under "Attributes::"
                    event[1][key] = parse_value(value)
    close_span()
    return spans


# -- the collector process -----------------------------------------------------------------


def find_rotel_agent() -> Path | None:
    """The ``rotel-agent`` binary shipped in the ``rotel`` package, or one on PATH."""
    spec = importlib.util.find_spec("rotel")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = Path(location) / "rotel-agent"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("rotel-agent")
    return Path(found) if found is not None else None


def _free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (the sockets are held until all are found)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


class Collector:
    """A running rotel-agent and everything it has printed so far."""

    def __init__(self, agent: Path, log_path: Path) -> None:
        self.grpc_port, self.http_port = _free_ports(2)
        self.log_path = log_path
        self._text = ""
        self._changed = threading.Condition()
        self._log = log_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [
                str(agent),
                "start",
                "--exporter",
                "blackhole",
                "--debug-log",
                "traces",
                "--debug-log-verbosity",
                "detailed",
                "--otlp-grpc-endpoint",
                f"127.0.0.1:{self.grpc_port}",
                "--otlp-http-endpoint",
                f"127.0.0.1:{self.http_port}",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**os.environ, "NO_COLOR": "1"},
        )
        assert self.process.stdout is not None
        self._reader = threading.Thread(
            target=self._read, args=(self.process.stdout,), name="rotel-reader", daemon=True
        )
        self._reader.start()

    @property
    def http_endpoint(self) -> str:
        """Base URL of the OTLP/HTTP receiver (``configure`` appends /v1/traces)."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_endpoint(self) -> str:
        """URL of the OTLP/gRPC receiver (plaintext)."""
        return f"http://127.0.0.1:{self.grpc_port}"

    def endpoint(self, protocol: str) -> str:
        """The endpoint for ``protocol`` ("http" or "grpc")."""
        return self.http_endpoint if protocol == "http" else self.grpc_endpoint

    def _read(self, stream: IO[bytes]) -> None:
        # incremental: a chunk may end inside a multi-byte character
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        while chunk := os.read(stream.fileno(), 65536):
            text = decoder.decode(chunk)
            self._log.write(text)
            self._log.flush()
            with self._changed:
                self._text += text
                self._changed.notify_all()
        with self._changed:  # end of output: the process has exited
            self._changed.notify_all()

    @property
    def output(self) -> str:
        """Everything rotel printed so far, colours stripped."""
        with self._changed:
            return _ANSI.sub("", self._text)

    def spans(self) -> list[SpanRecord]:
        """Every span printed so far."""
        return parse_spans(self.output)

    def _tail(self, lines: int = 40) -> str:
        return "\n".join(self.output.splitlines()[-lines:])

    def wait_until(self, ready: Callable[[str], bool], timeout: float, what: str) -> None:
        """Wait until ``ready(output)`` holds, woken by each new chunk of output.

        Raises:
            AssertionError: not within ``timeout`` s, or rotel exited first.
        """
        deadline = time.monotonic() + timeout
        with self._changed:
            while not ready(_ANSI.sub("", self._text)):
                remaining = deadline - time.monotonic()
                if self.process.poll() is not None:
                    raise AssertionError(
                        f"rotel exited ({self.process.returncode}) before {what}:\n{self._tail()}"
                    )
                if remaining <= 0:
                    raise AssertionError(
                        f"no {what} within {timeout}s; rotel printed:\n{self._tail()}"
                    )
                self._changed.wait(min(remaining, 0.5))

    def wait_for_spans(
        self,
        where: Callable[[SpanRecord], bool],
        count: int,
        timeout: float = SPAN_TIMEOUT,
    ) -> list[SpanRecord]:
        """Wait until at least ``count`` printed spans satisfy ``where``; return those.

        Raises:
            AssertionError: fewer arrived within ``timeout`` s (the message shows what did).
        """
        self.wait_until(
            lambda text: sum(1 for span in parse_spans(text) if where(span)) >= count,
            timeout,
            f"{count} matching span(s)",
        )
        return [span for span in self.spans() if where(span)]

    def wait_listening(self) -> None:
        """Wait until rotel has started and both receivers accept connections.

        Raises:
            AssertionError: not within STARTUP_TIMEOUT s, or rotel exited.
        """
        deadline = time.monotonic() + STARTUP_TIMEOUT
        self.wait_until(lambda text: "Starting Rotel" in text, STARTUP_TIMEOUT, "its start-up")
        pending = [self.grpc_port, self.http_port]
        while pending := [port for port in pending if not _accepts(port)]:
            if self.process.poll() is not None:
                raise AssertionError(f"rotel exited ({self.process.returncode}):\n{self._tail()}")
            if time.monotonic() >= deadline:
                raise AssertionError(
                    f"rotel does not listen on {pending} after {STARTUP_TIMEOUT}s:\n{self._tail()}"
                )
            # the receivers bind right after the start-up line: look again in a moment
            with self._changed:
                self._changed.wait(0.05)

    def stop(self) -> None:
        """Terminate rotel (kill it if it does not exit in STOP_TIMEOUT s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=STOP_TIMEOUT)
        self._reader.join(timeout=STOP_TIMEOUT)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._log.close()


@pytest.fixture(scope="session")
def collector(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Collector]:
    """A rotel collector for the whole session; its output is kept in ``log_path``."""
    agent = find_rotel_agent()
    if agent is None:
        message = (
            "rotel-agent not found: install the dev extra (pip install -e '.[dev]'), which "
            "brings the rotel collector the integration tests export to"
        )
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    collector = Collector(agent, tmp_path_factory.mktemp("rotel") / "rotel.log")
    try:
        collector.wait_listening()
        yield collector
    finally:
        collector.stop()
