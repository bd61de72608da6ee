"""Clustering: rewrite many small files into few files of a target size, optionally sorted.

A table fed by many small writes ends up as many small files (and, on merge-on-read tables,
log blocks), and every read pays for each of them. ``Table.cluster()`` reads the small files
(with their log blocks merged, exactly as a snapshot read sees them) and writes the same rows
as files of about the target size, projected to the latest schema like compaction; with a sort
order, the rows are range-partitioned and sorted by those columns (a linear sort), so a filter
on them skips most files and row groups. Rows keep their ``_evo_commit_time``.

With ``order="zorder"`` (two or more columns) the rows are sorted by a z-value instead: each
column's value is mapped to its rank bucket (``2**bits`` buckets between boundaries taken from
a sample of the rows, so skewed values spread evenly), and the buckets' bits are interleaved
(Morton order), all as Spark expressions. A z-ordered file covers a narrow range of every
column at once, so a filter on any one of them skips files, where a linear sort only helps
the first column.

Which files it takes, per partition:

- base files with log blocks (merge-on-read);
- base files smaller than 3/4 of the target size (``SMALL_FRACTION``);
- when the sort order changes, every file not written by a clustering in that order;

but a partition is skipped when all of its chosen files were written by a clustering in the
current order (with no order: by any clustering) and have no log blocks and the latest
schema, or when it has a single chosen file, no order is asked, and the file has no log
blocks and the latest schema: rewriting them would change nothing. Nothing left: ``None``
(nothing to do), no commit.

Files: about the target size each (at least one per core when there is at least 1 MiB per
core, so full scans read in parallel); within each, rows sorted ascending, nulls first. Target
size: ``target_file_bytes``, else table property ``evonb.clustering.target.file.bytes``,
else ``evonb.compaction.target.file.bytes``, else 128 MiB. Sort order: ``by`` (primitive
columns, top-level or members of structs as ``s.member``, sorted by their path of physical
names; nothing inside an array or a map), else the table's
property ``evonb.clustering.sort.ids`` (field IDs, so a sort column renamed later keeps
working; a sort column dropped since leaves the order; a z-order is kept as ``zorder:<ids>``).
``by`` (or ``order``) saves the order in that property after the clustering commits.
``where`` restricts clustering to the files of the partitions that match a Spark SQL
predicate over the partition columns (only partition columns).

The result is one ``replacecommit`` (operation ``cluster``), conflict-checked like compaction:
a commit that rewrote or added log blocks to a file being clustered makes it fail with
:class:`~evonb.errors.ConflictError` (the table unchanged); commits to other files are fine.
Time travel to before it reads the old files, rollback undoes it, clean removes the replaced
files after the retention window. Inline: table property ``evonb.clustering.inline.every`` (N
> 0) runs it after every N data commits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, NamedTuple
from urllib.parse import unquote

from evonb.errors import ColumnNotFoundError, InvalidArgumentError
from evonb.schema.schema import ROOT_ID, Schema
from evonb.schema.spark_convert import type_to_spark
from evonb.schema.types import TIMESTAMP, StructType
from evonb.services.compaction import (
    TARGET_SIZE_PROPERTY,
    data_commits_since,
    removed_paths,
    run_inline,
)
from evonb.services.progress import ProgressCallback, report
from evonb.spark.mor import file_groups, read_snapshot, subset
from evonb.spark.object_writer import write_table_files
from evonb.spark.writes import parquet_options
from evonb.table.commit import CommitMetadata
from evonb.table.conflicts import check_service
from evonb.table.fsutil import remove_data_files
from evonb.table.history import Commit
from evonb.table.key_stats import key_columns
from evonb.table.layout import META_COMMIT_TIME, Layout
from evonb.table.partition_folders import NULL_FOLDER, instant_text
from evonb.table.snapshot import DataFile, Snapshot
from evonb.table.transaction import Transaction

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame

    from evonb.spark.table import SparkTable

INLINE_PROPERTY = "evonb.clustering.inline.every"
SORT_PROPERTY = "evonb.clustering.sort.ids"
CLUSTER_TARGET_PROPERTY = "evonb.clustering.target.file.bytes"
DEFAULT_TARGET_SIZE = 128 * 1024 * 1024
MIN_SPLIT_BYTES = 1024 * 1024
"""With at least this many bytes per core, clustering writes at least one file per core, so
that a full scan reads in parallel."""
SMALL_FRACTION = 0.75
"""A base file smaller than this fraction of the target size is small."""
OPERATION = "cluster"
ORDERS = ("linear", "zorder")
ZORDER_PREFIX = "zorder:"
ZORDER_MAX_BITS = 10
"""Bits per column of a z-value (1,024 rank buckets), fewer when many columns share 62 bits."""
ZORDER_SAMPLE_ROWS = 100_000
"""About this many rows are sampled to place the rank buckets' boundaries."""
_Z_COLUMN = "__evo_z"

