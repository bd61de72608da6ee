"""Commit metadata is a typed, frozen record, checked when built and when read."""

from __future__ import annotations

import dataclasses
import json

import pytest

from evonb.errors import EvoError, MetadataCorruptError
from evonb.table.commit import CommitMetadata
from evonb.table.data_file import DataFile
from evonb.table.table import create_table, open_table
from evonb.table.timeline import CommitRecord, State
from evonb.table.transaction import Transaction

V = "20260101000000000"
F = DataFile(path="p=1/a_0_20260101000000001.parquet", version=V, instant="20260101000000001",
             partition="p=1", rows=3, bytes=100)


def test_built_record_is_typed_and_equals_its_json():
    meta = CommitMetadata.of("upsert", V, added=[F], removed=["old.parquet"], rows_written=3)
    assert meta.operation == "upsert" and meta.schema_version == V
    assert meta.added == (F,) and meta.removed == ("old.parquet",)
    assert dict(meta.details) == {"rows_written": 3}
    body = meta.to_json()
    assert body == {"operation": "upsert", "schema_version": V, "added": [F.to_dict()],
                    "removed": ["old.parquet"], "rows_written": 3}
    assert meta == body and meta["rows_written"] == 3 and meta.get("nothing") is None
    again = CommitMetadata.parse(json.loads(json.dumps(body)), where="f")
    assert again == meta and again.added == meta.added


def test_record_is_frozen():
    meta = CommitMetadata.of("alter", V, changes=[])
    with pytest.raises(dataclasses.FrozenInstanceError):
        meta.operation = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        meta["operation"] = "x"  # type: ignore[index]
    with pytest.raises(TypeError):
        meta.details["changes"] = [1]  # type: ignore[index]
    assert meta.with_changes(ddl="ALTER ...")["ddl"] == "ALTER ..." and "ddl" not in meta


@pytest.mark.parametrize(("body", "defect"), [
    ({"operation": "x", "schema_version": "v1"}, "schema_version must be a 17-digit instant"),
    ({"operation": "x", "schema_version": V, "removed": ["../out"]}, "removed must be"),
    ({"operation": "x", "schema_version": V,
      "added": [{"path": "/abs", "version": V, "instant": V}]}, "added[0].path"),
    ({"operation": "x", "schema_version": V, "completion_time": "soon"}, "completion_time"),
])
def test_invalid_metadata_is_refused_when_built_and_when_read(body, defect):
    with pytest.raises(EvoError, match="bug in evonb") as built:
        CommitMetadata.from_json(body, where="the commit")
    assert defect in str(built.value)
    with pytest.raises(MetadataCorruptError, match="timeline/x") as read:
        CommitMetadata.parse(body, where="timeline/x")
    assert defect in str(read.value)


def test_a_commit_record_checks_a_mapping_it_is_given():
    rec = CommitRecord(V, "commit", {"operation": "insert", "schema_version": V})
    assert isinstance(rec.metadata, CommitMetadata) and rec.operation == "insert"
    with pytest.raises(MetadataCorruptError):
        CommitRecord(V, "commit", {"added": "not a list"})


def test_an_invalid_commit_is_never_written(tmp_path):
    table = create_table(tmp_path / "t", "id BIGINT")
    before = [r.instant for r in table.timeline.completed()]
    with pytest.raises(EvoError, match="schema_version"), \
            Transaction(table, "commit", plan={"operation": "insert"}) as txn:
        txn.complete({"operation": "insert", "added": [], "removed": []})
    again = open_table(tmp_path / "t")
    assert [r.instant for r in again.timeline.completed()] == before
    assert again.timeline.pending() == []
    assert not [i for i in again.timeline.instants() if i.state is State.COMPLETED
                and i.timestamp not in before]


def test_the_completion_time_is_added_without_changing_the_rest():
    meta = CommitMetadata.of("upsert", V, added=[F], rows_written=3)
    done = meta.completed_at("20260101000000009")
    assert done.completion_time == "20260101000000009"
    assert done == {**meta.to_json(), "completion_time": "20260101000000009"}
    assert done.added == meta.added and "completion_time" not in meta
