"""Codex ``.rules`` files: ``prefix_rule``, ``host_executable`` and ``network_rule``.

A ``.rules`` file is Starlark; its calls are spelled as Python's, so the file is read with
:mod:`ast` and its literal arguments taken as they are -- it is never run.  What Codex
documents holds (openai/codex ``codex-rs/execpolicy``)::

    prefix_rule(
        pattern = ["git", ["push", "fetch"]],   # argv tokens in order; a list = alternatives
        decision = "forbidden",                 # allow (the default) | prompt | forbidden
        justification = "push from CI only",
        match = ["git push origin main"],       # strings are split with shlex
        not_match = [["git", "status"]],        # ... or given as token lists
    )
    host_executable(name = "git", paths = ["/usr/bin/git"])

``prompt`` is an ``ask``, ``forbidden`` a ``deny``.  A rule matches every simple command
the shell model finds whose argv starts with the pattern (so ``cd x && git push`` and
``sudo git push`` are ``git push``).  A program given by an absolute path
(``/usr/bin/git``) falls back to an *allow* rule of its base name unless a
``host_executable`` for that name leaves the path out, as Codex's
``--resolve-host-executables`` does; a ``prompt`` or ``forbidden`` rule holds for any
path (``/tmp/x/git``, ``./git``: a copy of ``git`` is still ``git``).
``match``/``not_match`` examples are checked when the file loads, as Codex checks them: a
failing one refuses the file.  ``network_rule(host=..., decision=...)`` matches the
domains a call fetches.  Module-level ``NAME = <literal>`` assignments may be used in
arguments; anything else (loops, functions, ``load``) is refused.
"""

from __future__ import annotations

import ast
import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, TypeAlias

from ..errors import ConfigFileError
from .model import CallView, Decision, Rule
from .view import SHELL_TOOLS

__all__ = ["NetworkMatcher", "PrefixMatcher", "codex_rules"]

_DECISIONS: Mapping[str, Decision] = {"allow": "allow", "prompt": "ask", "forbidden": "deny"}
_NETWORK_DECISIONS: Mapping[str, Decision] = {**_DECISIONS, "deny": "deny"}
_PROTOCOLS = frozenset(
    {"http", "https", "https_connect", "http-connect", "socks5_tcp", "socks5_udp"}
)

Value: TypeAlias = "str | bool | list[Value] | None"


@dataclass(frozen=True, slots=True)
class PrefixMatcher:
    """A ``prefix_rule``'s pattern: argv tokens in order, each a tuple of alternatives.

    ``hosts`` is the file's ``host_executable`` table (base name -> the absolute paths
    that may stand for it), shared by the file's rules and filled as the file is read.
    """

    pattern: tuple[tuple[str, ...], ...]
    hosts: Mapping[str, frozenset[str]] = field(default_factory=dict)
    uses_args: ClassVar[bool] = False  # only the view's facts (see Permissions)

    def applies(self, tool: str) -> bool:
        return tool in SHELL_TOOLS

    def match(self, view: CallView, decision: Decision) -> tuple[str, ...]:
        strict = decision != "allow"
        matches = self.matches
        found: list[str] = []
        for command in view.commands:
            argv = command.argv
            if argv is not None:
                if command.program and not strict:
                    argv = (command.program, *argv[1:])  # an allow sees the path as written
                if matches(argv, strict=strict):
                    found.append(command.text)
            for layer in command.layers:  # each wrapper level: ["sudo"] matches `sudo rm x`
                if matches(layer, strict=strict):
                    found.append(" ".join(layer))
            if strict:
                for form in command.forms:  # git -C x push is git push
                    if matches(form, strict=True):
                        found.append(command.text)
        return tuple(found) if found else ()

    def matches(self, argv: Sequence[str], *, strict: bool = False) -> bool:
        """Whether ``argv`` starts with the pattern.  ``strict`` (a prompt or forbidden
        rule): a program given by any path falls back to its base name."""
        pattern = self.pattern
        size = len(pattern)
        if len(argv) < size:
            return False
        if argv[0] not in pattern[0] and not self._falls_back(argv[0], strict):
            return False
        for i in range(1, size):  # noqa: SIM110 -- a loop: no generator on the hot path
            if argv[i] not in pattern[i]:
                return False
        return True

    def _falls_back(self, program: str, strict: bool) -> bool:
        """Whether ``program``, given by path, stands for one of the pattern's first
        tokens (Codex's host-executable resolution; any path for a strict rule)."""
        if "/" not in program:
            return False
        name = program.rsplit("/", 1)[1]
        if name not in self.pattern[0]:
            return False
        if strict:
            return True
        if not program.startswith("/"):
            return False  # Codex falls back to the base name from absolute paths only
        allowed = self.hosts.get(name)
        return allowed is None or os.path.normpath(program) in allowed


@dataclass(frozen=True, slots=True)
class NetworkMatcher:
    """A ``network_rule``'s host: matches a call that fetches from it (any port)."""

    host: str
    uses_args: ClassVar[bool] = False

    def match(self, view: CallView, decision: Decision) -> tuple[str, ...]:
        return tuple(domain for domain in view.domains if domain.lower().rstrip(".") == self.host)


