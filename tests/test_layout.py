"""The package's shape, as docs/design.md draws it: layers point down, no import cycle
(lazy or not), private names stay in their module, files stay readable.

Read from the source with ``ast``, so an import inside a function or under
``TYPE_CHECKING`` counts like one at the top of a module.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "interpose"

# From low to high; a module may import from its own layer and the ones before it.
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "interpose.errors",
        "interpose._callables",
        "interpose._registrations",
        "interpose._jsonlines",
        "interpose._locations",
        "interpose._version",
    ),
    ("interpose.secrets",),  # a leaf: recognizers the pipeline, policies and flows share
    ("interpose.bus",),
    ("interpose.observers",),
    ("interpose.pipeline",),
    (
        "interpose.middleware",
        "interpose.external",
        "interpose.permissions",
        "interpose.approvals",
        "interpose.sandbox",
        "interpose.flows",
    ),
    ("interpose.config", "interpose.plugins"),
    ("interpose.adapters", "interpose.agent", "interpose.replay"),
    ("interpose.cli", "interpose.__main__"),
    ("interpose",),  # the package's own __init__: the public names, re-exported
)

# Known exceptions, each with the reason it still stands; the redesign removes them.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}

# Larger than ~800 lines because they are mainly data (rule tables), not code.
RULE_TABLES: frozenset[str] = frozenset()

MAX_LINES = 800


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def layer(module: str) -> int:
    best, rank = -1, -1
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, rank = len(prefix), index
    return rank


def resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    if node.level > 1:
        base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str, path: Path) -> Iterator[tuple[str, list[str], int]]:
    """(imported module, names imported from it, line) for every import in ``path``."""
    known = modules()
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("interpose"):
                    yield alias.name, [], node.lineno
        elif isinstance(node, ast.ImportFrom):
            target = resolve(module, path.name == "__init__.py", node)
            if not target.startswith("interpose"):
                continue
            names = [alias.name for alias in node.names]
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in known]
            if submodules:  # ``from . import x`` imports the module x
                for sub in submodules:
                    yield sub, [], node.lineno
                rest = [n for n in names if f"{target}.{n}" not in known]
                if rest:
                    yield target, rest, node.lineno
            else:
                yield target, names, node.lineno


def graph() -> dict[str, set[str]]:
    known = modules()
    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        for target, _, _ in imports(name, path):
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != name:
                edges[name].add(target)
    return edges


def test_layers_point_down() -> None:
    known = modules()
    wrong = []
    for name, path in known.items():
        mine = layer(name)
        assert mine >= 0, f"{name} is in no layer of tests/test_layout.py"
        for target, _, line in imports(name, path):
            theirs = layer(target)
            if theirs > mine and (name, target) not in KNOWN_UPWARD:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {name} -> {target}")
    assert not wrong, "imports from a higher layer:\n" + "\n".join(wrong)


def test_no_import_cycle() -> None:
    edges = graph()
    # a package's __init__ that only re-exports its own submodules is not a cycle with them
    for name in edges:
        edges[name] = {t for t in edges[name] if not name.startswith(t + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_private_names_stay_in_their_module() -> None:
    wrong = []
    for name, path in modules().items():
        for target, names, line in imports(name, path):
            for imported in names:
                if imported.startswith("_") and not imported.startswith("__"):
                    wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {target}.{imported}")
    assert not wrong, "underscore names imported from another module:\n" + "\n".join(wrong)


@pytest.mark.parametrize("name", sorted(modules()))
def test_files_stay_readable(name: str) -> None:
    path = modules()[name]
    lines = len(path.read_text().splitlines())
    if name in RULE_TABLES:
        return
    assert lines <= MAX_LINES, f"{path.relative_to(PACKAGE.parent)} has {lines} lines"


def design_tree() -> set[str]:
    """The module paths docs/design.md's layout tree names (two spaces a level)."""
    text = (PACKAGE.parent / "docs" / "design.md").read_text()
    block = text.split("## The layout", 1)[1].split("```\n", 2)[1]
    stack: list[str] = []
    found = set()
    for line in block.splitlines():
        name = line.strip().split(" ", 1)[0]
        depth = (len(line) - len(line.lstrip(" "))) // 2
        del stack[depth:]
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
        else:
            found.add("/".join([*stack, name]))
    return found


def test_the_design_page_draws_every_module() -> None:
    files = {
        str(path.relative_to(PACKAGE.parent))
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    }
    assert design_tree() == files
