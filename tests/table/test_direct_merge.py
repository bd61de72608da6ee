"""Small copy-on-write upserts and deletes merge their candidate files whole, in one stage,
without the exact key lookup (``evonb.write.direct_merge.bytes``): the same rows as the exact
path, on real Spark and Parquet; the price, a candidate without any of the keys rewritten with
the same rows, is visible in the commit. Both are Spark's paths: small rewrites run in the
driver by default (``tests/integration/test_cow_driver.py``), turned off here but where the
driver joins the comparison."""

from __future__ import annotations

import random

import pytest

import evonb
from evonb.spark.cow_driver import REWRITE_BYTES_PROPERTY
from evonb.spark.writes import DIRECT_MERGE_PROPERTY

pytestmark = pytest.mark.spark

COLS = "id bigint, name string, ts bigint"


def _df(spark, rows, names=("id", "name", "ts")):
    """Rows as a local DataFrame Spark can size (a list of tuples becomes an RDD it cannot)."""
    import pyarrow as pa

    types = {"id": pa.int64(), "name": pa.string(), "ts": pa.int64()}
    return spark.createDataFrame(pa.table({n: pa.array([r[i] for r in rows], types[n])
                                           for i, n in enumerate(names)}))


def _last(t):
    return t.timeline.last_completed().metadata


def _state(t):
    return sorted(tuple(r) for r in t.read().collect())


def _table(spark, root, direct: bool, limit: str | None = None, *, driver: bool = False):
    props = {DIRECT_MERGE_PROPERTY: limit} if limit else {}
    if not direct:
        props = {DIRECT_MERGE_PROPERTY: "0"}
    if not driver:
        props[REWRITE_BYTES_PROPERTY] = "0"
    t = evonb.create_table(root, "id bigint not null, name string, ts bigint",
                           primary_key="id", precombine="ts", properties=props)
    for lo in (0, 100, 200, 300):  # four files of contiguous id ranges
        t.write(spark.createDataFrame([(i, f"n{i}", 1) for i in range(lo, lo + 100)], COLS)
                .coalesce(1))
    return t


def test_direct_merge_rewrites_the_candidates_whole(spark, warehouse):
    direct, exact = _table(spark, warehouse / "d", True), _table(spark, warehouse / "e", False)
    by_low = {f.key_stats[0][1]: f.path for f in direct.snapshot().files}
    # the incoming range [150, 1250] overlaps the 2nd, 3rd and 4th files; only the 2nd holds
    # any of the keys (1250 is new)
    rows = [(150, "a", 2), (180, "b", 0), (199, "c", 2)]
    for t in (direct, exact):
        t.write(_df(spark, [*rows, (1250, "new", 1)]), mode="upsert")
    d, e = _last(direct), _last(exact)
    assert d["key_lookup"] == {"live": 4, "scanned": 3, "exact": False}
    assert e["key_lookup"] == {"live": 4, "scanned": 3}
    # every candidate, rewritten whole; the exact lookup rewrites the one holding keys
    assert sorted(d["removed"]) == sorted(by_low[lo] for lo in (100, 200, 300))
    assert len(e["removed"]) == 1
    assert _state(direct) == _state(exact)
    state = dict((r[0], r) for r in _state(direct))
    assert state[150][1] == "a" and state[180][1] == "n180" and state[1250][1] == "new"
    assert len(state) == 401
    # one stage: the direct merge writes one file
    assert len(d["added"]) == 1


def test_direct_and_exact_agree_on_random_work(spark, warehouse):
    direct, exact = _table(spark, warehouse / "d", True), _table(spark, warehouse / "e", False)
    rng = random.Random(7)
    for step in range(6):
        if step % 3 == 2:
            keys = rng.sample(range(0, 450), 15)
            df = _df(spark, [(k,) for k in keys], ("id",))
            mode = "delete"
        else:
            lo = rng.randrange(0, 400)
            rows = [(k, f"s{step}-{k}", rng.choice([0, 1, 2, None]))
                    for k in range(lo, lo + rng.randrange(1, 60))]
            rows += rows[:3]  # duplicates within the batch
            df = _df(spark, rows)
            mode = "upsert"
        for t in (direct, exact):
            t.write(df, mode=mode)
        assert _state(direct) == _state(exact), f"step {step} ({mode})"
    assert any(c.metadata.get("key_lookup", {}).get("exact") is False
               for c in direct.timeline.completed())
    assert not any("exact" in c.metadata.get("key_lookup", {})
                   for c in exact.timeline.completed())


def test_incoming_data_spark_cannot_size_takes_the_exact_lookup(spark, warehouse):
    t = _table(spark, warehouse / "t", True)
    rdd = spark.createDataFrame([(150, "x", 5)], COLS)  # built from an RDD: no estimate
    t.write(rdd, mode="upsert")
    meta = _last(t)
    assert "exact" not in meta["key_lookup"]
    assert len(meta["removed"]) == 1
    assert dict((r[0], r[1]) for r in _state(t))[150] == "x"


def test_large_candidates_take_the_exact_lookup(spark, warehouse):
    t = _table(spark, warehouse / "t", True, limit="10")
    t.write(_df(spark, [(150, "x", 5)]), mode="upsert")
    assert "exact" not in _last(t)["key_lookup"]
    assert len(_last(t)["removed"]) == 1


def test_the_latest_incoming_row_wins_a_tie_across_partitions(spark, warehouse):
    """Rows with the same key and precombine value in different partitions of the incoming
    data: the later one wins on both paths (the merge into one partition keeps each row's
    order)."""
    direct, exact = _table(spark, warehouse / "d", True), _table(spark, warehouse / "e", False)
    driver = _table(spark, warehouse / "r", True, driver=True)
    incoming = (spark.range(0, 8, 1, 4)  # 4 partitions: keys 150, 151 twice each
                .selectExpr("150 + id % 2 as id", "concat('v', id) as name", "7L as ts"))
    assert incoming.rdd.getNumPartitions() == 4
    for t in (direct, exact, driver):
        t.write(incoming, mode="upsert")
    assert _last(direct)["key_lookup"].get("exact") is False
    assert "exact" not in _last(exact)["key_lookup"]
    assert _last(driver)["key_lookup"].get("driver") is True
    got = {r[0]: r[1] for r in _state(direct)}
    assert {k: got[k] for k in (150, 151)} == {150: "v6", 151: "v7"}
    assert _state(direct) == _state(exact) == _state(driver)
