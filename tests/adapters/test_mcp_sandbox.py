"""``interpose mcp-proxy --sandbox`` in front of real servers (npm server-filesystem,
mcp-server-git from PyPI): normal use works inside the project; a write outside the
writable roots, which the server itself allows, fails in the sandbox, the file system is
unchanged, and the result the model reads names the refusal.

The servers are pointed only at a fake home and project under tmp_path.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import mcp_types as mt
import pytest
from mcp import Client, StdioServerParameters
from mcp_helpers import CALL_TIMEOUT, NODE_BIN, npm_server, python_server

from interpose.sandbox import probe

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def world(tmp_path: Path) -> Path:
    caps = probe()
    if not caps.usable:
        message = "the sandbox cannot run here: " + "; ".join(caps.problems)
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true: " + message)
        pytest.skip(message)
    for rel, data in {
        "home/.ssh/id_rsa": "fake-key-material\n",
        "home/.bashrc": "# fake\n",
        "project/README.md": "# project\n",
        "outside/keep.txt": "keep\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(data)
    # the guards off: what is refused here, the sandbox refuses; readable: this world and
    # the npm servers, wherever the checkout lies (under /tmp, the sandbox's /tmp hides it)
    (tmp_path / "interpose.toml").write_text(
        f'[sandbox]\nreadable = ["{tmp_path}", "{NODE_BIN.parent}"]\n\n'
        "[hooks.builtins.security-audit]\nenabled = false\n"
        "[hooks.builtins.command-safety-guard]\nenabled = false\n"
        '[observers.audit]\npath = "audit.jsonl"\nevents = ["sandbox_violation"]\n'
    )
    return tmp_path


def sandboxed(world: Path, server: list[str], name: str) -> StdioServerParameters:
    """The client spawns ``mcp-proxy --sandbox`` in the project, HOME the fake home."""
    argv = [sys.executable, "-m", "interpose.cli", "mcp-proxy", "--sandbox", "--name", name]
    argv += ["--config", str(world / "interpose.toml"), "--", *server]
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(world / "home")}
    if "PYTHONPATH" in os.environ:  # the interpose under test, when not the installed one
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=world / "project")


def digest(*dirs: Path) -> dict[str, str]:
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for d in dirs
        for p in sorted(d.rglob("*"))
    }


def text(result: mt.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, mt.TextContent))


async def test_filesystem_server_writes_only_inside_the_project(world: Path) -> None:
    project, outside, home = world / "project", world / "outside", world / "home"
    # the server itself may write to all three: only the sandbox stands in the way
    server = [*npm_server("filesystem"), str(project), str(outside), str(home)]
    before = digest(outside, home)
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(sandboxed(world, server, "filesystem")) as client:
            wrote = await client.call_tool(
                "write_file", {"path": str(project / "notes.txt"), "content": "hello"}
            )
            read = await client.call_tool("read_text_file", {"path": str(project / "notes.txt")})
            escaped = await client.call_tool(
                "write_file", {"path": str(outside / "keep.txt"), "content": "overwritten"}
            )
            key = await client.call_tool("read_text_file", {"path": str(home / ".ssh/id_rsa")})
    assert not wrote.is_error, text(wrote)
    assert (project / "notes.txt").read_text() == "hello"
    assert text(read) == "hello"
    assert escaped.is_error
    # (the server writes a temporary file beside it first: that write is the one refused)
    assert f"[sandbox] write to {outside / 'keep.txt'}" in text(escaped)
    assert "refused by the sandbox" in text(escaped)
    assert "fake-key-material" not in text(key)
    assert "[sandbox] read of ~/.ssh/id_rsa refused by the sandbox" in text(key)
    assert digest(outside, home) == before
    # each refusal is a sandbox_violation event too (the audit log records them)
    events = [json.loads(line) for line in (world / "audit.jsonl").read_text().splitlines()]
    assert {(e["kind"], e["violation"]) for e in events} == {
        ("sandbox_violation", "write"),
        ("sandbox_violation", "read"),
    }
    assert {e["tool_name"] for e in events} == {
        "mcp__filesystem__write_file",
        "mcp__filesystem__read_text_file",
    }


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
    ).stdout


async def test_git_server_commits_in_the_project_only(world: Path) -> None:
    repos = {"inside": world / "project" / "repo", "outside": world / "outside" / "repo"}
    for repo in repos.values():
        repo.mkdir()
        _git(repo, "init", "-q")
        _git(repo, "config", "user.email", "t@example.invalid")
        _git(repo, "config", "user.name", "t")
        (repo / "a.txt").write_text("one\n")
    before = digest(world / "outside")
    with anyio.fail_after(CALL_TIMEOUT):
        async with Client(sandboxed(world, python_server("mcp_server_git"), "git")) as client:
            status = await client.call_tool("git_status", {"repo_path": str(repos["inside"])})
            added = await client.call_tool(
                "git_add", {"repo_path": str(repos["inside"]), "files": ["a.txt"]}
            )
            committed = await client.call_tool(
                "git_commit", {"repo_path": str(repos["inside"]), "message": "one"}
            )
            refused = await client.call_tool(
                "git_add", {"repo_path": str(repos["outside"]), "files": ["a.txt"]}
            )
    assert "a.txt" in text(status)
    assert not added.is_error, text(added)
    assert not committed.is_error, text(committed)
    assert _git(repos["inside"], "log", "--format=%s").split() == ["one"]
    assert refused.is_error or "refused by the sandbox" in text(refused)
    assert "refused by the sandbox" in text(refused), text(refused)
    assert _git(repos["outside"], "status", "--porcelain").split() == ["??", "a.txt"]
    assert digest(world / "outside") == before


def test_without_bubblewrap_the_proxy_refuses_to_start(tmp_path: Path) -> None:
    # no bwrap on PATH: --sandbox fails clearly instead of running the server unsandboxed
    argv = [sys.executable, "-m", "interpose.cli", "mcp-proxy", "--sandbox", "--name", "git"]
    argv += ["--", *python_server("mcp_server_git")]
    env = {"PATH": str(tmp_path), "HOME": str(tmp_path)}
    if "PYTHONPATH" in os.environ:
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    done = subprocess.run(
        argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "interpose mcp-proxy: --sandbox: the sandbox cannot be applied, nothing was run: "
        "bubblewrap (bwrap) is not installed: apt-get install bubblewrap"
    )
