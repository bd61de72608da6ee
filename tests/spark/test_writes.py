"""One write (:mod:`evonb.spark.writes`): Parquet options from table properties, schemas
without foreign field IDs, repeated keys of an insert (``error``, ``combine``, ``allow``), and
copy-on-write upserts and deletes that rewrite only the files holding their keys."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import evonb
from evonb.errors import DataValidationError, WriteSchemaError
from evonb.spark.writes import DUPLICATES_PROPERTY, parquet_options, strip_metadata

COLS = "id long, v string, ts long"
DDL = "id bigint not null, v string, ts bigint"


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


def test_parquet_options_are_the_write_parquet_properties():
    config = SimpleNamespace(properties={"evonb.write.parquet.block.size": "4096",
                                         "evonb.write.parquet.compression": "zstd",
                                         "evonb.write.target.file.bytes": "0",
                                         "parquet.block.size": "1"})
    assert parquet_options(config) == {"parquet.block.size": "4096",
                                       "parquet.compression": "zstd"}
    assert parquet_options(SimpleNamespace(properties={})) == {}


def _row_groups(t):
    import pyarrow.parquet as pq

    return sorted(pq.ParquetFile(t.root / f.path).metadata.num_row_groups
                  for f in t.snapshot().files)


@pytest.mark.spark
def test_row_groups_hold_a_million_rows_at_most_unless_the_table_says(spark, tmp_path):
    from evonb.spark.writer import ROW_GROUP_ROWS

    t = evonb.create_table(tmp_path / "big", "id bigint not null")
    t.write(spark.range(0, ROW_GROUP_ROWS + 10, 1, 1))  # one file, over the limit by 10 rows
    assert _row_groups(t) == [2]
    small = evonb.create_table(
        tmp_path / "small", "id bigint not null",
        properties={"evonb.write.parquet.block.row.count.limit": "1000"})
    small.write(spark.range(0, 2_500, 1, 1))
    assert _row_groups(small) == [3]
    assert small.to_arrow().column("id").to_pylist() == list(range(2_500))


def test_strip_metadata_drops_field_ids_at_every_depth():
    from pyspark.sql import types as T

    ids = {"parquet.field.id": 7}
    inner = T.StructType([T.StructField("x", T.IntegerType(), False, ids)])
    struct = T.StructType([
        T.StructField("s", inner, True, ids),
        T.StructField("a", T.ArrayType(inner, False), True, ids),
        T.StructField("m", T.MapType(T.StringType(), inner, True), False, ids)])
    plain_inner = T.StructType([T.StructField("x", T.IntegerType(), False)])
    assert strip_metadata(struct) == T.StructType([
        T.StructField("s", plain_inner, True),
        T.StructField("a", T.ArrayType(plain_inner, False), True),
        T.StructField("m", T.MapType(T.StringType(), plain_inner, True), False)])
    assert all(not f.metadata for f in strip_metadata(struct).fields)


@pytest.mark.spark
def test_repeated_keys_of_an_insert_fail_combine_or_stay(spark, tmp_path):
    rows = spark.createDataFrame([(1, "a", 1), (1, "b", 3), (1, "c", 2), (2, "d", 1)], COLS)
    t = evonb.create_table(tmp_path / "e", DDL, primary_key="id", precombine="ts")
    before = len(t.history())
    with pytest.raises(DataValidationError) as err:
        t.write(rows)
    assert (err.value.count, err.value.examples) == (1, [1])
    assert len(t.history()) == before  # the failed insert committed nothing
    assert t.read().count() == 0
    combined = evonb.create_table(tmp_path / "c", DDL, primary_key="id", precombine="ts",
                                  properties={DUPLICATES_PROPERTY: "combine"})
    combined.write(rows)
    assert _rows(combined.read()) == [(1, "b", 3), (2, "d", 1)]
    allowed = evonb.create_table(tmp_path / "a", DDL, primary_key="id", precombine="ts",
                                 properties={DUPLICATES_PROPERTY: "allow"})
    allowed.write(rows)
    assert allowed.read().count() == 4


@pytest.mark.spark
@pytest.mark.parametrize("driver", [True, False], ids=["driver", "spark"])
def test_cow_upserts_keep_the_precombine_winner_and_rewrite_only_files_with_the_keys(
        spark, tmp_path, driver):
    t = evonb.create_table(tmp_path / "t", DDL, primary_key="id", precombine="ts",
                           properties={} if driver else {"evonb.write.driver_rewrite.bytes": "0"})
    t.write(spark.createDataFrame([(1, "a", 5), (2, "b", 5)], COLS).coalesce(1))
    t.write(spark.createDataFrame([(10, "x", 5)], COLS).coalesce(1))
    far = {f.path for f in t.snapshot().files if f.rows == 1}
    assert len(far) == 1
    # key 1: an older precombine value loses; key 2: a tie goes to the incoming row; 3 is new
    commit = t.write(spark.createDataFrame([(1, "old", 4), (2, "tie", 5), (3, "new", 1)],
                                           COLS), "upsert")
    assert _rows(t.read()) == [(1, "a", 5), (2, "tie", 5), (3, "new", 1), (10, "x", 5)]
    assert far <= {f.path for f in t.snapshot().files}  # the file of key 10 is untouched
    assert commit.metadata["key_lookup"] == {"live": 2, "scanned": 1,
                                             **({"driver": True} if driver else {})}
    t.write(spark.createDataFrame([(2,), (10,)], "id long"), "delete")
    assert _rows(t.read()) == [(1, "a", 5), (3, "new", 1)]
    with pytest.raises(WriteSchemaError):
        t.write(spark.createDataFrame([("a",)], "v string"), "delete")
