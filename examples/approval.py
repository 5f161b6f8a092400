"""Approvers: allow, deny, or ask a human.

Approvers run on ``tool.approve`` after the before-interceptors, with the final
arguments.  Every approver must allow.  ``Approval.ask`` hands the decision to the
pipeline's ``human_approval`` handler (sync or async); no handler, a handler that
raises, or no answer within ``approval_timeout`` means deny.  An approver that does not
answer in time is a deny; one that raises fails closed, like any interceptor: blocked.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import anyio

from interpose import Approval, ApprovalRequest, Pipeline

# failures (here: the late approver) are logged as warnings on the "interpose" logger
logging.basicConfig(stream=sys.stdout, format="log: %(message)s")


def run_exec(args: dict[str, Any]) -> str:
    """The tool: pretend to run a shell command."""
    return f"ran {args['command']!r}"


async def human(request: ApprovalRequest, reason: str) -> bool | Approval:
    """The human-approval handler: a real one would prompt a person and await the answer."""
    print(f"  human asked about {request.tool_name} {request.args} ({reason})")
    if "prod" in request.args["command"]:
        return Approval.deny("not today")
    return True  # True / None = allow, False = deny


pipe = Pipeline(builtins=False, human_approval=human, approval_timeout=0.2)


@pipe.approver(tools="group:runtime", priority=10, id="policy")
def policy(req: ApprovalRequest) -> Approval | None:
    command: str = req.args["command"]
    if command.startswith("sudo "):
        return Approval.deny("no sudo")
    if command.startswith("deploy"):
        return Approval.ask("deployments need a human")
    return None  # no opinion = allow


@pipe.approver(tools=["exec"], priority=5, id="ticket-check")
def ticket_check(req: ApprovalRequest) -> bool:
    if req.args["command"].startswith("migrate"):
        return bool(req.args["ticket"])  # a bug: KeyError when the call carries no ticket
    return True


@pipe.approver(tools=["exec"], id="slow-reviewer")
async def slow_reviewer(req: ApprovalRequest) -> bool:
    if "reindex" in req.args["command"]:
        await anyio.sleep(10)  # cancelled after approval_timeout: a late answer is a deny
    return True


def no_terminal(request: ApprovalRequest, reason: str) -> bool:
    """A sync human-approval handler (allowed too) that cannot ask anyone."""
    raise OSError("no terminal to ask on")


async def run(command: str, p: Pipeline = pipe) -> None:
    print(f"exec {command!r}")
    result = await p.call_tool("exec", {"command": command}, call=run_exec)
    print(f"  -> {result.status}: {result.output}")


async def main() -> None:
    await run("ls")  # both approvers allow
    await run("sudo reboot")  # policy denies
    await run("deploy staging")  # policy asks, the human allows
    await run("deploy prod")  # policy asks, the human denies
    await run("reindex")  # slow-reviewer misses approval_timeout: denied
    await run("migrate db")  # ticket-check raises: blocked (fail closed)
    no_human = Pipeline(registry=pipe.registry)  # same approvers, no human_approval handler
    await run("deploy staging", no_human)
    broken_human = Pipeline(registry=pipe.registry, human_approval=no_terminal)
    await run("deploy staging", broken_human)  # the handler raises: denied
    print("failures counted:", pipe.stats.failures)
    print("timeouts counted:", pipe.stats.timeouts)


if __name__ == "__main__":
    anyio.run(main)
