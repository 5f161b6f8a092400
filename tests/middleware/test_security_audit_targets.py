"""The path guard's judgement of what a path may name (issue 28): ``/proc/<pid>/cwd/..``
and leading ``..`` climbing to ``/``, a thread's environment and a process's memory,
NTFS streams, a NUL inside a path, documentation named like a key; the one list of
system files both guards protect from writes; and the fast paths of the matching (one
union of every rule, the store check by the alternatives that name a file) answering
exactly as the rules do."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from interpose.middleware.builtins.command_safety import analyze_command
from interpose.middleware.builtins.command_safety import paths as command_paths
from interpose.middleware.builtins.command_safety.model import HOME as COMMAND_HOME
from interpose.middleware.builtins.security_audit import (
    PERSISTENCE_PATHS,
    SENSITIVE_RULES,
    SYSTEM_FILES,
    SecurityAudit,
    match_sensitive_glob,
    match_sensitive_store,
    normalize_path,
    possible_targets,
)
from interpose.middleware.builtins.security_audit import matching as matching_module
from interpose.middleware.builtins.security_audit.matching import match_exact
from interpose.middleware.builtins.security_audit.rules import any_rule, may_end_with
from interpose.pipeline.payloads import ToolBeforeInput, ToolBeforeOutput

HOME = "/home/u"
CORPORA = sorted(Path(__file__).parent.glob("guard_corpus_paths*.jsonl"))


def audit(tool: str, args: dict[str, Any]) -> ToolBeforeOutput:
    out = ToolBeforeOutput(args=args)
    SecurityAudit(home=HOME)(ToolBeforeInput(tool_name=tool, tool_call_id="c1"), out)
    return out


def rule_of(path: str, *, write: bool = False) -> str | None:
    reason = SecurityAudit(home=HOME).check(path, write=write)
    return None if reason is None else reason.split(": ")[1]


# -- what a path may name -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "write", "rule"),
    [
        ("/proc/self/cwd/../../../../etc/shadow", False, "system-auth"),
        ("/proc/self/cwd/../etc/shadow", False, "system-auth"),
        ("/proc/1234/cwd/../../../root/.ssh/id_rsa", False, "ssh-key"),
        ("/proc/1/cwd/etc/shadow", False, "system-auth"),  # a daemon's cwd is usually /
        ("/proc/987/task/988/cwd/etc/sudoers.d/x", True, "system-auth"),
        ("/proc/thread-self/cwd/../../etc/sudoers", False, "system-auth"),
        ("/proc/self/task/77/cwd/../../../etc/gshadow", False, "system-auth"),
        ("/proc/self/task/77/root/etc/shadow", False, "system-auth"),
        ("/proc/self/root/etc/shadow", False, "system-auth"),
        ("../../../../../../../../etc/shadow", False, "system-auth"),
        ("../etc/shadow", False, "system-auth"),  # the cwd may be /app
        ("../../etc/group", True, "system-auth"),
        ("../../../etc/cron.d/job", True, "persistence"),
        ("../../../../home/u/.aws/credentials", False, "cloud-credentials"),
        ("../../../run/secrets/db_password", False, "cloud-credentials"),
    ],
)
def test_a_climb_above_the_working_directory_can_reach_the_root(
    path: str, write: bool, rule: str
) -> None:
    assert rule_of(path, write=write) == rule


@pytest.mark.parametrize(
    ("path", "write"),
    [
        ("../src/main.py", True),
        ("../../README.md", False),
        ("../etc-notes/shadow.txt", False),
        ("../../etc/hosts", False),
        ("../../etc/passwd", False),  # world-readable, as /etc/passwd is
        ("../../etc/group", False),
        ("/proc/self/cwd/src/app.py", True),
        ("/proc/self/cwd/../sibling/pyproject.toml", False),
        ("..", False),
    ],
)
def test_a_climb_to_an_ordinary_file_stays_allowed(path: str, write: bool) -> None:
    assert rule_of(path, write=write) is None


def test_the_climb_is_read_from_the_root_only_when_it_leaves_the_working_directory() -> None:
    assert possible_targets("../../etc/shadow") == ("../../etc/shadow", "/etc/shadow")
    assert possible_targets("a/../etc/shadow") == ("a/../etc/shadow",)
    assert possible_targets("etc/shadow") == ("etc/shadow",)
    assert possible_targets("../..") == ("../..",)
    assert normalize_path("/proc/self/cwd/../../etc/shadow") == "../../etc/shadow"
    assert normalize_path("/proc/9/task/9/root/etc/shadow") == "/etc/shadow"
    assert normalize_path("/proc/self/cwd/etc/shadow") == "etc/shadow"  # our cwd: relative
    assert normalize_path("/proc/1/cwd/etc/shadow") == "/etc/shadow"  # another's: from /


@pytest.mark.parametrize(
    ("pattern", "rule"),
    [
        ("../../../../etc/sh*", "system-auth"),
        ("/proc/self/cwd/../../../../etc/gsh*", "system-auth"),
        ("/proc/*/task/*/environ", "env-file"),
        ("../../*/.ssh/id_*", "ssh-key"),
        ("../../../../etc/host*", None),
        ("../../*/src", None),
    ],
)
def test_a_glob_climbing_to_the_root_is_judged_from_there(pattern: str, rule: str | None) -> None:
    found = match_sensitive_glob(pattern, home=HOME)
    assert (found and found.rule) == rule


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("/proc/1234/task/1235/environ", "env-file"),
        ("/proc/self/task/1/environ", "env-file"),
        ("/proc/thread-self/environ", "env-file"),
        ("/proc/self/environ", "env-file"),
        ("/proc/1/mem", "process-memory"),
        ("/proc/self/task/5/mem", "process-memory"),
        ("/proc/kcore", "process-memory"),
        ("/dev/mem", "process-memory"),
    ],
)
def test_a_process_environment_and_memory_are_sensitive(path: str, rule: str) -> None:
    assert rule_of(path) == rule


@pytest.mark.parametrize(
    "path",
    [
        "/proc/self/cmdline",
        "/proc/1/status",
        "/proc/self/maps",
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/self/task/1/stat",
        "/proc/self/fd/0",
    ],
)
def test_other_process_files_are_readable(path: str) -> None:
    assert rule_of(path) is None


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        (".env::$DATA", "env-file"),
        (".env:stream", "env-file"),
        ("id_rsa::$DATA", "ssh-key"),
        ("C:\\Users\\bob\\.ssh\\id_ed25519:hidden:$DATA", "ssh-key"),
        ("C:\\Users\\bob\\.aws::$INDEX_ALLOCATION\\credentials", "cloud-credentials"),
        ("secrets\\prod.env::$DATA", "env-file"),
    ],
)
def test_an_ntfs_stream_is_judged_as_its_base_file(path: str, rule: str) -> None:
    assert rule_of(path) == rule


@pytest.mark.parametrize("path", ["C:\\work\\notes.txt:summary", "src/a:b.py", "C:/proj/main.py"])
def test_a_colon_in_an_ordinary_name_stays_allowed(path: str) -> None:
    assert rule_of(path, write=True) is None


@pytest.mark.parametrize("path", [".env\x00.txt", "notes\x00", "\x00/etc/shadow"])
def test_a_path_with_a_nul_is_refused_as_no_file_name(path: str) -> None:
    out = audit("read", {"path": path})
    assert out.block
    assert out.block_reason.startswith("security-audit: unparseable: ")
    assert "NUL" in out.block_reason


@pytest.mark.parametrize(
    "path",
    [
        "docs/ssh/id_rsa.md",
        "docs/id_rsa.pub.md",
        "docs/guides/id_ed25519.rst",
        "notes/aws-credentials.md",
        "docs/.env.md",
        "site/kubeconfig.html",
    ],
)
def test_documentation_named_like_a_secret_is_allowed(path: str) -> None:
    assert rule_of(path) is None
    assert rule_of(path, write=True) is None
    assert analyze_command(f"cat {path}") is None


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        ("id_rsa.txt", "ssh-key"),  # a key pasted into a text file is a key
        (".env.txt", "env-file"),
        ("~/.ssh/notes.md", "ssh-key"),  # every entry of ~/.ssh is sensitive
        ("~/.aws/README.md", "cloud-credentials"),
    ],
)
def test_a_secret_in_a_text_file_or_a_store_stays_refused(path: str, rule: str) -> None:
    assert rule_of(path) == rule


# -- one list of system files for both guards -------------------------------------------------

SYSTEM_PROBES = (
    "/etc/passwd",
    "/etc/passwd-",
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/group",
    "/etc/group-",
    "/etc/sudoers",
    "/etc/sudoers.d/90-agent",
    "/etc/master.passwd",
    "/private/etc/sudoers",
    "/etc/security/opasswd",
    "/etc/profile.d/x.sh",
    "/etc/cron.d/job",
    "/etc/ld.so.preload",
    "/etc/environment",
    "/etc/pam.d/sshd",
    "/var/spool/cron/crontabs/root",
    "/usr/lib/systemd/system/evil.service",
    "/etc/systemd/system/evil.service",
    "/root/.ssh/authorized_keys",
    f"{COMMAND_HOME}/.bash_aliases",
    f"{COMMAND_HOME}/.config/autostart/x.desktop",
    f"{COMMAND_HOME}/.bashrc",
    f"{COMMAND_HOME}/.zshrc",
)
BENIGN_SYSTEM_PROBES = (
    "/etc/hosts",
    "/etc/hostname",
    "/etc/nginx/nginx.conf",
    "/etc/apt/sources.list.d/x.list",
    "/etc/groups.txt",
    "/etc/passwords.md",
    "/tmp/group",
    "/var/lib/app/state.json",
    f"{COMMAND_HOME}/project/group",
)


def test_both_guards_import_one_list() -> None:
    assert vars(command_paths)["SYSTEM_FILES"] is SYSTEM_FILES
    assert vars(command_paths)["PERSISTENCE_PATHS"] is PERSISTENCE_PATHS
    rule = next(r for r in SENSITIVE_RULES if r.rule == "system-auth")
    assert rule.pattern is SYSTEM_FILES


@pytest.mark.parametrize("path", SYSTEM_PROBES + BENIGN_SYSTEM_PROBES)
def test_what_one_guard_protects_from_writes_the_other_does(path: str) -> None:
    command = analyze_command(f"echo x > {path}")
    file_tool = SecurityAudit(home=COMMAND_HOME).check(path, write=True)
    assert (command is not None) == (file_tool is not None), (command, file_tool)
    assert (command is not None) == (path in SYSTEM_PROBES)


@pytest.mark.parametrize(
    "path", ["/proc/self/cwd/../../../../etc/group", "../../../../etc/shadow", "../../etc/group"]
)
def test_a_climb_to_a_system_file_is_refused_by_both_guards(path: str) -> None:
    finding = analyze_command(f"echo 'x:x:0:' >> {path}")
    assert finding is not None
    assert finding.rule == "system-files"
    assert SecurityAudit().check(path, write=True) is not None


# -- the fast paths answer as the rules do ------------------------------------------------------


def _corpus_paths() -> list[str]:
    paths: list[str] = []
    for corpus in CORPORA:
        for line in corpus.read_text(encoding="utf-8").splitlines():
            row = json.loads(line) if line.strip() else {}
            value = row.get("path")
            for path in value if isinstance(value, list) else [value]:
                if isinstance(path, str) and path:
                    paths.append(normalize_path(path, home=HOME))
    return paths


def _probe_paths() -> list[str]:
    probes = set(_corpus_paths())
    probes |= {normalize_path(p, home=COMMAND_HOME) for p in SYSTEM_PROBES + BENIGN_SYSTEM_PROBES}
    for path in tuple(probes):
        parts = path.split("/")
        probes.update("/".join(parts[:k]) for k in range(1, len(parts)))
    return sorted(p for p in probes if p)


def test_the_union_of_the_rules_matches_exactly_when_a_rule_does() -> None:
    probes = _probe_paths()
    assert len(probes) > 300
    hits = 0
    for path in probes:
        expected = any(rule.pattern.search(path) for rule in SENSITIVE_RULES)
        assert any_rule(path) == expected, path
        hits += expected
    assert 0 < hits < len(probes)


def _store_by_every_name(path: str, home: str) -> object:
    """The store check as it was before the fast path: every well-known name tried."""
    normalized = normalize_path(path, home=home).rstrip("/")
    anywhere = matching_module._ANY_ENTRY
    parent = normalized.rpartition("/")[0]
    if not normalized or (parent and match_exact(f"{parent}/{anywhere}", write=False, home=home)):
        return None
    found = match_exact(f"{normalized}/{anywhere}", write=False, home=home)
    if found is not None:
        return found
    for name in matching_module._SENSITIVE_NAMES:
        inside = match_exact(f"{normalized}/{name}", write=False, home=home)
        nowhere = match_exact(f"{matching_module._NOWHERE}/{name}", write=False, home=home)
        if inside is not None and nowhere is None:
            return inside
    return None


STORE_PROBES = (
    "~",
    "~/.kube",
    "~/.docker",
    "~/.config",
    "~/.config/gh",
    "~/.config/git",
    "~/.gem",
    "~/.cargo",
    "~/.claude",
    "~/.mozilla/firefox/abcd.default-release",
    "/etc",
    "/private/etc",
    "/run",
    "/var/run",
    "/etc/kubernetes",
    "~/projects/old",
    "~/.cache/pip",
    "/home/other",
    "/root",
    "/root/.kube",
)


def test_the_store_check_answers_as_trying_every_name() -> None:
    probes = [*STORE_PROBES, *_probe_paths()]
    stores = 0
    for path in probes:
        expected = _store_by_every_name(path, HOME)
        assert match_sensitive_store(path, home=HOME) == expected, path
        stores += expected is not None
    assert stores >= 10


def test_the_entry_rules_match_an_entry_exactly_when_a_rule_does() -> None:
    entry_rules = matching_module._entry_rules()
    for path in [*_probe_paths(), "/home/u/.ssh", "/etc/sudoers.d", "/run/secrets"]:
        entry = f"{path}/{matching_module._ANY_ENTRY}"
        assert entry_rules(entry) == any_rule(entry), path


@pytest.mark.parametrize(
    ("alternative", "end", "expected"),
    [
        (r"(?:^|/)\.kube/config$", "/.kube", False),  # ends in config, never in .kube
        (r"(?:^|/)\.kube/config$", "/config", True),
        (r"(?:^|/)\.docker/config\.json$", "/config.json", True),
        (
            r"(?:^|/)\.docker/config\.json$",
            "/json",
            False,
        ),  # "\." is a dot, "config.json" is not "/json"
        (r"(?:^|/)\.ssh(?:/|$)", "/x", True),  # a group before the end: not judged
        (r"^(?:/private)?/etc/(?:passwd|shadow)-?$", "/x", True),  # a quantifier: not judged
        (r"\.(?:pem|key)$", "/x", True),
        (r"(?:^|/)id_\d$", "/x", True),  # "\d" is a class, not a literal d
        (r"(?:^|/)a\$", "/x", True),  # "\$" is a literal dollar sign, not the end
    ],
)
def test_may_end_with_drops_only_what_cannot_match(
    alternative: str, end: str, expected: bool
) -> None:
    assert may_end_with(alternative, end) is expected
