"""Source locations as people read them (a leaf: imports nothing of interpose), shared
by the pipeline's failure reports and the logging observer."""

from __future__ import annotations

import os

__all__ = ["relative_location"]


def relative_location(location: str) -> str:
    """``file:line`` with the file relative to the working directory when it is under
    it, for lines people read (events keep the path as the code object has it)."""
    try:
        here = os.getcwd()
    except OSError:  # the working directory was removed
        return location
    prefix = here.rstrip(os.sep) + os.sep
    return location[len(prefix) :] if location.startswith(prefix) else location
