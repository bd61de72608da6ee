"""Spark writes into tables in a bucket or a container, with no Hadoop connector: evonb's
Python workers read and write the data files (evonb.spark.object_writer,
evonb.arrow.spark_source). The same story of inserts, upserts, deletes and schema changes,
played on local disk and in a bucket, reads the same at every commit, through Spark and
through the Arrow reader; merge-on-read upserts and deletes write their log blocks into the
bucket; a write whose job fails leaves no file behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

import evonb
from bench.object_storage import upload
from evonb.spark.mor import position_drops
from evonb.table.check import check_table
from evonb.table.fileio import file_io
from evonb.table.fsutil import data_tree
from tests.objectstore.conftest import abfss, keys
from tests.objectstore.test_spark_read import evolved_mor_table
from tests.spark.partition_limits import holds_exactly, refused_in_each_mode, write_fitting

pytestmark = pytest.mark.spark

SCHEMA = "id bigint not null, day date, name string, score double, tags array<string>"


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _story(spark: Any, where: str) -> Any:
    """Writes and schema changes of every kind a Spark write runs on object storage."""
    t = evonb.create_table(where, SCHEMA, primary_key="id", partition_by="day", properties={
        "evonb.write.parquet.block.row.count.limit": "40",
        # upserts find the files holding their keys first (a key scan with file names)
        "evonb.write.direct_merge.bytes": "0"})
    t.write(spark.sql(
        "select id, date_add(date'2024-01-30', cast(id % 3 as int)) day, "
        "concat('n', id) name, id / 4 score, array('a', cast(id as string)) tags "
        "from range(300)"))
    t.write(spark.sql("select 1000L id, cast(null as date) day, 'no day' name, "
                      "cast(null as double) score, cast(null as array<string>) tags"))
    # keys in every partition, one moved to another day, and new keys
    t.write(spark.sql("select id * 7 id, date'2024-01-30' day, 'upd' name, -1d score, "
                      "array('u') tags from range(45)"), mode="upsert")
    t.alter("ALTER TABLE t RENAME COLUMN name TO label")
    t.alter("ALTER TABLE t ADD COLUMN region string DEFAULT 'eu'")
    t.alter("ALTER TABLE t DROP COLUMN score")
    t.write(spark.sql("select id * 11 id from range(5)"), mode="delete")
    # a column the table has not got: the write evolves the schema by name
    t.write(spark.sql("select 2000L + id id, date'2024-02-01' day, 'late' label, "
                      "array('z') tags, 'us' region, id % 2 = 0 flag from range(10)"))
    t.write(spark.sql("select 7L id, 'again' label, true flag"), mode="upsert")
    return t


def test_a_story_of_writes_in_a_bucket_reads_as_on_local_disk(
        spark, tmp_path: Path, bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    local = _story(spark, str(tmp_path / "t"))
    remote = _story(spark, f"s3://{bucket}/t")
    assert [c.operation for c in remote.history()] == [c.operation for c in local.history()]
    for lc, rc in zip(local.history()[1:], remote.history()[1:], strict=True):
        expected = _rows(local.read(as_of=lc.instant))
        assert _rows(remote.read(as_of=rc.instant)) == expected, rc.instant
        assert remote.to_arrow(as_of=rc.instant).num_rows == len(expected)
    latest = _rows(remote.read())
    # 300 + 1 + 2 new keys of the upsert (301, 308) - 5 deleted + 10 new
    assert len(latest) == 308 and latest == _rows(local.read())
    assert remote.read().columns == ["id", "day", "label", "tags", "region", "flag"]
    # 45 upserted, 0 deleted since, 7 upserted again
    assert remote.read().filter("label = 'upd'").count() == 43
    assert remote.read().filter("id % 11 = 0 and id < 45").count() == 0
    # the rows written before the default column get the default, the new rows their value
    assert sorted(remote.to_arrow().to_pydict()["region"]) == ["eu"] * 298 + ["us"] * 10

    files = remote.snapshot().files
    folders = {f.partition for f in files}
    assert folders == {"day=2024-01-30", "day=2024-01-31", "day=2024-02-01",
                       "day=__HIVE_DEFAULT_PARTITION__"}
    assert all(f.key_stats is not None for f in files)  # upserts can prune by key range
    in_bucket = set(keys(s3_client, bucket, "t/"))
    assert {f"t/{f.path}" for f in files} <= in_bucket
    first = next(f for f in files if f.rows > 40)
    with file_io().open_data(remote.root / first.path) as stream:
        footer = pq.ParquetFile(stream).metadata
    assert footer.num_rows == first.rows and footer.num_row_groups > 1  # the table's limit
    assert all(footer.row_group(i).num_rows <= 40 for i in range(footer.num_row_groups))
    assert check_table(f"s3://{bucket}/t").ok

    remote.write(spark.sql("select 1L id, date'2024-01-30' day, 'only' label"),
                 mode="overwrite")
    # the missing column gets its write default
    assert _rows(remote.read().select("id", "label", "region")) == [(1, "only", "eu")]
    assert len(remote.snapshot().files) == 1


def test_every_row_reaches_its_partition_folder(spark, bucket: str) -> None:  # type: ignore[no-untyped-def]
    t = evonb.create_table(f"s3://{bucket}/p", "id bigint, x double, s string",
                           partition_by=["x", "s"])
    t.write(spark.sql("select * from values (1L, 1.5d, 'a/b'), (2L, double('NaN'), 'a'), "
                      "(3L, null, null), (4L, 1.5d, 'a/b'), (5L, double('NaN'), 'a') "
                      "as v(id, x, s)"))
    rows = sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert [r["id"] for r in rows] == [1, 2, 3, 4, 5]
    assert [r["s"] for r in rows] == ["a/b", "a", None, "a/b", "a"]
    # spelled as Spark's writer spells them on local disk (NaN, not Python's nan)
    assert {f.partition for f in t.snapshot().files} == {
        "x=1.5/s=a%2Fb", "x=NaN/s=a", "x=__HIVE_DEFAULT_PARTITION__/s=__HIVE_DEFAULT_PARTITION__"}


def test_merge_on_read_upserts_and_deletes_write_log_blocks_in_the_bucket(
        spark, tmp_path: Path, bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    local = evolved_mor_table(spark, tmp_path / "t")  # nested rename, drop, re-add, blocks
    upload(tmp_path / "t", bucket, "mor", client=s3_client)
    where = f"s3://{bucket}/mor"
    remote = evonb.open_table(where)
    for t in (local, remote):
        t.write(spark.sql("select id, 4L ts, named_struct('xx', 40, 'y', 'd') s, 'four' name "
                          "from range(0, 30, 4)"), mode="upsert")  # 6 stored, 2 new keys
        t.write(spark.sql("select id from range(1, 30, 5)"), mode="delete")
        # 2 loses on its older precombine value; 7 wins, and follows the deleted 1 and 6 in
        # its base file: its block must name its place among the stored rows, deleted or not
        t.write(spark.sql("select 2L id, 1L ts, named_struct('xx', 0, 'y', 'old') s, "
                          "'loses' name union all select 7L, 9L, named_struct('xx', 7, "
                          "'y', 'new'), 'wins'"), mode="upsert")
    blocks = [f for f in remote.snapshot().logs if f.instant > local.history()[-4].instant]
    assert blocks and {f"mor/{f.path}" for f in blocks} <= set(keys(s3_client, bucket, "mor/"))
    for lc, rc in zip(local.history(), remote.history(), strict=True):
        assert _rows(remote.read(as_of=rc.instant)) == _rows(local.read(as_of=lc.instant))
    latest = _rows(remote.read())
    # 24 and 28 are new keys; 5 of the 6 deleted keys were stored (26 never was)
    assert len(latest) == 24 + 2 - 5 and latest == _rows(local.read())
    assert remote.to_arrow().num_rows == len(latest)
    assert [r for r in latest if r[0] in (2, 7)] == [r for r in _rows(local.read())
                                                      if r[0] in (2, 7)]
    assert [r[-1] for r in latest if r[0] == 7] == ["wins"]
    assert check_table(where).ok


def test_a_write_whose_job_fails_leaves_nothing(
        spark, bucket: str) -> None:  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    where = f"s3://{bucket}/t"
    t = evonb.create_table(where, "id bigint, v string",  # one file per task
                           properties={"evonb.write.target.file.bytes": "0"})
    t.write(spark.range(3).select("id", F.lit("ok").alias("v")))
    kept = {rel for rel, _ in data_tree(t.root)}
    # rows that fail in the middle of the job, after other tasks have written files
    bad = spark.range(0, 400, 1, 4).select(
        "id", F.when(F.col("id") == 350, F.raise_error(F.lit("bad row"))).otherwise(
            F.lit("x")).alias("v"))
    with pytest.raises(Exception, match="bad row"):
        t.write(bad)
    assert {rel for rel, _ in data_tree(t.root)} == kept
    assert len(t.history()) == 2 and t.read().count() == 3
    assert check_table(where).ok


def test_a_spark_write_into_a_container(spark, container: Any) -> None:  # type: ignore[no-untyped-def]
    name = container.container_name
    t = evonb.create_table(abfss(name, "t"), "id bigint, v string")
    t.write(spark.sql("select id, concat('v', id) v from range(50)"))
    t.alter("ALTER TABLE t RENAME COLUMN v TO label")
    t.write(spark.sql("select 50L id, 'last' label"))
    again = evonb.open_table(f"az://{name}/t")
    assert again.read().count() == 51
    assert again.to_arrow(columns=["label"]).to_pydict()["label"].count("last") == 1
    assert _rows(again.read(as_of=again.history()[1].instant)) == sorted(
        ((i, f"v{i}") for i in range(50)), key=repr)
    assert check_table(abfss(name, "t")).ok


def test_merge_on_read_blocks_written_in_the_bucket_name_their_base_rows_by_position(
        spark, tmp_path: Path, bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    """Blocks of one schema version are merged by the base positions their headers list: a
    copy of the bucket on local disk, read by Spark's reader (which merges by those
    positions), reads as the bucket does (the Arrow reader, by key)."""
    where = f"s3://{bucket}/pos"
    t = evonb.create_table(where, "id bigint not null, ts bigint, v string", primary_key="id",
                           precombine="ts", table_type="mor")
    t.write(spark.sql("select id, 1L ts, concat('v', id) v from range(20)"))
    t.write(spark.sql("select id from range(1, 20, 5)"), mode="delete")  # 1, 6, 11, 16
    # 7 follows the deleted 1 and 6 in its base file: its block must name its place among
    # the stored rows, deleted or not; 2 loses on its older precombine value; 30 is new
    t.write(spark.sql("select 7L id, 2L ts, 'wins' v union all select 2L, 0L, 'loses' "
                      "union all select 30L, 1L, 'new'"), mode="upsert")
    copy = tmp_path / "copy"
    for key in keys(s3_client, bucket, "pos/"):
        dest = copy / key.removeprefix("pos/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(s3_client.get_object(Bucket=bucket, Key=key)["Body"].read())
    downloaded = evonb.open_table(str(copy))
    assert position_drops(downloaded, downloaded.snapshot())  # merged by position
    expected = sorted([(i, 1, f"v{i}") for i in range(20) if i % 5 != 1 and i != 7]
                      + [(7, 2, "wins"), (30, 1, "new")])
    assert sorted(tuple(r) for r in downloaded.read().collect()) == expected
    assert sorted(tuple(r) for r in t.read().collect()) == expected
    assert check_table(where).ok


def test_a_task_writes_its_row_groups_to_local_disk_then_stores_the_file(
        bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    """A task's file grows on local disk a row group at a time (not in memory), is stored
    whole when finished, and leaves no local copy; a discarded file stores nothing."""
    import os

    import pyarrow as pa

    from evonb.spark.object_writer import _FileWriter

    root = Path(f"s3://{bucket}/w")
    batch = pa.record_batch({"id": pa.array(range(100), pa.int64())})
    writer = _FileWriter(root, "a.parquet", batch.schema, row_group_rows=100,
                         row_group_bytes=1 << 30)
    sizes = []
    for _ in range(3):
        writer.add(batch)  # a full row group each: written out
        sizes.append(os.path.getsize(writer.local))
    assert sizes[0] > 0 and sizes[0] < sizes[1] < sizes[2]
    assert keys(s3_client, bucket) == []  # nothing stored before the file is finished
    footer, size = writer.close()
    assert footer.num_rows == 300 and footer.num_row_groups == 3
    assert not os.path.exists(writer.local)
    with file_io().open_data(root / "a.parquet") as stream:
        stored = pq.read_table(stream)
    assert stored.column("id").to_pylist() == list(range(100)) * 3
    assert file_io().size(root / "a.parquet") == size
    dropped = _FileWriter(root, "b.parquet", batch.schema, row_group_rows=10,
                          row_group_bytes=1 << 30)
    dropped.add(batch)
    dropped.discard()
    assert not os.path.exists(dropped.local)
    assert not dropped.writer.is_open  # closed before its sink: nothing left for collection
    assert keys(s3_client, bucket) == ["w/a.parquet"]


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_partition_folder_too_long_for_an_object_key_is_refused(
        spark, bucket: str, s3_client, table_type: str) -> None:  # type: ignore[no-untyped-def]
    """An object key takes at most 1,024 bytes (S3, Google Cloud Storage, Azure): the table's
    key, ``/``, the partition folders, ``/`` and 128 bytes kept for a file's name. Under a
    table key of 200 bytes a folder ``p=<value>`` may take 694 bytes: values that fit exactly
    are written and read back; one byte more is a ``DataValidationError`` naming the column,
    whether Spark's tasks or the driver write the files, and the table and the bucket are
    unchanged (the loopback server takes such keys; a real store refuses them mid-write)."""
    table_key = "k" * 200
    t = evonb.create_table(f"s3://{bucket}/{table_key}", "id bigint not null, p string, v string",
                           primary_key="id", partition_by="p", table_type=table_type)
    room = 1024 - 200 - 1 - 1 - 128 - len("p=")  # 692 bytes
    fits = ["a" * room, "/" * 230 + "aa", "é" * 346]
    too_long = ["a" * (room + 1), "/" * 230 + "aaa", "é" * 346 + "a"]
    write_fitting(spark, t, fits)
    stored = keys(s3_client, bucket)
    assert max(len(k.encode()) for k in stored) <= 1024
    refused_in_each_mode(spark, t, too_long, r"Partition column 'p': a folder of 695 bytes "
                                             r".* a data file's key of 1025 bytes .* more than "
                                             r"the 1024")
    assert [k for k in keys(s3_client, bucket) if "/.evonb/" not in k] == [
        k for k in stored if "/.evonb/" not in k]
    holds_exactly(t, fits)
    t.alter("ALTER TABLE t RENAME COLUMN p TO part")  # the error names it so
    with pytest.raises(evonb.errors.DataValidationError, match=r"Partition column 'part': "):
        t.write(spark.createDataFrame([(20, too_long[0], "x")], "id bigint, part string, v string"))


def test_partition_column_names_too_long_for_an_object_key_are_refused_at_create(
        bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    """Under a table key of 700 bytes, two partition columns whose null folders take 193 bytes
    leave a data file's key exactly 1,024 bytes; one byte more is refused by ``create_table``,
    which stores nothing."""
    key = "k" * 700
    a, b = "a" * 70, "b" * 69  # 70+1+26 + 1 + 69+1+26 = 194 with the "/" between
    evonb.create_table(f"s3://{bucket}/{key}", f"id bigint, {a} string, {b} string",
                       partition_by=[a, b])
    with pytest.raises(evonb.errors.InvalidArgumentError,
                       match=r"Partition columns '.*', '.*': .* key of 1025 bytes .* even for "
                             r"null values"):
        evonb.create_table(f"s3://{bucket}/{key[1:]}x", f"id bigint, {a} string, {b}b string",
                           partition_by=[a, b + "b"])
    assert not [k for k in keys(s3_client, bucket) if k.startswith(f"{key[1:]}x/")]


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_refused_inserts_leave_the_bucket_as_it_was(
        spark, bucket: str, s3_client, table_type: str) -> None:  # type: ignore[no-untyped-def]
    """In a bucket too, an insert's checks see the rows it writes: evonb's Python workers
    write the files while Spark counts the nulls of NOT NULL and key columns, and the keys
    are read back from the objects written, before the commit. A refused insert, even one
    that would widen a column and add another, leaves no object and no commit behind."""
    where = f"s3://{bucket}/t"
    t = evonb.create_table(where, "id bigint not null, v float not null, day string",
                           primary_key="id", partition_by="day", table_type=table_type)
    t.write(spark.createDataFrame([(1, 1.5, "mon")], "id bigint, v float, day string"))
    stored = [k for k in keys(s3_client, bucket) if "/.evonb/" not in k]
    history = [c.instant for c in t.history()]
    incoming = "id bigint, v double, day string, extra string"  # widens v, adds extra
    for rows, message in [
        ([(2, 2.5, "mon", "a"), (3, 3.5, "tue", "b"), (2, 4.5, "wed", "c")],
         r"^1 record keys \(id\) occur more than once in the rows inserted \(2 rows\), e\.g\. 2,"),
        ([(2, 2.5, "mon", "a"), (None, 3.5, "tue", "b")],
         r"^Column 'id' is NOT NULL or a record key, but 1 incoming rows hold null"),
        ([(2, None, "mon", "a")], r"^Column 'v' is NOT NULL or a record key, but 1 incoming"),
    ]:
        with pytest.raises(evonb.errors.DataValidationError, match=message):
            t.write(spark.createDataFrame(rows, incoming))
        assert [k for k in keys(s3_client, bucket) if "/.evonb/" not in k] == stored, message
        fresh = evonb.open_table(where)
        assert [c.instant for c in fresh.history()] == history
        assert str(fresh.schema.find("v").type) == "float"
    t.write(spark.createDataFrame([(2, 2.5, "tue", "a")], incoming))
    assert _rows(t.read()) == [(1, 1.5, "mon", None), (2, 2.5, "tue", "a")]
