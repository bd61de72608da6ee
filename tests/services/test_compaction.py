"""Compaction (:mod:`evonb.services.compaction`): which base files it rewrites and which files
it replaces, and inline compaction after every N data commits."""

from __future__ import annotations

import pytest

import evonb
from evonb.services.compaction import (
    ARROW_PROPERTY,
    INLINE_PROPERTY,
    arrow_mergeable,
    commits_since_compaction,
    plan,
    removed_paths,
)
from evonb.table.data_file import DataFile
from evonb.table.snapshot import Snapshot

I1, I2, I3 = "20260101000000001", "20260101000000002", "20260101000000003"


def _snapshot() -> Snapshot:
    files = (
        DataFile(path=f"a_0_{I1}.parquet", version="v1", instant=I1, rows=3, bytes=30),
        DataFile(path=f"b_0_{I1}.parquet", version="v1", instant=I1, rows=2, bytes=20),
        DataFile(path=f"c_0_{I2}.parquet", version="v2", instant=I2, rows=1, bytes=10),
        DataFile(path=f"d_0_{I2}.parquet", version="v2", instant=I2, rows=1, bytes=10),
    )
    logs = (
        DataFile(path=f".c.log.{I3}_0.avro", version="v2", instant=I3, kind="log",
                 base=f"c_0_{I2}.parquet"),
        DataFile(path=f".a.log.{I3}_0.avro", version="v2", instant=I3, kind="log",
                 base=f"a_0_{I1}.parquet"),
    )
    return Snapshot(instant=I3, schema_version="v2", files=files, logs=logs)


def test_plan_takes_groups_with_logs_and_files_of_older_versions():
    snap = _snapshot()
    assert [f.path for f in plan(snap, "v2")] == [
        f"a_0_{I1}.parquet", f"b_0_{I1}.parquet", f"c_0_{I2}.parquet"]
    assert [f.path for f in plan(snap, "v2", upgrade_schema=False)] == [
        f"a_0_{I1}.parquet", f"c_0_{I2}.parquet"]
    assert plan(Snapshot(instant=I1, schema_version="v1", files=snap.files[:2]), "v1") == []


def test_removed_paths_are_the_base_files_then_their_log_blocks():
    snap = _snapshot()
    bases = [snap.files[2], snap.files[1]]
    assert removed_paths(snap, bases) == [
        f"b_0_{I1}.parquet", f"c_0_{I2}.parquet", f".c.log.{I3}_0.avro"]


@pytest.mark.spark
def test_inline_compaction_runs_after_every_n_data_commits(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts", table_type="mor",
                           properties={INLINE_PROPERTY: "2", ARROW_PROPERTY: "false"})
    cols = "id long, v string, ts long"
    t.write(spark.createDataFrame([(1, "a", 1), (2, "b", 1)], cols))
    assert commits_since_compaction(t) == 1
    t.write(spark.createDataFrame([(2, "B", 2)], cols), "upsert")
    actions = [c.action for c in t.history()]
    assert actions == ["create", "commit", "deltacommit", "compaction"]
    assert commits_since_compaction(t) == 0
    assert t.snapshot().logs == ()
    assert sorted(tuple(r) for r in t.read().collect()) == [(1, "a", 1), (2, "B", 2)]
    # the property turned off: no group is merged in tasks
    t.write(spark.createDataFrame([(1, "A", 3)], cols), "upsert")
    assert commits_since_compaction(t) == 1
    assert arrow_mergeable(t, t.snapshot(), list(t.snapshot().files), t.schema) == {}
