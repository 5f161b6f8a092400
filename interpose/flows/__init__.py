"""Flows: what the agent read decides what it may send (docs/flows.md).

``FlowPolicy(FlowRules(...)).install(pipe)`` labels each session with the untrusted
sources and secret files its tools read (with provenance: which tool, which call), and
judges every sink call (a tool that sends, pays, writes outside the project, runs a
networked command...) by rule: a value first seen in an untrusted result and never in
the user's messages or a trusted result is flagged, a secret going out is blocked, and
after untrusted input a sink asks (by default).  ``[flows]`` in the config file.
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
