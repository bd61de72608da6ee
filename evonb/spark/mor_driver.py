"""Small merge-on-read deltas found and written by the driver, in Arrow.

An upsert or delete on a merge-on-read table must find, for every incoming key, the base file
and row that hold it, so that its log record can name the base row it replaces (readers then
merge by position, see :mod:`evonb.spark.mor`). Through Spark that is a key scan of every
candidate base file, a join, and a job that writes the blocks: for a delta of a few thousand
keys spread over every file group, the jobs cost more than the work. When the incoming rows
and the stored rows to scan are small enough (:func:`driver_lookup_limits`), the driver does
the same work itself with pyarrow:

1. the incoming rows (already checked and shaped by the write) are collected as Arrow and
   reduced to one row per key by the precombine rule (:func:`evonb.spark.precombine_arrow.
   resolve`: the largest precombine value, on a tie the later row), as the Spark path does;
2. the key columns (and the precombine column) of each candidate base file are read by field
   ID in the file's own schema version (by the JVM-free reader of the layer above, handed
   down as :meth:`evonb.spark.table.SparkTable.stored_rows_reader`), several files at once,
   and matched with the incoming keys (:class:`KeyMatcher`: flags over the range of dense
   integer keys, a sorted search for other integer keys, else a hash join in Arrow): each
   match is a base file, a row position and the stored precombine value;
3. each match becomes a log record (does it beat the stored row? the rule of
   :func:`evonb.spark.precombine_arrow.beats`), and the records of each file group are written
   as one block by the same writer the Spark tasks use (:class:`evonb.spark.avro_log.
   BlockSink`), positions and dropped rows in its header;
4. the incoming keys found nowhere are the new rows, which go back to Spark to be written as
   new base files (skipped when there are none).

The result is the Spark path's, block for block (one block per file group instead of one per
group and task): the tests compare the two on the same tables.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from evonb.schema.schema import Schema
from evonb.schema.types import DOUBLE, FLOAT, PrimitiveType, Type
from evonb.spark.arrow_collect import key_list, nullable_schema, relaxed_columns, to_arrow
from evonb.spark.avro_log import (
    BASE,
    DELETED,
    OVER,
    POS,
    arrow_schema,
    block_struct,
    write_blocks_here,
)
from evonb.table.fileio import is_object_path
from evonb.table.layout import META_COMMIT_TIME
from evonb.table.precombine import precombine_key
from evonb.table.snapshot import DataFile

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable

    import numpy as np
    import pyarrow as pa
    from pyspark.sql import DataFrame

T = TypeVar("T")

DRIVER_ROWS_PROPERTY = "evonb.mor.driver_lookup.rows"
"""Table property: the stored rows (of the candidate base files) a merge-on-read upsert or
delete may scan for its keys in the driver, at most; 0 turns the driver path off."""
DEFAULT_DRIVER_ROWS = 20_000_000
DRIVER_INCOMING_PROPERTY = "evonb.mor.driver_lookup.incoming_rows"
"""Table property: the incoming rows a merge-on-read upsert or delete may collect into the
driver, at most, to take the driver path; 0 turns it off."""
DEFAULT_DRIVER_INCOMING = 250_000
DRIVER_UPLOADS_PROPERTY = "evonb.mor.driver_lookup.uploads"
"""Table property: in object storage, the log blocks the driver stores at once (a request
each), from as many threads; 1: one after another."""
DEFAULT_DRIVER_UPLOADS = 8
DRIVER_COLLECT_BYTES = 64 * 1024 * 1024
"""Incoming rows Spark estimates larger than this are not collected to try the driver path
(their estimate is the size of the files or data they come from)."""
READ_THREADS = 4
"""Candidate base files whose keys the driver reads at once, whatever the number of cores:
a read waits on the file system and decodes in pyarrow without the GIL, so on 2 cores 4
threads read the keys of 50 files in about 60 ms where 2 took 70 ms."""
READ_THREADS_OBJECT_STORE = 16
"""The same in object storage, where each read waits on a few requests to the store."""
DENSE_SPAN = 1 << 26
DENSE_RATIO = 256
"""A single integer key whose incoming values span at most ``DENSE_SPAN`` values and at most
``DENSE_RATIO`` times their count is matched with one flag per value of the span (at most
64 MiB), instead of a sorted search per stored key."""
_IN = "__evo_in"
BASE_PRE = "__evo_base_pre"
"""The stored precombine value's column in the key query (the name the Spark path uses)."""


