"""Compact array literals (evonb.spark.literals): the same values as Spark's own literal."""

import numpy as np
from pyspark.sql import functions as F

from evonb.spark import literals
from evonb.spark.literals import long_array


def _values(spark, column, n):
    idx = spark.range(1, n + 1).select(F.element_at(column, F.col("id").cast("int")).alias("v"))
    return [r.v for r in idx.orderBy(F.monotonically_increasing_id()).collect()]


def test_long_array_holds_every_value(spark):
    values = np.array([0, -1, 2**63 - 1, -(2**63), 42, 7 << 40], dtype=np.int64)
    col = long_array(spark, values)
    assert _values(spark, col, len(values)) == values.tolist()
    row = spark.range(1).select(col.alias("a"), F.size(col).alias("n")).first()
    assert row.a == values.tolist() and row.n == len(values)


def test_a_large_literal_keeps_the_plan_string_short(spark):
    col = long_array(spark, np.arange(100_000))
    plan = spark.range(1).select(col)._jdf.queryExecution().optimizedPlan().toString()
    assert "UnsafeArrayData" in plan and len(plan) < 1000


def test_long_array_reads_in_a_filter(spark):
    col = long_array(spark, range(1000))
    slot = (F.col("id") % 1000 + 1).cast("int")
    kept = spark.range(2000).filter(F.element_at(col, slot) % 7 == 0)
    assert kept.count() == 2 * len(range(0, 1000, 7))


def test_long_array_falls_back_to_a_json_literal(spark, monkeypatch):
    def broken(spark, data):
        raise RuntimeError("no JVM")

    monkeypatch.setattr(literals, "_unsafe_long_array", broken)
    col = long_array(spark, [5, -6, 7])
    assert spark.range(1).select(col.alias("a")).first().a == [5, -6, 7]


def test_empty_long_array(spark):
    assert spark.range(1).select(F.size(long_array(spark, [])).alias("n")).first().n == 0
