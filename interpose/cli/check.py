"""``interpose check FILE``, ``interpose init [PATH]``, ``interpose schema``: validate a
config and print the stack it builds; write the starter config; print the schema."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import Subparsers, command, existing, usage

if TYPE_CHECKING:
    from ..config import Built, Config
    from ..pipeline.registry import Registration

__all__ = ["add_parsers", "run_check", "run_init", "run_schema"]


def add_parsers(sub: Subparsers) -> None:
    """The ``check``, ``init`` and ``schema`` subcommands."""
    check = command(
        sub,
        "check",
        "validate a config file and print the stack it builds, in order",
        "Validate a config file without starting anything: the schema, every command "
        "and script it names, regexes, tool matchers, plugins, and the commands of its "
        "MCP servers (looked up on PATH or as files); run its [[permissions.tests]] (each "
        "call must get the decision it expects). Print the stack it builds, stage by "
        "stage in execution order, the observers, tracing, and each MCP server with its "
        "transport.",
        "  0  the file is valid\n"
        "  1  it is not, or a permissions test fails (each problem on a line of stderr, "
        "naming the field)\n"
        "  2  bad input: no such file\n",
    )
    check.add_argument("file", help="interpose.toml or a .json file of the same shape")
    check.add_argument(
        "--name",
        default=None,
        help="the server `interpose mcp-proxy --name NAME -- COMMAND` adds to the file's "
        "servers: an error when the file has a server of that name",
    )
    check.set_defaults(func=run_check)
    init = command(
        sub,
        "init",
        "write a commented starter interpose.toml",
        "Write a commented starter config: the two guards on, an example rule of your "
        "own, the tool filter and loop guard, an audit log that records calls for "
        "`interpose replay`, tracing. `interpose check` accepts it as written.",
        "  0  written\n"
        "  2  bad input: the file exists (give --force), its directory does not, or the "
        "name does not end in .toml\n",
    )
    init.add_argument(
        "path",
        nargs="?",
        default="interpose.toml",
        help="the file to write, or a directory to write interpose.toml in "
        "(default: ./interpose.toml)",
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(func=run_init)
    schema = command(
        sub,
        "schema",
        "print the JSON Schema of the config file, for editors",
        "Print a JSON Schema (draft 2020-12) of interpose.toml and its .json form, for "
        "editors' completion and checks: `interpose schema > interpose.schema.json`, then "
        "point the editor at it (docs/config.md says how).",
        "  0  printed\n",
    )
    schema.set_defaults(func=run_schema)


def _load(path: str) -> tuple[Config, Built] | None:
    """Load and describe a config for ``check``; None (after printing the error on
    stderr) when it is invalid."""
    from ..config import describe, parse_config
    from ..errors import ConfigError

    try:
        # describe checks as it builds: the file is built once
        config = parse_config(path)
        return config, describe(config, base_dir=Path(path).resolve().parent, source=path)
    except ConfigError as exc:
        print(f"interpose: {exc}", file=sys.stderr)
        return None


def run_check(args: argparse.Namespace) -> int:
    """``interpose check FILE [--name NAME]``: validate a config, check that its MCP
    servers' commands resolve, and print its stack in execution order and its servers.

    Exits 0 when the file is valid, 1 (each problem on a line of stderr) when it is not,
    2 when there is no such file.
    """
    from ..config.mcp import check_servers

    existing(args.file)
    loaded = _load(args.file)
    if loaded is None:
        return 1
    config, built = loaded
    base_dir = Path(args.file).resolve().parent
    problems = check_servers(config.mcp.servers, base_dir, name=args.name)
    problems += _policy_tests(config, built)
    pins, pin_problem = _pin_line(config, base_dir)
    problems += pin_problem
    if problems:
        for problem in problems:
            print(f"interpose: {args.file}: {problem}", file=sys.stderr)
    else:
        tests = len(config.permissions.tests)
        passed = f" ({tests} permission test{'s' * (tests != 1)} passed)" if tests else ""
        print(f"{args.file}: OK{passed}")
    for line in [*_stack_lines(built), *_server_lines(config, base_dir), *pins]:
        print(line)
    return 1 if problems else 0


def _policy_tests(config: Config, built: Built) -> list[str]:
    """The ``[[permissions.tests]]`` whose decision is not the expected one, one line
    each (relative paths of the calls resolve against the working directory, as the
    rules' ``./path`` patterns do)."""
    import os

    from ..permissions.engine import Permissions
    from ..permissions.examples import failed_examples

    tests = config.permissions.tests
    if not tests:
        return []
    permissions = built.permissions or Permissions(())
    return failed_examples(permissions, tests, cwd=os.getcwd(), home=os.path.expanduser("~"))


def _server_lines(config: Config, base_dir: Path) -> list[str]:
    """The MCP servers of ``interpose mcp-proxy``, each with how it is reached, and the
    bearer tokens its HTTP front requires (``[mcp.auth]``)."""
    from ..config.mcp import describe_server

    servers = config.mcp.servers
    lines = []
    if servers:
        width = max(len(name) for name in servers)
        lines = ["mcp servers:"] + [
            f"  {name.ljust(width)}  {describe_server(table, base_dir)}"
            for name, table in servers.items()
        ]
    auth = config.mcp.auth
    if auth is not None:  # what `mcp-proxy --listen` requires of every request
        checks = [f"jwks {auth.jwks}", f"issuer {auth.issuer or 'any'}"]
        checks.append(f"audience {', '.join(auth.audience) or 'any'}")
        lines.append(f"mcp bearer tokens (--listen): {'; '.join(checks)}")
    return lines


def _pin_line(config: Config, base_dir: Path) -> tuple[list[str], list[str]]:
    """The pinned tool set of ``interpose mcp-proxy`` (``[mcp] pin_file``), read as the
    proxy reads it: (the line to show, the problem when the file is not a pin file)."""
    from ..adapters.mcp.pins import load
    from ..errors import ConfigError

    mcp = config.mcp
    if mcp.pin_file is None:
        return [], []
    path = base_dir / mcp.pin_file
    decisions = (
        f"changed: {mcp.pin_changed}, added: {mcp.pin_added}, lookalikes: {mcp.pin_lookalikes}"
    )
    if not path.exists():
        return [f"mcp pins: {path} (not written yet: the first listing is pinned; {decisions})"], []
    try:
        pinned = load(path)
    except ConfigError as exc:
        return [], [str(exc)]
    count = f"{len(pinned)} tool{'s' * (len(pinned) != 1)} pinned"
    return [f"mcp pins: {path}: {count}; {decisions}"], []


def _seconds(value: float | None) -> str:
    return "none" if value is None else f"{value:g}s"


def _matcher(reg: Registration, built: Built) -> str:
    """The tools and agents a registration applies to, as the config spelled them."""
    import re as _re

    shown = built.matchers.get(reg.id)
    if shown is None:
        matcher = reg.tool_matcher
        if matcher is None:
            shown = "*"
        elif isinstance(matcher, _re.Pattern):
            shown = f"/{matcher.pattern}/"
        elif isinstance(matcher, str):
            shown = matcher
        else:
            shown = ", ".join(matcher)
    shown = shown or "*"
    agents = reg.agent_matcher
    if agents is not None:
        pattern = agents.pattern if isinstance(agents, _re.Pattern) else agents
        shown += f" (agents /{pattern}/)"
    return shown


def _stack_lines(built: Built) -> list[str]:
    """The stack of a built config, stage by stage, each list in execution order; then
    the process hooks, observers and tracing."""
    from ..pipeline.hooks import STAGE_HOOKS, STAGES
    from ..pipeline.shadow import declared_policy

    pipe = built.pipeline
    registry = pipe.registry
    lines = [
        f"defaults: interceptor_timeout={_seconds(pipe.interceptor_timeout)} "
        f"approval_timeout={_seconds(pipe.approval_timeout)} "
        f"observer_timeout={_seconds(pipe.observer_timeout)} max_retries={pipe.max_retries}",
    ]
    rows: list[tuple[str, ...]] = []
    for stage in STAGES:
        keys = [(stage, "middleware"), *((hook, hook) for hook in STAGE_HOOKS[stage])]
        for key, label in keys:
            for entry in registry.entries(key):
                reg = entry.registration
                rows.append(
                    (
                        stage,
                        label,
                        str(reg.priority),
                        reg.id,
                        _matcher(reg, built),
                        entry.on_error if reg.mode == "enforce" else declared_policy(reg),
                        reg.mode,
                        reg.source,
                    )
                )
    lines.append("")
    if not rows:
        lines.append("stack: empty (nothing is registered)")
    else:
        header = ("stage", "hook", "priority", "id", "tools", "on_error", "mode", "source")
        widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]
        lines.append("stack (execution order):")
        for row in (header, *rows):
            cells = [
                cell.rjust(width) if i == 2 else cell.ljust(width)
                for i, (cell, width) in enumerate(zip(row, widths, strict=False))
            ]
            lines.append("  " + "  ".join([*cells, row[-1]]).rstrip())
    lines.append("")
    if built.processes:
        lines.append("process hooks:")
        width = max(len(name) for name in built.processes)
        for name, command in built.processes.items():
            lines.append(f"  {name.ljust(width)}  {command}")
    else:
        lines.append("process hooks: none")
    subscriptions = pipe.bus.subscriptions
    if subscriptions:
        lines.append("observers:")
        width = max(len(sub.name) for sub in subscriptions)
        for sub in subscriptions:
            kinds = "every event" if sub.kinds is None else ", ".join(sorted(sub.kinds))
            lines.append(f"  {sub.name.ljust(width)}  {kinds} (overflow={sub.overflow})")
    else:
        lines.append("observers: none")
    content = ", content recorded (redacted)" if built.trace_content else ""
    export = f", exported to {built.exporter}" if built.exporter else ""
    lines.append(f"tracing: {pipe.tracing}{content}{export}")
    lines += _permission_lines(built)
    lines += _approval_lines(built)
    if built.sandbox:
        lines.append(f"sandbox: {built.sandbox}")
    if built.flows:
        lines.append(f"flows: {built.flows}")
    if built.priority_order == "picoclaw":
        lines.append(
            "priority order: picoclaw (builtins before process hooks, lower priority "
            "first, ties by name), as interpose priorities:"
        )
        lines += [f"  {line}" for line in built.order] or ["  (nothing to order)"]
    if built.notes:
        lines.append("notes:")
        lines += [f"  {note}" for note in built.notes]
    return lines


