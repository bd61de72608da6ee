"""The precombine rule as Spark columns (:mod:`evonb.spark.precombine`): the first row of each
key in the rule's order, and the comparisons ``ahead`` and ``beats`` (never null)."""

from __future__ import annotations

import pytest

from evonb.spark.precombine import ahead, beats, column, first_per_key, order_columns
from evonb.table.precombine import SortKey, ordering, precombine_key

pytestmark = pytest.mark.spark

NAN = float("nan")


def test_first_per_key_takes_the_largest_value_with_nan_above_and_nulls_last(spark):
    df = spark.createDataFrame(
        [(1, 2.0, 1), (1, NAN, 1), (1, None, 2), (2, None, 1), (2, 5.0, 1), (3, None, 1),
         (3, None, 2), (4, 1.0, 1), (4, 1.0, 3), (4, 1.0, 2)], "id int, pre double, c int")
    rule = ordering(precombine="pre", commit="c")
    got = {r.id: (r.pre, r.c) for r in first_per_key(df, ["id"], rule).collect()}
    assert set(got) == {1, 2, 3, 4}
    assert got[1][0] != got[1][0]  # NaN
    assert got[2] == (5.0, 1) and got[3] == (None, 2) and got[4] == (1.0, 3)


def test_order_columns_follow_direction_and_null_placement(spark):
    df = spark.createDataFrame([(1,), (None,), (3,)], "v int")
    keys = [SortKey("v", descending=False, nulls_first=True)]
    assert [r.v for r in df.orderBy(*order_columns(keys)).collect()] == [None, 1, 3]
    assert [r.v for r in df.orderBy(*order_columns([SortKey("v")])).collect()] == [3, 1, None]


def test_ahead_and_beats_are_never_null(spark):
    df = spark.createDataFrame([(1, 2), (3, 3), (None, 1), (2, None), (None, None)],
                               "new int, old int")
    key = precombine_key("v")
    out = df.select(ahead(column("new"), column("old"), key).alias("a"),
                    beats(column("new"), column("old"), key).alias("b"),
                    beats(column("new"), column("old"), None).alias("always")).collect()
    assert [r.a for r in out] == [False, False, False, True, False]
    assert [r.b for r in out] == [False, True, False, True, True]
    assert [r.always for r in out] == [True] * 5


def test_column_quotes_any_name(spark):
    df = spark.createDataFrame([(1,)], "`a.b``c` int")
    assert df.select(column("a.b`c")).collect()[0][0] == 1
