"""Iceberg metadata published by ``evonb.iceberg.sync`` is read by pyiceberg (an independent
reader) exactly as evonb reads the table, now and as of every published commit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyiceberg.table import StaticTable

import evonb
from evonb.__main__ import main
from evonb.iceberg import IcebergExportError, iceberg_schema, snapshot_id, sync
from evonb.iceberg.schema import HIDDEN_FIELD_ID
from evonb.schema.schema import Schema
from evonb.table.check import check_table
from evonb.table.layout import Layout

pytestmark = pytest.mark.spark

DDL = ("id int not null, name string, score int, w int, small smallint, "
       "info struct<city: string, zip: int>, tags array<string>, attrs map<string, int>, "
       "price decimal(9, 2), day date")


def _rows(arrow_table):
    """Rows as dicts with column names, sorted by id."""
    return sorted(arrow_table.to_pylist(), key=lambda r: r["id"])


def _iceberg(t, version=None):
    meta = t.root / "metadata"
    n = version or int((meta / "version-hint.text").read_text().strip())
    return StaticTable.from_metadata(str(meta / f"v{n}.metadata.json"))


def _insert(spark, t, lo, hi, extra=""):
    t.write(spark.sql(
        f"select cast(id as int) id, concat('n', id) name, cast(id * 10 as int) score, "
        f"cast(id as int) w, cast(id as smallint) small, "
        f"named_struct('city', concat('c', id), 'zip', cast(id + 100 as int)) info, "
        f"array(concat('t', id), 'x') tags, map('k', cast(id as int)) attrs, "
        f"cast(id / 4 as decimal(9, 2)) price, date_add(date'2024-01-01', cast(id as int)) day"
        f"{extra} from range({lo}, {hi})").coalesce(1))


@pytest.fixture(scope="module")
def evolved(spark, tmp_path_factory):
    """An unpartitioned copy-on-write table through add, rename, drop and re-add, int->bigint
    and a nested rename, with writes between, ending with a schema-only commit."""
    t = evonb.create_table(tmp_path_factory.mktemp("ice") / "t", DDL, primary_key="id")
    _insert(spark, t, 0, 5)
    t.alter("ALTER TABLE t ADD COLUMN extra string")
    _insert(spark, t, 5, 8, ", concat('e', id) extra")
    t.alter("ALTER TABLE t RENAME COLUMN name TO full_name")
    t.alter("ALTER TABLE t DROP COLUMN score")
    t.alter("ALTER TABLE t ADD COLUMN score string")
    t.alter("ALTER TABLE t ALTER COLUMN w TYPE bigint")
    t.write(spark.sql(
        "select cast(id as int) id, concat('f', id) full_name, id w, cast(id as smallint) small,"
        " named_struct('city', concat('c', id), 'zip', cast(id + 100 as int)) info,"
        " array('y') tags, map('k', cast(id as int), 'j', 1) attrs,"
        " cast(id / 4 as decimal(9, 2)) price, date'2025-06-01' day, 'z' extra,"
        " concat('s', id) score from range(8, 11)").coalesce(1))
    t.write(spark.sql("select cast(id as int) id from range(1, 3)"), "delete")
    t.alter("ALTER TABLE t RENAME COLUMN info.city TO town")
    result = sync(t)
    return t, result


def test_latest_equals_evonb_read(evolved):
    t, _ = evolved
    ice = _iceberg(t).scan().to_arrow()
    mine = t.to_arrow()
    assert ice.column_names == mine.column_names == [
        "id", "full_name", "w", "small", "info", "tags", "attrs", "price", "day", "extra",
        "score"]
    assert _rows(ice) == _rows(mine)
    rows = {r["id"]: r for r in _rows(ice)}
    assert sorted(rows) == [0, 3, 4, 5, 6, 7, 8, 9, 10]
    assert rows[3]["info"] == {"town": "c3", "zip": 103}
    assert rows[3]["full_name"] == "n3" and rows[3]["score"] is None  # re-added: no old data
    assert rows[9]["score"] == "s9" and rows[9]["w"] == 9 and rows[6]["extra"] == "e6"
    assert ice.schema.field("w").type == mine.schema.field("w").type  # widened to 64 bits


def test_spark_read_agrees(evolved):
    t, _ = evolved
    spark_rows = sorted((r.asDict(recursive=True) for r in t.read().collect()),
                        key=lambda r: r["id"])
    ice = _rows(_iceberg(t).scan().to_arrow())
    assert [(r["id"], r["full_name"], r["w"], r["info"]["town"], r["score"]) for r in ice] == [
        (r["id"], r["full_name"], r["w"], r["info"]["town"], r["score"]) for r in spark_rows]


def test_time_travel_every_published_commit(evolved):
    t, result = evolved
    table = _iceberg(t)
    data_commits = [c for c in t.history() if c.instant in result.snapshots]
    assert len(data_commits) == 4  # three writes and a delete; the DDL publishes no snapshot
    for commit in data_commits:
        sid = result.snapshots[commit.instant]
        assert sid == snapshot_id(commit.instant)
        ice = table.scan(snapshot_id=sid).to_arrow()
        mine = t.to_arrow(as_of=commit.instant)
        assert ice.column_names == mine.column_names, commit.instant
        assert _rows(ice) == _rows(mine), commit.instant
    first = table.scan(snapshot_id=result.snapshots[data_commits[0].instant]).to_arrow()
    assert "name" in first.column_names and "full_name" not in first.column_names
    assert _rows(first)[2]["score"] == 20  # the int score before the drop


def test_filters_on_renamed_and_widened_columns_prune_files(evolved):
    t, _ = evolved
    table = _iceberg(t)
    live = len(t.snapshot().files)
    assert live == 3
    for condition, ice_filter in [("full_name = 'f9'", "full_name = 'f9'"),
                                  ("w >= 9", "w >= 9"),
                                  ("full_name = 'n4'", "full_name = 'n4'"),
                                  ("info.town = 'c6'", "info.town = 'c6'"),
                                  ("score = 's10'", "score = 's10'")]:
        scan = table.scan(row_filter=ice_filter)
        expected = sorted(r["id"] for r in t.read().filter(condition).collect())
        assert expected and sorted(r["id"] for r in scan.to_arrow().to_pylist()) == expected
        # top-level columns prune by their bounds; members of structs get no bounds (as in
        # pyiceberg's own writes), so every file is scanned for them, and so is a file written
        # before its column was (re-)added
        planned = len(list(scan.plan_files()))
        if condition.startswith("info."):
            assert planned == live
        elif condition.startswith("score"):
            fid = t.schema.find_id("score")
            lacking = [f for f in t.snapshot().files
                       if not t.schema_store.load(f.version).has_id(fid)]
            assert len(lacking) == 1 and planned == 2
        else:
            assert planned == 1, condition
    # the bounds are by field ID: the renamed column's are those of its physical column
    task = next(iter(table.scan(row_filter="full_name = 'f9'").plan_files()))
    fid = t.schema.find_id("full_name")
    assert task.file.lower_bounds[fid] == b"f10" and task.file.upper_bounds[fid] == b"f9"
    assert task.file.null_value_counts[fid] == 0 and task.file.value_counts[fid] == 3


def _field_ids(field, path=()):
    """(path of physical names, Parquet field ID or None) of a pyarrow field and every field
    nested in it (struct members, list elements, map keys and values)."""
    import pyarrow as pa

    path = (*path, field.name)
    raw = (field.metadata or {}).get(b"PARQUET:field_id")
    out = [(path, None if raw is None else int(raw))]
    kind = field.type
    if pa.types.is_struct(kind):
        children = list(kind)
    elif pa.types.is_map(kind):
        children = [kind.key_field.with_name("key"), kind.item_field.with_name("value")]
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind):
        children = [kind.value_field.with_name("element")]
    else:
        children = []
    for child in children:
        out += _field_ids(child, path)
    return out


def _mapped(entries, path=()):
    out = {}
    for m in entries:
        for name in m["names"]:
            out[(*path, name)] = m["field-id"]
            out.update(_mapped(m.get("fields", []), (*path, name)))
    return out


def test_files_carry_no_field_ids_so_every_reader_uses_the_name_mapping(evolved):
    """Spark can put Parquet field IDs on top-level columns and struct members only, and
    Iceberg readers that find IDs in a file trust them over the name mapping: so evonb's
    writers put none, and every reader resolves every column, nested ones included, through
    the mapping, which names each file column's path."""
    t, result = evolved
    meta = json.loads(Path(result.metadata_file).read_text())
    mapping = _mapped(json.loads(meta["properties"]["schema.name-mapping.default"]))
    checked = 0
    for f in t.snapshot().files:
        for field in pq.read_schema(t.root / f.path):
            for path, field_id in _field_ids(field):
                assert field_id is None, (f.path, path)
                assert path in mapping, (f.path, path)
                checked += 1
    assert checked > 20


