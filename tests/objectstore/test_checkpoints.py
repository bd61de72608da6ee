"""Timeline checkpoints on object storage: opening a table costs a bounded number of requests
however long its history, and a checkpoint is a pure cache (deleting it, corrupting it or
forging it changes no read; rollback past it stays correct)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import evonb
from bench.object_storage import upload
from evonb.table.check import check_table
from evonb.table.fileio import object_store_io
from evonb.table.timeline import ARCHIVE_PROPERTY, CHECKPOINT_PROPERTY
from tests.objectstore.conftest import count_requests, keys

CHECKPOINTS = ".evo/timeline/checkpoints/"


def _history_table(local: Path, commits: int, every: int = 5) -> None:
    """A local table of ``commits`` completed commits (the create, then ADD COLUMNs), none
    archived (these tests are about checkpoints alone: tests/objectstore/test_archive.py)."""
    t = evonb.create_table(str(local), "id bigint not null, v string", primary_key="id",
                           properties={CHECKPOINT_PROPERTY: str(every), ARCHIVE_PROPERTY: "0"})
    for i in range(commits - 1):
        t.alter(f"ALTER TABLE t ADD COLUMN c{i} int")


def _in_bucket(tmp_path: Path, s3_client, bucket: str, name: str, commits: int,  # type: ignore[no-untyped-def]
               every: int = 5) -> str:
    """A table of ``commits`` commits built locally, copied to the bucket, then one more
    commit there (which writes the checkpoint: local tables write none)."""
    _history_table(tmp_path / name, commits - 1, every)
    upload(tmp_path / name, bucket, name, client=s3_client)
    where = f"s3://{bucket}/{name}"
    evonb.open_table(where).alter("ALTER TABLE t ADD COLUMN last int")
    return where


def _view(where: str) -> dict[str, object]:
    """Everything a reader sees of the table's timeline and schemas."""
    t = evonb.open_table(where)
    return {
        "history": [(c.instant, c.operation) for c in t.history()],
        "timeline": [(r.instant, r.action, r.completion, r.metadata.to_json())
                     for r in t.timeline.completed()],
        "schema": str(t.schema),
        "versions": t.version_ids(),
        "snapshot": (t.snapshot().instant, t.snapshot().schema_version,
                     sorted(f.path for f in t.snapshot().files)),
        "as_of_first": str(t.schema_at(t.history()[0].instant)),
    }


