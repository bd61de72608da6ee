"""evonb's Avro source for log blocks (``org.evonb.spark.LogBlockAvro``): flat records decoded
straight from each file's own schema into Spark rows. It gives the same rows as Spark's Avro
reader and as a copy-on-write table on every type it takes; reads with other types use Spark's
reader; it skips fields of every Avro type, scales millisecond timestamps, reads a column the
file lacks as null, reads every record of a file split into many pieces exactly once, and a
column of a type it does not take fails the read with the column's name."""

from __future__ import annotations

import contextlib
import datetime as dt
from decimal import Decimal

import fastavro
import pytest

import evonb
from evonb.spark.block_scan import BLOCK_FORMAT, scan_blocks

pytestmark = pytest.mark.spark

FLAT = ("id bigint not null, ts bigint, flag boolean, i int, f float, d double, s string, "
        "bin binary, day date, at timestamp, local timestamp_ntz")
COLS = ("id long, ts long, flag boolean, i int, f float, d double, s string, bin binary, "
        "day date, at timestamp, local timestamp_ntz")


def _row(i, ts, tag):
    return (i, ts, i % 2 == 1, None if i == 2 else i * 3, float(i) / 4,
            float("inf") if i == 7 else i * 1.5, f"{tag}-é-{i}" if i != 5 else None,
            bytes([i % 256, 0, 255]),
            dt.date(1500, 1, 1) if i == 3 else dt.date(2024, 1, 1) + dt.timedelta(days=i),
            dt.datetime(1500, 3, 1, 12) if i == 3 else dt.datetime(2024, 5, 1, 0, 0, i),
            None if i == 4 else dt.datetime(2024, 6, 1, 1, 2, 3, 456))


def _rows(df):
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def _tables(spark, tmp_path, ddl, cols, make):
    mor = evonb.create_table(tmp_path / "mor", ddl, primary_key="id", precombine="ts",
                             table_type="mor")
    cow = evonb.create_table(tmp_path / "cow", ddl, primary_key="id", precombine="ts")
    for t in (mor, cow):
        t.write(spark.createDataFrame([make(i, 1, "base") for i in range(12)], cols), "insert")
        t.write(spark.createDataFrame([make(i, 9 if i % 3 else 0, "new") for i in range(0, 16, 2)],
                                      cols), "upsert")
    return mor, cow


def test_flat_blocks_are_decoded_by_evonbs_reader(spark, tmp_path):
    mor, cow = _tables(spark, tmp_path, FLAT, COLS, _row)
    read = mor.read()
    assert "FileScan evonb-avro-blocks" in _plan(read)
    want = _rows(cow.read())
    assert _rows(read) == want
    assert (8, 9, False, 24, 2.0, 12.0, "new-é-8", bytes([8, 0, 255]), dt.date(2024, 1, 9),
            dt.datetime(2024, 5, 1, 0, 0, 8), dt.datetime(2024, 6, 1, 1, 2, 3, 456)) in want
    # The same records through Spark's Avro reader.
    from evonb.spark.avro_log import block_avro_schema, block_struct

    schema, layout = mor.version(mor.schema.version_id)
    physical = mor.physical_query(schema, layout)
    paths = [str(mor.root / f.path) for f in mor.snapshot().logs]
    args = (spark, paths, "avro", block_struct(physical), block_avro_schema(physical))
    own, theirs = scan_blocks(*args), scan_blocks(*args, own_reader=False)
    assert "FileScan evonb-avro-blocks" in _plan(own)
    assert "FileScan avro" in _plan(theirs)
    assert _rows(own) == _rows(theirs)
    assert sorted(r[0] for r in _rows(own)) == [0, 2, 4, 6, 8, 10]  # 12 and 14: new files


def test_other_types_use_sparks_reader(spark, tmp_path):
    def make(i, ts, tag):
        return (i, ts, Decimal(f"{i}.25"), f"{tag}{i}")

    mor, cow = _tables(spark, tmp_path, "id bigint not null, ts bigint, dec decimal(10,2), "
                       "s string", "id long, ts long, dec decimal(10,2), s string", make)
    read = mor.read()
    assert "FileScan avro" in _plan(read) and "evonb-avro-blocks" not in _plan(read)
    assert _rows(read) == _rows(cow.read())


def _schema(fields):
    return fastavro.parse_schema({"type": "record", "name": "r", "fields": fields})


