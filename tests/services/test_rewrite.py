"""The full rewrite (:mod:`evonb.services.rewrite`): which values fit a new type, and
``Table.rewrite`` changing types inside arrays and maps too: fields of array element structs
and map values (and structs within them), with the same checked cast."""

from __future__ import annotations

import pytest

import evonb
from evonb.errors import DataValidationError
from evonb.schema.types import DOUBLE, FLOAT, INT, STRING, DecimalType
from evonb.services.rewrite import converted, fits

SCHEMA = ("id int, pts array<struct<x: double, tag: string>>, "
          "m map<string, struct<n: string>>, scores map<string, double>")


def _rows(df) -> list[tuple]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


@pytest.fixture
def nested(spark, warehouse):
    t = evonb.create_table(warehouse / "n", SCHEMA)
    t.write(spark.createDataFrame([
        (1, [(1.0, "a"), (2.0, "b")], {"k": ("10",)}, {"s": 1.0}),
        (2, [(2.5, "c")], {"k": ("x",), "j": None}, {"s": 3.0, "t": 1e12}),
        (3, None, None, None),
        (4, [], {}, {}),
        (5, [None, (None, "d")], {"k": (None,)}, {"s": None}),
    ], SCHEMA))
    return t


def test_a_failing_nested_cast_names_the_field_and_commits_nothing(nested):
    t = nested
    history, schema = len(t.history()), t.schema
    with pytest.raises(DataValidationError) as err:
        t.rewrite("ALTER TABLE n ALTER COLUMN pts.element.x TYPE int")
    assert err.value.count == 1 and err.value.examples == [2.5]
    assert "'pts.element.x'" in str(err.value)
    with pytest.raises(DataValidationError) as err:
        t.rewrite("ALTER TABLE n ALTER COLUMN m.value.n TYPE int; "
                  "ALTER TABLE n ALTER COLUMN scores.value TYPE int")
    assert err.value.count == 2 and err.value.examples == ["x"]
    assert "scores.value: 1" in str(err.value)
    assert len(t.history()) == history and t.schema == schema


def test_nested_casts_rewrite_every_row(nested):
    t = nested
    commit = t.rewrite("ALTER TABLE n ALTER COLUMN pts.element.x TYPE int; "
                       "ALTER TABLE n ALTER COLUMN m.value.n TYPE int; "
                       "ALTER TABLE n ALTER COLUMN scores.value TYPE int",
                       on_cast_error="null")
    assert commit.metadata["nulled"] == {"pts.element.x": 1, "m.value.n": 1, "scores.value": 1}
    assert t.read().schema.simpleString() == (
        "struct<id:int,pts:array<struct<x:int,tag:string>>,m:map<string,struct<n:int>>,"
        "scores:map<string,int>>")
    got = {r["id"]: r for r in t.read().collect()}
    assert [tuple(p) for p in got[1]["pts"]] == [(1, "a"), (2, "b")]
    assert [tuple(p) for p in got[2]["pts"]] == [(None, "c")]
    assert got[1]["m"] == {"k": (10,)} and got[2]["m"] == {"k": (None,), "j": None}
    assert got[2]["scores"] == {"s": 3, "t": None}
    assert (got[3]["pts"], got[3]["m"], got[3]["scores"]) == (None, None, None)
    assert (got[4]["pts"], got[4]["m"], got[4]["scores"]) == ([], {}, {})
    assert got[5]["pts"][0] is None and tuple(got[5]["pts"][1]) == (None, "d")
    assert got[5]["m"] == {"k": (None,)} and got[5]["scores"] == {"s": None}
    # time travel still reads the old values in the old types
    before = t.read(as_of=t.history()[-2].instant)
    assert _rows(before.filter("id = 2").select("scores")) == [({"s": 3.0, "t": 1e12},)]
    # and in the latest schema, what the rewrite wrote (2.5 and 1e12 null, not 2 and a clamp)
    latest = t.read(as_of=t.history()[-2].instant, schema="latest")
    assert _rows(latest) == _rows(t.read())
    arrow = t.to_arrow(as_of=t.history()[-2].instant, schema="latest").sort_by("id").to_pylist()
    assert [p["x"] for p in arrow[1]["pts"]] == [None]
    assert dict(arrow[1]["scores"]) == {"s": 3, "t": None}
    assert dict(arrow[1]["m"]) == {"k": {"n": None}, "j": None}


