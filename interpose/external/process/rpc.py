"""The JSON-RPC client of a process hook: requests multiplexed by id, each bounded.

How a call travels::

    pipeline handler (e.g. ProcessHook._before_tool)
      └─ _ask: encode the request, register a pending slot under a fresh id (and its
         deadline), write the line to the child's stdin, wait for the slot
    the child's stdout: each line (bounded) is decoded as an envelope, the pending slot
    of its id is popped and handed the raw result; the handler decodes the result
    with the struct of its method and maps it onto the decision vocabulary
    timer task (one per child): fail the slots still waiting at their deadline

The registrations carry no pipeline timeout (the hook bounds its own waits), so a call
costs no cancel scope either.

Every failure -- an invalid line, a reply to an unknown id, a result of the wrong type,
a line over ``max_line``, the child exiting, a timeout, a handshake that never comes, a
child that is down -- makes the waiting handler raise ``ProcessHookError`` (a timeout:
``ProcessHookTimeout``, also a ``TimeoutError``), so that the pipeline applies the
registration's ``on_error`` and publishes ``interceptor_failed``, as for any handler
that raises.  Nothing waits without a bound.
"""

from __future__ import annotations

import math
import threading
from collections import deque

import anyio
import msgspec

from ..._jsonlines import Oversized
from .child import CLOSING, Child, Pending, Supervisor
from .wire import (
    EMPTY,
    HELLO,
    NULL,
    PREVIEW,
    PROTOCOL_VERSION,
    Envelope,
    HelloParams,
    ProcessHookError,
    ProcessHookTimeout,
    R,
    Request,
    encoder,
    envelope,
)

__all__ = ["RpcClient"]

# On approve_tool the pipeline's timeout (the hook's) ends the wait; the hook's own timer
# backs it up this much later (see ProcessHook.interceptors).
_BACKSTOP = 1.0
_SLACK = 0.01  # s: tolerance when comparing a wait with a timeout


