"""The ``[mcp]`` table of the config file now lives in ``interpose.config.mcp`` (the config
layer, which imports nothing from the adapters); its names stay importable from here."""

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