def codex_rules(path: Path) -> list[Rule]:
    """The rules of a Codex ``.rules`` file, each with its source ``path:line``.

    Raises:
        ConfigFileError: (a ``ConfigError``) the file cannot be read, is not the subset
            of Starlark described above, a call has a bad argument, or a ``match`` /
            ``not_match`` example fails; the message names ``path:line``.
    """
    name = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(name, "", f"cannot read it: {exc}") from None
    try:
        tree = ast.parse(text, name)
        return _Reader(name).read(tree)
    except SyntaxError as exc:
        where = f"{name}:{exc.lineno}" if exc.lineno else name
        raise ConfigFileError(where, "", f"invalid syntax: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes, nesting
        if isinstance(exc, ConfigFileError):
            raise
        raise ConfigFileError(name, "", f"cannot be read as a rules file: {exc}") from None


class _Reader:
    """Reads one file's statements in order, as Codex's evaluator would run them."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.names: dict[str, Value] = {}
        self.hosts: dict[str, frozenset[str]] = {}
        self.rules: list[Rule] = []
        # (line, the call's matchers, match examples, not_match examples), checked once
        # the whole file is read: host_executable may come after the rule, as in Codex
        self.examples: list[tuple[int, list[PrefixMatcher], list[list[str]], list[list[str]]]] = []

    def fail(self, node: ast.AST, problem: str) -> ConfigFileError:
        return ConfigFileError(f"{self.name}:{getattr(node, 'lineno', 0)}", "", problem)

    def read(self, tree: ast.Module) -> list[Rule]:
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
                value = self.literal(stmt.value)
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        self.names[target.id] = value
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # a string standing alone: a comment
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                self.call(stmt.value)
            else:
                raise self.fail(
                    stmt,
                    "only prefix_rule(...), host_executable(...), network_rule(...) calls "
                    "and NAME = <literal> are read (interpose never runs a .rules file)",
                )
        for line, matchers, matches, not_matches in self.examples:
            self.check(line, matchers, matches, not_matches)
        return self.rules

    # -- values ---------------------------------------------------------------------

    def literal(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Constant) and isinstance(node.value, str | bool | type(None)):
            return node.value
        if isinstance(node, ast.List | ast.Tuple):
            return [self.literal(item) for item in node.elts]
        if isinstance(node, ast.Name):
            if node.id in self.names:
                return self.names[node.id]
            raise self.fail(node, f"{node.id!r} is not defined")
        raise self.fail(node, "expected a string or a list of strings")

    def arguments(
        self, call: ast.Call, params: tuple[str, ...], required: tuple[str, ...]
    ) -> dict[str, Value]:
        fn = ast.unparse(call.func)
        if len(call.args) > len(params):
            raise self.fail(call, f"{fn}() takes at most {len(params)} positional arguments")
        given: dict[str, Value] = {}
        for param, arg in zip(params, call.args, strict=False):
            given[param] = self.literal(arg)
        for keyword in call.keywords:
            if keyword.arg is None or keyword.arg not in params:
                raise self.fail(call, f"{fn}() has no argument {keyword.arg or '**'!r}")
            if keyword.arg in given:
                raise self.fail(call, f"{fn}() got {keyword.arg!r} twice")
            given[keyword.arg] = self.literal(keyword.value)
        for param in required:
            if param not in given:
                raise self.fail(call, f"{fn}() is missing {param!r}")
        return given

    def string(self, call: ast.Call, what: str, value: Value, *, empty: bool = False) -> str:
        if not isinstance(value, str) or (not empty and not value.strip()):
            raise self.fail(call, f"{what} must be a non-empty string")
        return value

    # -- calls ----------------------------------------------------------------------

    def call(self, call: ast.Call) -> None:
        func = call.func
        fn = func.id if isinstance(func, ast.Name) else ""
        if fn == "prefix_rule":
            self.prefix_rule(call)
        elif fn == "host_executable":
            self.host_executable(call)
        elif fn == "network_rule":
            self.network_rule(call)
        else:
            raise self.fail(
                call,
                f"unknown call {ast.unparse(func)}(): a .rules file has "
                "prefix_rule, host_executable and network_rule",
            )

    def prefix_rule(self, call: ast.Call) -> None:
        args = self.arguments(
            call, ("pattern", "decision", "match", "not_match", "justification"), ("pattern",)
        )
        pattern = self.pattern(call, args["pattern"])
        raw = args.get("decision")
        decision = _DECISIONS.get(raw) if isinstance(raw, str) else None
        if raw is not None and decision is None:
            raise self.fail(
                call, f"decision must be allow, prompt or forbidden, got {json.dumps(raw)}"
            )
        justification = args.get("justification")
        if justification is not None:
            justification = self.string(call, "justification", justification)
        # a first token with alternatives is one rule per alternative, as in Codex
        matchers = [PrefixMatcher(((head,), *pattern[1:]), self.hosts) for head in pattern[0]]
        shown = json.dumps([list(alts) if len(alts) > 1 else alts[0] for alts in pattern])
        text = f"prefix_rule(pattern={shown}" + (
            f", decision={json.dumps(raw)})" if raw is not None else ")"
        )
        source = f"{self.name}:{call.lineno}"
        for matcher in matchers:
            self.rules.append(
                Rule(
                    decision=decision or "allow",
                    text=text,
                    source=source,
                    matcher=matcher,
                    justification=justification or "",
                )
            )
        self.examples.append(
            (
                call.lineno,
                matchers,
                self.examples_of(call, "match", args.get("match")),
                self.examples_of(call, "not_match", args.get("not_match")),
            )
        )

    def pattern(self, call: ast.Call, value: Value) -> tuple[tuple[str, ...], ...]:
        if not isinstance(value, list) or not value:
            raise self.fail(call, "pattern must be a non-empty list")
        tokens: list[tuple[str, ...]] = []
        for item in value:
            if isinstance(item, str):
                tokens.append((item,))
            elif isinstance(item, list) and item and all(isinstance(a, str) for a in item):
                tokens.append(tuple(a for a in item if isinstance(a, str)))
            else:
                raise self.fail(
                    call,
                    "a pattern element must be a string or a non-empty list of strings "
                    f"(alternatives), got {_short(json.dumps(item))}",
                )
        return tuple(tokens)

    def examples_of(self, call: ast.Call, what: str, value: Value) -> list[list[str]]:
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(call, f"{what} must be a list of examples")
        examples: list[list[str]] = []
        for item in value:
            if isinstance(item, str):
                try:
                    tokens = shlex.split(item)
                except ValueError:
                    raise self.fail(
                        call, f"{what} example {item!r} has invalid shell syntax"
                    ) from None
            elif isinstance(item, list) and all(isinstance(t, str) for t in item):
                tokens = [t for t in item if isinstance(t, str)]
            else:
                raise self.fail(call, f"{what} example must be a string or a list of strings")
            if not tokens:
                raise self.fail(call, f"{what} example cannot be empty")
            examples.append(tokens)
        return examples

    def check(
        self,
        line: int,
        matchers: list[PrefixMatcher],
        matches: list[list[str]],
        not_matches: list[list[str]],
    ) -> None:
        where = f"{self.name}:{line}"
        for example in not_matches:
            if any(m.matches(example) for m in matchers):
                raise ConfigFileError(
                    where, "", f"not_match example {shlex.join(example)!r} matches the rule"
                )
        for example in matches:
            if not any(m.matches(example) for m in matchers):
                raise ConfigFileError(
                    where, "", f"match example {shlex.join(example)!r} does not match the rule"
                )

    def host_executable(self, call: ast.Call) -> None:
        args = self.arguments(call, ("name", "paths"), ("name", "paths"))
        name = self.string(call, "name", args["name"])
        if "/" in name or name in (".", ".."):
            raise self.fail(
                call, f"host_executable name must be a bare executable name, got {name!r}"
            )
        paths = args["paths"]
        if not isinstance(paths, list):
            raise self.fail(call, "paths must be a list of strings")
        allowed: set[str] = set()
        for raw in paths:
            if not isinstance(raw, str) or not raw.startswith(("/", "~/")):
                raise self.fail(
                    call, f"host_executable paths must be absolute or ~/..., got {json.dumps(raw)}"
                )
            resolved = os.path.normpath(os.path.expanduser(raw))
            if os.path.basename(resolved) != name:
                raise self.fail(call, f"host_executable path {raw!r} must have basename {name!r}")
            allowed.add(resolved)
        self.hosts[name] = frozenset(allowed)

    def network_rule(self, call: ast.Call) -> None:
        args = self.arguments(
            call,
            ("host", "protocol", "decision", "justification"),
            ("host", "protocol", "decision"),
        )
        host = self.string(call, "host", args["host"]).strip().lower().rstrip(".")
        if any(c in host for c in "/?#*") or any(c.isspace() for c in host):
            raise self.fail(call, f"network_rule host must be a specific host name, got {host!r}")
        if host.count(":") == 1:
            host = host.rsplit(":", 1)[0]
        protocol = args["protocol"]
        if protocol not in _PROTOCOLS:
            raise self.fail(
                call, "network_rule protocol must be one of http, https, socks5_tcp, socks5_udp"
            )
        raw = args["decision"]
        decision = _NETWORK_DECISIONS.get(raw) if isinstance(raw, str) else None
        if decision is None:
            raise self.fail(call, f"decision must be allow, prompt or forbidden, got {raw!r}")
        justification = args.get("justification")
        self.rules.append(
            Rule(
                decision=decision,
                text=f"network_rule(host={json.dumps(host)}, decision={json.dumps(raw)})",
                source=f"{self.name}:{call.lineno}",
                matcher=NetworkMatcher(host),
                justification=justification if isinstance(justification, str) else "",
            )
        )


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