def key_query(config: Any, target: Schema, layout: Any) -> Schema:
    """What a merge-on-read delta reads of the stored rows to find its keys: the key columns
    of ``target`` under their physical names (``layout``) and, when the precombine column is
    not a key, the precombine column named :data:`BASE_PRE`, by field ID."""
    fields = [target.field_by_id(i).replace(name=layout.name(i)) for i in config.primary_key_ids]
    pre_id = config.precombine_id
    if pre_id is not None and pre_id not in config.primary_key_ids:
        fields.append(target.field_by_id(pre_id).replace(name=BASE_PRE))
    return Schema(fields=tuple(fields))


@dataclass(frozen=True)
class DriverLimits:
    """How much a merge-on-read delta may hold to be looked up and written by the driver."""

    stored_rows: int
    incoming_rows: int
    uploads: int = DEFAULT_DRIVER_UPLOADS


def driver_lookup_limits(config: Any) -> DriverLimits:
    """The limits of the driver path from the table's properties (:data:`DRIVER_ROWS_PROPERTY`,
    :data:`DRIVER_INCOMING_PROPERTY`, :data:`DRIVER_UPLOADS_PROPERTY`)."""
    return DriverLimits(
        stored_rows=config.int_property(DRIVER_ROWS_PROPERTY, DEFAULT_DRIVER_ROWS),
        incoming_rows=config.int_property(DRIVER_INCOMING_PROPERTY, DEFAULT_DRIVER_INCOMING),
        uploads=max(1, config.int_property(DRIVER_UPLOADS_PROPERTY, DEFAULT_DRIVER_UPLOADS)))


def joinable(t: Type) -> bool:
    """Whether Arrow's hash join matches values of key type ``t`` exactly as Spark's join
    does: primitive types, except floating point (Spark treats -0.0 and 0.0, and every NaN,
    as equal keys)."""
    return isinstance(t, PrimitiveType) and t not in (FLOAT, DOUBLE)


def takes_driver_path(limits: DriverLimits, incoming_rows: int | None,
                      candidates: Sequence[DataFile], key_types: Sequence[Type]) -> bool:
    """Whether a delta of ``incoming_rows`` rows (None: not counted) against ``candidates``
    may be looked up by the driver (which also needs the table's
    :meth:`~evonb.spark.table.SparkTable.stored_rows_reader`)."""
    if incoming_rows is None or limits.stored_rows <= 0 or limits.incoming_rows <= 0:
        return False
    if incoming_rows > limits.incoming_rows or not candidates:
        return False
    if sum(f.rows for f in candidates) > limits.stored_rows:
        return False
    return all(joinable(t) for t in key_types)


@dataclass(frozen=True)
class DriverDelta:
    """What the driver path wrote: the log blocks, and the incoming rows whose keys no base
    file holds (to be written as new base files; None when there are none)."""

    logs: list[DataFile]
    fresh: DataFrame | None


