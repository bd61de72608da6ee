"""Small copy-on-write upserts and deletes rewritten by the driver, in Arrow.

An upsert or delete on a copy-on-write table rewrites every base file that holds one of its
keys. Through Spark that is a job that finds which candidate files hold the keys, then a job
that reads those files, merges them with the incoming rows in a window (a shuffle) and writes
them again: for a table of one 50 MB file, one Spark task reads, merges and writes all of it.
When the incoming rows and the candidate files (after key-range pruning) are small enough
(:func:`rewrite_limits`), the driver does the same work itself with pyarrow:

1. the incoming rows (already checked and shaped by the write, collected as Arrow in the job
   that checks them) are reduced to one row per key by the precombine rule, as the Spark path
   reduces them (:func:`evonb.spark.mor_driver.one_per_key`);
2. each candidate file is read whole, by field ID in its own schema version, by the JVM-free
   reader (several files at once), and its keys are matched with the incoming keys
   (:class:`evonb.spark.mor_driver.KeyMatcher`);
3. a file none of whose rows changes is left as it is: no incoming key in it, or (upserts)
   every stored row it holds of them beats the incoming one on the precombine column. Any
   other file is written again with its rows in their order, each replaced row in its place
   (a delete: without the deleted rows), by the writer evonb's Python workers use
   (:func:`evonb.spark.object_writer.write_arrow_files`): the same Parquet, row groups and key
   statistics. A rewritten file keeps its commit-time column; the incoming rows carry the
   write's instant;
4. the incoming keys found nowhere are new rows, written after the rows of the smallest file
   rewritten (so a small upsert does not leave a small file of its own each time, as Spark's
   merge writes them with the rewritten rows), or as a new file when no file is rewritten.

An upsert whose key is stored more than once among the candidates (rows inserted with
``evonb.write.insert_duplicates = 'allow'``) takes the Spark path, whose window picks one row
among all of them. The result is otherwise the Spark path's, row for row: the tests compare
the two on the same tables (``tests/integration/test_cow_driver.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evonb.schema.types import Type
from evonb.spark.mor_driver import (
    READ_THREADS,
    READ_THREADS_OBJECT_STORE,
    KeyMatcher,
    joinable,
    one_per_key,
)
from evonb.spark.object_writer import ROW_GROUP_BYTES_OPTION, write_arrow_files
from evonb.spark.writer import ROW_GROUP_ROWS_OPTION
from evonb.table.fileio import is_object_path
from evonb.table.fsutil import remove_data_files
from evonb.table.precombine import precombine_key
from evonb.table.snapshot import DataFile

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pyarrow as pa

REWRITE_BYTES_PROPERTY = "evonb.write.driver_rewrite.bytes"
"""Table property: the bytes of the candidate files (after key-range pruning) an upsert or
delete of a copy-on-write table may read and rewrite in the driver, at most; 0 turns the
driver path off."""
DEFAULT_REWRITE_BYTES = 128 * 1024 * 1024
REWRITE_INCOMING_PROPERTY = "evonb.write.driver_rewrite.incoming_rows"
"""Table property: the incoming rows such an upsert or delete may collect into the driver,
at most, to take the driver path; 0 turns it off."""
DEFAULT_REWRITE_INCOMING = 250_000
WRITER_OPTIONS = frozenset({ROW_GROUP_ROWS_OPTION, ROW_GROUP_BYTES_OPTION})
"""The table's Parquet writer options (``evonb.write.parquet.*``) the driver's writer honours;
a table that sets any other takes the Spark path, whose writer knows them all."""


@dataclass(frozen=True)
class RewriteLimits:
    """How much a copy-on-write upsert or delete may hold to be rewritten by the driver."""

    stored_bytes: int
    incoming_rows: int


def rewrite_limits(config: Any) -> RewriteLimits:
    """The limits of the driver path from the table's properties
    (:data:`REWRITE_BYTES_PROPERTY`, :data:`REWRITE_INCOMING_PROPERTY`)."""
    return RewriteLimits(
        stored_bytes=config.int_property(REWRITE_BYTES_PROPERTY, DEFAULT_REWRITE_BYTES),
        incoming_rows=config.int_property(REWRITE_INCOMING_PROPERTY, DEFAULT_REWRITE_INCOMING))


def takes_rewrite_path(limits: RewriteLimits, incoming_rows: int, candidates: Sequence[DataFile],
                       key_types: Sequence[Type], options: Mapping[str, str]) -> bool:
    """Whether a write of ``incoming_rows`` rows against ``candidates`` may be rewritten by
    the driver: within the limits, keys Arrow matches as Spark does
    (:func:`~evonb.spark.mor_driver.joinable`), and only Parquet options its writer honours
    (:data:`WRITER_OPTIONS`)."""
    if limits.stored_bytes <= 0 or limits.incoming_rows <= 0:
        return False
    if incoming_rows > limits.incoming_rows:
        return False
    if sum(f.bytes for f in candidates) > limits.stored_bytes:
        return False
    if any(name not in WRITER_OPTIONS for name in options):
        return False
    return all(joinable(t) for t in key_types)


@dataclass(frozen=True)
class Rewrite:
    """What the driver path wrote: the new files, and the files they replace."""

    added: list[DataFile]
    removed: list[DataFile]


def rewrite_here(root: Path, read: Callable[[DataFile], pa.Table], rows: pa.Table, *,
                 mode: str, keys: Sequence[str], precombine: str | None,
                 candidates: Sequence[DataFile], instant: str, version: str,
                 partition_columns: Sequence[str],
                 key_columns: Mapping[int, tuple[str, Type]] | None,
                 options: Mapping[str, str]) -> Rewrite | None:
    """The driver path of a copy-on-write upsert or delete (see the module docstring).

    ``read``: the stored rows of a base file in the physical columns of the write's schema
    and the commit-time column (:meth:`~evonb.spark.table.SparkTable.stored_rows_reader`);
    ``rows``: the shaped incoming rows, collected as Arrow (the same columns; deletes hold
    only the keys). An upsert writes the stored rows in the Arrow types of ``rows``, those
    Spark gives its Python workers (what they write in object storage). ``keys`` and
    ``precombine``: the physical names of the key columns and of the precombine column
    (None: the table has none). None (nothing written) when an upsert's key is stored more
    than once among the candidates: the Spark path then merges."""
    import numpy as np
    import pyarrow as pa

    from evonb.spark.precombine_arrow import beats

    if mode == "upsert":
        # Spark's types, every field nullable: Spark marks a column of a literal (or a
        # struct of literals) as never null, a stored column of the same field may hold nulls
        written = _nullable(rows.schema)
        rows = one_per_key(rows.cast(written), keys, precombine)
    matcher = KeyMatcher(rows, keys)

    def scan(f: DataFile) -> tuple[DataFile, pa.Table, np.ndarray, np.ndarray] | None:
        stored = read(f)
        positions, incoming = matcher.match(stored)
        return (f, stored, positions, incoming) if len(positions) else None

    threads = READ_THREADS_OBJECT_STORE if is_object_path(root) else READ_THREADS
    workers = max(1, min(threads, len(candidates)))
    if workers == 1:
        scanned = [scan(f) for f in candidates]
    else:
        with ThreadPoolExecutor(max_workers=workers,
                                thread_name_prefix="evonb-cow-rewrite") as pool:
            scanned = list(pool.map(scan, candidates))
    hits = [s for s in scanned if s is not None]
    found = (np.concatenate([s[3] for s in hits]) if hits else np.zeros(0, np.int64))
    if mode == "upsert" and len(np.unique(found)) < len(found):
        return None  # a key stored twice: the Spark window picks one row among them all
    outputs: list[pa.Table] = []
    removed: list[DataFile] = []
    for f, stored, positions, incoming in hits:
        if mode == "delete":
            keep = np.ones(stored.num_rows, dtype=bool)
            keep[positions] = False
            outputs.append(stored.filter(pa.array(keep)))
            removed.append(f)
            continue
        stored = stored.select(rows.column_names).cast(written)
        if precombine is not None:
            over = beats(rows.column(precombine).take(pa.array(incoming)),
                         stored.column(precombine).take(pa.array(positions)),
                         precombine_key(precombine)).to_numpy(zero_copy_only=False)
            positions, incoming = positions[over], incoming[over]
        if not len(positions):
            continue  # every stored row beats its incoming one: the file stays as it is
        order = np.arange(stored.num_rows, dtype=np.int64)
        order[positions] = stored.num_rows + np.arange(len(positions), dtype=np.int64)
        outputs.append(pa.concat_tables([stored, rows.take(pa.array(incoming))])
                       .take(pa.array(order)))
        removed.append(f)
    if mode == "upsert":
        fresh = np.ones(rows.num_rows, dtype=bool)
        fresh[found] = False
        if fresh.any():
            new = rows.filter(pa.array(fresh))
            if outputs:  # into the smallest file rewritten anyway, as Spark's merge does
                at = min(range(len(outputs)), key=lambda i: outputs[i].num_rows)
                outputs[at] = pa.concat_tables([outputs[at], new])
            else:
                outputs.append(new)
    added: list[DataFile] = []
    try:
        for table in outputs:
            if table.num_rows:
                added.extend(write_arrow_files(
                    table, root=root, instant=instant, version=version,
                    partition_columns=partition_columns, key_columns=key_columns,
                    options=options))
    except BaseException:
        remove_data_files(root, added)
        raise
    return Rewrite(added=added, removed=removed)


def _nullable(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field nullable, nested ones too (map keys stay required)."""
    import pyarrow as pa

    def field(f: pa.Field) -> pa.Field:
        return f.with_type(kind(f.type)).with_nullable(True)

    def kind(t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([field(t.field(i)) for i in range(t.num_fields)])
        if pa.types.is_map(t):
            return pa.map_(t.key_field.with_type(kind(t.key_type)), field(t.item_field))
        if pa.types.is_large_list(t):
            return pa.large_list(field(t.value_field))
        if pa.types.is_list(t):
            return pa.list_(field(t.value_field))
        return t

    return pa.schema([field(f) for f in schema], metadata=schema.metadata)


__all__ = [
    "DEFAULT_REWRITE_BYTES",
    "DEFAULT_REWRITE_INCOMING",
    "REWRITE_BYTES_PROPERTY",
    "REWRITE_INCOMING_PROPERTY",
    "WRITER_OPTIONS",
    "Rewrite",
    "RewriteLimits",
    "rewrite_here",
    "rewrite_limits",
    "takes_rewrite_path",
]
