"""A columnar writer for the Avro log blocks evonb writes (numpy, no per-record Python): the
counterpart of the reader in :mod:`evonb.spark.avro_fast`.

fastavro encodes one record at a time from Python values (about 4 microseconds a record), which
made encoding the largest cost of a small merge-on-read upsert. Blocks whose fields are all
primitive (``boolean``, ``int``, ``long``, ``float``, ``double``, ``string``, ``bytes``, and
the ``date`` and timestamp logical types), each alone or in a union with ``null``, are encoded
here from Arrow columns instead, a field of every record at once: union branches, zig-zag
varints, little-endian floats, and length-prefixed strings copied straight from Arrow
buffers, then joined record by record by Arrow (``binary_join_element_wise``). The bytes are
Avro's binary encoding, the same fastavro writes (the tests compare whole files byte for
byte), cut into data blocks where fastavro would cut them. Anything else (nested types,
decimals, other codecs) returns ``None`` and the caller encodes with fastavro.
"""

from __future__ import annotations

import zlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pyarrow as pa

_PRIMITIVE = {"boolean", "int", "long", "float", "double", "string", "bytes"}
_LOGICAL = {("int", "date"), ("long", "timestamp-micros"), ("long", "local-timestamp-micros")}
CODECS = ("null", "deflate")
"""The block codecs this writer compresses with (zlib for ``deflate``, as fastavro does)."""


def field_kinds(avro: dict[str, Any]) -> list[tuple[str, int | None, int]] | None:
    """For each field of the record schema ``avro``: (primitive kind, encoded branch tag of null
    or None, encoded branch tag of the value); None when a field is not one this writer
    encodes."""
    kinds = []
    for field in avro.get("fields", ()):
        t, null_tag, value_tag = field["type"], None, 0
        if isinstance(t, list):
            if len(t) != 2 or "null" not in t:
                return None
            null_index = t.index("null")
            null_tag, value_tag = 2 * null_index, 2 * (1 - null_index)  # zig-zag of 0 / 1
            t = t[1 - null_index]
        if isinstance(t, dict):
            kind, logical = t.get("type"), t.get("logicalType")
            if logical is not None and (kind, logical) not in _LOGICAL:
                return None
            t = kind
        if t not in _PRIMITIVE:
            return None
        kinds.append((t, null_tag, value_tag))
    return kinds


