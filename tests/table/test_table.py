"""DDL on tables: one commit per change, no data file touched, clean errors, nothing half-done."""

from __future__ import annotations

import hashlib

import pytest

import evonb
from evonb.errors import (
    ColumnNotFoundError,
    ConflictError,
    DataValidationError,
    DDLSyntaxError,
    SchemaEvolutionError,
    TableExistsError,
    TableNotFoundError,
)

pytestmark = pytest.mark.spark


def _fingerprint(root):
    """Every file under the table with its content hash."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "lock"}


@pytest.fixture
def people(spark, warehouse):
    t = evonb.create_table(warehouse / "people",
                           "id bigint not null, name string, age int, city string",
                           primary_key="id", partition_by="city")
    t.write(spark.createDataFrame([(1, "ann", 30, "oslo"), (2, None, 40, "rome")],
                                  "id bigint, name string, age int, city string"))
    return t


def test_alter_touches_no_data_file(people):
    data_before = {p: h for p, h in _fingerprint(people.root).items() if p.endswith(".parquet")}
    d = people.alter("ALTER TABLE people ALTER COLUMN age TYPE bigint; "
                     "ALTER TABLE people RENAME COLUMN name TO full_name")
    assert [c.kind for c in d.changes] == ["renamed", "retyped"]
    data_after = {p: h for p, h in _fingerprint(people.root).items() if p.endswith(".parquet")}
    assert data_after == data_before
    last = people.history()[-1]
    assert (last.action, last.files_added, last.files_removed) == ("alter", 0, 0)
    assert people.schema.version_id == last.instant


@pytest.mark.parametrize(("ddl", "error"), [
    ("ALTER TABLE people ALTER COLUMN age TYPE smallint", SchemaEvolutionError),
    ("ALTER TABLE people ALTER COLUMN nmae TYPE string", ColumnNotFoundError),
    ("ALTER TABLE people ADD COLUMN x int NOT NULL", SchemaEvolutionError),
    ("ALTER TABLE people ADD COLUMN NAME string", SchemaEvolutionError),
    ("ALTER TABLE people DROP COLUMN id", SchemaEvolutionError),
    ("ALTER TABLE people ALTER COLUMN city TYPE string; ALTER TABLE people DROP COLUMN city",
     SchemaEvolutionError),
    ("ALTER TABLE people ADD COLUMN ok int; ALTER TABLE people ADD COLUMN bad intt",
     DDLSyntaxError),
    ("ALTER TABLE people RENAME COLUMN age TO", DDLSyntaxError),
    # the name is a placeholder here, but two names are a mistake
    ("ALTER TABLE people ADD COLUMN x int; ALTER TABLE orders DROP COLUMN city",
     SchemaEvolutionError),
])
def test_rejected_ddl_changes_nothing(people, ddl, error):
    before = _fingerprint(people.root)
    with pytest.raises(error):
        people.alter(ddl)
    assert _fingerprint(people.root) == before


def test_one_table_named_two_ways_is_one_table(people):
    change = people.alter("ALTER TABLE people ADD COLUMN x int; "
                          "ALTER TABLE `people` ADD COLUMN y int")
    assert [c.kind for c in change.changes] == ["added", "added"]


def test_errors_name_the_column_and_suggest(people):
    with pytest.raises(ColumnNotFoundError) as err:
        people.alter("ALTER TABLE people RENAME COLUMN nmae TO x")
    assert err.value.suggestion == "name"
    with pytest.raises(SchemaEvolutionError, match=r"age: int -> smallint") as err2:
        people.alter("ALTER TABLE people ALTER COLUMN age TYPE smallint")
    assert "bigint" in str(err2.value)
    with pytest.raises(DDLSyntaxError) as err3:
        people.alter("ALTER TABLE people\n  ADD COLUMN x intt")
    assert (err3.value.line, err3.value.token) == (2, "intt")


def test_keys_can_be_renamed_but_not_dropped_or_retyped(spark, people):
    with pytest.raises(SchemaEvolutionError, match="Key column 'city' cannot be retyped"):
        people.alter("ALTER TABLE people ALTER COLUMN city TYPE date")
    with pytest.raises(SchemaEvolutionError, match="Key column 'id' cannot be dropped"):
        people.alter("ALTER TABLE people DROP COLUMN id")
    people.alter("ALTER TABLE people RENAME COLUMN id TO person_id")
    assert people.primary_key == ("person_id",)
    people.write(spark.createDataFrame([(1, "anna", 31, "oslo")],
                                       "person_id bigint, name string, age int, city string"),
                 "upsert")
    rows = sorted(tuple(r) for r in people.read().collect())
    assert rows == [(1, "anna", 31, "oslo"), (2, None, 40, "rome")]


def test_set_not_null_checks_the_data(people):
    with pytest.raises(DataValidationError, match="1 rows hold null") as err:
        people.alter("ALTER TABLE people ALTER COLUMN name SET NOT NULL")
    assert err.value.count == 1
    d = people.alter("ALTER TABLE people ALTER COLUMN age SET NOT NULL")
    assert [(c.kind, c.new) for c in d.changes] == [("nullability", False)]
    assert not people.schema.find("age").nullable


def test_update_schema_context_commits_only_on_clean_exit(people):
    versions = len(people.schemas())
    with pytest.raises(RuntimeError), people.update_schema() as u:
        u.add_column("nick", "string")
        raise RuntimeError("changed my mind")
    assert len(people.schemas()) == versions and not people.schema.has("nick")
    with people.update_schema() as u:
        u.add_column("nick", "string", default="none").move_after("nick", "id")
        preview = u.preview()
        assert [c.kind for c in preview.changes] == ["added"]
    assert people.schema.column_names == ["id", "nick", "name", "age", "city"]
    rows = sorted(tuple(r) for r in people.read().select("id", "nick").collect())
    assert rows == [(1, "none"), (2, "none")]


def test_preview_alter_commits_nothing(people):
    before = _fingerprint(people.root)
    d = people.preview_alter("ALTER TABLE people DROP COLUMN age")
    assert [c.kind for c in d.changes] == ["dropped"]
    assert _fingerprint(people.root) == before


def test_ddl_against_ddl_validates_against_the_newer_schema(people, spark):
    other = evonb.open_table(people.root, spark=spark)
    people.alter("ALTER TABLE people RENAME COLUMN age TO years")
    with pytest.raises(ColumnNotFoundError):
        other.alter("ALTER TABLE people ALTER COLUMN age TYPE bigint")
    other.alter("ALTER TABLE people ALTER COLUMN years TYPE bigint")
    assert str(people.schema.find("years").type) == "bigint"


def test_stale_schema_update_is_a_conflict(people):
    from evonb.schema import SchemaUpdate

    stale = SchemaUpdate(people.schema).add_column("a", "int")
    people.alter("ALTER TABLE people ADD COLUMN b int")
    with pytest.raises(ConflictError, match="schema changed"):
        people.commit_schema_update(stale)
    assert people.schema.has("b") and not people.schema.has("a")


def test_create_and_open_errors(warehouse, people):
    with pytest.raises(TableExistsError):
        evonb.create_table(people.root, "a int")
    assert evonb.create_table(people.root, "a int", exist_ok=True).schema == people.schema
    with pytest.raises(TableNotFoundError, match="No evonb table"):
        evonb.open_table(warehouse / "nothing")
    with pytest.raises(ColumnNotFoundError):
        evonb.create_table(warehouse / "bad", "a int", primary_key="b")
    assert not (warehouse / "bad" / ".evo" / "table.json").exists()


@pytest.mark.parametrize(("given", "message"), [
    ({"primary_key": "s.x"}, r"record key column must be a top-level column: 's\.x' is inside 's'"),
    ({"primary_key": "id", "partition_by": "s.x"}, r"partition column .* 's\.x' is inside 's'"),
    # a nested precombine column was accepted, then every upsert failed in Spark or pyarrow
    ({"primary_key": "id", "precombine": "s.x"}, r"precombine column .* 's\.x' is inside 's'"),
    ({"primary_key": "id", "precombine": "s"}, r"precombine column must be of a primitive type"),
    ({"primary_key": "xs"}, r"record key column must be of a primitive type: 'xs' is array"),
])
def test_key_partition_and_precombine_columns_are_top_level_primitives(warehouse, given,
                                                                        message):
    with pytest.raises(SchemaEvolutionError, match=message) as found:
        evonb.create_table(warehouse / "k", "id bigint not null, s struct<x: bigint>, "
                           "xs array<int>", **given)
    assert found.value.hint and "column" in found.value.hint
    assert not (warehouse / "k").exists()  # refused before anything is made


def test_create_from_spark_schema_and_schema_object(spark, warehouse):
    df = spark.createDataFrame([(1, "a")], "id int, s string")
    t = evonb.create_table(warehouse / "fromspark", df.schema)
    assert str(t.schema.struct) == "struct<id:int,s:string>"
    t2 = evonb.create_table(warehouse / "fromschema", t.schema)
    assert t2.schema == t.schema
