"""What several policy builtins share: argument checks that raise ``ConfigError`` naming
the bad argument, the fixed-size key of a call (tool and canonical JSON arguments) and
detached copies of stored results."""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Mapping
from typing import Any

import msgspec

from ....errors import ConfigError
from ._base import Clock

__all__ = [
    "args_digest",
    "canonical_encoder",
    "check_clock",
    "check_id",
    "check_priority",
    "count_at_least",
    "detached",
    "positive",
]


def check_id(id: object) -> str:
    if not isinstance(id, str) or not id:
        raise ConfigError(f"id must be a non-empty str, got {id!r}")
    return id


def check_priority(priority: object) -> int:
    if not isinstance(priority, int) or isinstance(priority, bool):
        raise ConfigError(f"priority must be an int, got {priority!r}")
    return priority


def positive(name: str, value: object) -> float:
    """``value`` as a float when it is a finite number > 0; else ConfigError."""
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ConfigError(f"{name} must be a positive number, got {value!r}")
    return float(value)


def count_at_least(name: str, value: object, minimum: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def check_clock(clock: object) -> Clock:
    if not callable(clock):
        raise ConfigError(f"clock must be a callable returning seconds, got {clock!r}")
    return clock


def args_digest(encoder: msgspec.json.Encoder, tool: str, args: Mapping[str, Any]) -> bytes:
    """A fixed-size key for (tool, args): a hash of the tool name and the arguments as
    canonical JSON (keys sorted at every level; objects JSON cannot encode by their
    ``repr``).  Hashing keeps the stores small however large the arguments are."""
    try:
        text = encoder.encode(args)
    except (TypeError, ValueError, msgspec.EncodeError):  # e.g. keys of mixed types
        text = repr(sorted(args.items(), key=lambda kv: repr(kv[0]))).encode()
    return hashlib.blake2b(tool.encode() + b"\0" + text, digest_size=16).digest()


def canonical_encoder() -> msgspec.json.Encoder:
    return msgspec.json.Encoder(order="sorted", enc_hook=repr)


_IMMUTABLE = (str, bytes, int, float, bool, type(None))


def detached(value: Any) -> Any:
    """``value`` itself when it cannot change, else a deep copy (cached results must not
    share mutable objects with what later hooks or the agent might modify)."""
    if isinstance(value, _IMMUTABLE):
        return value
    if type(value) is dict and not value:  # the usual details: skip deepcopy's machinery
        return {}
    return copy.deepcopy(value)
