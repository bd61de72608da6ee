"""Reads merge every file's schema version into the query schema by field ID; filters stay
correct and still reach the Parquet files after renames, swaps, re-adds and type changes."""

from __future__ import annotations

from datetime import timedelta

import pyarrow.parquet as pq
import pytest

import evonb
from evonb.errors import CommitNotFoundError
from evonb.table.instants import parse_instant

pytestmark = pytest.mark.spark

SMALL_ROW_GROUPS = {"evonb.write.parquet.block.size": "4096"}


def _rows(df):
    return sorted((tuple(r) for r in df.collect()), key=repr)


@pytest.fixture(scope="module")
def swapped(spark, tmp_path_factory):
    """A table whose files span four schema versions: x and y swapped names, z dropped and
    re-added with a default, w widened int -> bigint; 2,000 rows per file, many row groups."""
    root = tmp_path_factory.mktemp("swap") / "t"
    t = evonb.create_table(root, "id int, x int, y int, z string, w int",
                           properties=SMALL_ROW_GROUPS)
    t.write(spark.sql("select cast(id as int) id, cast(id + 1000 as int) x, "
                      "cast(id + 5000 as int) y, concat('z', id) z, cast(id as int) w "
                      "from range(0, 2000)").coalesce(1))
    t.alter("ALTER TABLE t RENAME COLUMN x TO tmp; ALTER TABLE t RENAME COLUMN y TO x;"
            "ALTER TABLE t RENAME COLUMN tmp TO y")
    t.alter("ALTER TABLE t DROP COLUMN z")
    t.alter("ALTER TABLE t ADD COLUMN z string DEFAULT 'dflt'; "
            "ALTER TABLE t ALTER COLUMN w TYPE bigint")
    t.write(spark.sql("select cast(id as int) id, cast(id + 1000 as int) x, "
                      "cast(id + 5000 as int) y, concat('new', id) z, id w "
                      "from range(2000, 4000)").coalesce(1))
    return t


def test_files_have_several_row_groups(swapped):
    for f in swapped.snapshot().files:
        assert pq.ParquetFile(swapped.root / f.path).num_row_groups > 1


def test_swapped_names_read_their_own_data(swapped):
    df = swapped.read()
    assert df.columns == ["id", "y", "x", "w", "z"]
    assert _rows(df.filter("id in (5, 2005)")) == [
        (2005, 7005, 3005, 2005, "new2005"), (5, 1005, 5005, 5, "dflt")]


@pytest.mark.parametrize(("condition", "expected_ids"), [
    ("x = 5005", [5]),            # old files: x was y
    ("x = 3005", [2005]),         # new files
    ("y = 1005", [5]),            # old files: y was x
    ("y = 7005", [2005]),
    ("x = 1005", []),             # the old name's value must not match after the swap
    ("z = 'dflt'", list(range(0, 2000, 500))),
    ("z = 'z5'", []),             # dropped and re-added: old values never come back
    ("z = 'new2500'", [2500]),
    ("w = 1500", [1500]),         # widened int -> bigint
    ("w > 3998", [3999]),
])
def test_filters_on_renamed_swapped_and_re_added_columns(swapped, condition, expected_ids):
    df = swapped.read().filter(condition)
    got = sorted(r["id"] for r in df.collect())
    if condition == "z = 'dflt'":
        assert len(got) == 2000 and got[:1] == [0]
    else:
        assert got == expected_ids


def test_filters_are_pushed_to_parquet_by_physical_name(swapped):
    plan = swapped.read().filter("x = 5005")._jdf.queryExecution().executedPlan().toString()
    # old files hold the column once called y under its physical name "y"
    assert "PushedFilters: [IsNotNull(y), EqualTo(y,5005)]" in plan


def test_time_travel_uses_the_commit_schema(swapped):
    first_write = swapped.history()[1]
    df = swapped.read(as_of=first_write.instant)
    assert df.columns == ["id", "x", "y", "z", "w"]
    assert _rows(df.filter("id = 5")) == [(5, 1005, 5005, "z5", 5)]
    latest = swapped.read(as_of=first_write.instant, schema="latest")
    assert _rows(latest.filter("id = 5")) == [(5, 1005, 5005, 5, "dflt")]
    assert latest.count() == 2000


