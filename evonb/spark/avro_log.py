"""Merge-on-read log blocks: written and read in Python workers (fastavro or pyarrow).

A log block holds the upserts and deletes one commit made to one file group, in the physical
layout of the schema version it was written with. Its name says which base file it belongs to
and which commit wrote it::

    <partition>/.<base-file-stem>.log.<instant>_<task>.avro      (or .parquet)

Avro blocks carry the whole physical schema in their header, with ``field-id`` on every field,
plus the header metadata ``evonb.version``, ``evonb.instant`` and ``evonb.base`` (and, see
``docs/format.md``, the positions of the base rows the block replaces and every record's byte
length). Every record has hidden fields besides the table's columns: ``_evo_commit_time`` (the
instant), ``_evo_pos`` (the base row position of its key), ``_evo_over`` (whether it beats the
base row) and ``_evo_deleted`` (the delete marker; a delete record holds only its key).
Blocks are written by Spark tasks (``mapInArrow``: one block per file group and task, stats
returned to the driver), or by the driver for a delta it looked up itself
(:func:`write_blocks_here`); flat Avro blocks are encoded from the Arrow columns at once
(:mod:`evonb.spark.avro_encode`), others record by record with fastavro. They are read by
Spark tasks too: here, in Python workers that resolve each
file group per key, or by Spark's own reader inside the JVM for groups that need no resolution
(:mod:`evonb.spark.block_scan`). Names start with a dot, so directory listings of Spark and
Hadoop skip them; their reader is evonb.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from evonb.errors import EvoError, SchemaEvolutionError
from evonb.schema.schema import Schema
from evonb.schema.types import (
    BIGINT,
    BOOLEAN,
    STRING,
    ArrayType,
    MapType,
    NestedField,
    StructType,
    Type,
)
from evonb.spark.arrow_collect import rows_with_times_as_numbers
from evonb.spark.avro_encode import CODECS as ENCODE_CODECS
from evonb.spark.avro_encode import data_blocks, encode_records, field_kinds, fits
from evonb.spark.avro_fast import (
    LENGTHS_KEY,
    container_sync,
    decode_lengths,
    encode_lengths,
    read_columnar,
    read_header,
)
from evonb.spark.columns import spark_read_type
from evonb.spark.parquet_encoding import dictionary_columns
from evonb.spark.task_attempts import note_if_retried
from evonb.table.avro_records import reader_with_times_as_numbers
from evonb.table.file_checks import file_error
from evonb.table.fileio import file_io, is_object_path
from evonb.table.layout import META_COMMIT_TIME
from evonb.table.names import LOG_FORMATS, log_block_path, log_block_temp, parse_log_block
from evonb.table.snapshot import DataFile
from evonb.table.store_settings import apply_store_settings, store_settings
from evonb.table.timeline import instant_on_timeline

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

DELETED = "_evo_deleted"
"""Hidden log column: true on delete records."""
POS = "_evo_pos"
"""Hidden log column: the row position (``_metadata.row_index``) of the record's key in the
block's base file; null when unknown (blocks written without positions)."""
OVER = "_evo_over"
"""Hidden log column: true when the record beats the base row of its key (its precombine value
is at least the base row's, or the base row's is null, or the table has no precombine column:
:func:`evonb.spark.precombine.beats`); always true on deletes."""
BASE = "__evo_base"
"""Column of the rows handed to :func:`write_log_blocks`: the base file (relative path)."""
COMMIT_TIME_ID = 2**31 - 1
DELETED_ID = 2**31 - 3
POS_ID = 2**31 - 6
OVER_ID = 2**31 - 7
DROP_KEY = "evonb.drop"
"""Block header metadata: the positions of the base rows the block replaces or deletes (rows
whose key has a delete or a record that beats the base row), see :func:`encode_positions`."""
BASE_ROWS_KEY = "evonb.base.rows"
"""Block header metadata: the row count of the base file the positions refer to."""
POSITIONS_PROPERTY = "evonb.mor.log.positions"
FORMATS = LOG_FORMATS
LOG_FORMAT_PROPERTY = "evonb.mor.log_format"
AVRO_CODEC_PROPERTY = "evonb.mor.avro.codec"

SYNC_INTERVAL = 16000
"""Bytes of records per Avro data block (fastavro's default)."""
Converter = Callable[[Any], Any] | None


# ---------------------------------------------------------------------------------- names
log_path = log_block_path
"""The relative path of the log block of ``base`` written by ``instant`` in ``task``
(:func:`evonb.table.names.log_block_path`)."""
parse_log_name = parse_log_block
"""``(base stem, instant, task, format)`` of a log block's file name, or None
(:func:`evonb.table.names.parse_log_block`)."""


# --------------------------------------------------------------------------------- schemas
def meta_fields() -> tuple[NestedField, ...]:
    """The hidden fields of every log record (the delete marker last)."""
    return (NestedField(COMMIT_TIME_ID, META_COMMIT_TIME, STRING),
            NestedField(POS_ID, POS, BIGINT),
            NestedField(OVER_ID, OVER, BOOLEAN),
            NestedField(DELETED_ID, DELETED, BOOLEAN))


