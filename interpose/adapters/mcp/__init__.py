"""The MCP gateway: ``interpose mcp-proxy`` puts a pipeline in front of MCP servers.

``McpProxy`` (in ``interpose.adapters.mcp.proxy``) needs the ``mcp`` extra
(``pip install 'interpose[mcp]'``); the ``[mcp]`` config schema
(``interpose.adapters.mcp.config``) does not.  See docs/mcp.md.

The modules, from the client inward: ``serve`` (serving on stdio or streamable HTTP,
uvicorn, listening), ``front`` (the stdio fast lane and the HTTP front, typed against
the proxy's ``Gateway`` Protocol), ``proxy`` (``McpProxy``: the pipeline in front of the
upstreams, tool routing and naming), ``pathguard`` (the security audit's path rules on
MCP tools), ``upstream`` (``UpstreamSpec``, ``UpstreamError``, starting and supervising
one upstream server, the sessions), ``pipe`` / ``lines`` / ``rawhttp`` (the raw lanes),
``config`` (the ``[mcp]`` schema) and ``cli`` (``interpose mcp-proxy``'s arguments).
Imports point one way: proxy -> serve -> front -> upstream.
"""
