"""The network modes, with real loopback HTTP servers on the host: ``none`` reaches
nothing; ``domains`` reaches only the allowed ``host:port`` through the filtering proxy
(plain HTTP and CONNECT), and a refused request is a violation the server never sees;
``loopback`` reaches the host's localhost."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sandbox_helpers import make_sandbox, make_world, require_program

from interpose.sandbox import Sandbox

pytestmark = pytest.mark.integration


class Server:
    """A loopback HTTP server that answers its name and counts requests."""

    def __init__(self, name: str) -> None:
        self.hits = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.hits += 1
                body = f"hello from {name}\n".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def servers() -> Iterator[tuple[Server, Server]]:
    allowed, other = Server("allowed"), Server("other")
    yield allowed, other
    allowed.close()
    other.close()


def curl(url: str, *, tunnel: bool = False) -> list[str]:
    require_program("curl")
    return ["curl", "-fsS", "--max-time", "10", *(["--proxytunnel"] if tunnel else []), url]


def urllib(url: str) -> list[str]:
    code = (
        "import sys, urllib.request; "
        "print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode(), end='')"
    )
    return [sys.executable, "-c", code, url]


async def test_none_reaches_nothing(tmp_path: Path, servers: tuple[Server, Server]) -> None:
    world = make_world(tmp_path)
    allowed, _ = servers
    sandbox = make_sandbox(world)
    for argv in (
        curl(f"http://127.0.0.1:{allowed.port}/"),
        urllib(f"http://127.0.0.1:{allowed.port}/"),
    ):
        result = await sandbox.run(argv, cwd=world.project, env=world.env)
        assert result.exit_code != 0
        assert "hello" not in result.stdout
    assert allowed.hits == 0


@pytest.mark.parametrize("client", ["curl", "curl-connect", "python"])
async def test_domains_allow_only_the_list(
    tmp_path: Path, servers: tuple[Server, Server], client: str
) -> None:
    world = make_world(tmp_path)
    allowed, other = servers
    sandbox = make_sandbox(world, network="domains", domains=(f"localhost:{allowed.port}",))

    def command(url: str) -> list[str]:
        return urllib(url) if client == "python" else curl(url, tunnel=client == "curl-connect")

    ok = await sandbox.run(
        command(f"http://localhost:{allowed.port}/x"), cwd=world.project, env=world.env
    )
    assert ok.exit_code == 0, ok.stderr
    assert ok.stdout == "hello from allowed\n"
    assert ok.violations == ()
    assert allowed.hits == 1

    refused = await sandbox.run(
        command(f"http://localhost:{other.port}/x"), cwd=world.project, env=world.env
    )
    assert refused.exit_code != 0
    assert other.hits == 0
    network = [v for v in refused.violations if v.kind == "network"]
    assert [v.target for v in network] == [f"localhost:{other.port}"]
    assert "refused by the sandbox" in network[0].detail
    # the allowed server under another name is another host: refused too
    by_ip = await sandbox.run(
        command(f"http://127.0.0.1:{allowed.port}/x"), cwd=world.project, env=world.env
    )
    assert by_ip.exit_code != 0
    assert allowed.hits == 1


async def test_loopback_reaches_localhost_only(
    tmp_path: Path, servers: tuple[Server, Server]
) -> None:
    world = make_world(tmp_path)
    _, other = servers
    sandbox: Sandbox = make_sandbox(world, network="loopback")
    ok = await sandbox.run(
        curl(f"http://127.0.0.1:{other.port}/"), cwd=world.project, env=world.env
    )
    assert ok.stdout == "hello from other\n", ok.stderr
    away = await sandbox.run(curl("http://allowed.test/"), cwd=world.project, env=world.env)
    assert away.exit_code != 0
    assert [v.target for v in away.violations] == ["allowed.test:80"]
