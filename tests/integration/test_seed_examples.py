"""The examples of the seed documents, reproduced on real Spark and real Parquet files."""

from __future__ import annotations

import pytest

import evonb

pytestmark = pytest.mark.spark

TRIPS = ("rowId string, partitionId string, preComb bigint, name string, versionId string, "
         "intToLong int")


def test_schema_evolution_in_action(spark, warehouse):
    """Hudi's "Schema Evolution in Action": three inserts, then an upsert that widens intToLong
    to bigint and brings newField; the same five rows and the same user columns."""
    t = evonb.create_table(warehouse / "hudi_trips_cow", TRIPS, primary_key="rowId",
                           precombine="preComb", partition_by="partitionId")
    cols = "rowId string, partitionId string, preComb long, name string, versionId string"
    t.write(spark.createDataFrame(
        [("row_1", "part_0", 0, "bob", "v_0", 0), ("row_2", "part_0", 0, "john", "v_0", 0),
         ("row_3", "part_0", 0, "tom", "v_0", 0)], cols + ", intToLong int"), "upsert")
    first = t.read()
    assert [(f.name, f.dataType.simpleString()) for f in first.schema.fields] == [
        ("rowId", "string"), ("partitionId", "string"), ("preComb", "bigint"),
        ("name", "string"), ("versionId", "string"), ("intToLong", "int")]
    assert sorted(tuple(r) for r in first.collect()) == [
        ("row_1", "part_0", 0, "bob", "v_0", 0), ("row_2", "part_0", 0, "john", "v_0", 0),
        ("row_3", "part_0", 0, "tom", "v_0", 0)]

    t.write(spark.createDataFrame(
        [("row_2", "part_0", 5, "john", "v_3", 3, "newField_1"),
         ("row_5", "part_0", 5, "maroon", "v_2", 2, "newField_1"),
         ("row_9", "part_0", 5, "michael", "v_2", 2, "newField_1")],
        cols + ", intToLong long, newField string"), "upsert")
    df = t.read()
    assert [(f.name, f.dataType.simpleString()) for f in df.schema.fields] == [
        ("rowId", "string"), ("partitionId", "string"), ("preComb", "bigint"),
        ("name", "string"), ("versionId", "string"), ("intToLong", "bigint"),
        ("newField", "string")]
    assert sorted(tuple(r) for r in df.collect()) == [
        ("row_1", "part_0", 0, "bob", "v_0", 0, None),
        ("row_2", "part_0", 5, "john", "v_3", 3, "newField_1"),
        ("row_3", "part_0", 0, "tom", "v_0", 0, None),
        ("row_5", "part_0", 5, "maroon", "v_2", 2, "newField_1"),
        ("row_9", "part_0", 5, "michael", "v_2", 2, "newField_1"),
    ]
    # Hudi's desc lists 5 meta columns + these; with evonb's hidden commit-time column the
    # table has the same eleven columns when meta columns are asked for... evonb keeps one
    # meta column (the commit time), so: 7 user columns + 1 meta column.
    assert len(t.read(meta_columns=True).columns) == 8
    # The schema grew one version: intToLong widened by ID, newField got a fresh ID.
    s = t.schema
    assert s.find("intToLong").id == 6 and str(s.find("intToLong").type) == "bigint"
    assert s.find("newField").id == 7 and s.max_column_id == 7
    # Only the file group holding row_2 was rewritten: one file removed, one added.
    last = t.history()[-1]
    assert (last.files_removed, last.files_added, last.rows_written) == (1, 1, 5)


def test_kudu_drop_and_re_add_reads_the_default(spark, warehouse):
    """Kudu's design note: col_b dropped and re-added NOT NULL DEFAULT 999 reads 999."""
    t = evonb.create_table(warehouse / "x", "col_a int, col_b int")
    t.write(spark.createDataFrame([(1, 2)], "col_a int, col_b int"))
    t.alter("ALTER TABLE x DROP COLUMN col_b")
    t.alter("ALTER TABLE x ADD COLUMN col_b int NOT NULL DEFAULT 999")
    assert [tuple(r) for r in t.read().collect()] == [(1, 999)]
    old_b, new_b = t.schemas()[0].find("col_b"), t.schema.find("col_b")
    assert old_b.id == 2 and new_b.id == 3 and not new_b.nullable
    # A filter on the re-added column sees the default, not the old value.
    assert t.read().filter("col_b = 2").count() == 0
    assert t.read().filter("col_b = 999").count() == 1


def test_rfc_read_schema_walk_through(spark, warehouse):
    """RFC-33's read-schema construction, in one read over an old and a new file: a column
    dropped and re-added (null), a rename (old data), an unchanged column, a new column."""
    t = evonb.create_table(warehouse / "rfc", "id int, data string, c3 string, c5 string")
    t.write(spark.createDataFrame([(1, "d1", "x1", "old5")],
                                  "id int, data string, c3 string, c5 string"))
    t.alter("ALTER TABLE rfc DROP COLUMN c5; ALTER TABLE rfc RENAME COLUMN data TO data1;"
            "ALTER TABLE rfc ADD COLUMNS (c5 string, c4 string)")
    t.write(spark.createDataFrame([(2, "d2", "x2", "new5", "n4")],
                                  "id int, data1 string, c3 string, c5 string, c4 string"))
    rows = sorted(tuple(r) for r in t.read().collect())
    assert t.read().columns == ["id", "data1", "c3", "c5", "c4"]
    assert rows == [(1, "d1", "x1", None, None), (2, "d2", "x2", "new5", "n4")]
