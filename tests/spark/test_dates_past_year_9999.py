"""Record keys that are dates or date-times past year 9999 (Spark's dates reach year
+5881580, Python's stop at 9999), on every merge path; and such values in the log blocks of
merge-on-read tables, nested ones included.

Writes took the incoming keys' range as Python values: an insert, upsert, delete or MERGE
keyed by such a date failed with ``ValueError: year 164111 is out of range`` in PySpark's
collect. The range is now left out when Python cannot hold it (no file is pruned by it), and
keys compared in Python are compared as numbers (:func:`~evonb.spark.arrow_collect.key_list`).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import evonb
from evonb.spark.arrow_collect import key_list
from evonb.spark.sql_writes import execute
from evonb.table.check import check_table
from tests.spark.merge_paths import MERGE_PATHS

pytestmark = pytest.mark.spark

DDL = "d date not null, ts timestamp_ntz not null, v int"
FAR = 59220784
"""+164111-01-01 as days since 1970-01-01."""


def _frame(spark: Any, rows: list[tuple[int, int]]) -> Any:
    """Rows (n, v): key d the n-th day after +164111-01-01 (n < 0: before year 1), ts its
    midnight plus n microseconds, v."""
    return spark.createDataFrame(rows, "n int, v int").selectExpr(
        f"date_from_unix_date(IF(n < 0, -{FAR} + n, {FAR} + n)) AS d",
        f"CAST(timestamp_micros(unix_micros(CAST(date_from_unix_date({FAR} + n) AS timestamp))"
        " + n) AS timestamp_ntz) AS ts", "v")


def _rows(t: Any) -> list[tuple[int, int, int | None]]:
    """(days of d, microseconds of ts, v) by Spark, checked equal to the JVM-free reader's."""
    got = sorted(tuple(r) for r in t.read().selectExpr(
        "unix_date(d)", "unix_micros(CAST(ts AS timestamp))", "v").collect())
    table = t.to_arrow()
    arrow = sorted(zip(key_list(table.column("d")), key_list(table.column("ts")),
                       table.column("v").to_pylist(), strict=True))
    assert arrow == got
    return got


