"""The stdio JSON-lines transport shared by process hooks and the MCP stdio lanes:
``LineSplitter`` (bounded lines from pieces) and ``ReplyTable`` (replies to waiters)."""

from __future__ import annotations

import random

from interpose._jsonlines import LineSplitter, Oversized, ReplyTable


def feed_all(splitter: LineSplitter, pieces: list[bytes]) -> list[bytes | Oversized]:
    out: list[bytes | Oversized] = []
    for piece in pieces:
        out.extend(splitter.feed(piece))
    return out


def test_lines_come_out_whole_however_the_pieces_fall() -> None:
    lines = [b'{"id":1}', b"", b"  ", b"x" * 3000, b'{"id":2}']
    stream = b"".join(line + b"\n" for line in lines) + b"unfinished"
    rng = random.Random(3)
    for _ in range(100):
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(0, 10)))
        pieces = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
        splitter = LineSplitter(4096)
        assert feed_all(splitter, pieces) == lines, cuts
        assert splitter.pending == len(b"unfinished")
        assert not splitter.overflowing


def test_an_over_long_line_is_dropped_with_its_ends_and_splitting_goes_on() -> None:
    long = b'{"id": 7, "method": "x", "params": "' + b"y" * 200 + b'"}'
    splitter = LineSplitter(64)
    assert splitter.feed(b"ok\n" + long[:100]) == [b"ok"]
    assert splitter.overflowing  # begun, not ended: a reader may give up now
    out = splitter.feed(long[100:] + b"\nmore\n" + b"z" * 80 + b"\nlast\n")
    assert not splitter.overflowing
    assert [type(item) for item in out] == [Oversized, bytes, Oversized, bytes]
    first, more, second, last = out
    assert isinstance(first, Oversized)
    assert isinstance(second, Oversized)
    assert (first.size, second.size) == (len(long), 80)
    assert first.head == long[:100]  # its start, as it came
    assert first.tail.endswith(b'"}')
    assert first.identify() == (7, True)
    assert (more, last) == (b"more", b"last")


def test_a_line_of_exactly_the_limit_is_a_line() -> None:
    splitter = LineSplitter(8)
    assert splitter.feed(b"12345678") == []
    assert not splitter.overflowing
    assert splitter.feed(b"\n123456789\n") == [
        b"12345678",
        Oversized(b"123456789", b"123456789", 9),
    ]


def test_the_reply_table_matches_by_id_and_knows_late_replies() -> None:
    table: ReplyTable[str] = ReplyTable(kept=2)
    table.add(1, "first")
    table.add("s", "second")
    table.add(3, "third")
    assert len(table) == 3
    assert 1 in table
    assert table.take([1]) is None  # not an id: never matches (and never raises)
    assert table.take(True) is None  # (a bool is not the int 1)
    assert table.take(1) == "first"
    assert table.take(1) is None
    assert not table.is_late(1)  # answered, not given up on
    assert table.abandon("s") == "second"
    assert table.is_late("s")
    assert table.abandon("s") is None
    assert table.get(3) == "third"
    assert table.drain() == [(3, "third")]
    assert len(table) == 0
    assert table.is_late(3)
    table.add(4, "fourth")
    table.abandon(4)
    assert not table.is_late("s")  # only the last `kept` ids given up on are known
