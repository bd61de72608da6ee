"""One write: reconcile the schema, shape the rows, write files, commit under the lock.

Copy-on-write upserts and deletes rewrite only the files that hold the keys they touch; the
precombine column decides between rows with the same key (the larger wins; on a tie the
incoming row wins: the rule of :mod:`evonb.table.precombine`, compiled by
:mod:`evonb.spark.precombine`). A write that fails at any point leaves no visible file behind.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from evonb.errors import DataValidationError, WriteSchemaError
from evonb.schema.defaults import sql_literal
from evonb.schema.diffing import diff
from evonb.schema.render import backquote
from evonb.schema.schema import Schema, walk
from evonb.schema.types import (
    DATE,
    TIMESTAMP,
    TIMESTAMP_NTZ,
    NestedField,
    StructType,
    Type,
)
from evonb.spark.arrow_collect import relaxed_columns, to_arrow
from evonb.spark.columns import to_sql
from evonb.spark.cow_driver import Rewrite, rewrite_here, rewrite_limits, takes_rewrite_path
from evonb.spark.mor import write_delta
from evonb.spark.mor_driver import DRIVER_COLLECT_BYTES, driver_lookup_limits, key_query
from evonb.spark.object_writer import write_table_files
from evonb.spark.precombine import first_per_key
from evonb.spark.reader import read_files
from evonb.spark.writer import (
    DEFAULT_TARGET_FILE_BYTES,
    TARGET_FILE_PROPERTY,
    estimated_bytes,
)
from evonb.table.commit import CommitMetadata
from evonb.table.conflicts import WRITE_ACTIONS, check_write
from evonb.table.fileio import is_object_path
from evonb.table.fsutil import remove_data_files
from evonb.table.key_stats import KeyRange, key_columns, prunable, prune
from evonb.table.layout import META_COMMIT_TIME, Layout, derive_layout
from evonb.table.partition_folders import PartitionFolderError
from evonb.table.precombine import ordering
from evonb.table.properties import check_parquet_option, setting
from evonb.table.read_plan import Via, physical_struct, plan_group, type_paths
from evonb.table.snapshot import DataFile, Snapshot
from evonb.table.table import with_write_defaults
from evonb.table.timeline import CommitRecord
from evonb.table.transaction import Transaction
from evonb.table.write_schema import check_upsert_brings_precombine, match_ids

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, Observation
    from pyspark.sql.types import StructType as SparkStructType

    from evonb.spark.handles import SparkTableHandle

DUPLICATES_PROPERTY = "evonb.write.insert_duplicates"
"""Table property: what an insert into a keyed table does with incoming rows that share a record
key: ``error`` (the default: two rows of one key would both be live, and every later upsert and
read would have to pick one), ``combine`` (one row per key, by the precombine column, as Hudi's
``hoodie.combine.before.insert``) or ``allow`` (every row is written, as Hudi's insert does)."""
DEFAULT_DUPLICATES = "error"
DIRECT_MERGE_PROPERTY = "evonb.write.direct_merge.bytes"
DEFAULT_DIRECT_MERGE_BYTES = 16 * 1024 * 1024
SPLIT_MERGE_PROPERTY = "evonb.write.split_merge.bytes"
"""Table property: a copy-on-write upsert whose files to rewrite come to more than this many
bytes splits their rows by the incoming keys, so only the stored rows of incoming keys go
through the merge's shuffle (see :meth:`WriteJob._merge`); smaller rewrites shuffle every row
into one merge, which writes fewer files."""
DEFAULT_SPLIT_MERGE_BYTES = 128 * 1024 * 1024
PRIORITY = "__evo_priority"
SEQ = "__evo_seq"


def parquet_options(config: Any) -> dict[str, str]:
    """Parquet writer options from table properties ``evonb.write.parquet.<option>``
    (e.g. ``evonb.write.parquet.block.size`` sets the row-group size in bytes)."""
    prefix = "evonb.write."
    options = {k: v for k, v in config.properties.items() if k.startswith(prefix + "parquet.")}
    for name, value in options.items():  # a table made before the values were checked
        check_parquet_option(name, value)
    return {k[len(prefix):]: v for k, v in options.items()}


def _refuse_nulls(name: str, nulls: int) -> None:
    """The error of ``nulls`` incoming nulls in the NOT NULL or key column ``name`` (none:
    nothing)."""
    if nulls:
        raise DataValidationError(
            f"Column {name!r} is NOT NULL or a record key, but {nulls} incoming rows hold null",
            count=nulls,
            hint="fill or filter the nulls before writing",
        )


_PYTHON_RANGE = {DATE: ("DATE '0001-01-01'", "DATE '9999-12-31'"),
                 TIMESTAMP_NTZ: ("TIMESTAMP_NTZ '0001-01-01 00:00:00'",
                                 "TIMESTAMP_NTZ '9999-12-31 23:59:59.999999'")}
"""The dates and date-times Python holds (a Spark date or timestamp_ntz reaches further)."""


def _python_bound(t: Any, bound: Column) -> Column:
    """A key column's ``bound`` (its min or max), or null where Python's dates cannot hold it
    (the range is then left out: no file is pruned by it)."""
    from pyspark.sql import functions as F

    if t not in _PYTHON_RANGE:
        return bound
    first, last = _PYTHON_RANGE[t]
    return F.when(bound.between(F.expr(first), F.expr(last)), bound)


class WriteJob:
    """A single write of ``df`` into ``table`` with ``mode``."""

    def __init__(self, table: SparkTableHandle, df: DataFrame, mode: str) -> None:
        self.table = table
        self.df = df
        self.mode = mode
        # A table in object storage: evonb's Python workers read and write its files
        # (``table.spark`` refuses the Spark work they cannot do there).
        self.spark = table.spark_session() if is_object_path(table.root) else table.spark
        self.config = table.raw_config
        # Upserts and deletes: the incoming keys' range per key column (None: unknown) and
        # whether any row came in, from the job that checks the incoming rows.
        self.key_ranges: list[KeyRange] | None = None
        self.incoming_empty = False
        self.incoming_rows: int | None = None  # counted by that job, when it counts
        # Small merge-on-read deltas: the shaped incoming rows, collected instead of checked
        # by a Spark job (see _collect_checked)
        self.collected: pa.Table | None = None
        self.seen: frozenset[str] = frozenset()  # the base files its snapshot had
        self.key_lookup: dict[str, int] | None = None
        # Inserts and overwrites: the null counts of NOT NULL and key columns, observed by
        # the job that writes the rows (see _observe_nulls), with the columns' names
        self.observed_nulls: tuple[Observation, list[str]] | None = None
        # Upserts and deletes: the incoming rows, computed once (see _computed_once)
        self.kept: list[DataFrame] = []
        self.collected_frame: DataFrame | None = None  # see rows_frame

    # ------------------------------------------------------------- schemas
    def _incoming(self) -> Schema:
        return Schema.from_spark(strip_metadata(self.df.schema))

    def run(self) -> CommitRecord:
        try:
            return self._run()
        except PartitionFolderError as exc:  # named by physical names: give the current ones
            schema = self.table.schema
            _, layout = self.table.version(schema.version_id)
            raise exc.named({layout.name(i): schema.field_by_id(i).name
                             for i in self.config.partition_ids}) from None
        finally:
            self.release()

    def _run(self) -> CommitRecord:
        table = self.table
        mor = self.mode in ("upsert", "delete") and table.table_type == "mor"
        txn = Transaction(table, "deltacommit" if mor else WRITE_ACTIONS[self.mode],
                          plan={"operation": self.mode})  # failed attempts rolled back first
        base_commit = txn.base
        base_schema = table.schema
        _, base_layout = table.version(base_schema.version_id)
        incoming = self._incoming()
        if self.mode == "delete":
            update = None
            incoming = self._key_only(incoming, base_schema)
        else:
            update = table.reconcile_write(base_schema, incoming)
        if self.mode == "upsert":
            check_upsert_brings_precombine(base_schema, incoming, self.config.precombine_id)
        duplicates = (setting(self.config, DUPLICATES_PROPERTY, DEFAULT_DUPLICATES)
                      if self.mode == "insert" and self.config.primary_key_ids else "allow")
        with txn:
            instant = txn.instant
            txn.tasks_place_files()
            if update:
                target = update.apply(version_id=instant)
                layout = derive_layout(target, (base_schema, base_layout))
            else:
                target, layout = base_schema, base_layout
            matched = _match(incoming, target)
            # May hold commits that completed after the base (the conflict check sees them
            # too); replayed in completion order, a file this write replaces stays replaced.
            # Listed after the instant is reserved (the write's listing held so far is from
            # before it), so a commit that completed meanwhile is planned on, not conflicted.
            table.timeline.forget_listing()
            snapshot = table.snapshot()
            self.seen = frozenset(f.path for f in snapshot.files)
            merges = self.mode in ("upsert", "delete") and bool(snapshot.files)
            physical = self._physical(matched, target, layout, instant, ranges=merges,
                                      collect=self._collect_rows() if merges else 0)
            removed: list[DataFile] = []
            touched: list[DataFile] = []  # MOR: base files that get log blocks
            rewritten = None  # COW: the files the driver rewrote, and those they replace
            if not mor and merges:
                rewritten = self._rewrite_in_driver(physical, snapshot, target, layout,
                                                    instant)
            if rewritten is not None:
                added, removed = rewritten.added, rewritten.removed
                txn.wrote(added)
            elif mor:
                added, touched = write_delta(
                    self, physical, snapshot, target, layout, instant,
                    write_options={"options": parquet_options(self.config),
                                   "target_file_bytes": self.target_file_bytes()})
                txn.wrote(added)
            elif self.mode in ("upsert", "delete"):
                out, removed = self._merge(self.rows_frame(physical), snapshot.files, target,
                                           layout)
            elif self.mode == "overwrite":
                out, removed = physical, list(snapshot.files)
            else:
                out = physical if duplicates != "combine" else self._combined(physical, layout)
            partition_cols = tuple(layout.name(i) for i in self.config.partition_ids)
            max_files = None
            if self.mode in ("upsert", "delete"):
                cores = self.spark.sparkContext.defaultParallelism
                max_files = max(1, min(len(removed) + 1, cores))
            if not mor and rewritten is None:
                added = self.write_data(out, instant=instant, version=target.version_id,
                                        partition_columns=partition_cols,
                                        max_files=max_files,
                                        options=parquet_options(self.config),
                                        key_columns=self.key_columns(target, layout),
                                        target_file_bytes=self.target_file_bytes())
                txn.wrote(added)
                # Spark writes an empty file for an empty result (e.g. a delete of every row
                # of the files it rewrites): it holds nothing, and would be scanned for keys
                # by every later upsert (it has no key statistics).
                remove_data_files(table.root, [f for f in added if f.rows == 0])
                added = [f for f in added if f.rows > 0]
                self.refuse_observed_nulls()
                if duplicates == "error":
                    self._check_unique_keys(added, base_schema)
            txn.stage(added, [f.path for f in removed])
            with txn.locked():
                latest = self._check_conflicts(
                    base_commit, removed + touched, evolved=bool(update), instant=instant,
                    schema_change=("add_columns" if update and update.only_adds_columns
                                   else "evolve" if update else None))
                details: dict[str, Any] = {}
                if self.key_lookup is not None:
                    details["key_lookup"] = self.key_lookup
                if update:
                    details["schema_change"] = ("add_columns" if update.only_adds_columns
                                                else "evolve")
                    details["changes"] = [c.to_dict() for c in diff(base_schema, target)]
                    txn.save_version(target, layout)
                record = txn.complete(CommitMetadata.of(
                    self.mode, target.version_id if update else latest,
                    added=added, removed=[f.path for f in removed],
                    base_instant=base_commit.instant if base_commit else None,
                    base_completion=base_commit.completion if base_commit else None,
                    rows_written=sum(f.rows for f in added), **details))
        return record

    def _key_only(self, incoming: Schema, table_schema: Schema) -> Schema:
        names = {f.name.lower(): f for f in incoming.fields}
        keys = []
        for fid in self.config.primary_key_ids:
            key = table_schema.field_by_id(fid)
            found = names.get(key.name.lower())
            if found is None:
                raise WriteSchemaError(
                    f"Deletes need the record key column {key.name!r} in the data",
                    path=key.name,
                )
            keys.append(found)
        return Schema(fields=tuple(keys))

    # ---------------------------------------------------------------- rows
    def target_file_bytes(self) -> int:
        """Table property ``evonb.write.target.file.bytes`` (default 128 MiB of Spark's size
        estimate; 0 turns coalescing off): writes estimated smaller make fewer files."""
        return self.config.int_property(TARGET_FILE_PROPERTY, DEFAULT_TARGET_FILE_BYTES)

    def key_columns(self, target: Schema, layout: Layout) -> dict[int, tuple[str, Any]]:
        """The key columns new files of ``target`` record statistics for."""
        return key_columns(self.config.primary_key_ids, target, layout)

    def _collect_rows(self) -> int:
        """How many incoming rows an upsert or delete collects into the driver, at most, for
        its driver path: a merge-on-read delta's key lookup (:mod:`evonb.spark.mor_driver`),
        a copy-on-write rewrite (:mod:`evonb.spark.cow_driver`); 0 (none) for a table object
        without the JVM-free reader or with the path turned off."""
        if not self.table.reads_in_driver:
            return 0
        if self.table.table_type == "mor":
            limits = driver_lookup_limits(self.config)
            return limits.incoming_rows if limits.stored_rows > 0 else 0
        rewrite = rewrite_limits(self.config)
        return rewrite.incoming_rows if rewrite.stored_bytes > 0 else 0

    def _physical(self, incoming: Schema, target: Schema, layout: Layout,
                  instant: str, *, ranges: bool = False, collect: int = 0) -> DataFrame:
        """The incoming rows as physical columns of ``target`` (defaults for missing ones).

        With ``ranges``, the job that checks the incoming rows also takes the min and max of
        each key column, as written (``self.key_ranges``). With ``collect`` (a number of
        rows), at most that many incoming rows are collected and checked in Arrow instead
        (:meth:`_collect_checked`)."""
        query_struct = with_write_defaults(physical_struct(target, layout))
        assert isinstance(query_struct, StructType)
        query = Schema(fields=query_struct.fields, version_id=target.version_id,
                       max_column_id=target.max_column_id)
        if self.mode == "delete":
            keep = set(self.config.primary_key_ids)
            query = Schema(fields=tuple(f for f in query.fields if f.id in keep))
        incoming_layout = Layout(physical={
            f.id: f.name for f in _named(incoming)
        })
        group = plan_group(query, incoming, incoming_layout, ())
        keys: dict[int, Type] = {}
        if ranges:
            key_ids = set(self.config.primary_key_ids)
            keys = {f.id: f.type for f in query.fields if f.id in key_ids and prunable(f.type)}
        # one selectExpr: a Column built per column costs a JVM round trip or more each
        cols = [f"{to_sql(e)} AS {backquote(name)}" for name, e in group.columns]
        cols.append(f"'{instant}' AS {META_COMMIT_TIME}")
        shaped = self.df.selectExpr(*cols)
        names = {f.id: name for (name, _), f in zip(group.columns, query.fields, strict=True)}
        if self.mode in ("insert", "overwrite"):  # the rows are computed once: by the write
            return self._observe_nulls(shaped, incoming, target, names)
        if collect and self._collect_checked(shaped, incoming, target, names, keys,
                                             max_rows=collect):
            return shaped  # computed once, into collected: later jobs read it (rows_frame)
        shaped = self._computed_once(shaped)
        self._check_incoming(shaped, incoming, target, names, keys, count=ranges)
        return shaped

    def _computed_once(self, shaped: DataFrame) -> DataFrame:
        """Upserts and deletes: ``shaped`` kept in Spark's block store (a local checkpoint)
        until the write ends (:meth:`release`): the first job that reads it (the check)
        computes each row once and keeps it, and later jobs read the kept rows. Their
        checks, key lookup and merge each read the incoming rows, and a source that gives
        other rows on each computation (a JDBC query of a changing table, a function of the
        time or of outside state) must not be checked on some rows and written with others:
        a check that saw new keys while the merge wrote stored ones committed a key twice.
        Once the first job ends, a block lost from the store fails the write rather than
        computing its rows again. (A small delta the driver collected is kept as Arrow
        instead, without a checkpoint's planning: :meth:`rows_frame`.)"""
        kept = shaped.localCheckpoint(eager=False)
        self.kept.append(kept)
        return kept

    def rows_frame(self, shaped: DataFrame) -> DataFrame:
        """The incoming rows for a Spark job of an upsert or delete (:meth:`_physical`'s
        ``shaped``). A write whose small delta the driver collected (:attr:`collected`, in
        the one job that computed the rows) and that then takes Spark's path reads the
        collected rows, as a DataFrame made once: computing ``shaped`` again could give rows
        other than those checked. Otherwise ``shaped`` itself, kept by :meth:`_computed_once`.
        """
        if self.collected is None:
            return shaped
        if self.collected_frame is None:
            self.collected_frame = self.spark.createDataFrame(
                self.collected, schema=relaxed_columns(shaped.schema))
        return self.collected_frame

    def release(self) -> None:
        """Free the blocks :meth:`_computed_once` kept (Spark would free them only when its
        cleaner collects the plan)."""
        while self.kept:
            self.kept.pop()._jdf.queryExecution().logical().rdd().unpersist(False)

    def _required(self, incoming: Schema, target: Schema) -> list[tuple[NestedField, str]]:
        """The incoming columns that may hold null but must not (NOT NULL or a record key
        in ``target``), with their names in ``target``."""
        key_ids = set(self.config.primary_key_ids)
        return [(f, t.name) for f in incoming.fields
                if (not (t := target.field_by_id(f.id)).nullable or f.id in key_ids)
                and f.nullable]

    def _observe_nulls(self, shaped: DataFrame, incoming: Schema, target: Schema,
                       physical: dict[int, str]) -> DataFrame:
        """``shaped`` counting, as the write's own job runs, the nulls of the columns that
        must not hold any (:attr:`observed_nulls`; :meth:`refuse_observed_nulls` reads them
        once the files are written, before the commit). No job of its own: the incoming rows,
        which may be costly to compute, are computed once."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        required = self._required(incoming, target)
        if not required:
            return shaped
        found = Observation()
        self.observed_nulls = (found, [name for _, name in required])
        return shaped.observe(found, *[
            F.sum(F.when(F.col(backquote(physical[f.id])).isNull(), 1).otherwise(0)).alias(
                f"c{i}") for i, (f, _) in enumerate(required)])

    def refuse_observed_nulls(self) -> None:
        """After the write's job: refuse nulls it counted (:meth:`_observe_nulls`); the
        transaction then removes the files written."""
        if self.observed_nulls is None:
            return
        found, names = self.observed_nulls
        counts = found.get
        for i, name in enumerate(names):
            _refuse_nulls(name, int(counts.get(f"c{i}") or 0))

    def _collect_checked(self, shaped: DataFrame, incoming: Schema, target: Schema,
                         physical: dict[int, str], keys: dict[int, Type], *,
                         max_rows: int) -> bool:
        """For an upsert or delete that may be small enough for a driver path
        (:meth:`_collect_rows`): collect the shaped rows as Arrow in one job
        (:attr:`collected`) and check them there as :meth:`_check_incoming` does in Spark
        (required and key columns without nulls, the keys' range, the row count). False
        (nothing collected) when Spark's size estimate of the incoming rows is above
        :data:`~evonb.spark.mor_driver.DRIVER_COLLECT_BYTES` or more than ``max_rows``
        rows came: those rows are dropped, and the write computes and keeps the incoming rows
        anew (:meth:`_computed_once`), so up to ``max_rows + 1`` of them are computed
        twice."""
        import pyarrow as pa
        import pyarrow.compute as pc

        # One plan, optimized once, for the estimate and the collect.
        limited = shaped.limit(max_rows + 1)
        size = estimated_bytes(limited, below_limit=True)
        if size is None or size > DRIVER_COLLECT_BYTES:
            return False
        rows = to_arrow(limited)
        if rows.num_rows > max_rows:
            return False
        for f, name in self._required(incoming, target):
            _refuse_nulls(name, rows.column(physical[f.id]).null_count)
        ranges = []
        for fid, t in keys.items():
            column = rows.column(physical[fid])
            if t is TIMESTAMP:  # instants as numbers (microseconds), as the Spark check has them
                column = column.cast(pa.timestamp("us", "UTC")).cast(pa.int64())
            try:
                low, high = (v.as_py() for v in pc.min_max(column).values())
            except (OverflowError, ValueError):
                continue  # a date or time past Python's year 9999: no range, no file pruned
            if low is not None and high is not None:
                ranges.append(KeyRange(fid, t, low, high))
        self.incoming_rows = rows.num_rows
        self.incoming_empty = not rows.num_rows
        self.key_ranges = ranges
        self.collected = rows
        return True

    def _check_incoming(self, shaped: DataFrame, incoming: Schema, target: Schema,
                        physical: dict[int, str], keys: dict[int, Type], *,
                        count: bool) -> None:
        """Required (and key) columns must not receive nulls: one job over ``shaped`` (the
        rows as written, columns named by ``physical``) counts them, and takes the min and
        max of the key columns in ``keys`` (field ID -> type) and (``count``) the number of
        rows. (Partition values too long for a folder name fail the writer that names the
        folder: :func:`~evonb.spark.writer.fitting_folder`,
        :func:`~evonb.spark.object_writer.write_task`.)"""
        from pyspark.sql import functions as F

        checks = [(name, F.sum(F.when(F.col(backquote(physical[f.id])).isNull(), 1)
                               .otherwise(0)))
                  for f, name in self._required(incoming, target)]
        aggs = [c.alias(f"c{i}") for i, (_, c) in enumerate(checks)]
        for fid, t in keys.items():
            col = F.col(backquote(physical[fid]))
            value = F.unix_micros(col) if t is TIMESTAMP else col  # instants as numbers
            aggs += [_python_bound(t, F.min(value)).alias(f"lo{fid}"),
                     _python_bound(t, F.max(value)).alias(f"hi{fid}")]
        if count:
            aggs.append(F.count(F.lit(1)).alias("rows"))
        if not aggs:
            return
        row = shaped.agg(*aggs).collect()[0]
        for i, (name, _) in enumerate(checks):
            _refuse_nulls(name, int(row[f"c{i}"] or 0))
        if count:
            self.incoming_rows = int(row["rows"])
            self.incoming_empty = not self.incoming_rows
            self.key_ranges = [KeyRange(fid, t, row[f"lo{fid}"], row[f"hi{fid}"])
                               for fid, t in keys.items()
                               if row[f"lo{fid}"] is not None and row[f"hi{fid}"] is not None]

    def key_candidates(self, live: Sequence[DataFile]) -> list[DataFile]:
        """The live base files that may hold incoming keys: none when no row came in, else
        those whose key statistics overlap the incoming keys' range (and every file without
        statistics). Records the counts for the commit metadata (``key_lookup``)."""
        if self.incoming_empty:
            found: list[DataFile] = []
        else:
            found = prune(live, self.key_ranges, self.table.version)
        self.key_lookup = {"live": len(live), "scanned": len(found)}
        return found

    def direct_merge_bytes(self) -> int:
        """Table property ``evonb.write.direct_merge.bytes`` (default 16 MiB; 0 turns it off):
        an upsert or delete whose candidate files (after key-range pruning) and incoming rows
        (Spark's estimate) come to at most this many bytes merges the candidates whole, in one
        stage, without the exact key lookup."""
        return self.config.int_property(DIRECT_MERGE_PROPERTY, DEFAULT_DIRECT_MERGE_BYTES)

    def key_filter(self, layout: Layout) -> Column | None:
        """A filter on the physical key columns keeping the incoming keys' range, for the key
        scan: Parquet row-group statistics then skip row groups of files without key
        statistics too. Only for types whose literals are unambiguous (not timestamps)."""
        from pyspark.sql import functions as F


        terms = []
        for r in self.key_ranges or ():
            if r.type in (TIMESTAMP, TIMESTAMP_NTZ):
                continue
            name = "`" + layout.name(r.field_id).replace("`", "``") + "`"
            terms.append(f"{name} BETWEEN {sql_literal(r.low, r.type)} "
                         f"AND {sql_literal(r.high, r.type)}")
        return F.expr(" AND ".join(terms)) if terms else None

    def _rewrite_in_driver(self, incoming: DataFrame, snapshot: Snapshot,
                           target: Schema, layout: Layout, instant: str) -> Rewrite | None:
        """A copy-on-write upsert or delete rewritten by the driver in Arrow
        (:mod:`evonb.spark.cow_driver`), when it is small enough (the incoming rows, shaped,
        collected by the job that checked them or else now); None when it takes the Spark
        path (:meth:`_merge`). Its readers read the files of the write's ``snapshot`` (in
        object storage, a snapshot of their own would list the timeline again)."""
        table, config = self.table, self.config
        count = self.collected.num_rows if self.collected is not None else self.incoming_rows
        if count is None or not table.reads_in_driver:
            return None
        candidates = self.key_candidates(snapshot.files)
        options = parquet_options(config)
        if not takes_rewrite_path(rewrite_limits(config), count, candidates,
                                  [target.field_by_id(i).type for i in config.primary_key_ids],
                                  options):
            return None
        read_keys = table.stored_rows_reader(key_query(config, target, layout),
                                             snapshot=snapshot)
        read = table.stored_batches_reader(table.physical_query(target, layout), meta=True,
                                           snapshot=snapshot)
        if read_keys is None or read is None:
            return None
        rows = self.collected if self.collected is not None else to_arrow(incoming)
        pre_id = config.precombine_id
        done = rewrite_here(
            table.root, read_keys, read, rows, mode=self.mode,
            keys=[layout.name(i) for i in config.primary_key_ids],
            precombine=layout.name(pre_id) if pre_id is not None else None,
            candidates=candidates, instant=instant, version=target.version_id,
            partition_columns=tuple(layout.name(i) for i in config.partition_ids),
            key_columns=self.key_columns(target, layout), options=options)
        if done is not None:
            self.key_lookup = dict(self.key_lookup or {}, driver=True)
        return done

    def _merge(self, incoming: DataFrame, live: tuple[DataFile, ...], target: Schema,
               layout: Layout) -> tuple[DataFrame, list[DataFile]]:
        """Upsert/delete: the new rows of the touched files, and the files they replace."""
        from pyspark.sql import functions as F

        table = self.table
        keys = [layout.name(i) for i in self.config.primary_key_ids]
        key_refs = [F.col(f"`{k}`") for k in keys]
        pre_id = self.config.precombine_id
        precombine = layout.name(pre_id) if pre_id is not None else None
        raw_keys = incoming.select(*key_refs)
        touched: list[DataFile] = []
        candidates = self.key_candidates(live) if live else []
        limit = self.direct_merge_bytes()
        incoming_bytes = estimated_bytes(incoming) if candidates and limit > 0 else None
        small = (incoming_bytes is not None
                 and sum(f.bytes for f in candidates) + incoming_bytes <= limit)
        if candidates and small:
            # Few, small candidates: merge them whole instead of first finding which of them
            # hold the keys (a Spark job of its own); a candidate that holds none of the keys
            # is rewritten with the same rows.
            touched = list(candidates)
            self.key_lookup = dict(self.key_lookup or {}, exact=False)
        elif candidates:
            touched = self._files_holding(raw_keys, candidates, target, layout)
        if not touched:
            if self.mode == "delete":
                return incoming.limit(0), []
            # the latest of the rows with the largest precombine value, per key
            rule = ordering(precombine=precombine, sequence=SEQ)
            return first_per_key(incoming.withColumn(SEQ, F.monotonically_increasing_id()),
                                 keys, rule).drop(SEQ), []
        query = table.physical_query(target, layout)
        # every value through each type its column had, as the target's layout keeps them
        existing = self.read_stored(touched, query, meta=True, via=type_paths(target, layout))
        if self.mode == "delete":
            return existing.join(raw_keys, keys, "left_anti"), touched
        # One window picks, per key, the row with the largest precombine value; on a tie an
        # incoming row over the stored one, and the latest incoming row over earlier ones (the
        # incoming rows deduplicated first, then merged: the same winner).
        rule = ordering(precombine=precombine, commit=PRIORITY, sequence=SEQ)
        split = self.config.int_property(SPLIT_MERGE_PROPERTY, DEFAULT_SPLIT_MERGE_BYTES)
        if small or sum(f.bytes for f in touched) <= split:
            both = _with_incoming(existing, incoming)
            if small:
                # One partition is clustered by any key: the window then needs no shuffle,
                # and the merge and the write run as one stage.
                both = both.coalesce(1)
            # Stored rows of a key that does not come in stay as they are, every one of them
            # when the key is stored twice, as the split merge below and the driver keep them.
            return first_per_key(both, keys, rule, merged_only_where=PRIORITY).drop(
                PRIORITY, SEQ), touched
        # Only the stored rows whose key comes in meet the incoming rows in the window; the
        # others pass through as they were read, without a shuffle (semi and anti joins with
        # the incoming keys, broadcast by Spark when they are small). Stored rows of a key
        # that does not come in are never merged with each other.
        matched = existing.join(raw_keys, keys, "left_semi")
        rest = existing.join(raw_keys, keys, "left_anti")
        winners = first_per_key(_with_incoming(matched, incoming), keys, rule)
        return rest.unionByName(winners.drop(PRIORITY, SEQ)), touched

    def read_stored(self, files: Sequence[DataFile], query: Schema, *, meta: bool = False,
                    with_file: bool = False, with_position: bool = False,
                    via: Via | None = None) -> DataFrame:
        """Stored rows of ``files`` in ``query``'s columns (:func:`read_files`, values
        through the types of ``via``; through evonb's Python workers for a table in object
        storage, which find them themselves)."""
        table = self.table
        if is_object_path(table.root):
            return table.read_object_files(files, query, meta=meta, with_file=with_file,
                                           with_position=with_position)
        return read_files(self.spark, table.root, files, query, table.version, meta=meta,
                          with_file=with_file, with_position=with_position, via=via)

    def write_data(self, df: DataFrame, **options: Any) -> list[DataFile]:
        """``df`` as data files of this write, wherever the table lives
        (:func:`~evonb.spark.object_writer.write_table_files`)."""
        return write_table_files(df, root=self.table.root, **options)

    def _check_unique_keys(self, added: Sequence[DataFile], base: Schema) -> None:
        """Insert with ``evonb.write.insert_duplicates='error'``: no two rows written to
        ``added`` (this insert's files, not committed yet) may share a record key. One job
        reads only the key columns of those files, so the incoming rows, which may be
        costly to compute (a join, rows from Python), are not computed a second time; the
        first few repeated keys are named. On a refusal the transaction removes the files.

        The files are read as files of ``base``, the schema version the write started
        from, whose version is saved even when the write evolves the schema: a write
        neither adds record key columns nor changes their names in the files or types."""
        from pyspark.sql import functions as F

        if not added:
            return
        ids = self.config.primary_key_ids
        keys = [base.field_by_id(i).name for i in ids]
        query = Schema(fields=tuple(base.field_by_id(i).replace(name=f"__evo_k{j}")
                                    for j, i in enumerate(ids)))
        refs = [F.col(f"__evo_k{j}") for j in range(len(ids))]
        stored = self.read_stored([replace(f, version=base.version_id) for f in added], query)
        repeated = stored.groupBy(*refs).agg(
            F.count(F.lit(1)).alias("__evo_count")).filter("__evo_count > 1")
        found = repeated.agg(F.count(F.lit(1)).alias("n"), F.sum("__evo_count").alias("rows"),
                             F.slice(F.collect_list(F.struct(*refs)), 1, 3).alias("ex")
                             ).collect()[0]
        if found["n"]:
            examples = [tuple(r) if len(keys) > 1 else r[0] for r in found["ex"]]
            shown = ", ".join(repr(e) for e in examples)
            raise DataValidationError(
                f"{found['n']} record keys ({', '.join(keys)}) occur more than once in the "
                f"rows inserted ({found['rows']} rows), e.g. {shown}, and the table property "
                f"{DUPLICATES_PROPERTY} is 'error'",
                count=int(found["n"]), examples=examples,
                hint="remove the duplicates, write with mode='upsert', or set "
                f"{DUPLICATES_PROPERTY}='combine' (keep the row with the largest precombine "
                "value per key) or 'allow'")

    def _combined(self, rows: DataFrame, layout: Layout) -> DataFrame:
        """One row per record key (``evonb.write.insert_duplicates='combine'``): the row with
        the largest precombine value, on a tie the latest, as an upsert picks it."""
        from pyspark.sql import functions as F

        keys = [layout.name(i) for i in self.config.primary_key_ids]
        pre_id = self.config.precombine_id
        rule = ordering(precombine=layout.name(pre_id) if pre_id is not None else None,
                        sequence=SEQ)
        return first_per_key(rows.withColumn(SEQ, F.monotonically_increasing_id()), keys,
                             rule).drop(SEQ)

    def _files_holding(self, keys: DataFrame, candidates: Sequence[DataFile], target: Schema,
                       layout: Layout) -> list[DataFile]:
        """The files among ``candidates`` that hold one of ``keys`` (physical key columns):
        a key-only scan of the candidates, joined with the keys, in one Spark job (plus the
        broadcast of the keys when they are small); the files come back as an observed
        metric rather than through a second, aggregating stage."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        table = self.table
        names = [layout.name(i) for i in self.config.primary_key_ids]
        key_query = Schema(fields=tuple(target.field_by_id(i).replace(name=layout.name(i))
                                        for i in self.config.primary_key_ids))
        existing = self.read_stored(candidates, key_query, with_file=True)
        in_range = self.key_filter(layout)
        if in_range is not None:
            existing = existing.filter(in_range)
        found = Observation()
        hits = existing.join(keys, names, "left_semi").observe(
            found, F.collect_set("_evo_file").alias("files"))
        hits.write.format("noop").mode("overwrite").save()
        return table.locate_files(sorted(found.get["files"] or ()), candidates)

    # ------------------------------------------------------------ conflicts
    def _check_conflicts(self, base: CommitRecord | None, removed: list[DataFile], *,
                         evolved: bool, instant: str | None = None,
                         schema_change: str | None = None) -> str:
        """Under the lock: fail if a commit since ``base`` conflicts; the schema version to
        record otherwise. The table's conflict policy decides (``evonb.table.conflicts``; by
        default Hudi RFC-33: a write may commit after another change only if that change was
        an implicit column addition from a write); an upsert also fails if a write meanwhile
        added files that may hold its keys (:func:`evonb.table.conflicts.check_new_keys`)."""

        inserts = self.mode == "upsert" and not self.incoming_empty
        return check_write(self.table, self.mode, base, removed, evolved=evolved,
                           instant=instant, schema_change=schema_change,
                           key_ranges=(self.key_ranges or []) if inserts else None,
                           seen=self.seen)


def _with_incoming(stored: DataFrame, incoming: DataFrame) -> DataFrame:
    """Stored and incoming rows as one frame for :func:`first_per_key`: each with its
    priority (incoming over stored on a tie) and the incoming rows' arrival order."""
    from pyspark.sql import functions as F

    both = stored.withColumn(PRIORITY, F.lit(0)).withColumn(SEQ, F.lit(None).cast("long"))
    return both.unionByName(incoming.withColumn(PRIORITY, F.lit(1))
                            .withColumn(SEQ, F.monotonically_increasing_id()))


def strip_metadata(struct: SparkStructType) -> SparkStructType:
    """A Spark schema with field metadata removed (IDs of other tables must not leak in)."""
    from pyspark.sql import types as T

    def strip(dt: T.DataType) -> T.DataType:
        if isinstance(dt, T.StructType):
            return T.StructType([T.StructField(f.name, strip(f.dataType), f.nullable)
                                 for f in dt.fields])
        if isinstance(dt, T.ArrayType):
            return T.ArrayType(strip(dt.elementType), dt.containsNull)
        if isinstance(dt, T.MapType):
            return T.MapType(strip(dt.keyType), strip(dt.valueType), dt.valueContainsNull)
        return dt

    return strip(struct)  # type: ignore[return-value]


def _named(schema: Schema) -> list[Any]:

    return [info.field for info in walk(schema.fields)]


def _match(incoming: Schema, target: Schema) -> Schema:

    return match_ids(incoming, target)
