"""The columnar Avro reader of log blocks: the same rows as fastavro for every primitive type,
nulls, deletes and both codecs; None (so fastavro decodes) for anything it does not cover or
cannot verify."""

from __future__ import annotations

import datetime as dt
import io
import random

import fastavro
import pyarrow as pa
import pytest

import evonb.spark.avro_log as avro_log
from evonb.schema.schema import Schema
from evonb.spark.avro_fast import (
    LENGTHS_KEY,
    decode_lengths,
    encode_lengths,
    read_columnar,
    read_header,
)
from evonb.spark.avro_log import (
    _BlockSink,
    _read_block,
    arrow_schema,
    block_avro_schema,
    block_struct,
    decode_positions,
    encode_positions,
)

INSTANT = "20260101000000001"
BASE = "b_0_20260101000000000.parquet"
FLAT = ("id bigint not null, t tinyint, s smallint, i int, f float, d double, name string, "
        "raw binary, day date, at timestamp, ntz timestamp_ntz, ok boolean")


def _row(i: int) -> dict:
    rnd = random.Random(i)
    if i % 7 == 3:
        return {"id": i, "_evo_deleted": True}
    return {"id": i * 7919 - 50_000, "t": i % 100 - 50, "s": i - 3000, "i": -i * 1000,
            "f": i / 3, "d": i * 1e300 if i % 5 == 0 else -i / 7,
            "name": rnd.choice(["", "é漢字", "x" * 200, None, f"n{i}"]),
            "raw": bytes([i % 256]) * (i % 4),
            "day": dt.date(2020, 1, 1) + dt.timedelta(days=i),
            "at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=i * 12345),
            "ntz": dt.datetime(2024, 1, 1) + dt.timedelta(seconds=i),
            "ok": None if i % 3 == 0 else i % 2 == 0, "_evo_deleted": False}


def _block(tmp_path, ddl: str, rows: list[dict], codec: str = "null", batch: int = 700):
    schema = Schema.from_ddl(ddl)
    struct = block_struct(schema)
    arrow = arrow_schema(struct, "UTC")
    timeline = tmp_path / ".evo" / "timeline"  # the write the block belongs to is under way
    timeline.mkdir(parents=True, exist_ok=True)
    (timeline / f"{INSTANT}.deltacommit.requested").write_text("{}")
    sink = _BlockSink(str(tmp_path), INSTANT, schema.version_id, 0, 0, "avro",
                      block_avro_schema(schema), struct, arrow, codec, {BASE: 10_000})
    full = [{f.name: r.get(f.name) for f in struct.fields} | {"_evo_commit_time": INSTANT}
            for r in rows]
    for k in range(0, len(full), batch):  # several batches, several Avro data blocks
        sink.add(BASE, pa.RecordBatch.from_pylist(full[k:k + batch], arrow))
    sink.close()
    return str(tmp_path / sink.stats[0][0]), struct, arrow


def _slow(path, struct, arrow, monkeypatch):
    with monkeypatch.context() as m:
        m.setattr(avro_log, "read_columnar", lambda *a: None)
        return pa.Table.from_batches(list(_read_block(path, struct, arrow)), schema=arrow)


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_same_rows_as_fastavro(tmp_path, monkeypatch, codec):
    path, struct, arrow = _block(tmp_path, FLAT, [_row(i) for i in range(5000)], codec)
    with open(path, "rb") as fh:
        data = fh.read()
    fast = read_columnar(data, struct, arrow)
    assert fast is not None and fast.num_rows == 5000
    assert pa.Table.from_batches([fast]).equals(_slow(path, struct, arrow, monkeypatch))
    assert pa.Table.from_batches(list(_read_block(path, struct, arrow))).equals(
        pa.Table.from_batches([fast]))
    # the block is a plain Avro file: fastavro reads it, metadata included
    with open(path, "rb") as fh:
        reader = fastavro.reader(fh)
        assert len(list(reader)) == 5000
        assert len(decode_lengths(reader.metadata[LENGTHS_KEY])) == 5000
    assert read_header(path)["evonb.base"] == BASE.encode()


def test_fields_matched_by_id_and_missing_ones_null(tmp_path):
    path, _, _ = _block(tmp_path, "id bigint not null, price double",
                        [{"id": 1, "price": 2.5}, {"id": 2}])
    old = Schema.from_ddl("id bigint not null, price double")
    new = Schema(fields=(old.fields[0], old.fields[1].replace(name="cost"),
                         *Schema.from_ddl("a int, b int, c string").fields[2:]))
    struct = block_struct(new)
    with open(path, "rb") as fh:
        got = read_columnar(fh.read(), struct, arrow_schema(struct, "UTC")).to_pylist()
    assert [(r["id"], r["cost"], r["c"]) for r in got] == [(1, 2.5, None), (2, None, None)]


def test_unsupported_or_unverifiable_blocks_fall_back(tmp_path, monkeypatch):
    # nested columns: fastavro decodes them
    path, struct, arrow = _block(tmp_path / "n", "id bigint not null, s struct<a:int>",
                                 [{"id": 1, "s": {"a": 1}}])
    with open(path, "rb") as fh:
        assert read_columnar(fh.read(), struct, arrow) is None
    assert pa.Table.from_batches(list(_read_block(path, struct, arrow))).to_pylist()[0][
        "s"] == {"a": 1}
    # a block without lengths (an older writer), and one whose lengths are wrong
    schema = Schema.from_ddl("id bigint not null, v string")
    struct = block_struct(schema)
    arrow = arrow_schema(struct, "UTC")
    records = [{"id": i, "v": f"v{i}", "_evo_commit_time": INSTANT} for i in range(100)]
    for meta in ({}, {LENGTHS_KEY: encode_lengths([10] * 100)},
                 {LENGTHS_KEY: encode_lengths([10] * 99)}):
        buf = io.BytesIO()
        fastavro.writer(buf, fastavro.parse_schema(block_avro_schema(schema)), records,
                        metadata=meta)
        assert read_columnar(buf.getvalue(), struct, arrow) is None
        (tmp_path / "old.avro").write_bytes(buf.getvalue())
        got = pa.Table.from_batches(list(_read_block(str(tmp_path / "old.avro"), struct,
                                                     arrow)))
        assert got.column("v").to_pylist() == [f"v{i}" for i in range(100)]


def test_positions_round_trip():
    pos = [7, 0, 3, 3, 10_000_000]
    assert list(decode_positions(encode_positions(pos))) == [0, 3, 7, 10_000_000]
    assert list(decode_positions(encode_positions([]))) == []


def test_fields_not_read_are_stepped_over(tmp_path, monkeypatch):
    """A struct without some written fields (every type, nulls included) decodes the rest as
    the full read does: the skipped fields are stepped over, not decoded."""
    path, struct, arrow = _block(tmp_path, FLAT, [_row(i) for i in range(3000)])
    with open(path, "rb") as fh:
        data = fh.read()
    full = pa.Table.from_batches([read_columnar(data, struct, arrow)])
    skipped = {"t", "f", "d", "name", "raw", "ok", "_evo_commit_time"}
    part = type(struct)(tuple(f for f in struct.fields if f.name not in skipped))
    part_arrow = arrow_schema(part, "UTC")
    got = read_columnar(data, part, part_arrow)
    assert got is not None and got.schema == part_arrow
    assert pa.Table.from_batches([got]).equals(full.select(part_arrow.names))
    assert pa.Table.from_batches(list(_read_block(path, part, part_arrow))).equals(
        _slow(path, part, part_arrow, monkeypatch))
