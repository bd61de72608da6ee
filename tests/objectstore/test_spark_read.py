"""Spark reads of tables in a bucket or a container, with no Hadoop connector: the tasks read
with the JVM-free reader (evonb.arrow.spark_source). A merge-on-read table with nested
evolution, built locally, reads the same from the bucket as from local disk, at every commit;
the tasks take the object-store settings from the read, not from their own environment."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import pytest

import evonb
from bench.object_storage import upload
from evonb.arrow.spark_source import ObjectStoreSource, snapshot_read_options
from evonb.errors import EvoError
from tests.objectstore.conftest import abfss
from tests.objectstore.test_convert import PARTS, parquet_bytes

pytestmark = pytest.mark.spark


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def source_read(t: Any, filters: list[Any], column: str = "id", **read: Any
                ) -> tuple[int, list[Any]]:
    """The bucket source of ``t`` told ``filters`` (all returned to Spark): how many files it
    plans to read, and the values of ``column`` its tasks give."""
    options = {**snapshot_read_options(t, None, None, None, False, **read), "pushdown": True}
    source = ObjectStoreSource({"read": json.dumps(options)})
    reader = source.reader(source.schema())
    assert list(reader.pushFilters(filters)) == filters
    parts = reader.partitions()
    return len(parts), sorted(r[column] for p in parts for b in reader.read(p)
                              for r in b.to_pylist())


def evolved_mor_table(spark: Any, root: Path) -> Any:
    t = evonb.create_table(str(root), "id bigint not null, ts bigint, name string, "
                           "s struct<x:int,y:string>", primary_key="id", precombine="ts",
                           table_type="mor")
    t.write(spark.sql("select id, 1L ts, concat('n', id) name, "
                      "named_struct('x', cast(id as int), 'y', 'a') s from range(20)"))
    t.alter("ALTER TABLE t RENAME COLUMN s.x TO xx")
    t.write(spark.sql("select id, 2L ts, 'upd' name, named_struct('xx', -1, 'y', 'b') s "
                      "from range(0, 20, 3)"), mode="upsert")  # log blocks
    t.alter("ALTER TABLE t DROP COLUMN name")
    t.alter("ALTER TABLE t ADD COLUMN name string")  # a new column: never the old values
    t.write(spark.sql("select id, 3L ts, named_struct('xx', 7, 'y', 'c') s, 'new' name "
                      "from range(18, 24)"), mode="upsert")
    return t


def test_a_merge_on_read_table_in_a_bucket_reads_as_on_local_disk(
        spark, tmp_path: Path, s3_client, bucket: str) -> None:  # type: ignore[no-untyped-def]
    local = evolved_mor_table(spark, tmp_path / "t")
    assert local.snapshot().logs  # log blocks to merge
    upload(tmp_path / "t", bucket, "t", client=s3_client)
    remote = evonb.open_table(f"s3://{bucket}/t")
    for commit in local.history():  # each in its own schema
        expected = local.read(as_of=commit.instant)
        got = remote.read(as_of=commit.instant)
        assert got.schema == expected.schema, commit.instant
        assert _rows(got) == _rows(expected), commit.instant
    first = local.history()[1].instant  # the first write, in the latest schema
    assert _rows(remote.read(as_of=first, schema="latest")) == _rows(
        local.read(as_of=first, schema="latest"))
    latest = _rows(remote.read())
    assert len(latest) == 24 and latest == _rows(local.read())
    assert _rows(remote.read(columns=["id", "s.y"], meta_columns=True)) == _rows(
        local.read(columns=["id", "s.y"], meta_columns=True))
    assert remote.read().filter("s.xx = -1").count() == 6  # Spark's own operators on top
    # the base files only, without their log blocks, as on local disk
    optimized = _rows(remote.read(query="read_optimized", meta_columns=True))
    assert optimized == _rows(local.read(query="read_optimized", meta_columns=True))
    # the 20 first rows as first written, and the 4 new keys of the last upsert (base files)
    assert len(optimized) == 24 and optimized != _rows(remote.read(meta_columns=True))
    assert {r[-1] for r in optimized if r[0] < 20} == {first}
    assert _rows(remote.read(as_of=first, query="read_optimized")) == _rows(
        local.read(as_of=first, query="read_optimized"))
    with pytest.raises(EvoError, match="ghost"):  # evonb's errors, on the driver
        remote.read(columns=["ghost"])



FILTERS = ["id >= 18", "id = 3", "id in (1, 2, 21)", "s.xx = -1", "s.y = 'c'",
           "name = 'new'", "name is null", "name is not null and id < 22", "ts > 1 and id <= 9",
           "id > 2.5", "not (id = 4)", "id = 3 or name = 'new'"]


def test_filters_spark_pushes_to_a_bucket_read_give_spark_s_rows(
        spark, tmp_path: Path, s3_client, bucket: str) -> None:  # type: ignore[no-untyped-def]
    """Spark's filters reach the JVM-free reader (pyarrow skips row groups and rows), after
    the merge of a file group with its blocks: the rows are those of the same table read
    from local disk by Spark's own reader."""
    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"  # evonb's
    local = evolved_mor_table(spark, tmp_path / "t")
    upload(tmp_path / "t", bucket, "t", client=s3_client)
    remote = evonb.open_table(f"s3://{bucket}/t")
    for where in FILTERS:
        assert _rows(remote.read().filter(where)) == _rows(local.read().filter(where)), where
    first = local.history()[1].instant  # an older schema: the struct member still x
    assert _rows(remote.read(as_of=first).filter("s.x >= 10")) == _rows(
        local.read(as_of=first).filter("s.x >= 10"))
    assert remote.read().filter("name = 'new'").count() == 6
    # a session that keeps Python sources from taking filters: Spark applies them all
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "false")
    try:
        assert _rows(remote.read().filter(FILTERS[3])) == _rows(local.read().filter(FILTERS[3]))
    finally:
        spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")


