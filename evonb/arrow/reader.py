"""Reading a table into Arrow without Spark: ``Table.to_arrow`` / ``to_batches`` / ``to_pandas``.

Same snapshots, schema references, plans and merges as :meth:`Table.read`, evaluated with
pyarrow, one data file at a time (file groups of merge-on-read tables: the base file with its
log blocks): each file is read with the schema version it was written with
(:func:`~evonb.table.read_plan.plan_group`) and projected onto the query schema by field ID
(:mod:`evonb.arrow.evaluate`). A ``filter`` (a ``pyarrow.compute`` expression over the query's
column names) is applied exactly after the projection (and after the merge); on files without
log blocks the part of it over columns read as they are stored is also pushed into the Parquet
scan (row groups are skipped by their statistics).

``columns`` names top-level columns or struct members by dotted path (``info.city``): a member
comes out as a column named like the member, null where its struct is null, as Spark's
``select("info.city")`` gives it. Only the columns read need be decoded: the hidden commit-time
column is read only when ``meta_columns`` asks for it or a merge needs it. ``to_table`` reads
several data files at once on a small thread pool (pyarrow decodes each file's columns on its
own threads too) and keeps the files' order; a file whose columns the query reads as they are
stored (renamed at most: none added, widened or rebuilt since the file was written) is read in
one call that pyarrow projects itself, with no work per batch in Python. ``batches`` streams
file after file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from evonb.arrow.evaluate import Frame, arrow_schema, arrow_type, evaluate
from evonb.arrow.merge import DELETED, merge
from evonb.errors import ColumnNotFoundError, EvoError
from evonb.schema.schema import Schema
from evonb.schema.types import STRING, NestedField
from evonb.spark.avro_log import _read_block, block_struct
from evonb.spark.mor import _merge_columns, file_groups, since
from evonb.table.file_checks import file_error
from evonb.table.fileio import file_io
from evonb.table.layout import META_COMMIT_TIME, Layout
from evonb.table.read_plan import (
    Col,
    Expr,
    Lit,
    ScanGroup,
    physical_struct,
    plan_group,
    read_paths,
    referenced_columns,
    selected_columns,
)
from evonb.table.retention import check_readable
from evonb.table.snapshot import DataFile, Snapshot

if TYPE_CHECKING:  # pragma: no cover
    from evonb.table.table import BaseTable, CommitRef

BATCH_ROWS = 65536
"""Rows per record batch given by :meth:`ArrowRead.batches`."""
SCAN_ROWS = 1 << 18
"""Rows per batch the Parquet scan decodes at once (larger batches cost less per row)."""
MAX_WORKERS = 8
"""Data files :meth:`ArrowRead.to_table` reads at once, at most."""
MIN_WORKERS = 4
"""Data files :meth:`ArrowRead.to_table` reads at once on machines with fewer cores than this
(when it has as many files): one file's read waits on storage part of the time, and on a
machine busy with other work more threads keep the read's share of the cores."""
META_FIELD = NestedField(2**31 - 1, META_COMMIT_TIME, STRING)


