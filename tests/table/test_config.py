"""The table config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evonb.errors import (
    EvoError,
    MetadataCorruptError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedTableError,
)
from evonb.schema.schema import Schema
from evonb.schema.types import BIGINT, STRING, TIMESTAMP, NestedField, StructType
from evonb.table.config import FrozenProperties, TableConfig


def _config() -> TableConfig:
    return TableConfig(
        name="events",
        table_type="mor",
        primary_key=("id", "region"),
        precombine="ts",
        partition_by=("region",),
        properties={"evonb.lock.provider": "file", "compact.every": "5", "mor.enabled": True},
        created="20260101000000000",
        primary_key_ids=(1, 2),
        precombine_id=3,
        partition_ids=(2,),
    )


def test_round_trip(tmp_path: Path) -> None:
    cfg = _config()
    assert cfg.properties["mor.enabled"] == "true"
    assert TableConfig.from_dict(cfg.to_dict()) == cfg
    path = cfg.save(tmp_path)
    assert path == tmp_path / ".evo" / "table.json"
    assert TableConfig.exists(tmp_path)
    loaded = TableConfig.load(tmp_path)
    assert loaded == cfg
    assert hash(loaded) == hash(cfg)
    assert loaded.primary_key == ("id", "region") and loaded.partition_ids == (2,)
    assert isinstance(loaded.properties, FrozenProperties)
    assert dict(loaded.properties) == {
        "evonb.lock.provider": "file", "compact.every": "5", "mor.enabled": "true"
    }
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert on_disk["table-type"] == "mor" and on_disk["primary-key-ids"] == [1, 2]


def test_defaults_and_normalisation() -> None:
    cfg = TableConfig("t", "COPY_ON_WRITE", primary_key=[], partition_by=["a"])  # type: ignore[arg-type]
    assert cfg.table_type == "cow"
    assert cfg.primary_key is None and cfg.partition_by == ("a",)
    assert cfg.properties == {} and cfg.format_version == 1
    assert TableConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(EvoError, match="table type"):
        TableConfig("t", "hybrid")  # type: ignore[arg-type]
    with pytest.raises(EvoError):
        TableConfig("t", "cow", primary_key=("a", "b"), primary_key_ids=(1,))
    with pytest.raises(TypeError):
        cfg.properties["x"] = "y"  # type: ignore[index]


def test_typed_properties() -> None:
    cfg = _config().with_properties({"flag": "Yes", "n": " 42 ", "f": "0.5"}, off=False)
    assert cfg.property("n") == " 42 " and cfg.property("missing", "d") == "d"
    assert cfg.bool_property("flag") is True
    assert cfg.bool_property("off") is False
    assert cfg.bool_property("missing", True) is True
    assert cfg.int_property("n") == 42 and cfg.int_property("missing", 7) == 7
    assert cfg.float_property("f") == 0.5
    with pytest.raises(EvoError, match="not a boolean"):
        cfg.bool_property("n")
    with pytest.raises(EvoError, match="not an integer"):
        cfg.int_property("flag")
    trimmed = cfg.without_properties("flag", "nope")
    assert "flag" not in trimmed.properties and "flag" in cfg.properties


def test_ids_survive_renames() -> None:
    schema = Schema(
        (
            NestedField(1, "id", BIGINT, False),
            NestedField(2, "meta", StructType((NestedField(3, "region", STRING),))),
            NestedField(4, "ts", TIMESTAMP),
        )
    )
    cfg = TableConfig("t", "cow", primary_key=("id",), precombine="ts",
                      partition_by=("meta.region",)).resolve_ids(schema)
    assert cfg.primary_key_ids == (1,) and cfg.precombine_id == 4 and cfg.partition_ids == (3,)
    renamed = Schema(
        (
            NestedField(1, "event_id", BIGINT, False),
            NestedField(2, "meta", StructType((NestedField(3, "zone", STRING),))),
            NestedField(4, "event_time", TIMESTAMP),
        )
    )
    fresh = cfg.resolve_names(renamed)
    assert fresh.primary_key == ("event_id",)
    assert fresh.precombine == "event_time" and fresh.partition_by == ("meta.zone",)
    assert fresh.primary_key_ids == cfg.primary_key_ids


def test_missing_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError) as info:
        TableConfig.load(tmp_path / "nothing")
    assert "No evonb table at" in str(info.value) and info.value.hint
    assert not TableConfig.exists(tmp_path)


def test_exclusive_save(tmp_path: Path) -> None:
    _config().save(tmp_path, exclusive=True)
    with pytest.raises(TableExistsError):
        _config().replace(name="other").save(tmp_path, exclusive=True)
    assert TableConfig.load(tmp_path).name == "events"
    _config().replace(name="renamed").save(tmp_path)
    assert TableConfig.load(tmp_path).name == "renamed"


@pytest.mark.parametrize(
    "content",
    [b'{"name": "t", "table-ty', b"\x80\x81", b"[]", b'{"name": "t"}',
     b'{"name": "t", "table-type": "weird"}', b'{"name": 3, "table-type": "cow"}',
     b'{"name": "t", "table-type": "cow", "primary-key-ids": ["x"]}'],
    ids=["truncated", "binary", "not-object", "no-type", "bad-type", "bad-name", "bad-ids"],
)
def test_corrupt_config(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / ".evo" / "table.json"
    path.parent.mkdir()
    path.write_bytes(content)
    with pytest.raises(MetadataCorruptError) as info:
        TableConfig.load(tmp_path)
    assert info.value.path == str(path)


def test_newer_format_version(tmp_path: Path) -> None:
    data = _config().to_dict() | {"format-version": 99}
    with pytest.raises(UnsupportedTableError, match="upgrade"):
        TableConfig.from_dict(data)