def test_as_of_a_datetime_and_unknown_commits(swapped):
    history = swapped.history()
    # A date-time names the last commit *completed* at or before it.
    done = parse_instant(history[1].completion_time)
    assert swapped.commit(done).instant == history[1].instant
    assert swapped.commit(done.isoformat()).instant == history[1].instant
    # A millisecond before it completed, it was not yet a commit: the one before it is named
    # (its instant can be that millisecond or later: instants stay unique by counting on).
    before = done - timedelta(milliseconds=1)
    assert parse_instant(history[0].completion_time) <= before
    assert swapped.commit(before).instant == history[0].instant
    with pytest.raises(CommitNotFoundError) as err:
        swapped.read(as_of="20000101000000000")
    assert "nearest" in str(err.value)
    with pytest.raises(CommitNotFoundError):
        swapped.read(as_of="1999-01-01")


def test_column_pruning_and_columns(swapped):
    df = swapped.read(columns=["x", "z"])
    assert df.columns == ["x", "z"] and df.count() == 4000


def test_incremental_read_across_renames_and_drops(swapped):
    history = swapped.history()
    inc = swapped.read_incremental(history[1].instant)
    assert inc.count() == 2000 and sorted(r["id"] for r in inc.collect())[0] == 2000
    assert inc.columns == ["id", "y", "x", "w", "z"]
    all_rows = swapped.read_incremental(history[0].instant)
    assert all_rows.count() == 4000
    upto = swapped.read_incremental(history[0].instant, history[1].instant)
    assert upto.count() == 2000 and upto.columns == ["id", "x", "y", "z", "w"]


def test_history_schemas_diff_and_column_history(swapped):
    ops = [c.operation for c in swapped.history()]
    assert ops == ["create", "insert", "alter", "alter", "alter", "insert"]
    assert len(swapped.schemas()) == 4
    d = swapped.diff(swapped.history()[1].instant, "latest")
    assert sorted((c.kind, c.field_id) for c in d.changes) == [
        ("added", 6), ("dropped", 4), ("renamed", 2), ("renamed", 3), ("retyped", 5)]
    life = swapped.column_history("x")
    assert life.field_id == 3
    assert [(v.change, v.path) for v in life] == [("added", "y"), ("renamed", "x")]


def test_nested_evolution_in_structs_arrays_and_maps(spark, warehouse):
    t = evonb.create_table(
        warehouse / "n",
        "id int, loc struct<lat:double,lon:double>, pts array<struct<x:int,y:int>>, "
        "m map<string,struct<a:int,b:string>>")
    t.write(spark.sql("select 1 id, named_struct('lat', 1.0d, 'lon', 2.0d) loc, "
                      "array(named_struct('x', 1, 'y', 2)) pts, "
                      "map('k', named_struct('a', 3, 'b', 'bb')) m"))
    t.alter("ALTER TABLE n RENAME COLUMN loc.lat TO latitude;"
            "ALTER TABLE n ADD COLUMN loc.alt double AFTER latitude;"
            "ALTER TABLE n RENAME COLUMN pts.element.x TO px;"
            "ALTER TABLE n ALTER COLUMN pts.element.y TYPE bigint;"
            "ALTER TABLE n DROP COLUMN m.value.b;"
            "ALTER TABLE n ADD COLUMN m.value.c string")
    t.write(spark.sql("select 2 id, named_struct('latitude', 5.0d, 'alt', 9.0d, 'lon', 6.0d) loc,"
                      " array(named_struct('px', 7, 'y', 8L)) pts, "
                      "map('q', named_struct('a', 4, 'c', 'cc')) m"))
    assert str(t.schema.struct) == (
        "struct<id:int,loc:struct<latitude:double,alt:double,lon:double>,"
        "pts:array<struct<px:int,y:bigint>>,m:map<string,struct<a:int,c:string>>>")
    rows = [r.asDict(recursive=True) for r in t.read().orderBy("id").collect()]
    assert rows == [
        {"id": 1, "loc": {"latitude": 1.0, "alt": None, "lon": 2.0},
         "pts": [{"px": 1, "y": 2}], "m": {"k": {"a": 3, "c": None}}},
        {"id": 2, "loc": {"latitude": 5.0, "alt": 9.0, "lon": 6.0},
         "pts": [{"px": 7, "y": 8}], "m": {"q": {"a": 4, "c": "cc"}}},
    ]
    assert t.read().filter("loc.latitude = 1.0").count() == 1


