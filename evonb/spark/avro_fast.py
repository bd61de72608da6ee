"""A columnar reader for the Avro log blocks evonb writes (numpy, no per-record Python).

fastavro decodes a record at a time into Python dicts (a few microseconds per record), which
made decoding the log blocks the largest cost of a merge-on-read snapshot read. Every Avro block
evonb writes records the byte length of each record in its header metadata
(``evonb.record.lengths``), so the start of every record is known before decoding and each
field can be decoded for all records at once with numpy: union branches, zig-zag varints, fixed
width floats, and strings gathered straight into Arrow buffers.

The fast path covers blocks whose fields are primitive (``boolean``, ``int``, ``long``,
``float``, ``double``, ``string``, ``bytes``, and the ``date`` and timestamp logical types),
optionally in a union with ``null``, with the ``null`` or ``deflate`` codec. It checks itself:
every record must end exactly where its recorded length says and every block's records must
fill the block; anything else (other types, other codecs, blocks without lengths, written by
another writer) returns ``None`` and the caller decodes the block with fastavro. The blocks stay
plain Avro container files: any Avro reader ignores the extra metadata.
"""

from __future__ import annotations

import base64
import json
import zlib
from typing import TYPE_CHECKING, Any

from evonb.table.fileio import file_io

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np
    import pyarrow as pa

    from evonb.schema.types import StructType

LENGTHS_KEY = "evonb.record.lengths"
"""Avro header metadata: the byte length of every record, in order (see :func:`encode_lengths`)."""
MAGIC = b"Obj\x01"
_PRIMITIVE = {"boolean", "int", "long", "float", "double", "string", "bytes"}
_LOGICAL = {("int", "date"), ("long", "timestamp-micros"), ("long", "local-timestamp-micros")}


class _Unsupported(ValueError):
    """The block cannot be decoded here (the caller falls back to fastavro)."""


# ------------------------------------------------------------------------------- lengths
def encode_lengths(lengths: Any) -> str:
    """Record lengths as header text: base64 of the zlib-compressed little-endian uint32s."""
    import numpy as np

    raw = np.asarray(lengths, dtype="<u4").tobytes()
    # level 1: a fifth of level 6's time on these small, regular arrays, and about their size
    return base64.b64encode(zlib.compress(raw, 1)).decode("ascii")


def decode_lengths(text: str | bytes) -> np.ndarray:
    import numpy as np

    raw = zlib.decompress(base64.b64decode(text))
    return np.frombuffer(raw, dtype="<u4").astype(np.int64)


# ------------------------------------------------------------------------------ container
def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint (Avro int/long) at ``pos``: (value, next position)."""
    shift = result = 0
    while True:
        if pos >= len(data):
            raise _Unsupported("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
    return (result >> 1) ^ -(result & 1), pos


def read_header(path: str, chunk: int = 65536) -> dict[str, bytes]:
    """The header metadata of an Avro object container file, reading only the header."""
    return read_header_sync(path, chunk)[0]


def read_header_sync(path: str, chunk: int = 65536) -> tuple[dict[str, bytes], bytes]:
    """The header metadata and the sync marker of an Avro object container file, reading only
    the header."""
    with file_io().open_data(path) as fh:
        data = fh.read(chunk)
        while True:
            try:
                meta, pos = _parse_header(data)
                if len(data) < pos + 16:
                    raise _Unsupported("truncated header")
                return meta, data[pos:pos + 16]
            except _Unsupported:
                more = fh.read(chunk * 4)
                if not more:
                    raise
                data += more


def _parse_header(data: bytes) -> tuple[dict[str, bytes], int]:
    """The header metadata and the position after the header's map (before the sync)."""
    if data[:4] != MAGIC:
        raise _Unsupported("not an Avro container file")
    pos = 4
    meta: dict[str, bytes] = {}
    while True:
        count, pos = _varint(data, pos)
        if count == 0:
            break
        if count < 0:
            _, pos = _varint(data, pos)  # byte size of the map block
            count = -count
        for _ in range(count):
            n, pos = _varint(data, pos)
            key = data[pos:pos + n].decode("utf-8")
            pos += n
            n, pos = _varint(data, pos)
            if pos + n > len(data):
                raise _Unsupported("truncated header")
            meta[key] = data[pos:pos + n]
            pos += n
    return meta, pos


def container_sync(data: bytes) -> bytes:
    """The sync marker of an Avro object container file, which also ends a whole file (raises
    ``ValueError`` when ``data`` does not start with a container header)."""
    _, pos = _parse_header(data)
    return data[pos:pos + 16]


