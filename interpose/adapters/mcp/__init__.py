"""The MCP gateway: ``interpose mcp-proxy`` puts a pipeline in front of MCP servers.

``McpProxy`` (in ``interpose.adapters.mcp.proxy``) needs the ``mcp`` extra
(``pip install 'interpose[mcp]'``); the ``[mcp]`` config schema
(``interpose.adapters.mcp.config``) does not.  See docs/mcp.md.
"""
