"""Large copy-on-write upserts split the stored rows by the incoming keys
(``evonb.write.split_merge.bytes``): only rows of incoming keys meet the incoming rows in the
merge, the others are written again as they were read. The same rows as the one-window merge,
computed in plain Python, on real Spark and Parquet."""

from __future__ import annotations

import random

import pytest

import evonb
from evonb.spark.cow_driver import REWRITE_BYTES_PROPERTY
from evonb.spark.writes import DIRECT_MERGE_PROPERTY, SPLIT_MERGE_PROPERTY

pytestmark = pytest.mark.spark

SCHEMA = "id bigint, name string, ts bigint"


def _table(spark, root, split: bool, **props):
    t = evonb.create_table(root, "id bigint not null, name string, ts bigint",
                           primary_key="id", precombine="ts",
                           properties={REWRITE_BYTES_PROPERTY: "0",  # Spark's merge
                                       DIRECT_MERGE_PROPERTY: "0",
                                       SPLIT_MERGE_PROPERTY: "0" if split else str(2**40),
                                       **props})
    for lo in (0, 100, 200):  # three files, keys 0..299
        t.write(spark.createDataFrame([(i, f"n{i}", 5) for i in range(lo, lo + 100)], SCHEMA))
    return t


def _expected(state, rows):
    """Larger ts wins; on a tie the incoming row, and the later of two incoming rows."""
    for key, name, ts in rows:
        old = state.get(key)
        if old is None or ts >= old[1]:
            state[key] = (name, ts)
    return state


@pytest.mark.parametrize("split", [True, False])
def test_random_upserts_match_plain_python(spark, tmp_path, split):
    t = _table(spark, tmp_path / "t", split)
    state = {i: (f"n{i}", 5) for i in range(300)}
    rng = random.Random(7)
    for step in range(3):
        keys = rng.sample(range(330), 40)  # most stored, some new, over every file
        rows = [(k, f"s{step}-{k}", rng.choice((4, 5, 6))) for k in keys]
        rows += [(keys[0], f"again{step}", 9), (keys[1], f"low{step}", 0)]  # two rows a key
        t.write(spark.createDataFrame(rows, SCHEMA), mode="upsert")
        state = _expected(state, rows)
        got = {r["id"]: (r["name"], r["ts"]) for r in t.read().collect()}
        assert t.read().count() == len(state)  # one row per key
        assert got == state
        meta = t.timeline.last_completed().metadata
        # the exact lookup: every file is scanned, only those holding a key are rewritten
        assert meta["key_lookup"]["scanned"] == meta["key_lookup"]["live"]
        assert 0 < len(meta["removed"]) <= meta["key_lookup"]["scanned"]


def test_stored_rows_of_other_keys_are_never_merged(spark, tmp_path):
    """A table that allowed two rows of one key: an upsert of other keys in the same file
    leaves both rows (only the keys that come in are merged)."""
    t = _table(spark, tmp_path / "dups", True,
               **{"evonb.write.insert_duplicates": "allow"})
    t.write(spark.createDataFrame([(7, "twin", 5)], SCHEMA))  # a second row of key 7
    t.write(spark.createDataFrame([(8, "eight", 6), (400, "new", 1)], SCHEMA), mode="upsert")
    rows = sorted((r["id"], r["name"]) for r in t.read().collect() if r["id"] in (7, 8, 400))
    assert rows == [(7, "n7"), (7, "twin"), (8, "eight"), (400, "new")]
    assert t.read().count() == 302
