"""Spark reads of tables in object storage, without Hadoop's S3A or ABFS connectors.

Spark reaches a bucket through a Hadoop connector (``hadoop-aws``, ``hadoop-azure``) that must
match the cluster's Hadoop build; where none is installed, a Spark read of a table in a bucket
goes through this Python data source instead: the tasks read the table's files with evonb's
JVM-free reader (:class:`evonb.arrow.reader.ArrowRead`, pyarrow's S3 and Azure file systems),
one data file (merged with its log blocks) per Spark partition, and hand Spark Arrow record
batches. Reads merge schemas by field ID exactly as the Arrow reader does.

Everything a task needs travels with the read: the table's location, the commit read, the
query schema's version and columns, and the object-store settings of the process that made
the read (the ``AWS_*`` and ``AZURE_STORAGE_*`` variables evonb reads, as Spark's own
connectors take their keys from the session's configuration): a task applies them before it
opens the table, so executors need no configuration of their own, and need evonb and pyarrow
installed. Nothing in a table's files decides what runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from evonb.arrow.reader import ArrowRead
from evonb.table.fileio import object_store_io
from evonb.table.fsutil import location_uri
from evonb.table.table import open_table

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from evonb.schema.schema import Schema
    from evonb.table.snapshot import DataFile
    from evonb.table.table import BaseTable, CommitRef

SOURCE_NAME = "evonb_object_store"
"""The short name the data source is registered under."""

SETTINGS_PREFIXES = ("AWS_", "AZURE_STORAGE_", "AZURE_CLIENT_", "AZURE_TENANT_",
                     "EVONB_AZURE_")
"""Environment variables of the object-store settings evonb reads (``docs/cluster.md``)."""

_REGISTERED: set[int] = set()


def store_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The object-store settings of this process, to apply in the tasks."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in env.items() if k.startswith(SETTINGS_PREFIXES)}


def _apply(settings: Mapping[str, str]) -> None:
    """Make this (task) process use ``settings`` for object storage."""
    changed = False
    for key in [k for k in os.environ if k.startswith(SETTINGS_PREFIXES)]:
        if key not in settings:
            del os.environ[key]
            changed = True
    for key, value in settings.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
            changed = True
    if changed:
        object_store_io.cache_clear()


_READS: dict[str, tuple[ArrowRead, dict[str, DataFile]]] = {}
"""Reads planned in this (task) process, by their options, with the snapshot's data files by
path: the tasks of one read that run in one Python worker open the table once."""

READS_KEPT = 4


def _arrow_read(options: Mapping[str, Any]) -> tuple[ArrowRead, dict[str, DataFile]]:
    """The Arrow read the options describe (in a task: after applying the settings), and
    its snapshot's data files by path."""
    key = json.dumps(options, sort_keys=True)
    found = _READS.get(key)
    if found is not None:
        return found
    _apply(options["settings"])
    table = open_table(options["location"])
    read = ArrowRead(table, options["instant"], schema=options["schema"],
                     columns=options["columns"], meta_columns=options["meta"])
    while len(_READS) >= READS_KEPT:
        del _READS[next(iter(_READS))]
    _READS[key] = (read, {f.path: f for f in read.snap.files})
    return _READS[key]


class _FilePartition(InputPartition):
    """One data file of the snapshot (by its path in the table), read with its log blocks."""


class _Reader(DataSourceReader):
    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = dict(options)

    def partitions(self) -> Sequence[InputPartition]:
        _, files = _arrow_read(self.options)
        return [_FilePartition(path) for path in files] or [_FilePartition(None)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if partition.value is None:  # an empty snapshot: one partition of no rows
            return
        read, files = _arrow_read(self.options)
        for table in read.file_tables(files[partition.value]):
            yield from table.to_batches()


class ObjectStoreSource(DataSource):
    """The data source (see the module docstring). Its one option, ``read``, is the JSON of
    the read (location, instant, schema version, columns, meta columns, settings)."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return StructType.fromJson(json.loads(json.loads(self.options["read"])["spark_schema"]))

    def reader(self, schema: StructType) -> DataSourceReader:
        return _Reader(json.loads(self.options["read"]))


def read_object_table(table: BaseTable, as_of: CommitRef | None,
                      schema: Schema | str | CommitRef | None, columns: Sequence[str] | None,
                      meta_columns: bool, spark: SparkSession) -> DataFrame:
    """A DataFrame of ``table`` (in object storage) as :meth:`~evonb.api.Table.read` gives
    it (see the module docstring). The read is planned here first, so a user's mistake is an
    evonb error from this call, not from a task."""
    plan = ArrowRead(table, as_of, schema=schema, columns=columns, meta_columns=meta_columns)
    if id(spark) not in _REGISTERED:
        spark.dataSource.register(ObjectStoreSource)
        _REGISTERED.add(id(spark))
    read = {"location": str(location_uri(table.root)), "instant": plan.snap.instant,
            "schema": plan.full.version_id, "columns": list(columns) if columns else None,
            "meta": meta_columns, "settings": store_settings(),
            "spark_schema": from_arrow_schema(plan.output, prefer_timestamp_ntz=True).json()}
    return spark.read.format(SOURCE_NAME).option("read", json.dumps(read)).load()
