"""Mistakes through the Python API: each is one evonb error and leaves the table as it was.
Also tables at paths Spark would read as glob patterns."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

import evonb
from tests.stored_config import with_stored_properties

pytestmark = pytest.mark.spark

COLUMNS = "id bigint, v double, ts bigint"


def _rows(df):
    return sorted(tuple(r) for r in df.collect())


@pytest.mark.parametrize("name", ["t[1]", "t]{a,b}*?["])
def test_a_table_at_a_path_with_glob_characters_reads_and_writes(spark, warehouse, name):
    """Spark takes read paths as glob patterns: ``[1]`` or ``{a,b}`` in the table's folder
    would match no file. Create, write, upsert into a merge-on-read table (a log block), read,
    time travel and compaction all work at such a path."""
    path = warehouse / name
    t = evonb.create_table(path, "id bigint NOT NULL, v double, ts bigint", primary_key="id",
                           precombine="ts", table_type="mor")
    first = t.write(spark.createDataFrame([(1, 1.0, 1), (2, 2.0, 1)], COLUMNS), mode="upsert")
    second = t.write(spark.createDataFrame([(1, 5.0, 2), (3, 3.0, 2)], COLUMNS), mode="upsert")
    assert second.action == "deltacommit"
    t = evonb.open_table(path)
    assert _rows(t.read()) == [(1, 5.0, 2), (2, 2.0, 1), (3, 3.0, 2)]
    assert _rows(t.read(as_of=first.instant)) == [(1, 1.0, 1), (2, 2.0, 1)]
    compaction = t.compact()
    assert compaction is not None and compaction.action == "compaction"
    assert _rows(t.read()) == [(1, 5.0, 2), (2, 2.0, 1), (3, 3.0, 2)]
    assert _rows(t.read(as_of=second.instant)) == [(1, 5.0, 2), (2, 2.0, 1), (3, 3.0, 2)]


def test_a_partitioned_copy_on_write_table_at_a_glob_path(spark, warehouse):
    t = evonb.create_table(warehouse / "p[0-9]", "id bigint NOT NULL, city string, ts bigint",
                           primary_key="id", precombine="ts", partition_by="city")
    t.write(spark.createDataFrame([(1, "paris", 1), (2, "oslo", 1)], "id bigint, city string, "
                                  "ts bigint"), mode="upsert")
    t.write(spark.createDataFrame([(2, "oslo", 2)], "id bigint, city string, ts bigint"),
            mode="upsert")
    assert _rows(t.read()) == [(1, "paris", 1), (2, "oslo", 2)]


def _state(table) -> tuple:
    fresh = evonb.open_table(table.path)
    return ([c.instant for c in fresh.history()], _rows(fresh.read()), str(fresh.schema.struct),
            dict(fresh.properties))


def test_api_mistakes_are_evonb_errors_and_change_nothing(spark, warehouse):
    import pandas as pd

    t = evonb.create_table(warehouse / "t", "id bigint NOT NULL, v double, ts bigint",
                           primary_key="id", precombine="ts")
    t.write(spark.createDataFrame([(1, 1.0, 1)], COLUMNS))
    before = _state(t)
    cases = [
        (lambda: t.write([(2, 2.0, 2)]), "df must be a Spark DataFrame, not list",
         "spark.createDataFrame(rows"),
        (lambda: t.write(pd.DataFrame({"id": [2]})),
         "df must be a Spark DataFrame, not pandas.core.frame.DataFrame",
         "spark.createDataFrame(data)"),
        (lambda: t.alter(None), "ddl must be text (a str), not NoneType", "pass a string"),
        (lambda: t.alter(5), "ddl must be text (a str), not int", "pass a string"),
        (lambda: t.clean(retain_commits="abc"),
         "retain_commits must be a whole number of at least 1, not abc", None),
        (lambda: t.clean(retain_hours=float("nan")),
         "retain_hours must be a finite number of at least 0, not nan", None),
        (lambda: t.clean(keep_schema_versions=float("inf")),
         "keep_schema_versions must be a whole number of at least 1, not inf", None),
        (lambda: t.clean(retain_commits=True),
         "retain_commits must be a whole number of at least 1, not True", None),
    ]
    for call, message, hint in cases:
        with pytest.raises(evonb.InvalidArgumentError) as info:
            call()
        assert str(info.value).startswith(message), str(info.value)
        if hint:
            assert hint in info.value.hint
    assert _state(t) == before


def test_a_one_megabyte_bad_statement_gives_a_short_error_with_the_caret(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint")
    before = _state(t)
    cases = [
        ("ALTER TABLE t ADD COLUMN x " + "a" * 1_000_000 + " NOT NULL", "a"),
        ("ALTER TABLE t ADD COLUMN x int DEFAULT '" + "b" * 1_000_000, "'"),
        ("ALTER TABLE t ADD COLUMN x int " + "+" * 1_000_000, "+"),
        ("ALTER TABLE t ADD COLUMNS (" + "c int, " * 150_000 + "d intt)", "intt"),
    ]
    for ddl, at in cases:
        column = ddl.index(at) + 1
        with pytest.raises(evonb.DDLSyntaxError) as info:
            t.alter(ddl)
        text = str(info.value)
        assert len(text) <= 1024, len(text)
        assert f"at line 1, column {column} " in text
        assert info.value.column == column
        excerpt, caret = info.value.excerpt.splitlines()
        assert caret.strip() == "^" and len(excerpt) <= 130
        under = caret.index("^")
        assert excerpt[under] == ddl[column - 1]
    # a statement that parses but names no column: the name and the statement are cut too
    with pytest.raises(evonb.ColumnNotFoundError) as info:
        t.alter("ALTER TABLE t ADD COLUMN x int; ALTER TABLE t DROP COLUMN " + "n" * 1_000_000)
    shown = "\n".join([str(info.value), *info.value.__notes__])
    assert len(shown) <= 1024, len(shown)
    assert shown.startswith("Column not found: 'nnnnn")
    assert "in DDL statement 2 of 2: ALTER TABLE t DROP COLUMN nnn" in shown
    assert _state(t) == before


def test_a_location_that_cannot_be_created_is_refused_and_nothing_is_made(warehouse):
    blocker = warehouse / "a-file"
    blocker.write_text("not a folder")
    for path, reason in [("/proc/nope", "No such file or directory"),
                         ("/proc/nope/deeper/t", "No such file or directory"),
                         (str(blocker / "t"), "Not a directory")]:
        with pytest.raises(evonb.TableLocationError) as info:
            evonb.create_table(path, "id bigint")
        assert str(info.value).startswith(f"Cannot create a table at {path}: {reason}")
        assert info.value.path == path
        assert "choose a folder you can create and write" in info.value.hint
    assert not (warehouse / "proc").exists()
    assert blocker.read_text() == "not a folder"
    assert sorted(p.name for p in warehouse.iterdir()) == ["a-file"]


@pytest.mark.parametrize(("given", "message"), [
    ({"partition_by": 5}, "partition_by must be a column name or a list of column names, "
                          "not int"),
    ({"primary_key": 5}, "primary_key must be a column name or a list of column names, not int"),
    ({"primary_key": ["id", 3]}, "primary_key must be a column name or a list of column names, "
                                 "not a list holding 3"),
    ({"partition_by": ["v", None]}, "partition_by must be a column name or a list of column "
                                    "names, not a list holding None"),
    ({"properties": "evonb.mor.log_format=parquet"}, "properties must be a dict, not str"),
    ({"precombine": 5}, "precombine must be text (a str), not int"),
    ({"name": 5}, "name must be text (a str), not int"),
    ({"path": None}, "A table's path must be text or a path, not NoneType"),
    ({"path": 5}, "A table's path must be text or a path, not int"),
])
def test_create_table_arguments_of_the_wrong_kind(warehouse, given, message):
    """Each was a raw ``TypeError`` or ``AttributeError`` (``'int' object is not iterable``);
    now an ``InvalidArgumentError`` naming the argument, with an example, and nothing made."""
    kwargs = dict(given)
    path = kwargs.pop("path", warehouse / "t")
    with pytest.raises(evonb.InvalidArgumentError) as info:
        evonb.create_table(path, "id bigint not null, v string", **kwargs)
    assert str(info.value).startswith(message)
    assert "e.g." in info.value.hint
    assert list(warehouse.iterdir()) == []


@pytest.mark.parametrize(("properties", "message"), [
    ({"owner": None}, "Table property owner needs a value"),
    ({5: "x"}, "Table property names are text, not int (5)"),
    ({" ": "x"}, "Table property name ' ' is empty"),
    ({"owner": ["ann"]}, "Table property owner must be text, a number or a boolean, not list"),
    ({"owner": {"name": "ann"}}, "Table property owner must be text, a number or a boolean, "
                                 "not dict"),
])
def test_property_values_of_the_wrong_kind(warehouse, properties, message):
    """``create_table`` stored ``None`` as the text ``'None'``, a name ``5`` as ``'5'`` and a
    list as its repr; ``set_properties`` refused only the None, with a plain ``EvoError``. Both
    now raise one ``InvalidArgumentError`` naming the property, and change nothing."""
    with pytest.raises(evonb.InvalidArgumentError) as info:
        evonb.create_table(warehouse / "t", "id bigint", properties=properties)
    assert str(info.value).startswith(message)
    assert list(warehouse.iterdir()) == []
    t = evonb.create_table(warehouse / "t", "id bigint", properties={
        "owner": "bo", "n": np.int64(2), "on": np.bool_(True), "rate": Decimal("0.50")})
    assert dict(t.properties) == {"owner": "bo", "n": "2", "on": "true", "rate": "0.50"}
    with pytest.raises(evonb.InvalidArgumentError) as info:
        t.set_properties(properties)
    assert str(info.value).startswith(message)
    assert dict(evonb.open_table(t.path).properties) == {"owner": "bo", "n": "2", "on": "true",
                                                         "rate": "0.50"}


@pytest.mark.parametrize(("properties", "message"), [
    ({"owner": None}, "Table property owner needs a value"),
    ({"owner": ["ann"]}, "Table property owner must be text, a number or a boolean, not list"),
    ("owner=ann", "properties must be a dict, not str"),
])
def test_convert_refuses_property_values_of_the_wrong_kind(warehouse, properties, message):
    """``convert`` stored such values as their repr, and a str of properties failed with an
    AttributeError; nothing is written now."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = warehouse / "data"
    folder.mkdir()
    pq.write_table(pa.table({"id": [1, 2]}), folder / "part-0.parquet")
    with pytest.raises(evonb.InvalidArgumentError) as info:
        evonb.convert(folder, properties=properties)
    assert str(info.value).startswith(message)
    assert sorted(p.name for p in folder.iterdir()) == ["part-0.parquet"]
    t = evonb.convert(folder, properties={"owner": "bo", "n": 2})
    assert dict(t.properties)["owner"] == "bo" and dict(t.properties)["n"] == "2"


