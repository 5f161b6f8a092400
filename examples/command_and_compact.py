"""The command stage (slash commands) and the compact stage (session compaction).

``command.before`` may rewrite a command's arguments or block it, like tool.before.
``session.compact`` may choose the messages to keep verbatim and either write the
summary itself or pass instructions to the summarizer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from interpose import (
    CommandBeforeInput,
    CommandBeforeOutput,
    CommandContext,
    CompactInput,
    CompactOutput,
    Pipeline,
)

pipe = Pipeline(builtins=False)


def deploy(args: dict[str, Any]) -> str:
    """The command: a fake deployment."""
    return f"deployed to {args['env']} (dry_run={args['dry_run']})"


def summarize(messages: list[Any], instructions: str) -> str:
    """The summarizer: a real one would ask an LLM.  Gets the messages not kept."""
    return f"{len(messages)} earlier messages, summarized ({instructions})"


@pipe.intercept("command.before", id="deploy-policy")
def deploy_policy(inp: CommandBeforeInput, out: CommandBeforeOutput) -> None:
    if inp.command != "deploy":
        return
    if out.args.get("env") == "prod":
        out.block = True
        out.block_reason = "prod deploys go through the release pipeline"
    out.args.setdefault("dry_run", True)


@pipe.middleware("command", id="command-log")
async def command_log(ctx: CommandContext, call_next: Callable[[], Awaitable[None]]) -> None:
    print(f"/{ctx.command} {ctx.args}")
    await call_next()
    assert ctx.result is not None
    print(f"  -> {ctx.result.status}: {ctx.result.output}")


@pipe.intercept("session.compact", id="keep-recent")
def keep_recent(inp: CompactInput, out: CompactOutput) -> None:
    out.messages = inp.messages[-2:]  # keep the last two messages verbatim
    out.instructions = "one line, keep file names"
    if inp.reason == "manual":
        out.summary = "(summary written by the interceptor)"  # the summarizer is skipped


async def main() -> None:
    async with pipe.turn(agent_id="ops") as turn:
        await turn.run_command("deploy", {"env": "staging"}, call=deploy)
        await turn.run_command("deploy", {"env": "prod"}, call=deploy)

        history = [f"message {i}" for i in range(1, 7)]
        for reason in ("context_full", "manual"):
            compacted = await turn.compact(history, call=summarize, reason=reason)
            print(f"compact ({reason}): keep={compacted.messages}")
            print(f"  summary={compacted.summary!r}")


if __name__ == "__main__":
    anyio.run(main)
