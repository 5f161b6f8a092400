"""Run inside the sandbox, before the command: ``bridge.py SOCKET PORT -- COMMAND...``.

The sandbox has its own network namespace, so the filtering proxy outside is reachable
only through its unix socket (bound in).  This listens on ``127.0.0.1:PORT`` inside,
forks a child that copies each connection to the socket and back, and replaces itself
with the command; the child dies with the sandbox's PID namespace when the command
ends.  Standard library only: it runs as ``python -I -S``.
"""

from __future__ import annotations

import os
import selectors
import socket
import sys

__all__ = ["main"]

_CHUNK = 65536


def _serve(listener: socket.socket, path: str) -> None:
    """Copy bytes between each accepted connection and a new connection to ``path``."""
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    peers: dict[socket.socket, socket.socket] = {}
    while True:
        for key, _ in sel.select():
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            if sock is listener:
                client, _addr = listener.accept()
                upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    upstream.connect(path)
                except OSError:
                    client.close()
                    upstream.close()
                    continue
                peers[client], peers[upstream] = upstream, client
                sel.register(client, selectors.EVENT_READ)
                sel.register(upstream, selectors.EVENT_READ)
                continue
            other = peers.get(sock)
            if other is None:
                continue
            try:
                data = sock.recv(_CHUNK)
                if data:
                    other.sendall(data)
                    continue
            except OSError:
                pass
            for end in (sock, other):  # one side closed: close both
                sel.unregister(end)
                peers.pop(end, None)
                end.close()


def main(argv: list[str]) -> None:
    path, port, dashes, *command = argv
    if dashes != "--" or not command:
        sys.exit("usage: bridge.py SOCKET PORT -- COMMAND...")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(64)
    if os.fork() == 0:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the command's pipes close when the command ends
            os.dup2(null, fd)
        try:
            _serve(listener, path)
        finally:
            os._exit(0)
    listener.close()
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
        os._exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
