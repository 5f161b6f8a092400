"""The ``"http"`` hooks of a Claude Code settings file: the event POSTed as JSON, the
answer read as a command's stdout would be (see ``verdict``).

As in Claude Code, a status other than 2xx, an answer that is not HTTP or JSON of the
wrong shape is a non-blocking error (``HttpHookError``): reported, then the call goes on.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.abc
import msgspec

from ...errors import AbortTurn, ConfigError, InterposeError
from .verdict import Answer, decode_output, encode_event, read_verdict

__all__ = ["HttpHookError", "http_call", "http_headers"]

log = logging.getLogger("interpose.claude_code")


class HttpHookError(InterposeError, RuntimeError):
    """An HTTP hook of a settings file answered with a status other than 2xx, with
    something that is not HTTP, or with a JSON body of the wrong shape.  Like every
    failure of a settings hook it is non-blocking: reported, then the call goes on.

    Attributes:
        url: the hook's URL.
        status: the HTTP status, None when the answer was not HTTP.
    """

    def __init__(self, message: str, *, url: str, status: int | None = None) -> None:
        super().__init__(message)
        self.url = url
        self.status = status


_MAX_HTTP_BYTES = 1 << 20


def http_call(
    url: str, headers: dict[str, str], label: str
) -> Callable[[dict[str, Any]], Awaitable[Answer]]:
    parts = urlsplit(url)
    host = parts.hostname or ""
    tls = parts.scheme == "https"
    port = parts.port or (443 if tls else 80)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    head = f"POST {target} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
    head += "Content-Type: application/json\r\nConnection: close\r\n"
    head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())

    async def call(event: dict[str, Any]) -> Answer:
        body = encode_event(event)
        request = (head + f"Content-Length: {len(body)}\r\n\r\n").encode("latin-1") + body
        try:
            stream: anyio.abc.ByteStream = (
                await anyio.connect_tcp(host, port, tls=True)
                if tls
                else await anyio.connect_tcp(host, port)
            )
        except OSError as exc:
            raise HttpHookError(f"http hook {label}: cannot connect: {exc}", url=url) from None
        async with stream:
            await stream.send(request)
            data = bytearray()
            try:
                # Connection: close asks the server to end the answer by closing; one
                # that keeps it open anyway is read up to its Content-Length or last chunk
                while len(data) <= _MAX_HTTP_BYTES and not _complete(data):
                    data.extend(await stream.receive())
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
        status, payload = _parse_response(bytes(data), label)
        if not 200 <= status < 300:
            raise HttpHookError(
                f"http hook {label}: HTTP {status}: {_short(payload)}", url=url, status=status
            )
        text = payload.strip()
        if not text.startswith(b"{"):
            return Answer(context=(text.decode("utf-8", "replace"),) if text else ())
        try:
            output = decode_output(text)
        except msgspec.DecodeError as exc:
            raise HttpHookError(
                f"http hook {label}: the answer is not valid: {exc}", url=url, status=status
            ) from None
        if output.system_message:
            log.info("http hook %s: %s", label, output.system_message)
        if not output.continue_:
            raise AbortTurn(output.stop_reason or f"stopped by http hook {label}")
        verdict = read_verdict(output)
        context = () if verdict.additional_context is None else (verdict.additional_context,)
        return Answer(
            verdict.decision, verdict.reason, verdict.updated_input, context, verdict.system_message
        )

    return call


_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length:\s*(\d+)\s*\r\n", re.IGNORECASE)
_CHUNKED = re.compile(rb"\r\ntransfer-encoding:\s*chunked\s*\r\n", re.IGNORECASE)


def _complete(data: bytearray) -> bool:
    """Whether ``data`` holds a whole HTTP answer (headers and the body they announce)."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return False
    head = bytes(data[: end + 2])
    length = _CONTENT_LENGTH.search(head)
    if length is not None:
        return len(data) - end - 4 >= int(length.group(1))
    if _CHUNKED.search(head) is not None:
        return data.endswith(b"\r\n0\r\n\r\n") or data[end + 4 :].startswith(b"0\r\n\r\n")
    return False


def _short(data: bytes) -> str:
    text = data.decode("utf-8", "replace").strip()
    return text if len(text) <= 200 else text[:200] + "…"


def _parse_response(data: bytes, label: str) -> tuple[int, bytes]:
    """(status, body) of an HTTP/1.x response read to the end of the connection.

    Raises:
        HttpHookError: not an HTTP response, or one over the size limit.
    """
    if len(data) > _MAX_HTTP_BYTES:
        raise HttpHookError(
            f"http hook {label}: the answer is over {_MAX_HTTP_BYTES} bytes", url=label
        )
    head, sep, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status_line = lines[0].split(None, 2)
    if not sep or len(status_line) < 2 or not status_line[0].startswith(b"HTTP/"):
        raise HttpHookError(f"http hook {label}: not an HTTP response: {_short(data)}", url=label)
    try:
        status = int(status_line[1])
    except ValueError:
        raise HttpHookError(f"http hook {label}: bad status line {lines[0]!r}", url=label) from None
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        fields[name.strip().lower()] = value.strip()
    if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
        body = _dechunk(body)
    elif b"content-length" in fields:
        try:
            body = body[: int(fields[b"content-length"])]
        except ValueError:
            pass
    return status, body


def _dechunk(body: bytes) -> bytes:
    out = bytearray()
    while body:
        size_line, _, body = body.partition(b"\r\n")
        try:
            size = int(size_line.split(b";")[0], 16)
        except ValueError:
            break
        if size == 0:
            break
        out += body[:size]
        body = body[size + 2 :]
    return bytes(out)


_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")


def http_headers(
    raw: Mapping[str, str], allowed: Sequence[str], env: Mapping[str, str]
) -> dict[str, str]:
    """Header values with ``$VAR``/``${VAR}`` expanded from the variables listed in
    ``allowedEnvVars`` only (others expand to "", as in Claude Code).

    Raises:
        ConfigError: a name or value that would break the request (CR, LF, ":" in a name).
    """
    permitted = set(allowed)
    out: dict[str, str] = {}
    for name, value in raw.items():
        expanded = _VAR.sub(
            lambda m: (
                env.get(m.group(1) or m.group(2), "")
                if (m.group(1) or m.group(2)) in permitted
                else ""
            ),
            value,
        )
        if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name) or re.search(r"[\r\n]", expanded):
            raise ConfigError(f"header {name!r} is not a valid HTTP header")
        out[name] = expanded
    return out
