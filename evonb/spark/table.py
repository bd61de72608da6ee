"""``SparkTable``: an evonb table with its Spark engine: reads (snapshot, time travel,
read-optimized, incremental) and writes that evolve the schema. It adds to
:class:`~evonb.table.table.BaseTable` only what needs a SparkSession."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from evonb.arguments import check_dataframe
from evonb.errors import EvoError, WriteSchemaError
from evonb.schema.render import quote_identifier
from evonb.schema.schema import INITIAL_VERSION, Schema
from evonb.schema.types import ArrayType, MapType
from evonb.spark.mor import read_snapshot, since
from evonb.spark.session import session
from evonb.spark.writes import WriteJob, strip_metadata
from evonb.table.config import TableConfig
from evonb.table.fileio import is_object_path
from evonb.table.fsutil import location_uri
from evonb.table.history import Commit
from evonb.table.layout import META_COMMIT_TIME
from evonb.table.properties import check_plugins
from evonb.table.read_plan import selected_columns
from evonb.table.retention import check_readable
from evonb.table.snapshot import DataFile, Snapshot
from evonb.table.table import (
    WRITE_MODES,
    BaseTable,
    CommitRef,
    WriteMode,
    check_reserved,
)

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType as SparkStructType


class SparkTable(BaseTable):
    """An evonb table read and written through Spark (``spark``: its session; by default the
    managed one, :func:`evonb.session`)."""

    def __init__(self, root: Path, config: TableConfig, *,
                 spark: SparkSession | None = None) -> None:
        super().__init__(root, config)
        self._spark = spark

    @property
    def spark(self) -> SparkSession:
        """The SparkSession this table's Spark work runs on, on local disk. A table in object
        storage refuses it: Spark reaches its files only through evonb's Python workers
        (:meth:`read`, :meth:`read_incremental`, :meth:`write`, SQL statements, compaction,
        clustering and rewrites all do), on :meth:`spark_session`."""
        if is_object_path(self.root):
            raise EvoError(
                f"Spark cannot run this on the table in object storage at "
                f"{location_uri(self.root)} yet",
                hint="read it with read(), read_incremental() or to_arrow(), write it with "
                     "write(df) or SQL statements (%evo sql), compact, cluster or rewrite "
                     "it, change it with its metadata operations (alter, properties, check) "
                     "and evonb.convert; see docs/cluster.md")
        return self.spark_session()

    def spark_session(self) -> SparkSession:
        """The session given to this table, else the managed one (:func:`evonb.session`),
        wherever the table lives; :attr:`spark` is this session for the work Spark can do
        on the table."""
        return session() if self._spark is None else self._spark

    def count_nulls(self, schema: Schema, field_ids: Sequence[int]) -> list[int]:
        """For each field ID, the rows of the latest snapshot holding a null there (a null
        parent struct, array or map is no null of the child)."""
        from pyspark.sql import functions as F

        checks = [F.sum(F.when(_null_at(schema, fid), 1).otherwise(0)).alias(str(i))
                  for i, fid in enumerate(field_ids)]
        row = self.read().agg(*checks).collect()[0]
        return [int(row[str(i)] or 0) for i in range(len(field_ids))]

    # ----------------------------------------------------------------- reads
    def read(
        self,
        as_of: CommitRef | None = None,
        *,
        schema: Schema | str | CommitRef | None = None,
        columns: Sequence[str] | None = None,
        meta_columns: bool = False,
        query: Literal["snapshot", "read_optimized"] = "snapshot",
    ) -> DataFrame:
        """The table as a Spark DataFrame.

        ``as_of`` reads the data as of that commit, in the schema in force then; ``schema``
        (``"latest"``, a version id or a commit) projects it onto another schema version.
        ``columns`` selects columns (struct members by dotted path); ``meta_columns`` adds
        ``_evo_commit_time``, the instant that wrote each row, last (with ``columns`` too).
        ``query="read_optimized"`` reads the base files only (merge-on-read tables: without
        the log blocks not compacted yet).
        """
        if query not in ("snapshot", "read_optimized"):
            raise EvoError(f"Unknown query type {query!r}",
                           hint="use 'snapshot' or 'read_optimized'")
        if is_object_path(self.root):
            return self._read_object_store(as_of, schema, columns, meta_columns, query)
        snap = self.snapshot(as_of)
        if as_of is not None:
            check_readable(self, snap.instant)
        query_schema = (self.schema_store.load(snap.schema_version) if schema is None
                        else self.resolve_schema(schema))
        selected = None if columns is None else selected_columns(query_schema, columns)
        df = read_snapshot(self, snap, query_schema, meta=meta_columns,
                           read_optimized=query == "read_optimized")
        if selected is not None:
            picked = [".".join(map(quote_identifier, path)) for _, path in selected]
            df = df.select(*picked, *([META_COMMIT_TIME] if meta_columns else []))
        return df

    def _read_object_store(self, as_of: CommitRef | None,
                           schema: Schema | str | CommitRef | None,
                           columns: Sequence[str] | None, meta_columns: bool,
                           query: str) -> DataFrame:
        """:meth:`read` of a table in object storage: by the layer above, which has the
        JVM-free reader (:meth:`evonb.api.Table._read_object_store`); refused here."""
        raise EvoError(f"Spark cannot read the table in object storage at "
                       f"{location_uri(self.root)} through this object",
                       hint="open it with evonb.open_table(...)")

    def read_object_files(self, files: Sequence[DataFile], query: Schema, *,
                          meta: bool = False, with_file: bool = False,
                          with_position: bool = False,
                          logs: Sequence[DataFile] | None = None,
                          snapshot: Snapshot | None = None) -> DataFrame:
        """What :func:`~evonb.spark.reader.read_files` reads on local disk, for a table in
        object storage (the base files an upsert or delete rewrites or adds log blocks to;
        with ``logs``, the file groups merged, as compaction and clustering read them):
        by the layer above, which has the JVM-free reader
        (:meth:`evonb.api.Table.read_object_files`); refused here."""
        raise EvoError(f"Spark cannot read the files of the table in object storage at "
                       f"{location_uri(self.root)} through this object",
                       hint="open it with evonb.open_table(...)")

    reads_in_driver = False
    """Whether :meth:`stored_rows_reader` gives a reader (the layer above has one)."""

    def stored_rows_reader(self, query: Schema, *, meta: bool = False,
                           snapshot: Snapshot | None = None
                           ) -> Callable[[DataFile], pa.Table] | None:
        """A reader, in this process, of the rows stored in one data file (never merged with
        log blocks) in ``query``'s columns (projected by field ID; ``meta``: and the
        commit-time column), in the file's row order: the JVM-free reader of the layer above
        (:meth:`evonb.api.Table.stored_rows_reader`), with which small merge-on-read deltas
        are looked up (:mod:`evonb.spark.mor_driver`) and small copy-on-write upserts
        rewritten (:mod:`evonb.spark.cow_driver`) by the driver. ``snapshot``: the one the
        files are of (else the latest is listed; a write passes its own, so the reader lists
        nothing more). None here: Spark does that work."""
        return None

    def stored_batches_reader(self, query: Schema, *, meta: bool = False,
                              snapshot: Snapshot | None = None
                              ) -> Callable[[DataFile], Iterator[pa.Table]] | None:
        """As :meth:`stored_rows_reader`, a table at a time in the file's row order (the
        layer above's :meth:`evonb.api.Table.stored_batches_reader`). None here."""
        return None

    def group_rows_reader(self, query: Schema, *, snapshot: Snapshot | None = None
                          ) -> Callable[[DataFile, Sequence[DataFile]], pa.Table] | None:
        """A reader, in this process, of the live rows of one file group (a base file and
        its log blocks, oldest first, merged) in ``query``'s columns: the JVM-free reader of
        the layer above (:meth:`evonb.api.Table.group_rows_reader`), with which an upsert
        finds where a key found in several file groups is live
        (:func:`evonb.spark.mor.stale_matches`). None here: Spark does that work."""
        return None

    def read_incremental(
        self,
        start: CommitRef,
        end: CommitRef | None = None,
        *,
        schema: Schema | str | CommitRef | None = None,
        meta_columns: bool = False,
    ) -> DataFrame:
        """Rows written by the commits that completed after ``start`` up to ``end`` (default:
        the latest), in completion order, as they are at ``end``, in ``end``'s schema unless
        ``schema`` says otherwise. ``start`` is a commit (exclusive), a date-time (the commits
        completed after the last one completed at or before it) or ``"00000000000000000"``
        (from the beginning). Rows are those whose ``_evo_commit_time`` is the instant of one
        of those commits."""
        from pyspark.sql import functions as F

        snap = self.snapshot(end)
        if end is not None:
            check_readable(self, snap.instant)
        records = self.incremental_commits(start, end)
        instants = sorted(c.instant for c in records)
        query = (self.schema_store.load(snap.schema_version) if schema is None
                 else self.resolve_schema(schema))
        df = read_snapshot(self, since(snap, instants), query, meta=True)
        df = df.filter(F.col(META_COMMIT_TIME).isin(instants) if instants else F.lit(False))
        return df if meta_columns else df.drop(META_COMMIT_TIME)

    # ---------------------------------------------------------------- writes
    def write(self, df: DataFrame, mode: WriteMode = "insert") -> Commit:
        """Write a DataFrame: ``insert``, ``upsert``, ``delete`` (by record key) or
        ``overwrite``. Columns match by name; the schema evolves as the data needs."""
        check_dataframe(df)
        if mode not in WRITE_MODES:
            raise EvoError(f"Unknown write mode {mode!r}", hint=f"use one of {WRITE_MODES}")
        with self.config_held(), self.timeline.listing_held():  # as when the write starts
            if mode in ("upsert", "delete") and not self._config.primary_key_ids:
                raise WriteSchemaError(
                    f"{mode} needs a record key, and table {self.name!r} has none",
                    hint="create the table with primary_key=... (and precombine=...)",
                )
            check_plugins(self._config.properties, root=self.root)  # before any data
            check_reserved(df.columns, writing=True)
            record = WriteJob(self, df, mode).run()
        self.invalidate()
        return Commit.from_record(record)


