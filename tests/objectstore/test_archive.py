"""The timeline's archive in a bucket: archiving happens there (conditional PUT, then
deletes), the timeline folder stays small, and a fresh process opens a long history with a
handful of requests even without checkpoints."""

from __future__ import annotations

from pathlib import Path

import evonb
from bench.object_storage import upload
from evonb.table.check import check_table
from evonb.table.fileio import object_store_io
from evonb.table.names import parse_timeline_file
from evonb.table.timeline import ARCHIVE_PROPERTY
from tests.objectstore.conftest import count_requests, keys

TIMELINE = ".evo/timeline/"


def _view(where: str, upto: int) -> dict[str, object]:
    t = evonb.open_table(where)
    commits = t.timeline.completed()[:upto]
    return {"timeline": [(r.instant, r.action, r.completion, r.metadata.to_json())
                         for r in commits],
            "schemas": [str(t.schema_at(r.instant)) for r in commits[:: max(upto // 10, 1)]]}


def _timeline_files(s3_client, bucket: str, name: str) -> list[str]:  # type: ignore[no-untyped-def]
    """Files directly in the timeline folder (not in its archive or checkpoint folders)."""
    prefix = f"{name}/{TIMELINE}"
    return [k.removeprefix(prefix) for k in keys(s3_client, bucket, prefix)
            if "/" not in k.removeprefix(prefix)]


def test_a_long_history_is_archived_in_the_bucket(
        tmp_path: Path, s3_client, bucket: str) -> None:  # type: ignore[no-untyped-def]
    local = tmp_path / "t"
    t = evonb.create_table(str(local), "id bigint not null, v string", primary_key="id",
                           properties={ARCHIVE_PROPERTY: "0"})
    for i in range(149):
        t.alter(f"ALTER TABLE t ADD COLUMN c{i} int")
    upload(local, bucket, "t", client=s3_client)
    where = f"s3://{bucket}/t"
    before = _view(where, 150)
    assert len(_timeline_files(s3_client, bucket, "t")) == 300  # completed and requested

    remote = evonb.open_table(where)
    remote.set_properties({ARCHIVE_PROPERTY: "5"})
    remote.alter("ALTER TABLE t RENAME COLUMN c0 TO first")  # archives, in the bucket
    files = _timeline_files(s3_client, bucket, "t")
    completed = [n for n in files if (p := parse_timeline_file(n)) and p.state == "completed"]
    assert len(completed) == 5 and len(files) <= 10
    assert len(keys(s3_client, bucket, f"t/{TIMELINE}archive/")) == 1
    object_store_io.cache_clear()
    assert _view(where, 150) == before
    assert len(evonb.open_table(where).history()) == 151
    assert evonb.open_table(where).schema.find("first") is not None

    # a fresh process: one listing of each folder and one read of the archive, not a read
    # per commit, with or without checkpoints
    for key in keys(s3_client, bucket, f"t/{TIMELINE}checkpoints/"):
        s3_client.delete_object(Bucket=bucket, Key=key)
    object_store_io.cache_clear()
    _, seen = count_requests(lambda: evonb.open_table(where).snapshot())
    assert sum(seen.values()) < 20, seen
    report = check_table(where)
    assert report.ok and report.stats["archived"] == 146, report.render()