def block_struct(physical: Schema) -> StructType:
    """The columns of a log block: the physical columns (all nullable: a delete record holds
    only its key) and the hidden fields."""
    return StructType((*(f.replace(nullable=True) for f in physical.fields), *meta_fields()))


def block_avro_schema(physical: Schema) -> dict[str, Any]:
    """The Avro schema of a log block of ``physical`` (a schema version with physical names).

    Raises :class:`SchemaEvolutionError` when Avro cannot express it (maps with non-string keys).
    """
    top = Schema(fields=tuple(f.replace(nullable=True) for f in physical.fields),
                 version_id=physical.version_id, max_column_id=physical.max_column_id)
    avro = top.to_avro(name="evonb_log_block")
    avro["fields"].extend([
        {"name": META_COMMIT_TIME, "type": ["null", "string"], "default": None,
         "field-id": COMMIT_TIME_ID},
        {"name": POS, "type": ["null", "long"], "default": None, "field-id": POS_ID},
        {"name": OVER, "type": ["null", "boolean"], "default": None, "field-id": OVER_ID},
        {"name": DELETED, "type": ["null", "boolean"], "default": None, "field-id": DELETED_ID},
    ])
    return avro


def avro_supported(physical: Schema) -> bool:
    """Whether a schema version can be logged in Avro (map keys must be strings there)."""
    try:
        block_avro_schema(physical)
    except SchemaEvolutionError:
        return False
    return True


# ------------------------------------------------------------------------------ converters
def _branch(avro: Any) -> Any:
    """The non-null branch of a ``["null", T]`` union."""
    if isinstance(avro, list):
        rest = [b for b in avro if b != "null"]
        return rest[0] if rest else "null"
    return avro


def _record_fields(avro: Any) -> list[dict[str, Any]]:
    avro = _branch(avro)
    return avro.get("fields", []) if isinstance(avro, dict) else []


def _writer(t: Type, avro: Any) -> Converter:
    """Arrow ``to_pylist`` value of type ``t`` -> fastavro datum (None: as it is)."""
    avro = _branch(avro)
    if isinstance(t, StructType):
        by_id = {int(a["field-id"]): a for a in _record_fields(avro) if "field-id" in a}
        parts = [(f.name, by_id[f.id]["name"], _writer(f.type, by_id[f.id]["type"]))
                 for f in t.fields]
        if all(p == a and c is None for p, a, c in parts):
            return None

        def struct(v: Any) -> Any:
            if v is None:
                return None
            return {a: (c(v.get(p)) if c else v.get(p)) for p, a, c in parts}
        return struct
    if isinstance(t, ArrayType):
        el = _writer(t.element.type, avro["items"])
        if el is None:
            return None
        return lambda v: None if v is None else [el(x) for x in v]
    if isinstance(t, MapType):
        val = _writer(t.value.type, avro["values"])

        def mapping(v: Any) -> Any:
            if v is None:
                return None
            items = v.items() if isinstance(v, dict) else v
            return {k: (val(x) if val else x) for k, x in items}
        return mapping
    return None


def _reader(t: Type, avro: Any) -> Converter:
    """fastavro datum of the block's own schema ``avro`` -> a value of ``t`` for pyarrow; fields
    are matched by field ID (a member the block lacks reads null)."""
    avro = _branch(avro)
    if isinstance(t, StructType):
        by_id = {int(a["field-id"]): a for a in _record_fields(avro) if "field-id" in a}
        parts = []
        for f in t.fields:
            a = by_id.get(f.id)
            parts.append((f.name, a["name"] if a else None, _reader(f.type, a["type"]) if a
                          else None))
        if all(p == a and c is None for p, a, c in parts) and len(by_id) == len(parts):
            return None

        def struct(v: Any) -> Any:
            if v is None:
                return None
            return {p: (None if a is None else c(v.get(a)) if c else v.get(a))
                    for p, a, c in parts}
        return struct
    if isinstance(t, ArrayType):
        el = _reader(t.element.type, avro["items"])
        if el is None:
            return None
        return lambda v: None if v is None else [el(x) for x in v]
    if isinstance(t, MapType):
        val = _reader(t.value.type, avro["values"])
        if val is None:
            return None
        return lambda v: None if v is None else {k: val(x) for k, x in v.items()}
    return None


# ------------------------------------------------------------------------------ positions
def encode_positions(positions: Any) -> str:
    """Sorted distinct row positions as header text (their gaps, as :func:`encode_lengths`)."""
    import numpy as np

    pos = np.unique(np.asarray(positions, dtype=np.int64))
    return encode_lengths(np.diff(pos, prepend=0))


def decode_positions(text: str | bytes) -> Any:
    import numpy as np

    return np.cumsum(decode_lengths(text))


