"""The inbox's page ships in the wheel: its HTML, script and style are package data that
the installed package serves, whatever the directory it runs from."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATIC = ("index.html", "inbox.js", "inbox.css")

# in the unpacked wheel: the app built and its page and files fetched through it
SERVE = """
import anyio, httpx2
import interpose.adapters.inbox
from interpose.adapters.inbox import StoreBackend, Tokens, build_app
from interpose.approvals import MemoryApprovalStore

async def main():
    app = build_app(StoreBackend(MemoryApprovalStore()), host="127.0.0.1", tokens=Tokens())
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        for path in ("/", "/static/inbox.js", "/static/inbox.css"):
            answer = await http.get(path)
            print(path, answer.status_code, len(answer.content))

print(interpose.adapters.inbox.__file__)
anyio.run(main)
"""


def test_the_page_and_its_files_are_served_from_an_installed_wheel(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    build = "import sys, hatchling.build as b; print(b.build_wheel(sys.argv[1]))"
    built = subprocess.run(
        [sys.executable, "-c", build, str(dist)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    site = tmp_path / "site"
    with zipfile.ZipFile(dist / built.stdout.strip().splitlines()[-1]) as archive:
        archive.extractall(site)
    for name in STATIC:
        assert (site / "interpose" / "adapters" / "inbox" / "static" / name).is_file()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    served = subprocess.run(
        [sys.executable, "-c", SERVE],
        cwd=elsewhere,
        env=dict(os.environ, PYTHONPATH=str(site)),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert served.returncode == 0, served.stderr
    where, *lines = served.stdout.splitlines()
    assert where.startswith(str(site))  # (the wheel's package, not this checkout)
    assert [line.split()[:2] for line in lines] == [
        ["/", "200"],
        ["/static/inbox.js", "200"],
        ["/static/inbox.css", "200"],
    ]
    assert all(int(line.split()[2]) > 500 for line in lines)
