"""The layer contract: each layer of evonb imports only from itself and the layers below it
(``LAYERS`` in :mod:`tests.architecture.imports`), at any place of a module, type-only
imports included; the imports form no cycle, type-only ones included (a module below a
class reads it through a protocol: :mod:`tests.architecture.test_handles`); evonb modules
are imported inside a function only to defer an optional heavy library; and ``BaseTable``'s
private members are used only inside the table layer."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

from tests.architecture.imports import (
    LAYERS,
    PACKAGE,
    Import,
    cycles,
    heavy_at_import,
    imports,
    layer,
    modules,
)

ROOT = PACKAGE.parent
THIS = ROOT / "tests" / "architecture" / "test_layers.py"


def test_every_module_belongs_to_a_layer() -> None:
    assert {name: layer(name) for name in modules()}  # KeyError names a module in no layer
    assert layer("evonb.table.timeline") < layer("evonb.spark.mor") < layer("evonb.api")


def test_no_import_reaches_a_higher_layer() -> None:
    upward = [str(i) for i in imports() if layer(i.target) > layer(i.source)]
    assert upward == [], "imports from a higher layer:\n" + "\n".join(upward)


def test_the_checker_sees_imports_inside_functions_and_type_checking_blocks() -> None:
    found = {(i.source, i.target, i.where) for i in imports()}
    # a module-level, a type-checking and a function-level import that exist today
    assert ("evonb.api", "evonb.spark.table", "module") in found
    assert ("evonb.table.retention", "evonb.table.table", "type-checking") in found
    assert any(where == "function" for _, _, where in found)


def test_no_import_cycle() -> None:
    """The imports form no cycle: not those that run (at module level or inside functions),
    and not those for type hints either (a module below a class names what it reads of it
    with a protocol, such as :class:`evonb.table.handle.TableHandle`)."""
    found = cycles(imports())
    assert found == [], "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_cycle_finder_finds_a_cycle() -> None:
    edges = [Import("a", "b", 1, "module"), Import("b", "c", 1, "module"),
             Import("c", "a", 1, "module"), Import("c", "d", 1, "module")]
    assert cycles(edges) == [["a", "b", "c"]]


def test_imports_inside_functions_only_defer_heavy_libraries() -> None:
    """An evonb module is imported inside a function only when importing it loads an optional
    heavy library (IPython for the magics, say): ``import evonb`` stays light."""
    known = modules()
    late = [str(i) for i in imports() if i.where == "function"
            and not heavy_at_import(known[i.target])]
    assert late == []


def test_heavy_import_detection() -> None:
    known = modules()
    assert heavy_at_import(known["evonb.notebook.magics"])
    assert not heavy_at_import(known["evonb.table.timeline"])


def _private_members() -> set[str]:
    tree = ast.parse((PACKAGE / "table" / "table.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "BaseTable")
    names = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(cls):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "self"):
            names.add(node.attr)
    # protocol names such as ``_repr_html_`` (IPython) are public by convention
    return {n for n in names if n.startswith("_") and not n.endswith("_")}


def test_base_table_private_members_stay_in_the_table_layer() -> None:
    private = _private_members()
    assert "_config" in private and "_snapshots" in private
    pattern = re.compile(r"(?<!self)\.(" + "|".join(sorted(private)) + r")\b")
    used = []
    for folder in ("evonb", "tests", "bench", "examples"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.is_relative_to(PACKAGE / "table") or path == THIS:
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    used.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert used == []


def test_layers_listed_bottom_up_cover_the_package_once() -> None:
    named = [name for names in LAYERS for name in names]
    assert len(named) == len(set(named))
    assert all(name == "evonb" or name.startswith("evonb.") for name in named)


def test_loading_the_api_and_the_magics_loads_no_engine() -> None:
    """``import evonb``, ``evonb.open_table`` and ``%load_ext evonb`` start no JVM and load
    neither pyspark nor pyarrow: they come with the first read."""
    code = ("import sys, evonb, evonb.api, evonb.notebook.magics\n"
            "print(sorted(m for m in ('pyspark', 'pyarrow', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=ROOT).stdout.strip()
    assert out == "[]"