def block_header(path: str) -> dict[str, str]:
    """The header metadata of a log block (Avro header or Parquet key-value metadata)."""
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        with file_io().open_data(path) as fh:
            meta = pq.read_metadata(fh).metadata or {}
        return {k.decode(): v.decode() for k, v in meta.items()}
    try:
        meta = read_header(path)
    except ValueError as exc:  # _Unsupported: not an Avro container file
        raise ValueError(f"{path}: {exc}") from exc
    return {k: v.decode("utf-8", "replace") for k, v in meta.items()}


# --------------------------------------------------------------------------------- writing
def _relative(url: str, root: str) -> str:
    local = unquote(urlparse(url).path) if url.startswith("file:") else url
    return os.path.relpath(os.path.realpath(local), root).replace(os.sep, "/")


def arrow_schema(struct: StructType, tz: str) -> pa.Schema:
    """The Arrow schema of ``struct`` as Spark exchanges it with Python (timestamps in ``tz``)."""
    from pyspark.sql.pandas.types import to_arrow_schema


    return to_arrow_schema(spark_read_type(struct), timezone=tz)


def write_log_blocks(
    df: DataFrame,
    *,
    root: Path,
    instant: str,
    physical: Schema,
    fmt: str = "avro",
    tasks: int = 1,
    codec: str = "null",
    base_rows: dict[str, int] | None = None,
) -> list[DataFile]:
    """Write ``df`` as log blocks of commit ``instant``, one per file group and task.

    ``df`` has the columns of :func:`block_struct` (``physical``: the schema version with
    physical names) and :data:`BASE`, the base file of each row (a path relative to the table
    root, or the ``file:`` URL Spark reports for it). Blocks are written by the tasks straight
    into the table folder (under a temporary name, then renamed; in object storage, into a
    local temporary file, then stored with one request under the final name); their stats
    come back to the driver. Nothing is visible to readers until the commit lists the
    blocks.

    When every record of a block has a position (:data:`POS`) and ``base_rows`` gives its base
    file's row count, the block's header lists the base positions it replaces or deletes
    (:data:`DROP_KEY`) and that row count (:data:`BASE_ROWS_KEY`): readers merge such blocks by
    position (see :mod:`evonb.spark.mor`).
    """
    from pyspark.sql import functions as F

    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; expected one of {FORMATS}")
    struct = block_struct(physical)
    names = [f.name for f in struct.fields]
    avro = block_avro_schema(physical) if fmt == "avro" else None
    tz = df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    arrow = arrow_schema(struct, tz)
    # A table in object storage: blocks are written to a local temporary file, then stored.
    in_store = is_object_path(root)
    root_s = os.fspath(root) if in_store else os.path.realpath(root)
    settings = store_settings() if in_store else None  # the tasks reach the store with them
    version = physical.version_id
    rows_of = dict(base_rows or {})

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa
        from pyspark import TaskContext

        if settings is not None:
            apply_store_settings(settings)
        ctx = TaskContext.get()
        task = ctx.partitionId() if ctx else 0
        attempt = ctx.attemptNumber() if ctx else 0
        sink = _BlockSink(root_s, instant, version, task, attempt, fmt, avro, struct, arrow,
                          codec, rows_of)
        try:
            for batch in batches:
                bases = batch.column(batch.schema.get_field_index(BASE)).to_pylist()
                data = pa.RecordBatch.from_arrays(
                    [batch.column(batch.schema.get_field_index(n)) for n in names],
                    schema=arrow)
                start = 0
                for i in range(1, len(bases) + 1):
                    if i == len(bases) or bases[i] != bases[start]:
                        base = bases[start]
                        if base.startswith(root_s + "/"):  # a file in object storage
                            base = base[len(root_s) + 1:]
                        elif base.startswith(("file:", "/")):
                            base = _relative(base, root_s)
                        sink.add(base, data.slice(start, i - start))
                        start = i
            sink.close()
        except BaseException:
            sink.abort()
            raise
        out = sink.stats
        yield pa.RecordBatch.from_pydict(
            {"path": [s[0] for s in out], "base": [s[1] for s in out],
             "rows": [s[2] for s in out], "bytes": [s[3] for s in out]},
            schema=pa.schema([("path", pa.string()), ("base", pa.string()),
                              ("rows", pa.int64()), ("bytes", pa.int64())]))

    rows = (df.select(*[F.col(f"`{n}`") for n in names], F.col(BASE))
            .repartition(max(1, tasks), BASE).sortWithinPartitions(BASE)
            .mapInArrow(write, "path string, base string, rows long, bytes long")
            .collect())
    out = []
    for r in rows:
        partition = str(PurePosixPath(r["base"]).parent)
        out.append(DataFile(path=r["path"], version=version, instant=instant,
                            partition="" if partition == "." else partition,
                            rows=int(r["rows"]), bytes=int(r["bytes"]), kind="log",
                            base=r["base"]))
    return sorted(out, key=lambda f: f.path)


