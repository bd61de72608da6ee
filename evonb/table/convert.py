"""Adopting existing data in place: ``evonb.convert(path)``.

A folder of Parquet files, or a Hudi copy-on-write table (see :mod:`evonb.table.hudi`), becomes an
evonb table without rewriting a data file. The first id-schema is worked out from the data
(Parquet footers, or Hudi's Avro schema); each field's physical name is the name the existing
files use, so the files are read as they are. Only ``.evo/`` is written: the table config, schema
version ``00000000000000000`` and its layout, a ``create`` commit, and a ``commit`` (operation
``convert``) whose ``added`` list binds every existing file to that first version.

Every check runs before anything is written; if writing fails, ``.evo/`` is removed again.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evonb.errors import (
    ColumnNotFoundError,
    InvalidArgumentError,
    SchemaEvolutionError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedTableError,
)
from evonb.schema.arrow_convert import field_from_arrow
from evonb.schema.nesting import check_nesting
from evonb.schema.partner import (
    FieldPartners,
    Partner,
    PartnerVisitor,
    by_name,
    partner_as,
    partner_type,
    visit_with_partner,
)
from evonb.schema.schema import INITIAL_VERSION, ROOT_ID, Schema, format_path
from evonb.schema.spark_convert import MISSING_ID, assign_missing_ids
from evonb.schema.types import (
    BINARY,
    STRING,
    ArrayType,
    MapType,
    NestedField,
    StructType,
    Type,
    with_children,
)
from evonb.table.commit import CommitMetadata
from evonb.table.config import TableConfig
from evonb.table.fileio import file_io, is_object_path, object_key
from evonb.table.fsutil import EVO_DIR, evo_dir
from evonb.table.layout import RESERVED, Layout, named_members, natively_readable
from evonb.table.partition_folders import check_partition_names
from evonb.table.properties import check_plugins, check_properties, property_values
from evonb.table.snapshot import DataFile
from evonb.table.table import BaseTable, TableMaker, check_key_columns, check_reserved
from evonb.table.transaction import Transaction

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

PROP_SOURCE = "evonb.adopted.source"
"""Table property: what the table was adopted from (``parquet`` or ``hudi``)."""
ADOPTED = "adopted"
"""``DataFile.kind`` of an adopted file: written by another tool, without ``_evo_commit_time``."""


# ------------------------------------------------------------------------------------- plans
@dataclass(frozen=True)
class AdoptedFile:
    """An existing data file to bind to the first schema version (path relative to the root)."""

    path: str
    partition: str = ""
    rows: int = 0
    bytes: int = 0


@dataclass(frozen=True)
class AdoptionPlan:
    """Everything :func:`install` writes: the first schema and layout, the files, the keys."""

    schema: Schema
    layout: Layout
    files: tuple[AdoptedFile, ...]
    name: str
    primary_key: tuple[str, ...] = ()
    precombine: str | None = None
    partition_by: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    source: Mapping[str, Any] = field(default_factory=dict)


def key_tuple(primary_key: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if primary_key is None:
        return None
    if isinstance(primary_key, str):
        return tuple(p.strip() for p in primary_key.split(",") if p.strip())
    return tuple(primary_key)


def with_properties(plan: AdoptionPlan, extra: Mapping[str, Any]) -> AdoptionPlan:
    """``plan`` with the properties ``extra`` set (:func:`property_values`: text, numbers or
    booleans)."""
    return dataclasses.replace(plan, properties={**plan.properties, **property_values(extra)})


def check_target(root: Path) -> None:
    """Refuse a missing folder and a folder that already is (or was half made into) a table."""
    io = file_io()
    if io.exists(root):
        raise UnsupportedTableError(f"Cannot convert {root}: it is not a folder",
                                    hint="give the folder that holds the data files")
    if not io.is_folder(root):
        raise TableNotFoundError(f"Nothing to convert: {root} does not exist",
                                 hint="give the folder that holds the data files")
    if TableConfig.exists(root):
        raise TableExistsError(f"{root} already is an evonb table",
                               hint="open it with evonb.open_table()")
    if io.is_folder(evo_dir(root)):
        raise TableExistsError(
            f"{root} has a {EVO_DIR} folder but no table config (a creation that did not finish?)",
            hint=f"remove {evo_dir(root)} and convert again",
        )


# ---------------------------------------------------------------------------- install
def install(root: Path, plan: AdoptionPlan, *, make: TableMaker | None = None) -> BaseTable:
    """Write the metadata of ``plan`` (after checking it); on any failure remove it again."""

    config = TableConfig(
        name=plan.name,
        table_type="cow",
        primary_key=plan.primary_key or None,
        precombine=plan.precombine,
        partition_by=plan.partition_by,
        properties=dict(plan.properties),
    )
    check_properties(config.properties)  # known names and their values, Parquet options
    check_plugins(config.properties, root=root)  # lock provider, conflict policy: known names
    try:
        config = config.resolve_ids(plan.schema)
    except ColumnNotFoundError as exc:
        raise UnsupportedTableError(
            f"Cannot use the key or partition columns given for {root}: {exc.message}",
            hint=exc.hint or f"columns: {', '.join(plan.schema.paths()[:20])}",
        ) from None
    try:
        check_key_columns(plan.schema, config)
    except SchemaEvolutionError as exc:
        raise UnsupportedTableError(
            exc.message, hint="pass primary_key=/precombine= naming top-level primitive columns",
        ) from None
    check_limits(root, plan, config)
    check_target(root)
    evo = evo_dir(root)
    try:
        if not is_object_path(evo):  # object stores have no folders: the config claims the root
            evo.mkdir()
    except FileExistsError:
        raise TableExistsError(f"{root} became a table while it was being converted") from None
    try:
        config.save(root, exclusive=True)
        table = (make or BaseTable)(root, config)
        with Transaction(table, "create", recover=False) as txn:
            txn.save_version(plan.schema, plan.layout)
            txn.complete(CommitMetadata.of("create", INITIAL_VERSION))
        # The adopted files are the user's: an aborted conversion never removes them.
        with Transaction(table, "commit", plan={"operation": "convert"}, recover=False) as txn:
            added = [DataFile(path=f.path, version=INITIAL_VERSION, instant=txn.instant,
                              partition=f.partition, rows=f.rows, bytes=f.bytes, kind=ADOPTED)
                     for f in plan.files]
            txn.complete(CommitMetadata.of(
                "convert", INITIAL_VERSION, added=added, rows_written=0,
                rows_adopted=sum(f.rows for f in added), source=dict(plan.source)))
    except BaseException:
        file_io().delete_folder(evo)
        raise
    return table


def check_limits(root: Path, plan: AdoptionPlan, config: TableConfig) -> None:
    """Refuse data that :func:`~evonb.table.table.create_table` would refuse as a new table:
    a column nested deeper than :data:`~evonb.schema.nesting.MAX_NESTING` (readers fail on it
    later, each in its own way) and partition columns whose folders could not hold a null."""
    try:
        check_nesting(plan.schema.fields)
    except SchemaEvolutionError as exc:
        raise UnsupportedTableError(
            f"Cannot convert {root}: {exc.message}",
            hint="rewrite the data with the deepest parts as JSON text (to_json) or in more "
            "columns, then convert it") from None
    try:
        check_partition_names([plan.layout.name(i) for i in config.partition_ids],
                              object_key(root))
    except InvalidArgumentError as exc:
        raise UnsupportedTableError(
            f"Cannot convert {root}: {exc.message}",
            hint="rewrite the data with a shorter partition column (read it with Spark, then "
            "evonb.create_table() and write), or convert each partition folder as a table of "
            "its own") from None


# ------------------------------------------------------------------- layout from the files
def adopted_layout(schema: Schema, extra_names: Mapping[int, Sequence[str]] = ()) -> Layout:
    """The layout that reads existing files: each field's physical name is its own name.

    ``extra_names`` (parent ID -> names) are columns present in the files but not in the schema
    (Hudi meta columns, for instance): they are marked used, so a later column never gets a
    physical name that old files already hold for other data.
    """
    physical: dict[int, str] = {}
    used: dict[int, set[str]] = {ROOT_ID: set(RESERVED)}
    for field_id, parent, name, _ in named_members(schema):
        physical[field_id] = name
        used.setdefault(parent, set()).add(name.lower())
    for parent, names in dict(extra_names).items():
        used.setdefault(parent, set()).update(n.lower() for n in names)
    return Layout(physical=physical, used={k: frozenset(v) for k, v in used.items()})


# ---------------------------------------------------------------------------- footers
@dataclass(frozen=True)
class Footer:
    """What a Parquet footer says: columns (IDs 0, names as in the file) and row count."""

    path: Path
    fields: tuple[NestedField, ...]
    rows: int
    bytes: int


def read_footer(path: Path) -> Footer:
    """The columns of a Parquet file as evonb fields (IDs left 0, file field IDs ignored).

    INT96 timestamps (Spark's legacy encoding) read as ``timestamp``; nanosecond timestamps,
    which Spark cannot read, and types evonb has no equivalent of raise
    :class:`UnsupportedTableError`.
    """
    import pyarrow.parquet as pq


    try:
        pf = pq.ParquetFile(file_io().open_data(path))
    except Exception as exc:  # pyarrow raises several kinds for a bad file
        raise UnsupportedTableError(f"{path} is not a readable Parquet file: {exc}") from None
    leaves = iter([pf.schema.column(i) for i in range(len(pf.schema))])
    fields = []
    for f in pf.schema_arrow:
        fixed = _plain_arrow_field(f, leaves, path)
        try:
            fields.append(field_from_arrow(fixed))
        except SchemaEvolutionError as exc:
            raise UnsupportedTableError(
                f"{path}: {exc.message}",
                hint="evonb reads the types Spark reads; rewrite that column first",
            ) from None
    return Footer(path, tuple(fields), pf.metadata.num_rows, file_io().size(path))


def _plain_arrow_field(f: pa.Field, leaves: Iterator[Any], path: Path) -> pa.Field:
    """``f`` without field metadata, INT96 leaves as UTC microsecond timestamps."""
    import pyarrow as pa
    import pyarrow.types as pat

    t = f.type
    if pat.is_struct(t):
        t = pa.struct([_plain_arrow_field(t.field(i), leaves, path) for i in range(t.num_fields)])
    elif pat.is_map(t):
        key = _plain_arrow_field(t.key_field, leaves, path)
        item = _plain_arrow_field(t.item_field, leaves, path)
        t = pa.map_(key, item)
    elif pat.is_list(t) or pat.is_large_list(t):
        t = pa.list_(_plain_arrow_field(t.value_field, leaves, path))
    else:
        leaf = next(leaves, None)
        if pat.is_dictionary(t):
            t = t.value_type
        if pat.is_fixed_size_binary(t):
            t = pa.binary()
        if pat.is_timestamp(t) and leaf is not None:
            if leaf.physical_type == "INT96":
                t = pa.timestamp("us", tz="UTC")
            elif t.unit == "ns":
                raise UnsupportedTableError(
                    f"{path}: column {leaf.path!r} holds nanosecond timestamps, which Spark "
                    "cannot read",
                    hint="rewrite the files with microsecond timestamps (pyarrow: "
                    "coerce_timestamps='us')",
                )
    return pa.field(f.name, t, f.nullable)


# -------------------------------------------------------------------- schema union/check
# Each walks the table's fields (or a file's) in lockstep with the other side's, members matched
# by exact name (the names the files use), on the visitor of :mod:`evonb.schema.partner`.
class _AtPath(PartnerVisitor[Partner, Any]):
    """A visitor that knows the path of the field it is in (for error messages)."""

    def __init__(self, where: str, prefix: tuple[str, ...]) -> None:
        self.where = where
        self.path = prefix

    def before_field(self, field: NestedField, partner: Partner | None) -> None:
        self.path = (*self.path, field.name)

    def after_field(self, field: NestedField, partner: Partner | None) -> None:
        self.path = self.path[:-1]


class _Union(_AtPath):
    """The visited type widened by its partner: struct members only in the partner appended,
    nullable where either side is, primitives that differ read as the one both widen to."""

    def field(self, a: NestedField, b: Partner | None, t: Type) -> NestedField:
        assert b is None or isinstance(b, NestedField)
        return a if b is None else a.replace(type=t, nullable=a.nullable or b.nullable)

    def struct(self, a: StructType, b: Partner | None, fields: Sequence[NestedField]) -> Type:
        other = self._same_kind(a, b)
        if not isinstance(other, StructType):
            return a
        own = {f.name for f in a.fields}
        extra = {f.name: f for f in other.fields}
        return StructType((*fields, *(f for name, f in extra.items() if name not in own)))

    def array(self, a: ArrayType, b: Partner | None, element: NestedField) -> Type:
        return a if self._same_kind(a, b) is None else ArrayType(element)

    def map(self, a: MapType, b: Partner | None, key: NestedField, value: NestedField) -> Type:
        return a if self._same_kind(a, b) is None else MapType(key, value)

    def primitive(self, a: Type, b: Partner | None) -> Type:
        other = a if b is None else partner_type(b)
        if a == other:
            return a
        if other.is_primitive and natively_readable(a, other):
            return other
        if other.is_primitive and natively_readable(other, a):
            return a
        raise self._conflict(a, other)

    def _same_kind(self, a: Type, b: Partner | None) -> Type | None:
        """The partner's type, None without one; a nested type of another kind conflicts."""
        other = None if b is None else partner_type(b)
        if other is not None and type(other) is not type(a):
            raise self._conflict(a, other)
        return other

    def _conflict(self, a: Type, b: Type) -> UnsupportedTableError:
        return UnsupportedTableError(
            f"Column {format_path(self.path)!r} has conflicting types in the files: {a} and {b} "
            f"({self.where})",
            hint="rewrite the files whose type differs, or convert the folders separately",
        )


def union_fields(a: tuple[NestedField, ...], b: tuple[NestedField, ...], where: str,
                 prefix: tuple[str, ...] = ()) -> tuple[NestedField, ...]:
    """Members of ``a`` then those only in ``b`` (by exact name); types must agree or widen."""
    return visit_with_partner(StructType(a), StructType(b), _Union(where, prefix),
                              FieldPartners(by_name)).fields


class _Relax(PartnerVisitor[Partner, Any]):
    """The visited (table) type with every struct member its partner (the file) lacks made
    nullable; map keys are left as they are."""

    def field(self, t: NestedField, f: Partner | None, new_type: Type) -> NestedField:
        if f is None:
            return t if t.nullable else t.replace(nullable=True)
        return t if new_type is t.type else t.replace(type=new_type)

    def struct(self, t: StructType, f: Partner | None, fields: Sequence[NestedField]) -> Type:
        return t if partner_as(f, StructType) is None else StructType(tuple(fields))

    def array(self, t: ArrayType, f: Partner | None, element: NestedField) -> Type:
        if partner_as(f, ArrayType) is None:
            return t
        return ArrayType(t.element.replace(type=element.type))

    def map(self, t: MapType, f: Partner | None, key: NestedField, value: NestedField) -> Type:
        if partner_as(f, MapType) is None:
            return t
        return MapType(t.key, t.value.replace(type=value.type))

    def primitive(self, t: Type, f: Partner | None) -> Type:
        return t


def relax_missing(table_fields: tuple[NestedField, ...], file_fields: tuple[NestedField, ...]
                  ) -> tuple[NestedField, ...]:
    """``table_fields`` with every field that the file lacks made nullable (it reads null)."""
    return visit_with_partner(StructType(table_fields), StructType(file_fields), _Relax(),
                              FieldPartners(by_name)).fields


Owned = list[tuple[int | None, str]]


class _FileOnly(PartnerVisitor[Partner, Owned]):
    """(parent ID, name) of every member of the visited (file) structs that the partner (the
    table's struct at the same place) lacks. The parent ID is None until the struct names it:
    the ID of the table field (element, value) that holds the struct. Map keys are skipped."""

    def __init__(self, root_id: int) -> None:
        self.root_id = root_id

    def field(self, f: NestedField, t: Partner | None, found: Owned) -> Owned:
        return [(None, f.name)] if t is None else found

    def struct(self, s: StructType, t: Partner | None, fields: Sequence[Owned]) -> Owned:
        if partner_as(t, StructType) is None:
            return []
        owner = t.id if isinstance(t, NestedField) else self.root_id
        return [(owner if parent is None else parent, name) for f in fields for parent, name in f]

    def array(self, a: ArrayType, t: Partner | None, element: Owned) -> Owned:
        return [] if partner_as(t, ArrayType) is None else element

    def map(self, m: MapType, t: Partner | None, key: Owned, value: Owned) -> Owned:
        return [] if partner_as(t, MapType) is None else value

    def primitive(self, p: Type, t: Partner | None) -> Owned:
        return []


def file_only_names(table_fields: tuple[NestedField, ...], file_fields: tuple[NestedField, ...],
                    parent_id: int = ROOT_ID, into: dict[int, set[str]] | None = None
                    ) -> dict[int, set[str]]:
    """Names the file has but the schema does not, per parent ID (struct members included)."""
    out: dict[int, set[str]] = {} if into is None else into
    for owner, name in visit_with_partner(StructType(file_fields), StructType(table_fields),
                                          _FileOnly(parent_id), FieldPartners(by_name)):
        assert owner is not None
        out.setdefault(owner, set()).add(name)
    return out


class _Check(_AtPath):
    """Raise :class:`UnsupportedTableError` where the partner (a file's type) cannot be read
    as the visited (table) type."""

    def struct(self, t: StructType, f: Partner | None, fields: Sequence[None]) -> None:
        self._check(t, f)

    def array(self, t: ArrayType, f: Partner | None, element: None) -> None:
        self._check(t, f)

    def map(self, t: MapType, f: Partner | None, key: None, value: None) -> None:
        self._check(t, f)

    def primitive(self, t: Type, f: Partner | None) -> None:
        self._check(t, f)

    def _check(self, table: Type, f: Partner | None) -> None:
        found = table if f is None else partner_type(f)
        if type(found) is type(table) and table.is_nested:
            return  # its parts are checked on their own
        if table.is_primitive and found.is_primitive and (
            natively_readable(found, table) or {table, found} == {STRING, BINARY}
        ):
            return
        raise UnsupportedTableError(
            f"Column {format_path(self.path)!r} is {found} in {self.where}, which cannot be "
            f"read as the table's {table}",
            hint="rewrite that file with the table's type first",
        )


def check_readable(table_fields: tuple[NestedField, ...], file_fields: tuple[NestedField, ...],
                   where: str, prefix: tuple[str, ...] = ()) -> None:
    """Raise :class:`UnsupportedTableError` if a file column cannot be read as the table's type
    (matched by exact name; columns missing on either side are fine)."""
    visit_with_partner(StructType(table_fields), StructType(file_fields), _Check(where, prefix),
                       FieldPartners(by_name))


def with_ids(fields: tuple[NestedField, ...]) -> Schema:
    """A first schema version: fresh IDs in pre-order (IDs in the input are discarded)."""
    fields, _ = assign_missing_ids(_zero_ids(fields), 0)
    try:
        return Schema(fields, INITIAL_VERSION)
    except SchemaEvolutionError as exc:
        raise UnsupportedTableError(f"The data's schema is not valid for evonb: {exc.message}",
                                    hint=exc.hint) from None


def _zero_ids(fields: tuple[NestedField, ...]) -> tuple[NestedField, ...]:
    out = []
    for f in fields:
        t = f.type
        if t.is_nested:
            t = with_children(t, _zero_ids(t.children()))
        out.append(f.replace(id=MISSING_ID, type=t))
    return tuple(out)


# ------------------------------------------------------------------------- plain Parquet
_HIVE = re.compile(r"([^=]+)=(.*)")


def list_data_files(root: Path) -> tuple[list[Path], list[Path]]:
    """(Parquet files, other files) under ``root``, skipping hidden and ``_`` files and folders."""
    parquet: list[Path] = []
    other: list[Path] = []
    io = file_io()
    stack = [root]
    while stack:
        here = stack.pop()
        for name in sorted(io.names(here)):
            if not name.startswith((".", "_")):
                (parquet if name.endswith(".parquet") else other).append(here / name)
        stack.extend(here / d for d in sorted(io.folders(here), reverse=True)
                     if not d.startswith((".", "_")))
    return parquet, other


def plan_parquet(root: Path, *, name: str | None, primary_key: tuple[str, ...],
                 precombine: str | None) -> AdoptionPlan:
    """The adoption plan of a folder of Parquet files."""
    files, other = list_data_files(root)
    if other:
        shown = ", ".join(str(p.relative_to(root)) for p in other[:5])
        raise UnsupportedTableError(
            f"{root} holds files that are not Parquet ({shown}"
            f"{', ...' if len(other) > 5 else ''})",
            hint="move them out of the folder (hidden and _-prefixed files are ignored)",
        )
    if not files:
        raise UnsupportedTableError(
            f"No Parquet files under {root}: nothing to convert",
            hint="convert a folder of .parquet files, or a Hudi table; for a new table use "
            "evonb.create_table()",
        )
    footers = [read_footer(p) for p in files]
    fields: tuple[NestedField, ...] = ()
    for ft in footers:
        check_no_reserved(root, ft)
        fields = union_fields(fields, ft.fields, f"file {ft.path.relative_to(root)}")
    for ft in footers:
        fields = relax_missing(fields, ft.fields)
    schema = with_ids(fields)
    partition_by = _hive_partitions(root, footers, schema)
    adopted = tuple(
        AdoptedFile(path=ft.path.relative_to(root).as_posix(),
                    partition=_folder(root, ft.path),
                    rows=ft.rows, bytes=ft.bytes)
        for ft in footers
    )
    return AdoptionPlan(
        schema=schema,
        layout=adopted_layout(schema),
        files=adopted,
        name=name or root.name,
        primary_key=primary_key,
        precombine=precombine,
        partition_by=partition_by,
        properties={PROP_SOURCE: "parquet"},
        source={"format": "parquet", "files": len(adopted)},
    )


def check_no_reserved(root: Path, footer: Footer) -> None:
    """Refuse a file with a top-level column named like evonb's hidden column
    (:func:`~evonb.table.table.check_reserved`): the table could not keep it, and dropping it
    would lose its data."""
    try:
        check_reserved([f.name for f in footer.fields])
    except SchemaEvolutionError as exc:
        raise UnsupportedTableError(
            f"{footer.path.relative_to(root)} holds a column the table could not keep: "
            f"{exc.message}",
            hint="rewrite the data with the column renamed (read it with Spark, "
            "withColumnRenamed, then evonb.create_table() and write)") from None


def _folder(root: Path, path: Path) -> str:
    rel = path.parent.relative_to(root)
    return "" if rel == Path(".") else rel.as_posix()


def _hive_partitions(root: Path, footers: list[Footer], schema: Schema) -> tuple[str, ...]:
    """The Hive-style partition keys (``k=v`` folders) if the files keep those columns.

    A partition column that is only in the folder names is refused: evonb reads columns from
    the files, so its values would be lost.
    """
    layouts: set[tuple[str, ...]] = set()
    for ft in footers:
        parts = ft.path.parent.relative_to(root).parts
        keys = tuple(m.group(1) for m in map(_HIVE.fullmatch, parts) if m)
        layouts.add(keys)
        names = {f.name for f in ft.fields}
        missing = [k for k in keys if k not in names]
        if missing:
            raise UnsupportedTableError(
                f"{ft.path.relative_to(root)} sits in a Hive-style partition folder "
                f"({'/'.join(parts)}) but does not hold the column {missing[0]!r}: its value is "
                "only in the folder name, and evonb reads columns from the files",
                hint="rewrite the data with the partition column kept in the files (e.g. read "
                "it with Spark, then evonb.create_table() and write), or convert each partition "
                "folder as a table of its own",
            )
    if len(layouts) != 1:
        return ()
    keys = layouts.pop()
    top = {f.name for f in schema.fields if f.type.is_primitive}
    return keys if all(k in top for k in keys) else ()


__all__ = ["AdoptedFile", "AdoptionPlan", "adopted_layout", "check_target", "install", "key_tuple",
           "plan_parquet", "with_properties"]