def test_partition_by_none_is_no_partition_column(warehouse):
    """As pyspark's ``partitionBy`` takes None: ``partition_by=None`` (a TypeError before)."""
    t = evonb.create_table(warehouse / "t", "id bigint not null, v string", partition_by=None,
                           primary_key=None)
    assert t.partition_by == () and evonb.open_table(t.path).partition_by == ()


def test_type_widening_on_write_can_be_an_error(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint NOT NULL, v double, ts bigint",
                           primary_key="id", precombine="ts",
                           properties={"evonb.write.type_widening": "error"})
    t.write(spark.createDataFrame([(1, 1.0, 1)], COLUMNS))
    before = _state(t)
    with pytest.raises(evonb.WriteSchemaError) as info:
        t.write(spark.createDataFrame([(2, "x", 1)], "id bigint, v string, ts bigint"))
    assert str(info.value).startswith(
        "Incoming column 'v' is string: writing it would widen the column from double to "
        "string, and the table property evonb.write.type_widening is 'error'")
    assert (info.value.path, str(info.value.old), str(info.value.new)) == ("v", "double",
                                                                           "string")
    assert "evonb.write.type_widening='auto'" in info.value.hint
    assert _state(t) == before
    # a narrower type is cast up as before: no retype, no error
    t.write(spark.createDataFrame([(2, 2, 1)], "id bigint, v int, ts bigint"))
    assert str(t.schema.struct) == "struct<id:bigint,v:double,ts:bigint>"
    assert _rows(t.read()) == [(1, 1.0, 1), (2, 2.0, 1)]
    # 'auto' (the default) widens the column, as before
    t.set_properties({"evonb.write.type_widening": "auto"})
    t.write(spark.createDataFrame([(3, "x", 1)], "id bigint, v string, ts bigint"))
    assert str(t.schema.struct) == "struct<id:bigint,v:string,ts:bigint>"