def parse_container(data: bytes) -> tuple[dict[str, bytes], list[tuple[int, bytes]]]:
    """The header metadata and the data blocks ``(record count, payload)`` of an Avro object
    container file (payloads as stored, i.e. still compressed)."""
    meta, pos = _parse_header(data)
    sync = data[pos:pos + 16]
    pos += 16
    blocks = []
    while pos < len(data):
        count, pos = _varint(data, pos)
        size, pos = _varint(data, pos)
        payload = data[pos:pos + size]
        pos += size
        if len(payload) != size or data[pos:pos + 16] != sync:
            raise _Unsupported("bad block")
        pos += 16
        blocks.append((count, payload))
    return meta, blocks


# -------------------------------------------------------------------------------- fields
def _field_kind(avro_type: Any) -> tuple[str, int | None, int]:
    """(primitive kind, encoded branch tag of null or None, encoded tag of the value) of a
    field's Avro type; raises :class:`_Unsupported` for anything else."""
    null_tag = None
    value_tag = 0
    t = avro_type
    if isinstance(t, list):
        if len(t) != 2 or "null" not in t:
            raise _Unsupported("union")
        null_index = t.index("null")
        value_index = 1 - null_index
        null_tag, value_tag = null_index * 2, value_index * 2  # zig-zag of 0 / 1
        t = t[value_index]
    if isinstance(t, dict):
        kind, logical = t.get("type"), t.get("logicalType")
        if logical is not None and (kind, logical) not in _LOGICAL:
            raise _Unsupported(f"logical type {logical}")
        t = kind
    if t not in _PRIMITIVE:
        raise _Unsupported(f"type {t!r}")
    return t, null_tag, value_tag