ClusterOrder = Literal["linear", "zorder"]


class SortOrder(NamedTuple):
    """A clustering order: the sort columns' field IDs, and whether they are z-ordered."""

    ids: tuple[int, ...]
    zorder: bool = False

    def to_property(self) -> str:
        ids = ",".join(str(i) for i in self.ids)
        return f"{ZORDER_PREFIX}{ids}" if self.zorder else ids

    @property
    def kind(self) -> str:
        return "zorder" if self.zorder else "linear"


def target_size(table: SparkTable, target_file_bytes: int | None = None) -> int:
    """The target file size of a clustering (see the module docstring); a bad value is an
    :class:`InvalidArgumentError`."""
    if target_file_bytes is not None:
        if isinstance(target_file_bytes, bool) or not isinstance(target_file_bytes, int) \
                or target_file_bytes < 1:
            raise InvalidArgumentError(
                f"target_file_bytes must be a whole number of bytes of at least 1, not "
                f"{target_file_bytes!r}", name="target_file_bytes", value=target_file_bytes,
                hint="e.g. target_file_bytes=128 * 1024 * 1024, or leave it out for the "
                     "table's default")
        return target_file_bytes
    config = table.raw_config
    for name in (CLUSTER_TARGET_PROPERTY, TARGET_SIZE_PROPERTY):
        value = config.int_property(name, 0)
        if value > 0:
            return value
    return DEFAULT_TARGET_SIZE


def sort_ids(table: SparkTable, by: str | Sequence[str] | None) -> tuple[int, ...]:
    """The field IDs of the sort order: the columns ``by`` names (checked: they exist and are
    of a sortable type), else the table's stored order (IDs still in the latest schema)."""
    schema = table.schema
    if by is None:
        raw = (table.raw_config.property(SORT_PROPERTY) or "").strip()
        raw = raw.removeprefix(ZORDER_PREFIX)
        ids = []
        for piece in raw.split(","):
            piece = piece.strip()
            if piece.isdigit() and schema.has_id(int(piece)):
                ids.append(int(piece))
        return tuple(ids)
    names = [by] if isinstance(by, str) else list(by)
    if not names or not all(isinstance(n, str) and n.strip() for n in names):
        raise InvalidArgumentError(
            f"by must name one or more columns, not {by!r}", name="by", value=by,
            hint="e.g. by='ts' or by=['region', 'ts']")
    out: list[int] = []
    for name in names:
        try:
            fid = schema.find_id(name.strip())
        except ColumnNotFoundError as exc:
            raise ColumnNotFoundError(name, schema.paths(),
                                      context="in the clustering sort order") from exc
        ftype = schema.field_by_id(fid).type
        parent = schema.parent_of(fid)
        while parent != ROOT_ID:
            if not isinstance(schema.field_by_id(parent).type, StructType):
                raise InvalidArgumentError(
                    f"Cannot cluster by {name!r}: it is inside the "
                    f"{schema.field_by_id(parent).type} column {schema.path_of(parent)!r}, "
                    "and a row holds any number of such values",
                    name="by", value=name,
                    hint="sort by a top-level column or by a member of structs only "
                         "('s.member')")
            parent = schema.parent_of(parent)
        if not ftype.is_primitive:
            raise InvalidArgumentError(
                f"Cannot cluster by {name!r}: it is a {ftype} column, and only columns of a "
                "primitive type (numbers, strings, dates, ...) can be sorted",
                name="by", value=name,
                hint="sort by a primitive column, or by a struct member ('s.member')")
        if fid not in out:
            out.append(fid)
    return tuple(out)


