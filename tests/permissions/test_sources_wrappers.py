"""A Codex ``prefix_rule`` and a Gemini ``commandPrefix`` rule hold through every wrapper
class the shell model knows, and their allow rules cover a line only when every command
in it is covered -- the bypasses those projects' trackers report for string matching."""

from __future__ import annotations

import pytest

from interpose.permissions.codex import codex_rules
from interpose.permissions.engine import Permissions
from interpose.permissions.gemini import gemini_rules
from interpose.permissions.model import Decision
from interpose.permissions.view import view_of

CODEX = """\
prefix_rule(pattern=["git", "push"], decision="forbidden", justification="CI pushes")
prefix_rule(pattern=["git", ["status", "log"]])
prefix_rule(pattern=["ls"])
"""

GEMINI = """\
[[rule]]
toolName = "run_shell_command"
commandPrefix = "git push"
decision = "deny"
priority = 500

[[rule]]
toolName = "run_shell_command"
commandPrefix = ["git status", "git log", "ls"]
decision = "allow"
priority = 100
"""

# each spelling runs `git push` (the first word of a line is never the program here)
PUSHES = [
    "cd repo && git push",
    "true || git push",
    "true; git push",
    "ls | git push",
    "ls |& git push",
    "git push &",
    "(git push)",
    "{ git push; }",
    "echo $(git push)",
    "echo `git push`",
    "cat <(git push)",
    "bash -c 'git push'",
    "bash -lc 'cd x && git push origin main'",
    'sh -c "git push"',
    "zsh -c 'git push'",
    "eval 'git push'",
    "sudo git push",
    "sudo -u deploy git push",
    "doas git push",
    "env GIT_TRACE=1 git push",
    "env -i git push",
    "GIT_TRACE=1 git push",
    "nice -n 5 git push",
    "timeout 10 git push",
    "nohup git push",
    "command git push",
    "exec git push",
    "time git push",
    "stdbuf -o0 git push",
    "/usr/bin/git push",
    "\\git push",
    "g'i't push",
    '"git" "push"',
    "X=git; $X push",
    "echo origin | xargs git push",
    "find . -maxdepth 0 -exec git push \\;",
    "if true; then git push; fi",
    "for r in a b; do git push $r; done",
    "while false; do :; done; git push",
    "f() { git push; }; f",
    "alias g=git; g push",
    "su -c 'git push'",
    "ssh host 'git push'",
    "watch git push",
    "printf 'git push' | bash",
    'sh <<< "git push"',
]

# lines an allow must not cover: one command in them is allowed by no rule
NOT_COVERED = [
    "git status && make",
    "ls | sh",
    "git log; curl https://x.example",
    "ls $(whoami)",
    "$CMD status",
    "git status && $(cat cmd)",
]


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Permissions]:
    root = tmp_path_factory.mktemp("sources")
    (root / "default.rules").write_text(CODEX)
    (root / "policy.toml").write_text(GEMINI)
    return {
        "codex": Permissions(codex_rules(root / "default.rules")),
        "gemini": Permissions(gemini_rules(root / "policy.toml")),
    }


def decide(permissions: Permissions, command: str) -> Decision | None:
    view = view_of("exec", {"command": command}, cwd="/srv/project", home="/home/me")
    return permissions.judge(view).decision


@pytest.mark.parametrize("source", ["codex", "gemini"])
@pytest.mark.parametrize("command", PUSHES)
def test_a_deny_holds_through_every_wrapper_class(
    sources: dict[str, Permissions], source: str, command: str
) -> None:
    assert decide(sources[source], command) == "deny", command


@pytest.mark.parametrize("source", ["codex", "gemini"])
@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git status && ls -la",
        "ls | git log --oneline",
        "timeout 5 git status",
        "nice git log",
    ],
)
def test_allow_covers_lines_whose_every_command_is_allowed(
    sources: dict[str, Permissions], source: str, command: str
) -> None:
    assert decide(sources[source], command) == "allow", command


@pytest.mark.parametrize("source", ["codex", "gemini"])
@pytest.mark.parametrize("command", NOT_COVERED)
def test_allow_never_covers_a_line_with_an_unallowed_command(
    sources: dict[str, Permissions], source: str, command: str
) -> None:
    assert decide(sources[source], command) is None, command


def test_the_justification_reaches_the_reason(sources: dict[str, Permissions]) -> None:
    view = view_of("exec", {"command": "sudo git push"}, cwd="/p", home="/h")
    reason = sources["codex"].judge(view).reason
    assert reason.endswith("on 'git push': CI pushes"), reason