class ArrowRead:
    """One read of a table: its snapshot, query schema and output columns (see
    :meth:`batches`)."""

    def __init__(self, table: BaseTable, as_of: CommitRef | None = None, *,
                 schema: Schema | str | CommitRef | None = None,
                 columns: Sequence[str] | None = None, filter: pc.Expression | None = None,
                 limit: int | None = None, meta_columns: bool = False,
                 snapshot: Snapshot | None = None):
        if filter is not None and not isinstance(filter, pc.Expression):
            raise EvoError(f"A filter must be a pyarrow.compute.Expression, not "
                           f"{type(filter).__name__}",
                           hint="e.g. pyarrow.compute.field('fare') > 10")
        if filter is not None and _positional(filter):
            raise EvoError(f"The filter {filter} names a column by its position, which "
                           "changes with the query's columns and the table's history",
                           hint="name columns by their current names, e.g. "
                                "pyarrow.compute.field('fare') > 10")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise EvoError(f"limit must be a whole number >= 0, not {limit!r}")
        if snapshot is not None and as_of is not None:
            raise EvoError("A read takes a snapshot or as_of, not both")
        self.table = table
        # a snapshot given (a write's own, already listed) spares listing the timeline again
        self.snap = snapshot if snapshot is not None else table.snapshot(as_of)
        if as_of is not None:
            check_readable(table, self.snap.instant)
        full = (table.schema_store.load(self.snap.schema_version) if schema is None
                else table.resolve_schema(schema))
        self.full = full
        self._via = read_paths(table.version, full, self.snap.schema_version)  # through each type
        selected = selected_columns(full, columns)
        meta = [META_FIELD] if meta_columns else []
        self.meta_columns = meta_columns
        self.output = arrow_schema([f for f, _ in selected] + meta)
        self._paths = [path for _, path in selected] + [(META_COMMIT_TIME,)] * len(meta)
        self.filter = filter
        self.limit = limit
        evaluated: list[NestedField] = []
        for _, path in selected:  # the top-level columns the selection reads, once each
            top = full.find((path[0],))
            if all(f.id != top.id for f in evaluated):
                evaluated.append(top)
        if filter is not None and not _binds(filter, arrow_schema([*evaluated, *meta])):
            chosen = {f.id for f in evaluated}
            evaluated += [f for f in full.fields if f.id not in chosen]
            _check_binds(filter, arrow_schema([*evaluated, *meta]))
        self.query = Schema(fields=tuple(evaluated), version_id=full.version_id,
                            max_column_id=full.max_column_id)
        self._merge: tuple[Schema, list[str], str | None, list[str]] | None = None
        self._plans: dict[tuple[str, bool], ScanGroup] = {}
        self._versions: dict[str, tuple[Schema, Layout]] = {}
        self._groups: dict[str, list[DataFile]] | None = None

    @property
    def output_paths(self) -> list[tuple[str, ...]]:
        """For each column of :attr:`output`, its path of names in the query schema (a
        selected struct member ``info.city`` is the output column ``city`` at
        ``('info', 'city')``)."""
        return list(self._paths)

    # ------------------------------------------------------------------ public results
    def batches(self) -> Iterator[pa.RecordBatch]:
        """The rows as record batches of :attr:`output`, file by file (row group by row group
        for files without log blocks); stops once ``limit`` rows were given."""
        left = self.limit
        if left == 0:
            return
        for f in self.snap.files:
            for table in self.file_tables(f):
                for batch in table.to_batches(BATCH_ROWS):
                    if batch.num_rows == 0:
                        continue
                    if left is not None and batch.num_rows >= left:
                        yield batch.slice(0, left)
                        return
                    yield batch
                    if left is not None:
                        left -= batch.num_rows

    def to_table(self) -> pa.Table:
        """All of :meth:`batches` as one table; without a ``limit``, several data files are
        read at once (the rows keep the order of :meth:`batches`)."""
        files = self.snap.files
        if self.limit is not None:
            return pa.Table.from_batches(list(self.batches()), schema=self.output)
        self._prepare()
        workers = min(len(files), max(os.cpu_count() or 1, MIN_WORKERS), MAX_WORKERS)
        if workers < 2:
            parts = [t for f in files for t in self.file_tables(f, whole=True)]
        else:
            with ThreadPoolExecutor(max_workers=workers,
                                    thread_name_prefix="evonb-arrow-read") as pool:
                parts = [t for tables in pool.map(
                    lambda f: list(self.file_tables(f, whole=True)), files) for t in tables]
        if not parts:
            return self.output.empty_table()
        return pa.concat_tables(parts)

    # ------------------------------------------------------------------ the work
    def _prepare(self) -> None:
        """Plans (and the merge's columns) made before threads share them."""
        groups = file_groups(self.snap) if self.snap.logs else {}
        for f in self.snap.files:
            logs = groups.get(f.path) or ()
            self._plan(f.version, ext=bool(logs))
            for log in logs:
                self._plan(log.version, ext=True)
        self._groups = groups

    def file_tables(self, f: DataFile, *, whole: bool = False) -> Iterator[pa.Table]:
        """The rows of data file ``f`` of the snapshot (merged with its log blocks) as tables
        of :attr:`output`, filtered: one part of :meth:`batches`, for readers that split the
        snapshot by file (:mod:`evonb.arrow.spark_source`). ``whole``: the caller keeps every
        row of the file at once, so a file pyarrow can project by itself is read in one call
        (no per-batch work in Python)."""
        if self._groups is None:
            self._groups = file_groups(self.snap) if self.snap.logs else {}
        return self.group_tables(f, self._groups.get(f.path) or (), whole=whole)

    def group_tables(self, f: DataFile, logs: Sequence[DataFile], *, whole: bool = False
                     ) -> Iterator[pa.Table]:
        """The rows of base file ``f`` merged with ``logs`` (its log blocks, oldest first;
        none: its stored rows) as tables of :attr:`output`, filtered: :meth:`file_tables`
        for a file group given whole (what compaction and clustering read of a table in
        object storage)."""
        tables = [self._merged(f, logs)] if logs else self._plain(f, whole=whole)
        for table in tables:
            yield self._finish(table)

    def base_tables(self, f: DataFile, *, whole: bool = False) -> Iterator[pa.Table]:
        """The rows stored in data file ``f`` alone (never merged with log blocks), in their
        order in the file, as tables of :attr:`output`: what writes read of the base files
        they rewrite or add log blocks to (:func:`evonb.arrow.spark_source.read_object_files`).
        ``whole``: as for :meth:`file_tables`."""
        for table in self._plain(f, whole=whole):
            yield self._finish(table)

    def _finish(self, table: pa.Table) -> pa.Table:
        """A projected table (the query's columns) filtered and cut to :attr:`output`."""
        if self.filter is not None:
            table = table.filter(self.filter)
        columns = [_conform(_member(table, path), f.type)
                   for path, f in zip(self._paths, self.output, strict=True)]
        return pa.Table.from_arrays(columns, schema=self.output)

    def _plan(self, version: str, *, ext: bool = False) -> ScanGroup:
        """The projection of files of ``version`` onto the query (``ext``: extended with the
        merge's key and precombine columns)."""
        key = (version, ext)
        found = self._plans.get(key)
        if found is None:
            schema, layout = self._version(version)
            query = self._merge_columns()[0] if ext else self.query
            found = plan_group(query, schema, layout, (), via=self._via)
            self._plans[key] = found
        return found

    def _version(self, version: str) -> tuple[Schema, Layout]:
        """A schema version and its layout, looked up once per read (in object storage each
        look-up of the table's is a request that checks the file is unchanged; a version's
        file never changes)."""
        found = self._versions.get(version)
        if found is None:
            found = self._versions[version] = self.table.version(version)
        return found

    def _merge_columns(self) -> tuple[Schema, list[str], str | None, list[str]]:
        if self._merge is None:
            self._merge = _merge_columns(self.table, self.query)
        return self._merge

    def _plain(self, f: DataFile, *, whole: bool = False) -> Iterator[pa.Table]:
        plan = self._plan(f.version)
        meta = _meta_expr(f) if self.meta_columns else None  # read only when asked for
        path = str(self.table.root / f.path)
        dataset = _open(path)
        types = _physical_types(self._version(f.version))
        pushed = None
        if self.filter is not None:
            pushed = self._pushdown(plan, types, dataset.schema)
        if whole and meta is None:
            table = _scan_whole(path, plan, types, pushed, dataset)
            if table is not None:
                yield table
                return
        for frame in _scan(path, plan, types, pushed, meta, dataset):
            yield _project(plan, meta, frame)

    def _pushdown(self, plan: ScanGroup, types: dict[str, pa.DataType],
                  file_schema: pa.Schema) -> pc.Expression | None:
        """The filter over this file's stored columns (by position), when every column it
        reads is read as it is stored, in the type its schema version's files have
        (``types``); else None (the filter is applied after projection). A column stored in
        another type is left out: Spark's INT96 timestamps read without a time zone, and
        ``ts >= <an instant>`` fails on them."""
        stored = {e.name: name for name, e in plan.columns if isinstance(e, Col)}
        naming = pa.schema([
            pa.field(stored[f.name] if f.name in stored and _same_type(f.type, types.get(f.name))
                     else f"\x00{i}", f.type)
            for i, f in enumerate(file_schema)])
        try:
            return pc.Expression.from_substrait(self.filter.to_substrait(naming))
        except (pa.ArrowException, TypeError, ValueError, NotImplementedError):
            return None

    def _merged(self, base: DataFile, logs: Sequence[DataFile]) -> pa.Table:
        ext, keys, pre, extra = self._merge_columns()
        plan = self._plan(base.version, ext=True)
        meta = _meta_expr(base)
        path = str(self.table.root / base.path)
        frames = [_project(plan, meta, fr) for fr in _scan(
            path, plan, _physical_types(self._version(base.version)), None, meta,
            _open(path))]
        out_schema = arrow_schema([*ext.fields, META_FIELD])
        rows = _concat(frames, out_schema)
        records = _concat([self._log_records(ext, log) for log in logs],
                          out_schema.append(pa.field(DELETED, pa.bool_())))
        merged = merge(rows, records, keys, pre)
        return merged.drop_columns(extra) if extra else merged

    def _log_records(self, ext: Schema, log: DataFile) -> pa.Table:
        schema, layout = self._version(log.version)
        physical = self.table.physical_query(schema, layout)
        struct = block_struct(physical)
        plan = self._plan(log.version, ext=True)
        arrow = arrow_schema(struct.fields)
        path = str(self.table.root / log.path)
        tables = []
        for batch in _read_block(path, struct, arrow):
            columns = {name: batch.column(name) for name in batch.schema.names}
            frame = Frame(columns, batch.num_rows, Path(log.path).name)
            projected = _project(plan, Col(META_COMMIT_TIME), frame)
            tables.append(projected.append_column(
                DELETED, pc.fill_null(batch.column(DELETED), False)))
        out = arrow_schema([*ext.fields, META_FIELD]).append(pa.field(DELETED, pa.bool_()))
        return _concat(tables, out)


