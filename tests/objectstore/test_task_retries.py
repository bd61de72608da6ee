"""A Spark task of a write into a bucket dies after it stored one of its two files, and Spark
runs it again. Files are stored under unique names, so the retry stores new ones; the dead
attempt's file is listed by no commit. The retry notes that it is one before it stores
anything (``evonb.spark.task_attempts``), and after the commit point the write removes the
files named with it that the commit does not list: the bucket ends with exactly the committed
files and ``check`` is clean. (A first version left the dead attempt's file behind, an orphan
that ``check`` reported: this test fails that way.)

The task is killed from outside, as a lost executor would be (SIGKILL: none of its own
clean-up runs), by an S3 server on loopback that wraps moto's and kills the process sending
the second data file. Spark retries a failed task only when allowed to: the write runs in a
child process whose local master allows two attempts per task (``local[2,2]``); the shared
session of the test run allows one. The sweep itself, and ``check`` and repair of a note a
write left behind, are tested without Spark.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from moto.server import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

import evonb
from evonb.table.check import check_table, repair_table
from evonb.table.fileio import file_io, object_store_io
from evonb.table.fsutil import retry_note
from evonb.table.names import data_file_name, log_block_path
from evonb.table.snapshot import DataFile
from evonb.table.table import create_table
from evonb.table.transaction import Transaction
from tests.objectstore.conftest import ENV, count_requests, free_port, keys

WRITE = """
import sys
import evonb
from evonb.spark.session import session
spark = session()
t = evonb.open_table(sys.argv[1])
t.write(spark.sql("select id, if(id % 2 = 0, 'a', 'b') part, concat('v', id) v "
                  "from range(100)").coalesce(1))
