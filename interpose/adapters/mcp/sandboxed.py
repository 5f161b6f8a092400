"""``interpose mcp-proxy --sandbox``: every stdio server runs in the sandbox.

Each stdio server's command becomes the bubblewrap command line of ``[sandbox]``'s
policy (the defaults without the table), its working directory the project; a
filtering proxy per server serves its network when the policy allows any.  A
``tool.after`` hook on the server's tools reads its results for what the sandbox
refused (``EROFS`` and hidden-path errors), appends a ``[sandbox] ...`` line the model
reads, and reports each violation (bus event, span event).  Time and, as root, process
limits do not apply to a server (it runs as long as the proxy).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from ...config.mcp import McpServerConfig, mcp_namespace
from ...config.schema import SandboxConfig
from ...sandbox import Plan, Sandbox, Violation
from ...sandbox.bwrap import sandbox_env
from ...sandbox.executor import report
from ...sandbox.proxy import LOOPBACK_HOSTS, ProxyService
from ...sandbox.violations import describe, from_stderr

if TYPE_CHECKING:
    from ...config import Config
    from ...pipeline.payloads import ToolAfterInput, ToolAfterOutput
    from ...pipeline.pipeline import Pipeline

__all__ = ["sandbox_servers"]

log = logging.getLogger("interpose.mcp")


def sandbox_servers(pipe: Pipeline, config: Config, base_dir: Path) -> None:
    """Rewrite ``config.mcp.servers``' stdio servers to run in the sandbox.

    Raises:
        SandboxUnavailable: the sandbox cannot run here and the policy requires it.
        ValueError: ``[sandbox]`` holds a value the policy rejects.
    """
    from ...config._sandbox import sandbox_policy

    policy = sandbox_policy(config.sandbox or SandboxConfig())
    sandbox = Sandbox(policy)
    caps = sandbox.check()
    if caps.problems:  # required = false: said once, then run as configured
        log.warning("mcp-proxy --sandbox: NOT sandboxed: %s", "; ".join(caps.problems))
        return
    for name, server in list(config.mcp.servers.items()):
        if server.command is None:
            continue  # an HTTP server runs elsewhere: not ours to contain
        cwd = (base_dir / (server.cwd or ".")).resolve()
        plan = sandbox.plan(cwd)
        service = None
        if policy.network != "none":
            allowed = LOOPBACK_HOSTS if policy.network == "loopback" else policy.domains
            service = ProxyService(allowed, _reporter(pipe, name, server.command))
            pipe.add_service(service)
        argv = sandbox.argv(
            [server.command, *server.args],
            cwd=cwd,
            proxy_dir=service.directory if service is not None else None,
        )
        env = {**server.env, **_extra_env(plan, service is not None)}
        config.mcp.servers[name] = McpServerConfig(
            command=argv[0], args=argv[1:], env=env, cwd=str(cwd)
        )
        pipe.intercept(
            "tool.after",
            tools=f"^{mcp_namespace(name)}",
            id=f"sandbox:{name}",
            priority=-1000,  # last: what the model reads includes every other change
        )(_after(pipe, plan, server.command))


def _extra_env(plan: Plan, proxy: bool) -> dict[str, str]:
    """What the sandbox sets in a server's environment (``TMPDIR``, the proxy)."""
    env = sandbox_env(plan, {}, proxy=proxy)
    del env["HOME"]  # the SDK passes the proxy's own HOME on
    return env


def _reporter(pipe: Pipeline, name: str, command: str) -> Any:
    async def refused(violation: Violation) -> None:
        await report(pipe, (violation,), tool_name=mcp_namespace(name).rstrip("_"), command=command)

    return refused


def _after(pipe: Pipeline, plan: Plan, command: str) -> Any:
    async def sandbox_violations(inp: ToolAfterInput, out: ToolAfterOutput) -> None:
        output = out.result.output
        found = from_stderr(_text(output), plan)
        if not found:
            return
        await report(pipe, tuple(found), tool_name=inp.tool_name, command=command)
        line = {"type": "text", "text": describe(found)}
        if isinstance(output, dict) and isinstance(output.get("content"), list):
            output = {**output, "content": [*output["content"], line]}
        else:
            output = f"{output}\n{line['text']}"
        out.result = msgspec.structs.replace(out.result, output=output)

    return sandbox_violations


def _text(output: object) -> str:
    """The text of a tool result: a CallToolResult's text items, or the value."""
    if isinstance(output, dict) and isinstance(output.get("content"), list):
        items = output["content"]
        return "\n".join(i.get("text", "") for i in items if isinstance(i, dict))
    return output if isinstance(output, str) else ""
