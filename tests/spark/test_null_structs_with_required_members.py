"""A null struct whose member is required (``s struct<z: int not null, x: int>``, ``s`` null
in some rows) on every path that collects rows to the driver as Arrow.

Spark sends such a struct's required member as null under it; pyarrow's cast refused it
("nulls in input cannot be viewed as non-nullable"), so small upserts, deletes and MERGEs
taking a driver path failed, as did previews of such rows. Found by the model
test (seed 3639926308, kept in ``tests/model/test_model_regressions.py``)."""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import functions as F

import evonb
from evonb.notebook.preview import Preview
from evonb.spark.arrow_collect import nullable_schema, relaxed_columns, relaxed_type, to_arrow
from evonb.spark.sql_writes import execute
from tests.spark.merge_paths import MERGE_PATHS

pytestmark = pytest.mark.spark

DDL = "id bigint not null, s struct<z: int not null, x: int>"


def _frame(spark: Any, rows: list[tuple[int, tuple[int, int] | None]]) -> Any:
    """Rows of ``DDL`` whose struct type keeps ``z`` required, as the shaped write has it."""
    df = spark.createDataFrame([(i, s is None, *(s or (0, 0))) for i, s in rows],
                               "id bigint, gone boolean, z int, x int")
    return df.select(F.col("id"), F.when(~F.col("gone"), F.struct(
        F.coalesce(F.col("z"), F.lit(0)).alias("z"), F.col("x"))).alias("s"))


def _rows(t: Any) -> list[tuple[int, tuple[int, int] | None]]:
    """The table's rows by Spark, checked equal to the JVM-free reader's."""
    got = sorted((r.id, None if r.s is None else (r.s.z, r.s.x)) for r in t.read().collect())
    arrow = sorted((r["id"], None if r["s"] is None else (r["s"]["z"], r["s"]["x"]))
                   for r in t.to_arrow().to_pylist())
    assert arrow == got
    return got


def test_to_arrow_collects_a_null_struct_with_a_required_member(spark: Any) -> None:
    df = _frame(spark, [(1, (1, 10)), (2, None)])
    assert not df.schema["s"].dataType["z"].nullable
    with pytest.raises(Exception, match="non-nullable"):  # what pyarrow's cast does
        df.toArrow()
    rows = to_arrow(df)
    assert rows.to_pylist() == [{"id": 1, "s": {"z": 1, "x": 10}}, {"id": 2, "s": None}]
    assert rows.schema.field("s").type.field("z").nullable
    again = spark.createDataFrame(rows, schema=relaxed_columns(df.schema))
    assert sorted(again.collect()) == sorted(df.collect())


def test_to_arrow_keeps_column_names_with_dots_and_backquotes(spark: Any) -> None:
    df = _frame(spark, [(1, None)]).select(F.col("id").alias("a.b`c"),
                                           F.col("s").alias("s.t"))
    rows = to_arrow(df)
    assert rows.column_names == ["a.b`c", "s.t"]
    assert rows.to_pylist() == [{"a.b`c": 1, "s.t": None}]


def test_relaxing_keeps_names_metadata_and_map_keys() -> None:
    import pyarrow as pa
    from pyspark.sql.types import (
        ArrayType,
        IntegerType,
        MapType,
        StringType,
        StructField,
        StructType,
    )

    inner = StructType([StructField("z", IntegerType(), False, {"parquet.field.id": 7})])
    t = MapType(StringType(), ArrayType(inner, False), False)
    relaxed = relaxed_type(t)
    assert relaxed.valueContainsNull and relaxed.valueType.containsNull
    member = relaxed.valueType.elementType.fields[0]
    assert (member.name, member.nullable, member.metadata) == ("z", True, {"parquet.field.id": 7})
    schema = pa.schema([pa.field("m", pa.map_(pa.string(), pa.list_(pa.field(
        "e", pa.struct([pa.field("z", pa.int32(), nullable=False)]), nullable=False))),
        nullable=False)])
    loose = nullable_schema(schema).field("m").type
    assert not loose.key_field.nullable and loose.item_field.nullable
    assert loose.item_type.value_field.nullable
    assert loose.item_type.value_type.field("z").nullable


PATHS = [(p, None) for p in sorted(MERGE_PATHS)] + [
    (p, "parquet") for p in sorted(MERGE_PATHS) if MERGE_PATHS[p][0] == "mor"]
"""Every merge path; merge-on-read ones with Avro (the default) and Parquet log blocks."""


@pytest.mark.parametrize(("path", "blocks"), PATHS, ids=[f"{p}-{b or 'default'}" for p, b in PATHS])
def test_writes_of_null_structs_with_a_required_member(spark: Any, tmp_path: Any,
                                                       path: str, blocks: str | None) -> None:
    table_type, props = MERGE_PATHS[path]
    if blocks:
        props = props | {"evonb.mor.log_format": blocks}
    t = evonb.create_table(tmp_path / "t", DDL, primary_key="id", table_type=table_type,
                           properties=props)
    t.write(_frame(spark, [(1, (1, 10)), (2, None), (3, (3, 30))]).coalesce(1))
    t.write(_frame(spark, [(2, (2, 20)), (3, None), (4, None)]), mode="upsert")
    assert _rows(t) == [(1, (1, 10)), (2, (2, 20)), (3, None), (4, None)], path
    t.write(_frame(spark, [(1, None)]), mode="delete")
    assert _rows(t) == [(2, (2, 20)), (3, None), (4, None)], path
    _frame(spark, [(2, None), (5, None), (6, (6, 60))]).createOrReplaceTempView("incoming")
    execute(t, "MERGE INTO t USING incoming i ON t.id = i.id "
               "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *", name="t")
    merged = [(2, None), (3, None), (4, None), (5, None), (6, (6, 60))]
    assert _rows(t) == merged, path
    t.compact()
    assert _rows(t) == merged, path
    t.cluster(by=["s.z"])
    assert _rows(t) == merged, path


def test_a_preview_of_a_query_with_null_structs_with_a_required_member(spark: Any) -> None:
    """``%evo sql`` and the timeline preview any DataFrame (a table's read has nested members
    nullable; a query's result may not)."""
    df = _frame(spark, [(2, None), (1, (1, 10)), (3, None)])
    shown = Preview.of(df, 10, "q", order_by=("id",))
    assert shown.pandas["id"].tolist() == [1, 2, 3]
    assert shown.pandas["s"].isna().tolist() == [False, True, True]
