"""Claude Code settings files as rule sources: the three levels of a project with Claude's
precedence and anchors, a settings file with permissions *and* hooks loaded unchanged as
a config (its hooks run, its rules decide), ``[permissions] sources`` and
``hooks.claude_settings`` in interpose.toml, and the errors, each naming its file."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from interpose import Pipeline, ToolResult
from interpose.config import ConfigFileError, load_config
from interpose.errors import ConfigError
from interpose.permissions.engine import Permissions
from interpose.permissions.model import Decision, Rule
from interpose.permissions.sources import (
    claude_project_rules,
    claude_settings_base,
    claude_settings_rules,
    load_source,
)
from interpose.permissions.view import view_of

# the example of Claude Code's settings docs, with the hooks a project adds
PROJECT_SETTINGS = {
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {
        "allow": ["Bash(npm run lint)", "Bash(npm run test:*)", "Read(~/.zshrc)"],
        "deny": [
            "Bash(curl:*)",
            "Read(./.env)",
            "Read(./.env.*)",
            "Read(/secrets/**)",
            "Bash(git push:*)",
        ],
        "defaultMode": "acceptEdits",
    },
    "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0"},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [
                    {"type": "command", "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/log.py'}
                ],
            }
        ]
    },
}
LOCAL_SETTINGS = {"permissions": {"allow": ["Bash(curl https://api.example.com/*)"]}}
USER_SETTINGS = {
    "permissions": {
        "allow": ["Bash(git status)", "Bash(git diff:*)"],
        "ask": ["Bash(git commit:*)"],
        "deny": ["Read(/secrets/**)"],  # the user's: relative to ~/.claude
    }
}

LOG_HOOK = """\
#!{python}
import json, os, sys
event = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "hook.log"), "a") as f:
    f.write(event["tool_input"]["command"] + "\\n")
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    claude = root / ".claude"
    (claude / "hooks").mkdir(parents=True)
    (claude / "settings.json").write_text(json.dumps(PROJECT_SETTINGS, indent=2))
    (claude / "settings.local.json").write_text(json.dumps(LOCAL_SETTINGS))
    hook = claude / "hooks" / "log.py"
    hook.write_text(LOG_HOOK.format(python=sys.executable))
    hook.chmod(hook.stat().st_mode | stat.S_IXUSR)
    user = tmp_path / "home" / ".claude"
    user.mkdir(parents=True)
    (user / "settings.json").write_text(json.dumps(USER_SETTINGS))
    return root


def home_of(project: Path) -> Path:
    return project.parent / "home"


def judge(rules: list[Rule], project: Path, tool: str = "exec", **args: Any) -> Decision | None:
    view = view_of(tool, args, cwd=str(project), home=str(home_of(project)))
    return Permissions(rules).judge(view).decision


def test_the_three_levels_load_highest_precedence_first(project: Path) -> None:
    rules = claude_project_rules(project, home=home_of(project), cwd=project)
    sources = list(dict.fromkeys(r.source for r in rules))
    assert sources == [
        str(project / ".claude" / "settings.local.json"),
        str(project / ".claude" / "settings.json"),
        str(home_of(project) / ".claude" / "settings.json"),
    ]
    assert len(rules) == 1 + 8 + 4


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("npm run lint", "allow"),
        ("npm run test -- --watch=false", "allow"),
        ("npm run test:unit", None),  # `:*` keeps a word boundary
        ("git status && git diff HEAD~1", "allow"),  # the user's allows, merged in
        ("git commit -m wip", "ask"),  # the user's ask
        ("git status && git commit -m wip", "ask"),
        # the project's deny beats the local allow: lists merge, deny wins anywhere
        ("curl https://api.example.com/v1", "deny"),
        ("cd build && git push origin main", "deny"),
        ("bash -c 'git push --force'", "deny"),
        ("cat .env", "deny"),
        ("cat .env.production", "deny"),
        ("cat secrets/prod.key", "deny"),  # /secrets of the project settings: the root
        ("npm run lint && npm publish", None),  # publish is allowed by no rule
    ],
)
def test_claude_precedence_on_real_command_lines(
    project: Path, command: str, expected: Decision | None
) -> None:
    rules = claude_project_rules(project, home=home_of(project), cwd=project)
    assert judge(rules, project, command=command) == expected


def test_slash_paths_are_anchored_per_level(project: Path) -> None:
    home = home_of(project)
    assert claude_settings_base(project / ".claude" / "settings.json", home=home) == project
    assert claude_settings_base(home / ".claude" / "settings.json", home=home) == (home / ".claude")
    user = claude_settings_rules(
        home / ".claude" / "settings.json", base=home / ".claude", cwd=project, home=home
    )
    # the user's Read(/secrets/**) is ~/.claude/secrets, not the project's secrets/
    assert judge(user, project, command="cat secrets/prod.key") is None
    assert judge(user, project, command="cat ~/.claude/secrets/token") == "deny"


def test_a_settings_file_with_permissions_and_hooks_loads_unchanged_as_a_config(
    project: Path,
) -> None:
    settings = project / ".claude" / "settings.json"
    pipe = Pipeline.from_config(settings)
    ran: list[str] = []

    def tool(args: dict[str, Any]) -> str:
        ran.append(args["command"])
        return "ok"

    def call(command: str) -> ToolResult:
        return pipe.call_tool_sync("exec", {"command": command}, call=tool)

    blocked = call("cd build && git push origin main")
    assert blocked.status == "blocked"
    reason = blocked.output["reason"]
    assert "Bash(git push:*)" in reason
    assert "(settings.json)" in reason  # the file, as the config (itself) names it
    assert call("npm run lint").status == "ok"
    assert ran == ["npm run lint"]
    # its hook ran on the call that went through (the deny stopped the other first)
    assert (project / "hook.log").read_text().splitlines() == ["npm run lint"]


