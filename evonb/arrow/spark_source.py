"""Spark reads of tables in object storage, without Hadoop's S3A or ABFS connectors.

Spark reaches a bucket through a Hadoop connector (``hadoop-aws``, ``hadoop-azure``) that must
match the cluster's Hadoop build; where none is installed, a Spark read of a table in a bucket
goes through this Python data source instead: the tasks read the table's files with evonb's
JVM-free reader (:class:`evonb.arrow.reader.ArrowRead`, pyarrow's S3 and Azure file systems),
one data file (merged with its log blocks) per Spark partition, and hand Spark Arrow record
batches. Reads merge schemas by field ID exactly as the Arrow reader does, and apply the
filters of the query that they can apply exactly as Spark does (:func:`pushed_filter`;
Spark checks every row once more). A second source
reads given data files as they are stored (without their log blocks), each in its own schema
version, with their file names and row positions (:func:`read_object_files`): what upserts
and deletes read of the files they rewrite or add log blocks to.

Everything a task needs travels with the read: the table's location, the commit read, the
query schema's version and columns, and the object-store settings of the process that made
the read (the ``AWS_*`` and ``AZURE_STORAGE_*`` variables evonb reads, as Spark's own
connectors take their keys from the session's configuration): a task applies them before it
opens the table, so executors need no configuration of their own, and need evonb and pyarrow
installed. Nothing in a table's files decides what runs.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
)
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DataType,
    DateType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from evonb.arrow.reader import ArrowRead
from evonb.schema.schema import Schema
from evonb.spark.avro_log import POS
from evonb.spark.mor import FILE
from evonb.table.fsutil import location_uri
from evonb.table.key_stats import KeyRange, comparable, prune
from evonb.table.partition_pruning import may_match
from evonb.table.snapshot import DataFile, Snapshot
from evonb.table.store_settings import apply_store_settings, store_settings
from evonb.table.table import open_table

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

    from evonb.table.table import BaseTable, CommitRef

SOURCE_NAME = "evonb_object_store"
"""The short name the data source of snapshot reads is registered under."""
FILES_SOURCE_NAME = "evonb_object_files"
"""The short name the data source of the reads of given data files (for writes) is registered
under."""

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
"""Spark's setting that lets a Python data source take filters; evonb's managed local session
turns it on. Where it is off, Spark applies every filter itself after the read."""

_REGISTERED: set[int] = set()

_READS: dict[str, tuple[ArrowRead, dict[str, DataFile]]] = {}
"""Reads planned in this (task) process, by their options, with the snapshot's data files by
path: the tasks of one read that run in one Python worker open the table once."""

READS_KEPT = 4


def _cached(options: Mapping[str, Any],
            plan: Callable[[Mapping[str, Any]], tuple[ArrowRead, dict[str, DataFile]]]
            ) -> tuple[ArrowRead, dict[str, DataFile]]:
    """The read the options describe, made by ``plan(options)`` in this (task) process after
    applying the settings, kept for the next tasks of the same read."""
    key = json.dumps(options, sort_keys=True)
    found = _READS.get(key)
    if found is not None:
        return found
    apply_store_settings(options["settings"])
    made = plan(options)
    while len(_READS) >= READS_KEPT:
        del _READS[next(iter(_READS))]
    _READS[key] = made
    return made


# ------------------------------------------------------------------------ filter pushdown
_COMPARISONS: dict[type[Filter], str] = {
    EqualTo: "==", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<",
    LessThanOrEqual: "<="}
_PUSHED_TYPES = (ByteType, ShortType, IntegerType, LongType, StringType, BooleanType, DateType,
                 TimestampType, TimestampNTZType)
"""The column types whose filters the source takes: comparisons of these mean the same in
Arrow as in Spark (floating point is left out: Spark orders NaN above every number and
equals it to itself, Arrow does neither; decimals are left out too). A timestamp compares as
an instant (Spark hands the source its value with the session's zone; it travels in UTC); a
timestamp without time zone as the wall-clock time it is."""
_FORMS: dict[str, tuple[Callable[[str], Any], pa.DataType]] = {
    "date": (datetime.date.fromisoformat, pa.date32()),
    "timestamp": (datetime.datetime.fromisoformat, pa.timestamp("us", tz="UTC")),
    "timestamp_ntz": (datetime.datetime.fromisoformat, pa.timestamp("us")),
}
"""For each tag of a pushed value's tagged JSON form (see :func:`_literal`): how its text is
parsed, and its Arrow type."""


def _spark_type(schema: StructType, path: Sequence[str]) -> DataType | None:
    """The type of the column (or struct member) at ``path`` of ``schema``; None if absent."""
    current: DataType = schema
    for name in path:
        if not isinstance(current, StructType):
            return None
        found = [f for f in current.fields if f.name == name]
        if len(found) != 1:
            return None
        current = found[0].dataType
    return current


def _literal(value: Any, dtype: DataType) -> tuple[bool, Any]:
    """(whether ``value`` compares exactly with a column of ``dtype`` in Arrow, its JSON form:
    a date as ``{"date": ISO}``, a timestamp as ``{"timestamp": ISO in UTC}``, a timestamp
    without time zone as ``{"timestamp_ntz": ISO}``)."""
    if isinstance(dtype, BooleanType):
        return isinstance(value, bool), value
    if isinstance(dtype, StringType):  # bytewise only: a collation compares otherwise
        binary = getattr(dtype, "collation", "UTF8_BINARY") == "UTF8_BINARY"
        return binary and isinstance(value, str), value
    if isinstance(dtype, DateType):
        ok = isinstance(value, datetime.date) and not isinstance(value, datetime.datetime)
        return ok, {"date": value.isoformat()} if ok else None
    if isinstance(dtype, TimestampType):  # an instant: never one without its zone
        ok = isinstance(value, datetime.datetime) and value.utcoffset() is not None
        return ok, {"timestamp": value.astimezone(datetime.UTC).isoformat()} if ok else None
    if isinstance(dtype, TimestampNTZType):
        ok = isinstance(value, datetime.datetime) and value.tzinfo is None
        return ok, {"timestamp_ntz": value.isoformat()} if ok else None
    return isinstance(value, int) and not isinstance(value, bool), value


def pushed_filter(f: Filter, schema: StructType) -> list[Any] | None:
    """Spark's filter ``f`` on a column of ``schema`` as JSON (``[operator, path, value]``)
    when the reader can apply it exactly as Spark does, else None."""
    path = list(getattr(f, "attribute", ()))
    dtype = _spark_type(schema, path) if path else None
    if not isinstance(dtype, _PUSHED_TYPES):
        return None
    if isinstance(f, IsNull | IsNotNull):
        return ["is_null" if isinstance(f, IsNull) else "is_valid", path, None]
    if isinstance(f, In):
        forms = [_literal(v, dtype) for v in f.value]
        if not forms or not all(ok for ok, _ in forms):
            return None
        return ["in", path, [v for _, v in forms]]
    op = _COMPARISONS.get(type(f))
    ok, value = _literal(getattr(f, "value", None), dtype) if op else (False, None)
    return [op, path, value] if ok else None


def query_path(pushed: list[Any], schema: StructType,
               paths: Sequence[Sequence[str]]) -> list[Any] | None:
    """A filter :func:`pushed_filter` took, on a column of the read's output ``schema``,
    restated on that column's path in the query schema (``paths``: each output column's),
    which is what the reader's filter and pruning bind to: a selected struct member
    ``s.y`` is the output column ``y``, and a filter on it must not reach a top-level ``y``.
    None when the output name is not unique."""
    op, path, form = pushed
    names = [f.name for f in schema.fields]
    if names.count(path[0]) != 1:
        return None
    return [op, [*paths[names.index(path[0])], *path[1:]], form]


def _value(form: Any) -> Any:
    """The Python value of a pushed value's JSON form (:func:`_literal`)."""
    if not isinstance(form, dict):
        return form
    ((tag, text),) = form.items()
    return _FORMS[tag][0](text)


