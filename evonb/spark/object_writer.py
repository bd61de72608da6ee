"""Spark writes of data files into object storage, without Hadoop's S3A or ABFS connectors.

Spark's own Parquet writer reaches a bucket only through a Hadoop connector that matches the
cluster's Hadoop build. Where a table lives in object storage, evonb's Python workers write its
data files instead: each Spark task takes its rows as Arrow record batches
(``DataFrame.mapInArrow``), writes them with pyarrow straight to their final place in the
bucket or container (one file per task and partition folder, row groups of at most
``ROW_GROUP_ROWS`` rows), and returns each file's entry (path, rows, bytes, key statistics).
The driver commits them as any write does, so nothing a task writes is visible before the
commit point.

A task applies the object-store settings of the process that planned the write
(:mod:`evonb.table.store_settings`), so executors need no configuration of their own, and
need evonb and pyarrow installed. A task that fails removes what it wrote; a write whose job
fails removes every file named with its instant once its attempt is off the timeline
(:meth:`~evonb.table.transaction.Transaction.tasks_place_files`) and the job's other tasks have
ended (:func:`~evonb.spark.task_attempts.collect_settled`), and a task that finishes after
that finds the attempt gone and removes its own files.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evonb.errors import EvoError
from evonb.spark.parquet_encoding import dictionary_columns
from evonb.spark.task_attempts import collect_settled, note_if_retried
from evonb.spark.writer import (
    ROW_GROUP_ROWS,
    ROW_GROUP_ROWS_OPTION,
    coalesced,
    without_field_ids,
    write_files,
)
from evonb.table.fileio import file_io, is_object_path, object_key
from evonb.table.key_stats import footer_stats
from evonb.table.names import TEMP_SUFFIX, data_file_name, partition_path, temp_prefix
from evonb.table.partition_folders import (
    OBJECT_KEY_BYTES,
    check_folder_bytes,
    check_key_bytes,
    date_folder_value,
    folder_value,
    key_bytes,
    staged_partition_name,
    timestamp_folder_value,
)
from evonb.table.snapshot import DataFile
from evonb.table.store_settings import apply_store_settings, store_settings
from evonb.table.timeline import instant_on_timeline

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame

    from evonb.schema.types import Type

BUFFER_BYTES = 128 * 1024 * 1024
"""A task writes a row group once its buffered batches hold this many bytes (or
``ROW_GROUP_ROWS`` rows), so Spark's small Arrow batches do not become small row groups
(Spark's own ``parquet.block.size`` default)."""
ROW_GROUP_BYTES_OPTION = "parquet.block.size"

_RESULT = "entry string"
_ROW = "__evo_row"

_KEY_TOO_LONG = re.compile(r"evonb: object key too long: (\d+)\|")
"""The message of a task's refusal of a partition folder too long for an object key (its
bytes), as the failed job reports it: :func:`write_object_files` raises evonb's error."""


def _task_number() -> int:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return ctx.partitionId() if ctx is not None else 0


class _FileWriter:
    """One data file being written by a task: batches buffered into row groups, each row
    group written to a local temporary file as it fills, and the finished file stored with
    one request (pyarrow's multipart uploads are not used: a file is at most the table's
    target size). A task writing many partitions holds one row group's batches per
    partition in memory, as Spark's own writer does, not whole files. For a table on a
    local or mounted file system the temporary file is in the file's own folder, and is
    renamed into place (the driver's copy-on-write rewrites write there)."""

    def __init__(self, root: Path, rel: str, schema: pa.Schema, row_group_rows: int,
                 row_group_bytes: int) -> None:
        import pyarrow as pa

        self.root, self.rel = root, rel
        self.in_place = not is_object_path(root)
        if self.in_place:
            folder = Path(root / rel).parent
            folder.mkdir(parents=True, exist_ok=True)
            handle, self.local = tempfile.mkstemp(prefix=temp_prefix(Path(rel).name),
                                                  suffix=TEMP_SUFFIX, dir=folder)
        else:
            handle, self.local = tempfile.mkstemp(prefix="evonb-write-", suffix=".parquet")
        os.close(handle)
        self.sink = pa.OSFile(self.local, "wb")
        self.schema = schema
        self.writer: Any = None  # a pyarrow ParquetWriter, opened on the first row group
        self.row_group_rows = row_group_rows
        self.row_group_bytes = row_group_bytes
        self.buffer: list[pa.RecordBatch] = []
        self.rows = self.bytes = 0

    def add(self, batch: pa.RecordBatch) -> None:
        self.buffer.append(batch)
        self.rows += batch.num_rows
        self.bytes += batch.nbytes
        if self.rows >= self.row_group_rows or self.bytes >= self.row_group_bytes:
            self.flush()

    def flush(self) -> None:
        import pyarrow as pa

        if self.buffer:
            group = pa.Table.from_batches(self.buffer)
            self._writer(group).write_table(group, row_group_size=self.row_group_rows)
        self.buffer, self.rows, self.bytes = [], 0, 0

    def close(self) -> tuple[Any, int]:
        """Finish and store the file: its footer and its size in bytes."""
        try:
            self.flush()
            writer = self._writer(self.schema.empty_table())
            writer.close()
            self.sink.close()
            if self.in_place:
                size = os.stat(self.local).st_size
                file_io().move(self.local, self.root / self.rel)
            else:
                with open(self.local, "rb") as fh:
                    data = fh.read()
                file_io().write(self.root / self.rel, data)
                size = len(data)
        finally:
            self.discard()
        return writer.writer.metadata, size

    def _writer(self, first: pa.Table) -> Any:
        """The file's Parquet writer, opened for ``first``, its first row group: columns of
        mostly distinct values are written plain (:mod:`evonb.spark.parquet_encoding`)."""
        import pyarrow.parquet as pq

        if self.writer is None:
            self.writer = pq.ParquetWriter(self.sink, self.schema, compression="snappy",
                                           use_dictionary=dictionary_columns(first))
        return self.writer

    def discard(self) -> None:
        """Remove the local temporary file (nothing is stored). The Parquet writer is closed
        before its sink: closed later (when collected), it would write to a closed file."""
        if self.writer is not None:
            with contextlib.suppress(OSError, ValueError):
                self.writer.close()
        with contextlib.suppress(OSError, ValueError):
            self.sink.close()
        with contextlib.suppress(OSError):
            os.unlink(self.local)


def _folder_values(column: pa.ChunkedArray) -> list[str]:
    """The folder spelling of each value of a partition column (:func:`folder_value`);
    dates and timestamps from their numbers, so years past 9999 are spelled too (Python's
    dates stop there, Spark's do not)."""
    import pyarrow as pa

    t = column.type
    if pa.types.is_date32(t):
        return [date_folder_value(v) for v in column.cast(pa.int32()).to_pylist()]
    if pa.types.is_timestamp(t):
        micros = column.cast(pa.timestamp("us", t.tz)).cast(pa.int64())
        return [timestamp_folder_value(v) for v in micros.to_pylist()]
    single = pa.types.is_float32(t)
    return [folder_value(v, single) for v in column.to_pylist()]


def _partitions(batch: pa.RecordBatch, columns: Sequence[str], root: Path, in_task: bool
                ) -> Iterator[tuple[str, pa.RecordBatch]]:
    """The rows of ``batch`` per partition folder (``col=value/...``, each value spelled as
    Spark's writer spells it: :func:`evonb.table.partition_folders.folder_value`): every row
    exactly once (rows are taken by their index in their group, so a NaN or null value is a
    group too). Folders must fit: on a local file system each folder's name, as Spark's
    writer's must (:func:`evonb.spark.writer.fitting_folder`); in object storage the key of
    a file in it (:func:`~evonb.table.partition_folders.check_key_bytes`; ``in_task``: a
    Spark task's refusal is a message :func:`write_object_files` turns into evonb's error)."""
    import numpy as np
    import pyarrow as pa

    if not columns:
        yield "", batch
        return
    table_key = object_key(root)
    table = pa.Table.from_batches([batch]).append_column(
        _ROW, pa.array(np.arange(batch.num_rows, dtype=np.int64)))
    groups = table.group_by(list(columns), use_threads=False).aggregate([(_ROW, "list")])
    members = groups.column(f"{_ROW}_list").combine_chunks()
    spelled = [_folder_values(groups.column(name)) for name in columns]
    for i in range(groups.num_rows):
        values = [column[i] for column in spelled]
        if table_key is None:
            for j, (name, value) in enumerate(zip(columns, values, strict=True)):
                check_folder_bytes(name, (name, staged_partition_name(j)), len(value.encode()))
        folder = "/".join(f"{name}={value}" for name, value in zip(columns, values, strict=True))
        if table_key is not None:
            folder_bytes = len(folder.encode())
            if in_task and key_bytes(table_key, folder_bytes) > OBJECT_KEY_BYTES:
                raise EvoError(f"evonb: object key too long: {folder_bytes}|")
            check_key_bytes(columns, table_key, folder_bytes)
        rows = table.take(members[i].values).drop_columns([_ROW])
        for part in rows.to_batches():
            yield folder, part


def write_task(batches: Iterator[pa.RecordBatch], *, location: str, instant: str,
               version: str, partition_columns: Sequence[str],
               key_columns: Mapping[int, tuple[str, Type]] | None, row_group_rows: int,
               row_group_bytes: int, settings: Mapping[str, str], in_driver: bool = False
               ) -> Iterator[pa.RecordBatch]:
    """A Spark task's part of a write: its rows as data files; one record batch of their
    entries (JSON of :class:`~evonb.table.snapshot.DataFile`). A task looks, once its files
    are placed, whether the write's attempt is still on the timeline (the driver may have
    aborted it meanwhile); ``in_driver``: the files are written by the process that holds the
    attempt, which aborts it only after this returns, so nothing is looked at."""
    import pyarrow as pa

    apply_store_settings(settings)
    root = Path(location)
    task = _task_number()
    writers: dict[str, _FileWriter] = {}
    entries: list[str] = []
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            for folder, rows in _partitions(batch, partition_columns, root,
                                            in_task=not in_driver):
                writer = writers.get(folder)
                if writer is None:
                    rel = partition_path(folder, data_file_name(instant, task))
                    writer = writers[folder] = _FileWriter(root, rel, rows.schema,
                                                           row_group_rows, row_group_bytes)
                writer.add(rows)
        if writers:
            note_if_retried(root, instant)
        for folder, writer in writers.items():
            footer, size = writer.close()
            stats = footer_stats(footer, key_columns) if key_columns else None
            entries.append(json.dumps(DataFile(
                path=writer.rel, version=version, instant=instant, partition=folder,
                rows=footer.num_rows, bytes=size, key_stats=stats).to_dict()))
        if writers and not in_driver and not instant_on_timeline(root, instant):
            raise EvoError(f"The write {instant} was aborted while this task wrote its files",
                           hint="nothing to do: the task removed them")
    except BaseException:
        io = file_io()
        for writer in writers.values():
            writer.discard()
            with contextlib.suppress(OSError):  # the write's cleanup lists them once more
                io.delete(root / writer.rel)
        raise
    yield pa.RecordBatch.from_pydict({"entry": entries}, schema=pa.schema([("entry",
                                                                             pa.string())]))


def write_object_files(
    df: DataFrame,
    *,
    root: Path,
    instant: str,
    version: str,
    partition_columns: tuple[str, ...] = (),
    max_files: int | None = None,
    options: Mapping[str, str] | None = None,
    key_columns: Mapping[int, tuple[str, Type]] | None = None,
    target_file_bytes: int = 0,
) -> list[DataFile]:
    """:func:`evonb.spark.writer.write_files` for a table in object storage (see the module
    docstring): ``df``'s rows as Parquet files of the commit ``instant``, placed but not yet
    visible to readers. Of the Parquet ``options`` (a table's ``evonb.write.parquet.*``),
    ``parquet.block.row.count.limit`` caps a row group's rows and ``parquet.block.size`` its
    bytes (as Arrow holds them in memory); the files are Snappy-compressed."""
    options = options or {}
    row_group_rows = int(options.get(ROW_GROUP_ROWS_OPTION, ROW_GROUP_ROWS))
    row_group_bytes = int(options.get(ROW_GROUP_BYTES_OPTION, BUFFER_BYTES))
    df = coalesced(without_field_ids(df), max_files, target_file_bytes)
    job = {"location": os.fspath(root), "instant": instant, "version": version,
           "partition_columns": tuple(partition_columns), "key_columns": key_columns,
           "row_group_rows": row_group_rows,
           "row_group_bytes": row_group_bytes, "settings": store_settings()}

    def task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        return write_task(batches, **job)

    try:
        rows = collect_settled(df.mapInArrow(task, _RESULT), f"evonb-write-{instant}")
    except Exception as exc:  # py4j's error of the failed job, or Spark's own
        too_long = _KEY_TOO_LONG.search(str(exc))
        if too_long is None:
            raise
        check_key_bytes(partition_columns, object_key(root) or "", int(too_long[1]))
        raise  # pragma: no cover - check_key_bytes raised
    return sorted((DataFile.from_dict(json.loads(row["entry"])) for row in rows),
                  key=lambda f: f.path)


def write_arrow_files(tables: Iterable[pa.Table], *, root: Path, instant: str, version: str,
                      partition_columns: Sequence[str] = (),
                      key_columns: Mapping[int, tuple[str, Type]] | None = None,
                      options: Mapping[str, str] | None = None) -> list[DataFile]:
    """The rows of ``tables`` (physical columns, one schema; read one after another, so they
    may stream) as data files of the commit ``instant``, written in this process by the
    writer of evonb's Python workers (:func:`write_task`): one file per partition folder,
    wherever the table lives, placed but not yet visible to readers (none for no rows). Of
    the Parquet ``options``, as :func:`write_object_files` honours them."""
    options = options or {}
    job = {"location": os.fspath(root), "instant": instant, "version": version,
           "partition_columns": tuple(partition_columns), "key_columns": key_columns,
           "row_group_rows": int(options.get(ROW_GROUP_ROWS_OPTION, ROW_GROUP_ROWS)),
           "row_group_bytes": int(options.get(ROW_GROUP_BYTES_OPTION, BUFFER_BYTES)),
           "settings": store_settings(), "in_driver": True}
    batches = (batch for table in tables for batch in table.to_batches())
    entries = [entry for batch in write_task(batches, **job)
               for entry in batch.column("entry").to_pylist()]
    return sorted((DataFile.from_dict(json.loads(e)) for e in entries), key=lambda f: f.path)


def write_table_files(df: DataFrame, *, root: Path, **options: Any) -> list[DataFile]:
    """``df`` as data files of a table at ``root``, wherever it lives: Spark's Parquet writer
    on local disk (:func:`~evonb.spark.writer.write_files`), evonb's Python workers in object
    storage (:func:`write_object_files`); ``options`` are theirs."""
    write = write_object_files if is_object_path(root) else write_files
    return write(df, root=root, **options)


__all__ = ["ROW_GROUP_BYTES_OPTION", "write_arrow_files",
           "write_object_files", "write_table_files", "write_task"]