def test_the_bucket_source_applies_the_filters_it_can_apply_exactly(
        spark, bucket: str) -> None:  # type: ignore[no-untyped-def]
    import datetime
    import json

    from pyspark.sql.datasource import (
        EqualTo,
        GreaterThan,
        GreaterThanOrEqual,
        In,
        IsNotNull,
        LessThan,
        StringStartsWith,
    )

    from evonb.arrow.spark_source import ObjectStoreSource, snapshot_read_options

    t = evonb.create_table(f"s3://{bucket}/p", "id bigint, d date, x double, v string")
    t.write(spark.sql("select id, date_add(date'2026-01-01', cast(id as int)) d, id * 0.5 x, "
                      "concat('v', id) v from range(100)").coalesce(1))
    options = {**snapshot_read_options(t, None, None, None, False), "pushdown": True}
    source = ObjectStoreSource({"read": json.dumps(options)})
    schema = source.schema()

    def read(filters: list[Any]) -> tuple[list[Any], dict[str, Any], list[dict[str, Any]]]:
        reader = source.reader(schema)
        left = list(reader.pushFilters(filters))
        rows = [r for p in reader.partitions() for b in reader.read(p)
                for r in b.to_pylist()]
        return left, reader.options, rows

    everything = read([])[2]
    assert len(everything) == 100
    wanted = [GreaterThanOrEqual(("id",), 90), IsNotNull(("v",)),
              LessThan(("d",), datetime.date(2026, 4, 9)), In(("v",), ("v91", "v95", "v3"))]
    kept = [GreaterThan(("x",), 10.0), StringStartsWith(("v",), "v9"),
            EqualTo(("id",), 3.0)]  # floating point and string functions stay with Spark
    left, options, rows = read(wanted + kept)
    assert left == wanted + kept  # Spark still checks every row
    assert len(options["filters"]) == len(wanted)
    # ids 90 to 98 (the date: 2026-01-01 + id < 2026-04-09), then v91 and v95 among them
    assert sorted(r["id"] for r in rows) == [91, 95]
    assert t.read().filter("id >= 90 and v in ('v91', 'v95', 'v3') and "
                           "d < date'2026-04-09'").count() == 2
    assert len(read(wanted)[2]) == 2  # no key: every file is still opened