def test_metadata_shape(evolved):
    t, result = evolved
    meta = json.loads((t.root / "metadata" / f"v{result.version}.metadata.json").read_text())
    assert meta["format-version"] == 2
    assert meta["last-column-id"] == t.schema.max_column_id
    current = next(s for s in meta["schemas"] if s["schema-id"] == meta["current-schema-id"])
    info = next(f for f in current["fields"] if f["name"] == "info")
    assert [f["name"] for f in info["type"]["fields"]] == ["town", "zip"]
    assert info["id"] == t.schema.find_id("info")
    # the last commit (schema-only) moved the current schema past the last snapshot's
    last = meta["snapshots"][-1]
    assert last["schema-id"] != meta["current-schema-id"]
    assert meta["refs"]["main"]["snapshot-id"] == meta["current-snapshot-id"] == last[
        "snapshot-id"]
    assert [s["summary"]["operation"] for s in meta["snapshots"]] == [
        "append", "append", "append", "overwrite"]
    assert [s.get("parent-snapshot-id") for s in meta["snapshots"]] == [
        None, *[s["snapshot-id"] for s in meta["snapshots"][:-1]]]
    mapping = json.loads(meta["properties"]["schema.name-mapping.default"])
    by_id = {m["field-id"]: m for m in mapping}
    assert by_id[t.schema.find_id("full_name")]["names"] == ["name"]
    assert (t.root / "metadata" / "version-hint.text").read_text().strip() == str(
        result.version)


