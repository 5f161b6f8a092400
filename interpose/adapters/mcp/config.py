"""The ``[mcp]`` config schema now lives in ``interpose.config.mcp`` (the config layer,
below the adapters); this path re-exports it."""

from ...config.mcp import (
    McpConfig,
    McpServerConfig,
    check_servers,
    describe_server,
    mcp_namespace,
    server_key,
)

__all__ = [
    "McpConfig",
    "McpServerConfig",
    "check_servers",
    "describe_server",
    "mcp_namespace",
    "server_key",
]
