"""Read planning: how each query column is found in a file written with another schema version.

Everything here is pure data, testable without Spark. A :class:`ScanGroup` is a set of files read
by one Spark scan with ``read_type`` (physical names, file types); ``columns`` say how each query
column is built from that scan, by field ID: a renamed column reads its physical column, a column
the files do not have reads its read default or null, a widened type is cast, nested structs are
rebuilt member by member (inside arrays and map values too).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evonb.errors import CommitNotFoundError, EvoError
from evonb.schema.partner import FieldPartners, PartnerVisitor, by_id, visit_field
from evonb.schema.promotion import can_change_type, casts_directly, is_number, narrows_number
from evonb.schema.schema import Schema
from evonb.schema.types import (
    BINARY,
    STRING,
    ArrayType,
    DecimalType,
    MapType,
    NestedField,
    StructType,
    Type,
)
from evonb.table.layout import Layout, keeps_physical_name

Via = Mapping[int, tuple[Type, ...]]
"""For each primitive field ID whose values may pass through more than one type, those types,
oldest first, ending with the query's type (see :func:`type_paths`)."""


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
    """``src`` read as ``type`` (Spark's ``try_cast``). ``exact`` is the file's type when
    the cast narrows a number (files written before a :meth:`Table.rewrite` narrowed the
    column): a value that does not convert back to itself (a fraction, an overflow, a lost
    digit) reads as null, the rule the rewrite applies to the rows it converts."""

    src: Expr
    type: Type
    exact: Type | None = None


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


def referenced_columns(expr: Expr) -> set[str]:
    """The top-level physical columns (:class:`Col`) ``expr`` reads."""
    import dataclasses

    if isinstance(expr, Col):
        return {expr.name}
    out: set[str] = set()
    if not dataclasses.is_dataclass(expr):
        return out
    for field in dataclasses.fields(expr):
        value = getattr(expr, field.name)
        items = value if isinstance(value, tuple) else (value,)
        for item in items:
            if isinstance(item, tuple):  # StructOf members: (name, expr)
                item = item[-1]
            if isinstance(item, Expr):
                out |= referenced_columns(item)
    return out


@dataclass(frozen=True, slots=True)
class ScanGroup:
    """Files read by one scan: their schema version, the physical read type, the projection.

    ``read_defaults`` are top-level physical columns that the Parquet reader itself fills with a
    constant in files that lack them (Spark's ``EXISTS_DEFAULT``), by physical name.
    """

    version_id: str
    files: tuple[str, ...]
    read_type: StructType
    columns: tuple[tuple[str, Expr], ...]
    read_defaults: tuple[tuple[str, Lit], ...] = ()


# Not on the partner visitor: one tree renamed through a flat ID -> name map, no second tree.
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
    """Equal field IDs, names and types at every depth (nullability, defaults and comments
    aside): a file struct read as it is then has exactly the query's members. Names alone are
    not enough: after a swap of two names, or a drop and re-add under the old name, the file's
    physical names can equal the query's names while their IDs differ."""
    if a.is_primitive or b.is_primitive:
        return a == b
    if type(a) is not type(b):
        return False
    ca, cb = a.children(), b.children()
    return len(ca) == len(cb) and all(
        x.id == y.id and x.name == y.name and _same(x.type, y.type)
        for x, y in zip(ca, cb, strict=True)
    )


@dataclass(frozen=True, slots=True)
class _Found:
    """A query field's partner in the file: the file's field, the expression that reads it
    from the scan, and the depth of the next lambda variable."""

    field: NestedField
    src: Expr
    depth: int


