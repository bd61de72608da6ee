"""A value is read through every type its column had since a file stored it.

``int`` 5 stored, the column made ``double``, then ``string``: it reads ``"5.0"``, as a value
rewritten while the column was ``double`` (by a compaction, a copy-on-write write) reads. It
used to read ``"5.0"`` in Spark only while a file of the ``double``'s time was live (Spark reads
the int and double files of one physical column as double) and ``"5"`` once none was (a
delete of another row changed it), and ``"5"`` in the JVM-free reader always."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

import evonb
from tests.spark.merge_paths import MERGE_PATHS

# (first type, its value, second type, its value, third type, its value, what each reads last,
# the first value as the first commit shows it, cast to the third type)
CHAINS = [
    ("int", 5, "double", 2.5, "string", "x", ["5.0", "2.5", "x"], "5"),
    ("int", 5, "float", 2.5, "string", "x", ["5.0", "2.5", "x"], "5"),
    ("bigint", 5, "double", 2.5, "string", "x", ["5.0", "2.5", "x"], "5"),
    ("float", 0.1, "double", 0.2, "string", "x", ["0.10000000149011612", "0.2", "x"], "0.1"),
    ("int", 5, "decimal(12,2)", Decimal("1.50"), "string", "x", ["5.00", "1.50", "x"], "5"),
    ("int", 5, "bigint", 7, "double", 2.5, [5.0, 7.0, 2.5], 5.0),
]


def values(df) -> list:
    return [r.a for r in df.orderBy("id").collect()]


def arrow_values(table) -> list:
    return table.sort_by("id").column("a").to_pylist()


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["cow", "mor"])
@pytest.mark.parametrize("chain", CHAINS, ids=["-".join(c[0:6:2]) for c in CHAINS])
def test_a_value_reads_through_each_type_whatever_files_are_live(spark, warehouse, table_type,
                                                                 chain) -> None:
    t1, v1, t2, v2, t3, v3, expected, first_shown = chain
    t = evonb.create_table(warehouse / "t", f"id bigint not null, a {t1}", primary_key="id",
                           table_type=table_type)
    t.write(spark.createDataFrame([(1, v1)], f"id bigint, a {t1}"))
    first = t.history()[-1].instant
    t.alter(f"ALTER TABLE t ALTER COLUMN a TYPE {t2}")
    t.write(spark.createDataFrame([(2, v2)], f"id bigint, a {t2}"))
    second = t.history()[-1].instant
    t.alter(f"ALTER TABLE t ALTER COLUMN a TYPE {t3}")
    t.write(spark.createDataFrame([(3, v3)], f"id bigint, a {t3}"))
    assert values(t.read()) == expected
    assert arrow_values(t.to_arrow()) == expected
    # no file of the second type's time left: the first value reads the same
    t.write(spark.createDataFrame([(2,)], "id bigint"), "delete")
    assert values(t.read()) == [expected[0], expected[2]]
    assert arrow_values(t.to_arrow()) == [expected[0], expected[2]]
    # a commit read in the latest schema: each value as the commit shows it, then cast
    assert values(t.read(as_of=second, schema="latest")) == expected[:2]
    assert arrow_values(t.to_arrow(second, schema="latest")) == expected[:2]
    assert values(t.read(as_of=first, schema="latest")) == [first_shown]
    assert arrow_values(t.to_arrow(first, schema="latest")) == [first_shown]
    # a compaction stores it in the latest type: the same value
    t.compact()
    assert values(t.read()) == [expected[0], expected[2]]
    assert arrow_values(t.to_arrow()) == [expected[0], expected[2]]


@pytest.mark.spark
def test_a_filter_sees_the_value_read_through_each_type(spark, warehouse) -> None:
    """The JVM-free reader's filter on the column compares the value it reads ("5.0")."""
    import pyarrow.compute as pc

    t = evonb.create_table(warehouse / "t", "id bigint not null, a int", primary_key="id")
    t.write(spark.createDataFrame([(1, 5), (2, 7)], "id bigint, a int"))
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE double")
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE string")
    assert arrow_values(t.to_arrow(filter=pc.field("a") == "5.0")) == ["5.0"]
    assert values(t.read().filter("a = '5.0'")) == ["5.0"]
    assert arrow_values(t.to_arrow(filter=pc.field("a") >= "6")) == ["7.0"]


