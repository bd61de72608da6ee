"""Which failed attempts may be rolled back, and which files belong to an instant."""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime, timedelta

from evonb.services.rollback import files_of_instant, is_abandoned, writer_gone, writer_info
from evonb.table.instants import instant_from_datetime

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
