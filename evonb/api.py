"""The table users hold: :class:`Table`, and :func:`create_table`, :func:`open_table` and
:func:`convert`, which return one.

Layers meet here. :class:`~evonb.table.table.BaseTable` is the format (no engine),
:class:`~evonb.spark.table.SparkTable` adds Spark reads and writes; ``Table`` adds the
JVM-free Arrow reads and the services (compaction, rewrite, clean, rollback).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from evonb.arguments import check_mapping
from evonb.errors import EvoError
from evonb.iceberg.status import IcebergStatus, iceberg_status
from evonb.schema.schema import Schema
from evonb.services.clean import clean as clean_table
from evonb.services.clustering import ClusterOrder, cluster_inline
from evonb.services.clustering import cluster as cluster_table
from evonb.services.compaction import compact as compact_table
from evonb.services.compaction import compact_inline
from evonb.services.progress import ProgressCallback
from evonb.services.rewrite import rewrite as rewrite_table
from evonb.spark.table import SparkTable, spark_schema
from evonb.table import table as _table
from evonb.table.config import TableConfig
from evonb.table.convert import check_target, install, key_tuple, plan_parquet, with_properties
from evonb.table.fileio import file_io
from evonb.table.fsutil import table_path
from evonb.table.history import Commit
from evonb.table.hudi import plan_hudi
from evonb.table.rollback import rollback as rollback_table
from evonb.table.snapshot import DataFile, Snapshot
from evonb.table.table import CommitRef, WriteMode

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType as SparkStructType

    from evonb.arrow.data_diff import DataDiff


class Table(SparkTable):
    """An evonb table. Obtain one with :func:`create_table`, :func:`open_table` or
    :func:`convert`."""

    def write(self, df: DataFrame, mode: WriteMode = "insert") -> Commit:
        """Write a DataFrame: ``insert``, ``upsert``, ``delete`` (by record key) or
        ``overwrite``. Columns match by name; the schema evolves as the data needs. After the
        commit, compacts when ``evonb.compaction.inline.every`` data commits were made since
        the last compaction, and clusters when ``evonb.clustering.inline.every`` data commits
        were made since the last clustering. The write and the services it runs use the
        table's properties as they were when it started."""
        with self.config_held():
            commit = super().write(df, mode)
            compact_inline(self)
            cluster_inline(self)
        return commit

    def _read_object_store(self, as_of: CommitRef | None,
                           schema: Schema | str | CommitRef | None,
                           columns: Sequence[str] | None, meta_columns: bool,
                           query: str) -> DataFrame:
        """:meth:`read` of a table in object storage: Spark tasks read it with the JVM-free
        reader, no Hadoop connector needed (:mod:`evonb.arrow.spark_source`)."""
        from evonb.arrow.spark_source import read_object_table  # pyspark and pyarrow

        return read_object_table(self, as_of, schema, columns, meta_columns,
                                 self.spark_session(),
                                 read_optimized=query == "read_optimized")

    def read_object_files(self, files: Sequence[DataFile], query: Schema, *,
                          meta: bool = False, with_file: bool = False,
                          with_position: bool = False,
                          logs: Sequence[DataFile] | None = None,
                          snapshot: Snapshot | None = None) -> DataFrame:
        """The stored rows of the base files an upsert or delete of a table in object storage
        rewrites or adds log blocks to (with ``logs``: the file groups merged with them, what
        compaction, clustering and incremental reads read), read by Spark tasks with the
        JVM-free reader (:func:`evonb.arrow.spark_source.read_object_files`); ``snapshot``:
        the snapshot the files are of (default: the latest)."""
        from evonb.arrow.spark_source import read_object_files  # pyspark and pyarrow

        return read_object_files(self, files, query, meta=meta, with_file=with_file,
                                 with_position=with_position, spark=self.spark_session(),
                                 logs=logs, snapshot=snapshot)

    reads_in_driver = True

    def stored_rows_reader(self, query: Schema, *, meta: bool = False,
                           snapshot: Snapshot | None = None
                           ) -> Callable[[DataFile], pa.Table]:
        """A reader of the rows stored in one data file (without its log blocks) in
        ``query``'s columns (``meta``: and the commit-time column), in the file's row order,
        by the JVM-free reader (:meth:`evonb.arrow.reader.ArrowRead.base_tables`): the
        driver's key lookup of small merge-on-read deltas (:mod:`evonb.spark.mor_driver`)
        and its rewrite of small copy-on-write upserts (:mod:`evonb.spark.cow_driver`).
        ``snapshot``: the snapshot the files are of (default: the latest, listed now)."""
        import pyarrow as pa

        from evonb.arrow.reader import ArrowRead  # pyarrow

        reader = ArrowRead(self, schema=query, meta_columns=meta, snapshot=snapshot)

        def read(f: DataFile) -> pa.Table:
            parts = list(reader.base_tables(f, whole=True))
            return pa.concat_tables(parts) if parts else reader.output.empty_table()

        return read

    def stored_batches_reader(self, query: Schema, *, meta: bool = False,
                              snapshot: Snapshot | None = None
                              ) -> Callable[[DataFile], Iterator[pa.Table]]:
        """As :meth:`stored_rows_reader`, a table at a time (about a row group each) in the
        file's row order: what the driver's copy-on-write rewrites stream into their writer
        (:mod:`evonb.spark.cow_driver`)."""
        from evonb.arrow.reader import ArrowRead  # pyarrow

        reader = ArrowRead(self, schema=query, meta_columns=meta, snapshot=snapshot)

        def read(f: DataFile) -> Iterator[pa.Table]:
            return reader.base_tables(f)

        return read

    def group_rows_reader(self, query: Schema, *, snapshot: Snapshot | None = None
                          ) -> Callable[[DataFile, Sequence[DataFile]], pa.Table]:
        """A reader of the live rows of one file group (a base file merged with its log
        blocks, oldest first) in ``query``'s columns, by the JVM-free reader
        (:meth:`evonb.arrow.reader.ArrowRead.group_tables`): where an upsert of a key found
        in several file groups looks for the group that holds it live
        (:func:`evonb.spark.mor.stale_matches`), without a Spark job per group."""
        import pyarrow as pa

        from evonb.arrow.reader import ArrowRead  # pyarrow

        reader = ArrowRead(self, schema=query, snapshot=snapshot)

        def read(f: DataFile, logs: Sequence[DataFile]) -> pa.Table:
            parts = list(reader.group_tables(f, logs, whole=True))
            return pa.concat_tables(parts) if parts else reader.output.empty_table()

        return read

    def to_arrow(self, as_of: CommitRef | None = None, *,
                 schema: Schema | str | CommitRef | None = None,
                 columns: Sequence[str] | None = None, filter: Any = None,
                 limit: int | None = None, meta_columns: bool = False) -> pa.Table:
        """The table as a pyarrow Table, read without Spark (no JVM): the same rows, columns
        and types as :meth:`read` (``as_of``, ``schema``, ``meta_columns`` alike).
        ``columns`` selects columns, struct members by dotted path (``'info.city'``
        gives a column ``city``, as :meth:`read` does); ``filter`` is a ``pyarrow.compute``
        expression over the query's column names; ``limit`` caps the rows."""
        from evonb.arrow.reader import ArrowRead  # pyarrow: loaded on the first Arrow read

        return ArrowRead(self, as_of, schema=schema, columns=columns, filter=filter,
                         limit=limit, meta_columns=meta_columns).to_table()

    def to_batches(self, as_of: CommitRef | None = None, *,
                   schema: Schema | str | CommitRef | None = None,
                   columns: Sequence[str] | None = None, filter: Any = None,
                   limit: int | None = None, meta_columns: bool = False
                   ) -> Iterator[pa.RecordBatch]:
        """:meth:`to_arrow` streamed as record batches, file by file (row group by row group
        where no log block is merged); reading stops once ``limit`` rows were given."""
        from evonb.arrow.reader import ArrowRead  # pyarrow: loaded on the first Arrow read

        return ArrowRead(self, as_of, schema=schema, columns=columns, filter=filter,
                         limit=limit, meta_columns=meta_columns).batches()

    def to_pandas(self, as_of: CommitRef | None = None, *,
                  schema: Schema | str | CommitRef | None = None,
                  columns: Sequence[str] | None = None, filter: Any = None,
                  limit: int | None = None, meta_columns: bool = False) -> pd.DataFrame:
        """:meth:`to_arrow` as a pandas DataFrame (no Spark)."""
        return self.to_arrow(as_of, schema=schema, columns=columns, filter=filter,
                             limit=limit, meta_columns=meta_columns).to_pandas()

    def diff_data(self, a: CommitRef, b: CommitRef, *,
                  schema: Schema | str | CommitRef = "latest",
                  engine: Literal["arrow", "spark"] = "arrow") -> DataDiff:
        """The rows added, removed and changed between commits ``a`` and ``b``, both read in
        one ``schema`` (``"latest"``, a version id, ``vN`` or a commit's schema): by
        :attr:`primary_key` (every column for keyless tables, compared as multisets of rows).
        ``engine``: ``"arrow"`` reads and compares without Spark, ``"spark"`` with Spark (the
        same result; its :meth:`~evonb.arrow.data_diff.DataDiff.to_spark` is the whole diff
        as a Spark DataFrame). See :mod:`evonb.arrow.data_diff` for the result's layout."""
        from evonb.arrow.data_diff import diff_frames, diff_tables  # pyarrow: on the first diff
        from evonb.arrow.evaluate import arrow_schema

        if engine not in ("arrow", "spark"):
            raise EvoError(f"diff_data's engine must be 'arrow' or 'spark', not {engine!r}",
                           hint="engine='arrow' (no Spark) or engine='spark'")
        first, second = self.commit(a), self.commit(b)
        query = self.resolve_schema(schema)
        name = self.version_name(query.version_id)
        key = tuple(query.path_of(i) for i in self.config.primary_key_ids)
        labels, title = (first.instant, second.instant), f"{self.name} in schema {name}"
        if engine == "spark":
            frames = diff_frames(self.read(first.instant, schema=query),
                                 self.read(second.instant, schema=query), key)
            return frames.collect(arrow_schema(list(query.fields)), labels=labels, title=title)
        before = self.to_arrow(first.instant, schema=query)
        after = self.to_arrow(second.instant, schema=query)
        return diff_tables(before, after, key, labels=labels, title=title)

    # -------------------------------------------------------------- services
    def compact(self, *, upgrade_schema: bool = True,
                progress: ProgressCallback | None = None) -> Commit | None:
        """Merge log blocks into new base files (merge-on-read) and, with ``upgrade_schema``,
        rewrite files of older schema versions in the latest one. None if nothing to do."""
        return compact_table(self, upgrade_schema=upgrade_schema, progress=progress)

    def cluster(self, *, by: str | Sequence[str] | None = None,
                order: ClusterOrder | None = None, target_file_bytes: int | None = None,
                where: str | None = None,
                progress: ProgressCallback | None = None) -> Commit | None:
        """Rewrite small files (and, merge-on-read, base files with their log blocks) into
        files of about ``target_file_bytes``, sorted by ``by`` (default: the table's stored
        sort order, which ``by`` replaces); ``order="zorder"`` interleaves two or more
        columns (z-order) instead of sorting linearly; ``where`` limits it to the partitions
        matching a predicate over the partition columns. One ``replacecommit``; None if
        nothing to do. See :mod:`evonb.services.clustering`."""
        return cluster_table(self, by=by, order=order, target_file_bytes=target_file_bytes,
                             where=where, progress=progress)

    def rewrite(self, ddl: str | None = None, *, on_cast_error: Literal["fail", "null"] = "fail",
                purge_dropped: bool = False, progress: ProgressCallback | None = None) -> Commit:
        """Apply ``ddl`` that metadata cannot (e.g. ``ALTER COLUMN price TYPE int`` on a double)
        by rewriting every file, or (``purge_dropped``) rewrite every file in the latest schema."""
        return rewrite_table(self, ddl, on_cast_error=on_cast_error, purge_dropped=purge_dropped,
                       progress=progress)

    def clean(self, *, retain_commits: int | None = None, retain_hours: float | None = None,
              keep_schema_versions: int | None = None) -> Commit | None:
        """Remove files no commit in the retention window needs, and prune schema history."""
        return clean_table(self, retain_commits=retain_commits, retain_hours=retain_hours,
                     keep_schema_versions=keep_schema_versions)

    def rollback(self, instant: CommitRef | None = None, *, cascade: bool = False) -> Commit:
        """Undo the commit that completed last, or ``instant`` (and, with ``cascade``, the
        commits that completed after it)."""
        return rollback_table(self, instant, cascade=cascade)

    def iceberg_status(self) -> IcebergStatus:
        """How far the published Iceberg view is from this table: ``current``, ``behind``,
        ``blocked`` (with the column and the way out), ``uncompacted``, ``unpublished`` or
        ``off``. Reads only."""
        return iceberg_status(self)


