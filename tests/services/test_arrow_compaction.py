"""Compaction inside Spark tasks with Arrow (:mod:`evonb.spark.group_merge`).

File groups of the latest schema version whose blocks list the rows they replace are merged
by Spark tasks with pyarrow; the result must be the rows Spark's merge writes, for every type
a table can hold, with the same commit times, key statistics and Parquet schema (field IDs);
groups Arrow cannot merge exactly (older schema versions, a record that moves to another
partition, INT96 mixed with INT64 timestamps, the property turned off) are merged by Spark in
the same commit."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow.parquet as pq
import pytest

import evonb
from evonb.services import ProgressLog
from evonb.services.compaction import ARROW_PROPERTY
from evonb.spark.group_merge import pack
from evonb.spark.mor import read_snapshot
from evonb.spark.session import temporary_settings
from evonb.spark.writer import TIMESTAMP_TYPE_OPTION
from evonb.table.check import check_table
from tests.parquet_files import physical_types

pytestmark = pytest.mark.spark

WIDE = ("id bigint not null, ts bigint, i int, f float, d double, s string, b binary, "
        "flag boolean, day date, at timestamp, small decimal(10,2), big decimal(30,5), "
        "st struct<x: int, y: string>, arr array<int>, m map<string, int>")
WIDE_SPARK = ("id long, ts long, i int, f float, d double, s string, b binary, flag boolean, "
              "day date, at timestamp, small decimal(10,2), big decimal(30,5), "
              "st struct<x: int, y: string>, arr array<int>, m map<string, int>")


def _wide_row(i: int, ts: int | None, tag: str) -> tuple:
    return (i, ts, i * 3 if i % 5 else None, i / 4, i * 1.5, f"{tag}{i}", bytes([i % 256, 7]),
            i % 2 == 0, dt.date(2020, 1, 1) + dt.timedelta(days=i),
            dt.datetime(2021, 3, 4, 5, 6, 7, i) if i % 7 else None,
            Decimal(f"{i}.25"), Decimal(f"{i}12345678901234567890.12345"),
            (i, f"{tag}x{i}") if i % 3 else None, [i, i + 1] if i % 4 else [],
            {f"k{i}": i} if i % 6 else None)


def _rows(df):
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _meta_rows(t, instant=None):
    snap = t.snapshot(instant)
    return _rows(read_snapshot(t, snap, t.schema_store.load(snap.schema_version), meta=True))


def _pair(tmp_path, ddl, properties=None, **kw):
    props = dict(properties or {})
    make = dict(primary_key="id", precombine="ts", table_type="mor", **kw)
    arrow = evonb.create_table(tmp_path / "arrow", ddl, properties=props, **make)
    spark_side = evonb.create_table(tmp_path / "spark", ddl,
                                    properties={**props, ARROW_PROPERTY: "false"}, **make)
    return arrow, spark_side


def _write(tables, spark, rows, cols, mode="upsert"):
    df = spark.createDataFrame(rows, cols)
    for t in tables:
        t.write(df, mode)


def _meta(t):
    return t.timeline.last_completed().metadata


def test_arrow_compaction_matches_spark_for_every_type(spark, tmp_path):
    arrow, spark_side = _pair(tmp_path, WIDE)
    both = (arrow, spark_side)
    _write(both, spark, [_wide_row(i, 5 if i % 9 else None, "b") for i in range(60)],
           WIDE_SPARK, "insert")
    _write(both, spark, [_wide_row(i, 5 if i % 9 else None, "c") for i in range(60, 90)],
           WIDE_SPARK, "insert")  # a second file group
    # wins, loses, ties, beats a null base; deletes, a re-insert after a delete; a second
    # block in the same group
    _write(both, spark, [_wide_row(1, 9, "win"), _wide_row(2, 1, "lose"),
                         _wide_row(3, 5, "tie"), _wide_row(9, 0, "over-null"),
                         _wide_row(61, 7, "win")], WIDE_SPARK)
    _write(both, spark, [(4,), (5,), (62,)], "id long", "delete")
    _write(both, spark, [_wide_row(4, 0, "back"), _wide_row(1, 9, "again"),
                         _wide_row(63, 1, "low")], WIDE_SPARK)
    before, before_spark = _meta_rows(arrow), _meta_rows(spark_side)
    assert _rows(arrow.read()) == _rows(spark_side.read())
    last_delta = arrow.timeline.last_completed().instant
    first_delta = next(r.instant for r in arrow.timeline.completed()
                   if r.action == "deltacommit")
    first_delta_spark = next(r.instant for r in spark_side.timeline.completed()
                         if r.action == "deltacommit")

    arrow.compact()
    spark_side.compact()
    meta = _meta(arrow)
    assert meta["groups_in_tasks"] == 2 and _meta(spark_side)["groups_in_tasks"] == 0
    assert meta["rows_written"] == _meta(spark_side)["rows_written"] > 0
    assert not arrow.snapshot().logs
    assert check_table(arrow.path).ok  # no staging left behind
    assert _meta_rows(arrow) == before and _meta_rows(spark_side) == before_spark
    assert _rows(arrow.read()) == _rows(spark_side.read())
    # time travel to the last delta commit, and an incremental read, see the same rows
    assert _meta_rows(arrow, last_delta) == before
    assert (_rows(arrow.read_incremental(first_delta))
            == _rows(spark_side.read_incremental(first_delta_spark)))

    # The new files have the base files' Parquet schema (names, field IDs) and key stats.
    new = arrow.snapshot().files
    old_schema = pq.read_schema(tmp_path / "spark" / spark_side.snapshot().files[0].path)
    for f in new:
        schema = pq.read_schema(arrow.root / f.path)
        assert schema.names == old_schema.names
        for name in schema.names:
            assert (schema.field(name).metadata or {}).get(b"PARQUET:field_id") == (
                old_schema.field(name).metadata or {}).get(b"PARQUET:field_id")
        assert f.key_stats and f.rows > 0
    assert sum(f.rows for f in new) == 88 == len(before)

    # Writes after the compaction prune by the new key statistics and merge by position.
    live = len(arrow.snapshot().files)
    _write(both, spark, [_wide_row(70, 9, "after"), _wide_row(200, 1, "new")], WIDE_SPARK)
    assert _rows(arrow.read()) == _rows(spark_side.read())
    lookup = _meta(arrow)["key_lookup"]
    assert lookup["live"] == live
    assert lookup["scanned"] < lookup["live"]  # the new files' key ranges prune the lookup


def test_groups_arrow_cannot_merge_go_to_spark_in_the_same_commit(spark, tmp_path):
    arrow, spark_side = _pair(tmp_path, "id bigint not null, v string, ts bigint",
                              properties={"evonb.compaction.batch.groups": "1"})
    both = (arrow, spark_side)
    _write(both, spark, [(i, f"a{i}", 1) for i in range(20)], "id long, v string, ts long",
           "insert")
    _write(both, spark, [(1, "x", 2)], "id long, v string, ts long")  # group 1: old version
    for t in both:
        t.alter("ALTER TABLE t ADD COLUMN extra int DEFAULT 7")
    _write(both, spark, [(i, f"b{i}", 1, i) for i in range(20, 40)],
           "id long, v string, ts long, extra int", "insert")
    _write(both, spark, [(21, "y", 2, 1)], "id long, v string, ts long, extra int")
    before = _rows(arrow.read())
    log = ProgressLog()
    arrow.compact(progress=log)
    spark_side.compact()
    # the new group (latest version) in a task; the old one (and its old-version block) by Spark
    assert _meta(arrow)["groups_in_tasks"] == 1
    # tasks first (start, one batch), then Spark (start, one step per batch of one group):
    # no empty batch after the last group
    steps = [(e.done, e.total) for e in log.events if e.stage == "compact"]
    total = steps[0][1]
    assert steps == [(0, total), (1, total), *((i, total) for i in range(1, total + 1))]
    assert _rows(arrow.read()) == before == _rows(spark_side.read())
    assert (1, "x", 2, 7) in before and (21, "y", 2, 1) in before
    assert {f.version for f in arrow.snapshot().files} == {arrow.schema.version_id}


def test_partitioned_tables_merge_in_tasks_unless_a_record_moves(spark, tmp_path):
    arrow, spark_side = _pair(tmp_path, "id bigint not null, v string, ts bigint, p string",
                              partition_by=["p"])
    both = (arrow, spark_side)
    cols = "id long, v string, ts long, p string"
    _write(both, spark, [(i, "a", 1, f"p{i % 3}") for i in range(30)], cols, "insert")
    _write(both, spark, [(1, "b", 2, "p1"), (2, "c", 2, "p2"), (3, "d", 2, "p0")], cols)
    groups = len({f.base for f in arrow.snapshot().logs})
    arrow.compact()
    spark_side.compact()
    assert _meta(arrow)["groups_in_tasks"] == groups == 3
    assert _rows(arrow.read()) == _rows(spark_side.read())
    _assert_in_partition_folders(spark, arrow)

    # Key 4 lives in p1 and its update moves it to p2: Spark's writer must place that group.
    _write(both, spark, [(4, "moved", 3, "p2"), (5, "stays", 3, "p2")], cols)
    groups = len({f.base for f in arrow.snapshot().logs})
    before = _rows(arrow.read())
    arrow.compact()
    spark_side.compact()
    assert groups == 2 and _meta(arrow)["groups_in_tasks"] == 1
    assert _rows(arrow.read()) == before == _rows(spark_side.read())
    p2 = _rows(arrow.read().filter("p = 'p2'"))
    assert (4, "moved", 3, "p2") in p2 and p2 == _rows(spark_side.read().filter("p = 'p2'"))
    assert not _rows(arrow.read().filter("p = 'p1' and id = 4"))
    _assert_in_partition_folders(spark, arrow)


def _assert_in_partition_folders(spark, t):
    for f in t.snapshot().files:
        values = {r[0] for r in spark.read.parquet(str(t.root / f.path)).select("p")
                  .distinct().collect()}
        assert f.partition == f"p={values.pop()}" and not values
        assert f.path.startswith(f.partition + "/")
    assert check_table(t.path).ok


def test_int96_with_other_timestamps_is_merged_by_spark(spark, tmp_path):
    ddl = "id bigint not null, ts bigint, at timestamp, local timestamp_ntz"
    cols = "id long, ts long, at timestamp, local timestamp_ntz"
    arrow, spark_side = _pair(tmp_path, ddl)
    when = dt.datetime(2022, 5, 6, 7, 8, 9, 123456)
    with temporary_settings(spark, {TIMESTAMP_TYPE_OPTION: "INT96"}):  # Spark's default
        _write((arrow, spark_side), spark, [(i, 1, when, when) for i in range(10)], cols,
               "insert")
    _write((arrow, spark_side), spark, [(3, 2, when + dt.timedelta(days=1), None)], cols)
    kinds = physical_types(arrow.root / arrow.snapshot().files[0].path)
    assert kinds["at"] == "INT96" and kinds["local"] == "INT64"
    before = _rows(arrow.read())
    arrow.compact()
    spark_side.compact()
    assert _meta(arrow)["groups_in_tasks"] == 0  # INT96 cannot be written beside INT64 times
    assert _rows(arrow.read()) == before == _rows(spark_side.read())


def test_timestamps_evonb_writes_are_merged_in_tasks(spark, tmp_path):
    """evonb writes ``timestamp`` as INT64 microseconds, beside ``timestamp_ntz``'s INT64: a
    group with both is merged in a task, and the merged file keeps them as INT64."""
    ddl = "id bigint not null, ts bigint, at timestamp, local timestamp_ntz"
    cols = "id long, ts long, at timestamp, local timestamp_ntz"
    arrow, spark_side = _pair(tmp_path, ddl)
    when = dt.datetime(1500, 5, 6, 7, 8, 9, 123456)  # before the Gregorian calendar
    _write((arrow, spark_side), spark, [(i, 1, when, when) for i in range(10)], cols, "insert")
    _write((arrow, spark_side), spark, [(3, 2, dt.datetime(9999, 12, 31), None)], cols)
    before = _rows(arrow.read())
    arrow.compact()
    spark_side.compact()
    assert _meta(arrow)["groups_in_tasks"] == 1
    assert _rows(arrow.read()) == before == _rows(spark_side.read())
    assert (3, 2, dt.datetime(9999, 12, 31), None) in before
    for t in (arrow, spark_side):
        assert physical_types(t.root / t.snapshot().files[0].path) == {
            "id": "INT64", "ts": "INT64", "at": "INT64", "local": "INT64",
            "_evo_commit_time": "BYTE_ARRAY"}


def test_int96_alone_round_trips(spark, tmp_path):
    arrow, _ = _pair(tmp_path, "id bigint not null, ts bigint, at timestamp")
    cols = "id long, ts long, at timestamp"
    far = dt.datetime(2400, 1, 2, 3, 4, 5, 678901)  # beyond nanosecond range
    with temporary_settings(spark, {TIMESTAMP_TYPE_OPTION: "INT96"}):  # a file as Spark writes it
        arrow.write(spark.createDataFrame([(i, 1, far) for i in range(5)], cols), "insert")
    arrow.write(spark.createDataFrame([(2, 2, dt.datetime(1900, 1, 1))], cols), "upsert")
    before = _rows(arrow.read())
    arrow.compact()
    assert _meta(arrow)["groups_in_tasks"] == 1
    assert _rows(arrow.read()) == before
    f = arrow.snapshot().files[0]
    schema = pq.ParquetFile(arrow.root / f.path).schema
    assert schema.column(2).physical_type == "INT96"


def test_many_groups_are_packed_into_fewer_files(spark, tmp_path):
    arrow, spark_side = _pair(tmp_path, "id bigint not null, v string, ts bigint",
                              properties={"evonb.write.target.file.bytes": "0",
                                          "evonb.compaction.batch.groups": "5"})
    cols = "id long, v string, ts long"
    df = spark.range(0, 600, 1, 12).selectExpr("id", "concat('v', id) as v", "1L as ts")
    for t in (arrow, spark_side):
        t.write(df, "insert")
    assert len(arrow.snapshot().files) == 12
    _write((arrow, spark_side), spark, [(i, "u", 2) for i in range(0, 600, 7)], cols)
    before = _rows(arrow.read())
    log = ProgressLog()
    arrow.compact(progress=log)
    spark_side.compact()
    assert _meta(arrow)["groups_in_tasks"] == 12
    # progress per batch of 5 groups, counting file groups
    assert log.stages == ["plan", "compact", "done"]
    assert [(e.done, e.total) for e in log.events if e.stage == "compact"] == [
        (0, 12), (5, 12), (10, 12), (12, 12)]
    # each batch of 5 (or 2) groups packed into as many files as the cores (at most a group each)
    cores = spark.sparkContext.defaultParallelism
    assert len(arrow.snapshot().files) == 2 * min(5, cores) + min(2, cores)
    assert _rows(arrow.read()) == before == _rows(spark_side.read())


def test_pack_balances_bins():
    assert pack([5, 1, 1, 1, 1, 1], 2) == [[0], [1, 2, 3, 4, 5]]
    assert pack([3, 3, 3, 3], 2) == [[0, 2], [1, 3]]
    assert pack([1, 2], 4) == [[1], [0]]
    assert pack([], 3) == []


@pytest.mark.parametrize("lookup", [{}, {"evonb.mor.driver_lookup.rows": "0"}],
                         ids=["driver-lookup", "spark-lookup"])
def test_a_key_stored_twice_in_one_base_file_keeps_both_rows(spark, tmp_path, lookup):
    """Each stored row of a key has its own log record (its base position), whichever path
    looked the keys up; the Arrow merge resolves records per key and position like the read,
    so a compaction keeps them all (it kept one of the two: the duplicate-keys model, seed
    3317903070)."""
    props = {"evonb.write.insert_duplicates": "allow", **lookup}
    arrow, spark_side = _pair(tmp_path, "id bigint not null, ts bigint, v string", props)
    both = (arrow, spark_side)
    cols = "id long, ts long, v string"
    stored = spark.createDataFrame([(0, 1, "a"), (0, 1, "b"), (1, 1, "c")], cols).coalesce(1)
    for t in both:
        t.write(stored, "insert")  # one base file
    _write(both, spark, [(0, 2, "new")], cols)  # one record per stored row of key 0
    want = [(0, 2, "new"), (0, 2, "new"), (1, 1, "c")]
    assert _rows(arrow.read()) == _rows(spark_side.read()) == want

    arrow.compact()
    spark_side.compact()
    assert _meta(arrow)["groups_in_tasks"] == 1 and _meta(spark_side)["groups_in_tasks"] == 0
    assert _rows(arrow.read()) == _rows(spark_side.read()) == want
    assert sorted(r["v"] for r in arrow.to_arrow().to_pylist()) == ["c", "new", "new"]


@pytest.mark.parametrize("blocks", ["avro", "parquet"])
def test_a_null_struct_with_a_required_member_merges_in_tasks(spark, tmp_path, blocks):
    """A log record's null struct whose member is required: Parquet blocks hold the member as
    null under it, and the cast to the base file's schema (the member required) refused it,
    so the group went to Spark's merge. Merged in tasks now, into the base schema with nested
    fields nullable; the rows are Spark's."""
    from pyspark.sql import functions as F

    ddl = "id bigint not null, ts bigint, s struct<z: int not null, x: int>"
    arrow, spark_side = _pair(tmp_path, ddl, {"evonb.mor.log_format": blocks})
    both = (arrow, spark_side)

    def frame(rows):
        df = spark.createDataFrame(rows, "id long, ts long, gone boolean, z int, x int")
        return df.select("id", "ts", F.when(~F.col("gone"), F.struct(
            F.coalesce("z", F.lit(0)).alias("z"), "x")).alias("s"))

    for t in both:
        t.write(frame([(1, 1, False, 1, 10), (2, 1, False, 2, 20), (3, 1, True, 0, 0)])
                .coalesce(1))
        t.write(frame([(2, 2, True, 0, 0), (3, 2, False, 3, 30)]), mode="upsert")
    expected = [(1, 1, (1, 10)), (2, 2, None), (3, 2, (3, 30))]
    for t in both:
        assert sorted((r.id, r.ts, r.s and (r.s.z, r.s.x)) for r in t.read().collect()) == expected
        before = _meta_rows(t)  # commit times too
        t.compact()
        assert _meta_rows(t) == before
        assert sorted((r["id"], r["ts"], r["s"] and (r["s"]["z"], r["s"]["x"]))
                      for r in t.to_arrow().to_pylist()) == expected
    assert (_meta(arrow)["groups_in_tasks"], _meta(spark_side)["groups_in_tasks"]) == (1, 0)
    schema = pq.read_schema(arrow.root / arrow.snapshot().files[0].path)
    assert schema.field("s").type.field("z").nullable
    stored = pq.read_schema(spark_side.root / spark_side.snapshot().files[0].path)
    assert [schema.field(n).metadata for n in schema.names] == [
        stored.field(n).metadata for n in schema.names]  # field IDs as Spark writes them
