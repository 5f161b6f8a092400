"""What kind of callable a handler or an observer is (a leaf: imports nothing of
interpose), shared by the bus, which decides once per subscriber whether to await it,
and the pipeline, which decides once per registration."""

from __future__ import annotations

import inspect

__all__ = ["is_async_callable"]


def is_async_callable(fn: object) -> bool:
    """True if calling ``fn`` returns a coroutine (async def, partial of one, async __call__)."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 - we want the bound __call__
    return call is not None and inspect.iscoroutinefunction(call)