def write_blocks_here(rows: pa.Table, *, root: Path, instant: str, physical: Schema,
                      fmt: str = "avro", codec: str = "null",
                      base_rows: dict[str, int] | None = None,
                      uploads: int = 1) -> list[DataFile]:
    """Write ``rows`` as log blocks of commit ``instant`` from this process, one per file
    group: what :func:`write_log_blocks` does in Spark tasks, for a delta the driver looked up
    itself (:mod:`evonb.spark.mor_driver`). ``rows`` has the columns of :func:`block_struct` in
    the Arrow types Spark exchanges (:func:`arrow_schema`) and :data:`BASE` (the base file's
    relative path), grouped by base file. In object storage, ``uploads`` threads store the
    finished blocks (one request each), so that their requests overlap; every block is stored,
    or none is left, when this returns."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r}; expected one of {FORMATS}")
    struct = block_struct(physical)
    names = [f.name for f in struct.fields]
    in_store = is_object_path(root)
    root_s = os.fspath(root) if in_store else os.path.realpath(root)
    version = physical.version_id
    data = rows.select(names).combine_chunks()
    avro = block_avro_schema(physical) if fmt == "avro" else None
    sink = _BlockSink(root_s, instant, version, 0, 0, fmt, avro, struct, data.schema, codec,
                      dict(base_rows or {}), check_rollback=False, uploads=uploads)
    # The records of every group encoded at once (each record's bytes do not depend on the
    # block it goes to), then cut per group.
    encoded = _encode_all(data, avro, codec) if avro is not None else None
    try:
        for base, start, stop in _runs(rows.column(BASE)):
            at = start
            for batch in data.slice(start, stop - start).to_batches():
                sink.add(base, batch, None if encoded is None
                         else encoded.slice(at, at + batch.num_rows))
                at += batch.num_rows
        sink.close()
    except BaseException:
        sink.abort()
        raise
    out = []
    for path, base, count, size in sink.stats:
        partition = str(PurePosixPath(base).parent)
        out.append(DataFile(path=path, version=version, instant=instant,
                            partition="" if partition == "." else partition,
                            rows=count, bytes=size, kind="log", base=base))
    return sorted(out, key=lambda f: f.path)


def _runs(values: pa.ChunkedArray | pa.Array) -> list[tuple[str, int, int]]:
    """The runs of equal values of a string column: (value, first row, row after the last)."""
    import numpy as np
    import pyarrow as pa

    codes = pa.chunked_array([values]) if isinstance(values, pa.Array) else values
    encoded = codes.dictionary_encode().combine_chunks()
    index = encoded.indices.to_numpy(zero_copy_only=False)
    if not len(index):
        return []
    starts = np.concatenate([[0], np.flatnonzero(index[1:] != index[:-1]) + 1])
    stops = np.append(starts[1:], len(index))
    names = encoded.dictionary.to_pylist()
    return [(names[index[a]], int(a), int(b)) for a, b in zip(starts, stops, strict=True)]


@dataclass(frozen=True)
class _Encoded:
    """Avro records encoded one after another (:func:`encode_records`): their bytes and each
    record's length."""

    data: bytes
    lengths: Any  # numpy int64, a length per record
    ends: Any  # numpy int64, where each record ends in ``data``

    def slice(self, start: int, stop: int) -> tuple[bytes, Any]:
        """The bytes and lengths of records ``start`` to ``stop`` (excluded)."""
        first = int(self.ends[start - 1]) if start else 0
        last = int(self.ends[stop - 1]) if stop else 0
        return self.data[first:last], self.lengths[start:stop]


def _columnar_kinds(avro: dict[str, Any], codec: str, arrow: pa.Schema
                    ) -> list[tuple[str, int | None, int]] | None:
    """The field kinds with which records of Arrow schema ``arrow`` are encoded from their
    columns (:mod:`evonb.spark.avro_encode`) into blocks of ``avro`` with ``codec``; None
    when fastavro encodes them a record at a time."""
    kinds = field_kinds(avro) if codec in ENCODE_CODECS else None
    return kinds if kinds is not None and fits(arrow, kinds) else None


def _encode_all(table: pa.Table, avro: dict[str, Any], codec: str) -> _Encoded | None:
    """Every record of ``table`` encoded as Avro from its columns, when the sink would encode
    its blocks so (:func:`~evonb.spark.avro_encode.field_kinds`); else None."""
    import numpy as np

    kinds = _columnar_kinds(avro, codec, table.schema)
    if kinds is None:
        return None
    batches = table.to_batches()
    if len(batches) != 1:  # combined: one batch, or none for an empty table
        return None
    found = encode_records(batches[0], kinds)
    if found is None:
        return None
    data, lengths = found
    return _Encoded(data, lengths, np.cumsum(lengths))