def _arrow_type(form: Any) -> pa.DataType | None:
    """The Arrow type of a pushed value's JSON form; None: the one Arrow infers."""
    return _FORMS[next(iter(form))][1] if isinstance(form, dict) else None


def arrow_filter(pushed: Sequence[Sequence[Any]]) -> pc.Expression | None:
    """The pyarrow expression of the filters :func:`pushed_filter` took (their AND)."""
    out: pc.Expression | None = None
    for op, path, form in pushed:
        column = pc.field(*path)
        if op == "is_null":
            expr = column.is_null()
        elif op == "is_valid":
            expr = column.is_valid()
        elif op == "in":
            values = [_value(v) for v in form]
            expr = column.isin(pa.array(values, type=_arrow_type(form[0])))
        else:
            value = pa.scalar(_value(form), type=_arrow_type(form))
            expr = {"==": column == value, ">": column > value, ">=": column >= value,
                    "<": column < value, "<=": column <= value}[op]
        out = expr if out is None else out & expr
    return out


POINTS_KEPT = 64
"""An ``IN`` list on a key column of up to this many values prunes by each value; a longer
one by its smallest and largest."""


def key_ranges(read: ArrowRead, pushed: Sequence[Sequence[Any]]) -> list[list[KeyRange]]:
    """What the pushed filters bound the table's record-key columns to, for pruning data
    files by the key statistics each records (:func:`evonb.table.key_stats.prune`): a list of
    alternatives (a file is read if it may hold a row of one of them), each a range per
    bounded key column (both ends known: ``=``, ``IN``, or a lower and an upper bound). A
    strict bound counts as inclusive (it can only keep a file more)."""
    keys = set(read.table.raw_config.primary_key_ids)
    bounds: dict[int, list[Any]] = {}
    points: dict[int, list[Any]] = {}
    for op, path, form in pushed:
        if len(path) != 1 or op in ("is_null", "is_valid") or not read.full.has((path[0],)):
            continue
        fid = read.full.find_id((path[0],))
        if fid not in keys:
            continue
        kind = read.full.field_by_id(fid).type  # timestamps compare as microseconds
        values = [comparable(_value(v), kind) for v in (form if op == "in" else [form])]
        if not values:
            continue
        if op in ("==", "in") and len(values) <= POINTS_KEPT and fid not in points:
            points[fid] = values
        low, high = bounds.setdefault(fid, [None, None])
        if op in ("==", "in", ">", ">="):
            low = min(values) if low is None else max(low, min(values))
        if op in ("==", "in", "<", "<="):
            high = max(values) if high is None else min(high, max(values))
        bounds[fid] = [low, high]
    ranges = {fid: KeyRange(fid, read.full.field_by_id(fid).type, low, high)
              for fid, (low, high) in bounds.items() if low is not None and high is not None}
    if not ranges:
        return []
    split = next((fid for fid in points if fid in ranges), None)
    if split is None:
        return [list(ranges.values())]
    whole = ranges.pop(split)
    return [[KeyRange(split, whole.type, v, v), *ranges.values()]
            for v in sorted(set(points[split])) if whole.low <= v <= whole.high]


