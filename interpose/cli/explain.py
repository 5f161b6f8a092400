"""``interpose explain [--config F] [--json] -- TOOL ARGS...``: what the permission rules
and the guards of a config make of one call, without running it."""

from __future__ import annotations

import argparse
import json
import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import Subparsers, command, usage

if TYPE_CHECKING:
    from ..permissions.explain import Explanation

__all__ = ["EXIT_CODES", "add_parser", "call_of", "run"]

#: the exit code of each decision (2 is bad input, as for every command)
EXIT_CODES = {"allow": 0, "none": 0, "deny": 1, "ask": 3}


def add_parser(sub: Subparsers) -> None:
    """The ``explain`` subcommand."""
    explain = command(
        sub,
        "explain",
        "say which permission rule or guard decides a call, and why (nothing runs)",
        "Read one tool call as the rules see it and print every simple command the shell "
        "model finds in it (through &&, pipes, $( ), sudo, env, xargs, bash -c...), the "
        "paths it reads and writes, each permission rule that matches (with its file and "
        "what it matched), each built-in guard's outcome (run on a copy; the tool never "
        "runs, out-of-process hooks are only listed), and the decision with its reason. "
        "For the shell tool (exec, Bash) the words after TOOL are the command: "
        "`interpose explain -- exec 'cd x && git push'`. For another tool give key=value "
        'pairs (`-- read path=.env`) or one JSON object (`-- web_fetch \'{"url": '
        '"https://x.org"}\'`). Without --config, ./interpose.toml when it exists, else the '
        "default guards with no rules.",
        "  0  allowed, or no rule decides and no guard blocks (the call goes on)\n"
        "  1  denied (by a deny rule or a guard)\n"
        "  2  bad input: no TOOL, bad arguments, no such config, an invalid config\n"
        "  3  ask: an ask rule sends the call to the approval path\n",
    )
    explain.add_argument(
        "--config", default=None, help="interpose.toml (or .json, or .claude/settings.json)"
    )
    explain.add_argument("--json", action="store_true", help="print the explanation as JSON")
    explain.add_argument(
        "call",
        nargs=argparse.REMAINDER,
        metavar="-- TOOL ARGS",
        help="the tool's name and its arguments",
    )
    explain.set_defaults(func=run)


def call_of(words: list[str]) -> tuple[str, dict[str, Any]]:
    """The tool and arguments the words after ``--`` give: for the shell tool, the
    command (one word as it is; several joined with spaces) or a JSON object; else one
    JSON object or ``key=value`` pairs.

    Raises:
        UsageError: no tool, or arguments that are none of these.
    """
    from ..permissions.view import SHELL_TOOLS
    from ..pipeline.tools import normalize_tool_name

    if words[:1] == ["--"]:
        words = words[1:]
    if not words or not words[0].strip():
        raise usage("give the call after --: TOOL ARGS, e.g. -- exec 'git push'")
    tool, rest = words[0], words[1:]
    if len(rest) == 1 and rest[0].lstrip().startswith("{"):
        try:
            args = json.loads(rest[0])
        except json.JSONDecodeError as exc:
            raise usage(f"the arguments are not a JSON object: {exc}") from None
        if not isinstance(args, dict):
            raise usage("the arguments must be a JSON object")
        return tool, args
    if normalize_tool_name(tool) in SHELL_TOOLS:
        if not rest:
            raise usage(f"give the command after {tool}, e.g. -- {tool} 'git push'")
        return tool, {"command": " ".join(rest)}
    args = {}
    for word in rest:
        key, eq, value = word.partition("=")
        if not eq or not key:
            raise usage(f"{word!r}: give key=value pairs or one JSON object")
        args[key] = value
    return tool, args


def run(args: argparse.Namespace) -> int:
    """``interpose explain [--config F] [--json] -- TOOL ARGS``: print what the rules and
    guards make of one call.  Exits 0 (allowed, or nothing decides), 1 (denied), 3 (ask),
    2 (bad input)."""
    tool, call_args = call_of(list(args.call))
    import anyio

    from ..config import Config, describe, parse_config
    from ..errors import ConfigError
    from ..permissions.explain import explain_call

    path = args.config
    if path is None and Path("interpose.toml").is_file():
        path = "interpose.toml"
    try:
        if path is None:
            built = describe(Config(), base_dir=os.getcwd(), source="<defaults>")
        else:
            if not Path(path).is_file():
                raise usage(f"--config {path}: no such file")
            built = describe(parse_config(path), base_dir=Path(path).resolve().parent, source=path)
    except ConfigError as exc:
        raise usage(str(exc)) from None
    explanation = anyio.run(
        partial(
            explain_call,
            built.pipeline,
            built.permissions,
            tool,
            call_args,
            cwd=os.getcwd(),
            home=os.path.expanduser("~"),
        )
    )
    if args.json:
        print(json.dumps({"config": path, **explanation.to_json()}, indent=2))
    else:
        for line in _lines(explanation, path):
            print(line)
    return EXIT_CODES[explanation.decision]


def _lines(explanation: Explanation, path: str | None) -> list[str]:
    view = explanation.view
    lines = [
        f"config: {path or '(none: the default guards, no rules)'}",
        f"call: {view.tool} {json.dumps(dict(view.args), ensure_ascii=False)}",
    ]
    if view.commands or view.unparsed:
        lines.append(f"commands ({len(view.commands)}):")
        for c in view.commands:
            runs = "(cannot tell what runs)" if c.argv is None else " ".join(c.argv)
            wrappers = "".join(f"  [in: {' '.join(layer)}]" for layer in c.layers)
            lines.append(f"  {runs}{wrappers}")
        if view.unparsed:
            lines.append("  (part of the line cannot be read)")
    for label, values in (("reads", view.reads), ("writes", view.writes)):
        if values:
            lines.append(f"{label}: {', '.join(values)}")
    if view.domains:
        lines.append(f"domains: {', '.join(view.domains)}")
    if explanation.matches:
        lines.append("rules matched:")
        for m in explanation.matches:
            why = f" -- {m.rule.justification}" if m.rule.justification else ""
            lines.append(
                f"  {m.rule.decision:<5}  {m.rule.text}  ({m.rule.source})  on {m.subject!r}{why}"
            )
    else:
        lines.append("rules matched: none")
    judged = explanation.judgement
    state = "" if explanation.enforced else " [not enforced: disabled, shadow or no rules]"
    lines.append(f"rules decide: {judged.decision or 'nothing'} ({judged.reason}){state}")
    if explanation.guards:
        lines.append("guards:")
        for g in explanation.guards:
            mode = "" if g.mode == "enforce" else f" [{g.mode}]"
            reason = f": {g.reason}" if g.reason else ""
            if g.outcome == "failed":
                reason += f" (on_error={g.on_error})"
            lines.append(f"  {g.id} (priority {g.priority}){mode}: {g.outcome}{reason}")
    else:
        lines.append("guards: none apply to this tool")
    lines.append(f"decision: {explanation.decision} -- {explanation.reason}")
    return lines
