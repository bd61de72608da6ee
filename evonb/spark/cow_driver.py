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
2. the key (and precombine) columns of each candidate file are read, by field ID in the
   file's own schema version, by the JVM-free reader (several files at once), and matched
   with the incoming keys (:class:`evonb.spark.mor_driver.KeyMatcher`);
3. a file none of whose rows changes is left as it is: no incoming key in it, or (upserts)
   every stored row it holds of them beats the incoming one on the precombine column. Any
   other file is read whole and written again a row group at a time (a rewrite holds about
   a row group of the file in memory), its rows in their order, each replaced row in its
   place (a delete: without the deleted rows), by the writer evonb's Python workers use
   (:func:`evonb.spark.object_writer.write_arrow_files`): the same Parquet, row groups and key
   statistics. A rewritten file keeps its commit-time column; the incoming rows carry the
   write's instant. The next row group is read and merged in a thread of its own while the
   current one is encoded (:func:`evonb.table.read_ahead.read_ahead`);
4. the incoming keys found nowhere are new rows, written after the rows of the smallest file
   rewritten (so a small upsert does not leave a small file of its own each time, as Spark's
   merge writes them with the rewritten rows), or as a new file when no file is rewritten.

An upsert whose key is stored more than once among the candidates (rows inserted with
``evonb.write.insert_duplicates = 'allow'``) takes the Spark path, whose window picks one row
among all of them. The result is otherwise the Spark path's, row for row: the tests compare
the two on the same tables (``tests/integration/test_cow_driver.py``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evonb.schema.types import Type
from evonb.spark.arrow_collect import nullable_schema
from evonb.spark.mor_driver import (
    BASE_PRE,
    KeyMatcher,
    joinable,
    one_per_key,
    scan_files,
)
from evonb.spark.object_writer import ROW_GROUP_BYTES_OPTION, write_arrow_files
from evonb.spark.writer import ROW_GROUP_ROWS_OPTION
from evonb.table.fileio import is_object_path
from evonb.table.fsutil import remove_data_files
from evonb.table.precombine import precombine_key
from evonb.table.read_ahead import read_ahead
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
READ_AHEAD_TABLES = 4
"""Tables of a rewritten file read and merged ahead of the one being encoded: about a row
group (the writer encodes a row group of four of the reader's tables at once; one table ahead
gained nothing, eight little more than four: ``docs/benchmarks.md``)."""
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


def rewrite_here(root: Path, read_keys: Callable[[DataFile], pa.Table],
                 read: Callable[[DataFile], Iterator[pa.Table]], rows: pa.Table, *,
                 mode: str, keys: Sequence[str], precombine: str | None,
                 candidates: Sequence[DataFile], instant: str, version: str,
                 partition_columns: Sequence[str],
                 key_columns: Mapping[int, tuple[str, Type]] | None,
                 options: Mapping[str, str]) -> Rewrite | None:
    """The driver path of a copy-on-write upsert or delete (see the module docstring).

    ``read_keys``: the key columns of a base file's stored rows and, when the precombine
    column is not a key, that column named :data:`~evonb.spark.mor_driver.BASE_PRE`
    (:func:`~evonb.spark.mor_driver.key_query`); ``read``: its stored rows in the physical
    columns of the write's schema and the commit-time column, a table at a time, in the
    file's order (:meth:`~evonb.spark.table.SparkTable.stored_batches_reader`); ``rows``: the
    shaped incoming rows, collected as Arrow (the same columns; deletes hold only the keys).
    An upsert writes the stored rows in the Arrow types of ``rows``, those Spark gives its
    Python workers (what they write in object storage). ``keys`` and ``precombine``: the
    physical names of the key columns and of the precombine column (None: the table has
    none). The keys of every candidate are matched first; only the files that change are
    then read whole, streamed into the writer a table at a time, so a rewrite holds about a
    row group of each file in memory, not the file. None (nothing written) when an upsert's
    key is stored more than once among the candidates: the Spark path then merges."""
    import numpy as np
    import pyarrow as pa

    from evonb.spark.precombine_arrow import beats

    written = None
    if mode == "upsert":
        # Spark's types, every field nullable: Spark marks a column of a literal (or a
        # struct of literals) as never null, a stored column of the same field may hold nulls
        written = nullable_schema(rows.schema)
        rows = one_per_key(rows.cast(written), keys, precombine)
    matcher = KeyMatcher(rows, keys)

    def scan(f: DataFile) -> tuple[DataFile, np.ndarray, np.ndarray, pa.Array | None] | None:
        stored = read_keys(f)
        positions, incoming = matcher.match(stored)
        if not len(positions):
            return None
        pre = (stored.column(BASE_PRE).take(pa.array(positions))
               if BASE_PRE in stored.column_names else None)
        return f, positions, incoming, pre

    scanned = scan_files(scan, candidates, in_store=is_object_path(root),
                         thread_name="evonb-cow-rewrite")
    hits = [s for s in scanned if s is not None]
    found = (np.concatenate([s[2] for s in hits]) if hits else np.zeros(0, np.int64))
    if mode == "upsert" and len(np.unique(found)) < len(found):
        return None  # a key stored twice: the Spark window picks one row among them all
    changes: list[tuple[DataFile, np.ndarray, np.ndarray]] = []
    for f, positions, incoming, pre in hits:
        if mode == "upsert" and precombine is not None and pre is not None:
            new_pre = rows.column(precombine).take(pa.array(incoming))
            over = beats(new_pre, pre.cast(new_pre.type),
                         precombine_key(precombine)).to_numpy(zero_copy_only=False)
            positions, incoming = positions[over], incoming[over]
        if len(positions):  # else every stored row beats its incoming one: the file stays
            changes.append((f, positions, incoming))
    fresh: pa.Table | None = None
    if mode == "upsert":
        unseen = np.ones(rows.num_rows, dtype=bool)
        unseen[found] = False
        if unseen.any():
            fresh = rows.filter(pa.array(unseen))
    # the new rows go after the rows of the smallest file rewritten, as Spark's merge writes
    # them with the rewritten rows (else a file of their own)
    smallest = (min(range(len(changes)), key=lambda i: changes[i][0].rows)
                if changes else None)
    added: list[DataFile] = []

    def write(tables: Iterable[pa.Table]) -> None:
        added.extend(write_arrow_files(
            tables, root=root, instant=instant, version=version,
            partition_columns=partition_columns, key_columns=key_columns, options=options))

    try:
        for i, (f, positions, incoming) in enumerate(changes):
            if mode == "delete":
                tables = _deleted(read(f), positions)
            else:
                tables = _replaced((t.select(rows.column_names).cast(written)
                                    for t in read(f)), positions, rows, incoming)
            # the next row group read and merged while this one is encoded (both release
            # the GIL): two cores instead of one
            write(itertools.chain(read_ahead(tables, depth=READ_AHEAD_TABLES,
                                             name="evonb-cow-read-ahead"),
                                  [fresh] if i == smallest and fresh else []))
        if fresh is not None and smallest is None:
            write([fresh])
    except BaseException:
        remove_data_files(root, added)
        raise
    return Rewrite(added=added, removed=[f for f, _, _ in changes])


def _replaced(stored: Iterable[pa.Table], positions: np.ndarray, rows: pa.Table,
              incoming: np.ndarray) -> Iterator[pa.Table]:
    """The tables of ``stored`` (a file's rows in order) with the row at each of
    ``positions`` (in the file) replaced by the row of ``rows`` at the matching index of
    ``incoming``, in place. A table without a replaced row passes as it is (no copy); any
    other is taken from itself and its replacements, so each copy is a table's size, not the
    file's (one take over a 5,000,000-row file and its replacements cost 0.7 s in fresh
    memory, against 0.14 s a table at a time)."""
    import numpy as np
    import pyarrow as pa

    order = np.argsort(positions, kind="stable")
    positions, incoming = positions[order], incoming[order]
    replacements = rows.take(pa.array(incoming))
    start = done = 0
    for table in stored:
        end = start + table.num_rows
        upto = int(np.searchsorted(positions, end))
        if upto > done:
            at = positions[done:upto] - start
            take = np.arange(table.num_rows, dtype=np.int64)
            take[at] = table.num_rows + np.arange(len(at), dtype=np.int64)
            both = pa.concat_tables([table, replacements.slice(done, upto - done)])
            table = both.combine_chunks().take(pa.array(take))
        yield table
        start, done = end, upto


def _deleted(stored: Iterable[pa.Table], positions: np.ndarray) -> Iterator[pa.Table]:
    """The tables of ``stored`` (a file's rows in order) without the rows at ``positions``."""
    import numpy as np
    import pyarrow as pa

    positions = np.sort(positions)
    start = 0
    for table in stored:
        end = start + table.num_rows
        at = positions[np.searchsorted(positions, start):np.searchsorted(positions, end)]
        if len(at):
            keep = np.ones(table.num_rows, dtype=bool)
            keep[at - start] = False
            table = table.filter(pa.array(keep))
        yield table
        start = end


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