def partition_filter(read: ArrowRead, pushed: Sequence[Sequence[Any]]
                     ) -> Callable[[str], bool] | None:
    """Whether a file in a given partition folder may hold a row the pushed filters keep
    (:func:`evonb.table.partition_pruning.may_match`); None when no filter is on a partition
    column of the read's schema."""
    ids = read.table.raw_config.partition_ids
    if not ids or not all(read.full.has_id(i) for i in ids):
        return None
    columns = [read.full.info(i).path for i in ids]
    filters = [(op, tuple(path), [_value(v) for v in form] if op == "in"
                else None if form is None else _value(form))
               for op, path, form in pushed if tuple(path) in columns]
    if not filters:
        return None
    kinds = [read.full.field_by_id(i).type for i in ids]
    return lambda folder: may_match(folder, kinds, columns, filters)


def _snapshot_read(options: Mapping[str, Any]) -> tuple[ArrowRead, dict[str, DataFile]]:
    """A snapshot read (a commit, a query schema, columns, the filters Spark pushed), and its
    data files by path."""
    read = ArrowRead(open_table(options["location"]), options["instant"],
                     schema=options["schema"], columns=options["columns"],
                     meta_columns=options["meta"],
                     filter=arrow_filter(options.get("filters") or ()))
    return read, {f.path: f for f in read.snap.files}


def _files_read(options: Mapping[str, Any]) -> tuple[ArrowRead, dict[str, DataFile]]:
    """A read of given data files, each in its own version, in a query schema (any schema of
    the table's columns, physical names included), and the files (and log blocks) by path."""
    read = ArrowRead(open_table(options["location"]), options["instant"],
                     schema=Schema.from_json(options["query"]), meta_columns=options["meta"])
    found = [DataFile.from_dict(d) for d in (*options["files"], *options["logs"])]
    return read, {f.path: f for f in found}


class _FilePartition(InputPartition):
    """One data file of the snapshot (by its path in the table), read with its log blocks."""