def stored_order(table: SparkTable) -> SortOrder:
    """The order the table keeps in ``evonb.clustering.sort.ids`` (IDs still in the latest
    schema; a z-order left with fewer than two columns becomes a linear order)."""
    raw = (table.raw_config.property(SORT_PROPERTY) or "").strip()
    zorder = raw.startswith(ZORDER_PREFIX)
    ids = sort_ids(table, None)
    return SortOrder(ids, zorder and len(ids) > 1)


def sort_order(table: SparkTable, by: str | Sequence[str] | None,
               order: str | None = None) -> SortOrder:
    """The order of a clustering: ``by`` in ``order`` (default linear), else the stored
    columns in ``order`` (default: the stored one). A z-order needs two or more columns."""
    if order is not None and order not in ORDERS:
        raise InvalidArgumentError(
            f"order must be one of {', '.join(repr(o) for o in ORDERS)}, not {order!r}",
            name="order", value=order,
            hint="order='zorder' with two or more columns in by, or order='linear'")
    if by is None:
        stored = stored_order(table)
        if order is None:
            return stored
        result = SortOrder(stored.ids, order == "zorder")
    else:
        result = SortOrder(sort_ids(table, by), order == "zorder")
    if result.zorder and len(result.ids) < 2:
        names = [table.schema.path_of(i) for i in result.ids]
        raise InvalidArgumentError(
            f"A z-order needs two or more columns, not {names or 'none'}: interleaving one "
            "column's bits is the same as sorting by it",
            name="by", value=by,
            hint="give two or more columns, e.g. by=['x', 'y'], order='zorder', or use the "
                 "linear order (leave order out) for one column")
    return result


def _cluster_orders(table: SparkTable) -> dict[str, SortOrder]:
    """For each completed clustering commit: the sort order it wrote its files in."""
    return {r.instant: SortOrder(tuple(int(i) for i in r.metadata.get("sort_ids", ())),
                                 r.metadata.get("sort_order") == "zorder")
            for r in table.timeline.completed()
            if r.action == "replacecommit" and r.operation == OPERATION}


def plan(table: SparkTable, snap: Snapshot, *, target: int, order: SortOrder,
         resort: bool, partitions: set[str] | None = None) -> list[DataFile]:
    """The base files a clustering rewrites (see the module docstring). ``resort``: the
    order differs from the table's, so files not clustered in it are taken too.
    ``partitions``: only files of these partitions (None: all)."""
    grouped = set(file_groups(snap))
    orders = _cluster_orders(table)
    latest = table.schema.version_id
    small = target * SMALL_FRACTION

    def in_order(f: DataFile) -> bool:
        return orders.get(f.instant) == order

    def settled(f: DataFile) -> bool:
        """Already clustered: no log blocks, latest schema, written by a clustering in
        ``order`` (or by any clustering, when no order is asked)."""
        return (f.path not in grouped and f.version == latest
                and (in_order(f) if order.ids else f.instant in orders))

    by_partition: dict[str, list[DataFile]] = {}
    for f in snap.files:
        if partitions is not None and f.partition not in partitions:
            continue
        if f.path in grouped or f.bytes < small or (resort and not in_order(f)):
            by_partition.setdefault(f.partition, []).append(f)
    chosen: list[DataFile] = []
    for files in by_partition.values():
        if all(settled(f) for f in files):
            continue
        lone = files[0]
        if (len(files) == 1 and not order.ids and lone.path not in grouped
                and lone.version == latest):
            continue  # one file, nothing to merge or sort: rewriting it changes nothing
        chosen.extend(files)
    return chosen


