"""Small writes make few files: a write Spark estimates below the table's target file size
(``evonb.write.target.file.bytes``) is coalesced into fewer write tasks; estimates Spark cannot
make, or that may undercount, leave the write as Spark plans it."""

from __future__ import annotations

from pathlib import Path

import pytest

import evonb
from evonb.spark.writer import TARGET_FILE_PROPERTY, estimated_bytes, estimated_files
from tests.stored_config import with_stored_properties


def _rows(spark, n=4000, parts=8):
    return spark.range(0, n, 1, parts).selectExpr("id", "cast(id % 7 as int) as v",
                                                   "concat('s', id) as s")


def test_a_small_insert_makes_one_file(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint, v int, s string")
    t.write(_rows(spark))
    assert len(t.snapshot().files) == 1
    assert t.read().count() == 4000
    assert sorted(r.id for r in t.read().select("id").collect()) == list(range(4000))


def test_target_zero_keeps_one_file_per_partition(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint, v int, s string",
                           properties={TARGET_FILE_PROPERTY: "0"})
    t.write(_rows(spark))
    assert len(t.snapshot().files) == 8


def test_a_small_target_splits_by_the_estimate(spark, warehouse):
    df = _rows(spark)
    size = int(str(df._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    target = size // 3 + 1  # three files' worth
    assert estimated_files(df, target) == 3
    t = evonb.create_table(warehouse / "t", "id bigint, v int, s string",
                           properties={TARGET_FILE_PROPERTY: str(target)})
    t.write(df)
    # the written rows carry evonb's columns too, so Spark estimates them a little larger
    assert 3 <= len(t.snapshot().files) < 8
    assert t.read().count() == 4000


def test_never_more_files_than_partitions(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint, v int, s string",
                           properties={TARGET_FILE_PROPERTY: "1"})
    t.write(_rows(spark, parts=5))
    assert len(t.snapshot().files) == 5


def test_plans_that_can_multiply_rows_are_not_coalesced(spark, warehouse):
    exploded = spark.range(0, 40, 1, 4).selectExpr("explode(sequence(id * 100, id * 100 + 99)) "
                                                   "as id")
    assert estimated_files(exploded, 128 * 1024 * 1024) is None
    t = evonb.create_table(warehouse / "t", "id bigint")
    t.write(exploded)
    assert len(t.snapshot().files) == 4
    assert t.read().count() == 4000


def test_unknown_estimates_are_not_coalesced(spark, warehouse):
    from_rdd = spark.sparkContext.parallelize([(i,) for i in range(100)], 3).toDF(["id"])
    assert estimated_files(from_rdd, 128 * 1024 * 1024) is None
    assert estimated_files(_rows(spark), 0) is None
    t = evonb.create_table(warehouse / "t", "id bigint")
    t.write(from_rdd)
    assert len(t.snapshot().files) == 3


def test_overwrite_and_merge_on_read_inserts_coalesce_too(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint, v int, s string")
    t.write(_rows(spark), mode="overwrite")
    assert len(t.snapshot().files) == 1
    m = evonb.create_table(warehouse / "m", "id bigint, v int, s string", primary_key="id",
                           table_type="mor")
    m.write(_rows(spark))
    assert len(m.snapshot().files) == 1


def test_a_bad_target_is_a_clear_error(spark, warehouse):
    with pytest.raises(evonb.EvoError, match=TARGET_FILE_PROPERTY):
        evonb.create_table(warehouse / "t", "id bigint", properties={TARGET_FILE_PROPERTY: "lots"})
    # a value stored before creation checked it is refused by the write that reads it
    t = with_stored_properties(evonb.create_table(warehouse / "t", "id bigint"),
                               {TARGET_FILE_PROPERTY: "lots"})
    with pytest.raises(evonb.EvoError, match=TARGET_FILE_PROPERTY):
        t.write(spark.range(3))
    assert t.snapshot().files == ()
    assert t.timeline.last_completed().action != "commit"


def test_the_estimate_below_a_limit_is_the_limited_frames(spark, tmp_path):
    """The driver path collects ``df.limit(n)`` and judges it by the size of what is limited,
    asked of the limit's own plan (optimized once for both): Spark's estimate of the limit
    itself is its row count times a guessed row size."""
    path = str(tmp_path / "p")
    spark.range(5000).selectExpr("id", "sha2(cast(id as string), 256) as s").write.parquet(path)
    df = spark.read.parquet(path)
    whole = estimated_bytes(df)
    assert whole == sum(f.stat().st_size for f in Path(path).glob("*.parquet"))  # the files
    limited = df.limit(10)
    assert estimated_bytes(limited, below_limit=True) == whole
    assert estimated_bytes(limited) < whole  # 10 rows of a guessed size
    assert estimated_bytes(df.limit(10).limit(20), below_limit=True) == whole
    exploded = df.selectExpr("explode(array(id, id)) as id").limit(10)
    assert estimated_bytes(exploded, below_limit=True) is None  # can multiply rows
