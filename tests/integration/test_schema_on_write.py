"""Every cell of Hudi's schema-on-write table, both ways, plus the type-promotion chart."""

from __future__ import annotations

import re

import pytest

import evonb
from evonb.errors import DataValidationError, WriteSchemaError

pytestmark = pytest.mark.spark


def _rows(df):
    return sorted((tuple(r) for r in df.collect()), key=repr)


def test_add_nullable_root_column_at_end_and_inner_struct(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id int, s struct<a:int>")
    t.write(spark.createDataFrame([(1, (10,))], "id int, s struct<a:int>"))
    t.write(spark.createDataFrame([(2, (20, "x"), "n")],
                                  "id int, s struct<a:int,b:string>, extra string"))
    assert str(t.schema.struct) == "struct<id:int,s:struct<a:int,b:string>,extra:string>"
    assert t.schema.field_ids() == [1, 2, 3, 4, 5]
    assert _rows(t.read()) == [(1, (10, None), None), (2, (20, "x"), "n")]


def test_add_complex_columns_map_and_array(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id int")
    t.write(spark.createDataFrame([(1,)], "id int"))
    t.write(spark.createDataFrame([(2, {"k": 1}, [1, 2])],
                                  "id int, m map<string,int>, arr array<int>"))
    assert _rows(t.read()) == [(1, None, None), (2, {"k": 1}, [1, 2])]


def test_new_column_with_changed_field_order_is_supported(spark, warehouse):
    """Hudi: "No" (read fails when not all base files were rewritten). evonb matches by name,
    so any incoming order works and old files read the new column as null."""
    t = evonb.create_table(warehouse / "t", "a int, b string, c double")
    t.write(spark.createDataFrame([(1, "x", 1.5)], "a int, b string, c double"))
    t.write(spark.createDataFrame([(2.5, "new", "y", 2)],
                                  "c double, d string, b string, a int"))
    assert t.read().columns == ["a", "b", "c", "d"]
    assert _rows(t.read()) == [(1, "x", 1.5, None), (2, "y", 2.5, "new")]


def test_custom_meta_column(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id int")
    t.write(spark.createDataFrame([(1, "m")], "id int, _hoodie_meta_col string"))
    assert _rows(t.read()) == [(1, "m")]


@pytest.mark.parametrize(
    ("table_type", "data_type", "result"),
    [("int", "bigint", "bigint"), ("int", "float", "float"), ("int", "double", "double"),
     ("int", "string", "string"), ("bigint", "float", "float"), ("bigint", "string", "string"),
     ("float", "double", "double"), ("double", "string", "string"),
     ("string", "binary", "string"), ("binary", "string", "binary")],
)
def test_promotion_chart_widens_the_table(spark, warehouse, table_type, data_type, result):
    t = evonb.create_table(warehouse / "t", f"id int, v {table_type}")
    t.write(spark.sql(f"select 1 as id, cast('1' as {table_type}) as v"))
    t.write(spark.sql(f"select 2 as id, cast('2' as {data_type}) as v"))
    assert str(t.schema.find("v").type) == result
    values = [r["v"] for r in t.read().orderBy("id").collect()]
    assert len(values) == 2 and values[1] is not None


@pytest.mark.parametrize(("table_type", "data_type"),
                         [("bigint", "int"), ("double", "float"), ("string", "int"),
                          ("double", "bigint")])
def test_narrower_incoming_values_are_cast_up(spark, warehouse, table_type, data_type):
    t = evonb.create_table(warehouse / "t", f"id int, v {table_type}")
    t.write(spark.sql(f"select 1 as id, cast(7 as {data_type}) as v"))
    assert str(t.schema.find("v").type) == table_type
    assert t.read().collect()[0]["v"] in (7, 7.0, "7")


@pytest.mark.parametrize("data_type", ["int", "bigint", "double"])
def test_chart_x_cells_are_errors(spark, warehouse, data_type):
    t = evonb.create_table(warehouse / "t", "id int, v binary")
    with pytest.raises(WriteSchemaError, match=r"v: table has binary, data has"):
        t.write(spark.sql(f"select 1 as id, cast(1 as {data_type}) as v"))
    assert t.read().count() == 0 and len(t.history()) == 1


@pytest.mark.parametrize(
    ("data_type", "value", "text"),
    [("date", "date'2020-01-02'", "2020-01-02"),
     ("decimal(5,2)", "1.50bd", "1.50")],
)
def test_text_column_keeps_its_text_when_data_brings_another_type(spark, warehouse, data_type,
                                                                   value, text):
    """ALTER may turn text into a date or a decimal (text that does not convert reads null);
    a write never does that on its own: the stored text stays, the data is written as text."""
    t = evonb.create_table(warehouse / "t", "id int, v string, s struct<w:string>")
    t.write(spark.sql("select 1 as id, 'hello' as v, named_struct('w', 'x') as s"))
    t.write(spark.sql(f"select 2 as id, {value} as v, named_struct('w', {value}) as s"))
    assert str(t.schema.struct) == "struct<id:int,v:string,s:struct<w:string>>"
    expected = [(1, "hello", ("x",)), (2, text, (text,))]
    assert _rows(t.read()) == expected
    assert sorted((r["id"], r["v"], (r["s"]["w"],)) for r in t.to_arrow().to_pylist()) == expected


@pytest.mark.parametrize("table_type", ["double", "float"])
def test_decimals_written_into_a_floating_point_column_are_cast(spark, warehouse, table_type):
    """Spark's SQL makes decimals of literals (``id * 1.5``). The column keeps its type (it
    became decimal(23,1) before, and its stored 1e30 read null); the decimals are cast."""
    t = evonb.create_table(warehouse / "t", f"id bigint, x {table_type}")
    t.write(spark.sql(f"select 1L as id, cast(1e30 as {table_type}) as x"))
    t.write(spark.sql("select id, id * 1.5 as x from range(2, 4)"))
    assert str(t.schema.find("x").type) == table_type
    expected = [(1, float(spark.sql(f"select cast(1e30 as {table_type})").first()[0])),
                (2, 3.0), (3, 4.5)]
    assert _rows(t.read()) == expected
    assert sorted((r["id"], r["x"]) for r in t.to_arrow().to_pylist()) == expected


@pytest.mark.parametrize(("table_type", "data_type", "stored", "sent"),
                         [("decimal(5,2)", "double", "1.50bd", "1e30"),
                          ("decimal(10,2)", "float", "1.50bd", "2.5")])
def test_floating_point_data_into_a_decimal_column_is_refused(spark, warehouse, table_type,
                                                              data_type, stored, sent):
    """Doubles cast into a decimal(5,2) column would lose 1e30 (null) and digits; a column
    made double would lose its decimals' exactness: an error naming the column and both
    types; the table is unchanged."""
    t = evonb.create_table(warehouse / "t", f"id int, v {table_type}")
    t.write(spark.sql(f"select 1 as id, cast({stored} as {table_type}) as v"))
    with pytest.raises(WriteSchemaError,
                       match=rf"v: table has {re.escape(table_type)}, data has "
                       rf"{re.escape(data_type)}") as err:
        t.write(spark.sql(f"select 2 as id, cast({sent} as {data_type}) as v"))
    assert f"cast the column to {table_type} before writing" in (err.value.hint or "")
    assert str(t.schema.find("v").type) == table_type
    assert len(t.history()) == 2 and t.read().count() == 1


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_write_never_retypes_the_precombine_column(spark, warehouse, table_type):
    """Text orders "9" after "10": a precombine column a write made string let a stale row win
    (ts 9 over 10). Its type is kept as ALTER keeps it; narrower data is still cast up."""
    t = evonb.create_table(warehouse / "t", "id bigint not null, ts bigint, v string",
                           primary_key="id", precombine="ts", table_type=table_type)
    t.write(spark.createDataFrame([(1, 10, "a")], "id bigint, ts bigint, v string"))
    for ts_type, ts in (("string", "9"), ("double", 9.0)):
        with pytest.raises(WriteSchemaError,
                           match=r"'ts' is .*precombine columns cannot change type"):
            t.write(spark.createDataFrame([(1, ts, "b")], f"id bigint, ts {ts_type}, v string"),
                    mode="upsert")
    assert str(t.schema.find("ts").type) == "bigint" and len(t.history()) == 2
    t.write(spark.createDataFrame([(1, 9, "b"), (2, 1, "c")], "id bigint, ts int, v string"),
            mode="upsert")
    assert _rows(t.read()) == [(1, 10, "a"), (2, 1, "c")]
    assert sorted((r["id"], r["ts"], r["v"]) for r in t.to_arrow().to_pylist()) == [
        (1, 10, "a"), (2, 1, "c")]


@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_an_upsert_without_the_precombine_column_is_refused(spark, warehouse, table_type):
    """Every row of such an upsert would hold a null precombine value and lose to the stored
    row of its key: the upsert would commit and change nothing. It is refused, the table
    unchanged; an insert may leave the column out, and a default makes the upsert work."""
    t = evonb.create_table(warehouse / "t", "id bigint not null, ts bigint, v string",
                           primary_key="id", precombine="ts", table_type=table_type)
    t.write(spark.createDataFrame([(1, 10, "a")], "id bigint, ts bigint, v string"))
    with pytest.raises(WriteSchemaError, match="Upsert data lacks the precombine column 'ts'"):
        t.write(spark.createDataFrame([(1, "b")], "id bigint, v string"), mode="upsert")
    assert len(t.history()) == 2 and _rows(t.read()) == [(1, 10, "a")]
    t.write(spark.createDataFrame([(2, "c")], "id bigint, v string"), mode="insert")
    t.alter("ALTER TABLE t ALTER COLUMN ts SET DEFAULT 99")
    t.write(spark.createDataFrame([(1, "b")], "id bigint, v string"), mode="upsert")
    assert _rows(t.read()) == [(1, 99, "b"), (2, None, "c")]


def test_promote_nested_and_complex_values(spark, warehouse):
    t = evonb.create_table(warehouse / "t",
                           "id int, s struct<a:int>, arr array<int>, m map<string,int>")
    t.write(spark.createDataFrame([(1, (1,), [1], {"k": 1})],
                                  "id int, s struct<a:int>, arr array<int>, m map<string,int>"))
    t.write(spark.createDataFrame(
        [(2, (2,), [2], {"k": 2})],
        "id int, s struct<a:bigint>, arr array<bigint>, m map<string,bigint>"))
    assert str(t.schema.struct) == (
        "struct<id:int,s:struct<a:bigint>,arr:array<bigint>,m:map<string,bigint>>")
    assert _rows(t.read()) == [(1, (1,), [1], {"k": 1}), (2, (2,), [2], {"k": 2})]


def test_demoted_incoming_types_keep_the_table_type(spark, warehouse):
    """Hudi: demotion fails. evonb casts narrower data up and keeps the table's type."""
    t = evonb.create_table(warehouse / "t", "id int, s struct<a:bigint>, arr array<bigint>")
    t.write(spark.createDataFrame([(1, (5,), [6])], "id int, s struct<a:int>, arr array<int>"))
    assert str(t.schema.struct) == "struct<id:int,s:struct<a:bigint>,arr:array<bigint>>"
    assert _rows(t.read()) == [(1, (5,), [6])]


def test_new_non_nullable_column_from_data_is_added_nullable(spark, warehouse):
    """Hudi: "No". evonb adds a new column from a write as nullable (old rows have no value)."""
    from pyspark.sql import types as T

    t = evonb.create_table(warehouse / "t", "id int")
    t.write(spark.createDataFrame([(1,)], "id int"))
    schema = T.StructType([T.StructField("id", T.IntegerType()),
                           T.StructField("req", T.StringType(), nullable=False)])
    t.write(spark.createDataFrame([(2, "r")], schema))
    assert t.schema.find("req").nullable
    assert _rows(t.read()) == [(1, None), (2, "r")]


def test_missing_columns_get_write_default_or_null(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id int, a string DEFAULT 'dflt', b int")
    t.write(spark.createDataFrame([(1,)], "id int"))
    assert _rows(t.read()) == [(1, "dflt", None)]


def test_required_column_without_default_missing_is_an_error(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id int, r string NOT NULL")
    with pytest.raises(WriteSchemaError, match="lacks required column 'r'"):
        t.write(spark.createDataFrame([(1,)], "id int"))
    with pytest.raises(DataValidationError, match="1 incoming rows hold null"):
        t.write(spark.createDataFrame([(1, None)], "id int, r string"))
    assert len(t.history()) == 1 and not list((warehouse / "t").rglob("*.parquet"))


def test_strict_pipeline_properties(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id int, a string",
                           properties={"evonb.write.add_columns": False,
                                       "evonb.write.fill_missing": "false"})
    with pytest.raises(WriteSchemaError, match=r"'extra'.*not in the table"):
        t.write(spark.createDataFrame([(1, "x", "e")], "id int, a string, extra string"))
    with pytest.raises(WriteSchemaError, match="lacks column 'a'"):
        t.write(spark.createDataFrame([(1,)], "id int"))
    t.write(spark.createDataFrame([(1, "x")], "id int, a string"))
    assert _rows(t.read()) == [(1, "x")]
