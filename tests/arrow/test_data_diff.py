"""``Table.diff_data`` and :mod:`evonb.arrow.data_diff`: the rows added, removed and changed
between two commits, read without Spark in one schema, across renames and drops; keyed
(composite keys too), keyless (multisets of rows) and merge-on-read tables."""

from __future__ import annotations

import pyarrow as pa
import pytest

import evonb
from evonb.arrow.data_diff import DataDiff, diff_tables
from evonb.errors import EvoError

pytestmark = pytest.mark.spark


def _changed(diff: DataDiff) -> dict:
    rows = diff.changed.to_pylist()
    return {r["id"]: r["changed"] for r in rows}


@pytest.fixture
def keyed(spark, warehouse):
    t = evonb.create_table(warehouse / "people",
                           "id bigint not null, name string, qty int, note string, ts bigint",
                           primary_key="id", precombine="ts")
    t.write(spark.createDataFrame([(i, f"n{i}", i * 10, f"x{i}", 1) for i in range(1, 6)],
                                  "id bigint, name string, qty int, note string, ts bigint"),
            "upsert")
    t.alter("ALTER TABLE t RENAME COLUMN name TO label")
    t.alter("ALTER TABLE t DROP COLUMN note")
    cols = "id bigint, label string, qty int, ts bigint"
    t.write(spark.createDataFrame([(1, "<b>one</b>", 10, 1), (2, "n2", 25, 1), (3, "n3", 30, 1),
                                   (6, "n6", 60, 1)], cols), "upsert")
    t.write(spark.createDataFrame([(4,), (5,)], "id bigint"), "delete")
    return t


def test_keyed_in_the_latest_schema(keyed):
    diff = keyed.diff_data("@1", "@-1")
    assert diff.counts == {"added": 1, "removed": 2, "changed": 2}
    assert diff.columns == ["id", "label", "qty", "ts"]
    assert diff.added.to_pylist() == [{"id": 6, "label": "n6", "qty": 60, "ts": 1}]
    assert sorted(r["id"] for r in diff.removed.to_pylist()) == [4, 5]
    assert _changed(diff) == {1: ["label"], 2: ["qty"]}
    rows = {r["id"]: r for r in diff.changed.to_pylist()}
    assert (rows[1]["label__old"], rows[1]["label__new"]) == ("n1", "<b>one</b>")
    assert (rows[2]["qty__old"], rows[2]["qty__new"]) == (20, 25)
    assert rows[2]["label__old"] == rows[2]["label__new"] == "n2"
    text = str(diff)
    assert "1 added, 2 removed, 2 changed" in text
    assert "~ id=2: qty: 20 -> 25" in text
    assert "+ id=6, label='n6', qty=60, ts=1" in text
    html = diff._repr_html_()
    assert "&lt;b&gt;one&lt;/b&gt;" in html and "<b>one</b>" not in html
    df = diff.to_pandas()
    assert list(df["change"]) == ["added", "removed", "removed", "changed", "changed"]
    assert list(df.columns) == ["change", "id", "changed", "label__old", "label__new",
                                "qty__old", "qty__new", "ts__old", "ts__new"]
    assert df.loc[df["id"] == 6, "qty__new"].item() == 60


def test_keyed_in_the_first_commits_schema(keyed):
    """The dropped ``note`` is there before and null after: every surviving row shows it as
    changed; the renamed column keeps its old name."""
    first = keyed.history()[1].instant
    diff = keyed.diff_data(first, "latest", schema=first)
    assert diff.columns == ["id", "name", "qty", "note", "ts"]
    assert _changed(diff) == {1: ["name", "note"], 2: ["qty", "note"], 3: ["note"]}
    rows = {r["id"]: r for r in diff.changed.to_pylist()}
    assert (rows[3]["note__old"], rows[3]["note__new"]) == ("x3", None)
    assert diff.added.to_pylist() == [{"id": 6, "name": "n6", "qty": 60, "note": None, "ts": 1}]
    assert sorted((r["id"], r["note"]) for r in diff.removed.to_pylist()) == [(4, "x4"),
                                                                              (5, "x5")]
    # a schema named as a version and a commit's schema give the same columns
    assert keyed.diff_data("@1", "@-1", schema="v0").columns == diff.columns


def test_no_change_and_unknown_commit(keyed):
    same = keyed.diff_data("@-1", "latest")
    assert not same and same.counts == {"added": 0, "removed": 0, "changed": 0}
    with pytest.raises(EvoError):
        keyed.diff_data("@1", "@42")


def test_keyless_duplicates(spark, warehouse):
    t = evonb.create_table(warehouse / "events", "k int, v string")
    cols = "k int, v string"
    t.write(spark.createDataFrame([(1, "a"), (1, "a"), (2, "b")], cols), "insert")
    t.write(spark.createDataFrame([(1, "a"), (2, "b"), (2, "b"), (3, None)], cols),
            "overwrite")
    diff = t.diff_data("@1", "@-1")
    assert diff.key == ()
    assert diff.removed.to_pylist() == [{"k": 1, "v": "a"}]
    assert sorted(diff.added.to_pylist(), key=lambda r: r["k"]) == [{"k": 2, "v": "b"},
                                                                     {"k": 3, "v": None}]
    assert diff.changed.num_rows == 0
    assert "whole rows (no record key)" in str(diff)


def test_merge_on_read_composite_key(spark, warehouse):
    t = evonb.create_table(warehouse / "stock", "region string not null, id int not null, "
                           "qty int, ts bigint", primary_key=["region", "id"],
                           precombine="ts", table_type="mor")
    cols = "region string, id int, qty int, ts bigint"
    t.write(spark.createDataFrame([("eu", 1, 5, 1), ("us", 1, 7, 1), ("eu", 2, 3, 1)], cols),
            "upsert")
    t.write(spark.createDataFrame([("us", 1, 8, 2), ("us", 2, 1, 2)], cols), "upsert")
    t.write(spark.createDataFrame([("eu", 2)], "region string, id int"), "delete")
    diff = t.diff_data("@1", "@-1")
    assert diff.key == ("region", "id")
    assert [(r["region"], r["id"]) for r in diff.added.to_pylist()] == [("us", 2)]
    assert [(r["region"], r["id"]) for r in diff.removed.to_pylist()] == [("eu", 2)]
    assert [(r["region"], r["id"], r["changed"], r["qty__old"], r["qty__new"])
            for r in diff.changed.to_pylist()] == [("us", 1, ["qty", "ts"], 7, 8)]


def test_pure_comparison_nested_nan_and_null():
    schema = pa.schema([("id", pa.int64()), ("x", pa.float64()),
                        ("s", pa.struct([("a", pa.int32())]))])
    a = pa.table({"id": [1, 2, 3], "x": [float("nan"), None, 1.0],
                  "s": [{"a": 1}, {"a": 2}, None]}, schema=schema)
    b = pa.table({"id": [3, 2, 1], "x": [2.0, None, float("nan")],
                  "s": [None, {"a": 9}, {"a": 1}]}, schema=schema)
    diff = diff_tables(a, b, ["id"])
    assert _changed(diff) == {2: ["s"], 3: ["x"]}
    with pytest.raises(EvoError, match="same schema"):
        diff_tables(a, b.drop_columns(["x"]), ["id"])