class _BlockSink:
    """Writes the blocks of one task, one file group after another (runs in the worker)."""

    def __init__(self, root: str, instant: str, version: str, task: int, attempt: int,
                 fmt: str, avro: dict[str, Any] | None, struct: StructType, arrow: pa.Schema,
                 codec: str, base_rows: dict[str, int] | None = None, *,
                 check_rollback: bool = True, uploads: int = 1) -> None:
        self.root, self.instant, self.version = root, instant, version
        # In object storage a finished block is one request: with ``uploads`` > 1 that many
        # threads make them, so that the requests of many small blocks overlap (close() waits).
        self.in_store = is_object_path(root)
        self.uploads = uploads if self.in_store else 1
        self.pool: ThreadPoolExecutor | None = None
        self.pending: list[Future[None]] = []
        self.buffer: Any = None  # Parquet blocks for object storage are built in memory
        # Tasks ask whether their attempt was rolled back after placing each block (their
        # driver may be gone); the driver writing blocks itself is still there.
        self.check_rollback = check_rollback
        self.task, self.attempt, self.fmt = task, attempt, fmt
        self.avro, self.arrow, self.codec = avro, arrow, codec
        self.struct = struct
        self.base_rows = base_rows or {}
        self.drops: list[Any] | None = None
        self.stats: list[tuple[str, str, int, int]] = []
        self.base: str | None = None
        self.rows = 0
        self.tmp: str | None = None
        self.final: str | None = None
        self.fh: Any = None
        self.writer: Any = None
        self.parquet_schema: Any = None  # a Parquet block's Arrow schema
        self.convert: Converter = None
        self.kinds: list[tuple[str, int | None, int]] | None = None  # Avro: columnar encoding
        self.encoded: list[tuple[bytes, Any]] = []

    def _open(self, base: str) -> None:
        import fastavro
        import pyarrow as pa

        rel = log_path(base, self.instant, self.task, self.fmt)
        self.base, self.rows, self.final = base, 0, rel
        self.drops = [] if base in self.base_rows else None
        full = os.path.join(self.root, rel)
        if self.in_store:  # built in memory, stored with one request where it stays
            self.tmp = None
        else:
            self.tmp = log_block_temp(full, self.attempt)
            os.makedirs(os.path.dirname(full), exist_ok=True)
        meta = {"evonb.version": self.version, "evonb.instant": self.instant,
                "evonb.base": base}
        if self.fmt == "avro":
            # Records are encoded into memory first, with their byte lengths noted; the file
            # is then written with the lengths in its header (see evonb.spark.avro_fast).
            self.parsed = fastavro.parse_schema(self.avro)
            self.meta = meta
            self.fh = io.BytesIO()
            self.writer = fastavro.write.Writer(self.fh, self.parsed, codec=self.codec,
                                                metadata=meta, sync_interval=2**62)
            self.header = self.fh.tell()
            self.lengths = []
            self.convert = _writer(self.struct, self.avro)
            # Blocks of primitive fields are encoded from the Arrow columns at once
            # (evonb.spark.avro_encode: the same bytes, without a Python call per record).
            self.kinds = _columnar_kinds(self.avro, self.codec, self.arrow)
            self.encoded = []
        else:
            fields = [f.with_metadata({b"PARQUET:field_id": str(i).encode()})
                      for f, i in zip(self.arrow, [f.id for f in self.struct.fields],
                                      strict=True)]
            schema = pa.schema(fields, metadata={k.encode(): v.encode()
                                                 for k, v in meta.items()})
            if self.in_store:
                self.buffer = pa.BufferOutputStream()
            # Opened on the first batch, which decides the columns with dictionaries.
            self.parquet_schema, self.writer = schema, None

    def add(self, base: str, batch: pa.RecordBatch,
            encoded: tuple[bytes, Any] | None = None) -> None:
        """Add ``batch`` to the block of ``base`` (``encoded``: its records encoded as Avro
        already, by :func:`encode_records`)."""
        import pyarrow as pa

        if base != self.base:
            self._close()
            self._open(base)
        self.rows += batch.num_rows
        if self.drops is not None:
            self._note_drops(batch)
        if self.fmt == "avro" and self.kinds is not None:
            if encoded is None:
                encoded = encode_records(batch, self.kinds)
            if encoded is None:  # pragma: no cover - every batch has the sink's Arrow schema
                raise EvoError(f"Cannot encode the records of log block {self.final}")
            self.encoded.append(encoded)
        elif self.fmt == "avro":
            writer = self.writer
            write, tell, note = writer.write, writer.io.tell, self.lengths.append
            convert = self.convert
            # Dates and timestamps as their numbers (days, microseconds), which fastavro
            # writes as they are: Python's dates stop at year 9999 (in the batch's time zone
            # for timestamps), Spark's do not.
            for record in rows_with_times_as_numbers(batch).to_pylist():
                start = tell()
                write(convert(record) if convert else record)
                end = tell()
                note(end - start)
                if end >= SYNC_INTERVAL:
                    writer.dump()
        else:
            table = pa.Table.from_batches([batch]).cast(self.parquet_schema)
            self._parquet_writer(table).write_table(table)

    def _parquet_writer(self, first: pa.Table) -> Any:
        """The open Parquet block's writer, opened for ``first``, its first rows: columns of
        mostly distinct values are written plain (:mod:`evonb.spark.parquet_encoding`)."""
        import pyarrow.parquet as pq

        if self.writer is None:
            self.writer = pq.ParquetWriter(self.buffer if self.in_store else self.tmp,
                                           self.parquet_schema, compression="snappy",
                                           use_dictionary=dictionary_columns(first))
        return self.writer

    def _note_drops(self, batch: pa.RecordBatch) -> None:
        """Collect the base positions this batch replaces or deletes (or give up positions
        for the block when a record has none)."""
        import numpy as np
        import pyarrow.compute as pc

        names = batch.schema.names
        if POS not in names or OVER not in names:
            self.drops = None
            return
        pos = batch.column(names.index(POS))
        if pos.null_count:
            self.drops = None
            return
        hit = pc.or_(pc.fill_null(batch.column(names.index(OVER)), False),
                     pc.fill_null(batch.column(names.index(DELETED)), False))
        self.drops.append(np.asarray(pc.filter(pos, hit), dtype=np.int64))

    def _header(self) -> dict[str, str]:
        meta = {"evonb.version": self.version, "evonb.instant": self.instant,
                "evonb.base": str(self.base)}
        if self.drops is not None:
            import numpy as np

            drops = np.concatenate(self.drops) if self.drops else np.zeros(0, np.int64)
            meta[DROP_KEY] = encode_positions(drops)
            meta[BASE_ROWS_KEY] = str(self.base_rows[self.base])
        return meta

    def _close(self) -> None:
        if self.base is None:
            return
        if self.fmt == "avro":
            import fastavro

            if self.kinds is not None:
                import numpy as np

                self.lengths = (np.concatenate([lengths for _, lengths in self.encoded])
                                if self.encoded else np.zeros(0, np.int64))
                body = data_blocks(b"".join(data for data, _ in self.encoded), self.lengths,
                                   sync=self.writer.sync_marker, codec=self.codec,
                                   block_bytes=SYNC_INTERVAL)
                self.encoded = []
            else:
                self.writer.flush()
                body = self.fh.getbuffer()[self.header:]
            fh = io.BytesIO() if self.in_store else open(self.tmp, "wb")  # noqa: SIM115
            try:
                fastavro.write.Writer(fh, self.parsed, codec=self.codec,
                                      metadata={**self._header(),
                                                LENGTHS_KEY: encode_lengths(self.lengths)},
                                      sync_marker=self.writer.sync_marker)
                fh.write(body)
                data = fh.getvalue() if self.in_store else b""
            finally:
                fh.close()
            del body
            self.fh = None
        else:
            writer = self._parquet_writer(self.parquet_schema.empty_table())
            writer.add_key_value_metadata(self._header())
            writer.close()
            self.writer = None
            data = self.buffer.getvalue().to_pybytes() if self.in_store else b""
            self.buffer = None
        full = os.path.join(self.root, self.final)
        if self.in_store:
            note_if_retried(self.root, self.instant)
            self._store(full, data)  # written once, where it stays
            size = len(data)
            del data
        else:
            file_io().move(self.tmp, full)
            size = file_io().size(full)
        if self.check_rollback and not instant_on_timeline(self.root, self.instant):
            # The attempt was rolled back (its driver was killed) while this task wrote:
            # the rollback may have looked for its files already, so this one goes here.
            file_io().delete(full)
            raise EvoError(f"The write {self.instant} was rolled back while a task wrote its "
                           f"log block {self.final}; the block is removed",
                           hint="write again: the table is as it was before that write")
        self.stats.append((self.final, self.base, self.rows, size))
        self.base = None

    def _store(self, full: str, data: bytes) -> None:
        """Store a finished block in object storage: now, or by one of ``uploads`` threads."""
        if self.uploads <= 1:
            file_io().write(full, data)
            return
        if self.pool is None:
            self.pool = ThreadPoolExecutor(self.uploads, thread_name_prefix="evonb-block")
        self.pending.append(self.pool.submit(file_io().write, full, data))

    def _wait(self) -> None:
        """Wait for every block being stored; the first failure is raised after all ended."""
        pending, self.pending = self.pending, []
        failed: BaseException | None = None
        for future in pending:
            try:
                future.result()
            except BaseException as exc:
                failed = failed or exc
        if self.pool is not None:
            self.pool.shutdown()
            self.pool = None
        if failed is not None:
            raise failed

    def close(self) -> None:
        self._close()
        self._wait()

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            self._wait()  # no block lands after the clean-up below
        try:
            if self.fmt == "avro":
                self.fh = None
            elif self.writer is not None and self.fmt == "parquet":
                self.writer.close()
        except Exception:  # pragma: no cover - best effort
            pass
        if self.tmp:
            Path(self.tmp).unlink(missing_ok=True)
        for rel, *_ in self.stats:
            file_io().delete(os.path.join(self.root, rel))


