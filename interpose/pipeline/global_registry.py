"""The process-wide registry (the seeds' global-registry semantics)."""

from __future__ import annotations

import threading

from .defaults import register_builtins
from .registry import Registry

__all__ = [
    "get_global_interceptor_registry",
    "initialize_global_interceptors",
    "reset_global_interceptors",
]

_lock = threading.Lock()
_registry: Registry | None = None


def initialize_global_interceptors() -> Registry:
    """Create the global registry with the built-in guards, once; return it.

    Idempotent: later calls return the same registry untouched.
    """
    global _registry
    with _lock:
        if _registry is None:
            registry = Registry()
            # installed by the package (interpose/__init__.py): a layer above this one
            register_builtins(registry)
            _registry = registry
        return _registry


def get_global_interceptor_registry() -> Registry | None:
    """The global registry, or None before ``initialize_global_interceptors()``."""
    return _registry


def reset_global_interceptors() -> None:
    """Forget the global registry (for tests)."""
    global _registry
    with _lock:
        _registry = None