SKIPPED = [
    {"name": "rec", "type": {"type": "record", "name": "inner",
                             "fields": [{"name": "a", "type": "int"},
                                        {"name": "b", "type": ["null", "string"]}]}},
    {"name": "arr", "type": {"type": "array", "items": "long"}},
    {"name": "m", "type": {"type": "map", "values": "double"}},
    {"name": "e", "type": {"type": "enum", "name": "color", "symbols": ["R", "G"]}},
    {"name": "fx", "type": {"type": "fixed", "name": "four", "size": 4}},
    {"name": "dec", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6,
                             "scale": 2}},
]


def _skipped_values(i):
    return {"rec": {"a": i, "b": None if i % 2 else "x"}, "arr": list(range(i)),
            "m": {"k": 1.5}, "e": "G", "fx": b"abcd", "dec": Decimal(f"{i}.10")}


def _read(spark, path, ddl):
    return spark.read.format(BLOCK_FORMAT).schema(ddl).load(str(path))


def test_the_reader_skips_every_type_and_scales_milliseconds(spark, tmp_path):
    fields = [{"name": "id", "type": "long"}, *SKIPPED[:3],
              {"name": "ms", "type": ["null", {"type": "long",
                                                "logicalType": "timestamp-millis"}]},
              {"name": "lms", "type": {"type": "long", "logicalType": "local-timestamp-millis"}},
              *SKIPPED[3:], {"name": "s", "type": ["string", "null"]}]
    base = dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=dt.UTC)
    records = [{"id": i, **_skipped_values(i),
                "ms": None if i == 1 else base + dt.timedelta(seconds=i),
                "lms": dt.datetime(2024, 1, 2, 3, 4, 5, 678000) + dt.timedelta(seconds=i),
                "s": None if i == 2 else f"s{i}"} for i in range(4)]
    path = tmp_path / "block.avro"
    with open(path, "wb") as fh:
        fastavro.writer(fh, _schema(fields), records)
    got = _rows(_read(spark, path, "s string, gone int, ms timestamp, lms timestamp_ntz, "
                      "id long"))
    assert got == sorted([
        (None, None, dt.datetime(2024, 1, 2, 3, 4, 7, 678000), dt.datetime(2024, 1, 2, 3, 4, 7,
                                                                          678000), 2),
        ("s0", None, dt.datetime(2024, 1, 2, 3, 4, 5, 678000), dt.datetime(2024, 1, 2, 3, 4, 5,
                                                                          678000), 0),
        ("s1", None, None, dt.datetime(2024, 1, 2, 3, 4, 6, 678000), 1),
        ("s3", None, dt.datetime(2024, 1, 2, 3, 4, 8, 678000), dt.datetime(2024, 1, 2, 3, 4, 8,
                                                                          678000), 3),
    ], key=repr)


def test_a_column_of_another_type_fails_the_read_by_name(spark, tmp_path):
    path = tmp_path / "block.avro"
    with open(path, "wb") as fh:
        fastavro.writer(fh, _schema([{"name": "id", "type": "long"}, *SKIPPED]),
                        [{"id": 1, **_skipped_values(1)}])
    for ddl, column in (("id int", "id"), ("dec decimal(6,2)", "dec"), ("e string", "e")):
        with pytest.raises(Exception, match=f"cannot read column {column} of Avro type"):
            _read(spark, path, ddl).collect()


@contextlib.contextmanager
def _small_splits(spark):
    keys = ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")
    before = {k: spark.conf.get(k) for k in keys}
    spark.conf.set(keys[0], "2048")
    spark.conf.set(keys[1], "1")
    try:
        yield
    finally:
        for k, v in before.items():
            spark.conf.set(k, v)


def test_a_file_in_many_splits_gives_every_record_once(spark, tmp_path):
    path = tmp_path / "many.avro"
    fields = [{"name": "id", "type": "long"}, {"name": "s", "type": "string"}]
    with open(path, "wb") as fh:
        fastavro.writer(fh, _schema(fields), [{"id": i, "s": f"v{i:05d}"} for i in range(5000)],
                        sync_interval=512)
    with _small_splits(spark):
        df = _read(spark, path, "id long, s string")
        assert df.rdd.getNumPartitions() > 10
        got = [tuple(r) for r in df.collect()]
    assert sorted(got) == [(i, f"v{i:05d}") for i in range(5000)]