def test_a_bad_strict_write_property_value_is_refused(spark, warehouse):
    with pytest.raises(evonb.EvoError) as info:
        evonb.create_table(warehouse / "t", "id bigint NOT NULL, v double", primary_key="id",
                           properties={"evonb.write.insert_duplicates": "drop"})
    assert "evonb.write.insert_duplicates='drop' is not one of allow, error, combine" in str(
        info.value)
    assert not (warehouse / "t").exists()
    # a value stored before creation checked it is refused by the write that reads it
    t = with_stored_properties(
        evonb.create_table(warehouse / "t", "id bigint NOT NULL, v double", primary_key="id"),
        {"evonb.write.insert_duplicates": "drop"})
    before = _state(t)
    with pytest.raises(evonb.EvoError) as info:
        t.write(spark.createDataFrame([(1, 1.0)], "id bigint, v double"))
    assert "evonb.write.insert_duplicates='drop' is not one of allow, error, combine" in str(
        info.value)
    with pytest.raises(evonb.EvoError) as info:
        t.set_properties({"evonb.write.type_widening": "strict"})
    assert "evonb.write.type_widening='strict' is not one of auto, error" in str(info.value)
    assert _state(t) == before


def test_duplicate_keys_are_refused_by_default(spark, warehouse):
    t = evonb.create_table(warehouse / "d", "id bigint NOT NULL, v double, ts bigint",
                           primary_key="id", precombine="ts")
    before = _state(t)
    with pytest.raises(evonb.DataValidationError) as info:
        t.write(spark.createDataFrame([(7, 1.0, 1), (7, 2.0, 2)], COLUMNS))
    assert str(info.value).startswith("1 record keys (id) occur more than once")
    assert info.value.examples == [7]
    assert _state(t) == before
    keyless = evonb.create_table(warehouse / "k", "id bigint, v double, ts bigint")
    keyless.write(spark.createDataFrame([(7, 1.0, 1), (7, 2.0, 2)], COLUMNS))
    assert len(keyless.read().collect()) == 2  # no record key, no duplicates


