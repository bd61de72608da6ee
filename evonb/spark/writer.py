"""Writing data files: Spark writes Parquet to a staging folder, evonb names and places them.

A file's final name carries the instant that wrote it (``<file-id>_<task>_<instant>.parquet``),
so its schema version is known without opening it. Files only become visible when the commit
that lists them completes; a failed write leaves nothing any reader would see.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from evonb.schema.render import backquote
from evonb.schema.spark_fields import FIELD_ID_KEY
from evonb.table.fileio import file_io
from evonb.table.fsutil import remove_data_files, staging_dir
from evonb.table.key_stats import footer_stats
from evonb.table.names import (
    DATA_SUFFIX,
    data_file_name,
    partition_path,
    staged_task,
)
from evonb.table.partition_folders import (
    ESCAPED_PATTERN,
    check_folder_bytes,
    folder_room,
    staged_partition_name,
)
from evonb.table.snapshot import DataFile

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

    from evonb.schema.types import Type

TARGET_FILE_PROPERTY = "evonb.write.target.file.bytes"
DEFAULT_TARGET_FILE_BYTES = 128 * 1024 * 1024
_GROWS_ROWS = frozenset({
    "Generate", "Expand", "MapInPandas", "MapInArrow", "PythonMapInArrow", "MapPartitions",
    "MapPartitionsInR", "MapElements", "FlatMapGroupsInPandas", "FlatMapGroupsInArrow",
    "FlatMapCoGroupsInPandas", "FlatMapCoGroupsInArrow", "FlatMapGroupsWithState",
    "BatchEvalPython", "ArrowEvalPython", "BatchEvalPythonUDTF", "ArrowEvalPythonUDTF",
    "AppendColumns", "AppendColumnsWithObject", "CoGroup", "MapGroups",
})
"""Logical plan nodes whose output Spark's size estimate can undercount (more rows or larger
values than their input): writes of plans holding one are not coalesced."""


_LIMITS = frozenset({"GlobalLimit", "LocalLimit"})


def estimated_bytes(df: DataFrame, *, below_limit: bool = False) -> int | None:
    """Spark's size estimate of ``df``'s optimized plan (the files' size for data read from
    files, the in-memory size for generated or local data), or None when Spark has none or
    it may undercount (a plan that can multiply rows, see :data:`_GROWS_ROWS`).

    ``below_limit``: the estimate of what the limits at the top of ``df``'s plan take their
    rows from (Spark estimates a limit as its row count times a guessed row size). Asking
    ``df.limit(n)`` itself, rather than the frame it limits, lets an action on it reuse the
    plan optimized here."""
    try:
        plan = df._jdf.queryExecution().optimizedPlan()
        top = plan
        while below_limit and top.nodeName() in _LIMITS and top.children().size() == 1:
            top = top.children().apply(0)
        size = int(str(top.stats().sizeInBytes()))
        todo = [plan]
        while todo:
            node = todo.pop()
            if node.nodeName() in _GROWS_ROWS:
                return None
            children = node.children()
            todo.extend(children.apply(i) for i in range(children.size()))
    except Exception:
        return None
    if size < 0 or size >= 2**62:  # Spark's "unknown" is Long.MaxValue
        return None
    return size


def estimated_files(df: DataFrame, target_bytes: int) -> int | None:
    """How many files of about ``target_bytes`` ``df`` makes by :func:`estimated_bytes`, or
    None when there is no estimate or ``target_bytes`` is not positive."""
    if target_bytes <= 0:
        return None
    size = estimated_bytes(df)
    if size is None:
        return None
    return max(1, -(-size // target_bytes))


def without_field_ids(df: DataFrame) -> DataFrame:
    """``df`` with no ``parquet.field.id`` in its columns' metadata, so the files written from
    it carry no Parquet field IDs (nor Spark's copy of them in the footer's schema).

    Spark can put field IDs on top-level columns and struct members only, never on list
    elements or map keys and values, and readers that find IDs in a file trust them over a
    name mapping: DuckDB's Iceberg reader then reads the nested values of such files as null.
    Files without any are read by name everywhere: evonb reads by physical name, and the
    Iceberg export's name mapping names every column (:mod:`evonb.iceberg.schema`)."""
    from pyspark.sql import functions as F

    fields = df.schema.fields
    if not any(FIELD_ID_KEY in f.metadata for f in fields):
        return df
    # one projection (withMetadata per column would analyze the whole plan once per column)
    return df.select(*[
        F.col(backquote(f.name)).alias(
            f.name, metadata={k: v for k, v in f.metadata.items() if k != FIELD_ID_KEY})
        if FIELD_ID_KEY in f.metadata else F.col(backquote(f.name)) for f in fields])


