"""Tests for ``builtin:security-audit`` (file tools) and its path normalization."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from interpose.errors import ConfigError
from interpose.middleware.builtins.command_safety import analyze_command
from interpose.middleware.builtins.security_audit import (
    SecurityAudit,
    match_sensitive,
    match_sensitive_store,
    normalize_path,
    patch_paths,
    sensitive_reason,
)
from interpose.pipeline.payloads import ToolBeforeInput, ToolBeforeOutput

CORPORA = sorted(Path(__file__).parent.glob("guard_corpus_paths*.jsonl"))
"""The path guard's labelled corpus: ``guard_corpus_paths.jsonl`` and its extensions."""
HOME = "/home/u"


def run_audit(
    tool: str, args: dict[str, Any], guard: SecurityAudit | None = None
) -> ToolBeforeOutput:
    out = ToolBeforeOutput(args=args)
    (guard or SecurityAudit(home=HOME))(ToolBeforeInput(tool_name=tool, tool_call_id="c1"), out)
    return out


def load_corpus() -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in CORPORA:
        with path.open(encoding="utf-8") as fh:
            rows += [json.loads(line) for line in fh if line.strip()]
    return rows


def corpus_args(row: dict[str, Any]) -> dict[str, Any]:
    if "patch" in row:
        return {"patch": row["patch"]}
    return {row.get("key", "path"): row["path"]}


# -- corpus -----------------------------------------------------------------------------------


def test_corpus_shape() -> None:
    assert [p.name for p in CORPORA][:2] == [
        "guard_corpus_paths.jsonl",
        "guard_corpus_paths_more.jsonl",
    ]
    rows = load_corpus()
    assert len(rows) >= 130
    assert sum(r["expect"] == "allow" for r in rows) * 2 >= len(rows)
    assert {r["tool"] for r in rows} == {"read", "write", "edit", "apply_patch"}


def test_corpus_accuracy() -> None:
    rows = load_corpus()
    guard = SecurityAudit(home=HOME)
    misses: list[str] = []
    blocked_ok = allowed_ok = 0
    for row in rows:
        out = run_audit(row["tool"], corpus_args(row), guard)
        expected = row["expect"] == "block"
        if out.block != expected:
            misses.append(
                f"{row['expect']}: {row['tool']} {corpus_args(row)!r} -> {out.block_reason}"
            )
        elif expected:
            blocked_ok += 1
            assert out.block_reason.startswith(f"security-audit: {row['category']}: "), row
        else:
            allowed_ok += 1
    n_block = sum(r["expect"] == "block" for r in rows)
    n_allow = len(rows) - n_block
    block_score, allow_score = blocked_ok / n_block, allowed_ok / n_allow
    print(
        f"\npaths corpus: block {block_score:.1%} allow {allow_score:.1%} "
        f"(n={len(rows)}: {n_block} block, {n_allow} allow)"
    )
    for miss in misses:
        print("  MISS", miss)
    assert block_score >= 0.97
    assert allow_score >= 0.97


# -- normalization ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("~", "/home/u"),
        ("~/.ssh/id_rsa", "/home/u/.ssh/id_rsa"),
        ("$HOME/.aws/credentials", "/home/u/.aws/credentials"),
        ("${HOME}/.env", "/home/u/.env"),
        ("~root/.bashrc", "/root/.bashrc"),
        ("~bob/x", "/home/bob/x"),
        ("C:\\Users\\Bob\\.SSH\\ID_RSA", "c:/users/bob/.ssh/id_rsa"),
        ("//etc///passwd", "/etc/passwd"),
        ("/etc/./nginx/../passwd", "/etc/passwd"),
        ("node_modules/../.env", ".env"),
        ("./a/./b/", "a/b"),
        ("../x", "../x"),
        ("/proc/self/root/etc/shadow", "/etc/shadow"),
        ("/proc/1234/root/../etc/shadow", "/etc/shadow"),
        ("/proc/self/cwd/.env", ".env"),
        ("file:///home/u/.netrc", "/home/u/.netrc"),
        ("", "."),
        ("$HOMEDIR/x", "$homedir/x"),
    ],
)
def test_normalize_path(raw: str, expected: str) -> None:
    assert normalize_path(raw, home=HOME) == expected


def test_normalize_path_defaults_to_the_real_home() -> None:
    assert normalize_path("~/x") == str(Path.home() / "x").lower()


def test_sensitive_reason() -> None:
    assert sensitive_reason("~/.ssh/id_rsa") == "ssh-key: SSH private key or .ssh directory"
    assert sensitive_reason("project/.env.local") == "env-file: environment file with secrets"
    assert sensitive_reason("node_modules/dotenv/.env") is None
    assert sensitive_reason("node_modules/../.env") is not None
    assert sensitive_reason("node_modules_evil/.env") is not None
    assert sensitive_reason("my-fixtures/.env") is not None
    assert sensitive_reason("src/app.py") is None


