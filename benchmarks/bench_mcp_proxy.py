"""Per-call overhead of ``interpose mcp-proxy`` against the client talking to the same
MCP server directly, in one run, over stdio and over streamable HTTP.

What it measures (microseconds per ``tools/call``, with the MCP SDK's own ``Client``;
every server is a child process on this machine, started once, so start-up is not
measured):

- the upstream: a minimal MCP server (the low-level ``Server`` of the SDK, one tool
  ``echo`` that returns its argument as text) in a child process of this script.
- stdio, direct (floor): ``Client(StdioServerParameters(<the upstream>))``, one call at
  a time.
- stdio, through the proxy: ``Client`` spawns ``interpose mcp-proxy --name bench --
  <the upstream>``; every call runs the tool stage of the default pipeline (the
  built-in guards and the MCP path guard registered; none applies to ``echo``) and is
  then made upstream.  Target: at most 1.3x the direct call.
- HTTP, direct (floor): the upstream serves streamable HTTP on 127.0.0.1;
  ``Client(url)``.
- HTTP, through the proxy: ``interpose mcp-proxy --listen 127.0.0.1:0 --upstream-url
  <the upstream's URL>``; ``Client(<the proxy's URL>)``.  Target: at most 1.2x.
- 16 in flight (informational), direct and through the proxy, over stdio and over
  HTTP: 16 tasks of one task group make the same calls back to back on one client:
  time per call (elapsed over all calls) and calls per second.

Methodology (as in bench_process_hook.py): every case is calibrated to a call count
whose run lasts about ``--target-ms``, warmed up, then each round runs every case once
in a shuffled order with the garbage collector disabled; a case's time per call is
the median over rounds and a ratio is the median of the per-round ratios (the proxy
and its floor measured in the same round).

Run it with ``python benchmarks/bench_mcp_proxy.py [--quick] [--json out.json]`` (needs
the ``mcp`` extra, which the ``dev`` extra includes).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.abc
import mcp_types as mt
from harness import (
    Case,
    Loop,
    child_bench_main,
    paired_ratio,
    ratio_lines,
    run_once_async,
    time_rounds,
)
from mcp import Client, StdioServerParameters

IN_FLIGHT = 16
TARGETS = {"stdio": 1.3, "http": 1.2}
START_TIMEOUT = 30.0  # s: until a child announces its URL
ARGS = {"text": "hello"}


# -- the upstream server (a child process) ----------------------------------------------


def upstream_server() -> Any:
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> mt.ListToolsResult:
        schema = {"type": "object", "properties": {"text": {"type": "string"}}}
        return mt.ListToolsResult(tools=[mt.Tool(name="echo", input_schema=schema)])

    async def call_tool(ctx: Any, params: mt.CallToolRequestParams) -> mt.CallToolResult:
        text = str((params.arguments or {}).get("text", ""))
        return mt.CallToolResult(content=[mt.TextContent(type="text", text=text)])

    return Server("bench-upstream", on_list_tools=list_tools, on_call_tool=call_tool)


def serve_stdio() -> None:
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        srv = upstream_server()
        async with stdio_server() as (read, write):
            await srv.run(read, write, srv.create_initialization_options())

    anyio.run(main)


def serve_http() -> None:
    import uvicorn

    srv = upstream_server()
    app = srv.streamable_http_app(host="127.0.0.1")
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))

    async def main() -> None:
        async with anyio.create_task_group() as tg:

            async def announce() -> None:
                # uvicorn has no "listening" event: look every 10 ms, at start-up only
                while not server.started:  # noqa: ASYNC110
                    await anyio.sleep(0.01)
                port = server.servers[0].sockets[0].getsockname()[1]
                print(f"serving MCP on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)

            tg.start_soon(announce)
            await server.serve()

    anyio.run(main)


CHILDREN = {"stdio": serve_stdio, "http": serve_http}


def upstream_argv(kind: str) -> list[str]:
    return [sys.executable, __file__, "--child", kind]


def proxy_argv(*rest: str) -> list[str]:
    return [sys.executable, "-m", "interpose.cli", "mcp-proxy", "--name", "bench", *rest]


@contextlib.asynccontextmanager
async def announced(argv: list[str]) -> AsyncIterator[str]:
    """Start ``argv``; yield the URL it prints on stderr; stop it afterwards.

    Raises:
        RuntimeError: it printed no URL within START_TIMEOUT s.
    """
    process = await anyio.open_process(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert process.stderr is not None
        seen = b""
        with anyio.move_on_after(START_TIMEOUT):
            while b"serving MCP on " not in seen or not seen.endswith(b"\n"):
                seen += await process.stderr.receive()
        text = seen.decode(errors="replace")
        if "serving MCP on " not in text:
            raise RuntimeError(f"{argv[2:]} did not start: {text}")
        yield text.split("serving MCP on ", 1)[1].split()[0]
    finally:
        process.terminate()
        with anyio.move_on_after(10):
            await process.wait()
        if process.returncode is None:
            process.kill()
            await process.wait()


# -- the cases ------------------------------------------------------------------------------


def one_at_a_time(client: Client) -> Loop:
    async def loop(n: int) -> int:
        call = client.call_tool
        start = time.perf_counter_ns()
        for _ in range(n):
            await call("echo", ARGS)
        return time.perf_counter_ns() - start

    return loop


def in_flight(client: Client, tasks: int) -> Loop:
    async def loop(n: int) -> int:
        per_task = max(1, n // tasks)

        async def worker() -> None:
            for _ in range(per_task):
                await client.call_tool("echo", ARGS)

        start = time.perf_counter_ns()
        async with anyio.create_task_group() as tg:
            for _ in range(tasks):
                tg.start_soon(worker)
        return (time.perf_counter_ns() - start) * n // (per_task * tasks)

    return loop


async def measure(cases: list[Case], rounds: int, target_ms: float) -> None:
    target_ns = int(target_ms * 1e6)
    for case in cases:
        loop = case.loop
        n = IN_FLIGHT
        while True:
            elapsed = await run_once_async(loop, n)
            if elapsed >= target_ns / 4 or n >= 1 << 16:
                break
            n *= 4
        case.n = max(IN_FLIGHT, int(n * target_ns / max(elapsed, 1)))
        await run_once_async(loop, case.n)  # warm-up
    await time_rounds(cases, rounds)


async def check(client: Client) -> None:
    """Raises RuntimeError: the echo tool does not answer as expected."""
    result = await client.call_tool("echo", ARGS)
    block = result.content[0] if result.content else None
    if result.is_error or not isinstance(block, mt.TextContent) or block.text != ARGS["text"]:
        raise RuntimeError(f"unexpected answer: {result!r}")


async def bench(rounds: int, target_ms: float) -> dict[str, Any]:
    """Start the servers and the proxies, check them, time every case.

    Raises:
        RuntimeError: a server or a proxy does not start or answers wrongly.
    """
    upstream = upstream_argv("stdio")
    direct_stdio = StdioServerParameters(command=upstream[0], args=upstream[1:])
    proxied = proxy_argv("--", *upstream)
    proxy_stdio = StdioServerParameters(command=proxied[0], args=proxied[1:])
    async with contextlib.AsyncExitStack() as stack:
        http_url = await stack.enter_async_context(announced(upstream_argv("http")))
        proxy_url = await stack.enter_async_context(
            announced(proxy_argv("--listen", "127.0.0.1:0", "--upstream-url", http_url))
        )
        clients = {
            key: await stack.enter_async_context(Client(target, mode="legacy"))
            for key, target in (
                ("stdio", direct_stdio),
                ("proxy_stdio", proxy_stdio),
                ("http", http_url),
                ("proxy_http", proxy_url),
            )
        }
        for client in clients.values():
            await check(client)
        cases = [
            Case("stdio", "stdio, direct (floor)", one_at_a_time(clients["stdio"])),
            Case("proxy_stdio", "stdio, through the proxy", one_at_a_time(clients["proxy_stdio"])),
            Case("http", "HTTP, direct (floor)", one_at_a_time(clients["http"])),
            Case("proxy_http", "HTTP, through the proxy", one_at_a_time(clients["proxy_http"])),
            Case(
                "stdio16",
                f"stdio, direct, {IN_FLIGHT} in flight",
                in_flight(clients["stdio"], IN_FLIGHT),
            ),
            Case(
                "proxy_stdio16",
                f"stdio, proxy, {IN_FLIGHT} in flight",
                in_flight(clients["proxy_stdio"], IN_FLIGHT),
            ),
            Case(
                "http16",
                f"HTTP, direct, {IN_FLIGHT} in flight",
                in_flight(clients["http"], IN_FLIGHT),
            ),
            Case(
                "proxy_http16",
                f"HTTP, proxy, {IN_FLIGHT} in flight",
                in_flight(clients["proxy_http"], IN_FLIGHT),
            ),
        ]
        await measure(cases, rounds, target_ms)
    t = {case.key: case for case in cases}
    ratios = {
        "stdio": paired_ratio(t["proxy_stdio"], t["stdio"]),
        "http": paired_ratio(t["proxy_http"], t["http"]),
        "stdio16": paired_ratio(t["proxy_stdio16"], t["stdio16"]),
        "http16": paired_ratio(t["proxy_http16"], t["http16"]),
    }
    rows: list[dict[str, Any]] = [
        {
            "case": f"proxy vs direct, {kind}",
            "ratio": ratios[kind],
            "target": f"<= {TARGETS[kind]}x",
            "result": "PASS" if ratios[kind] <= TARGETS[kind] else "MISS",
        }
        for kind in ("stdio", "http")
    ]
    for kind in ("stdio", "http"):
        rows.append(
            {"case": f"proxy vs direct, {kind}, {IN_FLIGHT} in flight"}
            | {"ratio": ratios[f"{kind}16"], "target": "info", "result": ""}
        )
    return {
        "cases": {c.key: {"label": c.label, "n": c.n, "ns_per_call": c.median} for c in cases},
        "ratios": ratios,
        "rows": rows,
    }


def render(results: dict[str, Any]) -> str:
    lines = [f"{'case':<44} {'us/call':>8} {'calls/s':>9}", "-" * 63]
    for case in results["cases"].values():
        ns = case["ns_per_call"]
        lines.append(f"{case['label']:<44} {ns / 1e3:8.1f} {1e9 / ns:9.0f}")
    lines.append("")
    lines += ratio_lines(results["rows"], 44)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the benchmark (or be its upstream server), print the table.

    Raises:
        RuntimeError: a server or the proxy does not answer as expected.
        OSError: the JSON file cannot be written.
    """
    return child_bench_main(
        __doc__,
        argv,
        CHILDREN,
        "interpose bench: MCP proxy overhead per tool call",
        bench,
        render,
        rounds=15,
        target_ms=300.0,
        quick_target_ms=50.0,
    )


if __name__ == "__main__":
    main()