def _expected(rows: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    return sorted(((-FAR + n) if n < 0 else FAR + n, (FAR + n) * 86_400_000_000 + n, v)
                  for n, v in rows)


PATHS = [(p, None) for p in sorted(MERGE_PATHS)] + [
    (p, "parquet") for p in sorted(MERGE_PATHS) if MERGE_PATHS[p][0] == "mor"]


@pytest.mark.parametrize(("path", "blocks"), PATHS, ids=[f"{p}-{b or 'default'}" for p, b in PATHS])
def test_writes_keyed_by_dates_past_year_9999(spark: Any, tmp_path: Any, path: str,
                                               blocks: str | None) -> None:
    table_type, props = MERGE_PATHS[path]
    if blocks:
        props = props | {"evonb.mor.log_format": blocks}
    t = evonb.create_table(tmp_path / "t", DDL, primary_key=["d", "ts"], table_type=table_type,
                           properties=props)
    t.write(_frame(spark, [(0, 0), (1, 1), (-5, 5)]).coalesce(1))
    t.write(_frame(spark, [(1, 10), (2, 2)]), mode="upsert")
    assert _rows(t) == _expected([(0, 0), (1, 10), (-5, 5), (2, 2)]), path
    t.write(_frame(spark, [(0, 0)]), mode="delete")
    assert _rows(t) == _expected([(1, 10), (-5, 5), (2, 2)]), path
    _frame(spark, [(2, 20), (3, 3)]).createOrReplaceTempView("incoming")
    execute(t, "MERGE INTO t USING incoming i ON t.d = i.d AND t.ts = i.ts "
               "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *", name="t")
    merged = _expected([(1, 10), (-5, 5), (2, 20), (3, 3)])
    assert _rows(t) == merged, path
    t.compact()
    assert _rows(t) == merged, path
    t.cluster(by=["d"])
    assert _rows(t) == merged, path


def test_key_list_gives_dates_and_times_as_numbers() -> None:
    days = pa.array([FAR, None, -1], pa.date32())
    assert key_list(days) == [FAR, None, -1]
    micros = pa.chunked_array([pa.array([FAR * 86_400_000_000, 5], pa.timestamp("us"))])
    assert key_list(micros) == [FAR * 86_400_000_000, 5]
    assert key_list(pa.array(["a", None])) == ["a", None]


NESTED_DDL = ("id bigint not null, d date, ts timestamp, "
              "m map<string, struct<d: date, ts: array<timestamp>>>")
EDGE_MICROS = [253402300799999999, -62135596800000000]
"""9999-12-31 23:59:59.999999 and 0001-01-01 00:00:00 UTC: past Python's range in a session
time zone east or west of UTC."""


def _nested(spark: Any, ids: range) -> Any:
    """Rows of NESTED_DDL: d and the map's d past year 9999 (or before year 1 for odd ids),
    ts and the map's timestamps at the edges of Python's range in UTC."""
    return spark.range(ids.start, ids.stop).selectExpr(
        "id", f"date_from_unix_date(IF(id % 2 = 0, {FAR}, -{FAR}) + id) AS d",
        f"timestamp_micros(IF(id % 2 = 0, {EDGE_MICROS[0]}, {EDGE_MICROS[1]})) AS ts",
        f"map('k', named_struct('d', date_from_unix_date({FAR} + id), 'ts', "
        f"array(timestamp_micros({EDGE_MICROS[0]} - id), NULL))) AS m")


def _nested_rows(t: Any) -> list[tuple[Any, ...]]:
    """The table's rows as numbers, by Spark, checked equal to the JVM-free reader's."""
    got = sorted(tuple(r) for r in t.read().selectExpr(
        "id", "unix_date(d)", "unix_micros(ts)", "unix_date(m['k'].d)",
        "transform(m['k'].ts, x -> unix_micros(x))").collect())
    table = t.to_arrow()
    items = table.column("m").combine_chunks().items  # each row's map holds one entry, 'k'
    arrow = sorted(zip(table.column("id").to_pylist(), key_list(table.column("d")),
                       key_list(table.column("ts")), key_list(items.field("d")),
                       key_list(items.field("ts")), strict=True))
    assert arrow == got
    return got


def _nested_expected(ids: range) -> list[tuple[Any, ...]]:
    return [(i, (FAR if i % 2 == 0 else -FAR) + i, EDGE_MICROS[i % 2], FAR + i,
             [EDGE_MICROS[0] - i, None]) for i in ids]


MOR_PATHS = [p for p in sorted(MERGE_PATHS) if MERGE_PATHS[p][0] == "mor"]


@pytest.mark.parametrize("zone", ["Asia/Kolkata", "America/Los_Angeles"])
@pytest.mark.parametrize("path", MOR_PATHS)
def test_log_blocks_of_nested_values_past_year_9999(spark: Any, tmp_path: Any, path: str,
                                                   zone: str) -> None:
    """Avro log blocks of a table with a nested column are written record by record with
    fastavro, which took Python dates and date-times: an upsert of a date past year 9999, or
    of a timestamp past Python's range in the session's time zone, failed with
    ``OverflowError: date value out of range`` from a Python worker. Reading such a block
    without the JVM, and a deep check, failed too (the check called a healthy block
    corrupt). Now fastavro gets the numbers, and reads them back as numbers."""
    table_type, props = MERGE_PATHS[path]
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        t = evonb.create_table(tmp_path / "t", NESTED_DDL, primary_key="id",
                               table_type=table_type, properties=props)
        t.write(spark.range(6).selectExpr("id"))
        t.write(_nested(spark, range(4)), mode="upsert")  # log blocks
        t.write(_nested(spark, range(4, 6)), mode="upsert")
        assert t.snapshot().logs
        assert _nested_rows(t) == _nested_expected(range(6)), path
        report = check_table(t.path, deep=True)
        assert report.problems == [], report.problems
        t.compact()
        assert not t.snapshot().logs
        assert _nested_rows(t) == _nested_expected(range(6)), path
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


def test_a_deep_check_reads_log_blocks_past_year_9999(spark: Any, tmp_path: Any) -> None:
    """A merge-on-read table keyed by dates past year 9999: its Avro log blocks (written
    column by column) are healthy, and a deep check said "Avro record 0 does not read: year
    164111 is out of range"."""
    t = evonb.create_table(tmp_path / "t", DDL, primary_key=["d", "ts"], table_type="mor")
    t.write(_frame(spark, [(0, 0), (1, 1)]))
    t.write(_frame(spark, [(1, 10)]), mode="upsert")
    assert [f.path.endswith(".avro") for f in t.snapshot().logs] == [True]
    assert check_table(t.path, deep=True).problems == []
    assert _rows(t) == _expected([(0, 0), (1, 10)])
