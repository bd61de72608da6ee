"""The columnar Avro writer against fastavro: for records drawn at random (every primitive kind,
nulls anywhere, extreme integers, multi-byte strings, empty values), the records' bytes, their
lengths and the data blocks, cut where fastavro cuts them, are fastavro's byte for byte, with
the ``null`` and ``deflate`` codecs; the log blocks evonb writes with it read back the rows
written, through fastavro and through evonb's columnar reader."""

from __future__ import annotations

import datetime as dt
import io
import itertools

import fastavro
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evonb.schema.schema import Schema
from evonb.spark.avro_encode import _long, data_blocks, encode_records, field_kinds, fits
from evonb.spark.avro_fast import decode_lengths, read_columnar, read_header
from evonb.spark.avro_log import (
    BASE,
    _encode_all,
    _runs,
    arrow_schema,
    block_struct,
    write_blocks_here,
)

AVRO = {"type": "record", "name": "r", "fields": [
    {"name": "a", "type": ["null", "long"]},
    {"name": "b", "type": ["null", "int"]},
    {"name": "c", "type": ["null", "double"]},
    {"name": "d", "type": ["null", "float"]},
    {"name": "e", "type": ["null", "string"]},
    {"name": "f", "type": ["null", "boolean"]},
    {"name": "g", "type": ["null", {"type": "int", "logicalType": "date"}]},
    {"name": "h", "type": ["null", {"type": "long", "logicalType": "timestamp-micros"}]},
    {"name": "i", "type": ["null", "bytes"]},
    {"name": "j", "type": "long"},
    {"name": "k", "type": ["string", "null"]},
]}
ARROW = pa.schema([("a", pa.int64()), ("b", pa.int32()), ("c", pa.float64()),
                   ("d", pa.float32()), ("e", pa.string()), ("f", pa.bool_()),
                   ("g", pa.date32()), ("h", pa.timestamp("us", "UTC")), ("i", pa.binary()),
                   ("j", pa.int64()), ("k", pa.large_string())])
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _fastavro(table: pa.Table, codec: str, block_bytes: int = 16000
              ) -> tuple[bytes, list[int], bytes]:
    """fastavro's data blocks of ``table``'s records, each record's length and the sync
    marker, written the way evonb's per-record path writes them."""
    fh = io.BytesIO()
    writer = fastavro.write.Writer(fh, fastavro.parse_schema(AVRO), codec=codec,
                                   sync_interval=2**62)
    head, lengths = fh.tell(), []
    for record in table.to_pylist():
        start = writer.io.tell()
        writer.write(record)
        end = writer.io.tell()
        lengths.append(end - start)
        if end >= block_bytes:
            writer.dump()
    writer.flush()
    return fh.getvalue()[head:], lengths, writer.sync_marker


nullable = st.none() | st.just(0)  # a marker: None, or "draw a value"
longs = st.integers(-2**63, 2**63 - 1)
ints = st.integers(-2**31, 2**31 - 1)
doubles = st.floats(allow_nan=False, allow_infinity=True)
floats = st.floats(width=32, allow_nan=False)
texts = st.text(max_size=40)
days = st.dates(min_value=dt.date(1, 1, 1), max_value=dt.date(9999, 12, 31))
instants = st.integers(-62_135_596_800_000_000, 253_402_300_799_999_999)  # years 1 to 9999
blobs = st.binary(max_size=30)


@st.composite
def tables(draw) -> pa.Table:
    n = draw(st.integers(0, 60))

    def column(values, t, *, required: bool = False):
        drawn = [draw(values) if required or draw(st.booleans()) else None for _ in range(n)]
        return pa.array(drawn, t)

    return pa.table([
        column(longs, pa.int64()), column(ints, pa.int32()), column(doubles, pa.float64()),
        column(floats, pa.float32()), column(texts, pa.string()), column(st.booleans(),
                                                                          pa.bool_()),
        column(days, pa.date32()),
        pa.array([None if draw(st.booleans()) else draw(instants) for _ in range(n)],
                 pa.int64()).cast(pa.timestamp("us", "UTC")),
        column(blobs, pa.binary()), column(longs, pa.int64(), required=True),
        column(texts, pa.large_string()),
    ], schema=ARROW)


