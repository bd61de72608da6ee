"""Adopting real Hudi copy-on-write tables (table versions 6 and 8) in place."""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import zipfile
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from evonb.api import convert
from evonb.errors import TableExistsError, UnsupportedTableError
from evonb.table.hudi import META_COLUMNS, read_properties

pytestmark = pytest.mark.spark

FIXTURES = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "hudi"
TABLES = ["v6_nonpartitioned", "v8_simplekeygen_nonhivestyle"]
BASE_FILE = re.compile(r"([^_]+)_([^_]+)_(\d+)\.parquet")


def unzip(name: str, dest: Path) -> Path:
    """Unzip a fixture into ``dest`` (without ``__MACOSX/``) and return the table root."""
    archive = FIXTURES / f"{name}.zip"
    assert archive.is_file(), f"Hudi fixture {archive} not found: shared/ must sit beside the repo"
    with zipfile.ZipFile(archive) as z:
        members = [m for m in z.namelist() if not m.startswith("__MACOSX")]
        z.extractall(dest, members)
    return dest / name


def state(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` (hidden ones too), files with their SHA-256."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        out[rel] = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "<dir>"
    return out


def file_slices(root: Path) -> tuple[list[Path], list[Path]]:
    """(live, stale) base files: per file group, the file with the greatest instant is live."""
    groups: dict[tuple[str, str], list[tuple[str, Path]]] = {}
    for p in root.rglob("*.parquet"):
        if ".hoodie" in p.relative_to(root).parts:
            continue
        m = BASE_FILE.fullmatch(p.name)
        assert m, p.name
        groups.setdefault((str(p.parent), m.group(1)), []).append((m.group(3), p))
    live, stale = [], []
    for slices in groups.values():
        slices.sort()
        live.append(slices[-1][1])
        stale.extend(p for _, p in slices[:-1])
    return live, stale


def plain(value: Any) -> Any:
    """Spark values made comparable (Rows -> dicts, bytearrays -> bytes, maps sorted)."""
    if hasattr(value, "asDict"):
        return {k: plain(v) for k, v in value.asDict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def rows(df) -> list[dict[str, Any]]:
    return sorted((plain(r) for r in df.collect()), key=lambda r: r["id"])


def direct(spark, files: list[Path], columns: list[str]) -> list[dict[str, Any]]:
    """Rows of ``files`` read by Spark itself, without evonb, in ``columns``."""
    return rows(spark.read.parquet(*[str(p) for p in files]).select(*columns))


@pytest.fixture(params=TABLES)
def hudi_table(request, tmp_path) -> Path:
    return unzip(request.param, tmp_path)


def test_adopt_reads_exactly_the_live_slices(spark, hudi_table):
    root = hudi_table
    before = state(root)
    live, stale = file_slices(root)
    assert stale, "the fixture keeps an older file slice"

    t = convert(root, spark=spark)

    after = state(root)
    assert {k: v for k, v in after.items() if not k.startswith(".evo")} == before
    columns = t.schema.column_names
    assert not [c for c in columns if c.startswith("_hoodie_")]
    assert t.primary_key == ("id",)
    assert t.precombine == "longField"
    expected = direct(spark, live, columns)
    got = rows(t.read())
    assert len(got) == 4
    assert got == expected
    # an updated row shows its latest values: stale-slice versions of rows do not appear
    old = direct(spark, stale, columns)
    outdated = [r for r in old if r not in expected]
    assert outdated
    assert not [r for r in outdated if r in got]
    assert len({r["id"] for r in got}) == len(got)
    # the convert commit binds every live file to the first schema version
    convert_commit = t.timeline.last_completed()
    assert convert_commit.operation == "convert"
    assert {f["path"] for f in convert_commit.metadata["added"]} == {
        p.relative_to(root).as_posix() for p in live
    }
    assert sum(f.rows for f in t.snapshot().files) == 4
    with pytest.raises(TableExistsError):
        convert(root, spark=spark)


def test_types_are_carried_over(spark, tmp_path):
    root = unzip("v8_simplekeygen_nonhivestyle", tmp_path)
    t = convert(root, spark=spark)
    s = t.schema
    assert str(s.find("decimalField").type) == "decimal(10,5)"
    assert str(s.find("dateField").type) == "date"
    assert str(s.find("timestampField").type) == "timestamp"
    assert str(s.find("binaryField").type) == "binary"
    assert str(s.find("longField").type) == "bigint"
    assert s.has("arrayField.element.arr_struct_f1")
    assert s.has("mapField.value.map_field_value_struct_f2")
    assert s.has("structField.child_struct.child_field1")
    assert t.partition_by == ("byteField",)
    diana = next(r for r in rows(t.read()) if r["id"] == 4)
    assert diana["decimalField"] == Decimal("65432.12345")
    assert diana["binaryField"] == b"new binary data"
    assert diana["arrayField"] == [{"arr_struct_f1": "orange", "arr_struct_f2": 900},
                                   {"arr_struct_f1": "gray", "arr_struct_f2": 1000}]
    assert diana["structField"]["child_struct"] == {"child_field1": 987.654,
                                                    "child_field2": True}


def test_keep_meta_columns(spark, tmp_path):
    root = unzip("v6_nonpartitioned", tmp_path)
    live, _ = file_slices(root)
    t = convert(root, spark=spark, keep_meta_columns=True)
    columns = t.schema.column_names
    assert columns[:5] == list(META_COLUMNS[:5])
    assert rows(t.read()) == direct(spark, live, columns)


def test_evolve_and_upsert_after_adoption(spark, hudi_table, monkeypatch):
    from pyspark.sql import functions as F

    import evonb.spark.writes as writes

    # the exact key lookup, so that the upsert rewrites only the file group holding its key
    # (small merges otherwise rewrite every candidate: adopted files have no key statistics)
    monkeypatch.setattr(writes, "DEFAULT_DIRECT_MERGE_BYTES", 0)

    root = hudi_table
    before = state(root)
    live, _ = file_slices(root)
    t = convert(root, spark=spark)
    adopted_at = t.timeline.last_completed().instant
    original_columns = t.schema.column_names
    original = rows(t.read())

    t.alter("ALTER TABLE t RENAME COLUMN structField.field1 TO first_name")
    t.alter("ALTER TABLE t RENAME COLUMN arrayField.element.arr_struct_f1 TO color")
    t.alter("ALTER TABLE t DROP COLUMN doubleField")
    t.alter("ALTER TABLE t ADD COLUMN note string DEFAULT 'n/a'")
    t.alter("ALTER TABLE t ALTER COLUMN intField TYPE bigint")
    t.alter("ALTER TABLE t ADD COLUMN structField.child_struct.extra int")

    evolved = rows(t.read())
    assert "doubleField" not in t.schema.column_names
    for old, new in zip(original, evolved, strict=True):
        assert new["structField"]["first_name"] == old["structField"]["field1"]
        assert new["structField"]["child_struct"]["extra"] is None
        assert [e["color"] for e in new["arrayField"]] == [
            e["arr_struct_f1"] for e in old["arrayField"]]
        assert new["note"] == "n/a"
        assert new["intField"] == old["intField"]
        assert new["mapField"] == old["mapField"]

    df = t.read()
    update = (df.filter("id = 1")
              .withColumn("longField", F.col("longField") + 1)
              .withColumn("name", F.lit("Alicia"))
              .withColumn("note", F.lit("updated")))
    insert = (df.filter("id = 2").withColumn("id", F.lit(99))
              .withColumn("note", F.lit("inserted")))
    t.write(update.unionByName(insert), mode="upsert")

    final = {r["id"]: r for r in rows(t.read())}
    assert len(final) == 5
    assert final[1]["name"] == "Alicia" and final[1]["note"] == "updated"
    assert final[99]["note"] == "inserted"
    assert final[99]["structField"] == final[2]["structField"]
    untouched = {r["id"]: r for r in evolved if r["id"] != 1}
    for key, row in untouched.items():
        assert final[key] == row
    kinds = {f.kind for f in t.snapshot().files}
    # the upsert rewrote the file group of id 1; other Hudi files stay and are merged by ID
    assert kinds == ({"adopted", "base"} if len(live) > 1 else {"base"})

    # time travel to the adoption commit: the original data in the original schema
    back = t.read(as_of=adopted_at)
    assert back.columns == original_columns
    assert rows(back) == original == direct(spark, live, original_columns)
    # the Hudi files were never touched
    after = state(root)
    assert all(after.get(k) == v for k, v in before.items())


def test_new_columns_never_read_hudi_data(spark, tmp_path):
    root = unzip("v8_simplekeygen_nonhivestyle", tmp_path)
    t = convert(root, spark=spark)
    t.alter("ALTER TABLE t ADD COLUMN _hoodie_record_key string")
    t.alter("ALTER TABLE t DROP COLUMN name")
    t.alter("ALTER TABLE t ADD COLUMN name string")
    got = rows(t.read())
    assert len(got) == 4
    assert all(r["_hoodie_record_key"] is None and r["name"] is None for r in got)


def test_files_of_failed_writes_are_ignored(spark, hudi_table):
    root = hudi_table
    live, _ = file_slices(root)
    src = live[0]
    file_id = BASE_FILE.fullmatch(src.name).group(1)
    # a newer slice whose instant never completed (a failed write Hudi has not rolled back)
    failed = src.with_name(f"{file_id}_9-9-9_29990101000000000.parquet")
    shutil.copy(src, failed)
    t = convert(root, spark=spark)
    added = {f["path"] for f in t.timeline.last_completed().metadata["added"]}
    assert failed.relative_to(root).as_posix() not in added
    assert src.relative_to(root).as_posix() in added
    assert t.read().count() == 4


def test_adopted_rows_carry_the_adoption_instant(spark, tmp_path):
    root = unzip("v8_simplekeygen_nonhivestyle", tmp_path)
    t = convert(root, spark=spark)
    adopted_at = t.timeline.last_completed().instant
    stamps = {r["_evo_commit_time"] for r in t.read(meta_columns=True).collect()}
    assert stamps == {adopted_at}
    assert t.read_incremental(start="00000000000000000").count() == 4


def test_rollback_never_deletes_adopted_files(spark, tmp_path):
    root = unzip("v6_nonpartitioned", tmp_path)
    before = state(root)
    t = convert(root, spark=spark)
    with contextlib.suppress(Exception):
        t.rollback()
    after = state(root)
    assert all(after.get(k) == v for k, v in before.items())


def _edit_properties(root: Path, key: str, value: str) -> None:
    path = root / ".hoodie" / "hoodie.properties"
    text = path.read_text(encoding="latin-1")
    text, n = re.subn(rf"(?m)^{re.escape(key)}=.*$", f"{key}={value}", text)
    assert n == 1
    path.write_text(text, encoding="latin-1")
    assert read_properties(path)[key] == value


def test_overrides_and_a_default_precombine_without_column(spark, tmp_path):
    root = unzip("v6_nonpartitioned", tmp_path)
    _edit_properties(root, "hoodie.table.precombine.field", "ts")
    t = convert(root, spark=spark, name="trips", primary_key=(),
                properties={"evonb.write.add_columns": False})
    assert t.name == "trips"
    assert t.primary_key == () and t.precombine is None
    assert t.config.properties["evonb.write.add_columns"] == "false"
    assert t.config.properties["evonb.adopted.source"] == "hudi"


@pytest.mark.parametrize(("name", "key", "value", "words"), [
    ("v6_nonpartitioned", "hoodie.table.type", "MERGE_ON_READ", ("merge-on-read", "compact")),
    ("v8_simplekeygen_nonhivestyle", "hoodie.table.type", "MERGE_ON_READ",
     ("merge-on-read", "compact")),
    ("v6_nonpartitioned", "hoodie.table.version", "5", ("table version 5", "6", "8")),
    ("v8_simplekeygen_nonhivestyle", "hoodie.table.version", "9", ("table version 9",)),
])
def test_refused_tables_are_left_unchanged(spark, tmp_path, name, key, value, words):
    root = unzip(name, tmp_path)
    _edit_properties(root, key, value)
    before = state(root)
    with pytest.raises(UnsupportedTableError) as info:
        convert(root, spark=spark)
    for word in words:
        assert word in str(info.value)
    assert state(root) == before


def test_log_files_are_refused(spark, tmp_path):
    root = unzip("v8_simplekeygen_nonhivestyle", tmp_path)
    log = root / "10" / ".7b0ea4f9-3768-4e87-b12c-8d33efd22b55-0_20250713011316909.log.1_0-1-1"
    log.write_bytes(b"#HUDI#")
    before = state(root)
    with pytest.raises(UnsupportedTableError, match="log files"):
        convert(root, spark=spark)
    assert state(root) == before


def test_java_properties_parser(tmp_path):
    path = tmp_path / "p.properties"
    path.write_text(
        "# comment\n! other\n"
        "a=1\n"
        "b : two words\n"
        "c\\:d=e\\=f\n"
        "long=first \\\n    second\n"
        "uni=\\u00e9t\\u00e9\n"
        "  spaced   value\n",
        encoding="latin-1",
    )
    props = read_properties(path)
    assert props == {"a": "1", "b": "two words", "c:d": "e=f", "long": "first second",
                     "uni": "été", "spaced": "value"}