print("committed", t.history()[-1].instant)
"""


def _socket_owner(port: int, peer: int) -> int | None:
    """The process holding the open loopback TCP socket from local port ``port`` to
    ``peer``. (A closed connection that once used the same port lingers in TIME_WAIT with no
    owner, inode 0: it is skipped.)"""
    inode = None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as fh:
            for line in list(fh)[1:]:
                parts = line.split()
                local, remote = (int(a.rsplit(":", 1)[1], 16) for a in parts[1:3])
                if (local, remote) == (port, peer) and parts[9] != "0":
                    inode = parts[9]
    if inode is None:
        return None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{inode}]":
                    return int(pid)
            except OSError:
                continue
    return None


class KillSecondDataFile:
    """moto's S3 app, except that the second PUT of a data file is answered by killing the
    process that sent it (once); every data-file PUT is recorded."""

    def __init__(self, app: Callable[..., Any]) -> None:
        self.app = app
        self.puts: list[str] = []
        self.killed: int | None = None

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = unquote(environ.get("PATH_INFO", ""))
        if environ["REQUEST_METHOD"] == "PUT" and path.endswith(".parquet"):
            self.puts.append(path)
            if len(self.puts) == 2 and self.killed is None:
                pid = _socket_owner(int(environ["REMOTE_PORT"]), int(environ["SERVER_PORT"]))
                assert pid is not None and pid != os.getpid()
                os.kill(pid, signal.SIGKILL)
                self.killed = pid
                start_response("500 Internal Server Error", [("Content-Length", "0")])
                return [b""]
        return self.app(environ, start_response)


@pytest.fixture
def killing_server() -> Iterator[tuple[str, KillSecondDataFile]]:
    app = KillSecondDataFile(DomainDispatcherApplication(create_backend_app))
    port = free_port()
    server = make_server("127.0.0.1", port, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}", app
    finally:
        server.shutdown()
        thread.join()


@pytest.mark.spark
def test_a_task_killed_after_storing_a_file_is_retried_without_leaving_it_behind(
        killing_server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    endpoint, app = killing_server
    env = {**ENV, "AWS_ENDPOINT_URL": endpoint}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    object_store_io.cache_clear()
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    client.create_bucket(Bucket="retries")
    where = "s3://retries/t"
    evonb.create_table(where, "id bigint, part string, v string", partition_by="part")

    child = subprocess.run(
        [sys.executable, "-c", WRITE, where], capture_output=True, text=True, timeout=600,
        env={**os.environ, **env, "EVONB_SPARK_MASTER": "local[2,2]"})
    assert child.returncode == 0, child.stderr[-4000:]
    assert "committed" in child.stdout

    # the first attempt stored one file and was killed storing the second; the retry
    # stored two new ones, and the write removed the dead attempt's file after its commit
    assert app.killed is not None, app.puts
    first, second, *retry = app.puts
    assert first.split("/")[3] != second.split("/")[3] and len(retry) == 2
    assert first not in retry
    t = evonb.open_table(where)
    (commit,) = [c for c in t.history() if c.operation == "insert"]
    assert commit.files_added == 2
    files = t.snapshot().files
    assert {f.partition for f in files} == {"part=a", "part=b"}
    stored = [k for k in keys(client, "retries", "t/") if not k.startswith("t/.evo/")]
    assert sorted(stored) == sorted(f"t/{f.path}" for f in files)
    assert sorted(f"/retries/t/{f.path}" for f in files) == sorted(retry)
    assert keys(client, "retries", "t/.evo/retries/") == []  # the note is gone too
    rows = t.to_arrow().to_pylist()
    assert sorted(r["id"] for r in rows) == list(range(100))
    assert all(r["part"] == ("a" if r["id"] % 2 == 0 else "b") and r["v"] == f"v{r['id']}"
               for r in rows)
    report = check_table(where)
    assert report.ok, report
    object_store_io.cache_clear()


@pytest.mark.parametrize("retried", [True, False])
def test_after_its_commit_a_write_with_a_retried_task_removes_what_its_commit_does_not_list(
        bucket: str, s3_client, retried: bool) -> None:  # type: ignore[no-untyped-def]
    """The sweep on its own, without Spark: files named with the attempt, in partition
    folders, data files and log blocks, some listed by the commit and some not. With the note
    of a retried task, those the commit lists stay and the others go, with the note; without
    it nothing is listed or removed (one request, the look for the note)."""
    t = create_table(f"s3://{bucket}/t", "id bigint, part string", partition_by="part")
    kept: list[DataFile] = []
    dead: list[str] = []
    other = f"part=b/{data_file_name('20200101000000000', 1)}"  # another instant's

    def write() -> None:
        with Transaction(t, "commit", plan={"operation": "insert"}) as txn:
            txn.tasks_place_files()
            base = f"part=a/{data_file_name(txn.instant, 0)}"
            kept.append(DataFile(path=base, version=t.schema.version_id,
                                 instant=txn.instant, partition="part=a", rows=1, bytes=1))
            kept.append(DataFile(path=log_block_path(base, txn.instant, 3, "avro"),
                                 version=t.schema.version_id, instant=txn.instant,
                                 partition="part=a", rows=1, bytes=1, kind="log", base=base))
            dead.extend([f"part=a/{data_file_name(txn.instant, 0)}",
                         f"part=b/{data_file_name(txn.instant, 1)}",
                         log_block_path(base, txn.instant, 4, "avro")])
            for rel in [*(f.path for f in kept), *dead, other]:
                file_io().write(t.root / rel, b"x")
            if retried:
                file_io().write(retry_note(t.root, txn.instant), b"")
            txn.stage(kept, [])
            with txn.locked():
                txn.complete({"operation": "insert", "schema_version": t.schema.version_id,
                              "added": [f.to_dict() for f in kept], "removed": []})

    _, requests = count_requests(write)
    data = sorted(k.removeprefix("t/") for k in keys(s3_client, bucket, "t/")
                  if not k.startswith("t/.evo/"))
    left = sorted([*(f.path for f in kept), other] + ([] if retried else dead))
    assert data == left
    assert keys(s3_client, bucket, "t/.evo/retries/") == []
    # removed: the lock's lease, and the dead attempt's three files and the note if retried
    assert requests["DeleteObject"] == 1 + (len(dead) + 1 if retried else 0)
    t.invalidate()
    assert sorted(f.path for f in (*t.snapshot().files, *t.snapshot().logs)) == sorted(
        f.path for f in kept)


def test_a_note_left_by_a_write_that_stopped_before_its_sweep_is_reported_and_repaired(
        bucket: str, s3_client) -> None:  # type: ignore[no-untyped-def]
    """A driver that died between its commit and its sweep leaves the note and the dead
    attempt's file: ``check`` reports the file as an orphan and the note as a note, and
    repair removes both; the committed file stays."""
    where = f"s3://{bucket}/t"
    t = create_table(where, "id bigint")
    sink = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), sink)
    data = sink.getvalue()
    with Transaction(t, "commit", plan={"operation": "insert"}) as txn:
        live = DataFile(path=data_file_name(txn.instant, 0), version=t.schema.version_id,
                        instant=txn.instant, rows=1, bytes=len(data))
        dead = data_file_name(txn.instant, 0)
        for rel in (live.path, dead):
            file_io().write(t.root / rel, data)
        txn.stage([live], [])
        with txn.locked():
            txn.complete({"operation": "insert", "schema_version": t.schema.version_id,
                          "added": [live.to_dict()], "removed": []})
    note = f".evo/retries/{txn.instant}"
    file_io().write(t.root / note, b"")  # as a retried task stores it
    report = check_table(where)
    assert [(p.kind, p.path) for p in report.problems] == [("orphan-file", dead)]
    assert ("retry-note", note) in [(p.kind, p.path) for p in report.notes]
    repaired = repair_table(where)
    assert repaired.ok and f"removed {dead}" in repaired.repaired
    assert f"removed {note}" in repaired.repaired
    assert keys(s3_client, bucket, "t/") == sorted(
        k for k in keys(s3_client, bucket, "t/") if k != f"t/{dead}" and k != f"t/{note}")
    assert f"t/{live.path}" in keys(s3_client, bucket, "t/")
    assert not [p for p in check_table(where).notes if p.kind == "retry-note"]