def _approval_lines(built: Built) -> list[str]:
    """``[approvals]``: the store, how long a request waits, the approvers that ask."""
    if built.approvals is None:
        return []
    approvers = [e.registration.id for e in built.pipeline.registry.entries("tool.approve")]
    asking = ", ".join(approvers) if approvers else "none (no approver asks: no request is made)"
    return [built.approvals.describe(), f"  approvers that may ask: {asking}"]


def _permission_lines(built: Built) -> list[str]:
    """The permission rules by source file: how many of each decision."""
    rules = built.permissions.rules if built.permissions is not None else ()
    if not rules:
        return []
    import re

    counts: dict[str, dict[str, int]] = {}
    for rule in rules:
        file = re.sub(r":\d+$", "", rule.source)  # a rule of a .rules file: path:line
        tally = counts.setdefault(file, {"deny": 0, "ask": 0, "allow": 0})
        tally[rule.decision] += 1
    lines = [f"permission rules: {len(rules)}"]
    for file, tally in counts.items():
        shown = ", ".join(f"{n} {d}" for d, n in tally.items() if n)
        lines.append(f"  {file}: {shown}")
    return lines


def run_init(args: argparse.Namespace) -> int:
    """``interpose init [PATH] [--force]``: write the commented starter config.

    Exits 0 when it is written, 2 when PATH exists (without ``--force``), its directory
    does not, or it is not a ``.toml`` file.
    """
    from ..config.starter import STARTER

    path = Path(args.path).expanduser()
    if path.is_dir():
        path /= "interpose.toml"
    if path.suffix.lower() != ".toml":
        raise usage(f"{args.path}: the starter file is TOML: give a path ending in .toml")
    if not path.parent.is_dir():
        raise usage(f"{path}: the directory {path.parent} does not exist")
    try:
        with path.open("w" if args.force else "x", encoding="utf-8") as file:
            file.write(STARTER)
    except FileExistsError:
        raise usage(f"{path} exists; --force overwrites it") from None
    except OSError as exc:
        raise usage(f"cannot write {path}: {exc.strerror}") from None
    print(f"wrote {path}; see what it builds: interpose check {path}")
    return 0


def run_schema(args: argparse.Namespace) -> int:
    """``interpose schema``: print the JSON Schema of the config file. Exits 0."""
    from ..config.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0
