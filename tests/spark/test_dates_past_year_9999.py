"""Record keys that are dates or date-times past year 9999 (Spark's dates reach year
+5881580, Python's stop at 9999), on every merge path.

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
