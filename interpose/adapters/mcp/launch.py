"""Run a built ``McpProxy`` until the client disconnects or the process is stopped: the
event loop (uvloop or asyncio's own), SIGTERM/SIGINT, and how the run ends as an exit
code (``interpose mcp-proxy``'s command line is ``interpose.cli.mcp_proxy``)."""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import signal
import sys
from typing import TYPE_CHECKING

import anyio

from ...errors import UsageError

if TYPE_CHECKING:
    from ...pipeline.pipeline import Pipeline
    from .bearer import JwtVerifier
    from .proxy import McpProxy

__all__ = ["EXIT_UPSTREAM", "find_uvloop", "run_proxy"]

log = logging.getLogger("interpose.mcp")

EXIT_UPSTREAM = 1  # an upstream did not start, or died during its handshake


def find_uvloop(choice: str) -> bool | None:
    """Whether to run on uvloop (``choice``: auto, asyncio or uvloop); None: ``uvloop``
    was asked for but it is not installed."""
    if choice == "asyncio" or sys.platform == "win32":
        return False
    found = importlib.util.find_spec("uvloop") is not None
    if choice == "uvloop" and not found:
        return None
    return found


def run_proxy(
    pipe: Pipeline,
    proxy: McpProxy,
    *,
    listen: str | None,
    uvloop: bool,
    auth: JwtVerifier | None = None,
) -> int:
    """Serve MCP on stdio (``listen`` None) or streamable HTTP on ``listen`` (HOST:PORT)
    inside ``pipe``, until the client disconnects (stdio) or SIGTERM/SIGINT; ``auth``:
    the bearer tokens HTTP requests need.

    Returns 0, or ``EXIT_UPSTREAM`` when an upstream did not start (said in one line on
    stderr; the client's initialize got the same error).

    Raises:
        UsageError: ``listen`` cannot be listened on.
    """
    from .proxy import UpstreamError

    async def serve() -> None:
        if listen is None:
            await proxy.serve_stdio()
            return
        host, _, port = listen.rpartition(":")
        await proxy.serve_http(
            host or "127.0.0.1",
            int(port),
            ready=lambda url: print(
                f"interpose mcp-proxy: serving MCP on {url}", file=sys.stderr, flush=True
            ),
            auth=auth,
        )

    async def main() -> None:
        loop = type(asyncio.get_running_loop())
        log.info("event loop: %s.%s", loop.__module__, loop.__qualname__)
        async with pipe, anyio.create_task_group() as tg:

            async def stop_on_signal() -> None:
                # SIGTERM/SIGINT: leave through the task groups, which stop the upstream
                # servers (stdin closed, then their process groups terminated)
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for signum in signals:
                        log.info("signal %d: stopping", signum)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(stop_on_signal)
            await serve()
            tg.cancel_scope.cancel()

    try:
        # uvloop: the loop's own work per relayed call (select, callbacks, pipe and
        # socket transports) in C; a third less CPU per stdio call than asyncio's loop
        anyio.run(main, backend_options={"use_uvloop": uvloop})
    except KeyboardInterrupt:
        pass
    except Exception as exc:
        failed = _found(exc, UpstreamError)
        if failed is None:
            failed = _found(exc, UsageError)  # (--listen: cannot listen)
            if failed is None:
                raise
            raise failed from None
        # an upstream did not start: the client's initialize got this error
        print(f"interpose mcp-proxy: {failed}", file=sys.stderr)
        return EXIT_UPSTREAM
    return 0


def _found(exc: BaseException, kind: type[Exception]) -> BaseException | None:
    """``exc`` if it is a ``kind``, or the first ``kind`` in its exception groups."""
    if isinstance(exc, kind):
        return exc
    for inner in getattr(exc, "exceptions", ()):
        found = _found(inner, kind)
        if found is not None:
            return found
    return None
