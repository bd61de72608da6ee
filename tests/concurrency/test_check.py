"""``evonb check``: verification, repair, the CLI (tables built without Spark)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evonb
from evonb.__main__ import main
from evonb.table.check import check_table, repair_table
from evonb.table.instants import add_millis
from tests.concurrency.helpers import run_cli


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def writer(pid: int) -> dict[str, object]:
    return {"host": socket.gethostname(), "pid": pid, "pid_start": None,
            "started": "2026-01-01T00:00:00.000+00:00"}


def parquet(root: Path, rel: str) -> str:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": [1, 2]}), path)
    return rel


def commit_file(t, rel: str) -> str:
    """A completed commit adding ``rel`` (a file named with the commit's instant)."""
    inst = t.timeline.requested("commit", plan={"operation": "insert"})
    name = rel.format(instant=inst.timestamp)
    parquet(t.root, name)
    t.timeline.complete(inst, {
        "operation": "insert", "schema_version": t.schema.version_id, "removed": [],
        "added": [{"path": name, "version": t.schema.version_id, "instant": inst.timestamp,
                   "partition": "", "rows": 2, "bytes": (t.root / name).stat().st_size,
                   "kind": "base"}]})
    return name


@pytest.fixture
def table(tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string", primary_key="id")
    commit_file(t, "aaaa_0_{instant}.parquet")
    t.alter("ALTER TABLE t ADD COLUMNS (x int)")
    return t


def kinds(report) -> list[str]:
    return sorted(p.kind for p in report.problems)


def test_a_healthy_table_is_clean(table) -> None:
    report = check_table(table.path)
    assert report.ok and report.stats["commits"] == 3 and report.stats["live_files"] == 1
    assert main(["check", table.path]) == 0


def test_failed_attempt_of_a_dead_writer_is_rolled_back(table) -> None:
    inst = table.timeline.requested("commit", plan={"operation": "upsert",
                                                    "writer": writer(dead_pid())})
    ts = inst.timestamp
    parquet(table.root, f"bbbb_0_{ts}.parquet")
    (table.root / ".evo" / "staging" / ts).mkdir(parents=True)
    table.timeline.inflight(inst, {"added": [f"bbbb_0_{ts}.parquet"]})
    report = check_table(table.path)
    assert kinds(report) == ["failed-attempt"]
    assert report.problems[0].path == f".evo/timeline/{ts}.commit.inflight"
    assert report.problems[0].repairable
    fixed = repair_table(table.path)
    assert fixed.ok, fixed.render()
    assert any(ts in r for r in fixed.repaired)
    assert not (table.root / f"bbbb_0_{ts}.parquet").exists()
    assert not (table.root / ".evo" / "staging" / ts).exists()
    assert table.timeline.last_completed().action == "rollback"


def test_attempt_in_progress_is_a_note_and_force_rolls_it_back(table) -> None:
    inst = table.timeline.requested("alter", plan={"writer": writer(os.getpid())})
    report = check_table(table.path)
    assert report.ok and [n.kind for n in report.notes] == ["in-progress"]
    assert repair_table(table.path).notes[0].kind == "in-progress"
    assert table.timeline.pending()
    assert repair_table(table.path, force=True).ok
    assert not table.timeline.pending() and not table.timeline.is_completed(inst)


def test_orphans_are_reported_and_removed(table) -> None:
    parquet(table.root, "p=1/cccc_3_20200101000000000.parquet")
    (table.root / ".evo" / "staging" / "20200101000000000").mkdir(parents=True)
    schemas = table.root / ".evo" / "schemas"
    shutil.copy(schemas / f"{table.schema.version_id}.schema.json",
                schemas / "20200101000000001.schema.json")
    (schemas / ".20200101000000002.schema.json.x1y2.tmp").write_text("{")
    report = check_table(table.path)
    assert kinds(report) == ["orphan-file", "orphan-schema", "orphan-staging"]
    assert {p.path for p in report.problems} == {
        "p=1/cccc_3_20200101000000000.parquet", ".evo/schemas/20200101000000001.schema.json",
        ".evo/staging/20200101000000000"}
    assert [n.kind for n in report.notes] == ["temp-file"]
    fixed = repair_table(table.path)
    assert fixed.ok and not fixed.notes and len(fixed.repaired) == 4
    assert not (table.root / "p=1/cccc_3_20200101000000000.parquet").exists()


def test_missing_live_file_and_schema_are_problems_repair_cannot_fix(table) -> None:
    live = next(iter(table.snapshot().files)).path
    (table.root / live).unlink()
    report = check_table(table.path)
    assert kinds(report) == ["missing-file"] and report.problems[0].path == live
    version = table.schema.version_id
    (table.root / ".evo" / "schemas" / f"{version}.schema.json").unlink()
    report = repair_table(table.path)
    assert kinds(report) == ["missing-file", "missing-schema"]
    assert main(["check", table.path]) == 1


def test_corrupt_commit_is_named_and_repair_removes_nothing(table) -> None:
    first = table.timeline.completed()[1]
    path = table.root / ".evo" / "timeline" / f"{first.instant}.{first.action}"
    path.write_text(path.read_text()[:40])
    parquet(table.root, "dddd_0_20200101000000000.parquet")
    report = repair_table(table.path)
    assert kinds(report) == ["corrupt-metadata"]
    assert report.problems[0].path == f".evo/timeline/{first.instant}.commit"
    assert (table.root / "dddd_0_20200101000000000.parquet").exists()  # not judged an orphan


def test_ill_formed_timeline(table) -> None:
    (table.root / ".evo" / "timeline" / "not-an-instant.commit").write_text("{}")
    last = table.timeline.last_completed()
    (table.root / ".evo" / "timeline" / f"{last.instant}.commit.requested").write_text("{}")
    report = check_table(table.path)
    assert kinds(report) == ["timeline", "timeline"]


def _rewrite_commit(t, record, **changes: object) -> Path:
    path = t.root / ".evo" / "timeline" / f"{record.instant}.{record.action}"
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(json.dumps(data))
    return path


def test_every_commit_records_a_completion_time(table) -> None:
    commits = table.timeline.completed()
    assert all(c.has_completion for c in commits)
    assert [c.completion for c in commits] == sorted({c.completion for c in commits})
    assert all(c.completion >= c.instant for c in commits)


def test_ill_formed_completion_order(table) -> None:
    _create, insert, alter = table.timeline.completed()
    _rewrite_commit(table, insert, completion_time=alter.completion)  # a tie
    report = check_table(table.path)
    assert kinds(report) == ["timeline"] and "also that of commit" in report.problems[0].message
    _rewrite_commit(table, insert, completion_time=insert.completion)
    _rewrite_commit(table, alter, completion_time="20000101000000000")  # before it started
    assert "before the commit's instant" in check_table(table.path).problems[0].message
    _rewrite_commit(table, alter, completion_time=None)  # after commits that record one
    report = check_table(table.path)
    assert kinds(report) == ["timeline"] and "no completion time" in report.problems[0].message
    _rewrite_commit(table, alter, completion_time=alter.completion,
                    base_completion=add_millis(alter.completion, 5))
    assert "not after its base" in check_table(table.path).problems[0].message
    _rewrite_commit(table, alter, completion_time="soon", base_completion=None)
    assert kinds(check_table(table.path)) == ["corrupt-metadata"]


def test_a_table_written_before_completion_times_is_clean(table) -> None:
    for record in table.timeline.completed():  # as an older evonb wrote them
        _rewrite_commit(table, record, completion_time=None)
    report = check_table(table.path)
    assert report.ok, report.render()
    t = evonb.open_table(table.path)
    assert [c.completion for c in t.timeline.completed()] == [
        c.instant for c in t.timeline.completed()]
    commit_file(t, "ffff_0_{instant}.parquet")
    assert check_table(table.path).ok
    assert t.timeline.last_completed().completion > t.timeline.completed()[-2].instant


def test_not_a_table(tmp_path) -> None:
    assert kinds(check_table(tmp_path)) == ["not-a-table"]


def test_cli_exit_codes_and_json(table) -> None:
    ok = run_cli("check", table.path)
    assert ok.returncode == 0 and "OK: no problems" in ok.stdout
    parquet(table.root, "eeee_0_20200101000000000.parquet")
    bad = run_cli("check", table.path, "--json")
    assert bad.returncode == 1
    data = json.loads(bad.stdout)
    assert data["ok"] is False and data["problems"][0]["path"] == (
        "eeee_0_20200101000000000.parquet")
    fixed = run_cli("check", table.path, "--repair")
    assert fixed.returncode == 0 and "removed eeee_0_20200101000000000.parquet" in fixed.stdout
    assert run_cli("check").returncode == 2


def test_a_log_block_placed_while_its_attempt_is_rolled_back_is_removed(table, monkeypatch):
    """A task of a killed writer can outlive it and place a log block during the rollback of
    its attempt: before the rollback's abort (its second look removes the block), or after it
    (the task sees the attempt gone and removes the block itself)."""
    from evonb.spark.avro_log import _BlockSink, log_path
    from evonb.table import rollback as rb
    from evonb.table.timeline import instant_on_timeline

    inst = table.timeline.requested("deltacommit", plan={"operation": "upsert",
                                                         "writer": writer(dead_pid())})
    ts = inst.timestamp
    late = log_path("aaaa_0_x.parquet", ts, 3, "avro")
    real_abort = table.timeline.abort

    def abort_after_a_late_block(instant):  # the block lands after the rollback's first look
        (table.root / late).write_bytes(b"a late block")
        real_abort(instant)

    monkeypatch.setattr(type(table.timeline), "abort",
                        lambda self, i: abort_after_a_late_block(i)
                        if self is table.timeline else real_abort(i))
    assert instant_on_timeline(table.root, ts)
    assert rb.rollback_failed(table) == [ts]
    assert not (table.root / late).exists()
    assert not instant_on_timeline(table.root, ts)
    assert table.timeline.last_completed().metadata["files_deleted"] == [late]
    monkeypatch.undo()

    # After the abort: the task's block sink finds the attempt gone when it places the block.
    struct_schema = pa.schema([("id", pa.int64())])
    from evonb.schema.types import BIGINT, NestedField, StructType

    struct = StructType((NestedField(1, "id", BIGINT, True),))
    sink = _BlockSink(str(table.root), ts, table.schema.version_id, 0, 0, "parquet", None,
                      struct, struct_schema, "null")
    sink.add("aaaa_0_x.parquet", pa.record_batch([pa.array([1, 2])], schema=struct_schema))
    with pytest.raises(evonb.EvoError, match=f"The write {ts} was rolled back while a task"):
        sink.close()
    assert not list(table.root.glob(f".aaaa_0_x.log.{ts}_*"))
    assert check_table(table.path).ok


def test_a_lost_commit_proven_by_a_later_commit_is_kept_even_with_force(table) -> None:
    """An old-style inflight record (paths only, no copy of the commit): a later commit that
    removes one of the attempt's files proves it committed; its completion time is unknown, so
    repair cannot rebuild it, and nothing of it is deleted, not even with --force."""
    inst = table.timeline.requested("commit", plan={"operation": "insert",
                                                    "writer": writer(dead_pid())})
    ts = inst.timestamp
    name = parquet(table.root, f"cccc_0_{ts}.parquet")
    size = (table.root / name).stat().st_size
    table.timeline.inflight(inst, {"added": [name]})
    table.timeline.complete(inst, {
        "operation": "insert", "schema_version": table.schema.version_id, "removed": [],
        "added": [{"path": name, "version": table.schema.version_id, "instant": ts,
                   "partition": "", "rows": 2, "bytes": size, "kind": "base"}]})
    inflight = table.root / ".evo" / "timeline" / f"{ts}.commit.inflight"
    inflight.write_text(json.dumps({"added": [name]}))  # as an older evonb wrote it
    later = table.timeline.requested("commit", plan={"operation": "overwrite"})
    table.timeline.complete(later, {
        "operation": "overwrite", "schema_version": table.schema.version_id,
        "removed": [name], "added": [], "base_instant": None})
    (table.root / ".evo" / "timeline" / f"{ts}.commit").unlink()

    report = check_table(table.path)
    lost = [p for p in report.problems if p.kind == "lost-commit"]
    assert [(p.path, p.repairable) for p in lost] == [(f".evo/timeline/{ts}.commit", False)]
    assert f"commit {later.timestamp} removes one of its files" in lost[0].message
    assert kinds(report) == ["lost-commit", "timeline"]  # the removal of a file never added
    after = repair_table(table.path, force=True)
    assert kinds(after) == ["lost-commit", "timeline"]
    assert (table.root / name).exists() and inflight.exists()
    assert main(["check", table.path, "--repair", "--force"]) == 1


def test_check_reports_a_size_other_than_the_recorded_one(table) -> None:
    (live,) = [e["path"] for c in table.timeline.completed() for e in c.metadata["added"]]
    path = table.root / live
    path.write_bytes(path.read_bytes() + b"\0")  # a byte appended: the footer still reads
    report = check_table(table.path)
    assert [(p.kind, p.path) for p in report.problems] == [("corrupt-file", live)]
    assert "its size is" in report.problems[0].message
    assert json.loads(run_cli("check", table.path, "--json").stdout)["ok"] is False
