"""The filtering proxy: HTTP ``CONNECT`` and plain HTTP, on a unix socket, for hosts
on an allow-list only.

It runs outside the sandbox, in the caller's event loop; the sandbox reaches it through
its socket (``bridge.py`` inside turns it into ``127.0.0.1:3128``).  A refused request
gets ``403 Forbidden`` and becomes a ``Violation``.  It does not look inside TLS: an
allowed host is allowed whatever is sent to it.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from collections.abc import Callable, Sequence
from inspect import isawaitable
from pathlib import Path

import anyio
import anyio.abc

from .violations import Violation

__all__ = ["LOOPBACK_HOSTS", "DomainProxy", "ProxyService", "host_allowed"]

log = logging.getLogger("interpose.sandbox")

#: what ``network = "loopback"`` lets through the proxy
LOOPBACK_HOSTS: tuple[str, ...] = ("localhost", "127.0.0.1", "::1")
_HEAD_LIMIT = 16384
_TIMEOUT = 10.0
_CHUNK = 65536
_HOP_BY_HOP = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")


def host_allowed(allowed: Sequence[str], host: str, port: int) -> bool:
    """Whether ``host:port`` matches an entry: ``host`` (any port), ``host:port``, or
    ``*.suffix`` (the subdomains of suffix, any port).  Case and a final dot do not
    count; an IPv6 address may be written with or without brackets."""
    host = host.strip("[]").rstrip(".").lower()
    for entry in allowed:
        name, _, want = entry.lower().rpartition(":") if _has_port(entry) else (entry, "", "")
        name = name.strip("[]").rstrip(".").lower()
        if want and want != str(port):
            continue
        if name.startswith("*."):
            if host.endswith(name[1:]) and len(host) > len(name) - 1:
                return True
        elif host == name:
            return True
    return False


def _has_port(entry: str) -> bool:
    head, colon, tail = entry.rpartition(":")
    return bool(colon) and tail.isdigit() and (not head.count(":") or head.endswith("]"))


class DomainProxy:
    """Serves the allow-list proxy on a listener until cancelled.

    Args:
        allowed: the allow-list (``host_allowed``'s entries).
        on_refused: called with each refused request's ``Violation`` (sync, or async:
            then awaited).
    """

    def __init__(
        self, allowed: Sequence[str], on_refused: Callable[[Violation], object] | None = None
    ) -> None:
        self.allowed = tuple(allowed)
        self.on_refused = on_refused
        self.refused: list[Violation] = []

    async def serve(self, listener: anyio.abc.Listener[anyio.abc.ByteStream]) -> None:
        """Handle connections from ``listener`` until cancelled, then close it."""
        async with listener:
            await listener.serve(self.handle)

    async def handle(self, client: anyio.abc.ByteStream) -> None:
        """One proxied connection: read the request head, refuse or connect, then copy."""
        async with client:
            try:
                with anyio.fail_after(_TIMEOUT):
                    head, rest = await _read_head(client)
                await self._forward(client, head, rest)
            except (OSError, TimeoutError, ValueError, anyio.BrokenResourceError) as exc:
                log.debug("sandbox proxy: %s: %s", type(exc).__name__, exc)
                await _answer(client, 400, "bad request")
            except anyio.EndOfStream:
                pass

    async def _forward(self, client: anyio.abc.ByteStream, head: bytes, rest: bytes) -> None:
        line, _, headers = head.partition(b"\r\n")
        method, target, version = line.decode("latin-1").split(" ", 2)
        tunnel = method.upper() == "CONNECT"
        host, port, path = _target(target, tunnel)
        if not host_allowed(self.allowed, host, port):
            violation = Violation(
                kind="network",
                target=f"{host}:{port}",
                detail=f"connection to {host}:{port} refused by the sandbox "
                "(not on the allow-list)",
            )
            self.refused.append(violation)
            if self.on_refused is not None:
                answer = self.on_refused(violation)
                if isawaitable(answer):
                    await answer
            await _answer(client, 403, f"interpose sandbox: {host}:{port} is not on the allow-list")
            return
        try:
            with anyio.fail_after(_TIMEOUT):
                upstream = await anyio.connect_tcp(host, port)
        except (OSError, TimeoutError) as exc:
            await _answer(client, 502, f"interpose sandbox: cannot reach {host}:{port}: {exc}")
            return
        async with upstream:
            if tunnel:
                await client.send(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                if rest:
                    await upstream.send(rest)
            else:
                kept = [
                    h
                    for h in headers.split(b"\r\n")
                    if h and h.split(b":", 1)[0].strip().lower() not in _HOP_BY_HOP
                ]
                first = f"{method} {path} {version}".encode("latin-1")
                await upstream.send(
                    b"\r\n".join([first, *kept, b"Connection: close"]) + b"\r\n\r\n" + rest
                )
            async with anyio.create_task_group() as tg:
                tg.start_soon(_copy, client, upstream)
                tg.start_soon(_copy, upstream, client)


def _target(target: str, tunnel: bool) -> tuple[str, int, str]:
    """(host, port, origin-form path) of a request target.

    Raises:
        ValueError: not ``host:port`` (CONNECT) or an ``http://`` URL.
    """
    if tunnel:
        host, _, port = target.rpartition(":")
        return host.strip("[]"), int(port), ""
    if not target.lower().startswith("http://"):
        raise ValueError(f"not an absolute http:// URL: {target[:80]!r}")
    authority, slash, path = target[7:].partition("/")
    if authority.rpartition(":")[2].isdigit() and not authority.endswith("]"):
        host, _, port = authority.rpartition(":")
        return host.strip("[]"), int(port), slash + path or "/"
    return authority.strip("[]"), 80, slash + path or "/"


async def _read_head(stream: anyio.abc.ByteStream) -> tuple[bytes, bytes]:
    """The request head (up to the blank line) and what came after it."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > _HEAD_LIMIT:
            raise ValueError("request head too large")
        data += await stream.receive(_CHUNK)
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


async def _answer(stream: anyio.abc.ByteStream, status: int, text: str) -> None:
    reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
    body = (text + "\n").encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    try:
        await stream.send(head.encode() + body)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


async def _copy(source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream) -> None:
    try:
        async for chunk in source:
            await sink.send(chunk)
        await sink.send_eof()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


class ProxyService:
    """The filtering proxy for the lifetime of a pipeline (a ``Service``), for sandboxed
    processes that others start (the MCP gateway's servers): its socket directory
    (``directory``) exists from construction, it serves while the pipeline is entered.
    """

    def __init__(
        self, allowed: Sequence[str], on_refused: Callable[[Violation], object] | None = None
    ) -> None:
        self.directory = tempfile.mkdtemp(prefix="interpose-proxy-")
        self.proxy = DomainProxy(allowed, on_refused)
        self._scope = anyio.CancelScope()

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        listener = await anyio.create_unix_listener(Path(self.directory) / "proxy.sock")

        async def serve() -> None:
            with self._scope:
                await self.proxy.serve(listener)

        tg.start_soon(serve)

    async def aclose(self) -> None:
        self._scope.cancel()
        shutil.rmtree(self.directory, ignore_errors=True)