class IncrementalRead:
    """The rows written by the commits after ``start`` up to ``end``, as they are at ``end``,
    read with Arrow: the same rows and columns as ``Table.read_incremental`` (``schema``,
    ``columns`` and ``limit`` as in :class:`ArrowRead`)."""

    def __init__(self, table: BaseTable, start: CommitRef, end: CommitRef | None = None, *,
                 schema: Schema | str | CommitRef | None = None,
                 columns: Sequence[str] | None = None, limit: int | None = None,
                 meta_columns: bool = False):
        instants = sorted(c.instant for c in table.incremental_commits(start, end))
        wanted = pc.field(META_COMMIT_TIME).isin(pa.array(instants, pa.string()))
        self._read = ArrowRead(table, end, schema=schema, columns=columns, filter=wanted,
                               limit=limit, meta_columns=True)
        self._read.snap = since(self._read.snap, instants)
        self._drop = not meta_columns
        names = self._read.output.names
        self.output = (self._read.output.remove(names.index(META_COMMIT_TIME)) if self._drop
                       else self._read.output)

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The rows as record batches of :attr:`output`."""
        kept = list(range(len(self.output)))  # the commit time comes last
        for batch in self._read.batches():
            yield batch.select(kept) if self._drop else batch

    def to_table(self) -> pa.Table:
        """All of :meth:`batches` as one table."""
        return pa.Table.from_batches(list(self.batches()), schema=self.output)


def _meta_expr(f: DataFile) -> Expr:
    """The commit time of a base file's rows: its hidden column, or the instant of the commit
    that adopted it (files evonb did not write have no such column)."""
    if f.path.endswith(f"_{f.instant}.parquet"):
        return Col(META_COMMIT_TIME)
    return Lit(f.instant, STRING)


PARQUET = ds.ParquetFileFormat(read_options=ds.ParquetReadOptions(
    coerce_int96_timestamp_unit="us"))
"""Parquet as the reader opens it: Spark's INT96 timestamps in microseconds, the unit of
evonb's timestamps (read as nanoseconds, as pyarrow does by default, a timestamp outside the
years 1677 to 2262 overflows)."""


def _dataset(path: str) -> ds.Dataset:
    fs, where = file_io().arrow_location(path)  # local disk or object storage
    return ds.dataset(where, format=PARQUET, filesystem=fs)


@contextmanager
def _file_errors(path: str) -> Iterator[None]:
    """Inside, a Parquet file at ``path`` that cannot be read is an evonb error naming it."""
    try:
        yield
    except FileNotFoundError:
        raise file_error(path, "it does not exist") from None
    except (OSError, pa.ArrowInvalid) as exc:
        raise file_error(path, exc) from exc


def _open(path: str) -> ds.Dataset:
    """The Parquet file at ``path`` as a dataset (a file that cannot be read: an evonb
    error naming it)."""
    with _file_errors(path):
        return _dataset(path)


def _physical_types(version: tuple[Schema, Any]) -> dict[str, pa.DataType]:
    """The Arrow type of each physical column of files of a schema version (and layout)."""
    schema, layout = version
    types = {f.name: arrow_type(f.type) for f in physical_struct(schema, layout).fields}
    types[META_COMMIT_TIME] = pa.string()
    return types


def _same_type(stored: pa.DataType, expected: pa.DataType | None) -> bool:
    return expected is not None and stored.equals(expected)


def _scan_whole(path: str, plan: ScanGroup, types: dict[str, pa.DataType],
                pushed: pc.Expression | None, dataset: ds.Dataset) -> pa.Table | None:
    """The file's rows projected by ``plan`` in one scan that pyarrow projects itself, when
    every column of the plan is a column the file stores in the type of its schema version
    (``types``: :func:`_physical_types`; nothing for :func:`evaluate` to do); else None, and
    :func:`_scan` reads it."""
    if not plan.columns or not all(isinstance(e, Col) for _, e in plan.columns):
        return None
    stored = dataset.schema
    names = set(stored.names)
    for _, e in plan.columns:
        at = types.get(e.name)
        if e.name not in names or at is None or not stored.field(e.name).type.equals(at):
            return None
    projection = {name: pc.field(e.name) for name, e in plan.columns}
    with _file_errors(path):
        return dataset.to_table(columns=projection, filter=pushed, batch_size=SCAN_ROWS,
                                use_threads=True)


def _scan(path: str, plan: ScanGroup, types: dict[str, pa.DataType],
          pushed: pc.Expression | None, meta: Expr | None, dataset: ds.Dataset
          ) -> Iterator[Frame]:
    """The file's physical columns that ``plan`` (and ``meta``) read, batch by batch, in the
    types of the file's schema version (``types``: :func:`_physical_types`)."""
    needed = sorted(set().union(*(referenced_columns(e) for _, e in plan.columns),
                                referenced_columns(meta) if meta is not None else set()))
    name = Path(path).name
    with _file_errors(path):
        present = set(dataset.schema.names)
        read = [c for c in needed if c in present]
        scanner = dataset.scanner(columns=read, filter=pushed, batch_size=SCAN_ROWS,
                                  use_threads=True)
        for batch in scanner.to_batches():
            columns: dict[str, pa.Array] = {}
            for c in needed:
                at = types.get(c)
                if c in present:
                    arr = batch.column(c)
                    columns[c] = arr if at is None or arr.type.equals(at) else arr.cast(at)
                elif at is not None:
                    columns[c] = pa.nulls(batch.num_rows, at)
            yield Frame(columns, batch.num_rows, name)