@settings(max_examples=150, deadline=None)
@given(table=tables(), codec=st.sampled_from(["null", "deflate"]),
       block_bytes=st.sampled_from([1, 64, 16000]))
def test_records_and_blocks_are_fastavros_byte_for_byte(table, codec, block_bytes) -> None:
    expected, lengths, sync = _fastavro(table, codec, block_bytes)
    kinds = field_kinds(AVRO)
    assert kinds is not None and fits(ARROW, kinds)
    batch = table.combine_chunks().to_batches()[0] if table.num_rows else (
        pa.RecordBatch.from_pylist([], schema=ARROW))
    encoded = encode_records(batch, kinds)
    assert encoded is not None
    records, got_lengths = encoded
    assert got_lengths.tolist() == lengths
    assert data_blocks(records, got_lengths, sync=sync, codec=codec,
                       block_bytes=block_bytes) == expected


def test_a_sliced_batch_encodes_its_own_rows() -> None:
    """A batch that is a slice of a larger one (Arrow offsets not at zero) encodes the rows of
    the slice only."""
    table = pa.table({n: pa.array(v, t) for n, v, t in [
        ("a", [1, 2, 3, 4], pa.int64()), ("b", [1, None, 3, 4], pa.int32()),
        ("c", [0.5, 1.5, None, 2.5], pa.float64()), ("d", [1.0, 2.0, 3.0, None], pa.float32()),
        ("e", ["x", None, "zz", "ééé"], pa.string()), ("f", [True, False, None, True],
                                                       pa.bool_()),
        ("g", [dt.date(2020, 1, 1)] * 4, pa.date32()),
        ("h", [EPOCH, None, EPOCH, EPOCH], pa.timestamp("us", "UTC")),
        ("i", [b"", b"\x00", None, b"abc"], pa.binary()), ("j", [7, 8, 9, 10], pa.int64()),
        ("k", ["p", "q", None, "s"], pa.large_string())]}, schema=ARROW)
    part = table.slice(1, 2)
    expected, lengths, sync = _fastavro(part, "null")
    records, got = encode_records(part.to_batches()[0], field_kinds(AVRO))
    assert got.tolist() == lengths
    assert data_blocks(records, got, sync=sync, codec="null", block_bytes=16000) == expected


def test_what_it_does_not_encode() -> None:
    """Nested types, decimals, unions of more than null and one type, and columns whose Arrow
    type does not fit the field are left to fastavro (None)."""
    for t in ({"type": "array", "items": "long"}, ["null", "long", "string"],
              {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 2},
              {"type": "record", "name": "s", "fields": []}, {"type": "map", "values": "int"}):
        assert field_kinds({"type": "record", "name": "r", "fields": [{"name": "x",
                                                                         "type": t}]}) is None
    kinds = field_kinds({"type": "record", "name": "r", "fields": [
        {"name": "x", "type": ["null", "long"]}]})
    assert kinds == [("long", 0, 2)]
    assert not fits(pa.schema([("x", pa.float64())]), kinds)
    assert not fits(pa.schema([("x", pa.timestamp("ns"))]), kinds)
    assert encode_records(pa.RecordBatch.from_pylist([{"x": 1.5}]), kinds) is None
    with pytest.raises(ValueError, match="codec"):
        data_blocks(b"", np.zeros(0, np.int64), sync=b"0" * 16, codec="snappy",
                    block_bytes=16000)


