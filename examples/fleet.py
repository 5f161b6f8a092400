"""The fleet: agent pipelines publish their events to one Redis Stream; a consumer group
delivers them, at least once, to ordinary observers.

It needs a Redis server: the one at ``$INTERPOSE_REDIS_URL`` if set, else a
``redis-server`` it starts itself on a free loopback port (and stops at the end).  It
works on a stream of its own, deleted at the end.

Two pipelines stand for two agent processes (in a fleet each runs in its own process,
on its own machine; each publisher is one producer).  A consumer group ``dashboard``
prints what they did; its observer fails on one event, which, after three tries, is
moved to the dead-letter stream.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
from redis.asyncio import Redis

from interpose import Pipeline, ToolBeforeInput, ToolBeforeOutput
from interpose.bus.events import Event, ToolExecEnd
from interpose.bus.redis import RedisStreamConsumer, RedisStreamPublisher


def agent_pipeline(url: str, stream: str) -> Pipeline:
    pipe = Pipeline(builtins=False)

    @pipe.intercept("tool.before", tools=["exec"], id="no-deploys")
    def no_deploys(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
        if "deploy" in out.args["command"]:
            out.block, out.block_reason = True, "deploys need a ticket"

    # what every agent process does: publish its tool-call outcomes to the stream
    RedisStreamPublisher(url, stream=stream).attach(pipe, events={"tool_exec_end"})
    return pipe


def shell(args: dict[str, Any]) -> str:
    """The tool: a fake shell."""
    return f"ran {args['command']!r}"


async def run_agents(url: str, stream: str) -> None:
    for agent, commands in (
        ("coder", ["make test", "make deploy"]),
        ("reviewer", ["git diff", "make lint"]),
    ):
        pipe = agent_pipeline(url, stream)
        async with pipe:
            for n, command in enumerate(commands, 1):
                call_id = f"{agent}-{n}"
                await pipe.call_tool(
                    "exec", {"command": command}, call=shell, call_id=call_id, agent_id=agent
                )


async def run_dashboard(url: str, stream: str) -> RedisStreamConsumer:
    consumer = RedisStreamConsumer(
        url, stream, group="dashboard", consumer="dash-1", max_deliveries=3, retry_delay=0.05
    )

    def show(event: Event) -> None:
        assert isinstance(event, ToolExecEnd)
        if event.tool_call_id == "reviewer-2":
            raise RuntimeError("the dashboard cannot draw this one")
        line = f"  {event.tool_call_id:<11} {event.tool_name:<5} {event.status:<8} {event.reason}"
        print(line.rstrip())

    consumer.subscribe(show)
    # exits once it has read everything and nothing waits for a retry
    await consumer.run(until_caught_up=True)
    return consumer


async def main(url: str) -> None:
    stream = f"example:{uuid.uuid4().hex[:8]}:events"
    try:
        await run_agents(url, stream)
        print("dashboard (consumer group 'dashboard'):")
        consumer = await run_dashboard(url, stream)
        stats = consumer.stats
        print(
            f"delivered={stats.delivered} acked={stats.acked} failures={stats.failures} "
            f"dead_lettered={stats.dead_lettered}"
        )
        print(f"lag={consumer.lag} pending={consumer.pending}")
        async with Redis.from_url(url) as client:
            dead: Any = await client.xrange(consumer.dead_letter)
            for _, fields in dead:
                print(f"dead letter: {fields[b'error'].decode()}")
    finally:
        async with Redis.from_url(url) as client:
            await client.delete(stream, f"{stream}:dead", f"{stream}:seen:dashboard")


@contextmanager
def redis_url() -> Iterator[str]:
    """$INTERPOSE_REDIS_URL, or a redis-server of our own on a free loopback port."""
    if os.environ.get("INTERPOSE_REDIS_URL"):
        yield os.environ["INTERPOSE_REDIS_URL"]
        return
    binary = shutil.which("redis-server")
    if binary is None:
        raise SystemExit("no Redis: set INTERPOSE_REDIS_URL or install redis-server")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        argv = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
        argv += ["--appendonly", "no", "--dir", tmp, "--logfile", f"{tmp}/redis.log"]
        server = subprocess.Popen(argv, stdin=subprocess.DEVNULL)
        try:
            for _ in range(500):  # up to ~10 s for the server to listen
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.02)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            server.kill()
            server.wait(timeout=10)


if __name__ == "__main__":
    with redis_url() as url:
        anyio.run(main, url)
