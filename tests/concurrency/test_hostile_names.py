"""Names with spaces, dots, unicode, quotes and reserved words round-trip through DDL, storage
and Spark: create (backquoted DDL), write, read, upsert, rename, filter."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

import evonb
from evonb.table.check import check_table

pytestmark = pytest.mark.spark

NAMES = ["my id", "a.b", "名前", "it's", 'say "hi"', "select", "from", "über café", "x`y"]


def q(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def test_hostile_names_round_trip(spark, warehouse) -> None:
    key, *others = NAMES
    ddl = ", ".join([f"{q(key)} bigint not null", *(f"{q(n)} string" for n in others),
                     f"{q('struct.col')} struct<{q('in ner')}:int, {q('ü.v')}:string>"])
    t = evonb.create_table(warehouse / "odd", ddl, primary_key=key)
    assert [f.name for f in t.schema.fields] == [*NAMES, "struct.col"]
    spark_schema = t.read().schema
    data = [(i, *(f"{n}-{i}" for n in others), (i * 10, f"ü{i}")) for i in range(4)]
    t.write(spark.createDataFrame(data, spark_schema))
    df = t.read()
    assert df.columns == [*NAMES, "struct.col"]
    assert sorted(tuple(r)[:3] for r in df.collect()) == [(i, f"a.b-{i}", f"名前-{i}")
                                                          for i in range(4)]
    got = df.filter(F.col(q("a.b")) == "a.b-2").select(q("it's"), q("struct.col") + ".`in ner`")
    assert [tuple(r) for r in got.collect()] == [("it's-2", 20)]

    upsert = spark.createDataFrame([(2, *(f"new-{n}" for n in others), (7, "z"))], spark_schema)
    t.write(upsert, "upsert")
    t.alter(f"ALTER TABLE odd RENAME COLUMN {q('a.b')} TO {q('c.d')}")
    t.alter(f"ALTER TABLE odd RENAME COLUMN {q('select')} TO {q('where')}")
    t.alter(f"ALTER TABLE odd RENAME COLUMN {q(key)} TO {q('the key')}")
    t.alter(f"ALTER TABLE odd RENAME COLUMN {q('struct.col')}.{q('ü.v')} TO {q('ö w')}")
    t.alter(f"ALTER TABLE odd ADD COLUMNS ({q('a.b')} int)")  # the old name, a new column
    t = evonb.open_table(t.path)
    df = t.read()
    assert df.columns[:3] == ["the key", "c.d", "名前"] and "where" in df.columns
    assert df.columns[-1] == "a.b"
    row = df.filter(F.col(q("the key")) == 2).collect()[0].asDict()
    assert row["c.d"] == "new-a.b" and row["where"] == "new-select" and row["a.b"] is None
    assert row["struct.col"]["ö w"] == "z" and row["x`y"] == "new-x`y"
    assert df.filter(F.col(q("c.d")).startswith("a.b-")).count() == 3
    assert t.read(columns=["the key", q("c.d")]).columns == ["the key", "c.d"]
    assert t.primary_key == ("the key",)
    assert check_table(t.path).ok
