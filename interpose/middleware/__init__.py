"""What goes into the onion besides your own handlers: the built-in guards and policies
(``builtins``).  ``process``, ``command_hooks`` and ``claude_code`` are the documented
import paths of the out-of-process hooks (JSON-RPC process hooks, Claude-Code-compatible
command hooks), whose code lives in ``interpose.external``."""
