"""Command hooks: a Claude Code hook script in front of an agent's tools.

``CommandHook`` runs a command for each tool event it matches, with the event as JSON on
stdin.  Exit 0 lets the call go on (a JSON object on stdout may decide more: block,
rewrite the arguments, ask a human, add context); exit 2 blocks it with stderr as the
reason; any other exit, or a timeout, is a failure that the hook's ``on_error`` handles.

Here one script, examples/hooks/check.sh, serves three events: PreToolUse (tool.before)
on exec, PermissionRequest (tool.approve) on exec and PostToolUse (tool.after) on the
file tools.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from interpose import ApprovalRequest, CommandHook, ConfigError, Pipeline

HERE = Path(__file__).resolve().parent  # the "project": hooks run here, paths are relative


def tool(args: dict[str, Any]) -> str:
    """The tool: pretend to run it."""
    return f"ran {args}"


async def human(request: ApprovalRequest, reason: str) -> bool:
    """Answers the hook's "ask" (a real one would prompt a person)."""
    print(f"  human asked about {request.args['command']!r} ({reason}): yes")
    return True


pipe = Pipeline(builtins=False, human_approval=human)
CHECK = "hooks/check.sh"  # relative to cwd, as a config file would name it
installed = [
    CommandHook(CHECK, cwd=HERE, allow=["exec"], timeout=10).install(pipe),
    CommandHook(CHECK, cwd=HERE, event="PermissionRequest", allow=["bash"]).install(pipe),
    CommandHook(CHECK, cwd=HERE, event="tool.after", allow=["group:fs"]).install(pipe),
]


async def main() -> None:
    for reg in installed:  # one script, three events: ids derived from the command
        print(f"{reg.id} on {reg.hook}")
    calls = [
        ("bash", {"command": "git push --force origin main"}),  # exit 2: blocked
        ("bash", {"command": "ls"}),  # updatedInput: the tool sees other arguments
        ("bash", {"command": "deploy staging"}),  # permissionDecision "ask": a human decides
        ("read", {"path": "gen/api.py"}),  # additionalContext: attached to the result
        ("web_fetch", {"url": "https://example.net"}),  # no hook matches: no process at all
    ]
    for name, args in calls:
        result = await pipe.call_tool(name, args, call=tool)
        print(f"{name} {args} -> {result.status}: {result.output}")
        if "additional_context" in result.details:
            print(f"  additional_context: {result.details['additional_context']}")
    try:
        CommandHook("hooks/missing.sh", cwd=HERE)
    except ConfigError as exc:  # a ValueError: a config file naming it fails to load
        print(f"ConfigError: {exc}".replace(str(HERE), "<examples>"))


if __name__ == "__main__":
    anyio.run(main)
