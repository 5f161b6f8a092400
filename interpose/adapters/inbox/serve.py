"""Serving the inbox: uvicorn on a socket bound here (``running``, for tests and
embedding), and the ``interpose inbox`` command's run until SIGTERM/SIGINT
(``serve_inbox``)."""

from __future__ import annotations

import signal
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio

from ...errors import UsageError
from .app import EventStream, build_app
from .backend import StoreBackend, open_store, reachable
from .security import Tokens

__all__ = ["open_store", "running", "serve_inbox"]

START_TIMEOUT = 10.0  # s: until uvicorn says it listens
GRACE = 2  # s: open event streams get this long to end on shutdown


def _listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``.

    Raises:
        UsageError: it cannot be made (the port is in use, the host is unknown...).
    """
    try:
        family, _, _, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        return socket.create_server(address, family=family)
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None


@asynccontextmanager
async def running(
    backend: StoreBackend,
    host: str,
    port: int,
    *,
    tokens: Tokens,
    allowed_hosts: tuple[str, ...] = (),
) -> AsyncIterator[str]:
    """The inbox of ``backend`` served on ``host:port`` while in the block; its URL
    (port 0: the port the system chose).

    Raises:
        UsageError: ``host:port`` cannot be listened on.
    """
    import uvicorn

    events = EventStream(backend)
    app = build_app(backend, host=host, tokens=tokens, allowed_hosts=allowed_hosts, events=events)
    listening = _listen(host, port)
    config = uvicorn.Config(
        app,
        log_level="warning",
        lifespan="off",
        access_log=False,
        proxy_headers=False,  # the client's address is the socket's (it is logged)
        timeout_graceful_shutdown=GRACE,
    )
    server = uvicorn.Server(config)
    bound = listening.getsockname()[1]
    url = f"http://{f'[{host}]' if ':' in host else host}:{bound}/"

    async def serve() -> None:
        try:
            await server.serve([listening])
        finally:  # (cancelled, uvicorn's shutdown does not run: stop listening here)
            for asyncio_server in server.servers:
                asyncio_server.close()
            listening.close()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        with anyio.fail_after(START_TIMEOUT):
            # uvicorn has no event for "listening": look every 10 ms (start-up only)
            while not server.started:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        try:
            yield url
        finally:
            events.close()  # (uvicorn would wait for them, then cancel them)
            server.should_exit = True


def serve_inbox(
    backend: StoreBackend,
    host: str,
    port: int,
    *,
    tokens: Tokens,
    allowed_hosts: tuple[str, ...] = (),
    ready: Callable[[str], None] | None = None,
) -> None:
    """Serve the inbox until SIGTERM or SIGINT (``interpose inbox``).

    Raises:
        UsageError: ``host:port`` cannot be listened on, the store does not answer.
    """

    async def main() -> None:
        async with backend:
            await reachable(backend)
            await serve()

    async def serve() -> None:
        async with running(backend, host, port, tokens=tokens, allowed_hosts=allowed_hosts) as url:
            if ready is not None:
                ready(url)
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    return

    try:
        anyio.run(main)
    except KeyboardInterrupt:
        pass