def _project(plan: ScanGroup, meta: Expr | None, frame: Frame) -> pa.Table:
    arrays = [evaluate(e, frame) for _, e in plan.columns]
    names = [name for name, _ in plan.columns]
    if meta is not None:
        arrays.append(evaluate(meta, frame))
        names.append(META_COMMIT_TIME)
    return pa.Table.from_arrays(arrays, names=names)


def _member(table: pa.Table, path: tuple[str, ...]) -> pa.ChunkedArray:
    """The column at ``path`` (a top-level column, then struct members), null where a struct
    on the way is null (Spark's field access)."""
    column = table.column(path[0])
    for name in path[1:]:
        column = pc.struct_field(column, [column.type.get_field_index(name)])
    return column


def _concat(tables: list[pa.Table], schema: pa.Schema) -> pa.Table:
    if not tables:
        return schema.empty_table()
    return pa.concat_tables([pa.Table.from_arrays(
        [_conform(t.column(i), f.type) for i, f in enumerate(schema)], schema=schema)
        for t in tables])


def _conform(arr: pa.ChunkedArray | pa.Array, at: pa.DataType) -> pa.ChunkedArray | pa.Array:
    return arr if arr.type.equals(at) else arr.cast(at)


def _bind_error(expr: pc.Expression, schema: pa.Schema) -> Exception | None:
    """Why the filter ``expr`` does not apply to ``schema``; None when it does."""
    try:
        schema.empty_table().filter(expr)
    except (pa.ArrowException, TypeError, ValueError) as exc:
        return exc
    return None


