"""Read defaults filled by Spark's Parquet reader (``EXISTS_DEFAULT``) give exactly the rows that
the per-file fallback gives, and the reader is only trusted where it fills them correctly."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest

import evonb
from evonb.spark.reader import reader_fills_defaults
from evonb.spark.session import temporary_settings

VECTORIZED = "spark.sql.parquet.enableVectorizedReader"

# (column type, DDL default, a value written after the add, the Python value of the default)
TYPED_DEFAULTS = [
    ("boolean", "true", False, True),
    ("tinyint", "7", 1, 7),
    ("smallint", "-300", 2, -300),
    ("int", "999", 3, 999),
    ("bigint", "9000000000", 4, 9_000_000_000),
    ("float", "1.5", 2.25, 1.5),
    ("double", "-2.5", 0.125, -2.5),
    ("decimal(10,2)", "12.34", Decimal("1.00"), Decimal("12.34")),
    ("decimal(18,4)", "12345678901234.5678", Decimal("0.0001"),
     Decimal("12345678901234.5678")),
    ("decimal(38,10)", "1234567890123456789.5", Decimal("1.5"),
     Decimal("1234567890123456789.5000000000")),
    ("string", "'it''s \\\\ \u00e9t\u00e9'", "new", "it's \\ \u00e9t\u00e9"),
    ("binary", "X'0A0B'", b"\x01", b"\n\x0b"),
    ("date", "DATE '2020-02-29'", dt.date(2021, 1, 1), dt.date(2020, 2, 29)),
    ("timestamp", "TIMESTAMP '2020-01-02 03:04:05'", dt.datetime(2021, 1, 1),
     dt.datetime(2020, 1, 2, 3, 4, 5)),
    ("timestamp_ntz", "TIMESTAMP_NTZ '2020-01-02 03:04:05.123456'",
     dt.datetime(2021, 1, 1), dt.datetime(2020, 1, 2, 3, 4, 5, 123456)),
]


def rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def both_ways(spark, read) -> list[tuple]:
    """The rows of ``read()`` filled by the reader, checked equal to the per-file fallback."""
    assert reader_fills_defaults(spark)
    native = rows(read())
    with temporary_settings(spark, {VECTORIZED: "false"}):
        assert not reader_fills_defaults(spark)
        fallback = rows(read())
    assert native == fallback
    return native


@pytest.mark.parametrize(("type_", "ddl_default", "later", "default"), TYPED_DEFAULTS,
                         ids=[t[0] for t in TYPED_DEFAULTS])
def test_each_type_reads_its_default_in_old_files_only(spark, warehouse, type_, ddl_default,
                                                       later, default):
    t = evonb.create_table(warehouse / "t", "id int, a string")
    t.write(spark.createDataFrame([(1, "x"), (2, "y")], "id int, a string"))
    t.alter(f"ALTER TABLE t ADD COLUMN c {type_} DEFAULT {ddl_default}")
    t.write(spark.createDataFrame([(3, "z", later), (4, "w", None)],
                                  f"id int, a string, c {type_}"))
    got = both_ways(spark, t.read)
    assert sorted(got, key=lambda r: r[0]) == [
        (1, "x", default), (2, "y", default), (3, "z", later), (4, "w", None)]


def test_plan_uses_the_reader_for_fillable_types_only(spark, warehouse):
    """An int default is filled by the reader (no per-row file-name test in the plan); a binary
    one, which Spark's vectorized reader cannot fill, keeps the per-file choice."""

    def plan(df) -> str:
        return df._jdf.queryExecution().executedPlan().toString()

    tables = {}
    for name, type_, default, value in (("n", "int", "5", 6), ("b", "binary", "X'01'", b"\x02")):
        t = tables[name] = evonb.create_table(warehouse / name, "id int")
        t.write(spark.createDataFrame([(1,)], "id int"))
        t.alter(f"ALTER TABLE {name} ADD COLUMN {name} {type_} DEFAULT {default}")
        t.write(spark.createDataFrame([(2, value)], f"id int, {name} {type_}"))
    assert "file_name" not in plan(tables["n"].read())
    assert "file_name" in plan(tables["b"].read())
    assert rows(tables["n"].read()) == [(1, 5), (2, 6)]
    assert rows(tables["b"].read()) == [(1, b"\x01"), (2, b"\x02")]
    with temporary_settings(spark, {VECTORIZED: "false"}):
        assert "file_name" in plan(tables["n"].read())


