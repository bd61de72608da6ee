"""``revert_schema`` and ``preview_revert`` without Spark: the fields and IDs of the version
reverted to, ``max_column_id`` kept, the physical names of restored columns, the commit it
records, and the refusals."""

from __future__ import annotations

import dataclasses

import pytest

from evonb.errors import CommitNotFoundError, EvoError, SchemaEvolutionError
from evonb.table.table import BaseTable, create_table, open_table


@pytest.fixture
def t(tmp_path) -> BaseTable:
    """v0 create; v1 rename name -> full_name; v2 drop email; v3 add email (ID 5); v4 add
    extra (ID 6)."""
    table = create_table(tmp_path / "t", "id bigint not null, name string, email string, age int",
                         primary_key="id")
    table.alter("ALTER TABLE t RENAME COLUMN name TO full_name")
    table.alter("ALTER TABLE t DROP COLUMN email")
    table.alter("ALTER TABLE t ADD COLUMN email string")
    table.alter("ALTER TABLE t ADD COLUMN extra double")
    return table


def _fields(schema):
    return [(f.id, f.name, str(f.type), f.nullable) for f in schema.fields]


def test_revert_brings_back_the_old_ids(t):
    assert _fields(t.schema) == [(1, "id", "bigint", False), (2, "full_name", "string", True),
                                 (4, "age", "int", True), (5, "email", "string", True),
                                 (6, "extra", "double", True)]
    v4 = t.schema.version_id
    change = t.revert_schema("v1")
    assert change.committed and change.target_name == "v1"
    assert change.target == t.version_ids()[1]
    assert (change.restored, change.removed, change.relaxed) == ((3,), (5, 6), ())
    assert [str(c) for c in change] == ["added    3: email (string)",
                                        "dropped  5: email (string)",
                                        "dropped  6: extra (double)"]
    assert _fields(t.schema) == [(1, "id", "bigint", False), (2, "full_name", "string", True),
                                 (3, "email", "string", True), (4, "age", "int", True)]
    assert t.schema.max_column_id == 6  # never decreases: 5 and 6 are never given again
    assert change.before.version_id == v4 and change.after == t.schema
    assert t.version_name(t.schema.version_id) == "v5"
    # The restored column keeps its physical name; the re-added one had its own.
    _, old = t.version(v4)
    _, layout = t.version(t.schema.version_id)
    assert old.physical[5] == "email__5"
    assert dict(layout.physical) == {1: "id", 2: "name", 3: "email", 4: "age"}
    assert {"email", "email__5", "extra"} <= layout.used[-1]


def test_the_commit_records_the_revert(t):
    target = t.version_ids()[1]
    base = t.schema.version_id
    t.revert_schema("v1")
    last = t.timeline.last_completed()
    assert (last.action, last.operation) == ("alter", "revert")
    meta = last.metadata
    assert (meta["revert_to"], meta["base_version"], meta["schema_version"]) == (
        target, base, last.instant)
    assert [(c["kind"], c["field_id"]) for c in meta["changes"]] == [
        ("added", 3), ("dropped", 5), ("dropped", 6)]
    assert meta["added"] == [] and meta["removed"] == []
    assert t.history()[-1].operation == "revert"
    # Opened again (as older code would read it): an alter like any other.
    again = open_table(t.root)
    assert again.schema.field_ids() == [1, 2, 3, 4]
    assert "v5 restored string" in str(again.lineage())


def test_revert_to_v0_renames_back(t):
    change = t.revert_schema("v0")
    assert [str(c) for c in change][-1] == "renamed  2: full_name -> name"
    assert t.schema.column_names == ["id", "name", "email", "age"]
    assert t.schema.field_ids() == [1, 2, 3, 4]


def test_the_revert_itself_can_be_reverted(t):
    v4 = t.version_ids()[4]
    t.revert_schema("v1")
    t.revert_schema(v4)  # by version id
    assert _fields(t.schema) == [(1, "id", "bigint", False), (2, "full_name", "string", True),
                                 (4, "age", "int", True), (5, "email", "string", True),
                                 (6, "extra", "double", True)]
    _, layout = t.version(t.schema.version_id)
    assert (layout.physical[5], layout.physical[6]) == ("email__5", "extra")
    assert t.schema.max_column_id == 6


