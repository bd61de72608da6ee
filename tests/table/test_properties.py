"""Table properties after creation: ``ALTER TABLE ... SET/UNSET TBLPROPERTIES`` and
``Table.set_properties``. Changes are checked before anything is saved (a bad change leaves
the table as it was), saved atomically, seen by tables opened later, and used by operations
that start afterwards."""

from __future__ import annotations

import json

import pytest

import evonb
from evonb.errors import DDLSyntaxError, EvoError, SchemaEvolutionError
from evonb.sql import SetProperties, UnsetProperties, parse_alter
from evonb.sql.apply import property_changes
from evonb.table.config import TableConfig
from evonb.table.properties import changed_config
from tests.stored_config import with_stored_properties


def _config_text(t) -> str:
    return TableConfig.path(t.root).read_text()


def test_parse_set_and_unset():
    assert parse_alter("ALTER TABLE t SET TBLPROPERTIES ('a.b' = '1', c = true, 'd' 2)") == [
        SetProperties("t", {"a.b": "1", "c": "true", "d": "2"})]
    assert parse_alter("alter table db.t unset tblproperties if exists ('a', b.c)") == [
        UnsetProperties("db.t", ("a", "b.c"), True)]
    assert parse_alter("ALTER TABLE t UNSET TBLPROPERTIES ('a')") == [
        UnsetProperties("t", ("a",), False)]
    # later statements win for the same name
    assert property_changes(parse_alter(
        "ALTER TABLE t SET TBLPROPERTIES ('a' = 1, 'b' = 2); "
        "ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('a', 'c'); "
        "ALTER TABLE t SET TBLPROPERTIES ('c' = 3)")) == ({"b": "2", "c": "3"}, ("a",), True)
    assert property_changes(parse_alter(
        "ALTER TABLE t UNSET TBLPROPERTIES ('a'); ALTER TABLE t ADD COLUMN x int")) == (
        {}, ("a",), False)
    with pytest.raises(DDLSyntaxError, match="expected TBLPROPERTIES after SET"):
        parse_alter("ALTER TABLE t SET PROPERTIES ('a' = 1)")
    with pytest.raises(DDLSyntaxError, match=r"expected '\(' after UNSET TBLPROPERTIES"):
        parse_alter("ALTER TABLE t UNSET TBLPROPERTIES a")
    with pytest.raises(DDLSyntaxError) as err:
        parse_alter("ALTER TABLE t UNSETT TBLPROPERTIES ('a')")
    assert "did you mean UNSET?" in str(err.value)


def test_checks_without_spark():
    config = TableConfig(name="t", table_type="cow")
    out = changed_config(config, {"evonb.compaction.inline.every": 3, "owner": "ana",
                                  "evonb.write.parquet.block.size": "1048576",
                                  "evonb.compaction.arrow.enabled": False})
    assert dict(out.properties) == {"evonb.compaction.inline.every": "3", "owner": "ana",
                                    "evonb.write.parquet.block.size": "1048576",
                                    "evonb.compaction.arrow.enabled": "false"}
    assert dict(changed_config(out, unset=("owner",)).properties).keys() == {
        "evonb.compaction.inline.every", "evonb.write.parquet.block.size",
        "evonb.compaction.arrow.enabled"}
    cases = {
        "evonb.compaction.inline.evry": ("Unknown table property",
                                         "did you mean evonb.compaction.inline.every?"),
        "evonb.compaction.batch.groups": ("below 1", "at least 1"),
        "evonb.write.target.file.bytes": ("not an integer", "whole number"),
        "evonb.mor.log_format": ("not one of avro, parquet", "use one of"),
        "evonb.mor.log.positions": ("not a boolean", "true or false"),
        "evonb.clean.retain_hours": ("not a number", "number of at least 0"),
        "primaryKey": ("cannot change after the table is created", "new table"),
        "evonb.lock.provider": ("cannot change after the table is created", "new table"),
    }
    values = {"evonb.compaction.batch.groups": "0", "evonb.write.target.file.bytes": "big",
              "evonb.mor.log_format": "orc", "evonb.mor.log.positions": "maybe",
              "evonb.clean.retain_hours": "soon"}
    for name, (message, hint) in cases.items():
        with pytest.raises(EvoError) as err:
            changed_config(out, {name: values.get(name, "1")})
        assert message in err.value.message and hint in (err.value.hint or ""), name
    with pytest.raises(EvoError, match="both set and unset"):
        changed_config(out, {"owner": "x"}, ("owner",))
    with pytest.raises(EvoError, match="is not set on this table"):
        changed_config(out, unset=("missing",), if_exists=False)
    with pytest.raises(EvoError, match="needs a value"):
        changed_config(out, {"owner": None})


