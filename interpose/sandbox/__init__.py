"""Contain what no guard can judge: run commands and MCP servers under bubblewrap.

``Sandbox(SandboxPolicy(...)).run(command)`` runs a command with the root file system
read-only, writable roots, sensitive paths hidden, its own network namespace (nothing,
the host's loopback or allowed domains through a filtering proxy), no capabilities, its
own PID namespace and limits; ``SandboxResult.violations`` says what was refused.
``ExecTool`` is the built-in executor of the ``exec`` tool.  Linux only (docs/sandbox.md).
"""

from ..errors import SandboxUnavailable
from .executor import ExecTool
from .plan import Plan, resolve
from .policy import DEFAULT_HIDDEN, Limits, NetworkMode, SandboxPolicy
from .probe import Capabilities, probe
from .runner import Sandbox, SandboxResult
from .violations import Violation

__all__ = [
    "Capabilities",
    "DEFAULT_HIDDEN",
    "ExecTool",
    "Limits",
    "NetworkMode",
    "Plan",
    "Sandbox",
    "SandboxPolicy",
    "SandboxResult",
    "SandboxUnavailable",
    "Violation",
    "probe",
    "resolve",
]
