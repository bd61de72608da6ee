"""The precombine rule in Arrow (:mod:`evonb.spark.precombine_arrow`): NaN above every number,
nulls last (or first when the key says so), and the per-key resolution of log records (larger
precombine value, then later commit, then later record; a delete is its key's last word)."""

from __future__ import annotations

import math

import pyarrow as pa

from evonb.spark.precombine_arrow import ahead, beats, resolve, sort
from evonb.table.precombine import SortKey, precombine_key

NAN = float("nan")


def test_ahead_puts_nan_above_numbers_and_nulls_last_or_first():
    a = pa.array([NAN, 1.0, None, 2.0, NAN, None, -math.inf])
    b = pa.array([5.0, NAN, 1.0, None, NAN, None, -math.inf])
    descending = SortKey("v")
    assert ahead(a, b, descending).to_pylist() == [True, False, False, True, False, False,
                                                   False]
    nulls_first = SortKey("v", descending=True, nulls_first=True)
    assert ahead(a, b, nulls_first).to_pylist() == [True, False, True, False, False, False,
                                                    False]
    ascending = SortKey("v", descending=False)
    assert ahead(a, b, ascending).to_pylist() == [False, True, False, True, False, False,
                                                  False]


def test_beats_keeps_the_earlier_record_only_when_it_comes_first():
    new = pa.array([1, 3, None, 2, None])
    old = pa.array([2, 3, 1, None, None])
    assert beats(new, old, precombine_key("v")).to_pylist() == [False, True, False, True, True]
    assert beats(new, old, None).to_pylist() == [True] * 5


def test_sort_orders_by_the_columns_then_the_keys():
    table = pa.table({"k": [2, 1, 1, 1, 2], "v": [1.0, None, NAN, 3.0, 2.0]})
    out = sort(table, [SortKey("v")], by=["k"])
    values = out.column("v").to_pylist()
    assert out.column("k").to_pylist() == [1, 1, 1, 2, 2]
    assert math.isnan(values[0]) and values[1:] == [3.0, None, 2.0, 1.0]


def test_resolve_picks_each_keys_winner_and_a_trailing_delete():
    # key 1: precombine 5 (commit 1) beats 3 (commit 2); key 2: tie on 7, the later commit
    # wins; key 3: deleted by its last record; key 4: a re-insert after a delete
    keys = {"id": pa.array([1, 1, 2, 2, 3, 3, 4, 4])}
    commit = pa.array([1, 2, 1, 2, 1, 2, 1, 2], pa.int64())
    deleted = pa.array([False, False, False, False, False, True, True, False])
    pre = pa.array([5, 3, 7, 7, 9, None, 1, 0])
    out = resolve(keys, commit, deleted, pre)
    rows = out.rows.to_pylist()
    assert (rows[0], rows[1], rows[3]) == (0, 3, 7)  # key 3's row: only its liveness counts
    assert out.live.to_pylist() == [True, True, False, True]
    assert out.last_delete.to_pylist() == [None, None, 2, 1]


def test_resolve_with_one_record_per_key_keeps_the_input_order():
    out = resolve({"id": pa.array([3, 1, 2])}, pa.array([1, 1, 1], pa.int64()),
                  pa.array([False, True, False]), None)
    assert out.rows is None
    assert out.live.to_pylist() == [True, False, True]
    assert out.last_delete.to_pylist() == [None, 1, None]
