"""The pure parts: the policy's checks, the plan, the bubblewrap command line (its mount
order), the environment, the allow-list matching and the stderr reading."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import interpose
from interpose.sandbox import Limits, Plan, SandboxPolicy, probe, resolve
from interpose.sandbox.bwrap import PROXY_DIR, Inner, bwrap_argv, sandbox_env
from interpose.sandbox.proxy import host_allowed
from interpose.sandbox.violations import from_stderr

PLAN = Plan(
    cwd="/w/proj",
    home="/tmp/t/home",
    writable=("/w/proj",),
    readable=("/tmp/t",),
    hidden_dirs=("/tmp/t/home/.ssh",),
    hidden_files=("/w/proj/.env",),
    read_only=("/w/proj/.git/hooks",),
    network="domains",
    domains=("example.org",),
    limits=Limits(memory=1 << 30, processes=64),
)


def test_mount_order_and_isolation() -> None:
    argv = bwrap_argv(
        PLAN, ["make", "test"], bwrap="/usr/bin/bwrap", inner=Inner(prlimit="prlimit")
    )
    assert argv[:6] == [
        "/usr/bin/bwrap",
        "--die-with-parent",
        "--new-session",
        "--unshare-all",
        "--cap-drop",
        "ALL",
    ]
    text = " ".join(argv)
    order = [
        "--ro-bind / /",
        "--tmpfs /tmp",
        "--ro-bind /tmp/t /tmp/t",
        "--bind /w/proj /w/proj",
        "--ro-bind /w/proj/.git/hooks /w/proj/.git/hooks",
        "--tmpfs /tmp/t/home/.ssh --remount-ro /tmp/t/home/.ssh",
        "--ro-bind /dev/null /w/proj/.env",
        "--chdir /w/proj --",
    ]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)
    assert argv[-6:] == ["prlimit", f"--as={1 << 30}", "--nproc=64", "--", "make", "test"]
    assert "--share-net" not in argv


def test_proxy_bridge_and_env() -> None:
    argv = bwrap_argv(
        PLAN, ["curl", "x"], inner=Inner(proxy_dir="/run/p", python="/py", prlimit=None)
    )
    assert argv[argv.index("/run/p") + 1] == PROXY_DIR
    start = argv.index("/py")
    assert argv[start + 4 :] == [f"{PROXY_DIR}/proxy.sock", "3128", "--", "curl", "x"]
    env = sandbox_env(PLAN, {"PATH": "/bin", "NO_PROXY": "localhost", "HOME": "/root"}, proxy=True)
    assert env["HOME"] == "/tmp/t/home"
    assert "NO_PROXY" not in env
    assert env["HTTPS_PROXY"] == env["http_proxy"] == "http://127.0.0.1:3128"
    assert "HTTP_PROXY" not in sandbox_env(PLAN, {"HTTP_PROXY": "http://corp:8080"}, proxy=False)


def test_policy_is_checked() -> None:
    with pytest.raises(ValueError, match="needs at least one entry"):
        SandboxPolicy(network="domains")
    with pytest.raises(ValueError, match="only with"):
        SandboxPolicy(domains=("example.org",))
    with pytest.raises(ValueError, match=r"Limits\.processes"):
        Limits(processes=0)


def test_resolve(tmp_path: Path) -> None:
    home, proj = tmp_path / "home", tmp_path / "proj"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x")
    (proj / "sub" / "deeper").mkdir(parents=True)
    (proj / ".env").write_text("K=v")
    (proj / "sub" / ".env").write_text("K=v")
    (proj / "sub" / "app.py").write_text("")
    (proj / ".git" / "hooks").mkdir(parents=True)
    plan = resolve(SandboxPolicy(), proj, str(home))
    assert plan.writable == (str(proj),)
    assert plan.hidden_dirs == (str(home / ".ssh"),)
    assert set(plan.hidden_files) == {
        str(home / ".netrc"),
        str(proj / ".env"),
        str(proj / "sub" / ".env"),
    }
    assert plan.read_only == (str(proj / ".git" / "hooks"),)
    # the home lies under /tmp here; so may interpose's environment (a checkout there)
    assert plan.readable[0] == str(home)
    running = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    package = os.path.dirname(os.path.realpath(interpose.__file__))
    assert set(plan.readable[1:]) == {p for p in (*running, package) if p.startswith("/tmp/")}
    assert plan.is_writable(str(proj / "x"))
    assert not plan.is_writable(str(proj / ".git/hooks/x"))


@pytest.mark.parametrize(
    ("entry", "host", "port", "allowed"),
    [
        ("example.org", "example.org", 443, True),
        ("example.org", "EXAMPLE.org.", 80, True),
        ("example.org", "api.example.org", 443, False),
        ("*.example.org", "api.example.org", 443, True),
        ("*.example.org", "example.org", 443, False),
        ("*.example.org", "evilexample.org", 443, False),
        ("localhost:8080", "localhost", 8080, True),
        ("localhost:8080", "localhost", 8081, False),
        ("::1", "[::1]", 80, True),
        ("[::1]:80", "::1", 80, True),
    ],
)
def test_host_allowed(entry: str, host: str, port: int, allowed: bool) -> None:
    assert host_allowed((entry,), host, port) is allowed


def test_violations_from_stderr() -> None:
    stderr = "\n".join(
        [
            "/usr/bin/bash: line 1: /tmp/t/home/.bashrc: Read-only file system",
            "rm: cannot remove '/tmp/t/home/notes': Read-only file system",
            "OSError: [Errno 30] Read-only file system: '/etc/passwd'",
            "touch: cannot touch '/w/proj/ok': Read-only file system",
            "cat: /tmp/t/home/.ssh/id_rsa: No such file or directory",
            "cat: /w/proj/missing: No such file or directory",
            "bash: fork: retry: Resource temporarily unavailable",
        ]
    )
    found = from_stderr(stderr, PLAN)
    assert [(v.kind, v.target) for v in found] == [
        ("write", "/tmp/t/home/.bashrc"),
        ("write", "/tmp/t/home/notes"),
        ("write", "/etc/passwd"),
        ("read", "/tmp/t/home/.ssh/id_rsa"),
        ("limit", ""),
    ]
    assert found[0].detail.startswith("write to ~/.bashrc refused by the sandbox")


def test_probe_refuses_other_platforms(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    caps = probe.__wrapped__("bwrap")
    assert not caps.usable
    assert caps.problems == ("the sandbox needs Linux (bubblewrap); darwin is not supported",)