def test_revert_to_a_commit(t):
    first_alter = t.history()[1].instant
    t.revert_schema(first_alter)  # the schema in force at that commit: v1
    assert t.schema.field_ids() == [1, 2, 3, 4]
    assert t.schema.column_names == ["id", "full_name", "email", "age"]
    t.revert_schema("@0")  # the create
    assert t.schema.column_names == ["id", "name", "email", "age"]


def test_preview_commits_nothing(t):
    commits = len(t.history())
    preview = t.preview_revert("v2")
    assert not preview.committed
    assert [str(c) for c in preview] == ["dropped  5: email (string)",
                                         "dropped  6: extra (double)"]
    assert preview.note == (
        f"Reverts the schema to v2 ({t.version_ids()[2]}). Removed: email (ID 5), extra (ID 6)."
        " Metadata only: no data file is touched. Nothing was committed.")
    assert repr(preview).endswith(preview.note)
    assert "Nothing was committed" in preview._repr_html_()
    assert len(t.history()) == commits and t.schema.field_ids() == [1, 2, 4, 5, 6]


def test_nothing_to_revert(t):
    with pytest.raises(SchemaEvolutionError, match=r"Nothing to revert: v4 \(\d{17}\) is the "
                       r"current schema of table 't'"):
        t.revert_schema("v4")
    with pytest.raises(SchemaEvolutionError, match="Nothing to revert: v4"):
        t.revert_schema("latest")
    t.revert_schema("v1")
    with pytest.raises(SchemaEvolutionError, match=r"Nothing to revert: the current schema of "
                       r"table 't' \(v5\) already has the fields of v1"):
        t.revert_schema("v1")
    assert len(t.history()) == 6


def test_unknown_targets(t):
    with pytest.raises(CommitNotFoundError, match="No such schema version: 'v9'") as err:
        t.revert_schema("v9")
    assert err.value.hint == "table 't' has 5 schema versions (v0 .. v4)"
    with pytest.raises(CommitNotFoundError):
        t.revert_schema("not a commit")
    with pytest.raises(CommitNotFoundError):
        t.revert_schema("")
    assert len(t.history()) == 5


def test_a_widened_column_cannot_be_narrowed(t):
    t.alter("ALTER TABLE t ALTER COLUMN age TYPE bigint")
    with pytest.raises(SchemaEvolutionError) as err:
        t.revert_schema("v1")
    assert err.value.message == (
        f"Cannot revert to v1 ({t.version_ids()[1]}): column 'age' (ID 4) is int there but "
        "bigint in v5, and values written as bigint may not fit int")
    assert err.value.hint.startswith("revert to v5 or a later version")
    assert (err.value.path, err.value.field_id) == ("age", 4)
    t.alter("ALTER TABLE t ADD COLUMN z int")
    t.revert_schema("v5")  # a version after the widening: allowed
    assert _fields(t.schema) == [(1, "id", "bigint", False), (2, "full_name", "string", True),
                                 (4, "age", "bigint", True), (5, "email", "string", True),
                                 (6, "extra", "double", True)]


def test_a_dropped_then_restored_widened_column(tmp_path):
    t = create_table(tmp_path / "w", "id int, n int")
    t.alter("ALTER TABLE w ALTER COLUMN n TYPE bigint")
    t.alter("ALTER TABLE w DROP COLUMN n")
    with pytest.raises(SchemaEvolutionError, match=r"column 'n' \(ID 2\) is int there but "
                       "bigint in v1"):
        t.revert_schema("v0")
    t.revert_schema("v1")
    assert _fields(t.schema) == [(1, "id", "int", True), (2, "n", "bigint", True)]