def test_the_bucket_source_skips_files_by_their_key_statistics(
        spark, bucket: str) -> None:  # type: ignore[no-untyped-def]
    """Filters on the record key leave out the files whose key range rules them out, except
    a file with log blocks (a block can hold any key)."""
    from pyspark.sql.datasource import GreaterThan, GreaterThanOrEqual, In, LessThanOrEqual

    t = evonb.create_table(f"s3://{bucket}/k", "id bigint not null, v string",
                           primary_key="id", table_type="mor")
    for start in range(0, 100, 25):  # a file each
        t.write(spark.sql(f"select id, concat('v', id) v from range({start}, {start + 25})"))
    files = t.snapshot().files
    assert len(files) == 4 and all(f.key_stats for f in files)

    def partitions(filters: list[Any], **read: Any) -> tuple[int, list[int]]:
        return source_read(t, filters, **read)

    assert partitions([GreaterThanOrEqual(("id",), 90)]) == (4, list(range(90, 100)))  # open
    assert partitions([GreaterThan(("id",), 80), LessThanOrEqual(("id",), 95)]) == (
        1, list(range(81, 96)))
    assert partitions([In(("id",), (3, 97))]) == (2, [3, 97])
    t.write(spark.sql("select 5L id, 'new' v"), mode="upsert")  # a block in the first group
    assert len(t.snapshot().logs) == 1
    assert partitions([In(("id",), (5, 97))]) == (2, [5, 97])
    # the file with the block is kept, though its keys run from 0 to 24
    assert partitions([In(("id",), (60, 97))]) == (3, [60, 97])
    assert partitions([In(("id",), (60, 97))], read_optimized=True) == (2, [60, 97])
    assert t.read().filter("id in (5, 97)").orderBy("id").collect()[0]["v"] == "new"


def test_timestamp_filters_reach_the_bucket_source(
        spark, tmp_path: Path, s3_client, bucket: str) -> None:  # type: ignore[no-untyped-def]
    """Filters on ``timestamp`` (here the record key) and ``timestamp_ntz`` columns are
    pushed: Spark hands the source each instant in UTC, the key's statistics leave out files,
    and the rows are those Spark reads from local disk, in a session time zone that is not
    UTC (a wall-clock time without zone compares as written, never shifted)."""
    from zoneinfo import ZoneInfo

    from pyspark.sql.datasource import EqualTo, GreaterThan, In, LessThan, LessThanOrEqual

    local = evonb.create_table(str(tmp_path / "t"), "id timestamp not null, at timestamp_ntz, "
                               "v int", primary_key="id")
    # evonb writes timestamps as INT64 microseconds, whose Parquet statistics give the files
    # key statistics (Spark's default INT96 has none)
    for start in range(0, 100, 25):  # a file each, 25 hours of keys
        local.write(spark.sql(
            f"select timestamp_seconds(1767225600 + id * 3600) id, if(id % 10 = 7, null, "
            f"timestamp_ntz'2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, cast(id as int), "
            f"0, 0)) at, "
            f"cast(id as int) v from range({start}, {start + 25})"))
    assert all(f.key_stats for f in local.snapshot().files)
    upload(tmp_path / "t", bucket, "t", client=s3_client)
    remote = evonb.open_table(f"s3://{bucket}/t")
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        for where in ["id >= timestamp'2026-01-04 10:00:00'",  # 18:00 UTC: hours 90 on
                      "id = timestamp'2026-01-01 00:00:00'",  # 08:00 UTC: hour 8
                      "id in (timestamp'2025-12-31 16:00:00', timestamp'2026-01-02 01:00:00')",
                      "at < timestamp_ntz'2026-01-01 05:00:00'",  # hours 0 to 4, as written
                      "at >= timestamp_ntz'2026-01-05 02:00:00' and id < "
                      "timestamp'2026-01-05 00:00:00'",
                      "at is null"]:
            got = _rows(remote.read().filter(where))
            assert got == _rows(local.read().filter(where)), where
            assert got, where  # not vacuous
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)

    def hour(h: int, tz: str = "UTC") -> datetime.datetime:
        return (datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
                + datetime.timedelta(hours=h)).astimezone(ZoneInfo(tz))

    def wall(h: int) -> datetime.datetime:
        return datetime.datetime(2026, 1, 1) + datetime.timedelta(hours=h)

    def read(filters: list[Any]) -> tuple[int, list[int]]:
        return source_read(remote, filters, column="v")

    assert read([GreaterThan(("id",), hour(89, "Asia/Kolkata"))]) == (
        4, list(range(90, 100)))  # a bound alone prunes nothing; pyarrow drops the rows
    assert read([GreaterThan(("id",), hour(80)), LessThanOrEqual(
        ("id",), hour(95, "America/Los_Angeles"))]) == (1, list(range(81, 96)))
    assert read([In(("id",), [hour(3), hour(97, "Europe/Paris")])]) == (2, [3, 97])
    assert read([EqualTo(("at",), wall(30))]) == (4, [30])
    assert read([LessThan(("at",), wall(2))]) == (4, [0, 1])