def test_type_change_that_spark_cannot_widen_is_cast(spark, warehouse):
    t = evonb.create_table(warehouse / "c", "id int, v int, d date, s string",
                           properties=SMALL_ROW_GROUPS)
    t.write(spark.sql("select 1 id, 10 v, date'2020-01-02' d, '12.50' s"))
    t.alter("ALTER TABLE c ALTER COLUMN v TYPE string; ALTER TABLE c ALTER COLUMN d TYPE string;"
            "ALTER TABLE c ALTER COLUMN s TYPE decimal(10,2)")
    t.write(spark.sql("select 2 id, 'twenty' v, '2021-03-04' d, 3.25bd s"))
    assert _rows(t.read()) == [(1, "10", "2020-01-02", pytest.approx(12.5)),
                               (2, "twenty", "2021-03-04", pytest.approx(3.25))]
    assert _rows(t.read().filter("v = '10'").select("id")) == [(1,)]
    layout_v = t.version(t.schema.version_id)[1]
    assert layout_v.name(2) != "v"  # a new physical generation for the retyped column


@pytest.mark.parametrize("condition", [None, "x = 5005", "z = 'dflt'", "w > 3990", "y < 1003"])
def test_one_scan_and_per_version_union_agree(swapped, condition):
    from evonb.spark.reader import read_files

    snap = swapped.snapshot()
    frames = [read_files(swapped.spark, swapped.root, snap.files, swapped.schema,
                         swapped.version, strategy=s) for s in ("merged", "union")]
    if condition:
        frames = [f.filter(condition) for f in frames]
    merged, union = (_rows(f) for f in frames)
    assert merged == union and len(merged) > 0


def test_the_default_read_is_one_scan(swapped):
    plan = swapped.read()._jdf.queryExecution().executedPlan().toString()
    assert plan.count("FileScan parquet") == 1 and "Union" not in plan


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_commit_read_in_a_later_schema_shows_its_values_as_the_commit_did(
        spark, warehouse, table_type):
    """As of a commit, in a later schema: each value as that commit shows it, then cast to the
    later type, by both readers. ``a`` went int -> double -> bigint (a rewrite) -> string; an
    ``int`` written before ``a`` became ``double`` reads ``"-1.0"`` as of a commit where it
    was ``double``, whether or not a write in between stored its file again. Found by the
    model test: the JVM-free reader read ``"-1"`` where Spark read ``"-1.0"``, and Spark too
    read ``"-1"`` as of a commit whose files were all written while ``a`` was ``int``."""
    t = evonb.create_table(warehouse / table_type / "t", "id int, ts int, a int",
                           primary_key="id", precombine="ts", table_type=table_type)
    t.write(spark.sql("select 1 id, 0 ts, -1 a"))
    ints = t.write(spark.sql("select 2 id, 0 ts, -2 a"), mode="insert").instant
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE double")
    widened = t.timeline.completed()[-1].instant  # only files written while a was int
    doubles = t.write(spark.sql("select 2 id, 0 ts, cast(-2 as double) a"),
                      mode="upsert").instant  # id 2 stored again as a double
    t.rewrite("ALTER TABLE t ALTER COLUMN a TYPE bigint", on_cast_error="null")
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE string")
    expected = {None: [(1, 0, "-1"), (2, 0, "-2")], ints: [(1, 0, "-1"), (2, 0, "-2")],
                widened: [(1, 0, "-1.0"), (2, 0, "-2.0")],
                doubles: [(1, 0, "-1.0"), (2, 0, "-2.0")]}
    for instant, rows in expected.items():
        spark_rows = _rows(t.read(as_of=instant, schema="latest"))
        arrow = t.to_arrow(as_of=instant, schema="latest")
        arrow_rows = sorted(tuple(r.values()) for r in arrow.to_pylist())
        assert (spark_rows, arrow_rows) == (rows, rows), instant
    assert _rows(t.read(as_of=doubles)) == [(1, 0, -1.0), (2, 0, -2.0)]  # its own schema
