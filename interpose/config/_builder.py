"""The builder's common ground: ``Built`` (what a build produced), and ``BuilderBase``:
one config, the field every failure is reported under, the PicoClaw priority order, and
the checks of values (directories, environments, regexes, tool rules and matchers)."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from ..errors import ConfigError, ConfigFileError, RegistrationError, field_key
from ..pipeline.tools import TOOL_GROUPS, compile_tool_matcher, in_namespace, normalize_tool_name
from .schema import BuiltinsConfig, Config, fields_of

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from ..approvals.waiting import DurableApprovals
    from ..external.command.tool_mapping import ToolMapping
    from ..permissions.engine import Permissions
    from ..pipeline.pipeline import Pipeline
    from ..pipeline.tracing import TracingLevel

__all__ = ["BUILTIN_PRIORITY", "RANK_TOP", "Built", "BuilderBase", "seconds", "tidy"]


@dataclasses.dataclass
class Built:
    """A pipeline built from a config, and what ``interpose check`` shows about it.

    Attributes:
        pipeline: the pipeline.
        matchers: registration id -> a readable description of its tool filter, for
            registrations whose matcher the config spelled differently (command hooks).
        exporter: where spans are exported ("" when nowhere).
        trace_content: whether spans record tool arguments and results.
        processes: process hook name -> its command line.
        priority_order: "interpose" or "picoclaw" (``hooks.priority_order``, resolved).
        order: under the PicoClaw order, one line per builtin and process hook, in
            PicoClaw's order, with its PicoClaw priority and the interpose priority it
            got; empty otherwise.
        notes: what the config asks for that is not done or has no effect (unsupported
            hooks of a Claude Code settings file, a PicoClaw event interpose does not
            have, a disabled PicoClaw builtin, PicoClaw settings left out), one line each;
            they are logged as warnings (logger ``interpose.config``) when the pipeline
            is built.
        permissions: the ``[permissions]`` rules (``interpose explain`` judges with
            them), also when the table is disabled.
        approvals: the ``[approvals]`` handler (its store), when the table is on.
        sandbox: what ``[sandbox]`` sets up, in one line ("" without the table).
        flows: what ``[flows]`` sets up, in one line ("" without the table).
    """

    pipeline: Pipeline
    matchers: dict[str, str] = dataclasses.field(default_factory=dict)
    exporter: str = ""
    trace_content: bool = False
    processes: dict[str, str] = dataclasses.field(default_factory=dict)
    priority_order: str = "interpose"
    order: list[str] = dataclasses.field(default_factory=list)
    notes: list[str] = dataclasses.field(default_factory=list)
    permissions: Permissions | None = None  # the [permissions] rules, registered or not
    approvals: DurableApprovals | None = None  # the [approvals] handler, when on
    sandbox: str = ""
    flows: str = ""


_NAME_RULE = re.compile(r"[\w.\-]+")
#: the interpose priority of each builtin whose table leaves it unset
BUILTIN_PRIORITY: dict[str, int] = {
    "command-safety-guard": 100,
    "security-audit": 99,
    "tool-filter": 120,
    "rate-limit": 95,
    "redact-secrets": 100,
    "loop-guard": 105,
    "result-cache": 5,
    "output-cap": 90,
}
#: the priority of the first hook under the PicoClaw order (see BuilderBase.rank)
RANK_TOP = 1000


def seconds(ms: int) -> float:
    """Milliseconds (the file's unit) as seconds (the API's)."""
    return ms / 1000


class BuilderBase:
    """Builds one pipeline from one config; every step names its field when it fails.

    ``dry``: no side effects (no file opened, no exporter); ``run_plugins``: call the
    plugins (else they are only found and loaded).
    """

    def __init__(
        self,
        config: Config,
        base_dir: Path,
        source: str,
        *,
        dry: bool,
        run_plugins: bool,
        tracing: TracingLevel | None = None,
        tracer_provider: TracerProvider | None = None,
        observers: bool = True,
    ) -> None:
        self.config = config
        self.base_dir = base_dir
        self.source = source
        self.dry = dry
        self.run_plugins = run_plugins
        self.tracing = tracing
        self.tracer_provider = tracer_provider
        self.attach_observers = observers
        self.claude_mapping: ToolMapping | None = None
        # what runs once every value is checked (opening the audit log, calling the
        # plugins), and how to undo what a build started when it fails: so a config is
        # built once, and a rejected one leaves nothing open or running
        self.deferred: list[Callable[[], None]] = []
        self.started: list[Callable[[], object]] = []

    def fail(self, field: str, problem: str) -> NoReturn:
        raise ConfigFileError(self.source, field, problem)

    @contextmanager
    def at(self, field: str) -> Iterator[None]:
        """Report a rejected value (ConfigError, RegistrationError, ValueError,
        TypeError) as an error of ``field``."""
        try:
            yield
        except ConfigFileError:
            raise
        except (ConfigError, RegistrationError, ValueError, TypeError) as exc:
            self.fail(field, tidy(str(exc)))

    @contextmanager
    def moded(self, pipe: Pipeline, mode: str) -> Iterator[None]:
        """Put what the block registers in ``mode`` (the policies register themselves)."""
        before = {reg.id for reg in pipe.registry.list()}
        yield
        if mode == "shadow":
            for reg in pipe.registry.list():
                if reg.id not in before:
                    pipe.registry.set_mode(reg.id, "shadow")

    # -- order --------------------------------------------------------------------------

    def rank(self, built: Built) -> None:
        """Under the PicoClaw order, give each enabled builtin and process hook the
        interpose priority that puts it where PicoClaw would run it: builtins (PicoClaw's
        in-process hooks) before process hooks, lower priority first, ties by name.

        A builtin whose priority the file leaves unset counts as minus its interpose
        default, so that the builtins keep their usual order among themselves.  The
        ranked hooks get ``RANK_TOP``, ``RANK_TOP - 1``, ...: they run before command
        hooks and plugins of ordinary priorities.
        """
        hooks = self.config.hooks
        order = hooks.priority_order or "interpose"
        built.priority_order = order
        self.ranks: dict[tuple[str, str], int] = {}
        if order != "picoclaw" or not hooks.enabled:
            return
        entries: list[tuple[int, int, str, bool]] = []
        for field in fields_of(BuiltinsConfig):
            table = getattr(hooks.builtins, field.name)
            if table is not None and table.enabled:
                name = field.encode_name
                given = table.priority
                unset = given is None
                priority = -BUILTIN_PRIORITY[name] if given is None else given
                entries.append((0, priority, name, unset))
        for name, process in hooks.processes.items():
            if process.enabled:
                entries.append((1, process.priority, name, False))
        entries.sort()
        for i, (source, priority, name, unset) in enumerate(entries):
            kind = "builtin" if source == 0 else "process"
            self.ranks[(kind, name)] = RANK_TOP - i
            shown = f"{priority} (unset: minus its default)" if unset else str(priority)
            built.order.append(
                f"{i + 1}. {kind} {name}: picoclaw priority {shown} -> priority {RANK_TOP - i}"
            )

    def priority(self, kind: str, name: str, given: int | None, default: int = 0) -> int:
        """The interpose priority of a builtin or process hook (see ``rank``)."""
        ranked = self.ranks.get((kind, name))
        if ranked is not None:
            return ranked
        return default if given is None else given

    def builtin_priority(self, name: str, given: int | None) -> int:
        """The interpose priority of the builtin ``name``: ranked, else ``given``, else
        its default."""
        return self.priority("builtin", name, given, BUILTIN_PRIORITY[name])

    # -- values ---------------------------------------------------------------------------

    def directory(self, field: str, value: str | None) -> Path:
        """``value`` resolved against the config's directory (the directory itself when
        unset); it must exist."""
        if value is None:
            return self.base_dir
        path = (self.base_dir / os.path.expanduser(value)).resolve()
        if not path.is_dir():
            self.fail(field, f"{path} is not a directory")
        return path

    def environment(self, field: str, env: dict[str, str]) -> None:
        for key in env:
            if not key or "=" in key or "\0" in key:
                self.fail(f"{field}.{field_key(key)}", "not a valid environment variable name")

    def regexes(self, field: str, patterns: Sequence[str]) -> None:
        for i, pattern in enumerate(patterns):
            try:
                re.compile(pattern)
            except re.error as exc:
                self.fail(f"{field}[{i}]", f"invalid regex {pattern!r}: {exc}")

    def rules(
        self, field: str, items: Sequence[str], pipe: Pipeline
    ) -> list[str | re.Pattern[str]]:
        """Tool rules as the tool filter and command hooks take them: names (which must
        be known tools), ``group:*`` names (which must exist), or regexes (compiled)."""
        rules: list[str | re.Pattern[str]] = []
        known = pipe.registry.known_tools
        for i, item in enumerate(items):
            if item.startswith("group:"):
                if item not in TOOL_GROUPS:
                    self.fail(
                        f"{field}[{i}]",
                        f"unknown tool group {item!r}; groups: {', '.join(sorted(TOOL_GROUPS))}",
                    )
                rules.append(item)
            elif _NAME_RULE.fullmatch(item.strip()):
                name = normalize_tool_name(item)
                if name not in known and not in_namespace(name, pipe.registry.tool_namespaces):
                    self.fail(
                        f"{field}[{i}]",
                        f"unknown tool {item!r} (add it to hooks.tools if the application "
                        f"has it); tools: {', '.join(sorted(known))}",
                    )
                rules.append(item)
            else:
                try:
                    rules.append(re.compile(item))
                except re.error as exc:
                    self.fail(f"{field}[{i}]", f"invalid regex {item!r}: {exc}")
        return rules

    def matcher(
        self, field: str, tools: str | list[str] | None, pipe: Pipeline
    ) -> str | list[str] | None:
        """A ``tools`` value, checked as the registry will check it."""
        if tools is None:
            return None
        with self.at(field):
            compile_tool_matcher(
                tools,
                pipe.registry.known_tools,
                where=field,
                namespaces=pipe.registry.tool_namespaces,
            )
        return tools


_PREFIXES = (
    re.compile(r"^registration '[^']*': "),
    re.compile(r"^process hook '[^']*': "),
    re.compile(r"^command hook '[^']*': "),
    re.compile(r"^hooks\.[\w.\[\]\"-]+: "),
)


def tidy(message: str) -> str:
    """A component's error without the prefix that names the component: the field path
    in front of it says that already."""
    for prefix in _PREFIXES:
        message = prefix.sub("", message, count=1)
    return message
