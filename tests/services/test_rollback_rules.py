"""Which failed attempts may be rolled back, and which files belong to an instant."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta

import pytest

import evonb
from evonb.table.instants import instant_from_datetime
from evonb.table.rollback import files_of_instant, is_abandoned
from evonb.table.writers import writer_gone, writer_info

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
RECENT = instant_from_datetime(NOW - timedelta(seconds=30))
OLD = instant_from_datetime(NOW - timedelta(hours=5))


def _dead_pid() -> int:
    pid = 999_999
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return pid
        except PermissionError:
            pass
        pid -= 1


def test_writer_info_names_this_process():
    info = writer_info()
    assert info["host"] == socket.gethostname() and info["pid"] == os.getpid()
    assert not writer_gone(info)


def test_dead_writer_on_this_host_is_rolled_back_at_once():
    plan = {"writer": {"host": socket.gethostname(), "pid": _dead_pid(), "pid_start": "1"}}
    assert is_abandoned(RECENT, plan, timeout=3600, now=NOW)


def test_live_writer_is_left_alone_until_the_timeout():
    plan = {"writer": writer_info()}
    assert not is_abandoned(RECENT, plan, timeout=3600, now=NOW)
    assert is_abandoned(OLD, plan, timeout=3600, now=NOW)


def test_reused_pid_counts_as_gone():
    info = dict(writer_info(), pid_start="not-the-start-time")
    assert writer_gone(info)


def test_other_hosts_and_unknown_writers_wait_for_the_timeout():
    other = {"writer": {"host": "elsewhere.invalid", "pid": _dead_pid()}}
    assert not is_abandoned(RECENT, other, timeout=3600, now=NOW)
    assert is_abandoned(OLD, other, timeout=3600, now=NOW)
    assert not is_abandoned(RECENT, {}, timeout=3600, now=NOW)
    assert is_abandoned(OLD, {}, timeout=3600, now=NOW)


def test_files_of_an_instant(tmp_path):
    inst, other = "20260101000000001", "20260101000000002"
    names = [f"p=1/abcdefabcdefabcdefab_0_{inst}.parquet",
             f"p=1/.abcdefabcdefabcdefab_0_{other}.log.{inst}_2.avro",
             f"p=1/.abcdefabcdefabcdefab_0_{other}.log.{inst}_3.avro.0.tmp",
             f"keep_0_{other}.parquet", f".keep_0_{inst}.log.{other}_0.avro",
             f".evo/staging/{inst}/part-0.parquet"]
    for n in names:
        (tmp_path / n).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / n).write_bytes(b"x")
    found = sorted(p.relative_to(tmp_path).as_posix() for p in files_of_instant(tmp_path, inst))
    assert found == sorted(names[:3])


# ------------------------------------------------------------------ field IDs after a rollback
@pytest.mark.spark
def test_rolled_back_column_id_is_never_given_again(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint not null, a string", primary_key="id")
    t.write(spark.createDataFrame([(1, "x")], "id bigint, a string"))
    t.alter("ALTER TABLE t ADD COLUMN b int")
    gone = t.schema.find("b").id
    t.write(spark.createDataFrame([(2, "y", 5)], "id bigint, a string, b int"))
    added = t.history()[2].instant
    undone = t.rollback(added, cascade=True)  # the ADD and the write after it
    assert undone.metadata["versions_deleted"] == [added]
    assert [f.name for f in t.schema.fields] == ["id", "a"]
    assert t.schema.max_column_id == gone  # the highest ID given stays recorded
    assert t.schema.version_id == undone.instant  # a copy of the restored schema
    t.alter("ALTER TABLE t ADD COLUMN c int")
    assert t.schema.find("c").id > gone
    t.write(spark.createDataFrame([(3, "z", 7)], "id bigint, a string, c int"))
    rows = sorted(tuple(r) for r in t.read().collect())
    assert rows == [(1, "x", None), (3, "z", 7)]
    assert t.read(as_of=undone.instant).columns == ["id", "a"]


@pytest.mark.spark
def test_column_added_by_a_write_and_rolled_back(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint not null", primary_key="id")
    t.write(spark.createDataFrame([(1, "x")], "id bigint, extra string"))
    gone = t.schema.find("extra").id
    t.rollback()
    t.write(spark.createDataFrame([(2, 4)], "id bigint, other int"))
    assert t.schema.find("other").id > gone
    assert sorted(tuple(r) for r in t.read().collect()) == [(2, 4)]


@pytest.mark.spark
def test_a_rollback_that_undoes_no_column_keeps_the_schema_version(spark, warehouse):
    t = evonb.create_table(warehouse / "t", "id bigint not null", primary_key="id")
    t.write(spark.createDataFrame([(1,)], "id bigint"))
    version = t.schema.version_id
    t.write(spark.createDataFrame([(2,)], "id bigint"))
    assert t.rollback().schema_version == version
    assert t.schema.version_id == version and len(t.schemas()) == 1
