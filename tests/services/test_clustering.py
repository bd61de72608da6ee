"""Clustering (:mod:`evonb.services.clustering`): small files into few sorted files, one
``replacecommit``; same rows with both readers, time travel, rollback, clean, conflicts, the
stored sort order (by field ID) and inline clustering."""

from __future__ import annotations

import itertools
import math

import pyarrow.parquet as pq
import pytest

import evonb
from evonb.errors import ColumnNotFoundError, ConflictError, InvalidArgumentError
from evonb.services.clustering import (
    INLINE_PROPERTY,
    SMALL_FRACTION,
    SORT_PROPERTY,
    commits_since_clustering,
)
from evonb.services.progress import ProgressLog

pytestmark = pytest.mark.spark

COLS = "id long, v string, ts long"


def _rows(t, as_of=None):
    return sorted(tuple(r) for r in t.read(as_of).collect())


def _arrow_rows(t, as_of=None):
    table = t.to_arrow(as_of)
    return sorted(zip(*(table.column(n).to_pylist() for n in table.column_names), strict=True))


def _small_writes(spark, t, batches, start=0, mode="insert"):
    for b in range(batches):
        rows = [(start + b * 10 + i, f"v{b}", (b * 7 + i * 13) % 50) for i in range(3)]
        t.write(spark.createDataFrame(rows, COLS), mode)


def _file_column(t, path, column):
    """The values of ``column`` (a physical name) in one data file, in file order."""
    return pq.read_table(t.root / path, columns=[column]).column(column).to_pylist()


@pytest.fixture(params=["cow", "mor"])
def table(request, spark, tmp_path):
    t = evonb.create_table(tmp_path / request.param, "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts", table_type=request.param)
    _small_writes(spark, t, 3)
    # upserts: rewritten files (cow) or log blocks (mor)
    t.write(spark.createDataFrame([(0, "up", 3), (21, "up", 4)], COLS), "upsert")
    return t


def test_cluster_rewrites_small_files_sorted_same_rows(spark, table):
    t = table
    before_files = len(t.snapshot().files)
    before = _rows(t)
    assert before == _arrow_rows(t)
    old = t.history()[-1].instant
    log = ProgressLog()
    commit = t.cluster(by="ts", progress=log)
    assert commit is not None and commit.action == "replacecommit"
    assert commit.operation == "cluster"
    assert log.stages[0] == "plan" and log.stages[-1] == "done"
    snap = t.snapshot()
    assert before_files > 1 and len(snap.files) == 1 and snap.logs == ()
    assert _rows(t) == before and _arrow_rows(t) == before
    _, layout = t.version(t.schema.version_id)
    ts_id = t.schema.find_id("ts")
    values = _file_column(t, snap.files[0].path, layout.name(ts_id))
    assert values == sorted(values) and len(values) == len(before)
    assert t.properties[SORT_PROPERTY] == str(ts_id)
    # already clustered: nothing to do, no commit
    n = len(t.history())
    assert t.cluster() is None and t.cluster(by="ts") is None
    assert len(t.history()) == n
    # time travel to before the clustering reads the old files
    assert len(t.snapshot(old).files) == before_files
    assert _rows(t, old) == before and _arrow_rows(t, old) == before
    # rollback of the clustering brings the old files back
    t.rollback()
    assert len(t.snapshot().files) == before_files
    assert _rows(t) == before and _arrow_rows(t) == before


def test_clean_removes_replaced_files(spark, table):
    t = table
    replaced = [f.path for f in t.snapshot().files]
    t.cluster()
    assert all((t.root / p).exists() for p in replaced)
    assert t.clean(retain_commits=1) is not None
    assert not any((t.root / p).exists() for p in replaced)
    assert _rows(t) == _arrow_rows(t) and len(_rows(t)) == 9