class _InScan:
    """Partners of the query's fields: the file's field with the same ID, read by its physical
    name from the struct (or as the lambda variable of the array or map) that holds it. Map
    keys are never rebuilt, so they have none."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.members = FieldPartners(by_id)

    def field_partner(self, partner: _Found, field: NestedField) -> _Found | None:
        f = self.members.field_partner(partner.field, field)
        if f is None:
            return None
        return _Found(f, GetField(partner.src, self.layout.name(f.id)), partner.depth)

    def element_partner(self, partner: _Found) -> _Found | None:
        element = self.members.element_partner(partner.field)
        return None if element is None else _Found(element, Var(partner.depth), partner.depth + 1)

    def key_partner(self, partner: _Found) -> _Found | None:
        return None

    def value_partner(self, partner: _Found) -> _Found | None:
        value = self.members.value_partner(partner.field)
        return None if value is None else _Found(value, Var(partner.depth), partner.depth + 1)


class _Project(PartnerVisitor[_Found, Expr]):
    """How to build each query field from its partner: as it is, cast, rebuilt member by
    member, or its read default where the file lacks it. With ``via`` (a snapshot read in
    another schema), a value is first cast to its type in the snapshot's schema."""

    def __init__(self, layout: Layout, via: Via | None = None) -> None:
        self.layout = layout
        self.via = via or {}

    def field(self, query: NestedField, found: _Found | None, built: Expr) -> Expr:
        return Lit(query.default, query.type) if found is None else built

    def struct(self, qt: StructType, found: _Found | None, members: Sequence[Expr]) -> Expr:
        whole = self._whole(qt, found, StructType)
        return whole if whole is not None else StructOf(
            found.src, tuple((q.name, m) for q, m in zip(qt.fields, members, strict=True)))

    def array(self, qt: ArrayType, found: _Found | None, element: Expr) -> Expr:
        whole = self._whole(qt, found, ArrayType)
        return whole if whole is not None else ForEach(found.src, element, found.depth)

    def map(self, qt: MapType, found: _Found | None, key: Expr, value: Expr) -> Expr:
        whole = self._whole(qt, found, MapType)
        return whole if whole is not None else ForEachValue(found.src, value, found.depth)

    def primitive(self, qt: Type, found: _Found | None) -> Expr:
        if found is None:
            return Lit(None, qt)  # unused: the field reads its default
        ft = found.field.type
        src = found.src
        path = self.via.get(found.field.id)
        if path:  # through each type the value had since the file stored it
            steps = types_after(path, self.layout.history(found.field.id, ft), ft)
            # the last step is the query's type (cast below); an earlier one may be it too
            # (string -> decimal(5,2) -> string), and is a step of its own
            for t in steps[:-1] if steps and steps[-1] == qt else steps:
                if t != ft:
                    src, ft = _cast(src, ft, t), t
        if ft == qt:
            return src
        return _cast(src, ft, qt)

    def _whole(self, qt: Type, found: _Found | None, kind: type) -> Expr | None:
        """A nested ``qt`` read whole: as it is (the same members at every depth, by ID and
        physical name), or cast; None when it is rebuilt from the parts of the file's
        ``kind``. The null literal where the file lacks it (unused: the field reads its
        default)."""
        if found is None:
            return Lit(None, qt)
        ft = found.field.type
        if _same(physical_type(ft, self.layout), qt) and not self._carries(ft):
            return found.src
        if isinstance(ft, kind):
            return None
        return Cast(found.src, qt)  # pragma: no cover - type rules never change nested kinds


    def _carries(self, nested: Type) -> bool:
        """Whether a primitive inside the file's ``nested`` type passes through a type
        between its own and the query's (``string -> decimal(5,2) -> string``): then the
        value is rebuilt from its parts, not taken whole, although the types are the same."""
        if not self.via:
            return False
        todo = list(nested.children())
        while todo:
            f = todo.pop()
            if not f.type.is_primitive:
                todo.extend(f.type.children())
                continue
            path = self.via.get(f.id)
            stored = self.layout.history(f.id, f.type)
            # only where the file's own types lead into the path: then the steps after them
            # are the ones the value takes (elsewhere the value is taken whole, as before)
            if (path and stored is not None and path[:len(stored)] == stored
                    and len(path) - len(stored) > 1):
                return True
        return False


def _cast(src: Expr, ft: Type, t: Type) -> Expr:
    """``src`` (of type ``ft``) cast to ``t``, through text where no cast leads from ``ft`` to
    ``t`` directly (:func:`~evonb.schema.promotion.casts_directly`)."""
    if not casts_directly(ft, t):
        src, ft = Cast(src, STRING), STRING
    return Cast(src, t, exact=ft if narrows_number(ft, t) else None)


