"""What goes into the onion besides your own handlers: the built-in guards and policies
(``builtins``), JSON-RPC process hooks (``process``) and Claude-Code-compatible command
hooks (``command_hooks``)."""
