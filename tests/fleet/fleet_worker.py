"""The child processes of the fleet tests.

``python fleet_worker.py publish URL STREAM AGENT N``: an agent process: a pipeline with
a ``RedisStreamPublisher`` attached (``tool_exec_end`` events only), N tool calls with
call ids ``c0`` .. ``c<N-1>``; prints the publisher's stats as JSON when done.

``python fleet_worker.py consume URL STREAM GROUP NAME OUT DELAY``: a consumer that
appends ``agent call_id`` to OUT (flushed) for every event, sleeping DELAY seconds in
the observer first (so that a SIGKILL lands in the middle of a batch); runs until
killed.
"""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

import anyio

from interpose import Pipeline
from interpose.bus.events import Event
from interpose.bus.redis import RedisStreamConsumer, RedisStreamPublisher


async def publish(url: str, stream: str, agent: str, count: int) -> None:
    pipe = Pipeline(builtins=False)
    publisher = RedisStreamPublisher(url, stream=stream, batch=512)
    publisher.attach(pipe, events={"tool_exec_end"})

    def tool(args: dict[str, Any]) -> int:
        return int(args["i"])

    async with pipe:
        for i in range(count):
            await pipe.call_tool("read", {"i": i}, call=tool, call_id=f"c{i}", agent_id=agent)
    print(json.dumps(publisher.stats.__dict__), flush=True)


async def consume(url: str, stream: str, group: str, name: str, out: TextIO, delay: float) -> None:
    consumer = RedisStreamConsumer(url, stream, group, name, batch=50, claim_idle=60.0)

    async def record(event: Event) -> None:
        await anyio.sleep(delay)
        out.write(f"{event.agent_id} {getattr(event, 'tool_call_id', '')}\n")
        out.flush()

    consumer.subscribe(record, timeout=None)
    print("consuming", flush=True)
    await consumer.run()


def main(argv: list[str]) -> None:
    if argv[0] == "publish":
        anyio.run(publish, argv[1], argv[2], argv[3], int(argv[4]))
    elif argv[0] == "consume":
        with open(argv[5], "a", encoding="utf-8") as out:
            anyio.run(consume, argv[1], argv[2], argv[3], argv[4], out, float(argv[6]))
    else:
        raise SystemExit(f"unknown mode {argv[0]!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