def test_a_number_fits_when_it_casts_back_to_itself_and_floats_when_finite(spark):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(0, 3.0), (1, 2.5), (2, 1e12), (3, None), (4, 1e300),
                                (5, float("inf"))], "i int, d double")
    out = df.orderBy("i").select(fits(F.col("d"), DOUBLE, INT).alias("int"),
                                 converted(F.col("d"), DOUBLE, INT).alias("as_int"),
                                 fits(F.col("d"), DOUBLE, FLOAT).alias("float"),
                                 fits(F.col("d"), DOUBLE, DecimalType(4, 1)).alias("dec"))
    rows = [tuple(r) for r in out.collect()]
    assert [r[0] for r in rows] == [True, False, False, True, False, False]
    assert [r[1] for r in rows] == [3, None, None, None, None, None]
    assert [r[2] for r in rows] == [True, True, True, True, False, True]
    assert [r[3] for r in rows] == [True, True, False, True, False, False]


def test_a_string_fits_a_number_when_it_parses(spark):
    from pyspark.sql import functions as F

    df = spark.createDataFrame([(0, "12"), (1, "x"), (2, None)], "i int, s string")
    out = df.orderBy("i").select(fits(F.col("s"), STRING, INT).alias("ok"),
                                 converted(F.col("s"), STRING, INT).alias("v")).collect()
    assert [tuple(r) for r in out] == [(True, 12), (False, None), (True, None)]


NARROWINGS = [  # column, old type, new type, values: what the rewrite keeps, what it nulls
    ("d", "double", "int", [3.0, -2.0, 2.5, 1e12, float("nan"), None]),
    ("d", "double", "bigint", [4.0, 0.25, 1e19, None]),
    ("d", "double", "float", [1.5, 1e300, float("-inf"), None]),
    ("d", "double", "decimal(4,1)", [12.5, 0.25, 12345.0, None]),
    ("b", "bigint", "int", [7, 2**31, -(2**31) - 1, -(2**31), None]),
    ("m", "decimal(10,3)", "decimal(5,1)", ["1.500", "1.250", "99999.000", None]),
    ("m", "decimal(10,3)", "int", ["2.000", "2.500", None]),
]


CASES = [("cow", *n) for n in NARROWINGS] + [("mor", *NARROWINGS[0]), ("mor", *NARROWINGS[5])]
"""Every narrowing on base files; two (a double and a decimal) on log blocks as well."""


@pytest.mark.parametrize(("table_type", "column", "old", "new", "values"), CASES,
                         ids=[f"{t}-{o}-{n}" for t, _, o, n, _ in CASES])
def test_a_commit_before_a_narrowing_rewrite_reads_in_the_latest_schema_as_the_rewrite_did(
        spark, warehouse, table_type, column, old, new, values):
    """A value the rewrite nulled (a fraction, an overflow, a lost digit) reads as null, not
    truncated, when a commit from before it is read in the latest schema: by Spark and by the
    Arrow reader, from base files and from log blocks."""
    from decimal import Decimal

    schema = f"id int, {column} {old}"
    t = evonb.create_table(warehouse / "t", schema, primary_key="id", table_type=table_type)
    rows = [(i, Decimal(v) if isinstance(v, str) else v) for i, v in enumerate(values)]
    t.write(spark.createDataFrame(rows[:2], schema))
    t.write(spark.createDataFrame(rows, schema), mode="upsert")  # log blocks when mor
    before = t.history()[-1].instant
    commit = t.rewrite(f"ALTER TABLE t ALTER COLUMN {column} TYPE {new}", on_cast_error="null")
    assert commit.metadata["nulled"]  # every case has a value that does not fit

    now = dict(_rows(t.read()))
    then = dict(_rows(t.read(as_of=before, schema="latest")))
    assert then == now
    assert sum(v is None for v in now.values()) > sum(v is None for v in values)
    arrow = t.to_arrow(as_of=before, schema="latest").sort_by("id").to_pylist()
    assert {r["id"]: r[column] for r in arrow} == now
    # the commit's own schema still reads the values as written
    own = dict(_rows(t.read(as_of=before)))
    assert repr([own[i] for i, _ in rows]) == repr([v for _, v in rows])
