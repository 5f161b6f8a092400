"""A small reference agent: the loop, a scripted model and real tools for the demo.

``Agent`` runs each user message as one pipeline turn (message → params → LLM ↔ tools);
``ScriptedModel`` plays a fixed script so sessions are reproducible; ``Toolbox`` holds
``exec``, ``read`` and ``write`` confined to a scratch directory.  ``interpose demo``
(``interpose.agent.demo``) puts them together.
"""

from __future__ import annotations

from .loop import Agent, AgentRun, ToolRecord
from .model import Model, ScriptedModel, last_tool_result, reply, tool_use
from .tools import Toolbox

__all__ = [
    "Agent",
    "AgentRun",
    "Model",
    "ScriptedModel",
    "ToolRecord",
    "Toolbox",
    "last_tool_result",
    "reply",
    "tool_use",
]
