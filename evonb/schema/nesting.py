"""How deep a schema nests, and the depth evonb tables take.

Every reader and writer of a table has a limit of its own, none of which names the column:
Arrow's IPC format (Spark's hand-over to Python workers) refuses a type nested more than 64
deep ("Max recursion depth reached"), pyarrow's Parquet reader a file schema more than 100 deep
(where a list or a map takes two levels: a 50-deep list is refused), and Spark's analyzer a
read of a struct about 98 deep. So a schema change that nests a column deeper than
:data:`MAX_NESTING` is refused, by ``CREATE``, ``ALTER`` and a write alike, with the column
named; every path works up to it. Depth counts as Parquet does: a struct is one level, a list
or a map two.
"""

from __future__ import annotations

from evonb.errors import SchemaEvolutionError
from evonb.schema.paths import format_path
from evonb.schema.types import ArrayType, MapType, NestedField, StructType, Type

MAX_NESTING = 60
"""The deepest a column of an evonb table nests (a struct one level, a list or a map two)."""


def nesting_depth(t: Type) -> int:
    """How deep ``t`` nests: 0 for a primitive type, a struct one level more than its deepest
    member, a list or a map two more than its element, key or value."""
    return _deepest(t)[0]


def _deepest(t: Type) -> tuple[int, tuple[str, ...]]:
    """The depth of ``t`` and the names of the path to its deepest part."""
    if isinstance(t, StructType):
        step = 1
    elif isinstance(t, ArrayType | MapType):
        step = 2
    else:
        return 0, ()
    best, path = 0, ()
    for child in t.children():
        depth, below = _deepest(child.type)
        if not path or depth > best:
            best, path = depth, (child.name, *below)
    return best + step, path


def check_nesting(fields: tuple[NestedField, ...], base: tuple[NestedField, ...] = ()) -> None:
    """Refuse ``fields`` (a new schema's columns) when one nests deeper than
    :data:`MAX_NESTING` and deeper than the deepest of ``base`` (the schema it evolves: a table
    made before the limit keeps taking changes that do not deepen it)."""
    allowed = max([MAX_NESTING, *(nesting_depth(f.type) for f in base)])
    for f in fields:
        depth, path = _deepest(f.type)
        if depth > allowed:
            shown = format_path((f.name, *path))
            raise SchemaEvolutionError(
                f"Column {f.name!r} would nest {depth} levels deep (down to {shown!r}; a "
                f"struct counts one level, a list or a map two), more than the {MAX_NESTING} "
                "an evonb table takes", path=f.name,
                hint="keep the deepest parts as JSON text in a string member (to_json), or "
                "flatten the type into more columns")


__all__ = ["MAX_NESTING", "check_nesting", "nesting_depth"]