def type_paths(query: Schema, layout: Layout | None, snapshot: Schema | None = None,
               snapshot_layout: Layout | None = None) -> Via | None:
    """The types a value of each of ``query``'s primitive fields passes through on a read
    (``layout``: the query version's layout). A value stored in an older type is carried
    through each later one: an ``int`` stored before the column became ``double`` reads
    ``"5.0"`` in a later ``string`` column, as a value stored while it was ``double`` (or
    rewritten then) does. So what a read shows depends neither on which files a rewrite or
    compaction wrote in between nor on which files of a generation are live.

    A snapshot read in another schema (``snapshot``, its version's ``snapshot_layout``; time
    travel in the latest schema, say): each value as the snapshot shows it (through the
    snapshot's own types), then cast to ``query``'s type; where no one type change leads
    there and the two are not both numbers (a snapshot's ``int`` read in a ``date`` column that
    was ``string`` in between), through the types the column had after the snapshot's
    (``layout``'s history, :func:`_later`). A field the snapshot lacks but its files store
    (dropped then, restored by a revert since) reads through the types of ``layout``'s
    history, as in a read of the latest snapshot: the snapshot has no type of its own.
    Layouts written before histories were kept know no history: a value is cast to the
    snapshot's type, then to the query's. None when nothing passes through more than one
    type."""
    out: dict[int, tuple[Type, ...]] = {}
    if snapshot is None or snapshot.version_id == query.version_id:
        if layout is not None and layout.typed:
            out.update(layout.types)
        return out or None
    for fid in snapshot.field_ids():
        t = snapshot.field_by_id(fid).type
        if not t.is_primitive or not query.has_id(fid):
            continue
        qt = query.field_by_id(fid).type
        own = snapshot_layout.history(fid, t) if snapshot_layout is not None else None
        path = own if own is not None else (t,)
        if path[-1] != qt:
            path = (*path, *_later(path, qt, layout.history(fid, qt) if layout else None))
        if len(path) > 1:
            out[fid] = path
    restored = () if layout is None else query.field_ids()
    for fid in restored:  # dropped in the snapshot, restored by a revert since
        qt = query.field_by_id(fid).type
        if snapshot.has_id(fid) or not qt.is_primitive:
            continue
        history = layout.history(fid, qt)
        if history is not None and len(history) > 1:
            out[fid] = history
    return out or None


def _later(path: tuple[Type, ...], qt: Type, history: tuple[Type, ...] | None
           ) -> tuple[Type, ...]:
    """The types after ``path`` (a snapshot's own) on the way to the query's type ``qt``:
    ``qt`` alone where one type change leads there or both are numbers (the value as the
    commit showed it, cast once; a narrowing keeps only a value that fits exactly), else the
    types of the query's ``history`` after the snapshot's last one (a number of a column that
    became text, then a date, goes through the text, as the column did)."""
    last = path[-1]
    once = can_change_type(last, qt) or (is_number(last) and is_number(qt))
    if once or history is None or last not in history:
        return (qt,)
    rest = types_after(history, path, last)
    return rest if rest and rest[-1] == qt else (qt,)


def read_paths(versions: Callable[[str], tuple[Schema, Layout]], query: Schema,
               snapshot_version: str) -> Via | None:
    """:func:`type_paths` of a read of the snapshot of schema version ``snapshot_version`` in
    ``query``, with ``versions`` looking a version and its layout up (a query that is not a
    stored version, as a schema made for one read, knows no histories; a damaged layout
    raises, never reads without its histories)."""
    try:
        _, layout = versions(query.version_id)
    except CommitNotFoundError:
        layout = None
    if snapshot_version != query.version_id:
        return type_paths(query, layout, *versions(snapshot_version))
    return type_paths(query, layout)


def types_after(path: tuple[Type, ...], stored: tuple[Type, ...] | None, ft: Type
                ) -> tuple[Type, ...]:
    """The types of ``path`` a value of ``ft`` passes through after it: those after the
    file's own history (``stored``) where the path continues it, else those after the last
    ``ft`` in the path, else all of them."""
    if stored is not None and path[:len(stored)] == stored:
        return path[len(stored):]
    if ft in path:
        return path[len(path) - path[::-1].index(ft):]
    return path


