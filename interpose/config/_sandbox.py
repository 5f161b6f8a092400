"""The builder's step for ``[sandbox]``: the policy checked, the ``exec`` executor
installed, what the sandbox cannot apply here noted."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._builder import BuilderBase, Built

if TYPE_CHECKING:
    from ..pipeline.pipeline import Pipeline
    from ..sandbox import SandboxPolicy
    from .schema import SandboxConfig

__all__ = ["SandboxSteps", "sandbox_policy"]


def sandbox_policy(table: SandboxConfig) -> SandboxPolicy:
    """The policy of a ``[sandbox]`` table.

    Raises:
        ValueError: a value the policy rejects (the message says which).
    """
    from ..sandbox import DEFAULT_HIDDEN, Limits, SandboxPolicy

    network = table.network
    if isinstance(network, str) and network not in ("none", "loopback"):
        raise ValueError(f"network: expected none, loopback or a list of domains, got {network!r}")
    limits = Limits(
        time=table.timeout_ms / 1000 or None,
        memory=table.memory_mb << 20 or None,
        processes=table.processes or None,
    )
    return SandboxPolicy(
        writable=tuple(table.writable),
        readable=tuple(table.readable),
        hidden=DEFAULT_HIDDEN + tuple(table.hidden),
        network="domains" if isinstance(network, list) else network,  # type: ignore[arg-type]
        domains=tuple(network) if isinstance(network, list) else (),
        limits=limits,
        required=table.required,
    )


class SandboxSteps(BuilderBase):
    """Checks ``[sandbox]`` and installs ``ExecTool`` as the ``exec`` executor."""

    def sandbox(self, pipe: Pipeline, built: Built, table: SandboxConfig | None) -> None:
        from ..sandbox import Sandbox
        from ..sandbox.executor import ExecTool

        if table is None:
            return
        try:
            policy = sandbox_policy(table)
        except ValueError as exc:
            self.fail("sandbox", str(exc))
        project = (self.base_dir / Path(table.project).expanduser()).resolve()
        if not project.is_dir():
            self.fail("sandbox.project", f"{project} is not a directory")
        sandbox = Sandbox(policy)
        caps = sandbox.capabilities()
        network = ", ".join(policy.domains) if policy.domains else policy.network
        built.sandbox = (
            f"exec runs in bubblewrap in {project} (writable: {', '.join(policy.writable)}; "
            f"network: {network}; {'required' if policy.required else 'optional'})"
            + ("" if table.enabled else ", disabled")
        )
        built.notes += [f"sandbox: {p}" for p in caps.problems + caps.notes]
        if table.enabled:
            ExecTool(sandbox, cwd=project).install(pipe)