# (the types, the value stored in the first, what a commit of that time shows in the latest
# schema, what the latest snapshot shows). Where no cast leads from the first type to the
# last, the value goes on through the types between. Found by tests/model/test_type_chains.py:
# the first two failed in both readers (Spark's AnalysisException "cannot cast TINYINT to
# DATE", the JVM-free reader's "cannot read int8 data as date"). Where a cast leads there, a
# commit's value is cast once, as documented: a decimal narrowed in one cast keeps only a
# value that fits exactly, while the latest snapshot carries it through the text.
ACROSS = [
    (("tinyint", "string", "date"), 20, None, None),
    (("int", "string", "date", "timestamp_ntz"), 2024, dt.datetime(2024, 1, 1),
     dt.datetime(2024, 1, 1)),
    (("string", "date", "string", "date"), "2024-02-29 10:00", dt.date(2024, 2, 29),
     dt.date(2024, 2, 29)),
    (("decimal(38,6)", "string", "decimal(5,2)"), Decimal("-0.002042"), None, Decimal("0.00")),
    (("decimal(38,6)", "string", "decimal(5,2)"), Decimal("123.45"), Decimal("123.45"),
     Decimal("123.45")),
]


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["cow", "mor"])
@pytest.mark.parametrize("case", ACROSS, ids=["-".join(c[0]) for c in ACROSS])
def test_a_commit_read_in_a_type_no_one_change_leads_to(spark, warehouse, table_type,
                                                        case) -> None:
    types, stored, shown, latest = case
    t = evonb.create_table(warehouse / "t", f"id bigint not null, a {types[0]}",
                           primary_key="id", table_type=table_type)
    t.write(spark.createDataFrame([(1, stored)], f"id bigint, a {types[0]}"))
    first = t.history()[-1].instant
    for typ in types[1:]:
        t.alter(f"ALTER TABLE t ALTER COLUMN a TYPE {typ}")
    assert values(t.read(as_of=first, schema="latest")) == [shown]
    assert arrow_values(t.to_arrow(first, schema="latest")) == [shown]
    assert values(t.read()) == [latest]  # carried through every type since it was stored
    assert arrow_values(t.to_arrow()) == [latest]


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_nested_values_read_through_each_type(spark, warehouse, table_type) -> None:
    """A list element, a map value and a struct member, each int -> double -> string."""
    t = evonb.create_table(warehouse / "t", "id bigint not null, arr array<int>, "
                           "m map<string,int>, s struct<x:int, y:int>", primary_key="id",
                           table_type=table_type)
    t.write(spark.sql("select 1L id, array(5, 6) arr, map('k', 5) m, "
                      "named_struct('x', 5, 'y', 1) s"))
    paths = ("arr.element", "m.value", "s.x")
    t.alter("; ".join(f"ALTER TABLE t ALTER COLUMN {p} TYPE double" for p in paths))
    t.write(spark.sql("select 2L id, array(2.5D) arr, map('k', 2.5D) m, "
                      "named_struct('x', 2.5D, 'y', 2) s"))
    t.alter("; ".join(f"ALTER TABLE t ALTER COLUMN {p} TYPE string" for p in paths))
    t.write(spark.createDataFrame([(2,)], "id bigint"), "delete")  # no double file left
    spark_rows = [(list(r.arr), dict(r.m), r.s.x) for r in t.read().collect()]
    arrow_rows = [(r["arr"], dict(r["m"]), r["s"]["x"]) for r in t.to_arrow().to_pylist()]
    assert spark_rows == arrow_rows == [(["5.0", "6.0"], {"k": "5.0"}, "5.0")]


@pytest.mark.spark
@pytest.mark.parametrize("path", list(MERGE_PATHS))
def test_a_write_that_rewrites_the_file_keeps_the_value(spark, warehouse, path) -> None:
    """An upsert and a delete of other rows of the file, on every merge path: the stored ``int``
    5 is written again as ``"5.0"`` (the copy-on-write merges through Spark wrote ``"5"``:
    they read the stored rows without the column's types; found by the model test, seed
    3093417485), and a compaction keeps it."""
    table_type, properties = MERGE_PATHS[path]
    t = evonb.create_table(warehouse / "t", "id bigint not null, a int", primary_key="id",
                           table_type=table_type, properties=properties)
    t.write(spark.createDataFrame([(1, 5), (2, 7), (3, 9)], "id bigint, a int").coalesce(1))
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE float")
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE string")
    t.write(spark.createDataFrame([(2, "x")], "id bigint, a string"), "upsert")
    t.write(spark.createDataFrame([(3,)], "id bigint"), "delete")
    assert values(t.read()) == arrow_values(t.to_arrow()) == ["5.0", "x"]
    t.compact()
    assert values(t.read()) == arrow_values(t.to_arrow()) == ["5.0", "x"]