def _varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zig-zag varints starting at every ``pos``: (values as int64, bytes consumed)."""
    import numpy as np

    value = np.zeros(len(pos), dtype=np.uint64)
    used = np.zeros(len(pos), dtype=np.int64)
    active = np.ones(len(pos), dtype=bool)
    for k in range(10):
        if not active.any():
            break
        byte = buf[pos + k].astype(np.uint64)
        value |= np.where(active, (byte & np.uint64(0x7F)) << np.uint64(7 * k), np.uint64(0))
        used += active
        active &= (byte & np.uint64(0x80)) != 0
    if active.any():
        raise _Unsupported("varint longer than 10 bytes")
    signed = (value >> np.uint64(1)).astype(np.int64) ^ -(value & np.uint64(1)).astype(np.int64)
    return signed, used


def _decode_field(buf: np.ndarray, pos: np.ndarray, kind: str, null_tag: int | None,
                  value_tag: int, *, keep: bool = True) -> tuple[pa.Array | None, np.ndarray]:
    """Decode one field of every record (records start at ``pos``): the Arrow array and the
    positions after the field. ``keep=False`` only steps over the field (no array)."""
    import numpy as np
    import pyarrow as pa

    n = len(pos)
    if null_tag is not None:
        tags = buf[pos]
        valid = tags == value_tag
        if not (valid | (tags == null_tag)).all():
            raise _Unsupported("unexpected union branch")
        pos = pos + 1
    else:
        valid = np.ones(n, dtype=bool)
    vp = pos[valid]
    mask = None if valid.all() else ~valid
    after = pos.copy()
    if not keep:
        if kind in ("int", "long"):
            after[valid] = vp + _varints(buf, vp)[1]
        elif kind in ("float", "double"):
            after[valid] = vp + (4 if kind == "float" else 8)
        elif kind == "boolean":
            after[valid] = vp + 1
        else:  # string, bytes
            lens, used = _varints(buf, vp)
            if (lens < 0).any():
                raise _Unsupported("negative length")
            after[valid] = vp + used + lens
        return None, after
    if kind in ("int", "long"):
        values, used = _varints(buf, vp)
        after[valid] = vp + used
        dtype = np.int32 if kind == "int" else np.int64
        if kind == "int" and len(values) and (values.min() < -2**31 or values.max() >= 2**31):
            raise _Unsupported("int out of range")
        full = np.zeros(n, dtype=dtype)
        full[valid] = values
        arr = pa.array(full, mask=mask)
    elif kind in ("float", "double"):
        width, dtype = (4, "<f4") if kind == "float" else (8, "<f8")
        raw = buf[vp[:, None] + np.arange(width)]
        full = np.zeros(n, dtype=dtype)
        full[valid] = raw.view(dtype).ravel()
        after[valid] = vp + width
        arr = pa.array(full, mask=mask)
    elif kind == "boolean":
        full = np.zeros(n, dtype=bool)
        full[valid] = buf[vp] != 0
        after[valid] = vp + 1
        arr = pa.array(full, pa.bool_(), mask=mask)
    else:  # string, bytes
        lens, used = _varints(buf, vp)
        if (lens < 0).any():
            raise _Unsupported("negative length")
        starts = vp + used
        after[valid] = starts + lens
        full_lens = np.zeros(n, dtype=np.int64)
        full_lens[valid] = lens
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(full_lens, out=offsets[1:])
        total = int(offsets[-1])
        if total >= 2**31:
            raise _Unsupported("more than 2 GiB of strings")
        full_starts = np.zeros(n, dtype=np.int64)
        full_starts[valid] = starts
        idx = np.repeat(full_starts - offsets[:-1], full_lens) + np.arange(total)
        data = buf[idx].tobytes() if total else b""
        validity = None
        nulls = 0
        if mask is not None:
            validity = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
            nulls = int(mask.sum())
        arr = pa.Array.from_buffers(
            pa.string() if kind == "string" else pa.binary(), n,
            [validity, pa.py_buffer(offsets.astype(np.int32).tobytes()), pa.py_buffer(data)],
            null_count=nulls)
        if kind == "string":
            arr.validate(full=True)  # UTF-8
    return arr, after


def read_columnar(data: bytes, struct: StructType, arrow: pa.Schema) -> pa.RecordBatch | None:
    """The records of an Avro log block as one Arrow batch of ``arrow`` (the block's columns,
    :func:`evonb.spark.avro_log.block_struct`), fields matched by field ID; ``None`` when the
    block is not one this reader decodes (see the module docstring)."""
    try:
        return _read_columnar(data, struct, arrow)
    except _Unsupported:
        return None


def _read_columnar(data: bytes, struct: StructType, arrow: pa.Schema) -> pa.RecordBatch:
    import numpy as np
    import pyarrow as pa

    meta, blocks = parse_container(data)
    if LENGTHS_KEY not in meta:
        raise _Unsupported("no record lengths")
    codec = meta.get("avro.codec", b"null").decode()
    if codec not in ("null", "deflate"):
        raise _Unsupported(f"codec {codec}")
    written = json.loads(meta["avro.schema"])
    if not isinstance(written, dict) or written.get("type") != "record":
        raise _Unsupported("not a record")
    kinds = [_field_kind(f["type"]) for f in written["fields"]]
    lengths = decode_lengths(meta[LENGTHS_KEY])
    payloads = [zlib.decompress(p, -15) if codec == "deflate" else p for _, p in blocks]
    counts = [c for c, _ in blocks]
    if sum(counts) != len(lengths):
        raise _Unsupported("record count")
    ends = np.cumsum(lengths)
    # every data block must be filled exactly by its records
    edge = np.cumsum(counts)
    sizes = np.cumsum([len(p) for p in payloads])
    if len(edge) and not np.array_equal(ends[edge - 1], sizes):
        raise _Unsupported("block sizes")
    buf = np.frombuffer(b"".join(payloads) + b"\x00" * 16, dtype=np.uint8)
    pos = ends - lengths
    by_id: dict[int, int] = {}
    columns: list[pa.Array | None] = []
    wanted = {field.id for field in struct.fields}
    for i, (f, (kind, null_tag, value_tag)) in enumerate(zip(written["fields"], kinds,
                                                             strict=True)):
        fid = int(f["field-id"]) if "field-id" in f else None
        # a field nobody reads (e.g. the commit time of a read without meta columns) is only
        # stepped over
        arr, pos = _decode_field(buf, pos, kind, null_tag, value_tag, keep=fid in wanted)
        columns.append(arr)
        if fid is not None:
            by_id[fid] = i
    if not np.array_equal(pos, ends):
        raise _Unsupported("records do not end where their lengths say")
    n = len(lengths)
    out = []
    for field, target in zip(struct.fields, arrow, strict=True):
        i = by_id.get(field.id)
        if i is None:
            out.append(pa.nulls(n, target.type))
            continue
        col = columns[i]
        assert col is not None  # a wanted field is always decoded
        if col.type != target.type:
            try:
                col = col.cast(target.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                raise _Unsupported(f"cast to {target.type}") from exc
        out.append(col)
    return pa.RecordBatch.from_arrays(out, schema=arrow)


__all__ = ["LENGTHS_KEY", "decode_lengths", "encode_lengths", "parse_container",
           "read_columnar", "read_header"]
