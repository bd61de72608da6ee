"""Compaction, clustering and rewrites of tables in a bucket, with no Hadoop connector: Spark
tasks read each file group merged with its log blocks by the JVM-free reader
(evonb.arrow.spark_source) and write the new files with pyarrow (evonb.spark.object_writer).
The same service run on a copy on local disk (Spark's own reader and writer) gives the same
rows, commit times and time travel; a service whose job fails leaves no file behind."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pyarrow.parquet as pq
import pytest

import evonb
from bench.object_storage import upload
from evonb.errors import EvoError
from evonb.table.check import check_table
from evonb.table.fileio import file_io
from evonb.table.fsutil import data_tree
from tests.objectstore.conftest import keys, server_requests
from tests.objectstore.test_spark_read import evolved_mor_table

pytestmark = pytest.mark.spark


def _rows(df: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _same_history(local: Any, remote: Any) -> None:
    """Every commit of the two tables reads the same (the JVM-free reader: the latest commit
    is read through Spark by each test), in its own schema, with each row's commit time (as
    the commit's place in its table's history: the tables may have been made apart)."""
    commits = list(zip(local.history(), remote.history(), strict=True))
    for lc, rc in commits:
        assert (lc.action, lc.operation) == (rc.action, rc.operation)
    places = [{c.instant: i for i, c in enumerate(side)} for side in zip(*commits, strict=True)]

    def rows(t: Any, instant: str, place: dict[str, int]) -> list[tuple[Any, ...]]:
        out = []
        for r in t.to_arrow(as_of=instant, meta_columns=True).to_pylist():
            written = place[r.pop("_evo_commit_time")]
            out.append((*r.values(), written))
        return sorted(out, key=repr)

    for lc, rc in commits:
        assert rows(remote, rc.instant, places[1]) == rows(local, lc.instant, places[0]), \
            rc.instant


def _commit_times(t: Any) -> dict[int, str]:
    return {r["id"]: r["_evo_commit_time"]
            for r in t.to_arrow(columns=["id"], meta_columns=True).to_pylist()}


def test_compaction_of_an_evolved_merge_on_read_table_in_a_bucket(
        spark, tmp_path: Path, bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    local = evolved_mor_table(spark, tmp_path / "t")  # nested rename, drop, re-add, blocks
    upload(tmp_path / "t", bucket, "t", client=s3_client)
    where = f"s3://{bucket}/t"
    remote = evonb.open_table(where)
    before = _rows(remote.read())
    times = _commit_times(remote)
    old = remote.snapshot()
    rewritten = {f.path for f in old.files if f.version != remote.schema.version_id} | {
        str(f.base) for f in old.logs}
    assert old.logs and len(before) == 24
    # an incremental read merges the blocks of the commits it reads, as on local disk
    start = remote.history()[2].instant
    assert _rows(remote.read_incremental(start)) == _rows(local.read_incremental(start))
    # after the rename: keys 0, 3, .., 18 upserted, then 18 again and 5 new keys: 12 rows
    assert remote.read_incremental(start).count() == 12
    commits = [t.compact() for t in (local, remote)]
    assert all(c is not None and c.action == "compaction" for c in commits)
    snap = remote.snapshot()
    assert not snap.logs
    assert {f.version for f in snap.files} == {remote.schema.version_id}
    kept = {f.path for f in old.files} & {f.path for f in snap.files}
    assert rewritten and not rewritten & kept  # every group with blocks, every old version
    stored = set(keys(s3_client, bucket, "t/"))
    assert {f"t/{f.path}" for f in snap.files} <= stored  # written into the bucket
    for f in snap.files:  # key statistics from each footer, as local writes record them
        assert f.key_stats, f.path
        with file_io().open_data(remote.root / f.path) as stream:
            assert pq.ParquetFile(stream).metadata.num_rows == f.rows
    assert _rows(remote.read()) == before == _rows(local.read())
    assert _commit_times(remote) == times  # rows keep the commit that wrote them
    assert remote.history()[-1].metadata.get("groups_in_tasks") == 0
    _same_history(local, remote)
    assert remote.compact() is None  # nothing left to do
    assert check_table(where).ok
    # rolled back, the table reads as before it, and its files are gone from the bucket
    compaction = remote.history()[-1].instant
    written = {f"t/{f.path}" for f in snap.files if f.instant == compaction}
    assert written
    remote.rollback(compaction)
    assert remote.snapshot().logs and _rows(remote.read()) == before
    assert not written & set(keys(s3_client, bucket, "t/"))
    assert check_table(where).ok


def test_inline_compaction_after_writes_into_a_bucket(
        spark, bucket: str) -> None:  # type: ignore[no-untyped-def]
    where = f"s3://{bucket}/inline"
    t = evonb.create_table(where, "id bigint not null, ts bigint, v string", primary_key="id",
                           precombine="ts", table_type="mor",
                           properties={"evonb.compaction.inline.every": "2"})
    t.write(spark.sql("select id, 1L ts, concat('v', id) v from range(40)"))
    groups = len(t.snapshot().files)
    t.write(spark.sql("select id, 2L ts, 'u' v from range(0, 40, 4)"), mode="upsert")
    assert [c.action for c in t.history()][-2:] == ["deltacommit", "compaction"]
    assert not t.snapshot().logs
    # one schema version, blocks listing their positions: each group merged inside its
    # task with Arrow, the merged file stored in the bucket by the task
    assert t.history()[-1].metadata["groups_in_tasks"] == groups >= 1
    t.write(spark.sql("select id from range(0, 40, 10)"), mode="delete")
    rows = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert len(rows) == 36 and rows[4] == "u" and rows[5] == "v5" and 10 not in rows
    assert _rows(t.read().select("id", "v")) == sorted(rows.items(), key=repr)
    assert check_table(where).ok



def test_a_compaction_in_a_bucket_never_reads_back_the_files_its_tasks_stored(
        spark, bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    """Each task reports its merged file's rows, bytes and key statistics from the footer it
    has just written: the server sees one PUT of each new file and no other request on it (a
    first version read every footer and size back from the driver), and the commit records
    what the stored files hold."""
    where = f"s3://{bucket}/footers"
    t = evonb.create_table(where, "id bigint not null, ts bigint, part string, v string",
                           primary_key="id", precombine="ts", partition_by="part",
                           table_type="mor")
    t.write(spark.sql("select id, 1L ts, if(id % 3 = 0, 'a', 'b') part, concat('v', id) v "
                      "from range(90)"))
    t.write(spark.sql("select id, 2L ts, if(id % 3 = 0, 'a', 'b') part, 'u' v "
                      "from range(0, 90, 4)"), mode="upsert")
    groups = len(t.snapshot().files)
    with server_requests() as requests:
        commit = t.compact()
    assert commit is not None and commit.metadata["groups_in_tasks"] == groups >= 2
    added = [f for f in t.snapshot().files if f.instant == commit.instant]
    assert added and not t.snapshot().logs
    (key_id,) = t.raw_config.primary_key_ids
    on = {f.path: [m for m, path in requests if unquote(path) == f"/{bucket}/footers/{f.path}"]
          for f in added}
    assert on == {f.path: ["PUT"] for f in added}
    for f in added:
        with file_io().open_data(t.root / f.path) as stream:
            stored = pq.read_table(stream)
        ids = stored.column("id").to_pylist()
        size = s3_client.head_object(Bucket=bucket, Key=f"footers/{f.path}")["ContentLength"]
        assert (f.rows, f.bytes, f.key_stats) == (len(ids), size,
                                                  ((key_id, min(ids), max(ids)),))
    rows = {r["id"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert len(rows) == 90 and rows[4] == "u" and rows[5] == "v5"
    assert check_table(where).ok


def test_a_merge_task_outliving_its_aborted_compaction_removes_its_file(
        spark, bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    """A task that stores its merged file after the attempt was rolled back (its timeline
    files gone, its files swept) finds the attempt gone and removes the file again; while the
    attempt lives, the file stays where the task stored it."""
    from evonb.spark.group_merge import GroupSpec, MergeLayout, store_bin
    from evonb.spark.mor import file_groups, position_drops
    from evonb.table.names import data_file_name, partition_path

    where = f"s3://{bucket}/late"
    t = evonb.create_table(where, "id bigint not null, ts bigint, v string", primary_key="id",
                           precombine="ts", table_type="mor")
    t.write(spark.sql("select id, 1L ts, 'a' v from range(10)").coalesce(1))
    t.write(spark.sql("select id, 2L ts, 'b' v from range(0, 10, 3)"), mode="upsert")
    snap = t.snapshot()
    (base,) = snap.files
    spec = GroupSpec(base=str(t.root / base.path),
                     logs=tuple(str(t.root / f.path) for f in file_groups(snap)[base.path]),
                     drops=position_drops(t, snap)[base.path])
    _, layout = t.version(t.schema.version_id)
    config = t.raw_config
    merge_layout = MergeLayout.of(t.physical_query(t.schema, layout),
                                  [layout.name(i) for i in config.primary_key_ids],
                                  layout.name(config.precombine_id), "UTC")
    live = t.history()[-1].instant  # on the timeline: the file stays
    out = str(t.root / partition_path(base.partition, data_file_name(live, 7)))
    done = store_bin([spec], merge_layout, out, root=str(t.root), instant=live)
    assert (done.out, done.rows, done.key_stats) == (out, 10, None)
    assert done.bytes == file_io().size(out) > 0
    with file_io().open_data(out) as stream:
        merged = pq.read_table(stream)
    assert sorted(merged.column("v").to_pylist()) == ["a"] * 6 + ["b"] * 4
    file_io().delete(out)
    gone = "20991231235959999"  # an attempt no longer on the timeline
    late = str(t.root / partition_path(base.partition, data_file_name(gone, 0)))
    before = set(keys(s3_client, bucket))
    with pytest.raises(EvoError, match=f"compaction {gone} was aborted"):
        store_bin([spec], merge_layout, late, root=str(t.root), instant=gone)
    assert set(keys(s3_client, bucket)) == before


def test_clustering_of_small_writes_in_a_bucket(
        spark, tmp_path: Path, bucket: str) -> None:  # type: ignore[no-untyped-def]
    """Small writes, a rename of the sort column later: the clustered files in the bucket
    cover disjoint ranges of it, read the same as before and as the same table clustered on
    local disk."""
    tables = []
    for where in (str(tmp_path / "c"), f"s3://{bucket}/c"):
        t = evonb.create_table(where, "id bigint not null, k int, part string, v string",
                               primary_key="id", partition_by="part", table_type="mor")
        for i in range(6):  # keys shuffled across writes
            t.write(spark.sql(f"select id, cast((id * 37) % 101 as int) k, "
                              f"if(id % 2 = 0, 'a', 'b') part, 'w{i}' v "
                              f"from range({i * 20}, {i * 20 + 20})"))
        t.write(spark.sql("select id, -1 k, if(id % 2 = 0, 'a', 'b') part, 'upd' v "
                          "from range(0, 120, 7)"), mode="upsert")  # log blocks
        t.alter("ALTER TABLE t RENAME COLUMN k TO key")
        tables.append(t)
    local, remote = tables
    before = _rows(remote.read())
    times = _commit_times(remote)
    files_before = len(remote.snapshot().files)
    for t in tables:
        assert t.cluster(by="key", target_file_bytes=1 << 20) is not None
    snap = remote.snapshot()
    assert not snap.logs and len(snap.files) == 2 < files_before  # one per partition
    assert {f.partition for f in snap.files} == {"part=a", "part=b"}
    assert _rows(remote.read()) == before == _rows(local.read())
    assert _commit_times(remote) == times
    for f in snap.files:  # sorted by the renamed column within each file
        with file_io().open_data(remote.root / f.path) as stream:
            stored = pq.read_table(stream)
        column = next(c for c in stored.column_names if c in ("k", "key"))
        values = stored.column(column).to_pylist()
        assert values == sorted(values) and len(values) == f.rows
    assert remote.properties["evonb.clustering.sort.ids"] == local.properties[
        "evonb.clustering.sort.ids"]
    _same_history(local, remote)
    # only the files of partition b, z-ordered by two columns
    for t in tables:
        t.write(spark.sql("select 500L + id id, 5 key, 'b' part, 'late' v from range(3)"))
        assert t.cluster(by=["key", "id"], order="zorder", where="part = 'b'") is not None
    assert _rows(remote.read()) == _rows(local.read())
    clustered = remote.history()[-1]
    assert clustered.metadata["sort_order"] == "zorder" and clustered.metadata["files_in"] == 2
    assert check_table(f"s3://{bucket}/c").ok


def test_a_rewrite_that_narrows_a_type_in_a_bucket(
        spark, tmp_path: Path, bucket: str) -> None:  # type: ignore[no-untyped-def]
    tables = []
    for where in (str(tmp_path / "r"), f"s3://{bucket}/r"):
        t = evonb.create_table(where, "id bigint, amount bigint, note string")
        t.write(spark.sql("select id, id * 1000 amount, concat('n', id) note from range(30)"))
        t.alter("ALTER TABLE t DROP COLUMN note")
        t.write(spark.sql("select 99L id, 5000000000L amount"))  # does not fit an int
        t.rewrite("ALTER TABLE t ALTER COLUMN amount TYPE int", on_cast_error="null",
                  purge_dropped=True)
        tables.append(t)
    local, remote = tables
    assert remote.schema.find("amount").type == local.schema.find("amount").type
    rows = {r["id"]: r["amount"] for r in remote.to_arrow().to_pylist()}
    assert rows[99] is None and rows[7] == 7000 and len(rows) == 31
    assert _rows(remote.read()) == _rows(local.read())
    assert remote.history()[-1].metadata["nulled"] == local.history()[-1].metadata["nulled"]
    _same_history(local, remote)
    assert check_table(f"s3://{bucket}/r").ok


def test_a_compaction_whose_job_fails_leaves_nothing(
        spark, bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    """A log block cut short fails the job of its group after an earlier job (two groups a
    job) stored its new files: the attempt leaves the bucket as it found it."""
    where = f"s3://{bucket}/f"
    t = evonb.create_table(where, "id bigint not null, p int, v string", primary_key="id",
                           table_type="mor", partition_by="p",
                           properties={"evonb.compaction.batch.groups": "2"})
    t.write(spark.sql("select id, cast(id % 4 as int) p, 'v' v from range(80)"))
    t.write(spark.sql("select id, cast(id % 4 as int) p, 'u' v from range(0, 80, 3)"),
            mode="upsert")
    logs = t.snapshot().logs
    assert len({f.partition for f in logs}) == 4
    victim = max(logs, key=lambda f: f.partition)  # in the last job
    assert [f.partition for f in t.snapshot().files] == ["p=0", "p=1", "p=2", "p=3"]
    key = f"f/{victim.path}"
    body = s3_client.get_object(Bucket=bucket, Key=key)["Body"].read()
    s3_client.put_object(Bucket=bucket, Key=key, Body=body[: len(body) // 2])
    kept = {rel for rel, _ in data_tree(t.root)}
    # a versioned bucket keeps what was deleted: the files the failed attempt stored
    s3_client.put_bucket_versioning(Bucket=bucket,
                                    VersioningConfiguration={"Status": "Enabled"})
    with pytest.raises(Exception, match=Path(victim.path).name):
        t.compact()
    assert {rel for rel, _ in data_tree(t.root)} == kept
    assert [c.action for c in t.history()] == ["create", "commit", "deltacommit"]
    versions = s3_client.list_object_versions(Bucket=bucket, Prefix="f/p=")
    stored = {v["Key"] for v in versions.get("Versions", []) if v["Key"].endswith(".parquet")}
    swept = {m["Key"] for m in versions.get("DeleteMarkers", [])}
    assert stored - {f"f/{rel}" for rel in kept} <= swept
    assert stored - {f"f/{rel}" for rel in kept}, "no task stored a file before the failure"
    problems = check_table(where).problems
    assert problems and all(victim.path in p.path for p in problems)


def test_notebook_services_on_a_table_created_at_a_bucket_location(
        spark, bucket: str, warehouse: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``%%evo CREATE TABLE ... LOCATION 's3://...'`` makes the table in the bucket (a first
    version made a local folder named ``s3:``), and ``%evo compact`` and ``%evo cluster``
    run on it with their progress bars."""
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    monkeypatch.chdir(warehouse)
    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("evonb")
    shell.run_line_magic("config", f"Evo.warehouse = {str(warehouse)!r}")
    magics = shell.magics_manager.registry["EvoMagics"]
    magics.context.locations.clear()
    try:
        info = shell.run_cell_magic("evo", "", (
            f"CREATE TABLE trips (id bigint NOT NULL, city string, fare double) "
            f"LOCATION 's3://{bucket}/trips' TBLPROPERTIES (primaryKey = 'id', type = 'mor')"))
        assert info.table.path == f"s3://{bucket}/trips"
        assert not any(warehouse.iterdir())  # nothing made on local disk
        t = evonb.open_table(f"s3://{bucket}/trips")
        t.write(spark.sql("select id, if(id % 2 = 0, 'oslo', 'paris') city, id * 1.5 fare "
                          "from range(30)"))
        t.write(spark.sql("select id, 'rome' city, 0d fare from range(0, 30, 4)"),
                mode="upsert")
        compacted = shell.run_line_magic("evo", "compact trips")
        assert compacted.result.action == "compaction" and not t.snapshot().logs
        clustered = shell.run_line_magic("evo", "cluster trips by (city)")
        assert clustered.result.operation == "cluster"
        assert len(t.snapshot().files) == 1
        # one file, sorted by city: 7 even ids stay in oslo, 8 moved to rome, 15 odd in paris
        assert t.to_arrow(columns=["city"]).column("city").to_pylist() == (
            ["oslo"] * 7 + ["paris"] * 15 + ["rome"] * 8)
        with pytest.raises(UsageError, match="gs://") as refused:  # a scheme not served
            shell.run_cell_magic("evo", "", "CREATE TABLE g (id bigint) LOCATION 'gs://b/g'")
        cause = refused.value.__context__
        assert isinstance(cause, EvoError) and "s3://" in (cause.hint or "")
        assert not any(warehouse.iterdir())
        with pytest.raises(UsageError, match="No table 'g'"):
            shell.run_line_magic("evo", "compact g")
    finally:
        magics.context.locations.clear()
