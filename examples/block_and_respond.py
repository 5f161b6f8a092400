"""Block a tool call, or answer it without running the tool (respond).

Shows the result the agent gets in each case, that tool.after still runs on a blocked
call, and that a respond from an *untrusted* interceptor still goes through the
approvers while a *trusted* one skips them.  Every refused or answered call names its
decider in ``details["decided_by"]``: a responder is named here because a trusted
responder sits ahead of the approver, so the pipeline tracks who responded.
"""

from __future__ import annotations

from typing import Any

import anyio

from interpose import (
    Approval,
    ApprovalRequest,
    Pipeline,
    ToolAfterInput,
    ToolAfterOutput,
    ToolBeforeInput,
    ToolBeforeOutput,
    ToolResult,
)

pipe = Pipeline(builtins=False)
tool_runs: list[str] = []


def fetch(args: dict[str, Any]) -> str:
    """The tool: a fake web fetch that records that it ran."""
    tool_runs.append(args["url"])
    return f"<html from {args['url']}>"


# -- block ---------------------------------------------------------------------------------
@pipe.intercept("tool.before", tools=["web_fetch"], priority=100, id="no-internal-hosts")
def no_internal_hosts(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if "internal" in out.args["url"]:
        out.block = True
        out.block_reason = "internal hosts are off limits"


# -- respond: answer from a cache instead of fetching -----------------------------------
CACHE = {"https://example.com/": "<cached html>"}


@pipe.intercept("tool.before", tools=["web_fetch"], priority=50, id="cache")
def cache(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if out.args["url"] in CACHE:
        out.result = CACHE[out.args["url"]]  # any value; wrapped as ToolResult.output


# a trusted responder: its answers skip the approvers
@pipe.intercept("tool.before", tools=["web_fetch"], priority=40, id="robots", trusted=True)
def robots(inp: ToolBeforeInput, out: ToolBeforeOutput) -> None:
    if out.args["url"].endswith("/robots.txt"):
        out.result = ToolResult(output="User-agent: *\nAllow: /")


# -- an approver that refuses one site --------------------------------------------------
@pipe.approver(tools=["web_fetch"], id="no-example-org")
def no_example_org(req: ApprovalRequest) -> Approval:
    if "example.org" in req.args["url"]:
        return Approval.deny("example.org is not approved")
    return Approval.allow()


# -- tool.after runs for every outcome -----------------------------------------------------
@pipe.intercept("tool.after", tools=["web_fetch"], id="report")
def report(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
    print(f"  tool.after: status={inp.status} blocked={inp.blocked} is_error={inp.is_error}")


async def call(url: str) -> None:
    print(f"fetch {url}")
    result = await pipe.call_tool("web_fetch", {"url": url}, call=fetch)
    decided_by = result.details.get("decided_by", "-")  # "-": the tool ran, nobody decided
    print(f"  -> {result.status}: {result.output!r} (decided_by={decided_by})")


async def main() -> None:
    await call("https://example.net/")  # runs
    await call("https://internal.example.net/")  # blocked
    await call("https://example.com/")  # responded from the cache
    await call("https://example.org/robots.txt")  # trusted respond: approver skipped
    CACHE["https://example.org/"] = "<stale cached html>"
    await call("https://example.org/")  # untrusted respond: the approver still denies
    print("the tool ran for:", tool_runs)


if __name__ == "__main__":
    anyio.run(main)