def write_delta_here(root: Any, read: Callable[[DataFile], pa.Table], incoming: DataFrame,
                     collected: pa.Table | None, *, mode: str, keys: Sequence[str],
                     precombine: str | None, key_query: Schema, physical: Schema,
                     candidates: Sequence[DataFile], bases: Sequence[DataFile], instant: str,
                     fmt: str, codec: str, positions: bool, uploads: int = 1,
                     stale: Callable[[pa.Table], set[tuple[tuple[Any, ...], str]]] | None = None
                     ) -> DriverDelta:
    """The driver path of :func:`evonb.spark.mor.write_delta` (see the module docstring).

    ``root``: the table's folder; ``read``: the stored rows of a base file in the columns of
    ``key_query`` (:meth:`~evonb.spark.table.SparkTable.stored_rows_reader`); ``incoming``:
    the shaped incoming rows (``collected``: the same rows collected as Arrow already, or
    None) (physical columns of ``physical``, the schema
    version the blocks are written in; deletes hold only the keys); ``precombine``: the
    precombine column's physical name (None: the table has none); ``key_query``: the key
    columns (physical names) and, when the precombine column is not a key, the precombine
    column named :data:`BASE_PRE`, by field ID; ``uploads``: the blocks stored at once in
    object storage (:func:`~evonb.spark.avro_log.write_blocks_here`); ``stale``: of the
    stored rows (key columns, :data:`BASE`) of keys an upsert found in more than one base
    file, those not to write a record for (:func:`evonb.spark.mor.stale_matches`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    spark = incoming.sparkSession
    tz = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    block_arrow = nullable_schema(arrow_schema(block_struct(physical), tz))
    rows = to_arrow(incoming) if collected is None else collected
    typed = set(block_arrow.names)
    rows = rows.cast(pa.schema([block_arrow.field(f.name) if f.name in typed else f
                                for f in rows.schema]))
    rows = one_per_key(rows, keys, precombine if mode == "upsert" else None)
    located = _locate(read, rows, keys, key_query, candidates, in_store=is_object_path(root))
    if mode == "upsert" and stale is not None and located.num_rows:
        located = _without_stale(located, rows, keys, stale)
    logs: list[DataFile] = []
    if located.num_rows:
        block = _blocks(located, rows, block_arrow, mode=mode, precombine=precombine,
                        instant=instant, positions=positions)
        logs = write_blocks_here(block, root=root, instant=instant, physical=physical,
                                 fmt=fmt, codec=codec,
                                 base_rows={f.path: f.rows for f in bases},
                                 uploads=uploads)
    fresh = None
    if mode == "upsert":
        found = pc.unique(located.column(_IN)) if located.num_rows else pa.array([], pa.int64())
        new = rows.filter(pc.invert(pc.is_in(pa.array(range(rows.num_rows), pa.int64()),
                                             value_set=found)))
        if new.num_rows:
            fresh = spark.createDataFrame(new, schema=relaxed_columns(incoming.schema))
    return DriverDelta(logs=[f for f in logs if f.rows > 0], fresh=fresh)


def one_per_key(rows: pa.Table, keys: Sequence[str], precombine: str | None) -> pa.Table:
    """One row per key: the largest precombine value, on a tie the later row (deletes: any
    row of the key, they hold only the key)."""
    import pyarrow as pa

    from evonb.spark.precombine_arrow import resolve

    if rows.num_rows <= 1:
        return rows
    found = resolve({k: rows.column(k) for k in keys},
                    pa.array(range(rows.num_rows), pa.int64()),
                    pa.repeat(pa.scalar(False), rows.num_rows),
                    rows.column(precombine) if precombine is not None else None)
    return rows if found.rows is None else rows.take(found.rows)


class KeyMatcher:
    """The incoming keys, ready to be looked up in one stored file after another. A single
    key of integers, dates or timestamps is sorted (numpy), and when its values are dense
    (:data:`DENSE_SPAN`, :data:`DENSE_RATIO`) also flagged, one flag per value of its range;
    other keys are looked up with a hash join in Arrow."""

    def __init__(self, rows: pa.Table, keys: Sequence[str]) -> None:
        import numpy as np
        import pyarrow as pa

        from evonb.spark.precombine_arrow import one_array

        self.keys = list(keys)
        self.wanted = rows.select(self.keys).append_column(
            _IN, pa.array(np.arange(rows.num_rows, dtype=np.int64)))
        self.sorted: np.ndarray | None = None
        self.mask: np.ndarray | None = None  # dense keys: one flag per value of their range
        if len(self.keys) == 1:
            column = one_array(rows.column(self.keys[0]))
            if _numeric(column.type) and not column.null_count:
                values = _as_int64(column)
                self.order = np.argsort(values, kind="stable")
                self.sorted = values[self.order]
                if len(values):
                    self.low, self.high = int(self.sorted[0]), int(self.sorted[-1])
                    span = self.high - self.low + 1
                    if span <= min(DENSE_SPAN, DENSE_RATIO * len(values)):
                        self.mask = np.zeros(span, dtype=bool)
                        self.mask[self.sorted - self.low] = True

    def match(self, stored: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        """The positions of the stored rows whose key comes in, and for each the incoming
        row's index."""
        import numpy as np
        import pyarrow as pa

        from evonb.spark.precombine_arrow import one_array

        if self.sorted is not None:
            column = one_array(stored.column(self.keys[0]))
            if _numeric(column.type) and not column.null_count:
                values = _as_int64(column)
                if self.mask is not None:  # flags first: a look-up per stored key, no search
                    inside = np.flatnonzero((values >= self.low) & (values <= self.high))
                    hit = inside[self.mask[values[inside] - self.low]]
                    return hit, self.order[np.searchsorted(self.sorted, values[hit])]
                at = np.searchsorted(self.sorted, values)
                at[at == len(self.sorted)] = 0
                hit = np.flatnonzero(self.sorted[at] == values) if len(self.sorted) else (
                    np.zeros(0, np.int64))
                return hit, self.order[at[hit]]
        table = pa.table({**{k: stored.column(k) for k in self.keys},
                          POS: pa.array(np.arange(stored.num_rows, dtype=np.int64))})
        table = table.cast(pa.schema([self.wanted.schema.field(k) for k in self.keys]
                                     + [pa.field(POS, pa.int64())]))
        hits = table.join(self.wanted, keys=self.keys, join_type="inner", use_threads=False)
        return (hits.column(POS).to_numpy().astype(np.int64),
                hits.column(_IN).to_numpy().astype(np.int64))