def test_key_columns_are_refused(tmp_path):
    t = create_table(tmp_path / "k", "id bigint not null, ts bigint, city string",
                     primary_key="id", precombine="ts", partition_by="city")
    t.alter("ALTER TABLE k RENAME COLUMN id TO key; ALTER TABLE k RENAME COLUMN city TO town")
    t.revert_schema("v0")  # renaming key and partition columns back is fine
    assert t.schema.column_names == ["id", "ts", "city"]
    assert (t.primary_key, t.partition_by, t.precombine) == (("id",), ("city",), "ts")
    # A precombine column the older version does not have (as an adopted table may have).
    t.alter("ALTER TABLE k ADD COLUMN seq bigint")
    config = dataclasses.replace(t.raw_config, precombine="seq", precombine_id=4)
    config.save(t.root)
    t.invalidate()
    with pytest.raises(SchemaEvolutionError) as err:
        t.revert_schema("v1")
    assert err.value.message == (
        f"Cannot revert to v1 ({t.version_ids()[1]}): the precombine column 'seq' (ID 4) is "
        "not in it")
    assert "key, precombine and partition columns cannot change" in err.value.hint


def test_a_key_name_held_by_another_column_is_named(tmp_path):
    t = create_table(tmp_path / "k2", "id bigint not null, pk string", primary_key="id")
    t.alter("ALTER TABLE k2 DROP COLUMN pk")
    t.alter("ALTER TABLE k2 ADD COLUMN pk bigint")
    config = dataclasses.replace(t.raw_config, primary_key=("pk",), primary_key_ids=(3,))
    config.save(t.root)
    with pytest.raises(SchemaEvolutionError, match=r"the record key column 'pk' \(ID 3\) is not "
                       r"in it \(it has a column 'pk', but that is another column, ID 2\)"):
        t.revert_schema("v0")


def test_a_restored_not_null_column_comes_back_nullable(tmp_path):
    t = create_table(tmp_path / "n", "id bigint not null, code int not null")
    t.alter("ALTER TABLE n DROP COLUMN code")
    change = t.preview_revert("v0")
    assert change.relaxed == ("code",)
    assert "Comes back nullable: code (it was NOT NULL in v0)." in change.note
    t.revert_schema("v0")
    assert _fields(t.schema) == [(1, "id", "bigint", False), (2, "code", "int", True)]


def test_making_a_column_not_null_again_checks_the_data(tmp_path):
    t = create_table(tmp_path / "nn", "id bigint not null, code int not null")
    t.alter("ALTER TABLE nn ALTER COLUMN code DROP NOT NULL")
    preview = t.preview_revert("v0")
    assert preview.sets_not_null and [str(c) for c in preview] == [
        "nullability 2: code: optional -> required"]
    assert "checked for nulls first" in preview.note
    with pytest.raises(EvoError, match="needs Spark"):  # a table without an engine
        t.revert_schema("v0")
    assert t.schema.find("code").nullable


def test_nested_members(tmp_path):
    t = create_table(tmp_path / "s", "id int, loc struct<lat:double,lon:double>")
    t.alter("ALTER TABLE s DROP COLUMN loc.lon")
    t.alter("ALTER TABLE s ADD COLUMN loc.lon double")
    assert t.schema.field_ids() == [1, 2, 3, 5]
    change = t.revert_schema("v0")
    assert [str(c) for c in change] == ["added    4: loc.lon (double)",
                                        "dropped  5: loc.lon (double)"]
    assert t.schema.field_ids() == [1, 2, 3, 4] and t.schema.max_column_id == 5
    _, layout = t.version(t.schema.version_id)
    assert (layout.physical[4], layout.used[2] >= {"lon", "lon__5"}) == ("lon", True)


def test_a_schema_change_meanwhile_is_rebased(t, monkeypatch):
    other = open_table(t.root)

    def meanwhile(base, changes):  # runs after the plan, before the lock
        other.alter("ALTER TABLE t ADD COLUMN late string")

    monkeypatch.setattr(t, "validate_data", meanwhile)
    change = t.revert_schema("v1")
    assert change.before.column_names[-1] == "late"
    assert [c.field_id for c in change.by_kind("dropped")] == [5, 6, 7]
    assert t.schema.field_ids() == [1, 2, 3, 4] and t.schema.max_column_id == 7