def _varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints of int64 ``values``: (a row per value, as wide as the longest varint,
    and the bytes each value uses)."""
    import numpy as np

    zz = (values.astype(np.int64) << np.int64(1)) ^ (values.astype(np.int64) >> np.int64(63))
    zz = zz.view(np.uint64)
    used = np.ones(len(zz), dtype=np.int64)
    rest = zz >> np.uint64(7)
    while rest.any():
        used += rest != 0
        rest >>= np.uint64(7)
    width = int(used.max()) if len(used) else 1
    shifts = np.arange(width, dtype=np.uint64) * np.uint64(7)
    groups = ((zz[:, None] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
    more = np.arange(width)[None, :] < (used[:, None] - 1)
    return groups | (more.astype(np.uint8) << np.uint8(7)), used


class _Parts:
    """The encoded pieces of every record, in order, joined record by record at the end by
    Arrow (``binary_join_element_wise``). Pieces of one width in every record (union tags,
    numbers of every row, varints all of one length) are kept as rows of bytes and laid side
    by side until a piece of varying width comes; each piece then becomes a binary array of
    a value per record."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.pieces: list[pa.Array] = []
        self.rows: list[np.ndarray] = []  # fixed-width pieces not joined yet: n x width bytes

    def _binary(self, offsets: np.ndarray, data: np.ndarray) -> None:
        import numpy as np
        import pyarrow as pa

        self.pieces.append(pa.LargeBinaryArray.from_buffers(
            pa.large_binary(), self.n,
            [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(data, np.uint8))]))

    def _flush(self) -> None:
        import numpy as np

        if self.rows:
            rows = self.rows[0] if len(self.rows) == 1 else np.hstack(self.rows)
            self.rows = []
            self._binary(np.arange(self.n + 1, dtype=np.int64) * rows.shape[1],
                         rows.reshape(-1))

    def add(self, lengths: np.ndarray, data: np.ndarray) -> None:
        """A piece of ``lengths`` bytes per record, ``data`` their bytes in record order."""
        import numpy as np

        self._flush()
        offsets = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        self._binary(offsets, data)

    def fixed(self, width_bytes: np.ndarray, valid: np.ndarray) -> None:
        """A piece of ``width_bytes`` (a row per record) where ``valid``, nothing elsewhere."""
        import numpy as np

        if valid.all():
            self.rows.append(np.ascontiguousarray(width_bytes, dtype=np.uint8))
        else:
            width = width_bytes.shape[1]
            self.add(np.where(valid, width, 0), width_bytes[valid].reshape(-1))

    def varints(self, values: np.ndarray, valid: np.ndarray) -> None:
        """The zig-zag varints of ``values`` where ``valid``, nothing elsewhere."""
        import numpy as np

        every = bool(valid.all())
        rows, used = _varints(values if every else values[valid])
        width = rows.shape[1]
        same = bool((used == width).all())
        if every and same:
            self.rows.append(rows)
            return
        if every:
            lengths = used
        else:
            lengths = np.zeros(self.n, dtype=np.int64)
            lengths[valid] = used
        data = rows.reshape(-1) if same else rows[np.arange(width)[None, :] < used[:, None]]
        self.add(lengths, data)

    def records(self) -> tuple[bytes, np.ndarray]:
        """The records' bytes, one after another, and each record's length."""
        import numpy as np
        import pyarrow as pa
        import pyarrow.compute as pc

        self._flush()
        if not self.pieces:
            return b"", np.zeros(self.n, dtype=np.int64)
        joined = (self.pieces[0] if len(self.pieces) == 1 else
                  pc.binary_join_element_wise(*self.pieces, pa.scalar(b"", pa.large_binary())))
        offsets = np.frombuffer(joined.buffers()[1], dtype=np.int64,
                                count=joined.offset + self.n + 1)[joined.offset:]
        data = joined.buffers()[2]
        body = (memoryview(data)[int(offsets[0]):int(offsets[-1])].tobytes()
                if data is not None else b"")
        return body, np.diff(offsets)


def _fits(t: pa.DataType, kind: str) -> bool:
    import pyarrow as pa

    if kind in ("int", "long"):
        return (pa.types.is_integer(t) or pa.types.is_date32(t)
                or (pa.types.is_timestamp(t) and t.unit == "us"))
    if kind in ("float", "double"):
        return pa.types.is_floating(t)
    if kind == "boolean":
        return pa.types.is_boolean(t)
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


def fits(schema: pa.Schema, kinds: list[tuple[str, int | None, int]]) -> bool:
    """Whether record batches of ``schema`` can be encoded as records of ``kinds`` (a column
    per field, in order, of a type that fits its kind)."""
    return len(schema) == len(kinds) and all(
        _fits(f.type, kind) for f, (kind, _, _) in zip(schema, kinds, strict=True))