def test_sync_again_is_a_no_op_then_publishes_new_commits(spark, evolved):
    t, result = evolved
    again = sync(t)
    assert not again.written and again.version == result.version
    _insert(spark, t, 20, 22, ", 'e' extra")
    later = sync(t)
    assert later.written and later.version == result.version + 1
    meta = json.loads((t.root / "metadata" / f"v{later.version}.metadata.json").read_text())
    assert len(meta["snapshots"]) == 5 and len(meta["metadata-log"]) == 1
    assert _rows(_iceberg(t).scan().to_arrow()) == _rows(t.to_arrow())
    # the previous snapshots' manifest lists are reused, not written again
    prev = json.loads((t.root / "metadata" / f"v{result.version}.metadata.json").read_text())
    assert [s["manifest-list"] for s in meta["snapshots"][:4]] == [
        s["manifest-list"] for s in prev["snapshots"]]


def test_command_line_and_check(evolved, capsys):
    t, _ = evolved
    assert main(["iceberg", "sync", str(t.root)]) == 0
    capsys.readouterr()
    assert main(["iceberg", "sync", str(t.root)]) == 0
    out = capsys.readouterr().out
    assert "unchanged" in out and "metadata.json" in out
    report = check_table(t.root)
    assert report.ok, report.render()  # the metadata folder is no orphan to evonb