def test_renamed_sort_column_and_dropped_column_keep_working(spark, table):
    t = table
    t.alter("ALTER TABLE t ADD COLUMN extra string")
    t.cluster(by=["ts", "id"])
    order = t.properties[SORT_PROPERTY]
    t.alter("ALTER TABLE t RENAME COLUMN ts TO event_ts")
    t.alter("ALTER TABLE t DROP COLUMN v")
    t.write(spark.createDataFrame([(100, 9, "x"), (101, 1, None)],
                                  "id long, event_ts long, extra string"))
    expected = _rows(t)
    assert len(expected) == 11 and len(expected[0]) == 3
    commit = t.cluster()  # the stored order, by field ID: event_ts, id
    assert commit is not None and commit.metadata["sort_columns"] == ["event_ts", "id"]
    assert t.properties[SORT_PROPERTY] == order
    assert _rows(t) == expected and _arrow_rows(t) == expected
    snap = t.snapshot()
    assert len(snap.files) == 1 and snap.files[0].version == t.schema.version_id
    _, layout = t.version(t.schema.version_id)
    values = _file_column(t, snap.files[0].path, layout.name(t.schema.find_id("event_ts")))
    assert values == sorted(values)


def test_mistakes_name_the_thing_and_leave_the_table_unchanged(spark, tmp_path):
    t = evonb.create_table(tmp_path / "m", "id bigint not null, tags map<string, string>, "
                           "xs array<int>, ts bigint", primary_key="id")
    t.write(spark.createDataFrame([(1, {"a": "b"}, [1], 5)], "id long, tags map<string, "
                                  "string>, xs array<int>, ts long"))
    n = len(t.history())
    with pytest.raises(ColumnNotFoundError, match="tz"):
        t.cluster(by="tz")
    with pytest.raises(InvalidArgumentError, match="'tags'"):
        t.cluster(by="tags")
    with pytest.raises(InvalidArgumentError, match="'xs'"):
        t.cluster(by=["ts", "xs"])
    for bad in (0, -5, 1.5, "big"):
        with pytest.raises(InvalidArgumentError, match="target_file_bytes"):
            t.cluster(target_file_bytes=bad)
    with pytest.raises(InvalidArgumentError, match="not partitioned"):
        t.cluster(where="ts > 1")
    assert len(t.history()) == n and SORT_PROPERTY not in t.properties


NESTED = "id bigint not null, s struct<y: bigint, q: struct<z: string>>, ts bigint"
NESTED_SPARK = "id long, s struct<y: long, q: struct<z: string>>, ts long"


def _nested_rows(t):
    """Spark's and the JVM-free reader's rows, structs as dicts, both the same."""
    spark_rows = sorted(repr(r.asDict(recursive=True)) for r in t.read().collect())
    arrow_rows = sorted(repr(r) for r in t.to_arrow().to_pylist())
    assert spark_rows == arrow_rows
    return spark_rows


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_cluster_by_struct_members_renamed_later(spark, tmp_path, table_type):
    """A struct member sorts the files (at any depth of structs), by its path of physical
    names; renamed later (member and struct), the stored order keeps sorting by it."""
    t = evonb.create_table(tmp_path / table_type, NESTED, primary_key="id", precombine="ts",
                           table_type=table_type)
    for b in range(3):
        t.write(spark.createDataFrame(
            [(b * 10 + i, ((b * 7 + i * 13) % 50, (f"z{(i * 5 + b) % 7}",)), 1)
             for i in range(4)], NESTED_SPARK))
    t.write(spark.createDataFrame([(0, (99, ("up",)), 2)], NESTED_SPARK), "upsert")
    before = _nested_rows(t)
    assert t.cluster(by="s.y", target_file_bytes=1) is not None
    assert _nested_rows(t) == before
    y_id = t.schema.find_id("s.y")
    assert t.properties[SORT_PROPERTY] == str(y_id)
    _, layout = t.version(t.schema.version_id)
    s_name, y_name = layout.name(t.schema.find_id("s")), layout.name(y_id)
    lows_highs = []
    for f in t.snapshot().files:  # each file sorted by s.y, the files' ranges apart
        ys = [r[y_name] for r in _file_column(t, f.path, s_name)]
        assert ys == sorted(ys)
        lows_highs.append((ys[0], ys[-1]))
    lows_highs.sort()
    assert len(lows_highs) > 1
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(lows_highs))  # ranges apart
    t.alter("ALTER TABLE t RENAME COLUMN s.y TO why; ALTER TABLE t RENAME COLUMN s TO st")
    t.write(spark.createDataFrame([(100, (3, ("new",)), 1), (101, (1, ("n2",)), 1)],
                                  "id long, st struct<why: long, q: struct<z: string>>, "
                                  "ts long"))
    after = _nested_rows(t)
    assert t.cluster() is not None  # the stored order: the renamed member, by ID
    assert t.history()[-1].metadata["sort_columns"] == ["st.why"]
    assert _nested_rows(t) == after
    assert t.cluster(by=["st.q.z", "id"], order="zorder") is not None
    assert _nested_rows(t) == after