def test_the_bucket_source_skips_files_by_their_partition_folders(
        spark, tmp_path: Path, s3_client, bucket: str) -> None:  # type: ignore[no-untyped-def]
    """Filters on partition columns leave out the files whose folder rules them out: folders
    spelled by Spark's writer (uploaded, with null and '' in one folder and an escaped '/')
    and by evonb's object writer, after the partition column is renamed; every filter gives
    the rows Spark's own filter gives on local disk."""
    from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNotNull, IsNull

    local = evonb.create_table(str(tmp_path / "p"), "id bigint not null, day date, "
                               "city string", primary_key="id", partition_by=["day", "city"])
    local.write(spark.sql(
        "select id, date_add(date'2024-01-30', cast(id % 3 as int)) day, "
        "case id % 4 when 0 then 'paris' when 1 then 'a/b' when 2 then '' end city "
        "from range(24)"))
    upload(tmp_path / "p", bucket, "p", client=s3_client)
    t = evonb.open_table(f"s3://{bucket}/p")
    t.write(spark.sql("select 100L id, date'2024-02-05' day, 'oslo' city"))  # object writer
    t.alter("ALTER TABLE t RENAME COLUMN city TO town")
    local.write(spark.sql("select 100L id, date'2024-02-05' day, 'oslo' city"))
    local.alter("ALTER TABLE t RENAME COLUMN city TO town")
    files = t.snapshot().files
    assert len(files) == 10  # 3 days x 3 city folders (null and '' share one), and oslo

    def read(filters: list[Any]) -> tuple[int, list[int]]:
        return source_read(t, filters)

    def spark_ids(where: str) -> list[int]:
        return sorted(r.id for r in local.read().filter(where).collect())

    day = datetime.date(2024, 1, 31)
    cases = [
        ([EqualTo(("town",), "a/b")], "town = 'a/b'", 3),
        ([EqualTo(("town",), "")], "town = ''", 3),  # the null folder holds '' too
        ([IsNull(("town",))], "town is null", 3),
        ([IsNotNull(("town",))], "town is not null", 10),
        ([In(("town",), ("paris", "oslo"))], "town in ('paris', 'oslo')", 4),
        ([EqualTo(("day",), day), EqualTo(("town",), "paris")],
         "day = date'2024-01-31' and town = 'paris'", 1),
        ([GreaterThan(("day",), day)], "day > date'2024-01-31'", 4),
    ]
    for filters, where, kept in cases:
        assert read(filters) == (kept, spark_ids(where)), where
        got = sorted(r.id for r in t.read().filter(where).collect())
        assert got == spark_ids(where), where


def test_a_filter_on_a_selected_struct_member_is_not_a_filter_on_a_top_level_namesake(
        spark, bucket: str) -> None:  # type: ignore[no-untyped-def]
    """``columns=['s.y']`` reads the member as the column ``y``; a filter on it pushed to
    the source must filter the member, not the table's top-level ``y`` (it did: no rows)."""
    t = evonb.create_table(f"s3://{bucket}/t", "id bigint, y string, s struct<y:string,z:int>")
    t.write(spark.sql("select id, concat('top', id) y, named_struct('y', concat('in', id), "
                      "'z', cast(id as int)) s from range(5)"))
    df = t.read(columns=["id", "s.y"])
    assert df.columns == ["id", "y"]
    assert [tuple(r) for r in df.filter("y = 'in3'").collect()] == [(3, "in3")]
    assert df.filter("y = 'top3'").count() == 0
    assert [tuple(r) for r in t.read(columns=["id", "s.z"]).filter("z = 2").collect()] == [
        (2, 2)]