ROW_GROUP_ROWS_OPTION = "parquet.block.row.count.limit"
ROW_GROUP_ROWS = 1024 * 1024
"""Rows per Parquet row group at most, as pyarrow and pyiceberg write them: Spark's writer
alone cuts row groups by bytes only (128 MB), so a large file would be one row group, which a
reader decodes as one unit (no row groups to read in parallel or to skip by statistics). A
table sets another limit with ``evonb.write.parquet.block.row.count.limit``."""

TIMESTAMP_TYPE_OPTION = "spark.sql.parquet.outputTimestampType"
TIMESTAMP_TYPE = "TIMESTAMP_MICROS"
"""How Spark's writer stores ``timestamp`` values: as 64-bit microseconds, the encoding
pyarrow and pyiceberg write, unless the session sets :data:`TIMESTAMP_TYPE_OPTION` to
``INT96`` (exact too, for a reader that needs it). Spark's own default, INT96, is deprecated by
Parquet and has no statistics any reader uses, so a time-range filter skipped no row group and
a ``timestamp`` record key had no key range. A session's ``TIMESTAMP_MILLIS`` is not followed:
it would drop the microseconds of every value. Files written as INT96 before are read as they
are."""


def coalesced(df: DataFrame, max_files: int | None, target_file_bytes: int) -> DataFrame:
    """``df`` in at most ``max_files`` tasks, and in fewer when Spark estimates it smaller than
    ``target_file_bytes`` per task (:func:`estimated_files`); never more tasks than its plan
    has."""
    planned = estimated_files(df, target_file_bytes)
    if planned is not None:
        max_files = min(max_files, planned) if max_files else planned
    return df.coalesce(max_files) if max_files else df


_FOLDER_TOO_LONG = re.compile(r"evonb: partition folder too long: (.*)\|(__evo_p\d+)\|(\d+)\|")
"""The message of :func:`fitting_folder`'s failure, as the failed job reports it."""


def fitting_folder(column: str, staged: str) -> Column:
    """String column ``column`` as a partition folder value, which fails the job with a
    message :func:`write_files` turns into a ``DataValidationError`` where a value's folder
    name (``<column>=<value>``, or in the staging folder ``<staged>=<value>``) would take more
    than :data:`~evonb.table.partition_folders.FOLDER_NAME_BYTES` bytes: checked in the job
    that writes the rows, so the rows are not computed twice."""
    from pyspark.sql import functions as F

    room = folder_room((column, staged))
    value = F.col(backquote(column))
    escaped = F.char_length(value) - F.char_length(F.regexp_replace(value, ESCAPED_PATTERN, ""))
    size = F.octet_length(value) + escaped * 2
    failed = F.raise_error(F.concat(F.lit(f"evonb: partition folder too long: {column}|{staged}|"),
                                    size.cast("string"), F.lit("|")))
    # a value of at most a third of the room fits however many characters are escaped: the
    # pattern is only matched on longer ones (And stops at its first false side)
    return F.when((F.octet_length(value) * 3 > room) & (size > room), failed).otherwise(value)


_DAY = 86_400_000_000
"""Microseconds in a day."""


def utc_text(column: str) -> Column:
    """The text of timestamp column ``column``'s instants as UTC times, spelled as Spark spells
    a timestamp (``2020-01-01 05:00:00.12``, :func:`evonb.table.partition_folders.timestamp_text`)
    whatever the session's time zone: computed from the microseconds since the epoch, so no
    time zone (nor a daylight-saving fold) comes into it. Null stays null."""
    from pyspark.sql import functions as F

    micros = f"unix_micros({backquote(column)})"
    day, rest = f"(({micros} - pmod({micros}, {_DAY})) div {_DAY})", f"pmod({micros}, {_DAY})"

    def two(part: str) -> str:
        return f"lpad(cast({part} as string), 2, '0')"

    fraction = f"pmod({rest}, 1000000)"
    return F.expr(
        f"concat(cast(date_from_unix_date(cast({day} as int)) as string), ' ', "
        f"{two(f'{rest} div 3600000000')}, ':', {two(f'pmod({rest} div 60000000, 60)')}, ':', "
        f"{two(f'pmod({rest} div 1000000, 60)')}, if({fraction} = 0, '', concat('.', "
        f"regexp_replace(lpad(cast({fraction} as string), 6, '0'), '0+$', ''))))")


