"""Table services on Spark: compaction, rewrite, clean, rollback (explicit and automatic)."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import evonb
from evonb.errors import CommitNotFoundError, DataValidationError, EvoError
from evonb.services.progress import ProgressLog
from evonb.table.retention import CommitCleanedError

pytestmark = pytest.mark.spark


def _rows(df):
    return sorted((tuple(r) for r in df.collect()), key=repr)


def _data_files(t) -> set[str]:
    return {p.relative_to(t.root).as_posix() for p in Path(t.root).rglob("*")
            if p.is_file() and ".evo" not in p.relative_to(t.root).parts}


def _columns(t) -> list[list[str]]:
    return [pq.read_schema(t.root / f.path).names for f in t.snapshot().files]


def test_cow_compaction_upgrades_old_version_files(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, a int, b string, gone string",
                           primary_key="id")
    t.write(spark.createDataFrame([(1, 1, "x", "g1"), (2, 2, "y", "g2")],
                                  "id long, a int, b string, gone string"))
    t.alter("ALTER TABLE t ALTER COLUMN a TYPE bigint; ALTER TABLE t RENAME COLUMN b TO c; "
            "ALTER TABLE t DROP COLUMN gone; ALTER TABLE t ADD COLUMNS (d int DEFAULT 7)")
    t.write(spark.createDataFrame([(3, 2**40, "z", 8)], "id long, a long, c string, d int"))
    old = [f.path for f in t.snapshot().files if f.version != t.schema.version_id]
    first = t.history()[1].instant
    before = _rows(t.read(meta_columns=True))
    travel = _rows(t.read(as_of=first))
    log = ProgressLog()
    commit = t.compact(progress=log)
    assert (commit.action, commit.operation) == ("compaction", "compact")
    assert sorted(commit.metadata["removed"]) == sorted(old)
    assert {f.version for f in t.snapshot().files} == {t.schema.version_id}
    assert _rows(t.read(meta_columns=True)) == before
    assert _rows(t.read(as_of=first)) == travel
    assert (2, 2, "y", 7) in _rows(t.read())
    # the read default is data now, and the dropped column's data is gone from new files
    new = [f for f in t.snapshot().files if f.instant == commit.instant]
    table = pq.read_table(t.root / new[0].path)
    assert "gone" not in table.column_names and set(table.column("d").to_pylist()) == {7}
    assert log.stages == ["plan", "compact", "done"] and log.events[-1].fraction == 1.0
    assert t.compact() is None  # nothing left to do


@pytest.fixture
def prices(spark, tmp_path):
    """A merge-on-read table whose price values include ones that do not fit an int."""
    t = evonb.create_table(tmp_path / "p", "id bigint not null, price double, code string, "
                           "ts bigint", primary_key="id", precombine="ts", table_type="mor")
    t.write(spark.createDataFrame([(1, 1.0, "10", 1), (2, 2.5, "20", 1), (3, 3.0, "x", 1),
                                   (4, 4.0, "40", 1)], "id long, price double, code string, "
                                  "ts long"))
    t.write(spark.createDataFrame([(4, 1e12, "41", 2)], "id long, price double, code string, "
                                  "ts long"), "upsert")
    return t


def test_rewrite_checks_the_cast_and_commits_nothing_on_failure(prices):
    t = prices
    history, files, schema = len(t.history()), _data_files(t), t.schema
    with pytest.raises(DataValidationError) as err:
        t.rewrite("ALTER TABLE t ALTER COLUMN price TYPE int")
    assert err.value.count == 2
    assert sorted(err.value.examples) == [2.5, 1e12]
    assert "2 values do not fit" in str(err.value)
    assert len(t.history()) == history and _data_files(t) == files and t.schema == schema
    assert t.timeline.pending() == []
    log = ProgressLog()
    commit = t.rewrite("ALTER TABLE t ALTER COLUMN price TYPE int", on_cast_error="null",
                       progress=log)
    assert (commit.action, commit.operation) == ("replacecommit", "rewrite")
    assert commit.metadata["nulled"] == {"price": 2}
    assert str(t.schema.find("price").type) == "int"
    assert _rows(t.read().select("id", "price")) == [(1, 1), (2, None), (3, 3), (4, None)]
    assert t.snapshot().logs == ()  # the log blocks were merged into the rewritten files
    assert "validate" in log.stages and "rewrite" in log.stages
    # the old data is still there for time travel, in its own type
    assert (2.5,) in _rows(t.read(as_of=t.history()[-2].instant).select("price"))


def test_rewrite_string_to_int_and_double_to_int(prices):
    t = prices
    with pytest.raises(DataValidationError) as err:
        t.rewrite("ALTER TABLE t ALTER COLUMN code TYPE int")
    assert err.value.count == 1 and err.value.examples == ["x"]
    t.write(t.spark.createDataFrame([(2, 2.0, "20", 5), (3, 3.0, "30", 5), (4, 4.0, "41", 5)],
                                    "id long, price double, code string, ts long"), "upsert")
    commit = t.rewrite("ALTER TABLE t ALTER COLUMN code TYPE int; "
                       "ALTER TABLE t ALTER COLUMN price TYPE int")
    assert "nulled" not in commit.metadata
    assert _rows(t.read().select("id", "code", "price")) == [
        (1, 10, 1), (2, 20, 2), (3, 30, 3), (4, 41, 4)]
    types = {f.name: f.dataType.simpleString() for f in t.read().schema.fields}
    assert types["code"] == "int" and types["price"] == "int"


def test_purge_dropped_removes_the_data_from_the_files(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint, secret string, keep string")
    t.write(spark.createDataFrame([(1, "s1", "k1"), (2, "s2", "k2")],
                                  "id long, secret string, keep string"))
    t.alter("ALTER TABLE t DROP COLUMN secret")
    assert all("secret" in cols for cols in _columns(t))
    with pytest.raises(EvoError):
        t.rewrite()
    t.rewrite(purge_dropped=True)
    assert _columns(t) and all("secret" not in cols for cols in _columns(t))
    for f in t.snapshot().files:
        data = pq.read_table(t.root / f.path).to_pylist()
        assert not any("s1" in str(v) or "s2" in str(v) for r in data for v in r.values())
    assert _rows(t.read()) == [(1, "k1"), (2, "k2")]


def test_clean_retention_and_schema_pruning(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string", primary_key="id")
    t.write(spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string").coalesce(1))
    c1 = t.history()[-1].instant
    t.alter("ALTER TABLE t ADD COLUMNS (x int)")
    t.write(spark.createDataFrame([(1, "a2", 1)], "id long, v string, x int"), "upsert")
    c3 = t.history()[-1].instant
    t.alter("ALTER TABLE t RENAME COLUMN v TO w")
    versions = t.schema_store.versions()
    before = _rows(t.read())
    files_before = _data_files(t)
    commit = t.clean(retain_commits=2, keep_schema_versions=1)
    assert commit.action == "clean" and commit.metadata["earliest_retained"] == c3
    gone = set(commit.metadata["cleaned_files"])
    assert gone and gone <= files_before and not gone & _data_files(t)
    # versions: the latest (policy) and the one the upsert's file uses stay; the first goes
    assert commit.metadata["cleaned_versions"] == [versions[0]]
    assert t.schema_store.versions() == versions[1:]
    assert str(commit).endswith(
        f"clean      schema {t.schema.version_id} deleted {len(gone)} file"
        f"{'' if len(gone) == 1 else 's'} and 1 schema version; commits from {c3} on stay "
        "readable")
    assert str(t.history()[-1]) == str(commit)
    assert {f.version for f in t.snapshot().files} == {versions[1]}
    assert _rows(t.read()) == before
    assert t.read(as_of=c3).count() == 2
    with pytest.raises(CommitCleanedError) as err:
        t.read(as_of=c1)
    assert isinstance(err.value, CommitNotFoundError)
    assert "exists, but its data was cleaned" in str(err.value) and c3 in str(err.value)
    assert len(t.schemas()) == 2
    assert t.clean(retain_commits=2, keep_schema_versions=1) is None


def test_rollback_of_the_last_write_and_of_a_ddl(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string", primary_key="id")
    t.write(spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string"))
    before, files = _rows(t.read()), _data_files(t)
    t.write(spark.createDataFrame([(1, "changed")], "id long, v string"), "upsert")
    undone = t.history()[-1].instant
    commit = t.rollback()
    assert commit.operation == "rollback" and commit.metadata["rolled_back"] == [undone]
    assert _rows(t.read()) == before and _data_files(t) == files
    assert str(commit) == (f"{commit.instant} rollback   schema {commit.schema_version} "
                           f"rolled back {undone}; deleted 1 file and 0 schema versions")
    assert undone not in [c.instant for c in t.history()]
    with pytest.raises(CommitNotFoundError):
        t.read(as_of=undone)
    schema = t.schema
    t.alter("ALTER TABLE t ADD COLUMNS (x int)")
    ddl = t.schema.version_id
    x_id = t.schema.find("x").id
    t.rollback()
    assert t.schema.fields == schema.fields and ddl not in t.schema_store.versions()
    assert t.schema.max_column_id == x_id  # the ID of x is never given again
    # a commit with a later one after it needs cascade
    t.alter("ALTER TABLE t RENAME COLUMN v TO w")
    first = t.history()[-1].instant
    t.write(spark.createDataFrame([(3, "c")], "id long, w string"))
    with pytest.raises(EvoError, match="later commits depend on it"):
        t.rollback(first)
    t.rollback(first, cascade=True)
    assert t.schema.fields == schema.fields and _rows(t.read()) == before
    assert t.schema.max_column_id == x_id


def test_failed_write_is_rolled_back_before_the_next_write(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string", primary_key="id",
                           table_type="mor")
    t.write(spark.createDataFrame([(1, "a")], "id long, v string"))
    base = t.snapshot().files[0]
    dead = 999_999
    while True:
        try:
            os.kill(dead, 0)
            dead -= 1
        except ProcessLookupError:
            break
        except PermissionError:
            dead -= 1
    crashed = t.timeline.requested("deltacommit", plan={
        "operation": "upsert", "writer": {"host": socket.gethostname(), "pid": dead}})
    t.timeline.inflight(crashed, {})
    stem = Path(base.path).stem
    partial = [t.root / f"0123456789abcdef0123_0_{crashed.timestamp}.parquet",
               t.root / f".{stem}.log.{crashed.timestamp}_0.avro",
               t.root / f".{stem}.log.{crashed.timestamp}_1.avro.0.tmp"]
    for p in partial:
        p.write_bytes(b"partial")
    running = t.timeline.requested("commit", plan={"operation": "insert",
                                                   "writer": {"host": socket.gethostname(),
                                                              "pid": os.getpid()}})
    t.write(spark.createDataFrame([(1, "b")], "id long, v string"), "upsert")
    assert not any(p.exists() for p in partial)
    assert [i.timestamp for i in t.timeline.pending()] == [running.timestamp]
    rollbacks = [c for c in t.history() if c.operation == "rollback"]
    assert rollbacks[-1].metadata["failed"] == [crashed.timestamp]
    assert _rows(t.read()) == [(1, "b")]
    t.timeline.abort(running)


def test_inline_compaction_every_n_commits(spark, tmp_path):
    t = evonb.create_table(tmp_path / "t", "id bigint not null, v string", primary_key="id",
                           table_type="mor", properties={"evonb.compaction.inline.every": 2})
    t.write(spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string"))
    t.write(spark.createDataFrame([(1, "x")], "id long, v string"), "upsert")
    actions = [c.action for c in t.history()]
    assert actions[-1] == "compaction" and actions.count("compaction") == 1
    assert t.snapshot().logs == ()
    assert _rows(t.read()) == [(1, "x"), (2, "b")]