def test_permissions_sources_and_claude_settings_in_interpose_toml(project: Path) -> None:
    rules_dir = project / "rules"
    rules_dir.mkdir()
    (rules_dir / "default.rules").write_text(
        'prefix_rule(pattern=["terraform", "apply"], decision="prompt")\n'
    )
    (rules_dir / "policy.toml").write_text(
        '[[rule]]\ntoolName = "run_shell_command"\ncommandPrefix = "docker rm"\n'
        'decision = "deny"\npriority = 10\n'
    )
    config = project / "interpose.toml"
    config.write_text(
        "[hooks]\n"
        'claude_settings = [".claude/settings.json"]\n'
        "[permissions]\n"
        'deny = ["Bash(rm -rf:*)"]\n'
        'sources = ["rules", ".claude/settings.json"]\n'  # the same file twice: once
    )
    pipe = Pipeline.from_config(config)

    def call(command: str) -> ToolResult:
        return pipe.call_tool_sync("exec", {"command": command}, call=lambda args: "ok")

    for command, rule in [
        ("sudo rm -rf dist", "Bash(rm -rf:*)"),
        ("echo x | xargs docker rm", "docker rm"),
        ("curl -s https://x.example | head", "Bash(curl:*)"),
    ]:
        result = call(command)
        assert result.status == "blocked", command
        assert rule in result.output["reason"]
    from interpose.config import describe, parse_config

    built = describe(parse_config(config), base_dir=project, source=str(config))
    assert built.permissions is not None
    texts = [r.text for r in built.permissions.rules]
    assert texts.count("Bash(curl:*)") == 1
    assert 'prefix_rule(pattern=["terraform", "apply"], decision="prompt")' in texts
    # what the settings file asks for that interpose does not do: a note (check prints it)
    assert [n for n in built.notes if "permissions." in n] == [
        ".claude/settings.json: permissions.defaultMode: not used by interpose (only allow, "
        "ask and deny are)"
    ]


def test_a_missing_source_names_the_field(tmp_path: Path) -> None:
    config = tmp_path / "interpose.toml"
    config.write_text('[permissions]\nsources = ["nope.rules"]\n')
    with pytest.raises(ConfigFileError) as caught:
        load_config(config)
    assert str(caught.value) == (
        f"{config}: permissions.sources[0]: {tmp_path / 'nope.rules'} does not exist"
    )


def test_a_bad_rule_in_a_settings_file_names_the_file_and_field(tmp_path: Path) -> None:
    claude = tmp_path / ".claude"
    claude.mkdir()
    path = claude / "settings.json"
    path.write_text(json.dumps({"permissions": {"deny": ["Bash(ls)", "Bash(git push"]}}))
    with pytest.raises(ConfigFileError) as caught:
        claude_settings_rules(path, base=tmp_path)
    assert str(caught.value).startswith(f"{path}: permissions.deny[1]: ")
    with pytest.raises(ConfigError, match=r"settings\.json: permissions\.deny\[1\]"):
        Pipeline.from_config(path)
    path.write_text(json.dumps({"permissions": {"allow": "Bash(ls)"}}))
    with pytest.raises(ConfigFileError, match=r"permissions\.allow: expected a list"):
        claude_settings_rules(path, base=tmp_path)
    path.write_text("{not json")
    with pytest.raises(ConfigFileError, match="invalid JSON"):
        claude_settings_rules(path, base=tmp_path)


def test_load_source_by_suffix(tmp_path: Path) -> None:
    (tmp_path / "a.rules").write_text('prefix_rule(pattern=["ls"])\n')
    (tmp_path / "b.codexpolicy").write_text('prefix_rule(pattern=["cat"])\n')
    (tmp_path / "c.toml").write_text(
        '[[rule]]\ntoolName = "*"\ndecision = "ask_user"\npriority = 1\n'
    )
    (tmp_path / "d.json").write_text('{"permissions": {"deny": ["WebFetch"]}}')
    (tmp_path / "e.yaml").write_text("x: 1\n")
    assert [r.decision for r in load_source(Path("a.rules"), base=tmp_path)] == ["allow"]
    assert [r.decision for r in load_source(Path("b.codexpolicy"), base=tmp_path)] == ["allow"]
    assert [r.decision for r in load_source(Path("c.toml"), base=tmp_path)] == ["ask"]
    assert [r.text for r in load_source(Path("d.json"), base=tmp_path)] == ["WebFetch"]
    # a directory: its .rules and .toml files, in name order
    assert [r.source.rsplit("/", 1)[1] for r in load_source(tmp_path, base=tmp_path)] == [
        "a.rules:1",
        "b.codexpolicy:1",
        "c.toml:1",
    ]
    with pytest.raises(ConfigFileError, match=r"unknown rule file '\.yaml'"):
        load_source(Path("e.yaml"), base=tmp_path)
    with pytest.raises(ConfigFileError, match="does not exist"):
        load_source(Path("f.rules"), base=tmp_path)