def matching_partitions(table: SparkTable, snap: Snapshot, where: str) -> set[str]:
    """The partitions of ``snap`` whose values satisfy ``where`` (Spark SQL over the
    partition columns)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    if not isinstance(where, str) or not where.strip():
        raise InvalidArgumentError(f"where must be a SQL predicate, not {where!r}",
                                   name="where", value=where,
                                   hint="e.g. where=\"region = 'eu'\"")
    columns = table.partition_by
    if not columns:
        raise InvalidArgumentError(
            f"where={where!r} selects partitions, but table {table.name} is not partitioned",
            name="where", value=where, hint="leave where out to cluster the whole table")
    schema = table.schema
    ids = table.raw_config.partition_ids
    partitions = sorted({f.partition for f in snap.files})
    instants = [schema.field_by_id(fid).type == TIMESTAMP for fid in ids]
    rows = []
    for p in partitions:
        pieces = [piece.partition("=")[2] for piece in p.split("/")] if p else []
        row = []
        for i in range(len(ids)):
            raw = pieces[i] if i < len(pieces) else None
            if raw is None or raw == NULL_FOLDER:
                row.append(None)
            else:  # a timestamp folder names its instant in UTC
                text = unquote(raw)
                row.append(instant_text(text) if instants[i] else text)
        rows.append((p, *row))
    struct = StructType([StructField("__evo_partition", StringType())]
                        + [StructField(f"__evo_v{i}", StringType()) for i in range(len(ids))])
    df = table.spark_session().createDataFrame(rows, struct)
    df = df.select("__evo_partition", *[
        F.col(f"__evo_v{i}").cast(type_to_spark(schema.field_by_id(fid).type)).alias(name)
        for i, (fid, name) in enumerate(zip(ids, columns, strict=True))])
    try:
        kept = df.filter(F.expr(where)).select("__evo_partition").collect()
    except Exception as exc:  # Spark's parse and analysis errors
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidArgumentError(
            f"where={where!r} is not a predicate over the partition columns "
            f"({', '.join(columns)}): {first}", name="where", value=where,
            hint=f"use only the partition columns, e.g. where=\"{columns[0]} = ...\"") from None
    return {r[0] for r in kept}


def zorder_bits(columns: int) -> int:
    """Bits per column of a z-value over ``columns`` columns (all of them fit in 62 bits)."""
    return max(1, min(ZORDER_MAX_BITS, 62 // max(1, columns)))


def sort_column(schema: Schema, layout: Layout, field_id: int) -> Column:
    """The column of field ``field_id`` in rows of ``schema``'s physical names (``layout``):
    a top-level column, or a struct member by its path of physical names."""
    from pyspark.sql import functions as F

    chain = [field_id]
    while (parent := schema.parent_of(chain[-1])) != ROOT_ID:
        chain.append(parent)
    return F.col(".".join("`" + layout.name(i).replace("`", "``") + "`"
                          for i in reversed(chain)))


def _boundaries(df: DataFrame, columns: Sequence[Column], rows: int, bits: int
                ) -> list[list[Any]]:
    """Per column: up to ``2**bits - 1`` increasing values splitting a sample of its non-null
    (and non-NaN) values into buckets of about equal counts."""
    sample = df.select(*columns)
    fraction = ZORDER_SAMPLE_ROWS / max(1, rows)
    if fraction < 1:
        sample = sample.sample(fraction=fraction, seed=0)
    collected = sample.collect()
    buckets = 1 << bits
    out: list[list[Any]] = []
    for i in range(len(columns)):
        values = sorted(v for row in collected if (v := row[i]) is not None and v == v)
        cuts: list[Any] = []
        for k in range(1, buckets) if values else ():
            v = values[k * len(values) // buckets]
            if not cuts or v > cuts[-1]:
                cuts.append(v)
        out.append(cuts)
    return out


def _rank(col: Column, cuts: Sequence[Any], dtype: Any, lo: int, hi: int) -> Column:
    """How many of ``cuts[lo:hi]`` are <= ``col``: a binary search as nested CASE WHENs."""
    from pyspark.sql import functions as F

    if lo >= hi:
        return F.lit(lo)
    mid = (lo + hi) // 2
    return F.when(col < F.lit(cuts[mid]).cast(dtype), _rank(col, cuts, dtype, lo, mid)) \
        .otherwise(_rank(col, cuts, dtype, mid + 1, hi))


def zvalue(df: DataFrame, columns: Sequence[Column], rows: int) -> Column:
    """The z-value of each row of ``df`` over ``columns`` (a Spark expression, a long): every
    column's rank bucket (nulls first, in bucket 0), their bits interleaved, the first
    column's bit most significant in each group. Places the buckets' boundaries from a sample
    of about :data:`ZORDER_SAMPLE_ROWS` rows of ``df`` (``rows``: its size)."""
    from pyspark.sql import functions as F

    bits = zorder_bits(len(columns))
    types = [f.dataType for f in df.select(*columns).schema.fields]
    ranks = []
    for col, dtype, cuts in zip(columns, types, _boundaries(df, columns, rows, bits),
                                strict=True):
        rank = _rank(col, cuts, dtype, 0, len(cuts))
        ranks.append(F.when(col.isNull(), F.lit(0)).otherwise(rank).cast("long"))
    k = len(ranks)
    z: Column = F.lit(0).cast("long")
    for b in range(bits):
        for i, rank in enumerate(ranks):
            bit = F.shiftright(rank, b).bitwiseAND(F.lit(1).cast("long"))
            z = z.bitwiseOR(F.shiftleft(bit, b * k + (k - 1 - i)))
    return z


def cluster(table: SparkTable, *, by: str | Sequence[str] | None = None,
            order: ClusterOrder | None = None, target_file_bytes: int | None = None,
            where: str | None = None, progress: ProgressCallback | None = None
            ) -> Commit | None:
    """Cluster ``table`` (see the module docstring). Returns the commit, or None when there
    was nothing to do. ``order``: ``"linear"`` or ``"zorder"`` (default: linear with ``by``,
    else the table's stored order)."""
    from pyspark.sql import functions as F

    target = target_size(table, target_file_bytes)
    requested = order
    sort = sort_order(table, by, requested)
    stored = stored_order(table)
    resort = (by is not None or requested is not None) and sort != stored
    txn = Transaction(table, "replacecommit", plan={  # failed attempts rolled back first
        "operation": OPERATION, "sort_ids": list(sort.ids), "sort_order": sort.kind,
        "target_file_bytes": target, "where": where})
    base = txn.base
    snap = table.snapshot()
    partitions = matching_partitions(table, snap, where) if where is not None else None
    chosen = plan(table, snap, target=target, order=sort, resort=resort,
                  partitions=partitions)
    report(progress, 0, len(chosen), "plan")
    if not chosen:
        if resort:
            _save_order(table, sort)
        report(progress, 0, 0, "done")
        return None
    latest = table.schema
    _, layout = table.version(latest.version_id)
    removed = removed_paths(snap, chosen)
    txn.plan["files"] = removed
    grouped = file_groups(snap)
    added: list[DataFile] = []
    with txn:
        txn.tasks_place_files()
        part = subset(snap, chosen)
        nbytes = sum(f.bytes for f in (*part.files, *part.logs))
        cores = max(1, table.spark_session().sparkContext.defaultParallelism)
        n_files = max(1, -(-nbytes // target), min(cores, nbytes // MIN_SPLIT_BYTES))
        out_query = table.physical_query(latest, layout)
        partition_cols = tuple(layout.name(i) for i in table.raw_config.partition_ids)
        report(progress, 0, len(chosen), "cluster")
        df = read_snapshot(table, part, out_query, meta=True)
        df = df.select(*[F.col(f"`{f.name}`").alias(f.name, metadata={"parquet.field.id": f.id})
                         for f in out_query.fields], F.col(META_COMMIT_TIME))
        sorted_by = [sort_column(latest, layout, i) for i in sort.ids]
        if sort.zorder:
            rows = sum(f.rows for f in (*part.files, *part.logs))
            df = df.withColumn(_Z_COLUMN, zvalue(df, sorted_by, rows))
            keys = [F.col(f"`{c}`") for c in (*partition_cols, _Z_COLUMN)]
            df = (df.repartitionByRange(n_files, *keys).sortWithinPartitions(*keys)
                  .drop(_Z_COLUMN))
        elif keys := [*(F.col(f"`{c}`") for c in partition_cols), *sorted_by]:
            df = df.repartitionByRange(n_files, *keys).sortWithinPartitions(*keys)
        else:
            df = df.repartition(n_files)
        files = write_table_files(df, root=table.root, instant=txn.instant,
                                  version=latest.version_id, partition_columns=partition_cols,
                                  key_columns=key_columns(table.raw_config.primary_key_ids,
                                                          latest, layout),
                                  options=parquet_options(table.raw_config))
        remove_data_files(table.root, [f for f in files if f.rows == 0])
        added = [f for f in files if f.rows > 0]
        txn.wrote(added)
        report(progress, len(chosen), len(chosen), "cluster")
        txn.stage(added, removed)
        with txn.locked():
            check_service(table, OPERATION, "replacecommit", base, [f.path for f in chosen],
                          instant=txn.instant)
            last = table.timeline.last_completed()
            record = txn.complete(CommitMetadata.of(
                OPERATION, last.schema_version if last else latest.version_id,
                added=added, removed=removed,
                clustered_version=latest.version_id,
                sort_ids=list(sort.ids),
                sort_order=sort.kind,
                sort_columns=[latest.path_of(i) for i in sort.ids],
                target_file_bytes=target,
                where=where,
                base_instant=base.instant if base else None,
                base_completion=base.completion if base else None,
                logs_merged=sum(len(grouped.get(f.path, ())) for f in chosen),
                files_in=len(chosen),
                rows_written=sum(f.rows for f in added)))
    if resort:
        _save_order(table, sort)
    report(progress, len(chosen), len(chosen), "done")
    return Commit.from_record(record)


def _save_order(table: SparkTable, order: SortOrder) -> None:
    if order.ids:
        table.set_properties({SORT_PROPERTY: order.to_property()})
    else:
        table.set_properties(unset=(SORT_PROPERTY,))


def commits_since_clustering(table: SparkTable) -> int:
    """Data commits (``commit``, ``deltacommit``) since the last clustering."""
    return data_commits_since(table, lambda record: record.action == "replacecommit"
                              and record.operation == OPERATION)


def cluster_inline(table: SparkTable) -> Commit | None:
    """After a write: cluster when ``evonb.clustering.inline.every`` (N > 0) data commits
    have been made since the last clustering. A lost race only warns (the write committed)."""
    return run_inline(table, INLINE_PROPERTY, commits_since_clustering, cluster, "clustering")


def describe_order(table: SparkTable) -> list[str]:
    """The table's clustering sort order as column paths of the latest schema (see
    :func:`stored_order` for whether they are z-ordered)."""
    return [table.schema.path_of(i) for i in sort_ids(table, None)]


__all__ = [
    "CLUSTER_TARGET_PROPERTY",
    "DEFAULT_TARGET_SIZE",
    "INLINE_PROPERTY",
    "ORDERS",
    "SORT_PROPERTY",
    "SortOrder",
    "cluster",
    "cluster_inline",
    "commits_since_clustering",
    "describe_order",
    "matching_partitions",
    "plan",
    "sort_column",
    "sort_ids",
    "sort_order",
    "stored_order",
    "target_size",
    "zorder_bits",
    "zvalue",
]
