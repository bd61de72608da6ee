"""DuckDB's Iceberg reader, a second engine independent of pyiceberg (its own manifest and
Parquet readers, in C++), reads the Iceberg metadata evonb publishes exactly as evonb reads the
table: renames, a drop and re-add under one name, widening, nested struct members and list
elements, a partition column, a filter on a renamed column, and every published snapshot in
its own schema, and read defaults published in format version 3.

DuckDB's extensions come from their PyPI packages and are loaded from there: nothing is
downloaded. DuckDB trusts Parquet field IDs over the name mapping as soon as a file carries
any: files written with IDs on top-level columns only (all Spark can write) read as null
nested values there, which is why evonb's files carry none (docs/iceberg.md).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import duckdb_extension_avro
import duckdb_extension_iceberg
import pyarrow as pa
import pytest

import evonb
from evonb.iceberg import snapshot_id, sync

pytestmark = pytest.mark.spark


def _connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(config={"autoinstall_known_extensions": False,
                                 "autoload_known_extensions": False})
    for name, package in (("avro", duckdb_extension_avro), ("iceberg", duckdb_extension_iceberg)):
        found = sorted(Path(package.__file__).parent.glob(f"extensions/*/{name}.duckdb_extension"))
        assert found, f"the {name} extension is missing from its package"
        con.execute(f"LOAD '{found[-1]}'")
    return con


def _metadata(t) -> str:
    meta = t.root / "metadata"
    return str(meta / f"v{int((meta / 'version-hint.text').read_text().strip())}.metadata.json")


def _duck(con, t, *, snapshot: int | None = None, where: str = "") -> tuple[list[str], list]:
    at = f", snapshot_from_id={snapshot}" if snapshot is not None else ""
    rel = con.execute(f"SELECT * FROM iceberg_scan('{_metadata(t)}'{at}) {where} ORDER BY id")
    return [c[0] for c in rel.description], rel.fetchall()


def _evonb(t, as_of=None) -> tuple[list[str], list]:
    """evonb's rows as DuckDB gives them (a top-level map as a dict, not key/value pairs)."""
    table = t.to_arrow(as_of=as_of)
    maps = {f.name for f in table.schema if pa.types.is_map(f.type)}
    rows = sorted(table.to_pylist(), key=lambda r: r["id"])
    return table.column_names, [
        tuple(dict(v) if k in maps and v is not None else v for k, v in r.items()) for r in rows]


@pytest.fixture(scope="module")
def evolved(spark, tmp_path_factory):
    t = evonb.create_table(
        tmp_path_factory.mktemp("duck") / "t",
        "id int not null, name string, score int, w int, info struct<city: string, zip: int>, "
        "tags array<string>, attrs map<string, int>, price decimal(9, 2), day date, "
        "region string",
        primary_key="id", partition_by=["region"])

    def insert(lo: int, hi: int, select: str) -> None:
        t.write(spark.sql(f"select {select} from range({lo}, {hi})").coalesce(1))

    insert(0, 6, "cast(id as int) id, concat('n', id) name, cast(id * 10 as int) score, "
           "cast(id as int) w, named_struct('city', concat('c', id), 'zip', cast(id as int)) "
           "info, array(concat('t', id)) tags, map('k', cast(id as int)) attrs, "
           "cast(id / 4 as decimal(9, 2)) price, "
           "date_add(date'2024-01-01', cast(id as int)) day, "
           "if(id % 2 = 0, 'east', 'west') region")
    t.alter("ALTER TABLE t RENAME COLUMN name TO full_name; "
            "ALTER TABLE t DROP COLUMN score; ALTER TABLE t ADD COLUMN score string; "
            "ALTER TABLE t ALTER COLUMN w TYPE bigint; "
            "ALTER TABLE t RENAME COLUMN info.city TO town; "
            "ALTER TABLE t ADD COLUMN info.floor int; "
            "ALTER TABLE t ALTER COLUMN attrs.value TYPE bigint")
    insert(6, 9, "cast(id as int) id, concat('f', id) full_name, id * 10000000000 w, "
           "named_struct('town', concat('c', id), 'zip', cast(id as int), 'floor', 3) info, "
           "array('u', 'v') tags, map('k', id * 10000000000) attrs, "
           "cast(id / 4 as decimal(9, 2)) price, date'2025-06-01' day, "
           "'north' region, concat('s', id) score")
    t.write(spark.sql("select cast(id as int) id from range(1, 3)"), "delete")
    return t, sync(t)


def test_latest_equals_evonb(evolved):
    t, _ = evolved
    columns, rows = _duck(_connect(), t)
    assert (columns, rows) == _evonb(t)
    by_id = {r[0]: dict(zip(columns, r, strict=True)) for r in rows}
    assert sorted(by_id) == [0, 3, 4, 5, 6, 7, 8]
    assert by_id[3]["full_name"] == "n3" and by_id[3]["score"] is None  # re-added: no old data
    assert by_id[7]["score"] == "s7" and by_id[7]["w"] == 70000000000
    assert by_id[3]["info"] == {"town": "c3", "zip": 3, "floor": None}
    assert by_id[8]["info"] == {"town": "c8", "zip": 8, "floor": 3}
    assert by_id[8]["tags"] == ["u", "v"] and by_id[8]["attrs"] == {"k": 80000000000}


def test_every_published_snapshot_in_its_own_schema(evolved):
    t, result = evolved
    con = _connect()
    published = [c for c in t.history() if c.instant in result.snapshots]
    assert len(published) == 3
    for commit in published:
        sid = result.snapshots[commit.instant]
        assert sid == snapshot_id(commit.instant)
        assert _duck(con, t, snapshot=sid) == _evonb(t, as_of=commit.instant), commit.instant
    first_columns, first_rows = _duck(con, t, snapshot=result.snapshots[published[0].instant])
    assert "name" in first_columns and "full_name" not in first_columns
    assert dict(zip(first_columns, first_rows[2], strict=True))["score"] == 20


def test_filters_on_renamed_partition_and_nested_columns(evolved):
    t, _ = evolved
    con = _connect()
    for where, ids in [("WHERE full_name = 'f7'", [7]), ("WHERE region = 'east'", [0, 4]),
                       ("WHERE info.town = 'c5'", [5]), ("WHERE w > 1000", [6, 7, 8])]:
        _, rows = _duck(con, t, where=where)
        assert [r[0] for r in rows] == ids, where


def test_read_defaults_in_format_version_3(spark, tmp_path):
    """Read defaults published as Iceberg v3 ``initial-default``: DuckDB fills them into the
    rows written before the columns existed, as evonb does."""
    t = evonb.create_table(tmp_path / "t", "id int")
    t.write(spark.sql("select cast(id as int) id from range(3)"))
    t.alter("ALTER TABLE t ADD COLUMN d string DEFAULT 'dflt'; "
            "ALTER TABLE t ADD COLUMN n bigint DEFAULT 7; "
            "ALTER TABLE t ADD COLUMN day date DEFAULT DATE '2024-02-29'")
    t.write(spark.sql("select cast(id as int) id, 'v' d, 1 n, date'2025-01-01' day "
                      "from range(3, 4)"))
    result = sync(t)
    assert result.blocked is None
    con = _connect()
    columns, rows = _duck(con, t)
    assert (columns, rows) == _evonb(t)
    assert [r[1:3] for r in rows] == [("dflt", 7)] * 3 + [("v", 1)]
    for commit, sid in result.snapshots.items():
        assert _duck(con, t, snapshot=sid) == _evonb(t, as_of=commit), commit
