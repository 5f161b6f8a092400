"""A pipeline built from a config file: examples/interpose.toml.

``Pipeline.from_config`` reads the file, checks it and builds the stack it describes:
the built-in guards, two policies and two Claude Code style command hooks (real shell
commands, run per call).  Then the example shows what an invalid file reports, and what
``interpose check`` and ``interpose run-hook-test`` print for this one.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import anyio

from interpose import ConfigError, Pipeline, ToolResult
from interpose.cli import main

HERE = Path(__file__).resolve().parent


def run_tool(args: dict[str, Any]) -> str:
    """Every tool of the example: says what it would have run."""
    return f"ran {args}"


def show(label: str, result: ToolResult) -> None:
    if result.status in ("blocked", "denied"):
        reason = result.output["reason"]
        print(f"  {label:<30} -> {result.status} by {result.details['decided_by']}: {reason}")
    else:
        print(f"  {label:<30} -> {result.status}")


async def calls() -> None:
    pipe = Pipeline.from_config(HERE / "interpose.toml")
    print("exec passes through:", [reg.id for reg in pipe.registry.get("tool.before", tool="exec")])
    for command in ("git push origin main", "git push --force", "rm -rf /"):
        show(f"exec {command}", await pipe.call_tool("exec", {"command": command}, call=run_tool))
    for args in ({"env": "prod"}, {"env": "prod", "ticket": "OPS-42"}):
        label = "deploy " + " ".join(f"{key}={value}" for key, value in args.items())
        show(label, await pipe.call_tool("deploy", args, call=run_tool))
    show("cron {}", await pipe.call_tool("cron", {}, call=run_tool))


def invalid_file() -> None:
    """A mistake in a file: the error names the field and what was expected."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "interpose.toml"
        path.write_text('[[hooks.commands]]\ncommand = "hooks/check.sh"\ntimeout_ms = "10s"\n')
        try:
            Pipeline.from_config(path)
        except ConfigError as exc:
            print("ConfigError:", str(exc).replace(tmp + os.sep, ""))


def command_line() -> None:
    """The same as `interpose check interpose.toml` and `interpose run-hook-test ...`
    run in examples/."""
    os.chdir(HERE)  # so that the file is named as a user in examples/ would name it
    main(["check", "interpose.toml"])
    print()
    args = '{"command": "git push --force"}'
    main(["run-hook-test", "interpose.toml", "--tool", "bash", "--args", args])


if __name__ == "__main__":
    anyio.run(calls)
    print()
    invalid_file()
    print()
    command_line()