@pytest.mark.spark
def test_a_table_whose_layouts_kept_no_types_gains_them(spark, warehouse) -> None:
    """Layouts written before type histories were kept have no ``types``: the type changes
    made after are carried through, from the type the column had then."""
    t = evonb.create_table(warehouse / "t", "id bigint not null, a int", primary_key="id")
    t.write(spark.createDataFrame([(1, 5)], "id bigint, a int"))
    for path in (warehouse / "t" / ".evo" / "schemas").glob("*.layout.json"):
        data = json.loads(path.read_text())
        del data["types"]
        path.write_text(json.dumps(data))
    t = evonb.open_table(warehouse / "t")
    assert not t.version(t.schema.version_id)[1].typed
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE double")
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE string")
    assert t.version(t.schema.version_id)[1].typed
    assert values(t.read()) == arrow_values(t.to_arrow()) == ["5.0"]


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_a_chain_that_comes_back_to_the_latest_type(spark, warehouse, table_type) -> None:
    """``decimal(38,6) -> string -> decimal(5,2) -> string``: the values read null (the first
    ``string`` step was taken for the last one and skipped, so the decimal was narrowed in one
    step). Found by tests/model/test_type_chains.py."""
    t = evonb.create_table(warehouse / "t", "id bigint not null, a decimal(38,6)",
                           primary_key="id", table_type=table_type)
    t.write(spark.createDataFrame([(1, Decimal("-0.001666")), (2, Decimal("6.7663"))],
                                  "id bigint, a decimal(38,6)"))
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE string")
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE decimal(5,2)")
    t.write(spark.createDataFrame([(3, Decimal("1.00"))], "id bigint, a decimal(5,2)"))
    third = t.history()[-1].instant
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE string")
    expected = ["0.00", "6.77", "1.00"]
    assert values(t.read()) == arrow_values(t.to_arrow()) == expected
    assert values(t.read(as_of=third, schema="latest")) == expected
    assert arrow_values(t.to_arrow(third, schema="latest")) == expected


@pytest.mark.spark
@pytest.mark.parametrize("table_type", ["cow", "mor"])
def test_nested_values_of_a_chain_that_comes_back_to_the_latest_type(spark, warehouse,
                                                                     table_type) -> None:
    """A list element, a map value and a struct member ``string -> decimal(5,2) -> string``:
    a file stored while they were ``string`` has the latest types, and its nested values
    were taken whole (``"abc"``, ``"1.234"``) instead of carried through ``decimal(5,2)``
    (null, ``"1.23"``). Found by tests/model/test_type_chains.py."""
    t = evonb.create_table(warehouse / "t", "id bigint not null, arr array<string>, "
                           "m map<string,string>, s struct<x:string, y:int>", primary_key="id",
                           table_type=table_type)
    t.write(spark.sql("select 1L id, array('abc', '1.234') arr, map('k', '1.234') m, "
                      "named_struct('x', 'abc', 'y', 1) s"))
    paths = ("arr.element", "m.value", "s.x")
    t.alter("; ".join(f"ALTER TABLE t ALTER COLUMN {p} TYPE decimal(5,2)" for p in paths))
    t.write(spark.sql("select 2L id, array(2.5BD) arr, map('k', 2.5BD) m, "
                      "named_struct('x', 2.5BD, 'y', 2) s"))
    second = t.history()[-1].instant
    t.alter("; ".join(f"ALTER TABLE t ALTER COLUMN {p} TYPE string" for p in paths))
    expected = [([None, "1.23"], {"k": "1.23"}, None), (["2.50"], {"k": "2.50"}, "2.50")]

    def rows(spark_df, arrow_table):
        got = [(list(r.arr), dict(r.m), r.s.x) for r in spark_df.orderBy("id").collect()]
        arrow = [(r["arr"], dict(r["m"]), r["s"]["x"])
                 for r in arrow_table.sort_by("id").to_pylist()]
        return got, arrow

    assert rows(t.read(), t.to_arrow()) == (expected, expected)
    assert rows(t.read(as_of=second, schema="latest"),
                t.to_arrow(second, schema="latest")) == (expected, expected)
