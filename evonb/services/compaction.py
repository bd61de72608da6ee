"""Compaction: merge log blocks into new base files, and rewrite old-schema files in the latest.

On a merge-on-read table every file group with log blocks is read merged (exactly as a snapshot
read sees it) and written as new base files. With ``upgrade_schema`` (the default), base files
written with an older schema version are rewritten in the latest one too, on either table type:
Kudu's compaction, where "files with different schemas may be aggregated into a new file. This
new file will have the latest schema and all the rows must be projected". Columns added since a
file was written get their read default as data; data of dropped columns is left behind. Rows
keep their ``_evo_commit_time``, so snapshot, time-travel and incremental reads give the same
rows before and after.

The result is one ``compaction`` commit. It runs on demand (``Table.compact()``) or inline after
every N data commits (table property ``evonb.compaction.inline.every``).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from evonb.errors import ConflictError
from evonb.schema.schema import Schema
from evonb.services.progress import ProgressCallback, report
from evonb.spark.group_merge import (
    UNMERGEABLE,
    GroupSpec,
    MergeLayout,
    merge_bins_in_tasks,
    pack,
)
from evonb.spark.mor import file_groups, position_drops, read_snapshot, subset
from evonb.spark.object_writer import write_table_files
from evonb.spark.writes import parquet_options
from evonb.table.commit import CommitMetadata
from evonb.table.conflicts import check_service
from evonb.table.fileio import file_io, is_object_path
from evonb.table.fsutil import remove_data_files, staging_dir
from evonb.table.history import Commit
from evonb.table.key_stats import key_columns
from evonb.table.layout import META_COMMIT_TIME, Layout
from evonb.table.names import data_file_name, named_with_instant, partition_path, staged_part_name
from evonb.table.snapshot import DataFile, Snapshot
from evonb.table.store_settings import store_settings
from evonb.table.timeline import CommitRecord
from evonb.table.transaction import Transaction

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from evonb.spark.table import SparkTable

INLINE_PROPERTY = "evonb.compaction.inline.every"
BATCH_PROPERTY = "evonb.compaction.batch.groups"
DEFAULT_BATCH = 32
TARGET_SIZE_PROPERTY = "evonb.compaction.target.file.bytes"
DEFAULT_TARGET_SIZE = 128 * 1024 * 1024
DATA_ACTIONS = frozenset({"commit", "deltacommit"})
ARROW_PROPERTY = "evonb.compaction.arrow.enabled"
"""Whether file groups that need no projection are merged inside Spark tasks with Arrow
(:mod:`evonb.spark.group_merge`; default true). ``false`` merges every group with Spark's
snapshot read and writer."""


def plan(snap: Snapshot, latest_version: str, *, upgrade_schema: bool = True) -> list[DataFile]:
    """The base files a compaction rewrites: those with log blocks, and (``upgrade_schema``)
    those written with a schema version other than ``latest_version``."""
    grouped = set(file_groups(snap))
    return [f for f in snap.files
            if f.path in grouped or (upgrade_schema and f.version != latest_version)]


def _write_options(table: SparkTable) -> dict[str, Any]:
    return {"options": parquet_options(table.raw_config)}


def rewrite_groups(
    table: SparkTable,
    snap: Snapshot,
    bases: Sequence[DataFile],
    *,
    read_query: Schema,
    target: Schema,
    layout: Layout,
    instant: str,
    transform: Callable[[DataFrame], DataFrame] | None = None,
    progress: ProgressCallback | None = None,
    stage: str = "compact",
    done: int = 0,
    total: int | None = None,
) -> list[DataFile]:
    """Read ``bases`` (with their log blocks, merged) in ``read_query``, ``transform`` the rows
    into the physical columns of ``target`` and write them as base files of ``instant``, a batch
    of file groups per Spark job (table property ``evonb.compaction.batch.groups``, default 32),
    in files of about ``evonb.compaction.target.file.bytes`` (default 128 MiB), at least one
    per core (and at most one per file group). Progress counts ``done`` groups merged before
    of ``total`` (default: ``bases``)."""
    from pyspark.sql import functions as F


    size = max(1, table.raw_config.int_property(BATCH_PROPERTY, DEFAULT_BATCH))
    target_bytes = max(1, table.raw_config.int_property(TARGET_SIZE_PROPERTY, DEFAULT_TARGET_SIZE))
    cores = max(1, table.spark_session().sparkContext.defaultParallelism)
    out_query = table.physical_query(target, layout)
    partition_cols = tuple(layout.name(i) for i in table.raw_config.partition_ids)
    keys = key_columns(table.raw_config.primary_key_ids, target, layout)
    added: list[DataFile] = []
    total = done + len(bases) if total is None else total
    report(progress, done, total, stage)
    try:
        for start in range(0, len(bases), size):
            chunk = list(bases[start:start + size])
            part = subset(snap, chunk)
            nbytes = sum(f.bytes for f in (*part.files, *part.logs))
            n_files = min(len(chunk), max(cores, -(-nbytes // target_bytes)))
            df = read_snapshot(table, part, read_query, meta=True)
            if transform is not None:
                df = transform(df)
            df = df.select(*[F.col(f"`{f.name}`").alias(f.name,
                                                         metadata={"parquet.field.id": f.id})
                             for f in out_query.fields], F.col(META_COMMIT_TIME))
            files = write_table_files(df, root=table.root, instant=instant,
                                      version=target.version_id,
                                      partition_columns=partition_cols, max_files=n_files,
                                      key_columns=keys, **_write_options(table))
            empty = [f for f in files if f.rows == 0]
            remove_data_files(table.root, empty)
            added.extend(f for f in files if f.rows > 0)
            report(progress, done + min(start + size, len(bases)), total, stage)
    except BaseException:
        remove_data_files(table.root, added)
        raise
    return added


def arrow_mergeable(table: SparkTable, snap: Snapshot, bases: Sequence[DataFile],
                    latest: Schema) -> dict[str, Any]:
    """The groups of ``bases`` that :func:`merge_in_tasks` can merge, each with its dropped
    positions: evonb-written base files of the latest schema version whose log blocks are all
    of that version and list the rows they replace. None when the table turns it off
    (:data:`ARROW_PROPERTY`) or sets Parquet writer options."""

    config = table.raw_config
    if not config.bool_property(ARROW_PROPERTY, True) or parquet_options(config):
        return {}
    grouped = file_groups(snap)
    wanted = [f for f in bases
              if f.version == latest.version_id and named_with_instant(f.path, f.instant)
              and f.path in grouped
              and all(log.version == latest.version_id for log in grouped[f.path])]
    return position_drops(table, subset(snap, wanted)) if wanted else {}


def _bins(chunk: Sequence[DataFile], weights: Sequence[int], cores: int,
          target_bytes: int) -> list[list[int]]:
    """The groups of ``chunk`` (indexes) per output file: groups of one partition only, as many
    files as the Spark path writes (files of about ``target_bytes``, at least one per core,
    at most one per group), shared among partitions by size."""

    total = max(1, sum(weights))
    wanted = min(len(chunk), max(cores, -(-total // target_bytes)))
    by_partition: dict[str, list[int]] = {}
    for i, f in enumerate(chunk):
        by_partition.setdefault(f.partition, []).append(i)
    bins: list[list[int]] = []
    for members in by_partition.values():
        size = sum(weights[i] for i in members)
        n = min(len(members), max(1, round(wanted * size / total), -(-size // target_bytes)))
        bins.extend([members[k] for k in b] for b in pack([weights[i] for i in members], n))
    return bins


def merge_in_tasks(table: SparkTable, snap: Snapshot, bases: Sequence[DataFile],
                   drops: dict[str, Any], *, target: Schema, layout: Layout, instant: str,
                   progress: ProgressCallback | None = None, done: int = 0, total: int = 0
                   ) -> tuple[list[DataFile], list[DataFile]]:
    """Merge the file groups of ``bases`` (all in ``drops``, see :func:`arrow_mergeable`)
    inside Spark tasks with Arrow, in batches of groups like :func:`rewrite_groups`, into
    files of about ``evonb.compaction.target.file.bytes``. Returns the files written (not yet
    visible) and the base files whose groups Arrow could not merge exactly (to merge with
    Spark). On local disk the tasks write into a staging folder the driver moves from; in
    object storage each task stores its file under its final name
    (:func:`~evonb.spark.group_merge.store_bin`)."""

    spark = table.spark_session()
    config = table.raw_config
    size = max(1, config.int_property(BATCH_PROPERTY, DEFAULT_BATCH))
    target_bytes = max(1, config.int_property(TARGET_SIZE_PROPERTY, DEFAULT_TARGET_SIZE))
    cores = max(1, spark.sparkContext.defaultParallelism)
    physical = table.physical_query(target, layout)
    pre_id = config.precombine_id
    # each task reports its file's rows, bytes and key statistics from the footer it wrote
    merge_layout = MergeLayout.of(
        physical, [layout.name(i) for i in config.primary_key_ids],
        layout.name(pre_id) if pre_id is not None else None,
        spark.conf.get("spark.sql.session.timeZone") or "UTC",
        [layout.name(i) for i in config.partition_ids],
        stats_columns=key_columns(config.primary_key_ids, target, layout))
    grouped = file_groups(snap)
    # in object storage the tasks store each merged file under its final name themselves
    remote = is_object_path(table.root)
    store = ({"root": str(table.root), "instant": instant, "settings": store_settings()}
             if remote else None)
    staging = staging_dir(table.root, instant)
    if not remote:
        staging.mkdir(parents=True, exist_ok=True)
    added: list[DataFile] = []
    leftover: list[DataFile] = []
    report(progress, done, total, "compact")
    try:
        for start in range(0, len(bases), size):
            chunk = list(bases[start:start + size])
            weights = [f.bytes + sum(log.bytes for log in grouped[f.path]) for f in chunk]
            bins = _bins(chunk, weights, cores, target_bytes)
            specs = [[GroupSpec(base=str(table.root / chunk[i].path),
                                logs=tuple(str(table.root / log.path)
                                           for log in grouped[chunk[i].path]),
                                drops=drops[chunk[i].path]) for i in members]
                     for members in bins]
            names = [partition_path(chunk[members[0]].partition,
                                    data_file_name(instant, start + j))
                     for j, members in enumerate(bins)]
            outs = ([str(table.root / name) for name in names] if remote else
                    [str(staging / staged_part_name(start + j)) for j in range(len(bins))])
            results = merge_bins_in_tasks(spark.sparkContext, specs, merge_layout, outs,
                                          store=store)
            for j, (members, merged) in enumerate(zip(bins, results, strict=True)):
                if merged.out == UNMERGEABLE:
                    leftover.extend(chunk[i] for i in members)
                    continue
                partition = chunk[members[0]].partition
                if merged.rows == 0:
                    continue  # every row deleted: nothing stored, or only in staging
                name = names[j]
                if not remote:
                    file_io().move(merged.out, table.root / name)
                added.append(DataFile(path=name, version=target.version_id, instant=instant,
                                      partition=partition, rows=merged.rows,
                                      bytes=merged.bytes, key_stats=merged.key_stats))
            report(progress, done + min(start + size, len(bases)), total, "compact")
    except BaseException:
        remove_data_files(table.root, added)
        raise
    finally:
        if not remote:
            file_io().delete_folder(staging)
    return added, leftover


def removed_paths(snap: Snapshot, bases: Sequence[DataFile]) -> list[str]:
    """The paths a rewrite of ``bases`` replaces: the base files and their log blocks."""
    keep = {f.path for f in bases}
    return [*sorted(keep), *sorted(f.path for f in snap.logs if f.base in keep)]


def compact(table: SparkTable, *, upgrade_schema: bool = True,
            progress: ProgressCallback | None = None) -> Commit | None:
    """Compact ``table`` (see the module docstring). Returns the commit, or None when there
    was nothing to compact."""

    txn = Transaction(table, "compaction")  # failed attempts rolled back first
    base = txn.base
    snap = table.snapshot()
    latest = table.schema
    _, layout = table.version(latest.version_id)
    chosen = plan(snap, latest.version_id, upgrade_schema=upgrade_schema)
    report(progress, 0, len(chosen), "plan")
    if not chosen:
        report(progress, 0, 0, "done")
        return None
    removed = removed_paths(snap, chosen)
    txn.plan.update({"operation": "compact", "files": removed})
    added: list[DataFile] = []
    with txn:
        txn.tasks_place_files()
        drops = arrow_mergeable(table, snap, chosen, latest)
        in_tasks = [f for f in chosen if f.path in drops]
        if in_tasks:
            added, leftover = merge_in_tasks(table, snap, in_tasks, drops, target=latest,
                                             layout=layout, instant=txn.instant,
                                             progress=progress, total=len(chosen))
            txn.wrote(added)
        else:
            leftover = []
        spark_merged = {f.path for f in leftover}
        rest = [f for f in chosen if f.path not in drops or f.path in spark_merged]
        if rest:
            rewritten = rewrite_groups(
                table, snap, rest, read_query=table.physical_query(latest, layout),
                target=latest, layout=layout, instant=txn.instant, progress=progress,
                stage="compact", done=len(chosen) - len(rest), total=len(chosen))
            txn.wrote(rewritten)
            added.extend(rewritten)
        txn.stage(added, removed)
        with txn.locked():
            check_service(table, "compact", "compaction", base, [f.path for f in chosen],
                          instant=txn.instant)
            last = table.timeline.last_completed()
            record = txn.complete(CommitMetadata.of(
                "compact", last.schema_version if last else latest.version_id,
                added=added, removed=removed,
                compacted_version=latest.version_id,
                base_instant=base.instant if base else None,
                base_completion=base.completion if base else None,
                logs_merged=sum(1 for f in snap.logs if f.base in {c.path for c in chosen}),
                rows_written=sum(f.rows for f in added),
                groups_in_tasks=len(in_tasks) - len(spark_merged)))
    report(progress, len(chosen), len(chosen), "done")
    return Commit.from_record(record)


def data_commits_since(table: SparkTable, service: Callable[[CommitRecord], bool]) -> int:
    """Data commits (``commit``, ``deltacommit``) since the last commit ``service`` marks."""
    count = 0
    for record in reversed(table.timeline.completed()):
        if service(record):
            break
        if record.action in DATA_ACTIONS:
            count += 1
    return count


def commits_since_compaction(table: SparkTable) -> int:
    """Data commits (``commit``, ``deltacommit``) since the last compaction."""
    return data_commits_since(table, lambda record: record.action == "compaction")


def run_inline(table: SparkTable, every_property: str, since: Callable[[SparkTable], int],
               service: Callable[[SparkTable], Commit | None], name: str) -> Commit | None:
    """After a write: run ``service`` when the property ``every_property`` (N > 0) data
    commits have been made since its last run (``since``). A lost race only warns, naming the
    inline ``name`` (the write committed)."""
    every = table.raw_config.int_property(every_property, 0)
    if every <= 0 or since(table) < every:
        return None
    table.invalidate()
    try:
        return service(table)
    except ConflictError as exc:
        warnings.warn(f"inline {name} skipped: {exc.message}", stacklevel=4)
        return None


def compact_inline(table: SparkTable) -> Commit | None:
    """After a write: compact when ``evonb.compaction.inline.every`` (N > 0) data commits
    have been made since the last compaction. A lost race only warns (the write committed)."""
    return run_inline(table, INLINE_PROPERTY, commits_since_compaction, compact, "compaction")


__all__ = [
    "ARROW_PROPERTY",
    "BATCH_PROPERTY",
    "INLINE_PROPERTY",
    "arrow_mergeable",
    "commits_since_compaction",
    "compact",
    "compact_inline",
    "data_commits_since",
    "merge_in_tasks",
    "plan",
    "removed_paths",
    "rewrite_groups",
    "run_inline",
]
