"""Bring your .claude/settings.json: Claude Code hooks in front of any agent, unchanged.

examples/claude_project/ is a project as Claude Code users set it up: a
.claude/settings.json whose hooks run scripts under .claude/hooks/ (a prompt context
injector, a Bash guard, a lock-file protector, a formatter after writes).  Its scripts
test ``tool_name == "Bash"`` and read ``tool_input.file_path``; interpose sends them
exactly that, whatever the agent calls its tools.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import anyio

from interpose import Pipeline
from interpose.cli import main as interpose_cli

PROJECT = Path(__file__).resolve().parent / "claude_project"
SETTINGS = PROJECT / ".claude" / "settings.json"


def run_shell(args: dict[str, Any]) -> str:
    """The agent's shell tool (pretend to run the command)."""
    return f"ran {args['command']}"


def write_file(args: dict[str, Any]) -> str:
    """The agent's write tool: interpose calls it write, with a path argument."""
    Path(args["path"]).write_text(args["content"])
    return f"wrote {Path(args['path']).name}"


async def main() -> None:
    pipe = Pipeline.from_config(SETTINGS)
    async with pipe.turn(agent_id="coder", session_key="s1") as turn:
        msg = await turn.message("fix the failing test")
        print(f"message: {msg.message!r}")
        for command in ("git push --force origin main", "pytest -x"):
            result = await turn.call_tool("bash", {"command": command}, call=run_shell)
            print(f"bash {command!r} -> {result.status}: {_shown(result.output)}")
        with tempfile.TemporaryDirectory() as scratch:
            for name, content in (("package-lock.json", "{}"), ("app.py", "x = 1   \n\n\n")):
                args = {"path": os.path.join(scratch, name), "content": content}
                result = await turn.call_tool("write", args, call=write_file)
                print(f"write {name} -> {result.status}: {_shown(result.output)}")
                if result.status == "ok":
                    print(f"  on disk: {_read(args['path'])!r}")
                    print(f"  additional_context: {result.details['additional_context']}")


def _read(path: str) -> str:
    return Path(path).read_text()


def _shown(output: Any) -> Any:
    return output["reason"] if isinstance(output, dict) else output


if __name__ == "__main__":
    # what `interpose check examples/claude_project/.claude/settings.json` prints
    interpose_cli(["check", os.path.relpath(SETTINGS)])
    print()
    anyio.run(main)
