"""Registrations and the registry that orders them.

Order is settled here, once, when something registers: every list is kept sorted by
(priority descending, registration order), matchers are compiled, handler arity and
sync/async nature are inspected.  ``Registry.version`` changes on every mutation so that
compiled chains know when to rebuild.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .._callables import is_async_callable
from .._registrations import (
    Handler,
    Interceptor,
    Middleware,
    Registration,
)
from ..errors import RegistrationError
from .hooks import (
    HOOKS,
    MIDDLEWARE_DEFAULT_ON_ERROR,
    ON_ERROR_VALUES,
    STAGES,
    Mode,
    OnError,
)
from .shadow import MODES, ShadowRecorder, shadowed
from .tools import (
    KNOWN_TOOL_NAMES,
    compile_agent_matcher,
    compile_tool_matcher,
    normalize_tool_name,
)

# Interceptor, Middleware and Registration live in registrations (is_async_callable in
# the leaf interpose._callables)
# (shadow reads them too); they are imported from here as well
__all__ = [
    "Handler",
    "Interceptor",
    "Middleware",
    "Registration",
    "Registry",
    "is_async_callable",
]


R = TypeVar("R", Interceptor, Middleware)


@dataclass(frozen=True, slots=True)
class Entry(Generic[R]):
    """A registration with everything the compiler needs precomputed.

    ``reg`` is what the chains run; ``declared`` the registration as it was added,
    when that differs (a shadow registration runs as its recording wrapper).
    """

    reg: R
    seq: int
    key: str  # hook name, or stage name for middleware
    on_error: OnError
    is_async: bool
    matches_tool: Callable[[str], bool] | None = field(default=None)
    matches_agent: Callable[[str], bool] | None = field(default=None)
    declared: R | None = field(default=None)

    @property
    def registration(self) -> R:
        """The registration as it was added."""
        return self.reg if self.declared is None else self.declared

    def applies(self, tool: str | None, agent: str | None) -> bool:
        if tool is not None and self.matches_tool is not None and not self.matches_tool(tool):
            return False
        return not (
            agent is not None and self.matches_agent is not None and not self.matches_agent(agent)
        )


def check_arity(fn: object, arity: int, where: str, expected: str) -> None:
    """Raise RegistrationError unless ``fn`` can be called with ``arity`` positional args."""
    if not callable(fn):
        raise RegistrationError(f"{where}: handler must be callable, got {type(fn).__name__}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: trust the caller
        return
    try:
        sig.bind(*([None] * arity))
    except TypeError:
        name = getattr(fn, "__qualname__", type(fn).__qualname__)
        raise RegistrationError(
            f"{where}: handler {name}{sig} does not fit the hook; expected {expected}"
        ) from None


_EXPECTED_SHAPE = {1: "handler(request)", 2: "handler(input, output)"}


class Registry:
    """An ordered collection of interceptor and middleware registrations.

    ``add`` validates everything it can (hook name, matchers, arity, duplicate ids) and
    leaves the registry unchanged when it raises ``RegistrationError``.
    """

    def __init__(self) -> None:
        self._entries: dict[str, Entry[Any]] = {}
        self._by_key: dict[str, list[Entry[Any]]] = {}
        self._seq = itertools.count()
        self._extra_tools: set[str] = set()
        self._namespaces: set[str] = set()
        self.version = 0
        #: where shadow registrations report (see ``interpose.pipeline.shadow``)
        self.shadow = ShadowRecorder()

    # -- tools --------------------------------------------------------------------

    @property
    def known_tools(self) -> frozenset[str]:
        """The canonical tool names plus every tool registered with ``register_tool``."""
        return KNOWN_TOOL_NAMES | self._extra_tools

    def register_tool(self, name: str) -> str:
        """Add an application tool to the known set; returns its normalized name."""
        if not isinstance(name, str) or not name.strip():
            raise RegistrationError(f"tool name must be a non-empty str, got {name!r}")
        normalized = normalize_tool_name(name)
        if normalized not in self.known_tools:
            self._extra_tools.add(normalized)
            self.version += 1
        return normalized

    @property
    def tool_namespaces(self) -> frozenset[str]:
        """Declared prefixes of tools that are listed only at run time (``mcp__time__``)."""
        return frozenset(self._namespaces)

    def register_tool_namespace(self, prefix: str) -> str:
        """Declare a prefix of tool names known only at run time (an MCP server's tools,
        ``mcp__<server>__``): matchers that name a tool inside it, or a regex that starts
        with it, are accepted before the tools are registered.  Returns the normalized
        prefix.

        Raises:
            RegistrationError: ``prefix`` is empty or not a str.
        """
        if not isinstance(prefix, str) or not prefix.strip():
            raise RegistrationError(f"tool namespace must be a non-empty str, got {prefix!r}")
        normalized = prefix.strip().lower()
        if normalized not in self._namespaces:
            self._namespaces.add(normalized)
            self.version += 1
        return normalized

    # -- mutation -----------------------------------------------------------------

    def add(self, reg: Registration) -> Registration:
        """Validate and add a registration; returns it.

        Raises:
            RegistrationError: duplicate id, unknown hook/stage, invalid or unmatched
                tool matcher, tool matcher on a non-tool hook, invalid agent matcher,
                invalid on_error or timeout, or a handler whose arity does not fit.
        """
        entry = self._validate(reg)
        if reg.mode == "shadow":
            entry = self._shadow_entry(entry)
        self._entries[reg.id] = entry
        bucket = self._by_key.setdefault(entry.key, [])
        bucket.append(entry)
        bucket.sort(key=lambda e: (-e.reg.priority, e.seq))
        self.version += 1
        return reg

    def remove(self, id: str) -> Registration:
        """Remove a registration by id; returns it.  Raises KeyError if unknown."""
        try:
            entry = self._entries.pop(id)
        except KeyError:
            raise KeyError(f"no registration with id {id!r}") from None
        self._by_key[entry.key].remove(entry)
        self.version += 1
        return entry.registration  # type: ignore[no-any-return]

    def set_mode(self, id: str, mode: Mode) -> Registration:
        """Switch a registration between ``"enforce"`` and ``"shadow"`` in place (it keeps
        its place in the order); returns the registration as it now is.

        Raises:
            KeyError: no registration has this id.
            RegistrationError: ``mode`` is not "enforce" or "shadow".
        """
        if mode not in MODES:
            raise RegistrationError(
                f"registration {id!r}: mode must be 'enforce' or 'shadow', got {mode!r}",
                registration_id=id,
            )
        try:
            old = self._entries[id]
        except KeyError:
            raise KeyError(f"no registration with id {id!r}") from None
        declared = dataclasses.replace(old.registration, mode=mode)
        entry = dataclasses.replace(
            old,
            reg=declared,
            declared=None,
            on_error=old.registration.on_error
            if old.registration.on_error is not None
            else _default_on_error(declared),
            is_async=is_async_callable(declared.handler),
        )
        if mode == "shadow":
            entry = self._shadow_entry(entry)
        self._entries[id] = entry
        bucket = self._by_key[entry.key]
        bucket[bucket.index(old)] = entry
        self.version += 1
        return entry.registration  # type: ignore[no-any-return]

    def clear(self) -> None:
        """Remove every registration (registered tool names are kept)."""
        self._entries.clear()
        self._by_key.clear()
        self.version += 1

    def unique_id(self, base: str) -> str:
        """``base`` if free, else ``base#2``, ``base#3``… (for derived ids)."""
        if base not in self._entries:
            return base
        for n in itertools.count(2):
            candidate = f"{base}#{n}"
            if candidate not in self._entries:
                return candidate
        raise AssertionError("unreachable")  # pragma: no cover

    # -- queries ------------------------------------------------------------------

    def get(
        self, hook: str, *, tool: str | None = None, agent: str | None = None
    ) -> list[Registration]:
        """Registrations on ``hook`` (a hook name, or a stage name for middleware) that
        apply to ``tool`` and ``agent``, in execution order."""
        if hook not in HOOKS and hook not in STAGES:
            raise RegistrationError(_unknown_hook(hook))
        return [e.registration for e in self.entries(hook, tool=tool, agent=agent)]

    def entries(
        self, key: str, *, tool: str | None = None, agent: str | None = None
    ) -> list[Entry[Any]]:
        """Like ``get`` but returns the precomputed entries (used by the chain compiler)."""
        normalized = None if tool is None else normalize_tool_name(tool)
        return [e for e in self._by_key.get(key, ()) if e.applies(normalized, agent)]

    def list(self) -> list[Registration]:
        """Every registration, grouped by hook/stage, each group in execution order."""
        return [e.registration for bucket in self._by_key.values() for e in bucket]

    def __iter__(self) -> Iterator[Registration]:
        return iter(self.list())

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, id: object) -> bool:
        return id in self._entries

    def __getitem__(self, id: str) -> Registration:
        return self._entries[id].registration  # type: ignore[no-any-return]

    # -- validation ---------------------------------------------------------------

    def _shadow_entry(self, entry: Entry[Any]) -> Entry[Any]:
        """``entry`` (validated) as the chains run it in shadow mode."""
        declared = entry.registration
        runner = shadowed(declared, self.shadow)
        return dataclasses.replace(
            entry,
            reg=runner,
            declared=declared,
            on_error=runner.on_error or entry.on_error,
            is_async=is_async_callable(runner.handler),
        )

    def _validate(self, reg: Registration) -> Entry[Any]:
        if not isinstance(reg, Interceptor | Middleware):
            raise RegistrationError(
                f"expected an Interceptor or Middleware, got {type(reg).__name__}"
            )
        if not isinstance(reg.id, str) or not reg.id:
            raise RegistrationError(f"registration id must be a non-empty str, got {reg.id!r}")
        where = f"registration {reg.id!r}"
        if reg.id in self._entries:
            raise RegistrationError(f"{where}: duplicate id", registration_id=reg.id)
        if isinstance(reg, Interceptor):
            spec = HOOKS.get(reg.hook)
            if spec is None:
                raise RegistrationError(
                    f"{where}: {_unknown_hook(reg.hook)}", registration_id=reg.id
                )
            key, tool_scoped, can_block = reg.hook, spec.tool_scoped, spec.can_block
            default: OnError = spec.default_on_error
            check_arity(reg.handler, spec.arity, where, _EXPECTED_SHAPE[spec.arity])
        else:
            if reg.stage not in STAGES:
                raise RegistrationError(
                    f"{where}: unknown stage {reg.stage!r}; stages: {', '.join(STAGES)}",
                    registration_id=reg.id,
                )
            key, tool_scoped = reg.stage, reg.stage == "tool"
            can_block = reg.stage in ("tool", "command")
            default = MIDDLEWARE_DEFAULT_ON_ERROR[reg.stage]
            check_arity(reg.handler, 2, where, "async handler(ctx, call_next)")
            if not is_async_callable(reg.handler):
                raise RegistrationError(
                    f"{where}: middleware must be an async callable (async def mw(ctx, call_next))"
                )
        if reg.mode not in MODES:
            raise RegistrationError(
                f"{where}: mode must be 'enforce' or 'shadow', got {reg.mode!r}",
                registration_id=reg.id,
            )
        if not isinstance(reg.priority, int) or isinstance(reg.priority, bool):
            raise RegistrationError(f"{where}: priority must be an int, got {reg.priority!r}")
        on_error = default if reg.on_error is None else reg.on_error
        if on_error not in ON_ERROR_VALUES:
            raise RegistrationError(
                f"{where}: on_error must be 'block', 'skip' or 'raise', got {on_error!r}"
            )
        if on_error == "block" and not can_block:
            raise RegistrationError(
                f"{where}: on_error='block' is not available on {key!r}, which cannot block; "
                "use 'skip' or 'raise'"
            )
        if reg.timeout is not None and (
            not isinstance(reg.timeout, int | float) or reg.timeout <= 0
        ):
            raise RegistrationError(f"{where}: timeout must be a positive number of seconds")
        matches_tool = None
        if reg.tool_matcher is not None:
            if not tool_scoped:
                raise RegistrationError(
                    f"{where}: a tool matcher only applies to tool hooks and the tool stage, "
                    f"not {key!r}"
                )
            matches_tool = compile_tool_matcher(
                reg.tool_matcher, self.known_tools, where=where, namespaces=self.tool_namespaces
            )
        matches_agent = None
        if reg.agent_matcher is not None:
            matches_agent = compile_agent_matcher(reg.agent_matcher, where=where)
        return Entry(
            reg=reg,
            seq=next(self._seq),
            key=key,
            on_error=on_error,
            is_async=is_async_callable(reg.handler),
            matches_tool=matches_tool,
            matches_agent=matches_agent,
        )


def _default_on_error(reg: Registration) -> OnError:
    if isinstance(reg, Interceptor):
        return HOOKS[reg.hook].default_on_error
    return MIDDLEWARE_DEFAULT_ON_ERROR[reg.stage]


def _unknown_hook(name: object) -> str:
    return f"unknown hook {name!r}; hooks: {', '.join(HOOKS)}"
