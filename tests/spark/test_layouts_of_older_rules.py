"""Tables whose layouts were derived by rules later found wrong still read right with Spark.

Two rules of :func:`evonb.table.layout.keeps_physical_name` were found wrong after tables had
used them: an integer changed to a decimal of fewer integer digits than Spark's vectorized
reader asks (``tinyint -> decimal(5,2)``, found by the type-chain model), and a date changed to
``timestamp_ntz`` (Spark's native widening fails the whole read on a date past year 294247).
Such a layout shares one physical name across the change. A single merged scan read the older
files natively in the new type and failed (``PARQUET_COLUMN_DATA_TYPE_MISMATCH``, or a date
out of the timestamp range). The read now splits the versions into sets a merged scan reads
right (:func:`evonb.table.read_plan.one_scan_sets`); these tests build the tables with the
old rules in force, then read, upsert, compact and cluster them with today's.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import evonb
from evonb.schema.types import BIGINT, INT, SMALLINT, TINYINT
from evonb.table import layout as layout_rules
from evonb.table.layout import natively_readable
from tests.spark.merge_paths import MERGE_PATHS

pytestmark = pytest.mark.spark

OLD_DECIMAL_DIGITS = {TINYINT: 3, SMALLINT: 5, INT: 10, BIGINT: 19}
"""The integer digits the old rule asked: those that hold every value of the integer."""
FAR_DAYS = 110_000_000
"""A day past year 294247 (about +303000): its midnight is past every timestamp."""


def _old_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules tables were derived with before the two fixes."""
    assert set(OLD_DECIMAL_DIGITS) == set(layout_rules._DECIMAL_DIGITS_READ)
    monkeypatch.setattr(layout_rules, "_DECIMAL_DIGITS_READ", OLD_DECIMAL_DIGITS)
    monkeypatch.setattr(layout_rules, "keeps_physical_name", natively_readable)


def _rows(t: Any) -> list[tuple[Any, ...]]:
    """(id, v, d as text) read by Spark, checked equal to the JVM-free reader's."""
    got = sorted(tuple(r) for r in t.read().selectExpr(
        "id", "v", "CAST(d AS string)").collect())
    table = t.to_arrow()
    arrow = sorted(zip(table.column("id").to_pylist(), table.column("v").to_pylist(),
                       table.column("d").to_pylist(), strict=True))
    assert [(i, v, None if d is None else str(d)) for i, v, d in arrow] == got
    return got


@pytest.mark.parametrize("path", ["cow-driver", "cow-direct", "mor-driver", "mor-spark"])
def test_layouts_sharing_a_name_across_a_change_spark_cannot_widen(
        spark: Any, tmp_path: Any, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    table_type, props = MERGE_PATHS[path]
    _old_rules(monkeypatch)
    t = evonb.create_table(tmp_path / "t", "id int not null, v tinyint, d date",
                           primary_key=["id"], table_type=table_type, properties=props)
    t.write(spark.sql(
        "SELECT 1 AS id, CAST(-128 AS tinyint) AS v, DATE'2024-02-29' AS d UNION ALL "
        f"SELECT 2, CAST(127 AS tinyint), date_from_unix_date({FAR_DAYS})").coalesce(1))
    t.alter("ALTER TABLE t ALTER COLUMN v TYPE decimal(5,2); "
            "ALTER TABLE t ALTER COLUMN d TYPE timestamp_ntz")
    schema, layout = t.version(t.schema.version_id)
    assert [layout.name(schema.find_id(c)) for c in ("v", "d")] == ["v", "d"]  # shared names
    t.write(spark.sql("SELECT 3 AS id, CAST(1.25 AS decimal(5,2)) AS v, "
                      "TIMESTAMP_NTZ'2025-01-02 03:04:05' AS d"))
    monkeypatch.undo()

    expected = [(1, Decimal("-128.00"), "2024-02-29 00:00:00"), (2, Decimal("127.00"), None),
                (3, Decimal("1.25"), "2025-01-02 03:04:05")]
    assert _rows(t) == expected, path
    t.write(spark.sql("SELECT 1 AS id, CAST(-1.5 AS decimal(5,2)) AS v, "
                      "TIMESTAMP_NTZ'2026-12-06 00:00:00' AS d"), mode="upsert")
    expected[0] = (1, Decimal("-1.50"), "2026-12-06 00:00:00")
    assert _rows(t) == expected, path
    t.compact()
    assert _rows(t) == expected, path
    t.cluster(by=["id"])
    assert _rows(t) == expected, path