def project(query: NestedField, found: NestedField | None, src: Expr, layout: Layout,
            depth: int = 0, via: Via | None = None) -> Expr:
    """How to build query field ``query`` from ``src``, the file's field ``found`` (same ID);
    ``via``: see :func:`type_paths`."""
    partner = None if found is None else _Found(found, src, depth)
    return visit_field(query, partner, _Project(layout, via), _InScan(layout))


def plan_group(query: Schema, file_schema: Schema, layout: Layout,
               files: tuple[str, ...], *, via: Via | None = None) -> ScanGroup:
    """The scan and projection for ``files`` written with ``file_schema`` (and ``layout``);
    ``via``: see :func:`type_paths`."""
    columns = []
    for q in query.fields:
        found = file_schema.field_by_id(q.id) if file_schema.has_id(q.id) else None
        if found is not None and file_schema.parent_of(q.id) != -1:
            found = None  # a column moved between levels is not the same column here
        src: Expr = Col(layout.name(found.id)) if found is not None else Lit(None, q.type)
        columns.append((q.name, project(q, found, src, layout, via=via)))
    return ScanGroup(
        version_id=file_schema.version_id,
        files=files,
        read_type=physical_struct(file_schema, layout),
        columns=tuple(columns),
    )


# ---------------------------------------------------------------------------------------------
# One scan over files of many schema versions.
#
# Physical names are stable per field ID, so files of different versions can share one Spark
# scan: the read type is the union of the versions' physical columns (a physical name always has
# natively readable types across versions). A column that changed type in a way Spark cannot
# widen has one physical name per generation: ``coalesce(newest, cast(older), ...)`` (a file
# holds only one generation). A column with a read default that some files lack reads the
# default in exactly those files, chosen by file name.


@dataclass(frozen=True, slots=True)
class Coalesce(Expr):
    """The first non-null of ``items`` (generations of one column, newest first)."""

    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class DefaultIn(Expr):
    """``default`` in rows of the files named ``files``, else ``value``."""

    files: frozenset[str]
    default: Lit
    value: Expr


@dataclass(frozen=True, slots=True)
class VersionFiles:
    """A schema version, its layout and the names (basenames) of its live files."""

    schema: Schema
    layout: Layout
    names: frozenset[str]


def merge_types(types: list[Type]) -> Type:
    """The read type of one physical column over versions, newest first."""
    newest = types[0]
    if isinstance(newest, StructType):
        by_name: dict[str, list[NestedField]] = {}
        order: list[str] = []
        for t in types:
            if not isinstance(t, StructType):
                continue
            for f in t.fields:
                key = f.name.lower()
                if key not in by_name:
                    by_name[key] = []
                    order.append(key)
                by_name[key].append(f)
        return StructType(tuple(
            by_name[k][0].replace(type=merge_types([f.type for f in by_name[k]])) for k in order
        ))
    if isinstance(newest, ArrayType):
        elements = [t.element.type for t in types if isinstance(t, ArrayType)]
        return ArrayType(newest.element.replace(type=merge_types(elements)))
    if isinstance(newest, MapType):
        values = [t.value.type for t in types if isinstance(t, MapType)]
        return MapType(newest.key, newest.value.replace(type=merge_types(values)))
    return newest


Source = tuple[NestedField, Layout, Expr, frozenset[str]]