def test_filters_on_a_defaulted_column_see_the_default(spark, warehouse):
    """A filter on a column that old files lack is not pushed into those files (they have no
    such column) and matches their default."""
    t = evonb.create_table(warehouse / "t", "id int")
    t.write(spark.range(0, 3000, 1, 3).selectExpr("cast(id as int) as id"))
    t.alter("ALTER TABLE t ADD COLUMN n int DEFAULT 5")
    t.write(spark.range(3000, 3010, 1, 1).selectExpr("cast(id as int) as id",
                                                     "cast(id % 7 as int) as n"))
    assert both_ways(spark, lambda: t.read().filter("n = 5").select("id")) == [
        (i,) for i in sorted([*range(3000), 3001, 3008], key=repr)]
    assert both_ways(spark, lambda: t.read().filter("n = 6").select("id")) == [(3002,), (3009,)]
    assert both_ways(spark, lambda: t.read().filter("n is null").select("id")) == []


def test_drop_and_re_add_first_of_many_columns(spark, warehouse):
    """The re-added column comes first in a scan of over 100 columns (where Spark returns rows
    rather than batches) and reads its default, never the dropped column's values."""
    cols = ", ".join(f"c{i} bigint" for i in range(110))
    t = evonb.create_table(warehouse / "t", f"k int, {cols}")
    t.write(spark.range(4).selectExpr("cast(id as int) as k",
                                      *[f"id + {i} as c{i}" for i in range(110)]))
    t.alter("ALTER TABLE t DROP COLUMN k")
    t.alter("ALTER TABLE t ADD COLUMN k int NOT NULL DEFAULT 999 FIRST")
    t.write(spark.range(10, 12).selectExpr("cast(id as int) as k",
                                           *[f"id + {i} as c{i}" for i in range(110)]))
    got = both_ways(spark, lambda: t.read().select("k", "c0", "c109"))
    assert sorted(got) == [(10, 10, 119), (11, 11, 120), *[(999, i, i + 109) for i in range(4)]]
    assert t.read().columns[:2] == ["k", "c0"]


def test_default_with_a_later_retype_keeps_the_old_generation(spark, warehouse):
    """A defaulted column later retyped in a way the reader cannot widen has two physical
    columns: files of the first generation keep their values, older files read the default."""
    t = evonb.create_table(warehouse / "t", "id int")
    t.write(spark.createDataFrame([(1,)], "id int"))
    t.alter("ALTER TABLE t ADD COLUMN n int DEFAULT 5")
    t.write(spark.createDataFrame([(2, 6)], "id int, n int"))
    t.alter("ALTER TABLE t ALTER COLUMN n TYPE string")
    t.write(spark.createDataFrame([(3, "seven")], "id int, n string"))
    assert sorted(both_ways(spark, t.read)) == [(1, "5"), (2, "6"), (3, "seven")]


def test_time_travel_onto_the_latest_schema(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id int")
    first = t.write(spark.createDataFrame([(1,)], "id int"))
    t.alter("ALTER TABLE t ADD COLUMN n int DEFAULT 5")
    t.write(spark.createDataFrame([(2, 6)], "id int, n int"))
    assert both_ways(spark, lambda: t.read(as_of=first, schema="latest")) == [(1, 5)]
    assert both_ways(spark, lambda: t.read(as_of=first)) == [(1,)]