class RpcClient(Supervisor):
    """A ``Supervisor`` whose children answer JSON-RPC requests: the handshake, the
    lines of stdout, the pending calls and their timer (the base of ``ProcessHook``)."""

    _hello: HelloParams
    child_name: str

    def __init__(self) -> None:
        super().__init__()
        self._ids = iter(range(1, 1 << 62))

    async def _handshake(self, child: Child) -> None:
        method = "hook.hello"
        try:
            raw = await self._request(child, method, self._hello, self.handshake_timeout, math.inf)
            reply = self._decode(HELLO, raw, method)
            # PicoClaw's replies carry no version ({"ok": true, "name": ...}); one that
            # names a version must name ours
            for key, version in (
                ("protocol_version", reply.protocol_version),
                ("version", reply.version),
            ):
                if version is not None and version != PROTOCOL_VERSION:
                    raise self._error(
                        method,
                        f"the child speaks {key} {version}, this side speaks {PROTOCOL_VERSION}",
                    )
        except ProcessHookError as exc:
            self.stats.failed += 1
            child.stop(f"handshake failed: {exc.detail}")
            return
        if child.ended.is_set():
            return
        child.ready = True
        child.ready_at = anyio.current_time()
        self.child_name = reply.name
        assert self._ready is not None
        self._ready.set()
        self._log.info(
            "process hook %r is up: pid %s, it calls itself %r",
            self.name,
            child.proc.pid,
            reply.name,
        )

    # -- the conversation -----------------------------------------------------------

    def _take_line(self, child: Child, line: bytes | Oversized) -> bool:
        """Handle one line of the child's stdout; False: stop reading (it is done for)."""
        if child.ended.is_set() and child.end_reason == CLOSING:
            # closing: drain what it still writes (PicoClaw-style hooks answer the last
            # notifications too) so that it sees its stdin end, not a broken pipe
            return True
        try:
            self._on_line(child, line)
        except Exception as exc:  # a bug here must not take the pipeline down
            self._log.exception("process hook %r: cannot process a line", self.name)
            child.stop(f"internal error while reading its output: {exc!r}")
        # a child told to close may still write (replies to the last events, say): keep
        # reading until it exits, or its writes fail with a broken pipe
        return not child.ended.is_set() or self._closing

    def _oversized(self, child: Child) -> None:
        self.stats.oversized_lines += 1
        reason = f"a line on its stdout is longer than max_line ({self.max_line} bytes)"
        self._log.warning("process hook %r: %s; restarting it", self.name, reason)
        child.stop(reason)

    def _on_line(self, child: Child, line: bytes | Oversized) -> None:
        if not isinstance(line, bytes):  # a whole line past the limit, found in one read
            self._oversized(child)
            return
        try:
            msg = envelope.decode(line)
        except msgspec.ValidationError as exc:
            if not line.strip():
                return
            self._garbage(child, line, f"not a JSON-RPC message: {exc}")
            return
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            if not line.strip():
                return
            bad = _bad_utf8_in(line)
            if bad is not None:
                self._garbage(child, line, f"reply is not valid UTF-8: {bad}")
            else:
                self._garbage(child, line, f"reply is not valid JSON: {exc}")
            return
        rid = msg.id
        slot = child.pending.take(rid) if msg.method is None else None
        if slot is None:
            self._stray(child, msg)
            return
        child.replies += 1
        if msg.error is not None:
            error = msg.error
            slot.error = f"the child answered with error {error.code}: {error.message}"
        elif not len(msg.result):
            slot.error = "the reply has neither result nor error"
        else:
            slot.result = msg.result
        slot.done.set()

    def _garbage(self, child: Child, line: bytes, detail: str) -> None:
        """A line that is not a JSON-RPC message: it may have been meant for any of the
        waiting calls, so they all fail (better than each waiting for its timeout)."""
        self.stats.invalid_lines += 1
        detail = f"{detail}, in {_preview(line)}"
        self._log.warning("process hook %r: %s", self.name, detail)
        child.fail_pending(detail)

    def _stray(self, child: Child, msg: Envelope) -> None:
        """A message that answers no waiting call."""
        rid = msg.id
        if msg.method is not None:
            # a request or notification from the child: nothing is served that way
            self.stats.ignored += 1
            self._log.debug("process hook %r: ignored %s from the child", self.name, msg.method)
        elif rid is None:
            # a reply to a notification (PicoClaw's review_gate.py answers hook.event)
            self.stats.ignored += 1
            if msg.error is not None:
                self._log.warning(
                    "process hook %r: the child reported error %s: %s",
                    self.name,
                    msg.error.code,
                    msg.error.message,
                )
        elif child.pending.is_late(rid):
            self.stats.late_replies += 1
            child.replies += 1
            self._log.info(
                "process hook %r: late reply to request %s, already given up on", self.name, rid
            )
        else:
            # meant for one of the waiting calls, but which one cannot be told
            self.stats.unknown_ids += 1
            detail = f"reply to unknown id {rid!r} (no request was sent with it)"
            self._log.warning("process hook %r: %s", self.name, detail)
            child.fail_pending(detail)

    async def _request(
        self, child: Child, method: str, params: object, within: float, stuck_after: float
    ) -> msgspec.Raw:
        """Send one request to ``child`` and wait up to ``within`` seconds for its raw
        result (the timer task, ``_expire``, ends the wait: no cancel scope per call).

        ``stuck_after``: a call left unanswered this long, or until the caller's own
        deadline, with no reply of any kind since it was sent, means that the child is
        stuck: it is restarted.

        Raises:
            ProcessHookError: the request failed (see the message).
            ProcessHookTimeout: no reply within ``within`` seconds.
        """
        rid = next(self._ids)
        try:
            line = encoder.encode(Request("2.0", rid, method, params)) + b"\n"
        except (TypeError, ValueError, msgspec.EncodeError) as exc:
            raise self._error(method, f"cannot encode the request: {exc}") from exc
        sent = child.clock()
        slot = Pending(child.event(), method, sent, child.replies, within, stuck_after)
        pending = child.pending
        pending.add(rid, slot)
        queue = child.deadlines.get(within)
        if queue is None:
            queue = child.deadlines[within] = deque()
        queue.append((sent + within, rid))
        self.stats.requests += 1
        try:
            await child.send(line, sent + within, self.name, method)
            await slot.done.wait()
        except TimeoutError:  # the pipe stayed full: the child does not read its stdin
            slot.timed_out = True
            slot.error = (
                f"the request could not be written within {within:g}s "
                "(the process does not read its stdin)"
            )
        finally:
            if not slot.done.is_set():  # cancelled, or the line could not be written
                pending.abandon(rid)
                # cancelled by the caller's timeout (the pipeline's, on approvers), which
                # began a moment before `sent`: the same as our own timeout
                if child.clock() - sent >= stuck_after - _SLACK:
                    self.stats.timeouts += 1
                    if child.replies == slot.replies:
                        child.stop(
                            f"no reply to {method} within {stuck_after:g}s and no other "
                            "reply since: the process is stuck"
                        )
            # keep the queue short: drop the answered calls at its head
            while queue and queue[0][1] not in pending:
                queue.popleft()
        if slot.result is not None:
            return slot.result
        if slot.timed_out:
            detail = slot.error or f"no reply within {within:g}s"
            raise ProcessHookTimeout(
                f"process hook {self.name!r}: {method}: {detail}",
                hook=self.name,
                method=method,
                detail=detail,
            )
        raise self._error(method, slot.error)

    async def _expire(self, child: Child) -> None:
        """The timer of ``child``'s calls: fail each one still waiting at its deadline.

        It sleeps until the earliest deadline, or for the shortest timeout in use when
        nothing waits; a call sent meanwhile has a deadline at least that far away, so
        the timer never needs waking.
        """
        period = min(self.timeout, self.handshake_timeout)
        pending = child.pending
        while True:
            now = anyio.current_time()
            wake = now + period
            for queue in child.deadlines.values():
                while queue:
                    deadline, rid = queue[0]
                    slot = pending.get(rid)
                    if slot is not None and deadline > now:
                        wake = min(wake, deadline)
                        break
                    queue.popleft()
                    if slot is not None:
                        self._expired(child, rid, slot)
            await anyio.sleep(wake - now)

    def _expired(self, child: Child, rid: int, slot: Pending) -> None:
        child.pending.abandon(rid)
        self.stats.timeouts += 1
        slot.timed_out = True
        slot.done.set()
        if child.replies == slot.replies and slot.within >= slot.stuck_after:
            child.stop(
                f"no reply to {slot.method} within {slot.within:g}s and no other reply "
                "since: the process is stuck"
            )

    async def _ask(self, method: str, params: object, decoder: msgspec.json.Decoder[R]) -> R:
        """One hook call to the current child, decoded with ``decoder``.

        Raises:
            ProcessHookError: the child is down, the call failed (see the message), or it
                comes from another thread than the one whose event loop started the hook.
        """
        child = self._child
        try:
            if self._thread != threading.get_ident() and self._started:
                raise self._foreign_thread(method)
            if child is None or not child.ready:
                raise self._unavailable(method)
            # approvals run under the pipeline's timeout (see interceptors()); ours backs it up
            timeout = self.timeout + _BACKSTOP if method == "hook.approve_tool" else self.timeout
            raw = await self._request(child, method, params, timeout, self.timeout)
            return self._decode(decoder, raw, method)
        except ProcessHookError:
            self.stats.failed += 1
            raise

    def _decode(self, decoder: msgspec.json.Decoder[R], raw: msgspec.Raw, method: str) -> R:
        data = raw if bytes(raw) != NULL else EMPTY  # a null result means "nothing to say"
        try:
            return decoder.decode(data)
        except (msgspec.DecodeError, UnicodeDecodeError) as exc:
            bad = _bad_utf8_in(bytes(data))
            if bad is None:
                raise self._error(method, f"invalid reply: {exc}") from exc
            # the result is left raw by the reader, so its strings are checked only now:
            # an invalid line all the same, answering only this call
            self.stats.invalid_lines += 1
            detail = f"reply is not valid UTF-8: {bad}"
            self._log.warning("process hook %r: %s: %s", self.name, method, detail)
            raise self._error(method, detail) from exc

    def _error(self, method: str, detail: str) -> ProcessHookError:
        return ProcessHookError(
            f"process hook {self.name!r}: {method}: {detail}",
            hook=self.name,
            method=method,
            detail=detail,
        )

    def _unavailable(self, method: str) -> ProcessHookError:
        if not self._started:
            why = (
                "is closed"
                if self._closing
                else "is not started (enter the pipeline it is installed on: `async with pipe`)"
            )
        else:
            why = f"is not running ({self._why_down()})"
            wait = self._next_start - anyio.current_time()
            if not self._closing and wait > 0:
                why += f"; next start in {wait:.2g}s"
            elif not self._closing and self._child is not None and self._child.end_reason:
                why += "; it is being restarted"
        return ProcessHookError(f"process hook {self.name!r} {why}", hook=self.name, method=method)


def _bad_utf8_in(data: bytes) -> str | None:
    """What makes ``data`` invalid UTF-8 (``invalid start byte (0xff)``), or None.  Asked
    when msgspec cannot decode a reply: before 0.23 it raised ``UnicodeDecodeError`` for
    bad UTF-8 inside a string, since then a ``DecodeError`` that does not say where."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.end]
        return f"{exc.reason} ({' '.join(f'{b:#04x}' for b in bad[:4])})"
    return None


def _preview(line: bytes) -> str:
    text = line[:PREVIEW].decode("utf-8", "replace")
    return repr(text) + ("..." if len(line) > PREVIEW else "")
