"""The sandbox tests' helpers: a fake home and project under the test's tmp dir, the
files to compare before and after, and the sandbox's real parts (bubblewrap able to make
its namespaces): a test that needs them is skipped without them, and fails under
``CI=true``.

Every destructive command of these tests aims at the fake home or project, never at a
real path, so that a sandbox that fails harms nothing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from interpose.sandbox import Sandbox, SandboxPolicy, probe

#: the fake home's files, as Python data (never written through a shell)
HOME_FILES: dict[str, bytes] = {
    ".bashrc": b"# the fake home's bashrc\nexport PATH=$PATH\n",
    ".profile": b"# fake profile\n",
    ".ssh/id_rsa": b"-----BEGIN OPENSSH PRIVATE KEY-----\nfake-key-material\n",
    ".ssh/authorized_keys": b"ssh-ed25519 AAAAfake user@host\n",
    ".aws/credentials": b"[default]\naws_access_key_id = AKIAFAKEFAKEFAKE\n",
    "notes/todo.txt": b"buy milk\n",
    ".config/app/settings.json": b'{"theme": "dark"}\n',
}
PROJECT_FILES: dict[str, bytes] = {
    "README.md": b"# project\n",
    "src/app.py": b"print('hello')\n",
    ".env": b"API_KEY=sk-fake-project-secret\n",
    ".git/hooks/pre-commit": b"#!/bin/sh\nexit 0\n",
    ".git/config": b"[core]\n\tbare = false\n",
}


def require_program(name: str) -> None:
    """Skip (fail under CI) when ``name`` is not on PATH."""
    if shutil.which(name) is not None:
        return
    message = f"{name} is not installed (scripts/test.sh installs it)"
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true: " + message)
    pytest.skip(message)


def require_bwrap() -> None:
    """Skip (fail under CI) when bubblewrap cannot make its namespaces here."""
    caps = probe()
    if caps.usable:
        return
    message = "the sandbox cannot run here: " + "; ".join(caps.problems)
    if os.environ.get("CI") == "true":
        pytest.fail("CI=true: " + message + " (scripts/test.sh installs bubblewrap)")
    pytest.skip(message)


@dataclasses.dataclass
class World:
    """The fake home and project, and the environment a command gets."""

    root: Path
    home: Path
    project: Path
    outside: Path  # a directory beside them, neither home nor project

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C",
        }

    def snapshot(self) -> dict[str, str]:
        """Every file outside the project (the home, the sibling dir): path -> sha256;
        directories are listed too (an emptied one differs)."""
        found: dict[str, str] = {}
        for top in (self.home, self.outside):
            for path in sorted(top.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
                else:
                    found[str(path)] = "dir" if path.is_dir() else "other"
        return found


def make_world(tmp_path: Path) -> World:
    """The fake home and project (their files as data above) and a directory beside
    them, under ``tmp_path``."""
    home, project, outside = tmp_path / "home", tmp_path / "project", tmp_path / "outside"
    for base, files in ((home, HOME_FILES), (project, PROJECT_FILES)):
        for rel, data in files.items():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_bytes(data)
    outside.mkdir()
    (outside / "keep.txt").write_bytes(b"outside the writable roots\n")
    return World(tmp_path, home, project, outside)


def make_sandbox(world: World, **policy: Any) -> Sandbox:
    """A sandbox whose policy shows the whole test root (home, project, the dir beside
    them) read-only despite the private ``/tmp``, as a real home would be."""
    require_bwrap()
    return Sandbox(SandboxPolicy(readable=(str(world.root),), **policy))
