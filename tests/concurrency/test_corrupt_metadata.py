"""A truncated or corrupted metadata file raises MetadataCorruptError naming that file."""

from __future__ import annotations

from pathlib import Path

import pytest

import evonb
from evonb.errors import MetadataCorruptError
from evonb.table.check import check_table

pytestmark = pytest.mark.spark


@pytest.fixture
def table(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint not null, v string", primary_key="id")
    t.write(spark.createDataFrame([(1, "a")], "id bigint, v string"))
    t.alter("ALTER TABLE t ADD COLUMNS (x int)")
    return t


def kind_file(t, kind: str) -> Path:
    evo = t.root / ".evo"
    last = t.timeline.last_completed()
    file_version = t.snapshot().files[0].version  # the read needs this layout
    return {
        "table.json": evo / "table.json",
        "commit": evo / "timeline" / f"{last.instant}.{last.action}",
        "schema": evo / "schemas" / f"{last.schema_version}.schema.json",
        "layout": evo / "schemas" / f"{file_version}.layout.json",
    }[kind]


WRONG_SHAPE = {
    "table.json": '{"name": 5, "table-type": "cow"}',
    "commit": '{"schema_version": "20260101000000000", "added": "all of them"}',
    "schema": '{"format-version": 1, "type": "struct", "fields": "none"}',
    "layout": '{"physical": {"1": "id"}, "used": {}}',
}


def damage(path: Path, how: str, kind: str) -> None:
    if how == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(b"\xff\xfe\x00 not json")
    else:
        path.write_text(WRONG_SHAPE[kind])


@pytest.mark.parametrize("how", ["truncated", "garbage", "wrong-shape"])
@pytest.mark.parametrize("kind", ["table.json", "commit", "schema", "layout"])
def test_corrupt_metadata_is_named(table, kind: str, how: str) -> None:
    path = kind_file(table, kind)
    damage(path, how, kind)
    with pytest.raises(MetadataCorruptError) as info:
        t = evonb.open_table(table.path)
        t.read().collect()
    assert info.value.path == str(path)
    assert str(path) in str(info.value)
    report = check_table(table.path)
    rel = path.relative_to(table.root).as_posix()
    assert any(p.kind == "corrupt-metadata" and p.path == rel for p in report.problems), (
        report.render())


def test_missing_layout_is_named(table) -> None:
    path = kind_file(table, "layout")
    path.unlink()
    with pytest.raises(MetadataCorruptError) as info:
        evonb.open_table(table.path).read()
    assert info.value.path == str(path)


def test_a_write_on_a_corrupt_latest_layout_is_refused(spark, table) -> None:
    version = table.schema.version_id
    path = table.root / ".evo" / "schemas" / f"{version}.layout.json"
    path.write_text("{")
    with pytest.raises(MetadataCorruptError) as info:
        evonb.open_table(table.path).write(spark.createDataFrame([(2, "b")], "id bigint, v string"))
    assert info.value.path == str(path)