def test_read_and_write_differ_only_for_public_ssh_material() -> None:
    for name in ("known_hosts", "authorized_keys", "config", "id_ed25519.pub"):
        path = f"~/.ssh/{name}"
        assert match_sensitive(path, home=HOME) is None
        found = match_sensitive(path, write=True, home=HOME)
        assert found is not None
        assert found.rule == "ssh-key"
    assert match_sensitive("~/.ssh/id_ed25519", home=HOME) is not None


# -- the interceptor ---------------------------------------------------------------------------


def test_reason_format() -> None:
    out = run_audit("read", {"path": "~/.ssh/id_rsa"})
    assert out.block
    assert out.block_reason == (
        "security-audit: ssh-key: '~/.ssh/id_rsa' (normalized '/home/u/.ssh/id_rsa')"
    )


def test_every_path_key_is_checked() -> None:
    out = run_audit("write", {"path": "README.md", "file_path": "src/x.py", "file": ".env"})
    assert out.block
    assert "'.env'" in out.block_reason
    assert not run_audit("read", {"path": "a.txt", "file_path": None, "content": ".env"}).block


@pytest.mark.parametrize(
    "args",
    [
        {"target_file": "~/.aws/credentials"},
        {"notebook_path": "secrets/.env"},
        {"paths": ["README.md", "~/.ssh/id_ed25519"]},
        {"paths": ("src/a.py", ".env.production")},
        {"paths": "~/.netrc"},
        {"filepath": "~/.pgpass"},
        {"filename": "id_ed25519~"},
        {"file_paths": ["docs/a.md", "/run/secrets/db"]},
        {"path": ["README.md", ".env.local"]},
    ],
)
def test_other_path_keys_are_read(args: dict[str, Any]) -> None:
    assert run_audit("read", args).block
    harmless = {
        key: ["README.md"] if key.endswith("paths") or key == "path" else "README.md"
        for key in args
    }
    assert not run_audit("read", harmless).block


@pytest.mark.parametrize(
    ("args", "what"),
    [
        ({"path": 3}, "'path' is of type int, not a path string or a list of them"),
        ({"file_path": {"p": ".env"}}, "'file_path' is of type dict, not a path string"),
        ({"paths": ["a.txt", None]}, "element 1 of 'paths' is of type NoneType"),
        ({"paths": 7}, "'paths' is of type int, not a path string or a list of them"),
        ({"target_file": ["README.md", 2]}, "element 1 of 'target_file' is of type int"),
    ],
)
def test_path_arguments_that_are_not_text_are_refused(args: dict[str, Any], what: str) -> None:
    out = run_audit("read", args)
    assert out.block
    assert out.block_reason.startswith(f"security-audit: unparseable: {what}")


def test_patch_text_that_is_not_text_is_refused() -> None:
    out = run_audit("apply_patch", {"patch": ["*** Add File: .env"]})
    assert out.block_reason.startswith("security-audit: unparseable: 'patch' is of type list")


def test_indented_patch_headers_are_read() -> None:
    envelope = "  *** Begin Patch\n  *** Update File: .env\n  @@\n  -A=1\n  +A=2\n  *** End Patch\n"
    assert patch_paths(envelope) == [".env"]
    unified = "    --- a/src/x.py\n    +++ b/~/.ssh/config\n    @@ -1 +1 @@\n"
    assert patch_paths(unified) == ["src/x.py", "~/.ssh/config"]
    git = "\tdiff --git a/x b/.env.local\n\trename from x\n\trename to .env.local\n"
    assert ".env.local" in patch_paths(git)
    assert run_audit("apply_patch", {"patch": envelope}).block
    assert run_audit("apply_patch", {"input": unified}).block
    assert not run_audit("apply_patch", {"patch": envelope.replace(".env", "src/app.py")}).block


def test_write_tools_use_write_rules() -> None:
    assert not run_audit("read", {"path": "~/.ssh/known_hosts"}).block
    assert run_audit("write", {"path": "~/.ssh/known_hosts"}).block
    assert run_audit("edit", {"file_path": "~/.ssh/authorized_keys"}).block


ENVELOPE = """*** Begin Patch
*** Update File: src/app.py
@@
-a
+b
*** Add File: docs/new.md
+hello
*** Update File: src/old.py
*** Move to: src/new.py
*** Delete File: build/x.js
*** End Patch
"""

UNIFIED = """diff --git a/src/a.py b/src/b.py
similarity index 90%
rename from src/a.py
rename to src/b.py
--- a/src/a.py
+++ b/src/b.py
@@ -1 +1 @@
-x
+y
--- /dev/null
+++ b/docs/new file.md\t2024-01-01 00:00:00
@@ -0,0 +1 @@
+hi
"""