# Not on the partner visitor: it walks several versions at once, down only while they agree.
def project_sources(query: NestedField, sources: list[Source], all_names: frozenset[str],
                    depth: int = 0, via: Via | None = None) -> Expr:
    """Build ``query`` from its ``sources``: (field, layout, src, files) per version that has it,
    newest version first; ``all_names`` are the files that can reach this point."""
    if not sources:
        return Lit(query.default, query.type)
    generations: dict[Expr, tuple[NestedField, Layout]] = {}
    for f, layout, src, _ in sources:
        generations.setdefault(src, (f, layout))
    qt = query.type
    if isinstance(qt, StructType) and len(generations) == 1:
        (src, _), = generations.items()
        members = []
        for q in qt.fields:
            member_sources = []
            for f, layout, s, names in sources:
                assert isinstance(f.type, StructType)
                child = next((c for c in f.type.fields if c.id == q.id), None)
                if child is not None:
                    member_sources.append((child, layout, GetField(s, layout.name(child.id)),
                                           names))
            members.append((q.name, _with_default(q, member_sources, all_names, depth, via)))
        return StructOf(src, tuple(members))
    if isinstance(qt, ArrayType) and len(generations) == 1 and not qt.element.type.is_primitive:
        (src, _), = generations.items()
        inner = [(f.type.element, layout, Var(depth), names)  # type: ignore[union-attr]
                 for f, layout, _, names in sources]
        return ForEach(src, project_sources(qt.element, inner, all_names, depth + 1, via),
                       depth)
    if isinstance(qt, MapType) and len(generations) == 1 and not qt.value.type.is_primitive:
        (src, _), = generations.items()
        inner = [(f.type.value, layout, Var(depth), names)  # type: ignore[union-attr]
                 for f, layout, _, names in sources]
        return ForEachValue(src, project_sources(qt.value, inner, all_names, depth + 1, via),
                            depth)
    items = tuple(project(query, f, src, layout, depth, via) for src, (f, layout) in
                  generations.items())
    return items[0] if len(items) == 1 else Coalesce(items)


def _with_default(query: NestedField, sources: list[Source], all_names: frozenset[str],
                  depth: int, via: Via | None = None) -> Expr:
    value = project_sources(query, sources, all_names, depth, via)
    if query.default is None or not sources:
        return value
    having = frozenset().union(*(names for *_, names in sources))
    lacking = all_names - having
    if not lacking:
        return value
    return DefaultIn(lacking, Lit(query.default, query.type), value)


def native_default(query: NestedField, value: Expr, read_type: StructType) -> str | None:
    """The physical column whose missing values the reader can fill with ``query``'s default,
    or None: only a primitive column read as it is stored (no cast, one generation) of a type
    that Spark's vectorized Parquet reader fills correctly (not binary, decimals of precision
    at most 18)."""
    if not isinstance(value, Col) or not _fillable(query.type):
        return None
    stored = next((f for f in read_type.fields if f.name == value.name), None)
    return value.name if stored is not None and stored.type == query.type else None


def _fillable(t: Type) -> bool:
    if isinstance(t, DecimalType):
        return t.precision <= 18
    return t.is_primitive and t is not BINARY


def one_scan_sets(versions: Sequence[VersionFiles]) -> list[list[VersionFiles]]:
    """``versions`` split into sets that one merged scan each reads right, newest first.

    A merged scan reads every physical column in its newest type and leaves older files to
    Spark's own widening. Layouts derived by today's rules give a column a new physical name
    whenever Spark cannot do that (:func:`~evonb.table.layout.keeps_physical_name`), so their
    versions form one set. A layout written before a rule was found wrong (an integer to a
    decimal of fewer integer digits than the vectorized reader asks, a date to a timestamp)
    shares a name across such a change: its older versions go to a set of their own, read in
    their own type and cast.
    """
    sets: list[tuple[list[VersionFiles], dict[str, Type]]] = []
    for v in sorted(versions, key=lambda v: v.schema.version_id, reverse=True):
        columns = {f.name.lower(): f.type for f in physical_struct(v.schema, v.layout).fields}
        for members, newest in sets:
            if all(name not in newest or _widens_natively(t, newest[name])
                   for name, t in columns.items()):
                members.append(v)
                for name, t in columns.items():  # a member only older versions have, too
                    newest[name] = merge_types([newest[name], t]) if name in newest else t
                break
        else:
            sets.append(([v], dict(columns)))
    return [members for members, _ in sets]


