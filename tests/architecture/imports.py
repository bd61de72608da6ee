"""The import graph of the ``evonb`` package, read from its source with :mod:`ast` (nothing is
imported): every import of an evonb module, where it stands (module level, inside a function,
or under ``if TYPE_CHECKING:``) and which layer it crosses to."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "evonb"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("evonb.errors", "evonb.arguments"),
    ("evonb.schema",),
    ("evonb.sql",),
    ("evonb.table",),
    ("evonb.iceberg",),
    ("evonb.spark",),
    ("evonb.arrow",),
    ("evonb.services",),
    ("evonb.api",),
    ("evonb.notebook",),
    ("evonb", "evonb.__main__"),
)
"""Bottom to top: a module imports only from its own layer and the layers below it."""


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the imported module
    line: int
    where: str  # "module", "function" or "type-checking"

    def __str__(self) -> str:
        return f"{self.source}:{self.line} -> {self.target} ({self.where})"


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


HEAVY = frozenset({"IPython", "ipywidgets", "pyspark", "pyarrow", "pandas", "fastavro",
                   "playwright", "pyiceberg"})
"""Optional or heavy libraries that may be imported late (inside a function)."""


def heavy_at_import(path: Path) -> bool:
    """Whether the module at ``path`` imports one of :data:`HEAVY` at module level."""
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        else:
            continue
        if any(n.split(".")[0] in HEAVY for n in names):
            return True
    return False


def layer(module: str) -> int:
    """The index in :data:`LAYERS` of the layer ``module`` belongs to."""
    best, found = -1, None
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, found = len(name), i
    if found is None:
        raise KeyError(f"{module} is in no layer: add it to LAYERS")
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _targets(module: str, node: ast.Import | ast.ImportFrom, known: dict[str, Path],
             is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        if node.level:
            base = module.split(".")
            if not is_package:
                base = base[:-1]
            base = base[:len(base) - (node.level - 1)]
            prefix = ".".join([*base, *([node.module] if node.module else [])])
        else:
            prefix = node.module or ""
        names = [f"{prefix}.{a.name}" if f"{prefix}.{a.name}" in known else prefix
                 for a in node.names]
    for name in names:
        if name != "evonb" and not name.startswith("evonb."):
            continue
        while name not in known and "." in name:
            name = name.rsplit(".", 1)[0]
        yield name


def imports() -> list[Import]:
    """Every import of an evonb module in the package."""
    known = modules()
    out: list[Import] = []
    for module, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, where: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.Import | ast.ImportFrom):
                    out.extend(Import(module, t, child.lineno, where)  # noqa: B023
                               for t in _targets(module, child, known, is_package))  # noqa: B023
                elif isinstance(child, ast.If) and _is_type_checking(child):
                    for stmt in child.body:
                        visit(ast.Module(body=[stmt], type_ignores=[]), "type-checking")
                    for stmt in child.orelse:
                        visit(ast.Module(body=[stmt], type_ignores=[]), where)
                elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                    visit(child, "type-checking" if where == "type-checking" else "function")
                else:
                    visit(child, where)

        visit(tree, "module")
    return out


def cycles(edges: list[Import]) -> list[list[str]]:
    """The strongly connected components (more than one module) of the graph of ``edges``."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.source != e.target:
            graph.setdefault(e.source, set()).add(e.target)
            graph.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def connect(v: str) -> None:  # Tarjan's algorithm
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found
