"""Flows: what the agent read decides what it may send (docs/flows.md).

``FlowPolicy(FlowRules(...)).install(pipe)`` labels each session with the untrusted
sources and secret files its tools read (with provenance: which tool, which call), and
judges every sink call (a tool that sends, pays, writes outside the project, runs a
networked command...) by rule: a value an instruction inside an untrusted result names
(and the user's messages do not) is flagged, a secret going out is blocked, and after
untrusted input a sink the user's messages asked for runs while one they did not ask for
asks (by default); a request of a URL such an instruction named is flagged too.
``[flows]`` in the config file.
"""

from .classify import Classifier, Role
from .model import (
    SOURCE_KINDS,
    FlowRules,
    Origin,
    SecretMatchLike,
    SecretScanner,
    SinkAction,
    ToolInfo,
)
from .policy import FLOWS_PRIORITY, FlowPolicy

__all__ = [
    "Classifier",
    "FLOWS_PRIORITY",
    "FlowPolicy",
    "FlowRules",
    "Origin",
    "Role",
    "SOURCE_KINDS",
    "SecretMatchLike",
    "SecretScanner",
    "SinkAction",
    "ToolInfo",
]
