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
    SchemaEvolutionError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedTableError,
)
from evonb.schema.arrow_convert import field_from_arrow
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
from evonb.table.fileio import file_io
from evonb.table.fsutil import EVO_DIR, evo_dir
from evonb.table.layout import META_COMMIT_TIME, RESERVED, Layout, named_members, natively_readable
from evonb.table.properties import check_plugins
from evonb.table.snapshot import DataFile
from evonb.table.table import BaseTable, TableMaker, check_key_columns
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
    merged = dict(plan.properties)
    for k, v in extra.items():
        merged[str(k)] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return dataclasses.replace(plan, properties=merged)


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
    check_target(root)
    evo = evo_dir(root)
    try:
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
        pf = pq.ParquetFile(path)
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
def union_fields(a: tuple[NestedField, ...], b: tuple[NestedField, ...], where: str,
                 prefix: tuple[str, ...] = ()) -> tuple[NestedField, ...]:
    """Members of ``a`` then those only in ``b`` (by exact name); types must agree or widen."""
    by_name = {f.name: f for f in b}
    out = []
    for f in a:
        other = by_name.pop(f.name, None)
        out.append(f if other is None else _union_field(f, other, where, (*prefix, f.name)))
    out.extend(by_name.values())
    return tuple(out)


def _union_field(a: NestedField, b: NestedField, where: str,
                 path: tuple[str, ...]) -> NestedField:
    return a.replace(type=_union_type(a.type, b.type, where, path),
                     nullable=a.nullable or b.nullable)


def _union_type(a: Type, b: Type, where: str, path: tuple[str, ...]) -> Type:
    if isinstance(a, StructType) and isinstance(b, StructType):
        return StructType(union_fields(a.fields, b.fields, where, path))
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return ArrayType(_union_field(a.element, b.element, where, (*path, "element")))
    if isinstance(a, MapType) and isinstance(b, MapType):
        return MapType(_union_field(a.key, b.key, where, (*path, "key")),
                       _union_field(a.value, b.value, where, (*path, "value")))
    if a == b:
        return a
    if a.is_primitive and b.is_primitive:
        if natively_readable(a, b):
            return b
        if natively_readable(b, a):
            return a
    raise UnsupportedTableError(
        f"Column {format_path(path)!r} has conflicting types in the files: {a} and {b} "
        f"({where})",
        hint="rewrite the files whose type differs, or convert the folders separately",
    )


def relax_missing(table_fields: tuple[NestedField, ...], file_fields: tuple[NestedField, ...]
                  ) -> tuple[NestedField, ...]:
    """``table_fields`` with every field that the file lacks made nullable (it reads null)."""
    by_name = {f.name: f for f in file_fields}
    out = []
    for t in table_fields:
        f = by_name.get(t.name)
        if f is None:
            out.append(t if t.nullable else t.replace(nullable=True))
            continue
        new_type = _relax_type(t.type, f.type)
        out.append(t if new_type is t.type else t.replace(type=new_type))
    return tuple(out)


def _relax_type(table: Type, found: Type) -> Type:
    if isinstance(table, StructType) and isinstance(found, StructType):
        return StructType(relax_missing(table.fields, found.fields))
    if isinstance(table, ArrayType) and isinstance(found, ArrayType):
        element = _relax_type(table.element.type, found.element.type)
        return ArrayType(table.element.replace(type=element))
    if isinstance(table, MapType) and isinstance(found, MapType):
        value = _relax_type(table.value.type, found.value.type)
        return MapType(table.key, table.value.replace(type=value))
    return table


def file_only_names(table_fields: tuple[NestedField, ...], file_fields: tuple[NestedField, ...],
                    parent_id: int = ROOT_ID, into: dict[int, set[str]] | None = None
                    ) -> dict[int, set[str]]:
    """Names the file has but the schema does not, per parent ID (struct members included)."""
    out: dict[int, set[str]] = {} if into is None else into
    by_name = {f.name: f for f in table_fields}
    for f in file_fields:
        t = by_name.get(f.name)
        if t is None:
            out.setdefault(parent_id, set()).add(f.name)
            continue
        table_type, found_type, owner = t.type, f.type, t.id
        while True:
            if isinstance(table_type, ArrayType) and isinstance(found_type, ArrayType):
                owner = table_type.element.id
                table_type, found_type = table_type.element.type, found_type.element.type
            elif isinstance(table_type, MapType) and isinstance(found_type, MapType):
                owner = table_type.value.id
                table_type, found_type = table_type.value.type, found_type.value.type
            else:
                break
        if isinstance(table_type, StructType) and isinstance(found_type, StructType):
            file_only_names(table_type.fields, found_type.fields, owner, out)
    return out


def check_readable(table_fields: tuple[NestedField, ...], file_fields: tuple[NestedField, ...],
                   where: str, prefix: tuple[str, ...] = ()) -> None:
    """Raise :class:`UnsupportedTableError` if a file column cannot be read as the table's type
    (matched by exact name; columns missing on either side are fine)."""
    by_name = {f.name: f for f in file_fields}
    for t in table_fields:
        f = by_name.get(t.name)
        if f is not None:
            _check_type(t.type, f.type, where, (*prefix, t.name))


def _check_type(table: Type, found: Type, where: str, path: tuple[str, ...]) -> None:
    if isinstance(table, StructType) and isinstance(found, StructType):
        check_readable(table.fields, found.fields, where, path)
        return
    if isinstance(table, ArrayType) and isinstance(found, ArrayType):
        _check_type(table.element.type, found.element.type, where, (*path, "element"))
        return
    if isinstance(table, MapType) and isinstance(found, MapType):
        _check_type(table.key.type, found.key.type, where, (*path, "key"))
        _check_type(table.value.type, found.value.type, where, (*path, "value"))
        return
    if table.is_primitive and found.is_primitive and (
        natively_readable(found, table) or {table, found} == {STRING, BINARY}
    ):
        return
    raise UnsupportedTableError(
        f"Column {format_path(path)!r} is {found} in {where}, which cannot be read as the "
        f"table's {table}",
        hint="rewrite that file with the table's type first",
    )


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
        own = tuple(f for f in ft.fields if f.name != META_COMMIT_TIME)
        fields = union_fields(fields, own, f"file {ft.path.relative_to(root)}")
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