def test_iceberg_schema_types_and_ids():
    schema = Schema.from_ddl(
        "a tinyint not null, b smallint, c bigint, d float, e double, f boolean, g binary, "
        "h timestamp, i timestamp_ntz, j decimal(20, 3), k date, "
        "l array<struct<x: int>>, m map<string, array<int>>")
    layout = Layout(physical={f.id: f"p_{f.name}" for f in schema.fields} | {
        schema.find_id("l.element.x"): "px"})
    ice = iceberg_schema(schema, layout)
    fields = {f["name"]: f for f in ice.schema["fields"]}
    assert [fields[n]["type"] for n in "abcdefghijk"] == [
        "int", "int", "long", "float", "double", "boolean", "binary", "timestamptz",
        "timestamp", "decimal(20, 3)", "date"]
    assert fields["a"]["required"] is True and fields["b"]["required"] is False
    lt = fields["l"]["type"]
    assert lt["element-id"] == schema.find_id("l.element")
    assert lt["element"]["fields"][0]["id"] == schema.find_id("l.element.x")
    mt = fields["m"]["type"]
    assert (mt["key-id"], mt["value-id"]) == (schema.find_id("m.key"), schema.find_id("m.value"))
    assert mt["value"]["element-id"] == schema.find_id("m.value.element")
    assert ice.last_column_id == schema.max_column_id
    mapping = {m["field-id"]: m for m in ice.name_mapping}
    assert mapping[HIDDEN_FIELD_ID]["names"] == ["_evo_commit_time"]
    assert mapping[schema.find_id("a")]["names"] == ["p_a"]
    element = mapping[schema.find_id("l")]["fields"][0]
    assert element["names"] == ["element"] and element["fields"][0]["names"] == ["px"]
    assert [m["names"] for m in mapping[schema.find_id("m")]["fields"]] == [["key"], ["value"]]
    assert json.loads(ice.properties()["schema.name-mapping.default"]) == ice.name_mapping


def test_type_change_that_is_no_promotion_blocks_until_rewrite(spark, tmp_path, capsys):
    t = evonb.create_table(tmp_path / "t", "id int, n int")
    t.write(spark.sql("select cast(id as int) id, cast(id as int) n from range(3)"))
    exported = t.history()[-1].instant
    t.alter("ALTER TABLE t ALTER COLUMN n TYPE string")  # schema-only: blocks already
    result = sync(t)
    assert result.blocked and re.search(r"'n'.*not an Iceberg type promotion", result.blocked)
    assert "rewrite" in result.blocked
    # pyiceberg reads the last exported state, in its schema
    ice = _iceberg(t).scan().to_arrow()
    assert ice.schema.field("n").type == "int32"
    assert _rows(ice) == _rows(t.to_arrow(as_of=exported))
    t.write(spark.sql("select cast(id as int) id, 'x' n from range(3, 4)"))
    assert sync(t).blocked  # still blocked: old files hold ints
    assert main(["iceberg", "sync", str(t.root)]) == 1
    assert "not an Iceberg type promotion" in capsys.readouterr().err
    assert list(sync(t).snapshots) == [exported]
    t.rewrite(purge_dropped=True)  # every file in the latest schema: publication resumes
    after = sync(t)
    assert after.blocked is None and len(after.snapshots) == 2
    ice = _iceberg(t).scan().to_arrow()
    assert ice.schema.field("n").type == "string"
    assert _rows(ice) == _rows(t.to_arrow())
    assert _rows(_iceberg(t).scan(snapshot_id=after.snapshots[exported]).to_arrow()) == _rows(
        t.to_arrow(as_of=exported))


def test_a_type_history_that_comes_back_blocks_until_rewrite(spark, tmp_path):
    """Files whose type is the current one still block when their values went through types
    that are no Iceberg promotion in between: evonb reads ``" 12 "`` stored as text, after
    ``string -> decimal(5,2) -> string``, as ``"12.00"``; pyiceberg would read it as stored
    (the type-chain test, CI: a chain back to ``string`` read ``" 12 "`` by pyiceberg)."""
    t = evonb.create_table(tmp_path / "t", "id int, v string")
    t.write(spark.sql("select 1 id, ' 12 ' v"))
    t.alter("ALTER TABLE t ALTER COLUMN v TYPE decimal(5,2)")
    t.alter("ALTER TABLE t ALTER COLUMN v TYPE string")
    assert [tuple(r) for r in t.read().collect()] == [(1, "12.00")]
    result = sync(t)
    assert result.blocked and re.search(
        r"'v'.*from string to decimal\(5,2\) in between", result.blocked)
    t.rewrite(purge_dropped=True)  # the values as evonb reads them, stored as text
    after = sync(t)
    assert after.blocked is None
    assert _iceberg(t).scan().to_arrow().column("v").to_pylist() == ["12.00"]