def encode_records(batch: pa.RecordBatch, kinds: list[tuple[str, int | None, int]]
                   ) -> tuple[bytes, np.ndarray] | None:
    """The Avro binary encoding of every record of ``batch`` (its columns are the record's
    fields in order, of kinds :func:`field_kinds`), one record after another, and each
    record's byte length; None when a column's Arrow type does not fit its kind."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not fits(batch.schema, kinds):
        return None
    n = batch.num_rows
    if n == 0:
        return b"", np.zeros(0, dtype=np.int64)
    parts = _Parts(n)
    for column, (kind, null_tag, value_tag) in zip(batch.columns, kinds, strict=True):
        valid = (np.ones(n, dtype=bool) if column.null_count == 0
                 else column.is_valid().to_numpy(zero_copy_only=False))
        if null_tag is not None:
            parts.fixed(np.where(valid, value_tag, null_tag).astype(np.uint8).reshape(n, 1),
                        np.ones(n, dtype=bool))
        elif not valid.all():
            return None  # a null where the schema has no null branch
        t = column.type
        if kind in ("int", "long"):
            if pa.types.is_date32(t):
                column = column.cast(pa.int32())
            elif pa.types.is_timestamp(t):
                if t.unit != "us":
                    return None
                column = column.cast(pa.int64())
            elif not pa.types.is_integer(t):
                return None
            values = pc.fill_null(column, 0).to_numpy(zero_copy_only=False)
            parts.varints(values.astype(np.int64), valid)
        elif kind in ("float", "double"):
            width, dtype = (4, "<f4") if kind == "float" else (8, "<f8")
            if not pa.types.is_floating(t):
                return None
            values = pc.fill_null(column, 0).to_numpy(zero_copy_only=False).astype(dtype)
            parts.fixed(values.view(np.uint8).reshape(n, width), valid)
        elif kind == "boolean":
            if not pa.types.is_boolean(t):
                return None
            values = pc.fill_null(column, False).to_numpy(zero_copy_only=False)
            parts.fixed(values.astype(np.uint8).reshape(n, 1), valid)
        else:  # string, bytes
            if not (pa.types.is_string(t) or pa.types.is_large_string(t)
                    or pa.types.is_binary(t) or pa.types.is_large_binary(t)):
                return None
            empty = "" if pa.types.is_string(t) or pa.types.is_large_string(t) else b""
            column = pc.fill_null(column, empty)
            if column.offset or column.null_count:
                column = pa.concat_arrays([column])
            wide = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
            offsets = np.frombuffer(column.buffers()[1], dtype=np.int64 if wide else np.int32,
                                    count=n + 1).astype(np.int64)
            lengths = np.diff(offsets)
            parts.varints(lengths, valid)
            buffer = column.buffers()[2]
            data = (np.frombuffer(buffer, dtype=np.uint8)[offsets[0]:offsets[-1]]
                    if buffer is not None else np.zeros(0, dtype=np.uint8))
            parts.add(np.where(valid, lengths, 0), data)
    return parts.records()


def _long(value: int) -> bytes:
    """One Avro long: its zig-zag varint (a block's record count or byte size)."""
    zz = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while zz > 0x7F:
        out.append((zz & 0x7F) | 0x80)
        zz >>= 7
    out.append(zz)
    return bytes(out)


def data_blocks(records: bytes, lengths: np.ndarray, *, sync: bytes, codec: str,
                block_bytes: int) -> bytes:
    """Records (one after another, ``lengths`` bytes each) as Avro data blocks, each with its
    record count, byte size and ``sync`` marker: a block ends after the first record that brings
    it to ``block_bytes`` or more (where fastavro's writer ends it)."""
    import numpy as np

    if codec not in CODECS:
        raise ValueError(f"codec {codec!r} is not one of {CODECS}")
    out = []
    ends = np.cumsum(lengths)
    start, offset = 0, 0
    n = len(lengths)
    while start < n:
        within = ends[start:] - offset
        stop = start + int(np.searchsorted(within, block_bytes, side="left")) + 1
        stop = min(stop, n)
        end = int(ends[stop - 1])
        payload = records[offset:end]
        if codec == "deflate":  # fastavro's framing: zlib's stream without its 2-byte header
            payload = zlib.compress(payload)[2:-1]  # (and all but one byte of its checksum)
        out += [_long(stop - start), _long(len(payload)), payload, sync]
        start, offset = stop, end
    return b"".join(out)


__all__ = ["CODECS", "data_blocks", "encode_records", "field_kinds", "fits"]
