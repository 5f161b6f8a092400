"""Adapters that put interpose in front of agents it did not write.

``interpose.adapters.mcp``: the MCP gateway (``interpose mcp-proxy``, the ``mcp`` extra).
``interpose.adapters.langchain``: ``InterposeMiddleware``, a LangChain v1 ``AgentMiddleware``
(the ``langchain`` extra).
``interpose.adapters.openai_agents``: the OpenAI Agents SDK (``InterposeRunner``, the
``openai-agents`` extra).
"""
