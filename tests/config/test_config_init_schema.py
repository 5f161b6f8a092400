"""``interpose init`` (the starter file ``interpose check`` accepts), ``interpose schema``
(a JSON Schema that accepts the starter file and the docs' examples and refuses
mistakes), and ``interpose check`` on MCP servers (each resolved and listed)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from interpose.config.schema import json_schema
from interpose.config.starter import STARTER

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found]

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def interpose(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m interpose ARGV`` in a child, this checkout first on its path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "interpose", *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# -- init ------------------------------------------------------------------------------


def test_init_writes_a_starter_that_check_accepts(tmp_path: Path) -> None:
    made = interpose("init", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    path = tmp_path / "interpose.toml"
    assert made.stdout == f"wrote {path.name}; see what it builds: interpose check {path.name}\n"
    assert path.read_text() == STARTER
    checked = interpose("check", "interpose.toml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    assert (checked.stdout.splitlines()[0], checked.stderr) == ("interpose.toml: OK", "")
    # guards on, the example policies, the audit log (recording calls for replay)
    for registered in (
        "builtin:command-safety-guard",
        "builtin:security-audit",
        "builtin:tool-filter",
        "builtin:loop-guard",
        "audit:record:tool",
    ):
        assert registered in checked.stdout
    assert f"audit-log {tmp_path / 'interpose-audit.jsonl'}" in checked.stdout
    assert not (tmp_path / "interpose-audit.jsonl").exists()  # check opens nothing


def test_the_starter_is_commented() -> None:
    lines = STARTER.splitlines()
    tables = [i for i, line in enumerate(lines) if line.startswith("[")]
    assert len(tables) >= 6
    for i in tables:  # every table has a comment just above it saying what it is
        assert lines[i - 1].startswith("#"), lines[i]
    comments = [line for line in lines if line.lstrip().startswith("#")]
    assert len(comments) > len(lines) / 3
    # every key the file sets is a real one: the schema has no unknown keys
    jsonschema.validate(tomllib.loads(STARTER), json_schema())


def test_the_starters_example_rule_blocks_and_its_guards_hold(tmp_path: Path) -> None:
    assert interpose("init", cwd=tmp_path).returncode == 0
    for argv, decided in [
        ({"command": "terraform destroy -auto-approve"}, "extra-deny"),  # the example rule
        ({"command": "rm -rf /"}, "fs-destruction"),  # the guard
        ({"command": "terraform plan"}, None),
    ]:
        proc = interpose(
            "run-hook-test",
            "interpose.toml",
            "--tool",
            "exec",
            "--args",
            json.dumps(argv),
            cwd=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        result = proc.stdout.splitlines()[-1]
        if decided is None:
            assert result.startswith("result: ok"), proc.stdout
        else:
            assert result.startswith("result: blocked (decided by builtin:command-safety-guard)")
            assert decided in result
    secret = interpose(
        "run-hook-test",
        "interpose.toml",
        "--tool",
        "read",
        "--args",
        '{"path": "config/secrets/db.yml"}',
        cwd=tmp_path,
    )
    assert "result: blocked (decided by builtin:security-audit)" in secret.stdout


def test_init_refuses_to_overwrite_unless_forced(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text("# my own config\n")
    refused = interpose("init", str(path), cwd=tmp_path)
    assert (refused.returncode, refused.stdout) == (2, "")
    assert refused.stderr == f"interpose init: {path} exists; --force overwrites it\n"
    assert path.read_text() == "# my own config\n"
    forced = interpose("init", str(path), "--force", cwd=tmp_path)
    assert forced.returncode == 0, forced.stderr
    assert path.read_text() == STARTER


def test_init_into_a_directory_writes_interpose_toml_there(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    proc = interpose("init", "project", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "project" / "interpose.toml").read_text() == STARTER


# -- schema ------------------------------------------------------------------------------


def test_schema_prints_a_json_schema_of_the_config(tmp_path: Path) -> None:
    proc = interpose("schema", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    schema = json.loads(proc.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"]
    assert schema["description"]
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema == json_schema()
    config = schema["$defs"]["Config"]
    assert set(config["properties"]) == {
        "hooks",
        "observers",
        "tracing",
        "plugins",
        "mcp",
        "permissions",
        "approvals",
        "sandbox",
        "flows",
    }
    builtins = schema["$defs"]["BuiltinsConfig"]["properties"]
    assert "command-safety-guard" in builtins  # the file's (kebab-case) spelling
    # descriptions are the reference's, for editors' hovers
    timeout = schema["$defs"]["DefaultsConfig"]["properties"]["interceptor_timeout_ms"]
    assert "before its error policy applies" in timeout["description"]


def config_examples() -> list[tuple[str, Any]]:
    """Every config file the docs show (TOML blocks and the PicoClaw JSON one, but not a
    plugin's pyproject.toml), the example config and the test suite's valid files."""
    found = []
    for page in sorted(DOCS.glob("*.md")):
        blocks = re.findall(r"```(toml|json)\n(.*?)```", page.read_text(), re.S)
        for i, (lang, text) in enumerate(blocks):
            first = text.strip().splitlines()[0]
            if first.startswith("#") and (
                first.endswith(("pyproject.toml", ".taplo.toml")) or ".gemini/policies/" in first
            ):
                continue  # another tool's file
            if lang == "toml":
                found.append((f"{page.name}[{i}]", tomllib.loads(text)))
            elif text.lstrip().startswith('{\n  "hooks"'):  # a config file, not a payload
                found.append((f"{page.name}[{i}]", json.loads(text)))
    for path in [
        ROOT / "examples" / "interpose.toml",
        *sorted((Path(__file__).parent / "files").glob("*.toml")),
    ]:
        found.append((path.name, tomllib.loads(path.read_text())))
    found.append(("full.json", json.loads((Path(__file__).parent / "files/full.json").read_text())))
    return found


@pytest.mark.parametrize(("where", "config"), config_examples(), ids=lambda v: str(v)[:30])
def test_the_schema_accepts_the_docs_examples(where: str, config: Any) -> None:
    jsonschema.validate(config, json_schema())


def test_the_docs_examples_are_all_found() -> None:
    pages = {where.split("[")[0] for where, _ in config_examples()}
    assert {"config.md", "mcp.md", "fleet.md", "rollout.md", "command-hooks.md"} <= pages


@pytest.mark.parametrize(
    ("config", "complaint"),
    [
        ({"hoks": {}}, "'hoks' was unexpected"),
        ({"hooks": {"defaults": {"interceptor_timeout": 5}}}, "'interceptor_timeout'"),
        ({"hooks": {"builtins": {"comand-safety-guard": {}}}}, "'comand-safety-guard'"),
        ({"hooks": {"processes": {"gate": {"command": ["x"], "on_error": "explode"}}}}, "explode"),
        ({"hooks": {"commands": [{"command": "x", "timeout_ms": -5}]}}, "-5"),
        ({"observers": {"audit": {}}}, "'path' is a required property"),
        ({"tracing": {"level": "loud"}}, "'loud'"),
    ],
)
def test_the_schema_refuses_what_the_loader_refuses(config: Any, complaint: str) -> None:
    with pytest.raises(jsonschema.ValidationError, match=re.escape(complaint)):
        jsonschema.validate(config, json_schema())


# -- check and MCP servers -----------------------------------------------------------------


def executable(path: Path, mode: int = 0o755) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(mode)
    return path


def test_check_resolves_and_lists_every_mcp_server(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    executable(bin_dir / "my-mcp-server")
    executable(tmp_path / "servers" / "local.sh")
    (tmp_path / "mcp.toml").write_text(
        f"""
[mcp.servers.by-path]
command = "my-mcp-server"
args = ["--root", "/srv"]
env = {{PATH = "{bin_dir}"}}
[mcp.servers.absolute]
command = "{sys.executable}"
args = ["-m", "mcp_server_time"]
[mcp.servers.relative]
command = "./local.sh"
cwd = "servers"
[mcp.servers.remote]
url = "http://127.0.0.1:8931/mcp"
"""
    )
    proc = interpose("check", "mcp.toml", cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
    assert proc.stdout.startswith("mcp.toml: OK\n")
    assert proc.stdout.endswith(
        "mcp servers:\n"
        f"  by-path   stdio: {bin_dir / 'my-mcp-server'} --root /srv\n"
        f"  absolute  stdio: {sys.executable} -m mcp_server_time\n"
        f"  relative  stdio: {tmp_path / 'servers' / 'local.sh'}\n"
        "  remote    http: http://127.0.0.1:8931/mcp\n"
    )


def test_check_fails_on_each_server_that_cannot_start(tmp_path: Path) -> None:
    executable(tmp_path / "not-executable.sh", mode=0o644)
    (tmp_path / "mcp.toml").write_text(
        f"""
[mcp.servers.ghost]
command = "no-such-mcp-server-anywhere"
env = {{PATH = "{tmp_path / "bin"}"}}
[mcp.servers.gone]
command = "{tmp_path / "missing-server"}"
[mcp.servers.plain]
command = "./not-executable.sh"
cwd = "."
[mcp.servers.lost]
command = "./server.sh"
cwd = "nowhere"
[mcp.servers."a.b"]
url = "http://127.0.0.1:8931/mcp"
[mcp.servers.a_b]
url = "http://127.0.0.1:8932/mcp"
"""
    )
    proc = interpose("check", "mcp.toml", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        "interpose: mcp.toml: mcp.servers.ghost.command: 'no-such-mcp-server-anywhere' not "
        f"found on PATH ({tmp_path / 'bin'})",
        f"interpose: mcp.toml: mcp.servers.gone.command: {tmp_path / 'missing-server'} "
        "does not exist",
        f"interpose: mcp.toml: mcp.servers.plain.command: {tmp_path / 'not-executable.sh'} "
        "is not executable",
        f"interpose: mcp.toml: mcp.servers.lost.cwd: {tmp_path / 'nowhere'} is not a directory",
        "interpose: mcp.toml: mcp.servers.a_b: its tools would be mcp__a_b__*, as those of "
        'mcp.servers."a.b"; rename one of them',
    ]
    assert "OK" not in proc.stdout
    assert "  ghost  stdio: no-such-mcp-server-anywhere (not found)\n" in proc.stdout


def test_check_name_colliding_with_a_server_of_the_file_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "mcp.toml").write_text(
        f'[mcp.servers.time]\ncommand = "{sys.executable}"\nargs = ["-m", "mcp_server_time"]\n'
    )
    assert interpose("check", "mcp.toml", "--name", "git", cwd=tmp_path).returncode == 0
    proc = interpose("check", "mcp.toml", "--name", "time", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr == (
        "interpose: mcp.toml: --name time: the file has this server already "
        "(mcp.servers.time); choose another name\n"
    )


def test_a_file_that_is_not_executable_is_really_refused_by_the_system(tmp_path: Path) -> None:
    """What check calls not executable, the proxy could not start (so the check is not
    stricter than the system)."""
    script = executable(tmp_path / "server.sh", mode=0o644)
    assert not script.stat().st_mode & stat.S_IXUSR
    with pytest.raises(PermissionError):
        subprocess.run([str(script)], check=False)