# --------------------------------------------------------------------------------- reading
def read_log_blocks(spark: SparkSession, root: Path, files: Sequence[DataFile],
                    physical: Schema, *, group: bool = False) -> DataFrame:
    """The records of log blocks written with one schema version (``physical``: that version
    with physical names), as a DataFrame with the columns of :func:`block_struct` (``group``:
    and :data:`GROUP`, the name of each record's base file).

    Blocks are read by Spark tasks (fastavro for Avro, pyarrow for Parquet); Avro fields are
    matched to the version's columns by field ID.
    """

    struct = block_struct(physical)
    tz = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    arrow = arrow_schema(struct, tz)
    spark_type = spark_read_type(struct)
    if group:
        spark_type = spark_type.add(GROUP, "string")
    rows = [(str(Path(root) / f.path), group_name(f.base)) for f in files]
    if not rows:
        return spark.createDataFrame([], spark_type)

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path, name in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(),
                                  strict=True):
                for block in _read_block(path, struct, arrow):
                    yield _with_group(block, name) if group else block

    # A local relation: its rows are spread over min(paths, cores) tasks without a Python job.
    listing = spark.createDataFrame(rows, "path string, base string")
    return listing.mapInArrow(read, spark_type)


GROUP = "__evo_group"
"""Column of log records and base rows merged by key: the name of the file group's base file.
A key deleted in one file group and inserted again into another is in two groups, so records
are resolved, and merged with base rows, per key and group."""


