"""The docs run as pasted: the first ``python`` block of every page is a whole program.

Every ``docs/*.md`` page and the README are picked up by a glob, so a new page is
covered as soon as it exists.  The first fenced ```` ```python ```` block of each page is
written to a file in a fresh temporary directory and run there as a real subprocess
(``sys.executable page.py``): it must exit 0, print something, and show no traceback.
A page without a Python block must be listed in ``NO_PYTHON`` with the reason, so that
a new page cannot slip through unnoticed.  A section that says it stands alone (listed in
``STANDALONE_SECTIONS``) has its first block run the same way.  Later blocks of a page may
build on the first one (they say so); ``tests/test_examples.py`` checks the blocks quoted
from ``examples/``.

The page about the fleet needs a Redis server: the test starts a real ``redis-server``
on a loopback port and hands its URL to the program in ``$INTERPOSE_REDIS_URL`` (under
``CI=true`` a missing ``redis-server`` fails the test, elsewhere it is skipped).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]

# pages with no Python block, and why they have none
NO_PYTHON: dict[str, str] = {
    "performance.md": "measured numbers and the `interpose bench` commands (minutes long)",
    "cli.md": "the command line: its first block is shell, run by tests/test_cli.py",
}

# pages whose program needs a Redis server ($INTERPOSE_REDIS_URL)
NEEDS_REDIS = {"fleet.md"}

# sections that say they stand alone: their first Python block is a whole program too
STANDALONE_SECTIONS: dict[str, tuple[str, ...]] = {
    "adapters.md": ("## OpenAI Agents SDK",),
    "approvals.md": ("## JSON API",),
}

TIMEOUT = 90.0  # s for one page's program (the LangChain and MCP pages import a lot)

_FIRST_PYTHON = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def first_python_block(page: Path, section: str = "") -> str | None:
    """The body of the first ```python block of ``page`` (after the heading ``section``,
    if given), or None if it has none."""
    text = page.read_text(encoding="utf-8")
    if section:
        start = text.find(f"\n{section}\n")
        assert start >= 0, f"{page.name} has no heading {section!r}"
        text = text[start:]
    match = _FIRST_PYTHON.search(text)
    return None if match is None else match.group(1)


def _pastes() -> list[tuple[Path, str]]:
    """(page, section) for every block that must run as pasted; "" is the whole page."""
    pastes = [(page, "") for page in PAGES if page.name not in NO_PYTHON]
    for page in PAGES:
        pastes += [(page, section) for section in STANDALONE_SECTIONS.get(page.name, ())]
    return pastes


def _paste_id(paste: tuple[Path, str]) -> str:
    page, section = paste
    return f"{page.name}{section.replace('#', '').replace(' ', '-').lower()}"


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real redis-server on a free loopback port, stopped after the test."""
    sys.path.insert(0, str(ROOT / "tests" / "fleet"))
    try:
        from redis_helpers import RedisServer, find_redis_server
    finally:
        sys.path.remove(str(ROOT / "tests" / "fleet"))
    workdir = tmp_path / "redis"
    workdir.mkdir()
    server = RedisServer(find_redis_server(), workdir)
    server.start()
    try:
        yield server.url
    finally:
        server.kill()


def _environment(page: Path, request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment of a page's program: ours, this checkout first on the path."""
    env = dict(os.environ)
    env.pop("INTERPOSE_DEBUG", None)  # a failing handler's warning, not its traceback
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    if page.name in NEEDS_REDIS:
        env["INTERPOSE_REDIS_URL"] = request.getfixturevalue("redis_url")
    return env


@pytest.mark.parametrize("paste", _pastes(), ids=_paste_id)
def test_first_python_block_runs_as_pasted(
    paste: tuple[Path, str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    page, section = paste
    code = first_python_block(page, section)
    assert code is not None, (
        f"{page.name} {section} has no ```python block: give it a runnable first block, or "
        "list the page in NO_PYTHON with the reason"
    )
    workdir = tmp_path / "paste"
    workdir.mkdir()
    program = workdir / f"{page.stem.replace('-', '_')}_first_block.py"
    program.write_text(code, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, program.name],
        cwd=workdir,
        env=_environment(page, request),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    output = f"--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
    assert proc.returncode == 0, f"{page.name}: the first block exited {proc.returncode}\n{output}"
    assert "Traceback" not in proc.stdout + proc.stderr, f"{page.name}: a traceback\n{output}"
    assert proc.stdout.strip(), f"{page.name}: the first block printed nothing\n{output}"


def test_pages_without_python_are_listed_and_have_none() -> None:
    names = {p.name for p in PAGES}
    assert set(NO_PYTHON) <= names, f"NO_PYTHON names no page: {set(NO_PYTHON) - names}"
    stale = [name for name in NO_PYTHON if first_python_block(ROOT / "docs" / name) is not None]
    assert not stale, f"these pages have a ```python block now: remove them from NO_PYTHON {stale}"
    assert names >= set(STANDALONE_SECTIONS), f"no such page: {set(STANDALONE_SECTIONS) - names}"
    assert names >= NEEDS_REDIS, f"NEEDS_REDIS names no page: {NEEDS_REDIS - names}"


def test_the_glob_finds_the_pages() -> None:
    # guards the parametrized test against a glob that silently finds nothing
    assert {"quickstart.md", "guards.md", "rollout.md", "adapters.md", "README.md"} <= {
        p.name for p in PAGES
    }


def test_index_links_every_page() -> None:
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w.-]+\.md)(?:#[\w-]*)?\)", index))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert not pages - linked, f"docs/index.md does not link {sorted(pages - linked)}"