def test_read_defaults_are_exported_as_initial_defaults_in_format_version_3(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id int")
    t.write(spark.sql("select cast(id as int) id from range(3)"))
    assert json.loads(Path(sync(t).metadata_file).read_text())["format-version"] == 2
    t.alter("ALTER TABLE t ADD COLUMN d string DEFAULT 'dflt'")
    t.alter("ALTER TABLE t ADD COLUMN n bigint DEFAULT 7")
    t.alter("ALTER TABLE t ADD COLUMN amount decimal(9, 2) DEFAULT 1.5")
    t.alter("ALTER TABLE t ADD COLUMN day date DEFAULT DATE '2024-02-29'")
    t.write(spark.sql("select cast(id as int) id, 'v' d, 1 n, cast(2 as decimal(9, 2)) amount, "
                      "date'2025-01-01' day from range(3, 4)"))
    result = sync(t)
    assert result.blocked is None
    meta = json.loads(Path(result.metadata_file).read_text())
    assert meta["format-version"] == 3  # the first format version with initial-default
    fields = {f["name"]: f for f in meta["schemas"][-1]["fields"]}
    assert [fields[c].get("initial-default") for c in ("id", "d", "n", "amount", "day")] == [
        None, "dflt", 7, "1.50", "2024-02-29"]
    ice = _iceberg(t)
    assert ice.metadata.format_version == 3
    rows = _rows(ice.scan().to_arrow())
    assert rows == _rows(t.to_arrow())
    assert [(r["d"], r["n"], str(r["amount"]), str(r["day"])) for r in rows] == [
        ("dflt", 7, "1.50", "2024-02-29")] * 3 + [("v", 1, "2.00", "2025-01-01")]
    # row lineage: each snapshot's row IDs start where the last ones ended
    snaps = meta["snapshots"]
    assert [s["first-row-id"] for s in snaps] == [0, snaps[0]["added-rows"]]
    assert meta["next-row-id"] == sum(s["added-rows"] for s in snaps)
    for commit, sid in result.snapshots.items():  # time travel, each in its own schema
        assert _rows(ice.scan(snapshot_id=sid).to_arrow()) == _rows(t.to_arrow(as_of=commit))
    assert t.iceberg_status().state == "current"
    t.write(spark.sql("select cast(id as int) id, 'w' d from range(4, 5)"))
    later = sync(t)  # a table once in format version 3 stays in it; row IDs go on
    again = json.loads(Path(later.metadata_file).read_text())
    assert again["format-version"] == 3 and again["next-row-id"] > meta["next-row-id"]
    assert _rows(_iceberg(t).scan().to_arrow()) == _rows(t.to_arrow())


def test_identity_partitions(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id int, p string, d date, n int",
                           partition_by=["p", "d"])
    t.write(spark.sql("select cast(id as int) id, if(id % 2 = 0, 'a b', 'c/d') p, "
                      "date_add(date'2024-01-01', cast(id % 3 as int)) d, cast(id as int) n "
                      "from range(12)"))
    first = t.history()[-1].instant
    t.alter("ALTER TABLE t RENAME COLUMN p TO region")
    t.alter("ALTER TABLE t ALTER COLUMN n TYPE bigint")
    t.write(spark.sql("select cast(id as int) id, 'e' region, date'2025-01-01' d, id n "
                      "from range(12, 15)"))
    result = sync(t)
    table = _iceberg(t)
    assert _rows(table.scan().to_arrow()) == _rows(t.to_arrow())
    assert _rows(table.scan(snapshot_id=result.snapshots[first]).to_arrow()) == _rows(
        t.to_arrow(as_of=first))
    # the manifests' partition values prune files: each planned file is of its partition
    tasks = list(table.scan(row_filter="region = 'c/d'").plan_files())
    assert tasks and len(tasks) < len(t.snapshot().files)
    assert all("/d=" in task.file.file_path and "c%2Fd" in task.file.file_path
               for task in tasks)
    assert sorted(r["id"] for r in table.scan(row_filter="region = 'c/d'").to_arrow()
                  .to_pylist()) == [1, 3, 5, 7, 9, 11]
    day = table.scan(row_filter="d = '2024-01-02'")
    assert sorted(r["id"] for r in day.to_arrow().to_pylist()) == [1, 4, 7, 10]
    assert len(list(day.plan_files())) == 2
    meta = json.loads(Path(result.metadata_file).read_text())
    assert [f["source-id"] for f in meta["partition-specs"][0]["fields"]] == [
        t.schema.find_id("region"), t.schema.find_id("d")]


def test_null_string_partition_is_exported_as_null(spark, tmp_path, capsys):
    t = evonb.create_table(tmp_path / "t", "id int, p string", partition_by="p")
    t.write(spark.sql("select cast(id as int) id, cast(null as string) p from range(2)"))
    assert main(["iceberg", "sync", str(t.root)]) == 0
    assert "v1.metadata.json" in capsys.readouterr().out
    table = _iceberg(t)
    assert table.scan().to_arrow().to_pylist() == [{"id": 0, "p": None}, {"id": 1, "p": None}]
    tasks = list(table.scan(row_filter="p is null").plan_files())
    assert [task.file.partition[0] for task in tasks] == [None]
    assert list(table.scan(row_filter="p = ''").plan_files()) == []  # pruned: null, not ''


def test_merge_on_read_exported_after_compaction_only(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts", table_type="mor")
    t.write(spark.createDataFrame([(i, f"v{i}", 1) for i in range(4)], "id long, v string, "
                                  "ts long"), "upsert")
    t.write(spark.createDataFrame([(1, "new", 2)], "id long, v string, ts long"), "upsert")
    assert t.snapshot().logs, "the second upsert must leave a log block"
    with pytest.raises(IcebergExportError, match="compact"):
        sync(t)
    t.compact()
    result = sync(t)
    ice = _rows(_iceberg(t).scan().to_arrow())
    assert ice == _rows(t.to_arrow())
    assert {r["id"]: r["v"] for r in ice}[1] == "new"
    assert len(result.snapshots) == 2  # the first upsert and the compaction


def test_more_types_and_nested_evolution(spark, tmp_path):
    """Timestamps, float/decimal widening, a swap of two names, and renames, adds, drops and
    widening inside list elements and map values."""
    t = evonb.create_table(
        tmp_path / "t",
        "id int, x int, y int, ts timestamp, tsn timestamp_ntz, f float, dec decimal(5, 2), "
        "tiny tinyint, b binary, bo boolean, loc struct<lat: double, lon: double>, "
        "pts array<struct<x: int, y: int>>, m map<string, struct<a: int, b: string>>")
    t.write(spark.sql(
        "select cast(id as int) id, cast(id as int) x, cast(id + 100 as int) y, "
        "timestamp'2024-03-01 10:00:00' + make_interval(0, 0, 0, 0, cast(id as int)) ts, "
        "timestamp_ntz'2024-03-01 10:00:00' tsn, cast(id / 2 as float) f, "
        "cast(id * 1.25 as decimal(5, 2)) dec, cast(id as tinyint) tiny, "
        "cast(concat('b', id) as binary) b, id % 2 = 0 bo, "
        "named_struct('lat', id * 1.0d, 'lon', 2.0d) loc, "
        "array(named_struct('x', cast(id as int), 'y', 2)) pts, "
        "map('k', named_struct('a', cast(id as int), 'b', 'bb')) m from range(4)").coalesce(1))
    first = t.history()[-1].instant
    t.alter("ALTER TABLE t RENAME COLUMN x TO tmp; ALTER TABLE t RENAME COLUMN y TO x;"
            "ALTER TABLE t RENAME COLUMN tmp TO y")
    t.alter("ALTER TABLE t ALTER COLUMN f TYPE double; "
            "ALTER TABLE t ALTER COLUMN dec TYPE decimal(10, 2)")
    t.alter("ALTER TABLE t RENAME COLUMN loc.lat TO latitude;"
            "ALTER TABLE t ADD COLUMN loc.alt double AFTER latitude;"
            "ALTER TABLE t RENAME COLUMN pts.element.x TO px;"
            "ALTER TABLE t ALTER COLUMN pts.element.y TYPE bigint;"
            "ALTER TABLE t DROP COLUMN m.value.b;"
            "ALTER TABLE t ADD COLUMN m.value.c string")
    t.write(spark.sql(
        "select cast(id as int) id, cast(id + 100 as int) x, cast(id as int) y, "
        "timestamp'2025-01-01 00:00:00' ts, timestamp_ntz'2025-01-01 00:00:00' tsn, "
        "id / 3d f, cast(id * 1000.5 as decimal(10, 2)) dec, cast(1 as tinyint) tiny, "
        "cast('z' as binary) b, true bo, "
        "named_struct('latitude', 9.0d, 'alt', 1.5d, 'lon', 3.0d) loc, "
        "array(named_struct('px', cast(id as int), 'y', id * 10000000000)) pts, "
        "map('j', named_struct('a', 5, 'c', 'cc')) m from range(4, 6)").coalesce(1))
    result = sync(t)
    table = _iceberg(t)
    ice, mine = table.scan().to_arrow(), t.to_arrow()
    assert ice.column_names == mine.column_names
    assert _rows(ice) == _rows(mine)
    rows = {r["id"]: r for r in _rows(ice)}
    assert (rows[1]["x"], rows[1]["y"]) == (101, 1)  # swapped names read their own data
    assert rows[2]["loc"] == {"latitude": 2.0, "alt": None, "lon": 2.0}
    assert rows[5]["pts"] == [{"px": 5, "y": 50000000000}]
    assert rows[1]["m"] == [("k", {"a": 1, "c": None})]
    old = table.scan(snapshot_id=result.snapshots[first]).to_arrow()
    assert _rows(old) == _rows(t.to_arrow(as_of=first))
    assert sorted(r["id"] for r in table.scan(row_filter="x >= 104").to_arrow().to_pylist()
                  ) == [4, 5]


def test_states_a_clean_removed_are_dropped_and_sequence_numbers_kept(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id int, v string")
    t.write(spark.sql("select cast(id as int) id, 'a' v from range(4)"))
    first_files = [f.path for f in t.commit(t.history()[-1].instant).metadata.added]
    sync(t)
    t.write(spark.sql("select cast(id as int) id, 'b' v from range(10, 13)"), "overwrite")
    t.write(spark.sql("select cast(id as int) id, 'c' v from range(20, 21)"))
    before = sync(t)
    assert len(before.snapshots) == 3 and before.blocked is None
    t.clean(retain_commits=2)  # keeps the overwrite and the insert after it
    assert first_files and not any((t.root / f).exists() for f in first_files)
    after = sync(t)
    assert after.blocked is None and after.written
    meta = json.loads(Path(after.metadata_file).read_text())
    kept = list(after.snapshots)
    assert kept == list(before.snapshots)[1:]  # the first state's file is gone
    assert [s["sequence-number"] for s in meta["snapshots"]] == [2, 3]
    assert meta["last-sequence-number"] == 3 and "parent-snapshot-id" not in meta["snapshots"][0]
    table = _iceberg(t)
    assert _rows(table.scan().to_arrow()) == _rows(t.to_arrow())
    for instant, sid in after.snapshots.items():
        assert _rows(table.scan(snapshot_id=sid).to_arrow()) == _rows(t.to_arrow(as_of=instant))


def test_decimals_of_more_than_28_digits_in_partitions_and_defaults(spark, tmp_path):
    """A ``decimal(38,2)`` partition value and a ``decimal(38,4)`` read default of 31 integer
    digits: the export failed with Python's ``decimal.InvalidOperation`` (its default context
    holds 28 digits)."""
    t = evonb.create_table(tmp_path / "t", "id int, p decimal(38,2)", partition_by=["p"])
    big = "123456789012345678901234567890.25"
    t.write(spark.sql(f"select cast(id as int) id, cast('{big}' as decimal(38,2)) p "
                      "from range(2)"))
    t.alter("ALTER TABLE t ADD COLUMN d decimal(38,4) DEFAULT 1234567890123456789012345678901.5")
    assert sync(t).blocked is None
    ice = _iceberg(t)
    rows = _rows(ice.scan().to_arrow())
    assert rows == _rows(t.to_arrow())
    assert [(str(r["p"]), str(r["d"])) for r in rows] == [
        (big, "1234567890123456789012345678901.5000")] * 2
    assert [r["id"] for r in ice.scan(row_filter=f"p = {big}").to_arrow().to_pylist()] == [0, 1]
