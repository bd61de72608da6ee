"""Spark reads of tables in object storage, without Hadoop's S3A or ABFS connectors.

Spark reaches a bucket through a Hadoop connector (``hadoop-aws``, ``hadoop-azure``) that must
match the cluster's Hadoop build; where none is installed, a Spark read of a table in a bucket
goes through this Python data source instead: the tasks read the table's files with evonb's
JVM-free reader (:class:`evonb.arrow.reader.ArrowRead`, pyarrow's S3 and Azure file systems),
one data file (merged with its log blocks) per Spark partition, and hand Spark Arrow record
batches. Reads merge schemas by field ID exactly as the Arrow reader does. A second source
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

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from evonb.arrow.reader import ArrowRead
from evonb.schema.schema import Schema
from evonb.spark.avro_log import POS
from evonb.spark.mor import FILE
from evonb.table.fsutil import location_uri
from evonb.table.snapshot import DataFile
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


def _snapshot_read(options: Mapping[str, Any]) -> tuple[ArrowRead, dict[str, DataFile]]:
    """A snapshot read (a commit, a query schema, columns), and its data files by path."""
    read = ArrowRead(open_table(options["location"]), options["instant"],
                     schema=options["schema"], columns=options["columns"],
                     meta_columns=options["meta"])
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
    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = dict(options)

    def partitions(self) -> Sequence[InputPartition]:
        _, files = _cached(self.options, _snapshot_read)
        return [_FilePartition(path) for path in files] or [_FilePartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:  # an empty snapshot: one partition of no rows
            return
        read, files = _cached(self.options, _snapshot_read)
        f = files[partition.value]
        # a read-optimized query reads the base files only, without their log blocks
        tables = read.base_tables(f) if self.options["base_only"] else read.file_tables(f)
        for table in tables:
            yield from table.to_batches()


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
        return _Reader(json.loads(self.options["read"]))


class ObjectFilesSource(ObjectStoreSource):
    """The data source of reads of given data files (:func:`read_object_files`). Its one
    option, ``read``, is the JSON of the read (location, files, query schema, meta, file and
    position columns, settings)."""

    @classmethod
    def name(cls) -> str:
        return FILES_SOURCE_NAME

    def reader(self, schema: StructType) -> DataSourceReader:
        return _FilesReader(json.loads(self.options["read"]))


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
    plan = ArrowRead(table, as_of, schema=schema, columns=columns, meta_columns=meta_columns)
    _register(spark)
    read = {"location": str(location_uri(table.root)), "instant": plan.snap.instant,
            "schema": plan.full.version_id, "columns": list(columns) if columns else None,
            "meta": meta_columns, "base_only": read_optimized, "settings": store_settings(),
            "spark_schema": from_arrow_schema(plan.output, prefer_timestamp_ntz=True).json()}
    return spark.read.format(SOURCE_NAME).option("read", json.dumps(read)).load()


def read_object_files(table: BaseTable, files: Sequence[DataFile], query: Schema, *,
                      meta: bool, with_file: bool, with_position: bool,
                      spark: SparkSession, logs: Sequence[DataFile] | None = None
                      ) -> DataFrame:
    """The rows stored in data ``files`` of ``table`` (in object storage; without their log
    blocks) in ``query``'s columns, as :func:`evonb.spark.reader.read_files` gives them on
    local disk (each file read in its own schema version; ``meta``: the commit-time column;
    ``with_file``: each row's file; ``with_position``: its row number in the file), one Spark
    partition per file: what upserts and deletes read of the files they rewrite or add log
    blocks to.

    With ``logs`` (the log blocks of ``files``, possibly none), each file is read merged with
    its blocks instead, as a snapshot read sees it (:func:`evonb.spark.mor.read_snapshot` on
    local disk): what compaction, clustering and rewrites read; file and position columns
    are then refused, as they name stored rows."""
    merged = logs is not None
    if merged and (with_file or with_position):
        raise ValueError("a merged read has no file or position columns")
    groups: dict[str, list[str]] = {}
    for log in sorted(logs or (), key=lambda f: (f.instant, f.path)):  # oldest first
        groups.setdefault(str(log.base), []).append(log.path)
    plan = ArrowRead(table, schema=query, meta_columns=meta)
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