def _binds(expr: pc.Expression, schema: pa.Schema) -> bool:
    return _bind_error(expr, schema) is None


# How pyarrow says that an expression names a field (a struct member: a nested reference)
# the schema does not have.
_UNKNOWN_FIELD = re.compile(r"No match for FieldRef\.Name\((.*?)\) in ")
_UNKNOWN_MEMBER = re.compile(r"No match for FieldRef\.Nested\(((?:FieldRef\.Name\(.*?\) ?)+)\)"
                             r" in ")
_NAME = re.compile(r"FieldRef\.Name\((.*?)\)")
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')


def _positional(expr: pc.Expression) -> bool:
    """Whether ``expr`` names a field by its position (``pc.field(1)``), outside its string
    literals."""
    return "FieldPath(" in _QUOTED.sub("", str(expr))


def _paths(schema: pa.Schema) -> list[str]:
    """Every column and struct member of ``schema`` by its dotted path."""
    out: list[str] = []

    def visit(prefix: str, field: pa.Field) -> None:
        out.append(prefix + field.name)
        if pa.types.is_struct(field.type):
            for member in field.type:
                visit(f"{prefix}{field.name}.", member)

    for f in schema:
        visit("", f)
    return out


def _check_binds(expr: pc.Expression, schema: pa.Schema) -> None:
    """Raise an evonb error when the filter ``expr`` does not apply to ``schema`` (the
    table's top-level columns): a name it lacks is a :class:`ColumnNotFoundError` with the
    closest column or, for a struct member's name, the path that names it."""
    exc = _bind_error(expr, schema)
    if exc is None:
        return
    text = str(exc).strip()
    member = _UNKNOWN_MEMBER.search(text)
    if member is not None:
        path = ".".join(_NAME.findall(member.group(1)))
        paths = [p for p in _paths(schema) if p != META_COMMIT_TIME]
        raise ColumnNotFoundError(path, paths, context=f"in the filter {expr}")
    unknown = _UNKNOWN_FIELD.search(text)
    if unknown is None:
        first = text.splitlines()[0] if text else type(exc).__name__
        raise EvoError(f"The filter {expr} does not apply to the query's columns: {first}",
                       hint="name columns by their current names, and compare each "
                            "with a value of its type")
    name = unknown.group(1)
    paths = [f"pc.field({top.name!r}, {name!r})" for top in schema
             if pa.types.is_struct(top.type) and top.type.get_field_index(name) >= 0]
    hint = f"a struct member is named by its path: {paths[0]}" if paths else None
    names = [n for n in schema.names if n != META_COMMIT_TIME]
    raise ColumnNotFoundError(name, names, context=f"in the filter {expr}", hint=hint)


__all__ = ["ArrowRead", "IncrementalRead"]
