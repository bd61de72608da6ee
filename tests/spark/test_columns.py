"""Read-plan expressions compiled to Spark (:mod:`evonb.spark.columns`): paths read literally,
every expression kind evaluated by Spark, and plain read schemas carrying read defaults."""

from __future__ import annotations

import pytest

from evonb.schema.spark_convert import EXISTS_DEFAULT_KEY
from evonb.schema.types import BIGINT, INT, STRING, ArrayType, NestedField, StructType
from evonb.spark.columns import literal_paths, spark_read_type, to_column, to_sql
from evonb.table.read_plan import (
    Cast,
    Coalesce,
    Col,
    ForEach,
    ForEachValue,
    GetField,
    Lit,
    StructOf,
    Var,
)


def test_glob_characters_in_paths_are_escaped():
    assert literal_paths(["/w/t[1]/{a,b}/f*?.parquet", "/w/plain/f.parquet"]) == [
        r"/w/t\[1\]/\{a,b\}/f\*\?.parquet", "/w/plain/f.parquet"]
    assert literal_paths(["/w/back\\slash"]) == ["/w/back\\\\slash"]


def test_literals_and_names_are_quoted():
    assert to_sql(Col("a`b")) == "`a``b`"
    assert to_sql(Lit(None, INT)) == "CAST(NULL AS int)"
    assert to_sql(Lit("it's", STRING)) == "CAST('it\\'s' AS string)"
    assert to_sql(Cast(Col("x"), BIGINT)) == "try_cast(`x` AS bigint)"


@pytest.mark.spark
def test_every_expression_kind_evaluates_in_spark(spark):
    df = spark.createDataFrame(
        [(1, "7", (2, "p"), [1, 2], {"k": 3}), (2, "x", None, None, {"k": None})],
        "a int, s string, st struct<x: int, y: string>, arr array<int>, m map<string, int>")
    exprs = {
        "cast": Cast(Col("s"), INT),  # 'x' reads as null, not as an error
        "field": GetField(Col("st"), "y"),
        "struct": StructOf(Col("st"), (("x2", Cast(GetField(Col("st"), "x"), BIGINT)),
                                       ("lit", Lit("d", STRING)))),
        "each": ForEach(Col("arr"), Cast(Var(0), BIGINT), 0),
        "values": ForEachValue(Col("m"), Coalesce((Var(0), Lit(-1, INT))), 0),
        "first": Coalesce((Cast(Col("s"), INT), Col("a"))),
    }
    rows = df.select(*[to_column(e).alias(n) for n, e in exprs.items()]).orderBy("first")
    got = [r.asDict(recursive=True) for r in rows.collect()]
    assert got == [
        {"cast": None, "field": None, "struct": None, "each": None, "values": {"k": -1},
         "first": 2},
        {"cast": 7, "field": "p", "struct": {"x2": 2, "lit": "d"}, "each": [1, 2],
         "values": {"k": 3}, "first": 7},
    ]


@pytest.mark.spark
def test_read_types_are_plain_and_carry_read_defaults(spark):
    struct = StructType((
        NestedField(1, "id", BIGINT, nullable=False),
        NestedField(2, "tags", ArrayType(NestedField(3, "element", STRING, nullable=False))),
        NestedField(4, "n", INT),
    ))
    read = spark_read_type(struct, (("n", Lit(5, INT)),))
    assert [(f.name, f.dataType.simpleString(), f.nullable) for f in read.fields] == [
        ("id", "bigint", True), ("tags", "array<string>", True), ("n", "int", True)]
    assert read.fields[1].dataType.containsNull
    assert not read.fields[0].metadata and not read.fields[1].metadata
    assert read.fields[2].metadata[EXISTS_DEFAULT_KEY] == "5"
