"""Merging whole merge-on-read file groups inside Spark tasks, with Arrow.

A compaction of file groups whose base file and log blocks share the table's latest schema
version, and whose blocks list the base rows they replace (see :func:`evonb.spark.mor.
position_drops`), needs no projection and no join: the new base file is the old one without
the listed rows, plus the winning log records. Each Spark task here does that for a bin of
file groups with Arrow: it reads the base files with pyarrow, decodes the blocks with the
columnar Avro decoder, resolves them per key and base row
(:func:`evonb.spark.avro_log.resolve_group`, as the snapshot read does) and writes one Parquet
file with the base files' own Parquet schema (names, field IDs, Spark's metadata), so no row
crosses into the JVM.

A group this cannot merge exactly (INT96 timestamps mixed with other timestamps, a column
missing from a base file, a type Arrow cannot cast, a record whose partition columns differ
from its base file's) makes its bin report
:data:`UNMERGEABLE`; the caller merges such bins with Spark. For a table in object storage
each task stores its merged file in the store itself (:func:`store_bin`).
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from evonb.errors import EvoError
from evonb.schema.types import StructType
from evonb.spark.arrow_collect import nested_nullable
from evonb.spark.avro_log import POS, arrow_schema, block_struct, resolve_group, winners
from evonb.spark.parquet_encoding import dictionary_columns
from evonb.spark.task_attempts import collect_settled, note_if_retried
from evonb.table.fileio import file_io
from evonb.table.key_stats import KeyStats, footer_stats
from evonb.table.layout import META_COMMIT_TIME
from evonb.table.store_settings import apply_store_settings
from evonb.table.timeline import instant_on_timeline

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark import SparkContext

    from evonb.schema.schema import Schema
    from evonb.schema.types import Type

UNMERGEABLE = "unmergeable"
"""What a bin reports when one of its groups cannot be merged in Arrow exactly."""


class _Unmergeable(Exception):
    """A file group that Arrow cannot merge exactly (the caller merges it with Spark)."""


@dataclass(frozen=True)
class GroupSpec:
    """One file group: its base file, its log blocks (oldest first) and the sorted positions
    of the base rows the blocks replace or delete (absolute paths)."""

    base: str
    logs: tuple[str, ...]
    drops: Any  # numpy int64 array


@dataclass(frozen=True)
class MergeLayout:
    """What every task needs to merge groups of one schema version: the block columns (and
    their Arrow schema), the physical key and precombine names, the columns of a base file
    (physical names and ``_evo_commit_time``), and the key columns a merged file records
    statistics of (field ID, physical name, type: :mod:`evonb.table.key_stats`)."""

    struct: StructType
    block_arrow: Any  # pa.Schema
    keys: tuple[str, ...]
    precombine: str | None
    columns: tuple[str, ...]
    partition_columns: tuple[str, ...] = ()
    stats_columns: tuple[tuple[int, str, Type], ...] = ()

    @classmethod
    def of(cls, physical: Schema, keys: Sequence[str], precombine: str | None,
           timezone: str, partition_columns: Sequence[str] = (),
           stats_columns: Mapping[int, tuple[str, Type]] | None = None) -> MergeLayout:
        struct = block_struct(physical)
        return cls(struct=struct, block_arrow=arrow_schema(struct, timezone), keys=tuple(keys),
                   precombine=precombine,
                   columns=(*(f.name for f in physical.fields), META_COMMIT_TIME),
                   partition_columns=tuple(partition_columns),
                   stats_columns=tuple((fid, name, t) for fid, (name, t)
                                       in sorted((stats_columns or {}).items())))


@dataclass(frozen=True)
class Merged:
    """What a task reports of one bin: where its merged file is (or :data:`UNMERGEABLE`), its
    rows, its size in bytes and its key statistics, taken from the footer the task has just
    written, so the driver never reads the file again."""

    out: str
    rows: int
    bytes: int = 0
    key_stats: KeyStats | None = None


def _read_base(path: str, columns: Sequence[str]) -> tuple[pa.Table, bool]:
    """The base file's rows (its own Arrow schema, with field IDs and Spark's metadata) and
    whether it stores timestamps as INT96."""
    import pyarrow.parquet as pq

    with file_io().open_data(path) as fh:
        pf = pq.ParquetFile(fh, coerce_int96_timestamp_unit="us")
        kinds = {pf.schema.column(i).physical_type for i in range(len(pf.schema))}
        int96 = "INT96" in kinds
        names = set(pf.schema_arrow.names)
        if names != set(columns):
            raise _Unmergeable(f"{path}: columns {sorted(names)} are not {sorted(columns)}")
        table = pf.read(columns=list(columns))
        if int96 and any(_has_timestamp(f.type) for f in table.schema):
            # INT96 is written for every timestamp or none: mixed with INT64 timestamps, the
            # round trip would change the others.
            int64_ts = {pf.schema.column(i).path.split(".")[0] for i in range(len(pf.schema))
                        if pf.schema.column(i).logical_type.type == "TIMESTAMP"}
            if int64_ts:
                raise _Unmergeable(f"{path}: INT96 and INT64 timestamps")
    return table, int96


def _has_timestamp(t: Any) -> bool:
    import pyarrow as pa

    if pa.types.is_timestamp(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_timestamp(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_timestamp(t.value_type)
    if pa.types.is_map(t):
        return _has_timestamp(t.key_type) or _has_timestamp(t.item_type)
    return False


def merge_group(spec: GroupSpec, layout: MergeLayout) -> tuple[pa.Table, bool]:
    """The rows of one file group after its log blocks: the base rows not listed in
    ``spec.drops`` and the winning log records, in the base file's Arrow schema with nested
    fields nullable (:func:`~evonb.spark.arrow_collect.nested_nullable`: a record's null
    struct may hold its required member as null under it, which pyarrow's cast to a required
    member refuses); and whether the base file stores timestamps as INT96."""
    import numpy as np
    import pyarrow as pa

    base, int96 = _read_base(spec.base, layout.columns)
    drops = np.asarray(spec.drops, dtype=np.int64)
    if drops.size and (drops[0] < 0 or drops[-1] >= base.num_rows):
        raise _Unmergeable(f"{spec.base}: a listed position is outside the file")
    keep = np.ones(base.num_rows, dtype=bool)
    keep[drops] = False
    schema = nested_nullable(base.schema)
    kept = base.filter(pa.array(keep))
    if not schema.equals(base.schema, check_metadata=True):
        kept = kept.cast(schema)
    # resolved per key and base position, as the snapshot read does: a key stored twice in
    # the base file has one record per stored row, and each replaces its own row
    resolved = resolve_group(list(spec.logs), layout.struct, layout.block_arrow,
                             [*layout.keys, POS], layout.precombine)
    added = winners(resolved).select(list(base.column_names))
    if base.num_rows and added.num_rows:
        for name in layout.partition_columns:
            _same_partition(spec.base, base.column(name)[0], added.column(name))
    try:
        added = added.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise _Unmergeable(f"{spec.base}: {exc}") from exc
    return pa.concat_tables([kept, added]), int96


def _same_partition(path: str, value: Any, column: Any) -> None:
    """Raise :class:`_Unmergeable` unless every value of ``column`` is the base file's
    partition value ``value`` (a log record whose partition changed belongs in another
    partition folder: Spark's writer places it)."""
    import pyarrow.compute as pc

    if value.is_valid:
        same = pc.all(pc.fill_null(pc.equal(column, value), False)).as_py()
    else:
        same = column.null_count == len(column)
    if not same:
        raise _Unmergeable(f"{path}: a record moves to another partition")


def merge_bin(groups: Sequence[GroupSpec], layout: MergeLayout, out: str) -> Merged:
    """Merge ``groups`` (:func:`merge_group`) into one Parquet file at ``out``, written with
    the first base file's schema, one group at a time. Returns ``out`` with its rows, bytes
    and key statistics, or :data:`UNMERGEABLE` with nothing left at ``out``."""
    import pyarrow.parquet as pq

    writer = None
    rows = 0
    try:
        for spec in groups:
            merged, int96 = merge_group(spec, layout)
            if writer is None:
                schema = merged.schema
                writer = pq.ParquetWriter(out, schema, compression="snappy",
                                          use_deprecated_int96_timestamps=int96,
                                          store_schema=False, store_decimal_as_integer=True,
                                          use_dictionary=dictionary_columns(merged))
            elif merged.schema != schema:
                try:
                    merged = merged.cast(schema)
                except Exception as exc:
                    raise _Unmergeable(f"{spec.base}: schema differs") from exc
            writer.write_table(merged)
            rows += merged.num_rows
    except BaseException as exc:
        if writer is not None:
            writer.close()
        if os.path.exists(out):
            os.remove(out)
        if isinstance(exc, _Unmergeable):
            return Merged(UNMERGEABLE, 0)
        raise
    if writer is None:
        return Merged(out, 0)
    writer.close()
    footer = writer.writer.metadata
    stats = (footer_stats(footer, {fid: (name, t) for fid, name, t in layout.stats_columns})
             if layout.stats_columns else None)
    return Merged(out, footer.num_rows, os.path.getsize(out), stats)


def pack(sizes: Sequence[int], bins: int) -> list[list[int]]:
    """Indexes of ``sizes`` in ``bins`` bins of about equal total size (largest first into the
    lightest bin); no bin is empty when there are at least as many items as bins."""
    totals = [0] * max(1, bins)
    members: list[list[int]] = [[] for _ in totals]
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        j = min(range(len(totals)), key=lambda j: (totals[j], j))
        totals[j] += sizes[i]
        members[j].append(i)
    return [sorted(m) for m in members if m]


def store_bin(groups: Sequence[GroupSpec], layout: MergeLayout, out: str, *, root: str,
              instant: str) -> Merged:
    """:func:`merge_bin` into ``out`` in object storage (a file of the table at ``root``):
    the file is written to a local temporary file, then stored whole under its final name
    with one request (object stores have no rename). The stored file is removed again when
    the attempt ``instant`` was aborted meanwhile (its files swept before this task stored
    it: :meth:`~evonb.table.transaction.Transaction.tasks_place_files`)."""
    with tempfile.TemporaryDirectory(prefix="evonb-merge-") as folder:
        local = os.path.join(folder, "merged.parquet")
        done = merge_bin(groups, layout, local)
        if done.out == UNMERGEABLE or done.rows == 0:  # nothing to store (every row deleted)
            return done
        with open(local, "rb") as fh:
            data = fh.read()
    io = file_io()
    note_if_retried(root, instant)
    io.write(out, data)
    if not instant_on_timeline(root, instant):
        io.delete(out)
        raise EvoError(f"The compaction {instant} was aborted while this task merged its files",
                       hint="nothing to do: the task removed them")
    return replace(done, out=out)


def merge_bins_in_tasks(sc: SparkContext, bins: Sequence[Sequence[GroupSpec]],
                        layout: MergeLayout, outs: Sequence[str], *,
                        store: Mapping[str, Any] | None = None) -> list[Merged]:
    """Run :func:`merge_bin` for every bin, one Spark task per bin (results in bin order).
    ``store`` (for a table in object storage: its ``root``, the attempt's ``instant`` and the
    object-store ``settings`` of :mod:`evonb.table.store_settings`): the tasks apply the
    settings and store each merged file at its ``out`` in the store (:func:`store_bin`)."""
    work = list(zip(range(len(bins)), bins, outs, strict=True))
    if not work:
        return []

    def run(item: tuple[int, Sequence[GroupSpec], str]) -> tuple[int, Merged]:
        index, groups, out = item
        if store is None:
            return index, merge_bin(groups, layout, out)
        apply_store_settings(store["settings"])
        return index, store_bin(groups, layout, out, root=store["root"],
                                instant=store["instant"])

    tag = f"evonb-merge-{uuid.uuid4().hex}"  # its tasks, if the job fails (collect_settled)
    done = dict(collect_settled(sc.parallelize(work, len(work)).map(run), tag))
    return [done[i] for i in range(len(work))]


__all__ = ["UNMERGEABLE", "GroupSpec", "MergeLayout", "Merged", "merge_bin", "merge_bins_in_tasks",
           "merge_group", "pack", "store_bin"]