def _checkpoints(s3_client, bucket: str, name: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [k for k in keys(s3_client, bucket, f"{name}/{CHECKPOINTS}")]


def _cold_open_requests(where: str) -> int:
    object_store_io.cache_clear()  # a new process: nothing read yet
    _, seen = count_requests(lambda: evonb.open_table(where).snapshot())
    return sum(seen.values())


def test_open_table_requests_do_not_grow_with_commits(
        tmp_path: Path, s3_client, bucket: str) -> None:  # type: ignore[no-untyped-def]
    small = _in_bucket(tmp_path, s3_client, bucket, "small", 10)
    large = _in_bucket(tmp_path, s3_client, bucket, "large", 200)
    assert len(evonb.open_table(large).history()) == 200
    assert len(_checkpoints(s3_client, bucket, "large")) == 1
    few, many = _cold_open_requests(small), _cold_open_requests(large)
    assert many <= few + 2, (few, many)
    assert many < 12
    # without its checkpoint the same open reads every commit file
    for key in _checkpoints(s3_client, bucket, "large"):
        s3_client.delete_object(Bucket=bucket, Key=key)
    assert _cold_open_requests(large) >= 200


def test_a_checkpointed_table_reads_as_without_its_checkpoints(
        tmp_path: Path, s3_client, bucket: str) -> None:  # type: ignore[no-untyped-def]
    where = _in_bucket(tmp_path, s3_client, bucket, "t", 12, every=4)
    t = evonb.open_table(where)
    for i in range(5):  # commits after the checkpoint, and a second checkpoint
        t.alter(f"ALTER TABLE t RENAME COLUMN c{i} TO r{i}")
    written = _checkpoints(s3_client, bucket, "t")
    assert len(written) == 2  # the latest and the one before it are kept
    with_them = _view(where)
    for key in written:
        s3_client.delete_object(Bucket=bucket, Key=key)
    object_store_io.cache_clear()
    assert _view(where) == with_them
    assert [op for _, op in with_them["history"]][-5:] == ["alter"] * 5  # type: ignore[index]
    assert len(with_them["history"]) == 17  # type: ignore[arg-type]
    assert check_table(where).ok


def _latest_checkpoint(s3_client, bucket: str, name: str) -> tuple[str, dict]:  # type: ignore[no-untyped-def,type-arg]
    key = _checkpoints(s3_client, bucket, name)[-1]
    return key, json.loads(s3_client.get_object(Bucket=bucket, Key=key)["Body"].read())


def test_a_corrupt_checkpoint_is_ignored_and_reported(
        tmp_path: Path, s3_client, bucket: str) -> None:  # type: ignore[no-untyped-def]
    where = _in_bucket(tmp_path, s3_client, bucket, "t", 8, every=4)
    expected = _view(where)
    key, _ = _latest_checkpoint(s3_client, bucket, "t")
    s3_client.put_object(Bucket=bucket, Key=key, Body=b'{"format": 1, "commits": [tru')
    object_store_io.cache_clear()
    assert _view(where) == expected
    report = check_table(where)
    found = [n for n in report.notes if n.kind == "checkpoint"]
    assert [n.path for n in found] == [key.removeprefix("t/")]
    assert "unparsable JSON" in found[0].message and "ignored" in found[0].message


def test_a_forged_checkpoint_is_never_trusted_over_the_commit_files(
        tmp_path: Path, s3_client, bucket: str) -> None:  # type: ignore[no-untyped-def]
    where = _in_bucket(tmp_path, s3_client, bucket, "t", 8, every=4)
    expected = _view(where)
    key, body = _latest_checkpoint(s3_client, bucket, "t")
    forged = body["commits"][-1]
    forged["content"] = forged["content"].replace('"operation":"alter"', '"operation":"x"')
    assert '"operation":"x"' in forged["content"]
    s3_client.put_object(Bucket=bucket, Key=key, Body=json.dumps(body).encode())
    object_store_io.cache_clear()
    assert _view(where) == expected
    assert evonb.open_table(where).history()[-1].operation == "alter"
    found = [n for n in check_table(where).notes if n.kind == "checkpoint"]
    assert len(found) == 1 and forged["file"] in found[0].message
    assert "differs from the commit file" in found[0].message


def test_rollback_past_a_checkpoint(tmp_path: Path, s3_client, bucket: str) -> None:  # type: ignore[no-untyped-def]
    where = _in_bucket(tmp_path, s3_client, bucket, "t", 9, every=4)
    t = evonb.open_table(where)
    assert len(_checkpoints(s3_client, bucket, "t")) == 1
    before = t.history()
    # undo the last three commits, all of them inside the checkpoint
    t.rollback(before[-3].instant, cascade=True)
    object_store_io.cache_clear()
    after = evonb.open_table(where)
    ops = [c.operation for c in after.history()]
    assert [c.instant for c in after.history()][:-1] == [c.instant for c in before[:-3]]
    assert ops[-1] == "rollback"
    # c5, c6 and last were the commits undone
    assert after.schema.column_names == ["id", "v", "c0", "c1", "c2", "c3", "c4"]
    # the same view with the checkpoints gone; and a commit after the rollback
    view = _view(where)
    for key in _checkpoints(s3_client, bucket, "t"):
        s3_client.delete_object(Bucket=bucket, Key=key)
    object_store_io.cache_clear()
    assert _view(where) == view
    evonb.open_table(where).alter("ALTER TABLE t ADD COLUMN again int")
    assert evonb.open_table(where).schema.column_names[-1] == "again"
    assert check_table(where).ok


def test_a_commit_lists_the_timeline_once_under_the_lock_and_never_reads_its_own_file(
        bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    """Under the table lock the schema check, the conflict check, the completion time and the
    checkpoint share one listing of the timeline, and the commit just published is known
    without a request (its ETag is the MD5 of the bytes written)."""
    where = f"s3://{bucket}/t"
    t = evonb.create_table(where, "id bigint not null, v string", primary_key="id",
                           properties={CHECKPOINT_PROPERTY: "2"})
    t.alter("ALTER TABLE t ADD COLUMN a int")  # 2 commits: a checkpoint
    t.alter("ALTER TABLE t ADD COLUMN b int")
    events = object_store_io()._client.meta.events  # type: ignore[attr-defined]
    calls: list[tuple[str, str]] = []

    def note(model, params, **_):  # type: ignore[no-untyped-def]
        calls.append((model.name, params.get("Key") or params.get("Prefix") or ""))

    events.register("before-parameter-build.s3", note)
    try:
        evonb.open_table(where).alter("ALTER TABLE t ADD COLUMN c int")
    finally:
        events.unregister("before-parameter-build.s3", note)
    instant = evonb.open_table(where).history()[-1].instant
    written = f"t/.evo/timeline/{instant}.alter"
    assert ("PutObject", written) in calls
    assert ("GetObject", written) not in calls and ("HeadObject", written) not in calls
    start = calls.index(("PutObject", "t/.evo/lock.lease"))
    end = calls.index(("DeleteObject", "t/.evo/lock.lease"))
    assert calls[start:end].count(("ListObjectsV2", "t/.evo/timeline/")) == 1, calls
    # open_table lists the timeline and the archives once; then the ALTER: before the lock,
    # failed attempts, one listing for the base schema and base commit (and the archives),
    # a fresh instant and its clash check; under the lock, the one listing above (and the
    # archives); whether to archive comes from that listing
    lists = Counter(k for op, k in calls if op == "ListObjectsV2")
    assert lists["t/.evo/timeline/"] == 1 + 5 and lists["t/.evo/timeline/archive/"] == 1 + 2
    # the checkpoint it wrote (2 commits after the first) holds the commit's stored bytes
    names = sorted(_checkpoints(s3_client, bucket, "t"))
    assert len(names) == 2
    body = json.loads(s3_client.get_object(Bucket=bucket, Key=names[-1])["Body"].read())
    stored = s3_client.get_object(Bucket=bucket, Key=written)["Body"].read().decode()
    assert {c["file"]: c["content"] for c in body["commits"]}[f"{instant}.alter"] == stored