class _Reader(DataSourceReader):
    def __init__(self, options: Mapping[str, Any], schema: StructType) -> None:
        self.options = dict(options)
        self.schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        """One partition per data file; with filters pushed on record-key columns, only the
        files whose key statistics may hold a matching row; with filters on partition
        columns, only the files whose partition folder may (:mod:`evonb.table.partition_pruning`);
        every file with log blocks either way (a block may hold a key outside its base file's
        range)."""
        read, files = _cached(self.options, _snapshot_read)
        paths = list(files)
        pushed = self.options.get("filters") or ()
        logged = set() if self.options["base_only"] else {str(f.base) for f in read.snap.logs}
        alternatives = key_ranges(read, pushed)
        if alternatives:
            plain = [f for f in files.values() if f.path not in logged]
            kept = {f.path for ranges in alternatives
                    for f in prune(plain, ranges, read.table.version)} | logged
            paths = [p for p in paths if p in kept]
        by_folder = partition_filter(read, pushed)
        if by_folder is not None:
            paths = [p for p in paths if p in logged or files[p].kind != "base"
                     or by_folder(files[p].partition)]
        return [_FilePartition(path) for path in paths] or [_FilePartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:  # an empty snapshot: one partition of no rows
            return
        read, files = _cached(self.options, _snapshot_read)
        f = files[partition.value]
        # a read-optimized query reads the base files only, without their log blocks
        tables = read.base_tables(f) if self.options["base_only"] else read.file_tables(f)
        for table in tables:
            yield from table.to_batches()


class _PushingReader(_Reader):
    """The reader of a session whose ``spark.sql.python.filterPushdown.enabled`` is true
    (Spark refuses a reader with ``pushFilters`` otherwise)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Take the filters the reader applies exactly as Spark would
        (:func:`pushed_filter`): pyarrow skips the row groups their statistics rule out and
        drops the rows they reject before any row reaches Spark. Every filter is returned
        all the same, so Spark checks each row once more and a pushed filter can only save
        work, never change the answer. A merge-on-read file group is filtered after its merge,
        never before (a base row's newer version may live in a log block)."""
        pushed = [q for q in (query_path(p, self.schema, self.options["paths"])
                              for p in (pushed_filter(f, self.schema) for f in filters) if p)
                  if q]
        if pushed:
            self.options["filters"] = pushed
        return filters


class _FilesReader(_Reader):
    def partitions(self) -> Sequence[InputPartition]:
        paths = [d["path"] for d in self.options["files"]]
        return [_FilePartition(path) for path in paths] or [_FilePartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:
            return
        read, files = _cached(self.options, _files_read)
        f = files[partition.value]
        if self.options["merged"]:  # the file group as a snapshot read sees it
            logs = [files[p] for p in self.options["groups"].get(f.path, ())]
            for table in read.group_tables(f, logs):
                yield from table.to_batches()
            return
        where = str(read.table.root / f.path)
        position = 0  # the row's place in its file (no filter: every row is read, in order)
        for table in read.base_tables(f):  # stored rows only: positions are the file's
            rows = table.num_rows
            if self.options["with_file"]:
                table = table.append_column(FILE, pa.repeat(pa.scalar(where), rows))
            if self.options["with_position"]:
                table = table.append_column(
                    POS, pa.array(np.arange(position, position + rows, dtype=np.int64)))
            position += rows
            yield from table.to_batches()


class ObjectStoreSource(DataSource):
    """The data source of snapshot reads (see the module docstring). Its one option,
    ``read``, is the JSON of the read (location, instant, schema version, columns, meta
    columns, settings)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return StructType.fromJson(json.loads(json.loads(self.options["read"])["spark_schema"]))

    def reader(self, schema: StructType) -> DataSourceReader:
        options = json.loads(self.options["read"])
        return (_PushingReader if options.get("pushdown") else _Reader)(options, schema)


class ObjectFilesSource(ObjectStoreSource):
    """The data source of reads of given data files (:func:`read_object_files`). Its one
    option, ``read``, is the JSON of the read (location, files, query schema, meta, file and
    position columns, settings)."""

    @classmethod
    def name(cls) -> str:
        return FILES_SOURCE_NAME

    def reader(self, schema: StructType) -> DataSourceReader:
        return _FilesReader(json.loads(self.options["read"]), schema)


def _register(spark: SparkSession) -> None:
    if id(spark) not in _REGISTERED:
        spark.dataSource.register(ObjectStoreSource)
        spark.dataSource.register(ObjectFilesSource)
        _REGISTERED.add(id(spark))


def read_object_table(table: BaseTable, as_of: CommitRef | None,
                      schema: Schema | str | CommitRef | None, columns: Sequence[str] | None,
                      meta_columns: bool, spark: SparkSession, *,
                      read_optimized: bool = False) -> DataFrame:
    """A DataFrame of ``table`` (in object storage) as :meth:`~evonb.api.Table.read` gives
    it (see the module docstring; ``read_optimized``: the base files only, without their log
    blocks). The read is planned here first, so a user's mistake is an evonb error from this
    call, not from a task."""
    read = snapshot_read_options(table, as_of, schema, columns, meta_columns,
                                 read_optimized=read_optimized)
    read["pushdown"] = spark.conf.get(PUSHDOWN_CONF, "false").lower() == "true"
    _register(spark)
    return spark.read.format(SOURCE_NAME).option("read", json.dumps(read)).load()


def snapshot_read_options(table: BaseTable, as_of: CommitRef | None,
                          schema: Schema | str | CommitRef | None,
                          columns: Sequence[str] | None, meta_columns: bool, *,
                          read_optimized: bool = False) -> dict[str, Any]:
    """The read :class:`ObjectStoreSource` makes (its ``read`` option, as JSON), planned
    here so that a user's mistake is an evonb error on the driver."""
    plan = ArrowRead(table, as_of, schema=schema, columns=columns, meta_columns=meta_columns)
    return {"location": str(location_uri(table.root)), "instant": plan.snap.instant,
            "schema": plan.full.version_id, "columns": list(columns) if columns else None,
            "meta": meta_columns, "base_only": read_optimized, "settings": store_settings(),
            "paths": [list(p) for p in plan.output_paths],
            "spark_schema": from_arrow_schema(plan.output, prefer_timestamp_ntz=True).json()}


def read_object_files(table: BaseTable, files: Sequence[DataFile], query: Schema, *,
                      meta: bool, with_file: bool, with_position: bool,
                      spark: SparkSession, logs: Sequence[DataFile] | None = None,
                      snapshot: Snapshot | None = None) -> DataFrame:
    """The rows stored in data ``files`` of ``table`` (in object storage; without their log
    blocks) in ``query``'s columns, as :func:`evonb.spark.reader.read_files` gives them on
    local disk (each file read in its own schema version; ``meta``: the commit-time column;
    ``with_file``: each row's file; ``with_position``: its row number in the file), one Spark
    partition per file: what upserts and deletes read of the files they rewrite or add log
    blocks to.

    With ``logs`` (the log blocks of ``files``, possibly none), each file is read merged with
    its blocks instead, as a snapshot read sees it (:func:`evonb.spark.mor.read_snapshot` on
    local disk): what compaction, clustering, rewrites and incremental reads read; file and
    position columns are then refused, as they name stored rows.

    ``snapshot`` is the snapshot the files are of (default: the latest): its commit, sent to
    the tasks, sets the schema version whose type history values go through, as on local
    disk (:func:`evonb.table.read_plan.read_paths`)."""
    merged = logs is not None
    if merged and (with_file or with_position):
        raise ValueError("a merged read has no file or position columns")
    groups: dict[str, list[str]] = {}
    for log in sorted(logs or (), key=lambda f: (f.instant, f.path)):  # oldest first
        groups.setdefault(str(log.base), []).append(log.path)
    plan = ArrowRead(table, schema=query, meta_columns=meta, snapshot=snapshot)
    _register(spark)
    output = plan.output
    if with_file:
        output = output.append(pa.field(FILE, pa.string()))
    if with_position:
        output = output.append(pa.field(POS, pa.int64()))
    read = {"location": str(location_uri(table.root)), "instant": plan.snap.instant,
            "files": [f.to_dict() for f in files], "query": query.to_json(), "meta": meta,
            "merged": merged, "logs": [f.to_dict() for f in logs or ()], "groups": groups,
            "with_file": with_file, "with_position": with_position, "settings": store_settings(),
            "spark_schema": from_arrow_schema(output, prefer_timestamp_ntz=True).json()}
    return spark.read.format(FILES_SOURCE_NAME).option("read", json.dumps(read)).load()
