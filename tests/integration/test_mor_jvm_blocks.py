"""Log blocks read inside the JVM by Spark's own Avro (or Parquet) reader.

A file group whose blocks were all written by one commit is merged by position with its
records read by Spark's reader; other groups are resolved by Python workers. Both give the
same rows as each other and as a copy-on-write table given the same writes, over every column
type; columns Spark's reader cannot give exactly, codecs it cannot decode, and the table
property ``evonb.mor.read.jvm=false`` use the Python workers."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

import evonb
from evonb.spark.block_scan import jvm_blocks_available
from evonb.spark.mor import file_groups, position_drops, read_snapshot

pytestmark = pytest.mark.spark

TYPES = ("id bigint not null, ts bigint, flag boolean, i int, f float, d double, "
         "dec decimal(10,2), big decimal(30,5), s string, bin binary, day date, "
         "at timestamp, local timestamp_ntz, st struct<a: int, b: string>, "
         "arr array<double>, m map<string, bigint>, nest array<struct<x: string>>")
COLS = ("id long, ts long, flag boolean, i int, f float, d double, dec decimal(10,2), "
        "big decimal(30,5), s string, bin binary, day date, at timestamp, "
        "local timestamp_ntz, st struct<a: int, b: string>, arr array<double>, "
        "m map<string, bigint>, nest array<struct<x: string>>")


def _row(i, ts, tag):
    odd = i % 2 == 1
    return (i, ts, odd, i * 3, float(i) / 4, float("nan") if i == 7 else i * 1.5,
            Decimal(f"{i}.25"), Decimal(f"{i}12345678901234567890.12345"),
            f"{tag}-é-{i}" if i != 5 else None, bytes([i % 256, 0, 255]),
            dt.date(1500, 1, 1) if i == 3 else dt.date(2024, 1, 1) + dt.timedelta(days=i),
            dt.datetime(1500, 3, 1, 12) if i == 3 else dt.datetime(2024, 5, 1, 0, 0, i),
            dt.datetime(2024, 6, 1, 1, 2, 3, 456),
            None if i == 4 else (i, f"b{i}"), [1.5, None, float(i)],
            {"k": i, "none": None}, [(f"x{i}",), None])


def _rows(df):
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _plan(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def _avro_scan(plan: str) -> bool:
    """Whether ``plan`` reads Avro blocks inside the JVM (Spark's Avro source or evonb's)."""
    return "FileScan avro" in plan or "FileScan evonb-avro-blocks" in plan


def _same(a, b):
    """Rows equal, with NaN equal to itself."""
    def norm(rows):
        return [tuple("NaN" if isinstance(v, float) and v != v else v for v in r) for r in rows]
    return norm(a) == norm(b)


def _tables(spark, tmp_path, ddl=TYPES, cols=COLS, fmt="avro", properties=None):
    mor = evonb.create_table(tmp_path / f"mor_{fmt}", ddl, primary_key="id", precombine="ts",
                             table_type="mor",
                             properties={"evonb.mor.log_format": fmt,
                                         "evonb.write.target.file.bytes": "0",
                                         **(properties or {})})
    cow = evonb.create_table(tmp_path / f"cow_{fmt}", ddl, primary_key="id", precombine="ts")
    return mor, cow, cols


def _write(tables, spark, rows, cols, mode="upsert"):
    df = spark.createDataFrame(rows, cols)
    for t in tables:
        t.write(df, mode)


def test_jvm_reader_agrees_with_python_and_cow_on_every_type(spark, tmp_path):
    assert jvm_blocks_available(spark)
    mor, cow, cols = _tables(spark, tmp_path)
    both = (mor, cow)
    base = spark.createDataFrame([_row(i, 5, "b") for i in range(40)], cols)
    _write(both, spark, [tuple(r) for r in base.collect()], cols, "insert")
    # one commit: wins (ts 9), losses (ts 1), ties (ts 5), null precombine
    _write(both, spark, [_row(i, 9, "win") for i in (1, 3, 4, 7)]
           + [_row(i, 1, "lose") for i in (2, 6)] + [_row(8, 5, "tie"), _row(9, None, "null")],
           cols)
    snap = mor.snapshot()
    assert set(position_drops(mor, snap)) == {f.base for f in snap.logs}
    jvm = mor.read()
    assert _avro_scan(_plan(jvm)) and "MapInArrow" not in _plan(jvm)
    got = _rows(jvm)
    assert _same(got, _rows(cow.read()))
    by_id = {r[0]: r for r in got}
    assert by_id[1][8] == "win-é-1" and by_id[2][8] == "b-é-2" and by_id[8][8] == "tie-é-8"
    assert by_id[3][10] == dt.date(1500, 1, 1) and by_id[3][11] == dt.datetime(1500, 3, 1, 12)
    assert by_id[4][13] is None and by_id[1][13] == (1, "b1")
    mor.set_properties({"evonb.mor.read.jvm": "false"})
    python = mor.read()
    assert not _avro_scan(_plan(python)) and "MapInArrow" in _plan(python)
    assert _same(_rows(python), got)
    python_meta = _rows(mor.read(meta_columns=True))
    mor.set_properties({"evonb.mor.read.jvm": "true"})
    jvm_meta = mor.read(meta_columns=True)
    assert _avro_scan(_plan(jvm_meta))
    assert _same(_rows(jvm_meta), python_meta)
    by_key = read_snapshot(mor, snap, mor.schema, meta=True, positions=False)
    assert _same(python_meta, _rows(by_key))
    assert {r[-1] for r in python_meta} == {c.instant for c in mor.history()[1:]}


def test_deletes_and_groups_of_several_commits(spark, tmp_path):
    """A group whose only block is a delete is read by the JVM; a group with blocks of two
    commits is resolved by Python workers; the same read holds both."""
    ddl, cols = "id bigint not null, v string, ts bigint", "id long, v string, ts long"
    mor, cow, _ = _tables(spark, tmp_path, ddl, cols)
    both = (mor, cow)
    for t in both:  # two base files: ids below 10, ids from 10
        t.write(spark.createDataFrame([(i, f"b{i}", 5) for i in range(10)], cols), "insert")
        t.write(spark.createDataFrame([(i, f"b{i}", 5) for i in range(10, 20)], cols), "insert")
    _write(both, spark, [(1,), (2,), (99,)], "id long", "delete")      # group 1: a delete
    _write(both, spark, [(11, "u", 9), (12, "lose", 1)], cols)         # group 2: an update
    groups = file_groups(mor.snapshot())
    assert len(groups) >= 2 and all(len({f.instant for f in g}) == 1 for g in groups.values())
    one = mor.read()
    assert _avro_scan(_plan(one)) and "MapInArrow" not in _plan(one)
    assert _rows(one) == _rows(cow.read())
    assert not any(r[0] in (1, 2) for r in _rows(one)) and (11, "u", 9) in _rows(one)
    _write(both, spark, [(1, "back", 0), (13, "u13", 7)], cols)  # both groups: two commits
    _write(both, spark, [(15, "u15", 8)], cols)
    mixed = mor.read()
    assert "MapInArrow" in _plan(mixed) and _avro_scan(_plan(mixed))
    assert _rows(mixed) == _rows(cow.read())
    assert (1, "back", 0) in _rows(mixed) and (12, "b12", 5) in _rows(mixed)
    snap = mor.snapshot()
    assert _rows(mor.read(meta_columns=True)) == _rows(
        read_snapshot(mor, snap, mor.schema, meta=True, positions=False))


def test_names_are_read_by_their_physical_names(spark, tmp_path):
    """Names that are not Avro names are stored under plain physical names, which Spark's
    reader reads."""
    ddl = "id bigint not null, `v w` string, s struct<`a-b`: int>, ts bigint"
    mor, cow, _ = _tables(spark, tmp_path, ddl, None)
    schema = cow.read().schema
    for t in (mor, cow):
        t.write(spark.createDataFrame([(i, f"x{i}", (i,), 5) for i in range(6)], schema),
                "insert")
        t.write(spark.createDataFrame([(2, "new", (20,), 9)], schema), "upsert")
    read = mor.read()
    assert _avro_scan(_plan(read)) and "MapInArrow" not in _plan(read)
    assert read.columns == ["id", "v w", "s", "ts"]
    assert _rows(read) == _rows(cow.read()) and (2, "new", (20,), 9) in _rows(read)


def test_a_tinyint_column_uses_python(spark, tmp_path):
    """Avro stores tinyint and smallint as int: such columns go through the Python reader."""
    ddl = "id bigint not null, v tinyint, w smallint, ts bigint"
    mor, cow, _ = _tables(spark, tmp_path, ddl, None)
    schema = cow.read().schema
    for t in (mor, cow):
        t.write(spark.createDataFrame([(i, i, i * 100, 5) for i in range(6)], schema), "insert")
        t.write(spark.createDataFrame([(2, -3, -300, 9)], schema), "upsert")
    read = mor.read()
    assert "MapInArrow" in _plan(read) and not _avro_scan(_plan(read))
    assert _rows(read) == _rows(cow.read()) and (2, -3, -300, 9) in _rows(read)


def test_a_codec_spark_cannot_decode_uses_python(spark, tmp_path, monkeypatch):
    """Blocks are read by Spark's reader only in the codecs it decodes (deflate here); a block
    in another codec goes to the Python reader."""
    import evonb.spark.mor as mor_module

    ddl, cols = "id bigint not null, v string, ts bigint", "id long, v string, ts long"
    mor, cow, _ = _tables(spark, tmp_path, ddl, cols,
                          properties={"evonb.mor.avro.codec": "deflate"})
    _write((mor, cow), spark, [(i, f"b{i}", 5) for i in range(10)], cols, "insert")
    _write((mor, cow), spark, [(3, "u", 9)], cols)
    read = mor.read()
    assert _avro_scan(_plan(read))
    assert _rows(read) == _rows(cow.read()) and (3, "u", 9) in _rows(read)
    monkeypatch.setattr(mor_module, "JVM_AVRO_CODECS", frozenset({"null"}))
    mor_module._POSITION_PLANS.clear()
    read = mor.read()
    assert "MapInArrow" in _plan(read) and not _avro_scan(_plan(read))
    assert _rows(read) == _rows(cow.read())


def test_parquet_blocks_are_read_by_sparks_parquet_reader(spark, tmp_path):
    mor, cow, cols = _tables(spark, tmp_path, fmt="parquet")
    _write((mor, cow), spark, [_row(i, 5, "b") for i in range(12)], cols, "insert")
    _write((mor, cow), spark, [_row(i, 9, "w") for i in (1, 3)] + [_row(2, 1, "l")], cols)
    read = mor.read()
    plan = _plan(read)
    assert "MapInArrow" not in plan
    assert any("FileScan parquet" in line and "_evo_over" in line for line in plan.splitlines())
    assert _same(_rows(read), _rows(cow.read()))


def test_which_columns_sparks_reader_gives_exactly():
    from evonb.schema.types import (
        INT,
        SMALLINT,
        STRING,
        TINYINT,
        ArrayType,
        MapType,
        NestedField,
        StructType,
    )
    from evonb.spark.block_scan import jvm_readable

    def f(name, t):
        return NestedField(1, name, t)

    assert jvm_readable(f("a_b", STRING)) and jvm_readable(f("_x9", INT))
    assert not jvm_readable(f("a b", STRING)) and not jvm_readable(f("9a", INT))
    assert not jvm_readable(f("a", TINYINT)) and not jvm_readable(f("a", SMALLINT))
    inner = StructType((NestedField(2, "ok", INT), NestedField(3, "x-y", INT)))
    assert not jvm_readable(f("s", inner))
    assert not jvm_readable(f("arr", ArrayType(NestedField(4, "element", TINYINT))))
    assert not jvm_readable(f("m", MapType(NestedField(5, "key", STRING),
                                           NestedField(6, "value", SMALLINT))))
    assert jvm_readable(f("m", MapType(NestedField(5, "key", STRING),
                                       NestedField(6, "value", inner.fields[0].type))))
