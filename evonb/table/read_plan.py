"""Read planning: how each query column is found in a file written with another schema version.

Everything here is pure data, testable without Spark. A :class:`ScanGroup` is a set of files read
by one Spark scan with ``read_type`` (physical names, file types); ``columns`` say how each query
column is built from that scan, by field ID: a renamed column reads its physical column, a column
the files do not have reads its read default or null, a widened type is cast, nested structs are
rebuilt member by member (inside arrays and map values too).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evonb.schema.schema import Schema
from evonb.schema.types import ArrayType, MapType, NestedField, StructType, Type
from evonb.table.layout import Layout


class Expr:
    """A node of a column expression."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Col(Expr):
    """A top-level physical column of the scan."""

    name: str


@dataclass(frozen=True, slots=True)
class Var(Expr):
    """The lambda variable of the enclosing :class:`ForEach` / :class:`ForEachValue`."""

    depth: int


@dataclass(frozen=True, slots=True)
class GetField(Expr):
    src: Expr
    name: str


@dataclass(frozen=True, slots=True)
class Lit(Expr):
    """A constant (``None`` is a typed null)."""

    value: Any
    type: Type


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    src: Expr
    type: Type


@dataclass(frozen=True, slots=True)
class StructOf(Expr):
    """A struct rebuilt from members; null where ``src`` is null."""

    src: Expr
    members: tuple[tuple[str, Expr], ...]


@dataclass(frozen=True, slots=True)
class ForEach(Expr):
    """``transform(src, x -> element)`` over an array."""

    src: Expr
    element: Expr
    depth: int


@dataclass(frozen=True, slots=True)
class ForEachValue(Expr):
    """``transform_values(src, (k, v) -> value)`` over a map."""

    src: Expr
    value: Expr
    depth: int


@dataclass(frozen=True, slots=True)
class ScanGroup:
    """Files read by one scan: their schema version, the physical read type, the projection."""

    version_id: str
    files: tuple[str, ...]
    read_type: StructType
    columns: tuple[tuple[str, Expr], ...]


def physical_type(t: Type, layout: Layout) -> Type:
    """``t`` with struct members renamed to their physical names (IDs kept)."""
    if isinstance(t, StructType):
        return StructType(tuple(
            f.replace(name=layout.name(f.id), type=physical_type(f.type, layout))
            for f in t.fields
        ))
    if isinstance(t, ArrayType):
        return ArrayType(t.element.replace(type=physical_type(t.element.type, layout)))
    if isinstance(t, MapType):
        return MapType(t.key.replace(type=physical_type(t.key.type, layout)),
                       t.value.replace(type=physical_type(t.value.type, layout)))
    return t


def physical_struct(schema: Schema, layout: Layout) -> StructType:
    """The physical read/write type of a schema version."""
    return physical_type(schema.struct, layout)  # type: ignore[return-value]


def _same(a: Type, b: Type) -> bool:
    """Equal names and types (IDs, nullability, defaults and comments aside)."""
    if a.is_primitive or b.is_primitive:
        return a == b
    if type(a) is not type(b):
        return False
    ca, cb = a.children(), b.children()
    return len(ca) == len(cb) and all(
        x.name == y.name and _same(x.type, y.type) for x, y in zip(ca, cb, strict=True)
    )


def project(query: NestedField, found: NestedField | None, src: Expr, layout: Layout,
            depth: int = 0) -> Expr:
    """How to build query field ``query`` from ``src``, the file's field ``found`` (same ID)."""
    if found is None:
        return Lit(query.default, query.type)
    qt, ft = query.type, found.type
    if qt.is_primitive:
        return src if ft == qt else Cast(src, qt)
    if _same(physical_type(ft, layout), qt):
        return src
    if isinstance(qt, StructType) and isinstance(ft, StructType):
        by_id = {f.id: f for f in ft.fields}
        members = []
        for q in qt.fields:
            f = by_id.get(q.id)
            child_src = GetField(src, layout.name(f.id)) if f is not None else src
            members.append((q.name, project(q, f, child_src, layout, depth)))
        return StructOf(src, tuple(members))
    if isinstance(qt, ArrayType) and isinstance(ft, ArrayType):
        element = project(qt.element, ft.element, Var(depth), layout, depth + 1)
        return ForEach(src, element, depth)
    if isinstance(qt, MapType) and isinstance(ft, MapType):
        value = project(qt.value, ft.value, Var(depth), layout, depth + 1)
        return ForEachValue(src, value, depth)
    return Cast(src, qt)  # pragma: no cover - type rules never change nested kinds


def plan_group(query: Schema, file_schema: Schema, layout: Layout,
               files: tuple[str, ...]) -> ScanGroup:
    """The scan and projection for ``files`` written with ``file_schema`` (and ``layout``)."""
    columns = []
    for q in query.fields:
        found = file_schema.field_by_id(q.id) if file_schema.has_id(q.id) else None
        if found is not None and file_schema.parent_of(q.id) != -1:
            found = None  # a column moved between levels is not the same column here
        src: Expr = Col(layout.name(found.id)) if found is not None else Lit(None, q.type)
        columns.append((q.name, project(q, found, src, layout)))
    return ScanGroup(
        version_id=file_schema.version_id,
        files=files,
        read_type=physical_struct(file_schema, layout),
        columns=tuple(columns),
    )