def _maker(spark: SparkSession | None) -> Callable[[Path, TableConfig], Table]:
    """What the format layer calls to make the object it creates or opens: a :class:`Table`
    with ``spark``."""
    return lambda root, config: Table(root, config, spark=spark)


def create_table(
    path: str | Path,
    schema: str | Schema | SparkStructType,
    *,
    primary_key: str | Sequence[str] | None = None,
    precombine: str | None = None,
    partition_by: str | Sequence[str] | None = (),
    table_type: str = "cow",
    properties: dict[str, Any] | None = None,
    name: str | None = None,
    spark: SparkSession | None = None,
    exist_ok: bool = False,
) -> Table:
    """Create an evonb table at ``path`` and return it.

    ``schema`` is column DDL text (``"id bigint not null, name string"``), a Spark ``StructType``
    or an evonb :class:`Schema`. ``primary_key`` and ``precombine`` enable upserts and deletes
    (the row with the larger precombine value wins). ``table_type`` is ``"cow"``
    (copy-on-write) or ``"mor"`` (merge-on-read). ``spark`` is the session the table reads and
    writes with (default: :func:`evonb.session`).
    """
    if not isinstance(schema, str | Schema) and type(schema).__module__.startswith("pyspark"):
        schema = spark_schema(schema)
    made = _table.create_table(path, schema, primary_key=primary_key, precombine=precombine,
                               partition_by=partition_by, table_type=table_type,
                               properties=properties, name=name, exist_ok=exist_ok,
                               make=_maker(spark))
    return cast(Table, made)


