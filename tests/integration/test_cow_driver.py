"""Small copy-on-write upserts and deletes rewritten by the driver (:mod:`evonb.spark.cow_driver`)
against the same writes through Spark: two implementations of one semantics, run on the same
table state and compared.

Before every write the table is copied; the copy takes the Spark path
(``evonb.write.driver_rewrite.bytes = 0``), the original the driver path, both get the same
rows. Then both must read the same, by Spark and by the JVM-free reader, commit times included
(each write's own instant stands for itself), and the driver's files must pass the deep check.
The writes cover the precombine rule (wins, losses, ties, nulls on either side), repeated keys
in one batch, new keys, deletes of present and unknown keys and of every row of a file, keys
moved to another partition, writes after the key column is renamed and widened and after a
write adds a column, nested columns, string, date and composite keys, keys stored twice (the
Spark path then), and the limits and options that send a write to Spark."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evonb
from evonb.errors import EvoError
from evonb.table.check import check_table
from evonb.table.layout import META_COMMIT_TIME
from tests.integration.table_copies import write_both

pytestmark = pytest.mark.spark

OFF = {"evonb.write.driver_rewrite.bytes": "0"}



def _rows(t, instant):
    """Every row, by Spark and by the JVM-free reader (which must agree), sorted, with the
    commit time ``instant`` written as ``"this write"``."""
    def own(value):
        return "this write" if value == instant else value

    spark_rows = sorted(repr(tuple(own(v) for v in r))
                        for r in t.read(meta_columns=True).collect())
    arrow = t.to_arrow(meta_columns=True)
    names = arrow.column_names
    arrow_rows = sorted(repr(tuple(own(row[n]) if n == META_COMMIT_TIME else row[n]
                                   for n in names)) for row in arrow.to_pylist())
    assert len(spark_rows) == len(arrow_rows) == arrow.num_rows
    return spark_rows


def _same_write(t, copy_at, df, mode, *, driver=True):
    """Write ``df`` into ``t`` (driver path) and into a fresh copy of it (Spark path); assert
    both read the same; the commit of ``t``."""
    other, mine, theirs = write_both(t, copy_at, OFF, df, mode, driver=driver)
    assert _rows(t, mine.instant) == _rows(other, theirs.instant)
    assert all(f.rows > 0 for f in t.snapshot().files)
    return mine


def _arrow_df(spark, rows, ddl):
    """A frame Spark knows the size of (collected by the job that checks it)."""
    return spark.createDataFrame(spark.createDataFrame(rows, ddl).toArrow())


COLS = "id long, v string, ts long"


def _bigint_table(spark, where, **kw):
    t = evonb.create_table(where, "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts", **kw)
    t.write(spark.createDataFrame([(i, f"b{i}", 5 if i % 4 else None) for i in range(60)],
                                  COLS).repartition(3))
    assert len(t.snapshot().files) >= 2
    return t


def test_driver_rewrites_equal_spark_rewrites(spark, tmp_path):
    """The precombine rule in every case, new keys, repeated keys; then deletes."""
    t = _bigint_table(spark, tmp_path / "t")
    copy = tmp_path / "spark_path"
    # wins (9), loses (1), ties (5), beats a null stored value (0), a null incoming value
    # against a set (5) and a null (8) stored one, repeated keys in the batch (the larger
    # precombine value wins, on a tie the later row), new keys
    rows = [(1, "win", 9), (2, "lose", 1), (3, "tie", 5), (4, "over-null", 0), (5, "null", None),
            (8, "null-null", None), (10, "first", 7), (10, "second", 7), (11, "low", 2),
            (11, "high", 3), (500, "new", 1), (501, "new", None)]
    commit = _same_write(t, copy, _arrow_df(spark, rows, COLS), "upsert")
    got = {r["id"]: (r["v"], r["ts"]) for r in t.to_arrow().to_pylist()}
    assert got[1] == ("win", 9) and got[2] == ("b2", 5) and got[3] == ("tie", 5)
    assert got[4] == ("over-null", 0) and got[5] == ("b5", 5) and got[8] == ("null-null", None)
    assert got[10] == ("second", 7) and got[11] == ("b11", 5) and got[500] == ("new", 1)
    assert len(got) == 62
    # the same through a frame Spark has no size for (its rows counted, then collected)
    commit = _same_write(t, copy, spark.createDataFrame([(12, "list", 6), (600, "n", 1)], COLS),
                         "upsert")
    assert commit.metadata["key_lookup"]["driver"] is True
    # deletes: present keys, unknown keys, a key twice
    keys = pa.table({"id": pa.array([1, 2, 2, 999, 500], pa.int64())})
    _same_write(t, copy, spark.createDataFrame(keys), "delete")
    assert {1, 2, 500}.isdisjoint(r["id"] for r in t.to_arrow().to_pylist())
    assert check_table(t.root, deep=True).ok


def test_only_changed_files_are_rewritten(spark, tmp_path):
    """A file whose stored rows all beat the incoming ones stays; a file emptied by a delete
    is removed without an empty file in its place; a rewritten file keeps its row order."""
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts")
    for lo in (0, 100, 200):
        t.write(spark.createDataFrame([(i, f"n{i}", 5) for i in range(lo, lo + 100)], COLS)
                .coalesce(1))
    by_low = {f.key_stats[0][1]: f for f in t.snapshot().files}
    # 150 loses to its stored row: the second file stays
    commit = _same_write(t, tmp_path / "c", _arrow_df(spark, [(150, "old", 1), (7, "x", 6)],
                                                      COLS), "upsert")
    assert commit.metadata["removed"] == [by_low[0].path]
    # the candidates are pruned by key range as on Spark's path: [7, 150] misses the third
    assert commit.metadata["key_lookup"] == {"live": 3, "scanned": 2, "driver": True}
    assert [f for f in t.snapshot().files if f.path == by_low[100].path]
    rewritten = [f for f in t.snapshot().files if f.instant == commit.instant]
    assert len(rewritten) == 1 and rewritten[0].rows == 100
    ids = pq.read_table(t.root / rewritten[0].path).column("id").to_pylist()
    assert ids == list(range(100))  # in place, in the file's order
    commit = _same_write(t, tmp_path / "c", _arrow_df(spark, [(150, "old", 1)], COLS), "upsert")
    assert commit.metadata["removed"] == [] and commit.metadata["added"] == []
    # a delete of every row of the third file
    keys = pa.table({"id": pa.array(range(200, 300), pa.int64())})
    commit = _same_write(t, tmp_path / "c", spark.createDataFrame(keys), "delete")
    assert commit.metadata["removed"] == [by_low[200].path]
    assert commit.metadata["added"] == []
    assert t.to_arrow().num_rows == 200


def test_keys_of_other_types_and_nested_columns(spark, tmp_path):
    """String, date and composite keys (matched by a hash join or a sorted search), with
    struct, list and map columns and timestamps carried through the rewrite."""
    ddl = ("k string not null, d date not null, v int, ts timestamp, "
           "s struct<x:int,y:string>, l array<struct<a:int>>, m map<string,int>")
    cols = ddl.replace(" not null", "")
    base = [(f"k{i}", dt.date(2024, 1, 1) + dt.timedelta(days=i), i,
             dt.datetime(2024, 1, 1, 1, i), (i, f"y{i}"), [(i,), (i + 1,)], {"a": i})
            for i in range(40)]
    for key in (["k"], ["d"], ["k", "d"]):
        where = tmp_path / "_".join(key)
        t = evonb.create_table(where, ddl, primary_key=key)
        t.write(spark.createDataFrame(base, cols).repartition(2))
        new = [("k1", dt.date(2024, 1, 2), -1, dt.datetime(2025, 5, 5, 5, 5), None, [],
                {"b": 2}),
               ("k9", dt.date(2024, 3, 3), -2, None, (0, None), [(None,)], None)]
        _same_write(t, tmp_path / "c", _arrow_df(spark, new, cols), "upsert")
        gone = [("k3", dt.date(2024, 1, 1), None, None, None, None, None)]
        _same_write(t, tmp_path / "c", _arrow_df(spark, gone, cols), "delete")


def test_partitioned_table_and_a_key_that_moves(spark, tmp_path):
    """A key upserted with another partition value leaves its old partition's file for the
    new partition's folder, as Spark's merge writes it."""
    t = evonb.create_table(tmp_path / "t", "id int not null, p string, v int",
                           primary_key="id", partition_by="p")
    t.write(spark.createDataFrame([(i, "ab"[i % 2], i) for i in range(30)], "id int, p string,"
                                                                           " v int"))
    rows = [(0, "b", 100), (1, "a", 101), (2, "a", 102), (40, None, 1)]
    commit = _same_write(t, tmp_path / "c", _arrow_df(spark, rows, "id int, p string, v int"),
                         "upsert")
    parts = {f.partition for f in t.snapshot().files if f.instant == commit.instant}
    assert parts == {"p=a", "p=b", "p=__HIVE_DEFAULT_PARTITION__"}
    got = {r["id"]: (r["p"], r["v"]) for r in t.to_arrow().to_pylist()}
    assert got[0] == ("b", 100) and got[1] == ("a", 101) and got[40] == (None, 1)


def test_after_a_rename_a_widening_and_an_added_column(spark, tmp_path):
    """The stored files read by field ID in their own schema versions: after the key column
    and a struct member are renamed and a column widened, and in a write that adds a
    column."""
    t = evonb.create_table(tmp_path / "t", "id int not null, v int, s struct<x:int>",
                           primary_key="id")
    t.write(spark.createDataFrame([(i, i, (i,)) for i in range(20)],
                                  "id int, v int, s struct<x:int>"))
    t.alter("ALTER TABLE t RENAME COLUMN id TO key; ALTER TABLE t ALTER COLUMN v TYPE bigint; "
            "ALTER TABLE t RENAME COLUMN s.x TO z")
    cols = "key int, v long, s struct<z:int>"
    _same_write(t, tmp_path / "c", _arrow_df(spark, [(3, 2**40, (30,)), (99, 1, None)], cols),
                "upsert")
    # a write with a column the table does not have yet: the schema evolves in the same commit
    cols2 = "key int, v long, s struct<z:int>, extra double"
    commit = _same_write(t, tmp_path / "c", _arrow_df(spark, [(4, 7, (40,), 1.5)], cols2),
                         "upsert")
    assert commit.metadata.get("schema_change") == "add_columns"
    got = {r["key"]: r for r in t.to_arrow().to_pylist()}
    assert got[4]["extra"] == 1.5 and got[5]["extra"] is None and got[3]["s"] == {"z": 30}
    assert got[3]["v"] == 2**40 and got[5] == {"key": 5, "v": 5, "s": {"z": 5}, "extra": None}


def test_keys_stored_twice_take_the_spark_path(spark, tmp_path):
    """Rows inserted with duplicates allowed: an upsert of such a key is merged by Spark,
    whose window picks one row of them all; a delete stays in the driver."""
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts")
    t.write(spark.createDataFrame([(i, "a", 1) for i in range(10)], COLS))
    t.write(spark.createDataFrame([(1, "dup", 2)], COLS), mode="insert")
    _same_write(t, tmp_path / "c", _arrow_df(spark, [(1, "up", 3)], COLS), "upsert",
                driver=False)
    assert [r["v"] for r in t.to_arrow().to_pylist() if r["id"] == 1] == ["up"]
    t.write(spark.createDataFrame([(2, "dup", 2)], COLS), mode="insert")
    keys = pa.table({"id": pa.array([2], pa.int64())})
    _same_write(t, tmp_path / "c", spark.createDataFrame(keys), "delete")
    assert 2 not in [r["id"] for r in t.to_arrow().to_pylist()]


def test_limits_and_options(spark, tmp_path):
    """Writes beyond the limits, or with a Parquet option the driver's writer does not
    honour, take the Spark path; the row-group options are honoured; negative limits are
    refused."""
    t = _bigint_table(spark, tmp_path / "t")
    one = _arrow_df(spark, [(1, "x", 9)], COLS)
    three = _arrow_df(spark, [(1, "x", 9), (2, "y", 9), (3, "z", 9)], COLS)
    t.set_properties({"evonb.write.driver_rewrite.incoming_rows": "2"})
    _same_write(t, tmp_path / "c", three, "upsert", driver=False)
    _same_write(t, tmp_path / "c", one, "upsert")
    t.set_properties({"evonb.write.driver_rewrite.bytes": "10"})  # the candidates hold more
    _same_write(t, tmp_path / "c", one, "upsert", driver=False)
    t.set_properties({"evonb.write.driver_rewrite.bytes": str(10**9),
                      "evonb.write.parquet.page.size": "4096"})
    _same_write(t, tmp_path / "c", one, "upsert", driver=False)
    t.set_properties(unset=["evonb.write.parquet.page.size"])
    t.set_properties({"evonb.write.parquet.block.row.count.limit": "8"})
    commit = _same_write(t, tmp_path / "c", one, "upsert")
    (written,) = [f for f in t.snapshot().files if f.instant == commit.instant]
    meta = pq.ParquetFile(t.root / written.path).metadata
    assert written.rows > 8 and meta.num_row_groups == -(-written.rows // 8)
    with pytest.raises(EvoError, match=r"driver_rewrite\.bytes"):
        t.set_properties({"evonb.write.driver_rewrite.bytes": "-1"})