def group_name(base: str | None) -> str:
    """The :data:`GROUP` value of a file group: its base file's name (unique in a table)."""
    return PurePosixPath(base or "").name


def _with_group(data: Any, name: str) -> Any:
    """A record batch or table of one file group with :data:`GROUP` (``name``) appended."""
    import pyarrow as pa

    return data.append_column(GROUP, pa.array([name] * data.num_rows, pa.string()))


ORDER_COL = "__evo_ord"
DEL = "__evo_del"
"""Column of resolved log records: the instant of the key's last delete (null: none)."""
VALID = "__evo_valid"
"""Column of resolved log records: false when a delete is the key's last word."""


def resolved_struct(physical: Schema) -> StructType:
    """The columns of :func:`read_resolved_groups`: the physical columns, the commit time, and
    :data:`DEL` and :data:`VALID`."""
    cols = block_struct(physical).fields[:-1]
    return StructType((*cols, NestedField(2**31 - 4, DEL, STRING),
                       NestedField(2**31 - 5, VALID, BOOLEAN)))


def winners(resolved: pa.Table) -> pa.Table:
    """The records of a position-resolved table (:func:`resolve_group` with the position among the
    keys) that go into a merge by position: valid after the key's last delete, and either
    following a delete or beating the base row (``_evo_over``)."""
    import pyarrow.compute as pc

    keep = pc.and_(resolved.column(VALID),
                   pc.or_(pc.is_valid(resolved.column(DEL)),
                          pc.fill_null(resolved.column(OVER), False)))
    return resolved.filter(keep)


def read_resolved_groups(spark: SparkSession, root: Path, groups: Sequence[Sequence[DataFile]],
                         physical: Schema, keys: Sequence[str], precombine: str | None,
                         *, winners_of: Sequence[str] | None = None,
                         group: bool = False) -> DataFrame:
    """The log records of whole file groups, resolved per key inside the task that reads the
    group (no shuffle): the winner among the records after the key's last delete by the
    precombine rule (:mod:`evonb.table.precombine`; the later block breaks a tie), or a bare
    delete.

    Every block must be written with the schema version ``physical`` (physical names);
    ``keys`` and ``precombine`` are physical names. ``winners_of`` (a merge by position, the
    position among ``keys``): only the :func:`winners`, with only these columns, so that no
    other row or column goes from the Python workers to the JVM. ``group``: each record also
    carries :data:`GROUP`, its group's base file name.
    """

    struct = block_struct(physical)
    out = resolved_struct(physical)
    if winners_of is not None:
        by_name = {f.name: f for f in out.fields}
        out = StructType(tuple(by_name[n] for n in winners_of))
        if META_COMMIT_TIME not in winners_of:  # not decoded at all
            struct = StructType(tuple(f for f in struct.fields if f.id != COMMIT_TIME_ID))
    tz = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    arrow = arrow_schema(out, tz)
    block_arrow = arrow_schema(struct, tz)
    spark_type = spark_read_type(out)
    if group:
        spark_type = spark_type.add(GROUP, "string")
    listing = [(json.dumps([str(Path(root) / f.path)
                            for f in sorted(g, key=lambda f: (f.instant, f.path))]),
                group_name(g[0].base))
               for g in groups if g]
    if not listing:
        return spark.createDataFrame([], spark_type)
    key_names, pre = list(keys), precombine
    kept = list(winners_of) if winners_of is not None else None

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for paths, name in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(),
                                   strict=True):
                table = resolve_group(json.loads(paths), struct, block_arrow, key_names, pre)
                if kept is not None:
                    table = winners(table).select(kept)
                table = table.cast(arrow)
                yield from (_with_group(table, name) if group else table).to_batches()

    return (spark.createDataFrame(listing, "paths string, base string")
            .mapInArrow(read, spark_type))