def _widens_natively(file_type: Type, read_type: Type) -> bool:
    """Whether a merged scan reads a physical column stored as ``file_type`` in ``read_type``
    (struct members matched by physical name, as :func:`merge_types` merges them)."""
    if isinstance(file_type, StructType) and isinstance(read_type, StructType):
        members = {f.name.lower(): f.type for f in read_type.fields}
        return all(f.name.lower() not in members
                   or _widens_natively(f.type, members[f.name.lower()])
                   for f in file_type.fields)
    if isinstance(file_type, ArrayType) and isinstance(read_type, ArrayType):
        return _widens_natively(file_type.element.type, read_type.element.type)
    if isinstance(file_type, MapType) and isinstance(read_type, MapType):
        return (file_type.key.type == read_type.key.type
                and _widens_natively(file_type.value.type, read_type.value.type))
    if file_type.is_primitive and read_type.is_primitive:
        return keeps_physical_name(file_type, read_type)
    return False


def plan_merged(query: Schema, versions: list[VersionFiles], files: tuple[str, ...],
                *, native_defaults: bool = False, via: Via | None = None) -> ScanGroup:
    """One scan over ``files`` (written with ``versions``) projected onto ``query``.

    With ``native_defaults``, a top-level column that some files lack and whose read default the
    Parquet reader can fill (see :func:`native_default`) is left to the reader rather than
    chosen per row by file name: the scan stays a plain column read, with filter pushdown.
    """
    ordered = sorted(versions, key=lambda v: v.schema.version_id, reverse=True)
    all_names = frozenset().union(*(v.names for v in ordered)) if ordered else frozenset()
    physical: dict[str, list[Type]] = {}
    order: list[str] = []
    for v in ordered:
        for f in physical_struct(v.schema, v.layout).fields:
            key = f.name.lower()
            if key not in physical:
                physical[key] = []
                order.append(key)
            physical[key].append(f.type)
    names = {f.name.lower(): f.name for v in ordered
             for f in physical_struct(v.schema, v.layout).fields}
    read_type = StructType(tuple(
        NestedField(i + 1, names[k], merge_types(physical[k])) for i, k in enumerate(order)
    ))
    columns = []
    read_defaults = []
    for q in query.fields:
        sources = []
        for v in ordered:
            if v.schema.has_id(q.id) and v.schema.parent_of(q.id) == -1:
                f = v.schema.field_by_id(q.id)
                sources.append((f, v.layout, Col(v.layout.name(f.id)), v.names))
        expr = _with_default(q, sources, all_names, 0, via)
        if native_defaults and isinstance(expr, DefaultIn):
            filled = native_default(q, expr.value, read_type)
            if filled is not None:
                read_defaults.append((filled, expr.default))
                expr = expr.value
        columns.append((q.name, expr))
    version_id = ordered[0].schema.version_id if ordered else query.version_id
    return ScanGroup(version_id=version_id, files=files, read_type=read_type,
                     columns=tuple(columns), read_defaults=tuple(read_defaults))


def selected_columns(schema: Schema, columns: Sequence[str] | str | None
                     ) -> list[tuple[NestedField, tuple[str, ...]]]:
    """The fields a read's ``columns`` select in ``schema``, each with its path of names from
    the top (a top-level column, or a member of structs nested in structs); every column when
    ``columns`` is None. Both readers select through this: an unknown name is a
    :class:`~evonb.errors.ColumnNotFoundError` naming the closest, a member of an array or a
    map and an empty selection are refused."""
    if columns is None:
        return [(f, (f.name,)) for f in schema.fields]
    if isinstance(columns, str):
        columns = [columns]
    if not columns:
        raise EvoError("columns names no column",
                       hint="pass columns=None to read every column, or name at least one")
    out = []
    for name in columns:
        fid = schema.find_id(name)  # ColumnNotFoundError naming the closest column
        parent = schema.parent_of(fid)
        while parent != -1:
            if not isinstance(schema.field_by_id(parent).type, StructType):
                holder = schema.path_of(parent)
                raise EvoError(
                    f"columns selects top-level columns and struct members; {name!r} is "
                    f"inside {holder!r}, an array or a map",
                    hint=f"select {holder!r} and take the values from it")
            parent = schema.parent_of(parent)
        info = schema.info(fid)
        out.append((info.field, info.path))
    return out