def test_duplicate_record_keys_in_one_insert(spark, warehouse):
    rows = [(1, 1.0, 1), (1, 2.0, 3), (2, 5.0, 1), (1, 3.0, 2), (2, 6.0, 1), (3, 7.0, 1)]
    tables = {}
    for policy in ("allow", "error", "combine"):
        props = {"evonb.write.insert_duplicates": policy} if policy else {}
        tables[policy] = evonb.create_table(
            warehouse / f"t-{policy}", "id bigint NOT NULL, v double, ts bigint",
            primary_key="id", precombine="ts", properties=props)
    # allow: every row is written, as before
    tables["allow"].write(spark.createDataFrame(rows, COLUMNS))
    assert _rows(tables["allow"].read()) == sorted(rows)
    strict = tables["error"]  # error, also the default (test_duplicate_keys_are_refused_...)
    before = _state(strict)
    with pytest.raises(evonb.DataValidationError) as info:
        strict.write(spark.createDataFrame(rows, COLUMNS))
    assert str(info.value).startswith(
        "2 record keys (id) occur more than once in the rows inserted (5 rows), e.g. ")
    assert "evonb.write.insert_duplicates is 'error'" in str(info.value)
    assert info.value.count == 2 and sorted(info.value.examples) == [1, 2]
    assert "mode='upsert'" in info.value.hint
    assert _state(strict) == before
    strict.write(spark.createDataFrame([(1, 1.0, 1), (2, 2.0, 1)], COLUMNS))  # unique keys
    assert _rows(strict.read()) == [(1, 1.0, 1), (2, 2.0, 1)]
    # combine: one row per key, the largest precombine value (on a tie, the later row)
    combined = tables["combine"]
    combined.write(spark.createDataFrame(rows, COLUMNS).coalesce(1))
    assert _rows(combined.read()) == [(1, 2.0, 3), (2, 6.0, 1), (3, 7.0, 1)]


def test_the_hidden_column_name_is_reserved(spark, warehouse):
    """``_evo_commit_time`` is in every data file: a column of that name is refused by
    create, DDL and writes (found by the fuzz test: ADD COLUMNS accepted it)."""
    with pytest.raises(evonb.SchemaEvolutionError) as info:
        evonb.create_table(warehouse / "r", "id bigint, _EVO_commit_time bigint")
    assert "Column name '_EVO_commit_time' is reserved" in str(info.value)
    assert not (warehouse / "r" / ".evo").exists()
    t = evonb.create_table(warehouse / "t", COLUMNS)
    t.write(spark.createDataFrame([(1, 1.0, 1)], COLUMNS))
    before = _state(t)
    for ddl in ("ALTER TABLE t ADD COLUMNS (_evo_commit_time int)",
                "ALTER TABLE t RENAME COLUMN v TO _evo_commit_time"):
        with pytest.raises(evonb.SchemaEvolutionError, match="is reserved"):
            t.alter(ddl)
    with pytest.raises(evonb.SchemaEvolutionError) as info:
        t.write(t.read(meta_columns=True))
    assert "df.drop('_evo_commit_time')" in info.value.hint
    assert _state(t) == before
    t.write(t.read(meta_columns=True).drop("_evo_commit_time"))
    assert sorted(map(tuple, t.read().collect())) == [(1, 1.0, 1), (1, 1.0, 1)]