def test_members_of_arrays_and_maps_are_refused(spark, tmp_path):
    t = evonb.create_table(tmp_path / "n", "id bigint not null, xs array<struct<k: int>>, "
                           "m map<string, struct<k: int>>, s struct<k: int>", primary_key="id")
    n = len(t.history())
    for bad, inside in (("xs.element.k", "'xs'"), ("m.value.k", "'m'")):
        with pytest.raises(InvalidArgumentError, match=f"inside the .* column {inside}"):
            t.cluster(by=bad)
    with pytest.raises(InvalidArgumentError, match="'s'"):
        t.cluster(by="s")  # a struct itself is not sortable
    assert len(t.history()) == n and SORT_PROPERTY not in t.properties


def test_where_clusters_matching_partitions_only(spark, tmp_path):
    t = evonb.create_table(tmp_path / "p", "id bigint not null, region string, ts bigint",
                           primary_key="id", partition_by="region")
    for b in range(3):
        t.write(spark.createDataFrame([(b * 10 + i * 2 + (r == "us"), r, i) for i in range(2)
                                       for r in ("eu", "us")], "id long, region string, ts long"))
    eu = [f for f in t.snapshot().files if f.partition == "region=eu"]
    us = [f for f in t.snapshot().files if f.partition == "region=us"]
    assert len(eu) > 1 and len(us) > 1
    before = _rows(t)
    with pytest.raises(InvalidArgumentError, match="partition columns"):
        t.cluster(where="ts > 1")
    commit = t.cluster(where="region = 'eu'")
    assert commit is not None
    assert sorted(commit.metadata["removed"]) == sorted(f.path for f in eu)
    snap = t.snapshot()
    assert len([f for f in snap.files if f.partition == "region=eu"]) == 1
    assert sorted(f.path for f in snap.files if f.partition == "region=us") == sorted(
        f.path for f in us)
    assert _rows(t) == before and _arrow_rows(t) == before