def test_patch_paths_envelope() -> None:
    assert patch_paths(ENVELOPE) == [
        "src/app.py",
        "docs/new.md",
        "src/old.py",
        "src/new.py",
        "build/x.js",
    ]


def test_patch_paths_unified() -> None:
    assert patch_paths(UNIFIED) == ["src/a.py", "src/b.py", "docs/new file.md"]


@pytest.mark.parametrize(
    "patch",
    [
        ENVELOPE.replace("docs/new.md", ".env"),
        ENVELOPE.replace("*** Move to: src/new.py", "*** Move to: ~/.ssh/authorized_keys"),
        UNIFIED.replace("+++ b/src/b.py", "+++ b/config/.env.production"),
        "diff --git a/x b/y\nrename from x\nrename to certs/server.key\n",
    ],
)
def test_apply_patch_blocks_any_sensitive_file(patch: str) -> None:
    assert not run_audit("apply_patch", {"patch": ENVELOPE}).block
    assert run_audit("apply_patch", {"patch": patch}).block
    assert run_audit("apply_patch", {"input": patch}).block


def test_extra_deny_and_allow() -> None:
    guard = SecurityAudit(
        extra_deny=[r"(^|/)secrets/"], allow=[r"^/home/u/\.ssh/deploy_key$"], home=HOME
    )
    out = run_audit("read", {"path": "app/Secrets/db.yaml"}, guard)
    assert out.block
    assert out.block_reason.startswith("security-audit: extra-deny: ")
    assert not run_audit("read", {"path": "~/.ssh/deploy_key"}, guard).block
    assert run_audit("read", {"path": "~/.ssh/id_rsa"}, guard).block
    assert not run_audit("read", {"path": "README.md"}, guard).block


def test_allow_is_applied_after_normalization() -> None:
    guard = SecurityAudit(allow=[r"^vendor/"], home=HOME)
    assert not run_audit("read", {"path": "vendor/pkg/.env"}, guard).block
    assert run_audit("read", {"path": "vendor/../.env"}, guard).block


def test_invalid_regex_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="invalid allow regex"):
        SecurityAudit(allow=["("])


def test_already_blocked_call_is_left_alone() -> None:
    out = ToolBeforeOutput(args={"path": ".env"}, block=True, block_reason="earlier")
    SecurityAudit()(ToolBeforeInput(tool_name="read"), out)
    assert out.block_reason == "earlier"


# -- one list for both guards -------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "~/.ssh/id_rsa",
        "~/.aws/credentials",
        "~/.kube/config",
        "~/.gnupg/secring.gpg",
        "/etc/shadow",
        ".env.production",
        "certs/tls.pem",
        "~/.codex/auth.json",
        "~/.config/gcloud/application_default_credentials.json",
        "whatsapp/default/creds.json",
        "node_modules/../.env",
    ],
)
def test_command_guard_uses_the_same_sensitive_list(path: str) -> None:
    assert match_sensitive(path) is not None
    finding = analyze_command(f"cat {path}")
    assert finding is not None
    assert finding.rule == "sensitive-read"


@pytest.mark.parametrize(
    "path",
    ["node_modules/dotenv/.env", "tests/fixtures/id_rsa", ".env.example", "~/.ssh/known_hosts"],
)
def test_command_guard_shares_the_allow_list(path: str) -> None:
    assert match_sensitive(path) is None
    assert analyze_command(f"cat {path}") is None


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("~/.ssh", "ssh-key"),
        ("/home/dev/.gnupg/", "keyring"),
        ("~/.aws", "cloud-credentials"),
        ("~/.kube", "cloud-credentials"),  # for config, sensitive only there
        ("~/.docker", "cloud-credentials"),  # for config.json
        ("~/.config/gcloud", "cloud-credentials"),
        ("~/.config/gh", "dev-credentials"),
        ("~/.local/share/keyrings", "keyring"),
    ],
)
def test_store_directories_are_named_by_the_same_rules(path: str, rule: str) -> None:
    found = match_sensitive_store(path, home="/home/dev")
    assert found is not None
    assert found.rule == rule


@pytest.mark.parametrize(
    "path",
    [
        "~/.cache",  # credentials.json is sensitive in any directory, not because of this one
        "~/.npm/_cacache",
        "~/.aws-sam",
        "~/project/.ssh-test",
        "~/.config/nvim",
        "~/.ssh/known_hosts.old",  # an entry of a store is a file, judged as one
        "tests/fixtures/.ssh",
    ],
)
def test_look_alikes_and_entries_are_no_store(path: str) -> None:
    assert match_sensitive_store(path, home="/home/dev") is None