def resolve_group(paths: list[str], struct: StructType, arrow: pa.Schema, keys: list[str],
                  precombine: str | None) -> pa.Table:
    """Resolve the records of one file group's blocks (``paths`` oldest first) per key by the
    precombine rule (:func:`evonb.spark.precombine_arrow.resolve`; a block's place in the group
    is its commit order): the last delete of each key, then the winner among the later records
    (``arrow`` is the schema of the blocks, :func:`block_struct`). Only the key, order and
    precombine columns are grouped and sorted; the winning rows are then taken whole."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from evonb.spark.precombine_arrow import resolve

    tables = []
    for order, path in enumerate(paths):
        t = pa.Table.from_batches(list(_read_block(path, struct, arrow)), schema=arrow)
        tables.append(t.append_column(ORDER_COL, pa.array([order] * t.num_rows, pa.int32())))
    full = pa.concat_tables(tables)
    instants = pa.array([_instant_of(p) for p in paths], pa.string())
    found = resolve({k: full.column(k) for k in keys}, full.column(ORDER_COL),
                    pc.fill_null(full.column(DELETED), False),
                    full.column(precombine) if precombine is not None else None)
    out = full if found.rows is None else full.take(found.rows)
    out = out.drop_columns([DELETED, ORDER_COL])
    out = out.append_column(DEL, pc.take(instants, found.last_delete))
    return out.append_column(VALID, found.live)


def _instant_of(path: str) -> str | None:
    parsed = parse_log_block(path)
    return parsed.instant if parsed else None


def _read_block(path: str, struct: StructType, arrow: pa.Schema,
                batch_rows: int = 65536) -> Iterator[pa.RecordBatch]:
    """The records of one log block as batches of ``arrow``; a block that is gone or does not
    decode raises :class:`~evonb.errors.DataFileError` naming it."""

    try:
        yield from _decode_block(path, struct, arrow, batch_rows)
    except (OSError, ValueError, EOFError, IndexError, zlib.error) as exc:
        raise file_error(path, exc) from exc


def _decode_block(path: str, struct: StructType, arrow: pa.Schema,
                  batch_rows: int) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        with file_io().open_data(path) as fh:
            table = pq.read_table(fh)
        cols = []
        for f in arrow:
            if f.name in table.column_names:
                cols.append(table.column(f.name).cast(f.type))
            else:
                cols.append(pa.nulls(table.num_rows, f.type))
        yield from pa.Table.from_arrays(cols, schema=arrow).to_batches(batch_rows)
        return

    with file_io().open_data(path) as fh:
        data = fh.read()
    if not data.endswith(container_sync(data)):
        raise ValueError("its last Avro block is cut off (no sync marker at the end)")
    fast = read_columnar(data, struct, arrow)
    if fast is not None:
        yield from pa.Table.from_batches([fast]).to_batches(batch_rows)
        return
    with io.BytesIO(data) as fh:
        reader = reader_with_times_as_numbers(fh)  # dates past year 9999 read too
        written = json.loads(reader.metadata["avro.schema"])
        by_id = {int(a["field-id"]): a for a in written["fields"] if "field-id" in a}
        plan = []
        for f in struct.fields:
            a = by_id.get(f.id)
            plan.append((a["name"] if a else None, _reader(f.type, a["type"]) if a else None))
        records: list[dict[str, Any]] = []
        for record in reader:
            records.append(record)
            if len(records) >= batch_rows:
                yield _to_batch(records, plan, arrow)
                records = []
        if records:
            yield _to_batch(records, plan, arrow)


def _to_batch(records: list[dict[str, Any]], plan: list[tuple[str | None, Converter]],
              arrow: pa.Schema) -> pa.RecordBatch:
    import pyarrow as pa

    arrays = []
    for (name, convert), f in zip(plan, arrow, strict=True):
        if name is None:
            arrays.append(pa.nulls(len(records), f.type))
        elif convert is None:
            arrays.append(pa.array([r.get(name) for r in records], type=f.type))
        else:
            arrays.append(pa.array([convert(r.get(name)) for r in records], type=f.type))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow)


__all__ = [
    "BASE",
    "DELETED",
    "FORMATS",
    "GROUP",
    "LOG_FORMAT_PROPERTY",
    "arrow_schema",
    "avro_supported",
    "block_avro_schema",
    "block_struct",
    "group_name",
    "log_path",
    "parse_log_name",
    "read_log_blocks",
    "read_resolved_groups",
    "resolve_group",
    "resolved_struct",
    "winners",
    "write_blocks_here",
    "write_log_blocks",
]
