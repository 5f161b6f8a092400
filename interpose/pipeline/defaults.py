"""What a higher layer plugs into the pipeline: the built-in guards, the config builder.

The pipeline layer imports nothing from the builtins or the config layer above it.
``interpose/__init__.py`` installs both here when the package is imported, so
``Pipeline()`` still registers the built-in guards and ``Pipeline.from_config`` still
builds from a file, while the imports keep pointing down.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from .registry import Registry

__all__ = ["build_from_config", "install", "register_builtins"]

_builtins: Callable[[Registry], Any] | None = None
_from_config: Callable[[str | os.PathLike[str]], Any] | None = None


def install(
    *,
    builtins: Callable[[Registry], Any] | None = None,
    from_config: Callable[[str | os.PathLike[str]], Any] | None = None,
) -> None:
    """Set the function that registers the built-in guards in a registry, and the one
    that builds a pipeline from a config file (each when given)."""
    global _builtins, _from_config
    if builtins is not None:
        _builtins = builtins
    if from_config is not None:
        _from_config = from_config


def register_builtins(registry: Registry) -> None:
    """Register the built-in guards in ``registry`` (nothing when none are installed)."""
    if _builtins is not None:
        _builtins(registry)


def build_from_config(path: str | os.PathLike[str]) -> Any:
    """The pipeline the config file ``path`` describes.

    Raises:
        RuntimeError: no config builder is installed (``interpose`` installs it).
        ConfigError: the file is invalid.
    """
    if _from_config is None:
        raise RuntimeError("no config builder installed: import interpose first")
    return _from_config(path)
