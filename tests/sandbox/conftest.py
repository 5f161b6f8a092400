"""Fixtures of the sandbox tests: the fake world and a sandbox that shows it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import HOME_FILES, PROJECT_FILES, World, make_sandbox

from interpose.sandbox import Sandbox


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    home, project, outside = tmp_path / "home", tmp_path / "project", tmp_path / "outside"
    for base, files in ((home, HOME_FILES), (project, PROJECT_FILES)):
        for rel, data in files.items():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_bytes(data)
    outside.mkdir()
    (outside / "keep.txt").write_bytes(b"outside the writable roots\n")
    yield World(tmp_path, home, project, outside)


@pytest.fixture
def sandbox(world: World) -> Sandbox:
    return make_sandbox(world)
