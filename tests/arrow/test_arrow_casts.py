"""The Arrow reader's casts against Spark's for the type changes evonb allows in metadata
(and the narrowing casts of a read in an older schema): dates, timestamps, decimals, floats
read as text, text read as dates and decimals."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

import evonb
from tests.arrow.test_arrow_reader import _same

pytestmark = pytest.mark.spark

COLS = ("id bigint not null, d date, s string, f float, x double, dec decimal(5,2), "
        "ts timestamp, n int, t string")


@pytest.fixture(scope="module")
def casts(spark, tmp_path_factory):
    t = evonb.create_table(tmp_path_factory.mktemp("casts") / "t", COLS, primary_key="id")
    rows = [
        (1, dt.date(2024, 2, 29), "2024-03-01", 1.1, 1e7, Decimal("1.25"),
         dt.datetime(2024, 1, 1, 12, 30), 7, "12.5"),
        (2, dt.date(1969, 12, 31), " 2024-3-1T10:00 ", 123.456, 1.0e-4, Decimal("-999.99"),
         dt.datetime(1970, 1, 1), -2147483648, "abc"),
        (3, None, "not a date", float("nan"), 123456789.123456, None, None, None, "1e2"),
        (4, dt.date(2000, 1, 1), "2024", -0.0, 2.5e-7, Decimal("0.01"),
         dt.datetime(2030, 6, 1, 0, 0, 1), 2147483647, " 42 "),
    ]
    t.write(spark.createDataFrame(rows, COLS.replace(" not null", "")))
    t.alter("ALTER TABLE t ALTER COLUMN d TYPE timestamp_ntz; "
            "ALTER TABLE t ALTER COLUMN s TYPE date; ALTER TABLE t ALTER COLUMN f TYPE string; "
            "ALTER TABLE t ALTER COLUMN x TYPE decimal(20,4); "
            "ALTER TABLE t ALTER COLUMN dec TYPE decimal(7,3); "
            "ALTER TABLE t ALTER COLUMN n TYPE decimal(12,1); "
            "ALTER TABLE t ALTER COLUMN t TYPE decimal(6,2)")
    t.alter("ALTER TABLE t ALTER COLUMN x TYPE string; ALTER TABLE t ALTER COLUMN dec TYPE string")
    return t


def test_latest_schema(casts):
    _same(casts.to_arrow(), casts.read().toArrow())


def test_every_schema(casts):
    for c in casts.history():
        _same(casts.to_arrow(schema=c.instant), casts.read(schema=c.instant).toArrow())


def test_empty_table(spark, tmp_path):
    t = evonb.create_table(tmp_path / "e", "id bigint, tags array<string>")
    got = t.to_arrow()
    assert got.num_rows == 0 and got.column_names == ["id", "tags"]
    assert got.schema.field("tags").type == pa.list_(pa.field("element", pa.string()))


TEXTS = [" 12 ", "\t12\n", "\x0512\x7f", "12\u00a0", "\u00a012", "12\u3000", "\u0661\u0662",
         "١٢.5", "+12", "-0", "1e2", "1.5", "", "2020-01-01\u00a0", " 2020-01-01\x00",
         "\u0662\u0660\u0662\u0660-01-01", "2020-01-01\u3000", "12\u2007", "1\u00b2", "\x7f12",
         "\x051.5", "1.5\u00a0"]
"""Text around the edges of what Spark's cast reads: ASCII whitespace and control characters
are trimmed (U+007F not for doubles and decimals), other spaces (no-break, ideographic,
figure) are not, and only ASCII digits are digits (decimals take any decimal digit)."""


def test_text_read_as_numbers_and_dates_as_spark_casts_it(spark, tmp_path):
    """Text read as a date and a decimal (changes ALTER makes), and as an int, a bigint and a
    double in commits from before a rewrite narrowed the text: the Arrow reader gives Spark's
    values for each."""
    schema = "id int, d string, dec string, i string, b string, f string"
    t = evonb.create_table(tmp_path / "t", schema, primary_key="id")
    t.write(spark.createDataFrame([(n, s, s, s, s, s) for n, s in enumerate(TEXTS)], schema))
    before = t.history()[-1].instant
    t.alter("ALTER TABLE t ALTER COLUMN d TYPE date; "
            "ALTER TABLE t ALTER COLUMN dec TYPE decimal(10,2)")
    _same(t.to_arrow(), t.read().toArrow())
    t.rewrite("ALTER TABLE t ALTER COLUMN i TYPE int; ALTER TABLE t ALTER COLUMN b TYPE bigint; "
              "ALTER TABLE t ALTER COLUMN f TYPE double", on_cast_error="null")
    spark_rows = t.read(as_of=before, schema="latest").toArrow()
    _same(t.to_arrow(as_of=before, schema="latest"), spark_rows)
    _same(t.to_arrow(), t.read().toArrow())
    got = {r["id"]: r for r in spark_rows.to_pylist()}
    assert got[0]["i"] == 12 and got[3]["i"] is None and got[6]["i"] is None  # not every null


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_decimal_of_more_than_28_digits_read_from_a_double(spark, tmp_path, table_type):
    """``1e30`` read as ``decimal(38,6)`` has 37 digits: the JVM-free reader read null
    (Python's default decimal context holds 28); Spark reads the value. Found by
    tests/model/test_type_chains.py."""
    t = evonb.create_table(tmp_path / "t", "id int not null, x double, f float",
                           primary_key="id", table_type=table_type)
    t.write(spark.createDataFrame([(1, 1e30, 1e30), (2, -1.5e31, 2.5), (3, 1e33, None)],
                                  "id int, x double, f float"))
    t.alter("ALTER TABLE t ALTER COLUMN x TYPE decimal(38,6); "
            "ALTER TABLE t ALTER COLUMN f TYPE decimal(38,4)")
    got = t.to_arrow()
    _same(got, t.read().toArrow())
    assert got.sort_by("id").column("x").to_pylist() == [
        Decimal("1" + "0" * 30 + ".000000"), Decimal("-15" + "0" * 30 + ".000000"), None]


DATE_TEXTS = ["164111", "+10000-02-29", "-0027-01-01", "5881580-07-11", "5881580-07-12",
              "-5877641-06-23", "-5877641-06-22", "0000-02-29", "9999-12-31", "1000000-1-1",
              "294247-01-10", "294247-01-09", "-290308-12-22", "-290308-12-21", "-27", None]
"""Text Spark reads as dates past year 9999 and before year 1 (or as null: past a Spark date,
a year of fewer than 4 digits), around the last dates whose midnight a timestamp holds."""


def _as_numbers(table: pa.Table) -> list[tuple]:
    """(id, s as its day number, s as text, d as microseconds) of an Arrow read, sorted."""
    s, d = table.column("s"), table.column("d")
    return sorted(zip(table.column("id").to_pylist(), s.cast(pa.int32()).to_pylist(),
                      d.cast(pa.int64()).to_pylist(), strict=True))


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_dates_past_year_9999_read_as_spark_reads_them(spark, tmp_path, table_type):
    """Text read as dates Python's dates do not hold, and those dates read as text and as
    timestamps: the JVM-free reader read them as null (it parsed text into Python dates), and
    a date read as ``timestamp_ntz`` past year 294247 failed Spark's read (its Parquet reader
    widened the date and overflowed). Both readers now read Spark's ``try_cast``, before and
    after a write rewrites or merges the rows. Found by tests/model/test_type_chains.py."""
    t = evonb.create_table(tmp_path / "t", "id int not null, s string, d string",
                           primary_key="id", table_type=table_type)
    rows = [(n, s, s) for n, s in enumerate(DATE_TEXTS)]
    t.write(spark.createDataFrame(rows, "id int, s string, d string"))
    t.alter("ALTER TABLE t ALTER COLUMN s TYPE date; ALTER TABLE t ALTER COLUMN d TYPE date")
    t.alter("ALTER TABLE t ALTER COLUMN d TYPE timestamp_ntz")
    oracle = spark.createDataFrame(rows, "id int, s string, d string").selectExpr(
        "id", "unix_date(try_cast(s AS date)) AS s",
        "unix_micros(CAST(try_cast(try_cast(d AS date) AS timestamp_ntz) AS timestamp)) AS d",
        "CAST(try_cast(s AS date) AS string) AS text")
    expected = sorted((r["id"], r["s"], r["d"]) for r in oracle.collect())
    texts = sorted((r["id"], r["text"]) for r in oracle.collect())
    assert (3, (1 << 31) - 1, None) in expected and (14, None, None) in expected  # not every null

    def spark_read() -> list[tuple]:
        return sorted(tuple(r) for r in t.read().selectExpr(
            "id", "unix_date(s) AS s", "unix_micros(CAST(d AS timestamp)) AS d").collect())

    assert spark_read() == expected
    assert _as_numbers(t.to_arrow()) == expected
    t.write(spark.createDataFrame([(0, None, None)], "id int, s date, d timestamp_ntz"),
            mode="upsert")  # rewrites the file (copy-on-write) or logs the row (merge-on-read)
    expected[0] = (0, None, None)
    assert spark_read() == expected
    assert _as_numbers(t.to_arrow()) == expected
    if table_type == "mor":
        t.compact()
        assert spark_read() == expected
    t.alter("ALTER TABLE t ALTER COLUMN s TYPE string")
    texts[0] = (0, None)
    got = t.to_arrow()
    assert sorted(zip(got.column("id").to_pylist(), got.column("s").to_pylist(),
                      strict=True)) == texts
    assert sorted((r["id"], r["s"]) for r in t.read().select("id", "s").collect()) == texts


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_an_integer_read_through_float_then_double_keeps_the_floats_rounding(
        spark, tmp_path, table_type):
    """``int -> float -> double``: a value stored as an int reads as the float it became, then
    as that float's double. Spark's optimizer (SimplifyCasts) took the two casts the read
    plan makes for one ``int -> double``, so the Spark reader read 16777217.0 where the
    JVM-free reader read 16777216.0. Found by tests/model/test_type_chains.py."""
    t = evonb.create_table(tmp_path / "t", "id int not null, i int, b bigint, "
                           "s struct<x: bigint>", primary_key="id", table_type=table_type)
    t.write(spark.createDataFrame([(1, 16777217, 80208124, (80208124,)), (2, 7, -3, None)],
                                  "id int, i int, b bigint, s struct<x: bigint>"))
    t.alter("ALTER TABLE t ALTER COLUMN i TYPE float; ALTER TABLE t ALTER COLUMN b TYPE float; "
            "ALTER TABLE t ALTER COLUMN s.x TYPE float")
    as_float = t.history()[-1].instant
    t.alter("ALTER TABLE t ALTER COLUMN i TYPE double; ALTER TABLE t ALTER COLUMN b TYPE double; "
            "ALTER TABLE t ALTER COLUMN s.x TYPE double")
    want = [(1, 16777216.0, 80208128.0, 80208128.0), (2, 7.0, -3.0, None)]
    for as_of in (None, as_float):
        spark_rows = sorted((r.id, r.i, r.b, r.s and r.s.x) for r in t.read(
            as_of, schema="latest").collect())
        arrow_rows = sorted((r["id"], r["i"], r["b"], r["s"] and r["s"]["x"]) for r in t.to_arrow(
            as_of, schema="latest").to_pylist())
        assert spark_rows == want, as_of
        assert arrow_rows == want, as_of
