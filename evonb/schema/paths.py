"""Paths and walks over a tree of fields: the helpers :class:`~evonb.schema.schema.Schema` and
the modules below it share.

A path is a tuple of names, or dotted text where backquotes protect dots (:func:`parse_path`,
:func:`format_path`). :func:`walk` visits every field with its path and parent ID.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from evonb.errors import ColumnNotFoundError, SchemaEvolutionError
from evonb.schema.types import (
    ELEMENT,
    KEY,
    VALUE,
    ArrayType,
    MapType,
    NestedField,
    StructType,
    Type,
    with_children,
)

INITIAL_VERSION = "00000000000000000"
ROOT_ID = -1
"""The parent ID of top-level columns."""

Path = str | tuple[str, ...]
SchemaParts = tuple[tuple[NestedField, ...], str, int]
"""``(fields, version_id, max_column_id)``: what a :class:`~evonb.schema.schema.Schema` is made of;
the converters below ``Schema`` return these and ``Schema.from_*`` builds the schema."""


def parse_path(path: Path) -> tuple[str, ...]:
    """Split a dotted path into names. Backquotes protect dots: ```a.b`.c`` -> ``("a.b", "c")``.

    A tuple is taken as it is, so names containing dots can always be addressed.
    """
    if isinstance(path, tuple):
        if not path or not all(isinstance(p, str) and p for p in path):
            raise ColumnNotFoundError(repr(path), context="(empty name in path)",
                                      hint="name each level, e.g. ('address', 'city')")
        return path
    if not isinstance(path, str) or not path.strip():
        raise ColumnNotFoundError(repr(path), context="(empty path)",
                                  hint="name the column, e.g. 'address.city'")
    parts: list[str] = []
    buf: list[str] = []
    i, quoted, text = 0, False, path.strip()
    while i < len(text):
        ch = text[i]
        if ch == "`":
            if quoted and i + 1 < len(text) and text[i + 1] == "`":
                buf.append("`")
                i += 2
                continue
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(ch)
        i += 1
    parts.append("".join(buf))
    if quoted or any(not p for p in parts):
        raise ColumnNotFoundError(path, context="(malformed path)",
                                  hint="close each backquote and name every level between "
                                  "dots, e.g. a.b or `a.b`.c")
    return tuple(parts)


def format_path(names: tuple[str, ...]) -> str:
    """Join names with dots, backquoting any name that contains a dot or a backquote (or starts
    or ends with whitespace, which :func:`parse_path` would strip)."""
    return ".".join(
        "`" + n.replace("`", "``") + "`" if ("." in n or "`" in n or n != n.strip()) else n
        for n in names
    )


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """Where a field sits: its path from the root and the ID of its parent field."""

    field: NestedField
    path: tuple[str, ...]
    parent_id: int

    @property
    def dotted(self) -> str:
        return format_path(self.path)


def walk(fields: tuple[NestedField, ...], parent_id: int = ROOT_ID,
         prefix: tuple[str, ...] = ()) -> Iterator[FieldInfo]:
    """Every field under ``fields`` in pre-order, with its path and parent ID."""
    for f in fields:
        path = (*prefix, f.name)
        yield FieldInfo(f, path, parent_id)
        yield from walk(f.type.children(), f.id, path)


def transform_fields(
    fields: tuple[NestedField, ...],
    fn: Callable[[NestedField, int], NestedField | None],
    parent_id: int = ROOT_ID,
) -> tuple[NestedField, ...]:
    """Post-order rebuild: children are transformed first, then ``fn(field, parent_id)``.

    ``fn`` returns the field to keep (possibly changed) or None to drop it.
    """
    out: list[NestedField] = []
    for f in fields:
        if f.type.is_nested:
            kids = transform_fields(f.type.children(), fn, f.id)
            if kids != f.type.children():
                f = f.replace(type=with_children(f.type, kids))
        g = fn(f, parent_id)
        if g is not None:
            out.append(g)
    return tuple(out)


def check_names(fields: tuple[NestedField, ...], where: str = "table") -> None:
    """Reject empty names and names that differ only by case within one struct."""
    seen: dict[str, str] = {}
    for f in fields:
        if not f.name:
            raise SchemaEvolutionError(f"Empty column name in {where}", field_id=f.id)
        low = f.name.lower()
        if low in seen:
            raise SchemaEvolutionError(
                f"Duplicate column name in {where}: {seen[low]!r} and {f.name!r}"
                " (names are case-insensitive)",
                path=f.name,
                field_id=f.id,
                hint="pick a name that no other column of the same struct has",
            )
        seen[low] = f.name
        _check_nested_names(f.type, f"{where}.{f.name}" if where != "table" else f.name)


def _check_nested_names(t: Type, where: str) -> None:
    """:func:`check_names` for every struct under ``t``, through any arrays and maps."""
    if isinstance(t, StructType):
        check_names(t.fields, where)
        return
    for child in t.children():
        _check_nested_names(child.type, f"{where}.{child.name}")


def child_by_name(container: Type | None, current: tuple[NestedField, ...],
                  name: str) -> NestedField | None:
    """The child called ``name`` of a field whose type is ``container`` (None: the root)."""
    low = name.lower()
    if container is None or isinstance(container, StructType):
        for f in current:
            if f.name.lower() == low:
                return f
        return None
    if isinstance(container, ArrayType):
        if low == ELEMENT:
            return container.element
        inner = container.element.type
        if not isinstance(inner, StructType):
            return None
        return child_by_name(inner, inner.children(), name)
    if isinstance(container, MapType):
        if low == KEY:
            return container.key
        if low == VALUE:
            return container.value
        inner = container.value.type
        if not isinstance(inner, StructType):
            return None
        return child_by_name(inner, inner.children(), name)
    return None