def open_table(path: str | Path, *, spark: SparkSession | None = None) -> Table:
    """Open the evonb table at ``path`` (``spark``: the session to read and write with)."""
    return cast(Table, _table.open_table(path, make=_maker(spark)))


def convert(
    path: str | Path,
    *,
    name: str | None = None,
    primary_key: str | Sequence[str] | None = None,
    precombine: str | None = None,
    spark: SparkSession | None = None,
    keep_meta_columns: bool = False,
    properties: Mapping[str, Any] | None = None,
) -> Table:
    """Make the data at ``path`` an evonb table in place and return it; no data file is rewritten.

    ``path`` holds Parquet files (Hive-style ``k=v/`` folders allowed when the files keep the
    column) or a Hudi copy-on-write table (a ``.hoodie/`` folder). ``primary_key`` and
    ``precombine`` enable upserts; for Hudi they default to the table's record key and precombine
    field. ``keep_meta_columns`` keeps Hudi's ``_hoodie_*`` columns as ordinary columns.
    Raises :class:`TableExistsError` on an evonb table and :class:`UnsupportedTableError` (or
    :class:`TableNotFoundError`) on data that cannot be adopted; then nothing on disk changes.
    """
    root = table_path(path)
    properties = check_mapping(properties, "properties",
                               "properties={'evonb.write.target.file.bytes': '67108864'}")
    check_target(root)
    keys = key_tuple(primary_key)
    if file_io().is_folder(root / ".hoodie"):  # local disk or object storage
        plan = plan_hudi(root, name=name, primary_key=keys, precombine=precombine,
                         keep_meta_columns=keep_meta_columns)
    else:
        plan = plan_parquet(root, name=name, primary_key=keys or (), precombine=precombine)
    if properties:
        plan = with_properties(plan, properties)
    return cast(Table, install(root, plan, make=_maker(spark)))


__all__ = ["Table", "convert", "create_table", "open_table"]