def test_a_converted_table_in_a_container_reads_through_spark(
        spark, container: Any) -> None:  # type: ignore[no-untyped-def]
    name = container.container_name
    for i, part in enumerate(PARTS):
        container.upload_blob(f"events/part-{i}.parquet", parquet_bytes(part))
    t = evonb.convert(abfss(name, "events"), primary_key="id")
    t.alter("ALTER TABLE t RENAME COLUMN name TO label")
    rows = sorted(tuple(r) for r in evonb.open_table(f"az://{name}/events").read().collect())
    assert rows == [(1, "a", 1.5), (2, "b", 2.5), (3, "c", None), (4, "d", 4.0),
                    (5, None, 5.25)]
    assert evonb.open_table(abfss(name, "events")).read().columns == ["id", "label", "score"]


def test_which_spark_filters_the_bucket_source_takes() -> None:
    import datetime

    from pyspark.sql.datasource import EqualTo, In, IsNotNull, IsNull, LessThan, StringContains
    from pyspark.sql.types import (
        DateType,
        DoubleType,
        IntegerType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    from evonb.arrow.spark_source import arrow_filter, pushed_filter

    schema = StructType([
        StructField("i", IntegerType()), StructField("f", DoubleType()),
        StructField("s", StringType()), StructField("c", StringType("UTF8_LCASE")),
        StructField("d", DateType()), StructField("t", TimestampType()),
        StructField("n", StructType([StructField("k", IntegerType())]))])
    day = datetime.date(2026, 1, 31)
    taken = [EqualTo(("i",), 3), LessThan(("d",), day), In(("s",), ("a", "b")),
             IsNotNull(("s",)), EqualTo(("n", "k"), 1)]
    left = [EqualTo(("f",), 1.5), EqualTo(("c",), "a"), EqualTo(("t",), datetime.datetime(
        2026, 1, 1)), StringContains(("s",), "a"), EqualTo(("i",), 1.5), EqualTo(("i",), True),
        In(("i",), (1, None)), EqualTo(("ghost",), 1), EqualTo(("n",), 1), IsNull(("f",))]
    assert all(pushed_filter(f, schema) for f in taken)
    assert [f for f in left if pushed_filter(f, schema)] == []
    expr = arrow_filter([pushed_filter(f, schema) for f in taken])
    import pyarrow as pa

    rows = pa.table({"i": pa.array([3, 3, 4], pa.int32()), "f": [None] * 3,
                     "s": ["a", "c", "a"], "d": [datetime.date(2026, 1, 1)] * 3,
                     "n": [{"k": 1}] * 3})
    assert rows.filter(expr).to_pylist() == [rows.to_pylist()[0]]


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_an_incremental_read_before_a_narrowing_rewrite_reads_as_on_local_disk(
        spark, tmp_path: Path, bucket: str, s3_client, table_type: str
        ) -> None:  # type: ignore[no-untyped-def]
    """An incremental read ends at a commit written before a rewrite narrowed a column: in
    the end commit's schema the values read as written. The bucket's tasks took the type
    history of the latest snapshot, through the narrowed type: 2.75 read null (the model test
    in a bucket, seed 650343028)."""
    local = evonb.create_table(str(tmp_path / "t"), "id bigint not null, ts bigint, x double",
                               primary_key="id", precombine="ts", table_type=table_type)
    local.write(spark.sql("select 1L id, 1L ts, 2.75d x"))
    local.write(spark.sql("select id, 2L ts, 1.5d x from values (1L), (2L) as r(id)"),
                mode="upsert")
    end = local.history()[-1].instant
    local.rewrite("ALTER TABLE t ALTER COLUMN x TYPE int", on_cast_error="null")
    local.write(spark.sql("select 3L id, 3L ts, 4 x"), mode="upsert")
    upload(tmp_path / "t", bucket, "t", client=s3_client)
    remote = evonb.open_table(f"s3://{bucket}/t")
    want = [(1, 2, 1.5), (2, 2, 1.5)]
    start = local.history()[1].instant  # the first write's: the upsert alone
    assert _rows(local.read_incremental(start, end)) == want
    assert _rows(remote.read_incremental(start, end)) == want
    first = [(1, 1, 2.75)]
    assert _rows(remote.read_incremental("00000000000000000", local.history()[1].instant)) \
        == first
    assert _rows(remote.read(as_of=end)) == want
    assert remote.read().schema.simpleString() == "struct<id:bigint,ts:bigint,x:int>"
