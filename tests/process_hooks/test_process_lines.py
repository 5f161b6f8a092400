"""How the asyncio path cuts the child's stdout into lines: whatever the chunks the
pipe delivers, each line is handed over once, whole, in order; a line that grows past
the limit stops reading."""

from __future__ import annotations

import random

from interpose._jsonlines import Oversized
from interpose.external.process.child import PipeOutput

LINES = [b'{"id":1}', b"", b"x" * 5000, b'{"id":2,"result":{"a":"\\n"}}', b"tail"]
STREAM = b"".join(line + b"\n" for line in LINES)


class Recorder:
    def __init__(self, stop_after: int | None = None) -> None:
        self.lines: list[bytes | Oversized] = []
        self.overflows = 0
        self.stop_after = stop_after

    def on_line(self, line: bytes | Oversized) -> bool:
        self.lines.append(line)
        return self.stop_after is None or len(self.lines) < self.stop_after

    def on_overflow(self) -> None:
        self.overflows += 1


def feed(output: PipeOutput, data: bytes, cuts: list[int]) -> None:
    start = 0
    for cut in [*sorted(cuts), len(data)]:
        if cut > start:
            output.data_received(data[start:cut])
            start = cut


async def test_lines_come_out_whole_however_the_chunks_fall() -> None:
    rng = random.Random(7)
    for _ in range(200):
        seen = Recorder()
        output = PipeOutput(seen.on_line, seen.on_overflow, limit=8192)
        cuts = rng.sample(range(1, len(STREAM)), rng.randint(0, 12))
        feed(output, STREAM, cuts)
        assert seen.lines == LINES, cuts
        assert seen.overflows == 0
        assert not output.partial


async def test_a_line_split_byte_by_byte() -> None:
    seen = Recorder()
    output = PipeOutput(seen.on_line, seen.on_overflow, limit=8192)
    feed(output, STREAM, list(range(1, len(STREAM))))
    assert seen.lines == LINES


async def test_an_unfinished_line_past_the_limit_overflows_once() -> None:
    seen = Recorder()
    output = PipeOutput(seen.on_line, seen.on_overflow, limit=100)
    output.data_received(b'{"id":1}\n' + b"y" * 60)
    output.data_received(b"y" * 60)  # 120 bytes and no newline yet
    assert (seen.lines, seen.overflows) == ([b'{"id":1}'], 1)
    assert not output.partial


async def test_on_line_returning_false_stops_the_rest_of_the_chunk() -> None:
    seen = Recorder(stop_after=2)
    output = PipeOutput(seen.on_line, seen.on_overflow, limit=8192)
    output.data_received(STREAM)
    assert seen.lines == LINES[:2]
