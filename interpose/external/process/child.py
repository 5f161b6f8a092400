"""The child of a process hook: spawn it, supervise it, restart it with backoff.

The child's life is a small state machine run by one supervisor task per hook::

    spawn ─> handshake ─ok─> ready (serving) ─┐
      ^         └─failed──────────────────────┤ exit, crash, over-long line,
      │                                       │ a timeout with no sign of life
      └──── backoff sleep (min, 2*min, ... max) <─ reap (SIGTERM, then SIGKILL, to
                                                   the child's process group)

While the child is down, calls fail at once with the reason; the backoff resets once a
child has stayed up for ``restart_backoff[1]`` seconds.

On asyncio the child's stdin and stdout are pipes connected to asyncio transports: a
request is written in one synchronous call, and the loop hands each chunk of stdout to
a protocol that dispatches the complete lines at once, so a reply wakes its caller
directly.  Under any other anyio backend (trio), anyio's process streams are used, with
a reader task per child.

The child leads a process group of its own, and the group dies with each generation:
what the child started cannot outlive it.  Its exit is watched directly (see
_process_group.wait_exited), not inferred from EOF alone, since a process it started
may hold its stdout open.  The hook serves the event loop that started it, and a call
from another thread's loop fails at once instead of waiting for a reply that the other
loop receives.

``Supervisor`` is the base of ``ProcessHook`` that owns all this; what each line of the
child's stdout means is the JSON-RPC client's (``rpc.RpcClient``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import subprocess
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Final, Protocol, cast

import anyio
import anyio.abc
import msgspec
from anyio.streams.buffered import BufferedByteReceiveStream

from ..._jsonlines import LineSplitter, Oversized, ReplyTable
from .._process_group import kill_group, terminate_group, wait_exited
from .wire import PREVIEW, ProcessHookError, ProcessHookStats

__all__ = ["ASYNCIO_PIPES", "CLOSING", "INHERITED_ENV", "Child", "Pending", "Supervisor"]

#: variables copied from the parent's environment into the child's, when set
INHERITED_ENV: Final = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "SYSTEMROOT")

_EXIT_WAIT = 1.0  # s: after stdout ends, for the exit code; after the exit, for EOF
_CLOSE_GRACE = 1.0  # s: on close, for the child to exit after its stdin ends
_KILL_WAIT = 1.0  # s: after SIGTERM, then after SIGKILL
_STDERR_GRACE = 0.5  # s: after the child is gone, for the rest of its stderr
_ABANDONED_KEPT = 1024  # ids given up on, remembered so that their late replies are known
CLOSING = "the hook is closing"
# On asyncio, the child's stdin/stdout are pipes connected to asyncio transports (no
# reader task, no checkpoint per write); elsewhere, anyio's streams and a reader task.
# Tests and the benchmark turn this off to run the portable path under asyncio too; it
# is read when a hook starts, and holds for its restarts.
ASYNCIO_PIPES = True


def _new_lock() -> anyio.Lock:
    """A lock that takes no checkpoint when it is free (anyio >= 4.5), else a plain one:
    every call takes it once, so the checkpoint would cost each call a loop iteration."""
    try:
        return anyio.Lock(fast_acquire=True)
    except TypeError:  # pragma: no cover - anyio < 4.5
        return anyio.Lock()


class Waitable(Protocol):
    """What a call waits on: anyio.Event, or asyncio.Event on the asyncio path."""

    def set(self) -> None: ...
    def is_set(self) -> bool: ...
    async def wait(self) -> Any: ...


class Pending:
    """A call waiting for its reply: the reader fills ``result`` or ``error`` (the
    timer: ``timed_out``) and sets ``done``."""

    __slots__ = (
        "done",
        "error",
        "method",
        "replies",
        "result",
        "sent",
        "stuck_after",
        "timed_out",
        "within",
    )

    def __init__(
        self,
        done: Waitable,
        method: str,
        sent: float,
        replies: int,
        within: float,
        stuck_after: float,
    ) -> None:
        self.done = done
        self.method = method
        self.sent = sent
        self.replies = replies  # the child's reply count when it was sent
        self.within = within
        self.stuck_after = stuck_after
        self.result: msgspec.Raw | None = None
        self.error = ""
        self.timed_out = False


class StreamInput:
    """The child's stdin as anyio's byte stream (any backend): one writer at a time."""

    __slots__ = ("lock", "stream")

    def __init__(self, stream: anyio.abc.ByteSendStream) -> None:
        self.stream = stream
        self.lock = _new_lock()

    async def send(self, line: bytes, deadline: float) -> None:
        with anyio.fail_at(deadline):  # a child that stops reading fills the pipe
            async with self.lock:  # lines never interleave
                await self.stream.send(line)

    async def aclose(self) -> None:
        await self.stream.aclose()


class PipeInput(asyncio.Protocol):
    """The child's stdin as an asyncio pipe transport: a line is written in one
    synchronous call, so lines never interleave and sending does not yield to the
    loop -- unless the pipe is full, and then only until it drains or the deadline."""

    def __init__(self) -> None:
        self.transport: asyncio.WriteTransport | None = None
        self.lost = False
        self.drained: anyio.Event | None = None  # while writing is paused

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports do not derive from asyncio's classes: no isinstance)
        self.transport = cast(asyncio.WriteTransport, transport)

    def pause_writing(self) -> None:
        self.drained = anyio.Event()

    def resume_writing(self) -> None:
        drained, self.drained = self.drained, None
        if drained is not None:
            drained.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.resume_writing()

    async def send(self, line: bytes, deadline: float) -> None:
        transport = self.transport
        if self.lost or transport is None or transport.is_closing():
            raise anyio.BrokenResourceError
        transport.write(line)
        drained = self.drained
        if drained is not None:
            with anyio.fail_at(deadline):
                await drained.wait()
            if self.lost:
                raise anyio.BrokenResourceError

    async def aclose(self) -> None:
        if self.transport is not None:
            self.transport.close()  # what is buffered is still written, then EOF


class PipeOutput(asyncio.Protocol):
    """The child's stdout as an asyncio pipe transport: the loop hands over the bytes as
    they arrive and each complete line goes straight to ``on_line`` -- no reader task, so
    a reply wakes its caller one loop iteration sooner.

    ``on_line(line)`` returns False to stop reading; it gets a whole line longer than
    ``limit`` as an ``Oversized``; a line that grows past ``limit`` before its end calls
    ``on_overflow()`` and stops reading.  ``closed`` is set when the pipe is closed (the
    child closed its stdout, or reading stopped).  The lines are cut by the transport
    shared with the MCP stdio lanes (``interpose._jsonlines.LineSplitter``).
    """

    def __init__(
        self,
        on_line: Callable[[bytes | Oversized], bool],
        on_overflow: Callable[[], None],
        limit: int,
    ) -> None:
        self.on_line = on_line
        self.on_overflow = on_overflow
        self.limit = limit
        self.closed = anyio.Event()
        self.transport: asyncio.ReadTransport | None = None
        self.splitter = LineSplitter(limit)

    @property
    def partial(self) -> int:
        """Bytes of a line that has not ended yet."""
        return self.splitter.pending

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # (uvloop's transports do not derive from asyncio's classes: no isinstance)
        self.transport = cast(asyncio.ReadTransport, transport)

    def data_received(self, data: bytes) -> None:
        on_line = self.on_line
        for line in self.splitter.feed(data):
            if not on_line(line):  # (an over-long one too: on_line says what it means)
                self.close()
                return
        if self.splitter.overflowing:
            self.on_overflow()
            self.close()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()


class Child:
    """One generation of the hook's process and the state of its conversation."""

    __slots__ = (
        "clock",
        "deadlines",
        "end_reason",
        "ended",
        "event",
        "input",
        "output",
        "pending",
        "proc",
        "ready",
        "ready_at",
        "replies",
        "stderr_done",
        "stderr_tail",
    )

    def __init__(
        self,
        proc: anyio.abc.Process,
        input: StreamInput | PipeInput,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.proc = proc
        self.input = input
        # what each call waits on, and the clock of its deadline: asyncio's own on the
        # asyncio path (anyio's wrappers cost a microsecond or so per call), else anyio's
        self.event: Callable[[], Waitable] = anyio.Event if loop is None else asyncio.Event
        self.clock: Callable[[], float] = anyio.current_time if loop is None else loop.time
        # the stdout protocol on asyncio; None: a reader task reads proc.stdout
        self.output: PipeOutput | None = None
        self.pending: ReplyTable[Pending] = ReplyTable(_ABANDONED_KEPT)
        # (deadline, id) of the calls, one queue per timeout: sent in order, so each queue
        # is sorted; entries of answered calls are dropped lazily (see ProcessHook._expire)
        self.deadlines: dict[float, deque[tuple[float, int]]] = {}
        self.ready = False
        self.ready_at = 0.0
        self.replies = 0  # replies received so far: a call that sees none since it was
        # sent, for its whole timeout, finds the child stuck
        self.ended = anyio.Event()
        self.end_reason = ""
        self.stderr_done = anyio.Event()
        self.stderr_tail: deque[str] = deque(maxlen=5)

    async def send(self, line: bytes, deadline: float, hook: str, method: str) -> None:
        """Write one line, waiting for a full pipe to drain until ``deadline``.

        Raises:
            ProcessHookError: the process has exited or closed its stdin.
            TimeoutError: the pipe stayed full until ``deadline``.
        """
        try:
            await self.input.send(line, deadline)
        except TimeoutError:  # an OSError, but not a broken pipe
            raise
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise ProcessHookError(
                f"process hook {hook!r}: {method}: cannot write to the process "
                f"({type(exc).__name__}); it has exited or closed its stdin",
                hook=hook,
                method=method,
            ) from exc

    def fail_pending(self, detail: str) -> None:
        """Fail every waiting call with ``detail``."""
        # (the table is emptied in place: the reader and the timer hold it; the ids are
        # remembered as given up on, so that their late replies are known)
        for _, slot in self.pending.drain():
            slot.error = detail
            slot.done.set()

    def stop(self, reason: str) -> None:
        """End this generation: fail the waiting calls; the supervisor reaps it."""
        if self.ended.is_set():
            return
        self.ready = False
        self.end_reason = reason
        self.fail_pending(reason)
        self.ended.set()

    def close_pipes(self) -> None:
        """Close the asyncio pipe transports, if any (the process is gone: what is still
        buffered for its stdin is dropped)."""
        if isinstance(self.input, PipeInput):
            transport = self.input.transport
            # one already closing is left alone: it ends once its buffer is written or
            # the write fails on the dead process's pipe (abort would end it twice)
            if transport is not None and not transport.is_closing():
                transport.abort()
        if self.output is not None:
            self.output.close()


# -- the supervisor -------------------------------------------------------------------------


class Supervisor:
    """The process side of a ``ProcessHook``: its children, one generation at a time.

    The subclass (``rpc.RpcClient``) gives the conversation: the handshake, what a line
    of stdout means, an over-long line, the timer of the calls.
    """

    name: str
    command: tuple[str, ...]
    env: dict[str, str]
    cwd: str | None
    max_line: int
    timeout: float
    handshake_timeout: float
    restart_backoff: tuple[float, float]
    stats: ProcessHookStats
    _log: logging.Logger

    def __init__(self) -> None:
        self._child: Child | None = None
        self._started = False
        self._closing = False
        self._down = "not started"
        self._next_start = 0.0
        # loop-bound objects are made in start(): the hook can run again under a new loop
        self._ready: anyio.Event | None = None
        self._wake: anyio.Event | None = None
        self._stopped: anyio.Event | None = None
        self._scope: anyio.CancelScope | None = None
        # the running asyncio loop when the children talk over asyncio pipes, else None
        # (another backend, or the portable path forced): chosen once per start()
        self._loop: asyncio.AbstractEventLoop | None = None
        # the thread whose event loop started the hook: its children, events and pipes
        # belong to that loop, and a call from another loop would wait on them forever
        self._thread: int | None = None
        self._thread_name = ""

    # -- what the conversation provides (rpc.RpcClient) -------------------------------

    async def _handshake(self, child: Child) -> None:
        raise NotImplementedError

    def _take_line(self, child: Child, line: bytes | Oversized) -> bool:
        raise NotImplementedError

    def _oversized(self, child: Child) -> None:
        raise NotImplementedError

    async def _expire(self, child: Child) -> None:
        raise NotImplementedError

    # -- state --------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """Whether a child is up and has answered its handshake."""
        child = self._child
        return child is not None and child.ready

    @property
    def pid(self) -> int | None:
        """The current child's process id (None when there is none)."""
        child = self._child
        return None if child is None or child.ended.is_set() else child.proc.pid

    @property
    def in_flight(self) -> int:
        """How many hook calls are waiting for their reply."""
        child = self._child
        return 0 if child is None else len(child.pending)

    async def wait_ready(self) -> None:
        """Wait until a child has answered its handshake (at once if one has).  Bound
        it with ``anyio.fail_after``: a child that never comes up is waited for forever.

        Raises:
            ProcessHookError: the hook is not started, or it is closed meanwhile, or it
                was started by the event loop of another thread.
        """
        if self._started and self._thread != threading.get_ident():
            raise self._foreign_thread("")
        while not self.running:
            if not self._started or self._closing or self._ready is None:
                raise ProcessHookError(
                    f"process hook {self.name!r} is {'closed' if self._closing else 'not started'}",
                    hook=self.name,
                )
            await self._ready.wait()

    # -- lifecycle (the pipeline's Service protocol) --------------------------------

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Spawn the child and greet it; returns once the handshake succeeded or failed
        (a failed one is retried with backoff in the background; calls fail meanwhile).

        Raises:
            ProcessHookError: the command cannot be started at all (not found, not
                executable).
            RuntimeError: the hook is already running.
        """
        if self._started:
            raise RuntimeError(f"process hook {self.name!r} is already running")
        self._closing = False
        self._ready = anyio.Event()
        self._wake = anyio.Event()
        self._stopped = anyio.Event()
        self._down = ""
        self._loop = _asyncio_loop() if ASYNCIO_PIPES else None
        self._thread = threading.get_ident()
        self._thread_name = threading.current_thread().name
        first = await self._spawn()
        self._started = True
        try:
            await tg.start(self._supervise, first)
        except BaseException:
            self._started = False
            raise

    async def aclose(self) -> None:
        """Stop the child: close its stdin, give it a moment to exit, then terminate and
        kill it; calls still waiting fail.  Bounded in time; idempotent."""
        if not self._started:
            return
        self._closing = True
        self._down = "closed"
        assert self._wake is not None
        assert self._stopped is not None
        assert self._ready is not None
        child = self._child
        if child is not None:
            child.stop(CLOSING)
        self._wake.set()
        self._ready.set()  # wake wait_ready() callers: they raise
        with anyio.move_on_after(_CLOSE_GRACE + 2 * _KILL_WAIT + _STDERR_GRACE + 1):
            await self._stopped.wait()
        if self._scope is not None:
            self._scope.cancel()
        self._started = False

    def _why_down(self) -> str:
        child = self._child
        if child is None:
            return self._down  # not started, closed, or it could not be spawned
        if child.end_reason:
            return child.end_reason
        return "starting: waiting for the reply to hook.hello"

    def _reset_ready(self) -> None:
        """The child went down: later wait_ready() calls wait for the next one."""
        if self._ready is not None and self._ready.is_set() and not self._closing:
            self._ready = anyio.Event()

    async def _spawn(self) -> Child:
        loop = self._loop
        try:
            # shielded: a process half-started when a cancel arrives would be orphaned
            with anyio.CancelScope(shield=True):
                if loop is None:
                    proc = await self._open_process()
                    assert proc.stdin is not None
                    child = Child(proc, StreamInput(proc.stdin))
                else:
                    child = await self._spawn_piped(loop)
        except OSError as exc:
            detail = f"cannot start {self.command[0]!r}: {exc}"
            raise ProcessHookError(
                f"process hook {self.name!r}: {detail}", hook=self.name, detail=detail
            ) from exc
        self.stats.starts += 1
        self._log.debug("process hook %r: started pid %s", self.name, child.proc.pid)
        return child

    async def _open_process(
        self, stdin: int = subprocess.PIPE, stdout: int = subprocess.PIPE
    ) -> anyio.abc.Process:
        return await anyio.open_process(
            list(self.command),
            stdin=stdin,
            stdout=stdout,
            cwd=self.cwd,
            env=self._child_env(),
            start_new_session=True,
        )

    async def _spawn_piped(self, loop: asyncio.AbstractEventLoop) -> Child:
        """Start the child on pipes of our own, connected to asyncio transports (the
        fast path: see PipeInput and PipeOutput); its stderr stays an anyio stream."""
        child_in, to_child = os.pipe()
        from_child, child_out = os.pipe()
        try:
            proc = await self._open_process(stdin=child_in, stdout=child_out)
        except BaseException:
            os.close(to_child)
            os.close(from_child)
            raise
        finally:
            os.close(child_in)  # the child holds its own copies now
            os.close(child_out)
        input = PipeInput()
        child = Child(proc, input, loop)
        output = PipeOutput(
            functools.partial(self._take_line, child),
            functools.partial(self._oversized, child),
            self.max_line,
        )
        # the transports own the files (and close the descriptors) from here on
        writer = os.fdopen(to_child, "wb", buffering=0)
        reader = os.fdopen(from_child, "rb", buffering=0)
        try:
            await loop.connect_write_pipe(lambda: input, writer)
            await loop.connect_read_pipe(lambda: output, reader)
        except BaseException:
            proc.kill()
            child.close_pipes()
            writer.close()
            reader.close()
            raise
        child.output = output
        return child

    def _child_env(self) -> dict[str, str]:
        env = {key: os.environ[key] for key in INHERITED_ENV if key in os.environ}
        env.setdefault("PATH", os.defpath)
        env.update(self.env)
        return env

    async def _supervise(
        self, first: Child, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        assert self._wake is not None
        assert self._stopped is not None
        low, high = self.restart_backoff
        delay = low
        child: Child | None = first
        status = task_status
        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                while True:
                    if child is not None:
                        self._child = child
                        await self._serve(child, status)
                        status = anyio.TASK_STATUS_IGNORED
                        if child.ready_at and anyio.current_time() - child.ready_at >= high:
                            delay = low  # it was up long enough: start the backoff over
                    if self._closing:
                        return
                    self._next_start = anyio.current_time() + delay
                    self._log.warning(
                        "process hook %r is down (%s); restarting in %.3gs",
                        self.name,
                        self._why_down(),
                        delay,
                    )
                    with anyio.move_on_after(delay):
                        await self._wake.wait()
                    if self._closing:
                        return
                    delay = min(delay * 2, high)
                    try:
                        child = await self._spawn()
                    except ProcessHookError as exc:
                        child = self._child = None
                        self._down = exc.detail
                    else:
                        self.stats.restarts += 1
        finally:
            self._stopped.set()

    async def _serve(self, child: Child, task_status: anyio.abc.TaskStatus[None]) -> None:
        """Run one generation: its reader and stderr tasks, the handshake, then wait for
        its end and reap it."""
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._pump_stderr, child)
                if child.output is None:
                    tg.start_soon(self._read, child)
                else:
                    tg.start_soon(self._watch_output, child, child.output)
                tg.start_soon(self._expire, child)
                tg.start_soon(self._watch_exit, child)
                if self._closing:
                    child.stop(CLOSING)
                else:
                    await self._handshake(child)
                task_status.started()
                await child.ended.wait()
                self._reset_ready()
                await self._reap(child)
                with anyio.move_on_after(_STDERR_GRACE):
                    await child.stderr_done.wait()
                tg.cancel_scope.cancel()
        finally:
            child.close_pipes()
            with anyio.CancelScope(shield=True), anyio.move_on_after(_KILL_WAIT):
                await child.proc.aclose()
        if child.proc.returncode not in (None, 0) and child.stderr_tail:
            self._log.warning(
                "process hook %r: last lines of its stderr: %s",
                self.name,
                " | ".join(child.stderr_tail),
            )

    async def _reap(self, child: Child) -> None:
        """Make sure the process and its process group are gone: close its stdin (on
        close, give it a moment to exit by itself), then SIGTERM the group, then SIGKILL
        it, each wait bounded.  The SIGKILL goes out even when the child has exited by
        then: what it started (and left in its group) dies with this generation."""
        proc = child.proc
        with anyio.CancelScope(shield=True):
            try:
                await child.input.aclose()
            except (OSError, anyio.BrokenResourceError):
                pass
            if proc.returncode is None and self._closing:
                with anyio.move_on_after(_CLOSE_GRACE):
                    await wait_exited(proc)
            if proc.returncode is None:
                terminate_group(proc)
                with anyio.move_on_after(_KILL_WAIT):
                    await wait_exited(proc)
            kill_group(proc)
            if proc.returncode is None:
                with anyio.move_on_after(_KILL_WAIT):
                    await wait_exited(proc)

    async def _pump_stderr(self, child: Child) -> None:
        """Forward the child's stderr, line by line, to the hook's logger (INFO)."""
        stderr = child.proc.stderr
        assert stderr is not None
        stream = BufferedByteReceiveStream(stderr)
        log = self._log
        try:
            while True:
                try:
                    data = await stream.receive_until(b"\n", self.max_line)
                except anyio.DelimiterNotFound:
                    data = await stream.receive(self.max_line)  # log it in pieces
                except anyio.IncompleteRead:
                    data = stream.buffer
                    if data:
                        await stream.receive(len(data))
                        self._log_stderr(child, data, log)
                    return
                self._log_stderr(child, data, log)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        finally:
            child.stderr_done.set()

    def _log_stderr(self, child: Child, data: bytes, log: logging.Logger) -> None:
        text = data.decode("utf-8", "replace").rstrip("\r")
        child.stderr_tail.append(text[:PREVIEW])
        log.info("%s", text)

    # -- the conversation -----------------------------------------------------------

    async def _read(self, child: Child) -> None:
        """The reader task of the portable path: read lines until stdout ends (cut as
        on the asyncio path, by the shared ``LineSplitter``)."""
        stdout = child.proc.stdout
        assert stdout is not None
        splitter = LineSplitter(self.max_line)
        take_line = self._take_line
        try:
            while True:
                for line in splitter.feed(await stdout.receive()):
                    if not take_line(child, line):
                        return
                if splitter.overflowing:
                    self._oversized(child)
                    return
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        await self._output_ended(child)

    async def _watch_output(self, child: Child, output: PipeOutput) -> None:
        """The asyncio path's stand-in for the reader task: wait for stdout to close."""
        await output.closed.wait()
        await self._output_ended(child)

    async def _output_ended(self, child: Child) -> None:
        """The child's stdout ended: end the generation, with its exit code if it has
        one by now."""
        if child.ended.is_set():
            return
        code = child.proc.returncode
        if code is None:
            with anyio.move_on_after(_EXIT_WAIT):
                code = await wait_exited(child.proc)
        child.stop("the process closed its stdout" if code is None else _exit_reason(code))

    async def _watch_exit(self, child: Child) -> None:
        """End the generation when the process exits, even if its stdout stays open.

        A process the child started inherits its stdout; when the child exits, that
        process keeps the pipe open, so no EOF would tell that the child is gone and the
        calls would wait for their timeouts.  Killing the child's process group closes
        the pipe: the reader then delivers the replies the child wrote before it exited
        and, at EOF, ends the generation with its exit code.
        """
        code = await wait_exited(child.proc)
        if child.ended.is_set():
            return  # it was stopped first: _reap ends its group
        kill_group(child.proc)
        with anyio.move_on_after(_EXIT_WAIT):  # a process that left the group may hold it
            await child.ended.wait()
        child.stop(_exit_reason(code))

    def _foreign_thread(self, method: str) -> ProcessHookError:
        detail = (
            f"called from thread {threading.current_thread().name!r}, but the hook runs in "
            f"the event loop of thread {self._thread_name!r}, which entered its pipeline; "
            "its child answers only there: call the pipeline from that loop (from another "
            "thread with anyio.from_thread.run or asyncio.run_coroutine_threadsafe), or "
            "give each thread's event loop a pipeline of its own"
        )
        where = f"process hook {self.name!r}: {method}" if method else f"process hook {self.name!r}"
        return ProcessHookError(f"{where}: {detail}", hook=self.name, method=method, detail=detail)


def _asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or None under another backend (trio)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _exit_reason(code: int) -> str:
    if code < 0:
        return f"the process was killed by signal {-code}"
    return f"the process exited with code {code}"
