"""``History``: commits as the user sees them, and the schema versions by name."""

from __future__ import annotations

import pytest

from evonb.schema.schema import Schema
from evonb.table.history import Commit, History, SchemaVersions
from evonb.table.timeline import CommitRecord

V = "20260101000000000"
F = {"path": "a.parquet", "version": V, "instant": "20260101000000001", "rows": 4}


def test_a_data_commit_counts_its_files_and_rows():
    rec = CommitRecord("20260101000000001", "commit", {
        "operation": "upsert", "schema_version": V, "added": [F], "removed": ["old.parquet"],
        "rows_written": 4, "completion_time": "20260101000000009"})
    c = Commit.from_record(rec, schema_name="v1")
    assert (c.operation, c.files_added, c.files_removed, c.rows_written) == ("upsert", 1, 1, 4)
    assert c.effect == "+1/-1 files, 4 rows"
    assert c.time == "2026-01-01 00:00:00.001+00:00"
    assert c.completed == "2026-01-01 00:00:00.009+00:00"
    assert c.schema_label == f"v1 ({V})"


def test_clean_and_rollback_commits_say_what_they_deleted():
    clean = Commit.from_record(CommitRecord("20260102000000000", "clean", {
        "schema_version": V, "cleaned_files": ["a", "b"], "cleaned_versions": 1,
        "earliest_retained": "20260101000000005"}))
    assert clean.effect == ("deleted 2 files and 1 schema version; commits from "
                            "20260101000000005 on stay readable")
    assert clean.completion_time == clean.instant  # no completion time recorded
    undo = Commit.from_record(CommitRecord("20260103000000000", "rollback", {
        "operation": "rollback", "schema_version": V, "rolled_back": ["20260101000000001"],
        "files_deleted": ["a.parquet"]}))
    assert undo.effect == ("rolled back 20260101000000001; deleted 1 file and "
                           "0 schema versions")


def test_history_is_a_sequence_with_rows_and_escaped_html():
    rec = CommitRecord("20260101000000001", "commit", {"operation": "<b>", "schema_version": V})
    h = History((Commit.from_record(rec),), table_name="t&u")
    assert len(h) == 1 and h[0].operation == "<b>"
    assert h.rows()[0]["instant"] == "20260101000000001"
    html = h._repr_html_()
    assert "History of t&amp;u" in html and "&lt;b&gt;" in html and "<b>History" in html


def test_schema_versions_are_found_by_name():
    s0 = Schema.from_ddl("id int")
    s1 = Schema.from_ddl("id int, v string", version_id="20260101000000001")
    versions = SchemaVersions([s0, s1], ["v0", "v1"], table_name="t")
    assert versions.named(" V1 ") is s1
    with pytest.raises(KeyError):
        versions.named("v2")
    assert repr(versions).splitlines()[0] == "Schema versions of t: 2"