@pytest.mark.spark
def test_alter_sets_and_unsets_properties(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string", primary_key="id",
                           table_type="mor", properties={"owner": "ana"})
    diff = t.alter("ALTER TABLE t SET TBLPROPERTIES ('evonb.compaction.inline.every' = 2, "
                   "'team' = 'lake')")
    assert not diff and len(t.history()) == 1  # no schema version, no commit
    assert dict(t.properties) == {"owner": "ana", "evonb.compaction.inline.every": "2",
                                  "team": "lake"}
    assert dict(evonb.open_table(t.path).properties) == dict(t.properties)
    # a schema change and a property change in one call
    diff = t.alter("ALTER TABLE t ADD COLUMN n int; "
                   "ALTER TABLE t UNSET TBLPROPERTIES IF EXISTS ('owner', 'missing')")
    assert [c.kind for c in diff] == ["added"]
    assert dict(evonb.open_table(t.path).properties) == {"evonb.compaction.inline.every": "2",
                                                         "team": "lake"}
    assert t.set_properties({"team": "ops"}, unset=["evonb.compaction.inline.every"]) == {
        "team": "ops"}


@pytest.mark.spark
def test_a_bad_change_leaves_the_table_as_it_was(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string", primary_key="id")
    before_config = _config_text(t)
    before_schema = t.schema
    for ddl in [
        "ALTER TABLE t ADD COLUMN n int; ALTER TABLE t SET TBLPROPERTIES "
        "('evonb.write.direct_merge.bytes' = '-5')",
        "ALTER TABLE t SET TBLPROPERTIES ('evonb.compaction.inline.evry' = 1); "
        "ALTER TABLE t DROP COLUMN v",
        "ALTER TABLE t UNSET TBLPROPERTIES ('never-set')",
        "ALTER TABLE t SET TBLPROPERTIES ('precombineField' = 'v')",
    ]:
        with pytest.raises(EvoError):
            t.alter(ddl)
        fresh = evonb.open_table(t.path)
        assert _config_text(fresh) == before_config
        assert fresh.schema == before_schema and len(fresh.history()) == 1
    with pytest.raises(SchemaEvolutionError, match="cannot change table properties"):
        t.rewrite("ALTER TABLE t SET TBLPROPERTIES ('a' = 'b')")
    assert _config_text(t) == before_config


@pytest.mark.spark
def test_a_new_property_drives_the_next_operations(spark, tmp_path):
    """Inline compaction turned on for an existing merge-on-read table compacts after the
    next write; a change made through another table object is kept by a later change."""
    t = evonb.create_table(tmp_path / "m", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts", table_type="mor")
    cols = "id long, v string, ts long"
    t.write(spark.createDataFrame([(i, "a", 1) for i in range(10)], cols), "insert")
    t.write(spark.createDataFrame([(1, "b", 2)], cols), "upsert")
    assert t.history()[-1].action == "deltacommit"
    other = evonb.open_table(t.path)
    other.alter("ALTER TABLE m SET TBLPROPERTIES ('owner' = 'ana')")
    t.alter("ALTER TABLE m SET TBLPROPERTIES ('evonb.compaction.inline.every' = '1')")
    assert json.loads(_config_text(t))["properties"] == {
        "owner": "ana", "evonb.compaction.inline.every": "1"}
    t.write(spark.createDataFrame([(2, "c", 2)], cols), "upsert")
    assert t.history()[-1].action == "compaction"
    assert not t.snapshot().logs
    assert sorted(tuple(r) for r in t.read().collect())[:3] == [(0, "a", 1), (1, "b", 2),
                                                                (2, "c", 2)]


def test_a_table_already_open_sees_a_change_made_elsewhere(spark, tmp_path):
    """A ``Table`` object opened before a property change (by another object, as another
    process would) uses the new value from its next operation on."""
    t = evonb.create_table(tmp_path / "m", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts", table_type="mor")
    cols = "id long, v string, ts long"
    t.write(spark.createDataFrame([(i, "a", 1) for i in range(10)], cols), "insert")
    elsewhere = evonb.open_table(t.path)
    assert dict(t.properties) == {}
    elsewhere.set_properties({"evonb.compaction.inline.every": 1, "owner": "ana"})
    assert dict(t.properties) == {"evonb.compaction.inline.every": "1", "owner": "ana"}
    t.write(spark.createDataFrame([(1, "b", 2)], cols), "upsert")
    assert [c.action for c in t.history()][-2:] == ["deltacommit", "compaction"]
    elsewhere.alter("ALTER TABLE m UNSET TBLPROPERTIES ('evonb.compaction.inline.every')")
    t.write(spark.createDataFrame([(2, "c", 2)], cols), "upsert")
    assert t.history()[-1].action == "deltacommit"
    assert dict(t.properties) == {"owner": "ana"}


def test_parquet_writer_options_are_checked_when_set_and_at_creation(tmp_path):
    """A Parquet option's value is checked as Spark's writer would parse it (Java whole
    numbers, booleans, codec names); other option names pass as they are. A bad one is
    refused with the property named, at creation (nothing is left behind) and when set."""
    config = TableConfig(name="t", table_type="cow")
    bad = {
        "evonb.write.parquet.block.size": ("12x", "not a whole number from 1 to"),
        "evonb.write.parquet.page.size": (str(2**31), "from 1 to 2147483647"),
        "evonb.write.parquet.block.row.count.limit": ("1_000", "not a whole number"),
        "evonb.write.parquet.dictionary.page.size": ("0", "not a whole number"),
        "evonb.write.parquet.enable.dictionary": ("yes", "not a boolean"),
        "evonb.write.parquet.bloom.filter.enabled#id": ("maybe", "not a boolean"),
        "evonb.write.parquet.compression": ("fast", "not one of uncompressed"),
        "evonb.write.parquet.writer.version": ("V2", "not one of v1, v2, PARQUET_1_0"),
    }
    for name, (value, message) in bad.items():
        with pytest.raises(EvoError) as err:
            changed_config(config, {name: value})
        assert name in err.value.message and message in err.value.message, name
        assert err.value.hint
        with pytest.raises(EvoError) as err:
            evonb.create_table(tmp_path / "t", "id bigint", properties={name: value})
        assert name in err.value.message and message in err.value.message, name
        assert not (tmp_path / "t").exists()
    good = {"evonb.write.parquet.block.size": " 1048576 ",
            "evonb.write.parquet.compression": "ZSTD",
            "evonb.write.parquet.writer.version": "PARQUET_2_0",
            "evonb.write.parquet.bloom.filter.enabled#id": "TRUE",
            "evonb.write.parquet.some.future.option": "anything"}
    assert dict(changed_config(config, good).properties) == good
    t = evonb.create_table(tmp_path / "ok", "id bigint", properties=good)
    assert dict(evonb.open_table(t.path).properties) == good


def test_creation_checks_known_properties_and_names(tmp_path):
    for props, message in [({"evonb.compaction.inline.every": "often"}, "not an integer"),
                           ({"evonb.compaction.inline.evry": "1"},
                            "Unknown table property evonb.compaction.inline.evry")]:
        with pytest.raises(EvoError, match=message):
            evonb.create_table(tmp_path / "t", "id bigint", properties=props)
        assert not (tmp_path / "t").exists()


@pytest.mark.spark
def test_a_bad_parquet_option_stored_by_an_older_version_stops_the_write(spark, tmp_path):
    """A table whose config already holds a bad value (written before values were checked)
    gets an evonb error before any file is written, not a Java trace from the writer."""
    t = with_stored_properties(
        evonb.create_table(tmp_path / "t", "id bigint not null, v string", primary_key="id"),
        {"evonb.write.parquet.block.size": "128MB"})
    with pytest.raises(EvoError) as err:
        t.write(spark.createDataFrame([(1, "a")], "id long, v string"), "insert")
    assert "evonb.write.parquet.block.size='128MB'" in err.value.message
    assert "Java" not in str(err.value) and "NumberFormatException" not in str(err.value)
    assert len(t.history()) == 1 and not list(t.root.rglob("*.parquet"))


def test_every_property_the_package_reads_is_a_name_the_checks_know():
    """A property evonb reads (a ``*_PROPERTY`` constant naming ``evonb.*``) that the checks
    did not know could not be set with ALTER TABLE, nor given at creation."""
    import ast
    from pathlib import Path

    from evonb.table.properties import FIXED, KNOWN, PLUGINS

    package = Path(evonb.__file__).parent
    read = {}
    for source in package.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                    and isinstance(node.value.value, str)
                    and node.value.value.startswith("evonb.")
                    and any(isinstance(t, ast.Name) and t.id.endswith("PROPERTY")
                            for t in node.targets)):
                read[node.value.value] = source.name
    assert len(read) >= 25, read
    unknown = {n: f for n, f in read.items()
               if n not in KNOWN and n not in PLUGINS and n.lower() not in FIXED}
    assert not unknown, unknown
    config = TableConfig(name="t", table_type="cow")
    assert changed_config(config, {"evonb.lock.lease": "30"}).properties["evonb.lock.lease"] == "30"
    with pytest.raises(EvoError, match=r"evonb\.lock\.lease=0\.0 is below"):
        changed_config(config, {"evonb.lock.lease": "0"})
