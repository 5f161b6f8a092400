"""The stdio lanes' reading side: ``LineProtocol`` on a real pipe, and ``Inbox``."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from interpose.adapters.mcp.lines import Inbox, LineProtocol, Oversized

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _read(
    chunks: list[bytes],
    *,
    max_line: int = 1 << 16,
    on_too_long: Callable[[Oversized], None] | None = None,
) -> tuple[list[bytes], bool]:
    """Write ``chunks`` to a pipe one by one (each read on its own); the lines seen and
    whether the pipe was reported closed."""
    loop = asyncio.get_running_loop()
    lines: list[bytes] = []
    closed = loop.create_future()
    ours, theirs = os.pipe()
    transport, _ = await loop.connect_read_pipe(
        lambda: LineProtocol(
            lines.append,
            lambda: closed.set_result(True),
            max_line=max_line,
            name="test",
            on_too_long=on_too_long,
        ),
        os.fdopen(ours, "rb", buffering=0),
    )
    try:
        for chunk in chunks:
            try:
                os.write(theirs, chunk)
            except BrokenPipeError:  # the reader closed the pipe
                break
            for _ in range(5):  # let the loop read it
                await asyncio.sleep(0)
    finally:
        os.close(theirs)
    with anyio.fail_after(5):
        await closed
    transport.close()
    return lines, closed.result()


async def test_lines_are_split_across_pieces_and_blank_ones_skipped() -> None:
    lines, closed = await _read([b'{"a":', b' 1}\n\n  \n{"b": 2}\n{"c"', b": 3}\nrest"])
    assert lines == [b'{"a": 1}', b'{"b": 2}', b'{"c": 3}']
    assert closed  # EOF: the unfinished "rest" is not a message


async def test_a_line_over_the_limit_is_dropped_reported_and_reading_goes_on() -> None:
    over: list[Oversized] = []
    long = b'{"jsonrpc": "2.0", "id": 7, "method": "x", "params": "' + b"y" * 200 + b'"}'
    chunks = [b"ok\n", long[:100], long[100:], b"\nmore\n", b"z" * 80 + b"\nlast\n"]
    lines, closed = await _read(chunks, max_line=64, on_too_long=over.append)
    assert lines == [b"ok", b"more", b"last"]
    assert closed
    assert [o.size for o in over] == [len(long), 80]
    assert over[0].identify() == (7, True)
    assert over[1].identify() == (None, False)


def test_the_id_of_an_oversized_message_is_found_at_its_start_or_its_end() -> None:
    sdk = Oversized(b'{"jsonrpc":"2.0","id":"interpose-3","result":{"content":[', b"]}}", 9)
    typescript = Oversized(b'{"result":{"content":[', b'"}]},"jsonrpc":"2.0","id":12}', 9)
    nested = Oversized(b'{"jsonrpc":"2.0","result":{"a":{"id":5', b'"id":5}}}', 9)
    notification = Oversized(b'{"method":"notifications/message","params":{', b"}}", 9)
    assert sdk.identify() == ("interpose-3", False)
    assert typescript.identify() == (12, False)
    assert nested.identify() == (None, False)  # an id inside the result is not the id
    assert notification.identify() == (None, True)


async def test_the_inbox_keeps_order_pauses_the_pipe_and_ends_after_what_came_before() -> None:
    handled: list[Any] = []
    gate = asyncio.Event()

    async def handle(item: Any) -> None:
        await gate.wait()
        if item == "bad":
            raise ValueError("a message it cannot handle")
        handled.append(item)

    class Transport:
        paused = False
        pauses = 0

        def pause_reading(self) -> None:
            self.paused = True
            self.pauses += 1

        def resume_reading(self) -> None:
            self.paused = False

        def is_closing(self) -> bool:
            return False

    inbox = Inbox(handle, limit=4)
    transport = Transport()
    inbox.transport = transport  # type: ignore[assignment]
    assert not inbox
    pump = asyncio.get_running_loop().create_task(inbox.pump())
    for item in [1, 2, "bad", 3, 4, 5]:
        inbox.put(item)
    inbox.end()
    assert inbox
    assert transport.paused  # more than 4 wait: the pipe stops being read
    gate.set()
    with anyio.fail_after(5):
        await pump
    assert handled == [1, 2, 3, 4, 5]  # in order; the bad one logged and skipped
    assert not transport.paused
    assert transport.pauses == 1
    assert not inbox


async def test_a_long_line_in_many_pieces_arrives_whole() -> None:
    long = b"x" * (1 << 20)
    pieces = [long[i : i + 4096] for i in range(0, len(long), 4096)]
    pieces[-1] += b"\n{}"  # the line ends inside a piece that starts the next one
    lines, _ = await _read([*pieces, b"\n", b"tail", b"\nlast\n"], max_line=2 << 20)
    assert lines == [long, b"{}", b"tail", b"last"]