def write_files(
    df: DataFrame,
    *,
    root: Path,
    instant: str,
    version: str,
    partition_columns: tuple[str, ...] = (),
    max_files: int | None = None,
    options: dict[str, str] | None = None,
    key_columns: Mapping[int, tuple[str, Type]] | None = None,
    target_file_bytes: int = 0,
) -> list[DataFile]:
    """Write ``df`` (physical columns) as Parquet files of the commit ``instant``.

    ``max_files`` caps the number of write tasks. ``target_file_bytes`` (when positive):
    a write Spark estimates smaller than that many bytes per task is coalesced into fewer
    tasks (:func:`estimated_files`), so small writes make few files rather than one small
    file per input partition.

    Returns the files, placed under their partition folders (values spelled as
    :mod:`evonb.table.partition_folders` says, a timestamp's as its UTC time), not yet visible
    to readers.
    ``key_columns`` (field ID -> physical name and type, see
    :func:`evonb.table.key_stats.key_columns`) are the record-key columns whose min and max
    each file records, from the footer read for its row count.
    """
    import pyarrow.parquet as pq
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, TimestampType

    staging = staging_dir(root, instant)
    df = without_field_ids(df)
    hidden = [staged_partition_name(i) for i in range(len(partition_columns))]
    for name, column in zip(hidden, partition_columns, strict=True):
        kind = df.schema[column].dataType
        if isinstance(kind, TimestampType):  # Spark names it by the session's time zone
            df = df.withColumn(name, utc_text(column))
        elif isinstance(kind, StringType):
            df = df.withColumn(name, fitting_folder(column, name))
        else:
            df = df.withColumn(name, F.col(backquote(column)))
    df = coalesced(df, max_files, target_file_bytes)
    writer = (df.write.mode("overwrite").option("compression", "snappy")
              .option(ROW_GROUP_ROWS_OPTION, str(ROW_GROUP_ROWS)))
    if (df.sparkSession.conf.get(TIMESTAMP_TYPE_OPTION, None) or "").upper() != "INT96":
        writer = writer.option(TIMESTAMP_TYPE_OPTION, TIMESTAMP_TYPE)
    for key, value in (options or {}).items():  # a table's evonb.write.parquet.* win
        writer = writer.option(key, value)
    if hidden:
        writer = writer.partitionBy(*hidden)
    try:
        writer.parquet(str(staging))
    except Exception as exc:  # py4j's error of the failed job, or Spark's own
        too_long = _FOLDER_TOO_LONG.search(str(exc))
        if too_long is None:
            raise
        file_io().delete_folder(staging)
        check_folder_bytes(too_long[1], (too_long[1], too_long[2]), int(too_long[3]))
        raise  # pragma: no cover - check_folder_bytes raised

    placed: list[DataFile] = []
    try:
        for src in sorted(staging.rglob(f"*{DATA_SUFFIX}")):
            rel_dir = src.parent.relative_to(staging)
            parts = []
            for piece in rel_dir.parts:
                key, _, value = piece.partition("=")
                parts.append(f"{partition_columns[hidden.index(key)]}={value}")
            partition = "/".join(parts)
            rel = partition_path(partition, data_file_name(instant, staged_task(src.name)))
            dest = root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            footer = pq.read_metadata(src)
            stats = footer_stats(footer, key_columns) if key_columns else None
            size = src.stat().st_size
            file_io().move(src, dest)
            placed.append(DataFile(path=rel, version=version, instant=instant,
                                   partition=partition, rows=footer.num_rows, bytes=size,
                                   key_stats=stats))
    except BaseException:
        remove_data_files(root, placed)
        raise
    finally:
        file_io().delete_folder(staging)
    return placed
