"""``Table.revert_schema`` end to end: a column dropped and re-added under its old name comes
back with its old ID and its old values; rows written while it was gone read null; the re-added
column (a new ID) disappears; writes after the revert store it again. Spark (``read``) and the
JVM-free reader (``to_arrow``) must agree, on copy-on-write and merge-on-read tables."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

import evonb

pytestmark = pytest.mark.spark

COLUMNS = ["id", "full_name", "email", "ts"]


def _spark_rows(t, **kwargs):
    df = t.read(**kwargs)
    return df.columns, sorted(tuple(r) for r in df.collect())


def _arrow_rows(t, **kwargs):
    table = t.to_arrow(**kwargs)
    return table.column_names, sorted(tuple(r.values()) for r in table.to_pylist())


def _both(t, **kwargs):
    """The rows read by Spark, after checking that the Arrow reader reads the same."""
    spark_side = _spark_rows(t, **kwargs)
    assert _arrow_rows(t, **kwargs) == spark_side
    return spark_side


def _history(spark, t, mode):
    """create; w1; v1 rename name -> full_name; v2 drop email; w2; v3 add email (a new ID);
    w3. Returns the instant of w3."""
    t.write(spark.createDataFrame(
        [(1, "ann", "a@x", 1), (2, "bob", "b@x", 1), (3, "cy", "c@x", 1)],
        "id bigint, name string, email string, ts bigint"), mode)
    t.alter("ALTER TABLE t RENAME COLUMN name TO full_name")
    t.alter("ALTER TABLE t DROP COLUMN email")
    return t


def test_copy_on_write(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, name string, email string, "
                           "ts bigint", primary_key="id", precombine="ts")
    _history(spark, t, "insert")
    t.write(spark.createDataFrame([(4, "dee", 2), (5, "eve", 2)],
                                  "id bigint, full_name string, ts bigint"), "insert")
    t.alter("ALTER TABLE t ADD COLUMN email string")
    t.write(spark.createDataFrame([(6, "fay", 3, "f@new")],
                                  "id bigint, full_name string, ts bigint, email string"),
            "insert")
    before = t.history()[-1].instant
    assert t.schema.find_id("email") == 5 and t.schema.max_column_id == 5

    change = t.revert_schema("v1")
    assert [str(c) for c in change] == ["added    3: email (string)",
                                        "dropped  5: email (string)"]
    assert t.schema.field_ids() == [1, 2, 3, 4] and t.schema.max_column_id == 5
    last = t.history()[-1]
    assert (last.action, last.operation) == ("alter", "revert")
    _, layout = t.version(t.schema.version_id)
    assert dict(layout.physical) == {1: "id", 2: "name", 3: "email", 4: "ts"}

    assert _both(t) == (COLUMNS, [
        (1, "ann", "a@x", 1), (2, "bob", "b@x", 1), (3, "cy", "c@x", 1),
        (4, "dee", None, 2), (5, "eve", None, 2), (6, "fay", None, 3)])
    # Time travel before the revert still sees the re-added column (ID 5).
    assert _arrow_rows(t, as_of=before)[1] == [
        (1, "ann", 1, None), (2, "bob", 1, None), (3, "cy", 1, None),
        (4, "dee", 2, None), (5, "eve", 2, None), (6, "fay", 3, "f@new")]

    # After the revert: an upsert rewrites the file of 1..3 (keeping 1 and 3's emails) and adds 7.
    t.write(spark.createDataFrame([(2, "bob2", "b2@x", 5), (7, "gus", "g@x", 4)],
                                  "id bigint, full_name string, email string, ts bigint"),
            "upsert")
    assert _both(t) == (COLUMNS, [
        (1, "ann", "a@x", 1), (2, "bob2", "b2@x", 5), (3, "cy", "c@x", 1),
        (4, "dee", None, 2), (5, "eve", None, 2), (6, "fay", None, 3), (7, "gus", "g@x", 4)])
    newest = [f for f in t.snapshot().files if f.version == t.schema.version_id]
    assert newest
    for f in newest:  # stored under the old column's physical name
        names = pq.read_schema(t.root / f.path).names
        assert "email" in names and "email__5" not in names


def test_merge_on_read(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, name string, email string, "
                           "ts bigint", primary_key="id", precombine="ts", table_type="mor")
    _history(spark, t, "upsert")
    # While email is dropped: 1 is updated (a log record without email), 4 is new.
    t.write(spark.createDataFrame([(1, "ann2", 5), (4, "dee", 2)],
                                  "id bigint, full_name string, ts bigint"), "upsert")
    t.alter("ALTER TABLE t ADD COLUMN email string")
    # The new email (ID 5): 2 is updated, 6 is new.
    t.write(spark.createDataFrame([(2, "bob3", 6, "b@new"), (6, "fay", 3, "f@new")],
                                  "id bigint, full_name string, ts bigint, email string"),
            "upsert")
    assert len(t.snapshot().logs) == 2  # 1 and 2 updated in their base files

    preview = t.preview_revert("v1")
    assert [str(c) for c in preview] == ["added    3: email (string)",
                                         "dropped  5: email (string)"]
    assert t.schema.find_id("email") == 5  # nothing committed
    t.revert_schema("v1")
    assert _both(t) == (COLUMNS, [
        (1, "ann2", None, 5), (2, "bob3", None, 6), (3, "cy", "c@x", 1),
        (4, "dee", None, 2), (6, "fay", None, 3)])

    # Log blocks written after the revert carry email again.
    t.write(spark.createDataFrame([(3, "cy4", "c4@x", 7), (7, "gus", "g@x", 4)],
                                  "id bigint, full_name string, email string, ts bigint"),
            "upsert")
    expected = (COLUMNS, [
        (1, "ann2", None, 5), (2, "bob3", None, 6), (3, "cy4", "c4@x", 7),
        (4, "dee", None, 2), (6, "fay", None, 3), (7, "gus", "g@x", 4)])
    assert _both(t) == expected
    t.compact()
    assert _both(t) == expected


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_time_travel_to_a_drop_reads_through_the_types_since(spark, tmp_path, table_type):
    """A snapshot taken while a column was dropped, read in the latest schema after a revert
    restored the column and it changed type again: its values pass through every type the
    column had (``int -> double -> string`` reads ``"5.0"``), as in a read of the latest
    snapshot, top level and inside a map's values. They were cast from the stored ``int``
    straight to ``string`` (``"5"``): the snapshot's schema has no type for the column. Found
    by the model test (a 15-step history, kept in tests/model/test_model_regressions.py)."""
    t = evonb.create_table(tmp_path / "t", "id bigint not null, ts bigint, v int, "
                           "m map<string, struct<x: int, y: int>>", primary_key="id",
                           precombine="ts", table_type=table_type)
    t.write(spark.createDataFrame([(1, 1, 5, {"k": (-44, 1)})],
                                  "id bigint, ts bigint, v int, "
                                  "m map<string, struct<x: int, y: int>>"), "upsert")
    written = t.history()[-1].instant
    t.alter("ALTER TABLE t ALTER COLUMN v TYPE double")
    t.alter("ALTER TABLE t ALTER COLUMN m.value.x TYPE double")
    doubles = t.history()[-1].instant
    t.alter("ALTER TABLE t DROP COLUMN v")
    t.alter("ALTER TABLE t DROP COLUMN m.value.x")
    dropped = t.history()[-1].instant
    t.revert_schema(doubles)
    t.alter("ALTER TABLE t ALTER COLUMN v TYPE string")
    t.alter("ALTER TABLE t ALTER COLUMN m.value.x TYPE string")
    columns = ["id", "ts", "v", "m"]
    through_double = (columns, [(1, 1, "5.0", {"k": ("-44.0", 1)})])
    assert _spark_rows(t) == through_double
    assert _spark_rows(t, as_of=dropped, schema="latest") == through_double
    arrow = t.to_arrow(as_of=dropped, schema="latest").to_pylist()
    assert arrow == [{"id": 1, "ts": 1, "v": "5.0", "m": [("k", {"x": "-44.0", "y": 1})]}]
    # the snapshot before the change to double shows an int, cast once to the latest type
    assert _spark_rows(t, as_of=written, schema="latest") == (
        columns, [(1, 1, "5", {"k": ("-44", 1)})])
