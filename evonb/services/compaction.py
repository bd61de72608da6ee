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
from evonb.services.rollback import rollback_failed, writer_info
from evonb.table.conflicts import check_service
from evonb.table.history import Commit
from evonb.table.key_stats import key_columns
from evonb.table.layout import META_COMMIT_TIME, Layout
from evonb.table.mor import file_groups, read_snapshot, subset
from evonb.table.snapshot import DataFile, Snapshot

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from evonb.table.table import Table

INLINE_PROPERTY = "evonb.compaction.inline.every"
BATCH_PROPERTY = "evonb.compaction.batch.groups"
DEFAULT_BATCH = 32
TARGET_SIZE_PROPERTY = "evonb.compaction.target.file.bytes"
DEFAULT_TARGET_SIZE = 128 * 1024 * 1024
DATA_ACTIONS = frozenset({"commit", "deltacommit"})


def plan(snap: Snapshot, latest_version: str, *, upgrade_schema: bool = True) -> list[DataFile]:
    """The base files a compaction rewrites: those with log blocks, and (``upgrade_schema``)
    those written with a schema version other than ``latest_version``."""
    grouped = set(file_groups(snap))
    return [f for f in snap.files
            if f.path in grouped or (upgrade_schema and f.version != latest_version)]


def _write_options(table: Table) -> dict[str, Any]:
    try:
        from evonb.table.writes import parquet_options
    except ImportError:  # pragma: no cover - older writes module
        return {}
    return {"options": parquet_options(table._config)}


def rewrite_groups(
    table: Table,
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
) -> list[DataFile]:
    """Read ``bases`` (with their log blocks, merged) in ``read_query``, ``transform`` the rows
    into the physical columns of ``target`` and write them as base files of ``instant``, a batch
    of file groups per Spark job (table property ``evonb.compaction.batch.groups``, default 32),
    in files of about ``evonb.compaction.target.file.bytes`` (default 128 MiB), at least one
    per core (and at most one per file group)."""
    from pyspark.sql import functions as F

    from evonb.spark.writer import remove_files, write_files

    size = max(1, table._config.int_property(BATCH_PROPERTY, DEFAULT_BATCH))
    target_bytes = max(1, table._config.int_property(TARGET_SIZE_PROPERTY, DEFAULT_TARGET_SIZE))
    cores = max(1, table.spark.sparkContext.defaultParallelism)
    out_query = table.physical_query(target, layout)
    partition_cols = tuple(layout.name(i) for i in table._config.partition_ids)
    keys = key_columns(table._config.primary_key_ids, target, layout)
    added: list[DataFile] = []
    total = len(bases)
    report(progress, 0, total, stage)
    try:
        for start in range(0, total, size):
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
            files = write_files(df, root=table.root, instant=instant,
                                version=target.version_id, partition_columns=partition_cols,
                                max_files=n_files, key_columns=keys, **_write_options(table))
            empty = [f for f in files if f.rows == 0]
            remove_files(table.root, empty)
            added.extend(f for f in files if f.rows > 0)
            report(progress, min(start + size, total), total, stage)
    except BaseException:
        remove_files(table.root, added)
        raise
    return added


def removed_paths(snap: Snapshot, bases: Sequence[DataFile]) -> list[str]:
    """The paths a rewrite of ``bases`` replaces: the base files and their log blocks."""
    keep = {f.path for f in bases}
    return [*sorted(keep), *sorted(f.path for f in snap.logs if f.base in keep)]


def compact(table: Table, *, upgrade_schema: bool = True,
            progress: ProgressCallback | None = None) -> Commit | None:
    """Compact ``table`` (see the module docstring). Returns the commit, or None when there
    was nothing to compact."""
    from evonb.spark.writer import remove_files

    rollback_failed(table)
    base = table.timeline.last_completed()
    snap = table.snapshot()
    latest = table.schema
    _, layout = table.version(latest.version_id)
    chosen = plan(snap, latest.version_id, upgrade_schema=upgrade_schema)
    report(progress, 0, len(chosen), "plan")
    if not chosen:
        report(progress, 0, 0, "done")
        return None
    removed = removed_paths(snap, chosen)
    inst = table.timeline.requested("compaction", plan={
        "operation": "compact", "files": removed, "writer": writer_info()})
    added: list[DataFile] = []
    try:
        added = rewrite_groups(table, snap, chosen, read_query=table.physical_query(latest, layout),
                               target=latest, layout=layout, instant=inst.timestamp,
                               progress=progress, stage="compact")
        table.timeline.inflight(inst, {"added": [f.path for f in added]})
        with table._locked():
            check_service(table, "compact", "compaction", base, [f.path for f in chosen],
                          instant=inst.timestamp)
            last = table.timeline.last_completed()
            record = table.timeline.complete(inst, {
                "operation": "compact",
                "schema_version": last.schema_version if last else latest.version_id,
                "compacted_version": latest.version_id,
                "base_instant": base.instant if base else None,
                "base_completion": base.completion if base else None,
                "added": [f.to_dict() for f in added],
                "removed": removed,
                "logs_merged": sum(1 for f in snap.logs if f.base in {c.path for c in chosen}),
                "rows_written": sum(f.rows for f in added),
            })
    except BaseException:
        if table.timeline.is_completed(inst):
            raise  # interrupted after the commit point: the files belong to the table
        remove_files(table.root, added)
        table.timeline.abort(inst)
        raise
    table._snapshots.clear()
    report(progress, len(chosen), len(chosen), "done")
    return Commit.from_record(record)


def commits_since_compaction(table: Table) -> int:
    """Data commits (``commit``, ``deltacommit``) since the last compaction."""
    count = 0
    for record in reversed(table.timeline.completed()):
        if record.action == "compaction":
            break
        if record.action in DATA_ACTIONS:
            count += 1
    return count


def compact_inline(table: Table) -> Commit | None:
    """After a write: compact when ``evonb.compaction.inline.every`` (N > 0) data commits
    have been made since the last compaction. A lost race only warns (the write committed)."""
    every = table._config.int_property(INLINE_PROPERTY, 0)
    if every <= 0 or commits_since_compaction(table) < every:
        return None
    table._snapshots.clear()
    try:
        return compact(table)
    except ConflictError as exc:
        warnings.warn(f"inline compaction skipped: {exc.message}", stacklevel=3)
        return None


__all__ = [
    "BATCH_PROPERTY",
    "INLINE_PROPERTY",
    "commits_since_compaction",
    "compact",
    "compact_inline",
    "plan",
    "removed_paths",
    "rewrite_groups",
]