@pytest.mark.parametrize("codec", ["null", "deflate", "bzip2"])
def test_log_blocks_read_back_their_rows(tmp_path, codec) -> None:
    """Blocks written from the driver (columnar for null and deflate, fastavro for bzip2):
    fastavro and evonb's columnar reader both read back the rows written, and the header's
    record lengths add up to the records."""
    physical = Schema.from_ddl("id bigint not null, name string, amount double, day date")
    struct = block_struct(physical)
    arrow = arrow_schema(struct, "UTC")
    n = 3000
    rows = pa.table({
        "id": pa.array(np.arange(n, dtype=np.int64) * 7919),
        "name": pa.array([None if i % 5 == 0 else f"name-{i}-é" for i in range(n)]),
        "amount": pa.array([i / 3 for i in range(n)]),
        "day": pa.array([dt.date(2026, 1, 1) + dt.timedelta(days=i % 400) for i in range(n)]),
        "_evo_commit_time": pa.array(["20261129000000000"] * n),
        "_evo_pos": pa.array(np.arange(n, dtype=np.int64)),
        "_evo_over": pa.array([i % 3 != 0 for i in range(n)]),
        "_evo_deleted": pa.array([False] * n),
    }).cast(arrow)
    both = rows.append_column(BASE, pa.array(["p/base.parquet"] * 1000 + ["q.parquet"] * 2000))
    (tmp_path / ".evo").mkdir()
    written = write_blocks_here(both, root=tmp_path, instant="20261129000000000",
                                physical=physical, fmt="avro", codec=codec,
                                base_rows={"p/base.parquet": 5000, "q.parquet": 9000})
    by_base = {f.base: f for f in written}
    assert {b: f.rows for b, f in by_base.items()} == {"p/base.parquet": 1000,
                                                       "q.parquet": 2000}
    start = 0
    for f in (by_base["p/base.parquet"], by_base["q.parquet"]):
        path = tmp_path / f.path
        data = path.read_bytes()
        with open(path, "rb") as fh:
            records = list(fastavro.reader(fh))
        expected = rows.slice(start, f.rows)
        assert records == expected.to_pylist()
        lengths = decode_lengths(read_header(str(path))["evonb.record.lengths"])
        assert len(lengths) == f.rows
        if codec == "null":
            assert int(lengths.sum()) < len(data)
        decoded = read_columnar(data, struct, arrow)
        if codec != "bzip2":  # the columnar reader decodes null and deflate blocks
            assert decoded is not None and decoded.to_pylist() == expected.to_pylist()
        else:
            assert decoded is None
        start += f.rows


@settings(max_examples=100, deadline=None)
@given(table=tables(), cuts=st.lists(st.integers(0, 60), max_size=4))
def test_records_encoded_at_once_cut_into_groups_are_each_groups_own(table, cuts) -> None:
    """The driver encodes the records of every file group in one call and cuts the bytes per
    group (``_encode_all``): each group's bytes and lengths are those of encoding its rows
    alone."""
    encoded = _encode_all(table.combine_chunks(), AVRO, "null")
    if table.num_rows == 0:
        assert encoded is None  # nothing to encode: the sink's own path
        return
    assert encoded is not None
    bounds = sorted({0, table.num_rows, *(c for c in cuts if c <= table.num_rows)})
    for start, stop in itertools.pairwise(bounds):
        data, lengths = encoded.slice(start, stop)
        alone = encode_records(table.slice(start, stop - start).combine_chunks().to_batches()[0],
                               field_kinds(AVRO))
        assert alone is not None
        assert data == alone[0]
        assert lengths.tolist() == alone[1].tolist()


@given(value=longs)
def test_a_block_count_or_size_is_fastavros_long(value) -> None:
    fh = io.BytesIO()
    fastavro.schemaless_writer(fh, "long", value)
    assert _long(value) == fh.getvalue()


@given(sizes=st.lists(st.integers(1, 5), max_size=8))
def test_groups_are_the_runs_of_their_base_file(sizes) -> None:
    names = [f"g{i % 3}/{i}.parquet" for i in range(len(sizes))]  # neighbours differ
    column = [name for name, size in zip(names, sizes, strict=True) for _ in range(size)]
    expected, at = [], 0
    for name, size in zip(names, sizes, strict=True):
        expected.append((name, at, at + size))
        at += size
    assert _runs(pa.array(column, pa.string())) == expected
    halves = pa.chunked_array([column[:len(column) // 2], column[len(column) // 2:]],
                              pa.string())
    assert _runs(halves) == expected