def test_conflict_with_a_write_to_the_clustered_files(spark, tmp_path):
    t = evonb.create_table(tmp_path / "c", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts")
    _small_writes(spark, t, 3)
    n = len(t.history())

    def upsert_meanwhile(done, total, stage):
        if stage == "cluster" and done == 0:
            t.write(spark.createDataFrame([(1, "meanwhile", 99)], COLS), "upsert")

    with pytest.raises(ConflictError, match="clustering"):
        t.cluster(progress=upsert_meanwhile)
    assert len(t.history()) == n + 1  # the upsert only
    assert t.history()[-1].action == "commit"
    assert (1, "meanwhile", 99) in _rows(t)


def test_writes_to_other_files_do_not_conflict(spark, tmp_path):
    t = evonb.create_table(tmp_path / "o", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts")
    _small_writes(spark, t, 3)
    before = _rows(t)

    def insert_meanwhile(done, total, stage):
        if stage == "cluster" and done == 0:
            t.write(spark.createDataFrame([(500, "new", 1)], COLS))

    commit = t.cluster(progress=insert_meanwhile)
    assert commit is not None
    assert _rows(t) == sorted([*before, (500, "new", 1)])
    assert _arrow_rows(t) == _rows(t)


def test_inline_clustering_after_every_n_data_commits(spark, tmp_path):
    t = evonb.create_table(tmp_path / "i", "id bigint not null, v string, ts bigint",
                           primary_key="id", properties={INLINE_PROPERTY: "3"})
    _small_writes(spark, t, 2)
    assert commits_since_clustering(t) == 2
    assert [c.action for c in t.history()] == ["create", "commit", "commit"]
    _small_writes(spark, t, 1, start=100)
    ops = [c.operation for c in t.history()]
    assert ops[-1] == "cluster" and commits_since_clustering(t) == 0
    assert len(t.snapshot().files) == 1
    assert len(_rows(t)) == 9 and _arrow_rows(t) == _rows(t)


# ------------------------------------------------------------------------------- z-order
GRID = 32  # x and y each take GRID values: GRID * GRID rows


def _grid_table(spark, path, table_type="cow"):
    """A table of every (x, y) pair of the grid, written in 4 small writes in a scrambled
    order (so no file is sorted by either column)."""
    t = evonb.create_table(path, "id bigint not null, x bigint, y bigint, pad string",
                           primary_key="id", table_type=table_type)
    n = GRID * GRID
    ids = [(i * 389) % n for i in range(n)]  # 389 is prime to n: a permutation
    for w in range(4):
        rows = [(i, i % GRID, i // GRID, f"p{i:06d}") for i in ids[w::4]]
        t.write(spark.createDataFrame(rows, "id long, x long, y long, pad string"))
    return t


def _files_overlapping(t, column, lo, hi):
    """How many of the table's files may hold ``lo <= column <= hi``, by their Parquet
    min/max statistics (what a reader's file skipping goes by)."""
    _, layout = t.version(t.schema.version_id)
    name = layout.name(t.schema.find_id(column))
    hits = 0
    for f in t.snapshot().files:
        meta = pq.ParquetFile(t.root / f.path).metadata
        idx = meta.schema.to_arrow_schema().get_field_index(name)
        for g in range(meta.num_row_groups):
            stats = meta.row_group(g).column(idx).statistics
            if stats.min <= hi and stats.max >= lo:
                hits += 1
                break
    return hits


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_zorder_same_rows_and_stored_order(spark, tmp_path, table_type):
    t = _grid_table(spark, tmp_path / table_type, table_type)
    t.write(spark.createDataFrame([(5, 5, 0, "up"), (700, 28, 21, "up")],
                                  "id long, x long, y long, pad string"), "upsert")
    before = _rows(t)
    assert len(before) == GRID * GRID and before == _arrow_rows(t)
    commit = t.cluster(by=["x", "y"], order="zorder", target_file_bytes=2048)
    assert commit is not None and commit.metadata["sort_order"] == "zorder"
    assert commit.metadata["sort_columns"] == ["x", "y"]
    assert _rows(t) == before and _arrow_rows(t) == before
    assert t.snapshot().logs == ()
    x, y = t.schema.find_id("x"), t.schema.find_id("y")
    assert t.properties[SORT_PROPERTY] == f"zorder:{x},{y}"
    # clustered in that order already: nothing to do, in the stored order or asked again
    assert t.cluster() is None
    assert t.cluster(by=["x", "y"], order="zorder", target_file_bytes=2048) is None
    # a linear order of the same columns is a different order: everything is rewritten
    linear = t.cluster(by=["x", "y"], target_file_bytes=2048)
    assert linear is not None and linear.metadata["sort_order"] == "linear"
    assert t.properties[SORT_PROPERTY] == f"{x},{y}"
    assert _rows(t) == before


def test_zorder_prunes_files_on_either_column(spark, tmp_path):
    unclustered = _grid_table(spark, tmp_path / "u")
    linear = _grid_table(spark, tmp_path / "l")
    zordered = _grid_table(spark, tmp_path / "z")
    linear.cluster(by=["x", "y"], target_file_bytes=2048)
    zordered.cluster(by=["x", "y"], order="zorder", target_file_bytes=2048)
    n_files = len(zordered.snapshot().files)
    assert n_files >= 8 and len(linear.snapshot().files) == n_files
    hits = {name: {col: _files_overlapping(t, col, 3, 5) for col in ("x", "y")}
            for name, t in (("none", unclustered), ("linear", linear), ("zorder", zordered))}
    # the scrambled small files each cover almost the whole range of both columns
    n_small = len(unclustered.snapshot().files)
    assert n_small >= 4 and hits["none"] == {"x": n_small, "y": n_small}
    # linear: only the first column prunes; z-order: both do
    assert hits["linear"]["x"] <= n_files // 4 and hits["linear"]["y"] == n_files, hits
    for col in ("x", "y"):
        assert hits["zorder"][col] <= n_files // 2, (n_files, hits)
    assert hits["zorder"]["y"] < hits["linear"]["y"]
    # the same rows come back through a filtered read
    got = zordered.read().filter("y between 3 and 5").count()
    assert got == unclustered.read().filter("y between 3 and 5").count() == 3 * GRID


def test_zorder_survives_a_rename(spark, tmp_path):
    t = _grid_table(spark, tmp_path / "r")
    t.cluster(by=["x", "y"], order="zorder", target_file_bytes=2048)
    stored = t.properties[SORT_PROPERTY]
    t.alter("ALTER TABLE t RENAME COLUMN y TO row_y")
    clustered = {f.path: f.bytes for f in t.snapshot().files}
    t.write(spark.createDataFrame([(5000 + i, i, GRID - i, "new") for i in range(5)],
                                  "id long, x long, row_y long, pad string"))
    added = [f.bytes for f in t.snapshot().files if f.path not in clustered]
    new_files = len(added)
    assert new_files >= 1 and max(added) < min(clustered.values())
    expected = _rows(t)
    # the stored z-order, by field ID; the new write's files are the small ones: a target
    # whose small-file cut lies between their sizes and the clustered files' sizes
    cut = (max(added) + min(clustered.values())) / 2
    commit = t.cluster(target_file_bytes=math.ceil(cut / SMALL_FRACTION))
    assert commit is not None and commit.metadata["sort_order"] == "zorder"
    assert commit.metadata["sort_columns"] == ["x", "row_y"]
    assert commit.metadata["files_in"] == new_files
    assert t.properties[SORT_PROPERTY] == stored
    assert _rows(t) == expected and _arrow_rows(t) == expected
    assert _files_overlapping(t, "row_y", 3, 5) <= len(t.snapshot().files) // 2


def test_zorder_mistakes_name_the_thing(spark, tmp_path):
    t = evonb.create_table(tmp_path / "zm", "id bigint not null, tags map<string, string>, "
                           "ts bigint, v string", primary_key="id")
    t.write(spark.createDataFrame([(1, {"a": "b"}, 5, "x"), (2, None, 6, "y")],
                                  "id long, tags map<string, string>, ts long, v string"))
    n = len(t.history())
    with pytest.raises(InvalidArgumentError, match=r"two or more columns.*'ts'"):
        t.cluster(by="ts", order="zorder")
    with pytest.raises(InvalidArgumentError, match="two or more columns"):
        t.cluster(by=["ts", "ts"], order="zorder")
    with pytest.raises(ColumnNotFoundError, match="tz"):
        t.cluster(by=["ts", "tz"], order="zorder")
    with pytest.raises(InvalidArgumentError, match="'tags'"):
        t.cluster(by=["ts", "tags"], order="zorder")
    with pytest.raises(InvalidArgumentError, match="'hilbert'"):
        t.cluster(by=["ts", "v"], order="hilbert")
    with pytest.raises(InvalidArgumentError, match="two or more columns"):
        t.cluster(order="zorder")  # no stored order to z-order
    assert len(t.history()) == n and SORT_PROPERTY not in t.properties
