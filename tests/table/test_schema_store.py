"""The schema history store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evonb.errors import CommitNotFoundError, EvoError, MetadataCorruptError
from evonb.schema.schema import Schema
from evonb.schema.types import BIGINT, DOUBLE, STRING, NestedField, StructType
from evonb.table.instants import INITIAL_INSTANT
from evonb.table.schema_store import SchemaStore

V1, V2, V3 = "20260101000000000", "20260201000000000", "20260301000000000"


def _schema(version: str, extra: bool = False) -> Schema:
    fields = [
        NestedField(1, "id", BIGINT, False),
        NestedField(2, "name", STRING, comment="ünïcode"),
        NestedField(3, "loc", StructType((NestedField(4, "lat", DOUBLE),))),
    ]
    if extra:
        fields.append(NestedField(5, "score", DOUBLE, default=1.5))
    return Schema(tuple(fields), version_id=version)


def test_round_trip_and_versions(tmp_path: Path) -> None:
    store = SchemaStore(tmp_path)
    assert store.versions() == []
    with pytest.raises(CommitNotFoundError):
        store.latest()
    for v, extra in [(V2, True), (INITIAL_INSTANT, False), (V1, False)]:
        path = store.save(_schema(v, extra))
        assert path == tmp_path / ".evo" / "schemas" / f"{v}.schema.json"
    assert store.versions() == [INITIAL_INSTANT, V1, V2]
    assert V1 in store and V3 not in store
    loaded = store.load(V2)
    assert loaded == _schema(V2, True)
    assert loaded.to_dict() == _schema(V2, True).to_dict()
    assert store.load(V2) is loaded  # cached
    assert SchemaStore(tmp_path).load(V2) == loaded  # from disk in a fresh store
    assert store.latest().version_id == V2


def test_a_schema_file_holds_a_top_level_field_per_line(tmp_path: Path) -> None:
    path = SchemaStore(tmp_path).save(_schema(V2, True))
    lines = path.read_text(encoding="utf-8").splitlines()
    fields = _schema(V2, True).to_dict()["fields"]
    start = lines.index('"fields":[')
    assert [json.loads(line.rstrip(",")) for line in lines[start + 1:start + 1 + len(fields)]] \
        == fields
    assert json.loads(path.read_text()) == _schema(V2, True).to_dict()


def test_save_is_idempotent_but_never_overwrites(tmp_path: Path) -> None:
    store = SchemaStore(tmp_path)
    store.save(_schema(V1))
    before = store.file_of(V1).read_bytes()
    store.save(_schema(V1))  # identical: no-op
    with pytest.raises(EvoError, match="already exists"):
        store.save(_schema(V1, extra=True))
    assert store.file_of(V1).read_bytes() == before


def test_missing_version_names_nearest(tmp_path: Path) -> None:
    store = SchemaStore(tmp_path)
    for v in (V1, V2, V3):
        store.save(_schema(v))
    with pytest.raises(CommitNotFoundError) as info:
        store.load("20260215000000000")
    assert info.value.nearest == [V1, V2, V3]
    assert "schema version" in str(info.value)
    with pytest.raises(CommitNotFoundError) as info:
        store.load("../../etc/passwd")
    with pytest.raises(CommitNotFoundError):
        store.delete("20260215000000000")


def test_version_at(tmp_path: Path) -> None:
    store = SchemaStore(tmp_path)
    for v in (V1, V2, V3):
        store.save(_schema(v))
    assert store.version_at(V1) == V1
    assert store.version_at("20260215000000000") == V2
    assert store.version_at("2026-12-31") == V3
    assert store.at("2026-02-01 00:00:00").version_id == V2
    with pytest.raises(CommitNotFoundError) as info:
        store.version_at("20251231000000000")
    assert info.value.nearest == [V1, V2, V3]


def test_delete(tmp_path: Path) -> None:
    store = SchemaStore(tmp_path)
    store.save(_schema(V1))
    store.save(_schema(V2))
    store.load(V2)
    store.delete(V2)
    assert store.versions() == [V1]
    with pytest.raises(CommitNotFoundError):
        store.load(V2)
    assert store.latest().version_id == V1


@pytest.mark.parametrize(
    "content",
    [
        b'{"format-version": 1, "fields": [',
        b"\xff\xfe\x00",
        b"[]",
        b'{"format-version": 1, "type": "struct", "fields": [{"id": 1}]}',
        json.dumps(_schema(V2).to_dict()).encode(),  # another version's schema
    ],
    ids=["truncated", "binary", "not-object", "bad-field", "wrong-version"],
)
def test_corrupt_schema_file_is_named(tmp_path: Path, content: bytes) -> None:
    store = SchemaStore(tmp_path)
    store.save(_schema(V1))
    path = store.file_of(V1)
    path.write_bytes(content)
    with pytest.raises(MetadataCorruptError) as info:
        SchemaStore(tmp_path).load(V1)
    assert info.value.path == str(path)


def test_ignores_temp_and_foreign_files(tmp_path: Path) -> None:
    store = SchemaStore(tmp_path)
    store.save(_schema(V1))
    for name in [f".{V2}.schema.json.abc.tmp", "notes.txt", f"{V3}.schema.json.bak"]:
        (store.path / name).write_text("x")
    assert store.versions() == [V1]