def spark_schema(struct: SparkStructType) -> Schema:
    """An evonb schema (new IDs) of a Spark schema, its field metadata ignored."""
    return Schema.from_spark(strip_metadata(struct), version_id=INITIAL_VERSION)


def _null_at(schema: Schema, field_id: int) -> Column:
    """A Spark condition: the row holds a null at ``field_id`` (a struct member, array element
    or map value at any depth; a null parent is no violation of the child's NOT NULL)."""
    from pyspark.sql import functions as F

    chain = [field_id]
    while (parent := schema.parent_of(chain[-1])) != -1:
        chain.append(parent)
    chain.reverse()

    def test(level: int, value: Any) -> Any:
        if level == len(chain) - 1:
            return value.isNull()
        holder = schema.field_by_id(chain[level]).type
        child = chain[level + 1]
        if isinstance(holder, ArrayType):
            inner = F.exists(value, lambda e: test(level + 1, e))
        elif isinstance(holder, MapType):
            if holder.key.id == child:
                return F.lit(False)  # map keys are never null
            inner = F.exists(F.map_values(value), lambda e: test(level + 1, e))
        else:
            inner = test(level + 1, value.getField(schema.field_by_id(child).name))
        return value.isNotNull() & F.coalesce(inner, F.lit(False))

    return test(0, F.col("`" + schema.field_by_id(chain[0]).name.replace("`", "``") + "`"))


__all__ = ["SparkTable", "spark_schema"]