def _numeric(t: pa.DataType) -> bool:
    """Whether keys of Arrow type ``t`` compare as their 64-bit integer values."""
    import pyarrow as pa

    return pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)


def _as_int64(values: pa.Array) -> np.ndarray:
    import numpy as np
    import pyarrow as pa

    if pa.types.is_date32(values.type):
        values = values.cast(pa.int32())
    elif not pa.types.is_integer(values.type):
        values = values.cast(pa.int64())
    return values.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)


def _locate(read: Callable[[DataFile], pa.Table], rows: pa.Table, keys: Sequence[str],
            key_query: Schema, candidates: Sequence[DataFile], *, in_store: bool = False
            ) -> pa.Table:
    """Every (incoming row, stored row) pair of one key: the incoming row's index in ``rows``
    (:data:`_IN`), the base file (:data:`BASE`), the stored row's position (:data:`POS`) and,
    with a precombine column that is not a key, its stored value (:data:`BASE_PRE`).
    ``in_store``: the files are in object storage (more of them are read at once)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    matcher = KeyMatcher(rows, keys)
    pre = BASE_PRE if any(f.name == BASE_PRE for f in key_query.fields) else None

    def scan(f: DataFile) -> pa.Table | None:
        stored = read(f)
        positions, incoming = matcher.match(stored)
        if not len(positions):
            return None
        found = {_IN: pa.array(incoming), POS: pa.array(positions),
                 BASE: pa.repeat(pa.scalar(f.path, pa.string()), len(positions))}
        if pre is not None:
            found[pre] = pc.take(stored.column(pre), pa.array(positions))
        return pa.table(found)

    found = scan_files(scan, candidates, in_store=in_store, thread_name="evonb-key-lookup")
    parts = [t for t in found if t is not None]
    if not parts:
        return pa.table({_IN: pa.array([], pa.int64()), POS: pa.array([], pa.int64()),
                         BASE: pa.array([], pa.string())})
    return pa.concat_tables(parts)


def scan_files(scan: Callable[[DataFile], T], candidates: Sequence[DataFile], *,
               in_store: bool, thread_name: str) -> list[T]:
    """``scan`` of each of ``candidates``, in their order, :data:`READ_THREADS` at once
    (:data:`READ_THREADS_OBJECT_STORE` for files in object storage)."""
    threads = READ_THREADS_OBJECT_STORE if in_store else READ_THREADS
    workers = max(1, min(threads, len(candidates)))
    if workers == 1:
        return [scan(f) for f in candidates]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=thread_name) as pool:
        return list(pool.map(scan, candidates))


def _without_stale(located: pa.Table, rows: pa.Table, keys: Sequence[str],
                   stale: Callable[[pa.Table], set[tuple[tuple[Any, ...], str]]]) -> pa.Table:
    """``located`` without the matches ``stale`` names among those of incoming rows found in
    more than one base file (none: ``stale`` is not asked)."""
    import numpy as np
    import pyarrow as pa

    at_in = located.column(_IN).to_numpy()
    found_in, count = np.unique(at_in, return_counts=True)
    several = np.flatnonzero(np.isin(at_in, found_in[count > 1]))
    if not len(several):
        return located
    part = located.take(pa.array(several))
    found = rows.select(list(keys)).take(part.column(_IN)).append_column(
        BASE, part.column(BASE))
    drop = stale(found)
    if not drop:
        return located
    pairs = zip(zip(*(key_list(found.column(k)) for k in keys), strict=True),
                found.column(BASE).to_pylist(), strict=True)
    keep = np.ones(located.num_rows, dtype=bool)
    keep[[int(several[j]) for j, pair in enumerate(pairs) if pair in drop]] = False
    return located.filter(pa.array(keep))


def _blocks(located: pa.Table, rows: pa.Table, block_arrow: pa.Schema, *, mode: str,
            precombine: str | None, instant: str, positions: bool) -> pa.Table:
    """The log records of the matches ``located`` (of the incoming ``rows``), in the blocks'
    columns (``block_arrow``) plus :data:`BASE`, sorted by base file."""
    import pyarrow as pa

    from evonb.spark.precombine_arrow import beats

    located = located.sort_by([(BASE, "ascending"), (POS, "ascending")])
    taken = rows.take(located.column(_IN))
    n = located.num_rows
    if mode == "delete" or precombine is None or BASE_PRE not in located.column_names:
        over = pa.repeat(pa.scalar(True), n)  # a delete, no precombine column, or it is a key
    else:
        incoming = (taken.column(precombine) if precombine in taken.column_names
                    else pa.nulls(n, located.schema.field(BASE_PRE).type))
        stored = located.column(BASE_PRE).cast(incoming.type)
        over = beats(incoming, stored, precombine_key(BASE_PRE))
    hidden = {META_COMMIT_TIME: pa.repeat(pa.scalar(instant, pa.string()), n),
              POS: located.column(POS) if positions else pa.nulls(n, pa.int64()),
              OVER: over, DELETED: pa.repeat(pa.scalar(mode == "delete"), n)}
    columns = []
    for field in block_arrow:
        if field.name in hidden:
            columns.append(hidden[field.name])
        elif field.name in taken.column_names:
            columns.append(taken.column(field.name))
        else:  # a delete holds only its key
            columns.append(pa.nulls(n, field.type))
    columns.append(located.column(BASE))
    return pa.Table.from_arrays(columns, schema=block_arrow.append(pa.field(BASE, pa.string())))


__all__ = [
    "DEFAULT_DRIVER_INCOMING",
    "DEFAULT_DRIVER_ROWS",
    "DEFAULT_DRIVER_UPLOADS",
    "DRIVER_COLLECT_BYTES",
    "DRIVER_INCOMING_PROPERTY",
    "DRIVER_ROWS_PROPERTY",
    "DRIVER_UPLOADS_PROPERTY",
    "DriverDelta",
    "DriverLimits",
    "KeyMatcher",
    "driver_lookup_limits",
    "joinable",
    "one_per_key",
    "scan_files",
    "takes_driver_path",
    "write_delta_here",
]
