"""The Spark side of a table (:mod:`evonb.spark.table`): nulls counted at any depth, Spark
schemas given fresh IDs, reads of chosen columns and of the base files only, and writes
checked before any data is written."""

from __future__ import annotations

import pytest

import evonb
from evonb.errors import EvoError, WriteSchemaError
from evonb.spark.table import spark_schema

pytestmark = pytest.mark.spark


def test_count_nulls_sees_nested_nulls_but_not_null_parents(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint, st struct<x: int>, arr array<int>, "
                           "m map<string, int>")
    t.write(spark.createDataFrame([
        (1, (None,), [1, None], {"a": None}),
        (2, None, None, None),
        (None, (3,), [None, None], {"a": 1, "b": None}),
    ], "id long, st struct<x: int>, arr array<int>, m map<string, int>"))
    s = t.schema
    ids = [s.find_id("id"), s.find_id("st"), s.find_id("st.x"), s.find_id("arr.element"),
           s.find_id("m.value"), s.find_id("m.key")]
    assert t.count_nulls(s, ids) == [1, 1, 1, 2, 2, 0]


def test_spark_schema_gives_fresh_ids_and_ignores_metadata():
    from pyspark.sql import types as T

    struct = T.StructType([
        T.StructField("a", T.LongType(), False, {"parquet.field.id": 99}),
        T.StructField("s", T.StructType([T.StructField("b", T.StringType())]), True,
                      {"parquet.field.id": 98})])
    schema = spark_schema(struct)
    assert [f.name for f in schema.fields] == ["a", "s"]
    assert not schema.fields[0].nullable
    assert sorted(i for i in (schema.find_id("a"), schema.find_id("s"), schema.find_id("s.b"))
                  ) == [1, 2, 3]


def test_reads_of_columns_and_of_base_files_only(spark, tmp_path):
    t = evonb.create_table(tmp_path / "m", "id bigint not null, st struct<x: int>, ts bigint",
                           primary_key="id", precombine="ts", table_type="mor")
    cols = "id long, st struct<x: int>, ts long"
    t.write(spark.createDataFrame([(1, (10,), 1), (2, (20,), 1)], cols))
    t.write(spark.createDataFrame([(2, (21,), 2)], cols), "upsert")
    assert sorted(tuple(r) for r in t.read(columns=["st.x", "id"]).collect()) == [
        (10, 1), (21, 2)]
    base_only = t.read(query="read_optimized").select("id", "st.x")
    assert sorted(tuple(r) for r in base_only.collect()) == [(1, 10), (2, 20)]
    with pytest.raises(EvoError, match="Unknown query type"):
        t.read(query="incremental")


def test_bad_writes_fail_before_any_file_is_written(spark, tmp_path):
    t = evonb.create_table(tmp_path / "k", "id bigint, v string")
    df = spark.createDataFrame([(1, "a")], "id long, v string")
    before = len(t.history())
    with pytest.raises(WriteSchemaError, match="needs a record key"):
        t.write(df, "upsert")
    with pytest.raises(EvoError, match="Unknown write mode"):
        t.write(df, "append")
    assert len(t.history()) == before
    assert not [p for p in t.root.rglob("*.parquet")]
