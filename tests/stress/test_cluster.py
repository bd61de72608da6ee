"""The same code on a Spark standalone cluster: a master and two workers on loopback.

The pip package of PySpark has no ``sbin/start-master.sh``; the test starts the daemons with
``bin/spark-class`` and stops them at the end whatever happens. A child process (the shared
session of the test run is local) points evonb at the cluster, writes a merge-on-read table,
evolves it by write and by DDL, upserts and deletes (log blocks written by the executors),
compacts, and reads it back.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.concurrency.helpers import ROOT, child_env
from tests.stress.groups import SIGKILL_AND_CLUSTER
from tests.stress.workers import read_log

pytestmark = [pytest.mark.stress, SIGKILL_AND_CLUSTER]


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports: bound all at once, so none is handed out twice (a worker's
    UI once took the port just chosen for the master, which then moved to the next port while
    the workers looked for it at the first)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


def alive_workers(ui_port: int) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=2) as resp:
            return int(json.load(resp).get("aliveworkers", 0))
    except (OSError, ValueError):
        return 0


def stop(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=15)
            return
        except subprocess.TimeoutExpired:
            continue


def test_write_evolve_read_on_a_standalone_cluster(tmp_path: Path) -> None:
    import pyspark

    spark_home = Path(pyspark.__file__).parent
    spark_class = str(spark_home / "bin" / "spark-class")
    env = child_env(SPARK_HOME=str(spark_home), SPARK_LOCAL_IP="127.0.0.1")
    daemons: list[subprocess.Popen] = []

    def daemon(name: str, *args: str) -> None:
        out = open(tmp_path / f"{name}.out", "w")  # noqa: SIM115 - closed with the process
        daemons.append(subprocess.Popen([spark_class, *args], env=env, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True))

    def start() -> str | None:
        """Start a master and two workers; the master's URL once both workers registered,
        or None when another process took the master's port first (all stopped then)."""
        port, ui, *worker_uis = free_ports(4)
        master = f"spark://127.0.0.1:{port}"
        daemon("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
               "--port", str(port), "--webui-port", str(ui))
        for i, worker_ui in enumerate(worker_uis):
            daemon(f"worker{i}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                   "--cores", "1", "--memory", "1g", "--webui-port", str(worker_ui),
                   "--work-dir", str(tmp_path / f"work{i}"), master)
        deadline = time.monotonic() + 180
        while alive_workers(ui) < 2:
            said = (tmp_path / "master.out").read_text()
            if any(f"could not bind on port {p}" in said for p in (port, ui)):
                for proc in reversed(daemons):
                    stop(proc)
                daemons.clear()
                return None
            assert time.monotonic() < deadline, said[-3000:]
            assert all(d.poll() is None for d in daemons), "a daemon died"
            time.sleep(0.5)
        return master

    try:
        master = next((m for m in (start() for _ in range(3)) if m is not None), None)
        assert master is not None, "the master's port was taken three times"

        log = tmp_path / "cluster.log"
        args = {"master": master, "table": str(tmp_path / "t"), "log": str(log),
                "conf": {"spark.executor.memory": "512m", "spark.cores.max": "2",
                         "spark.executorEnv.PYTHONPATH": str(ROOT),
                         "spark.driver.memory": "1g"}}
        child = subprocess.run([sys.executable, "-m", "tests.stress.workers", "cluster",
                                json.dumps(args)], env=child_env(), capture_output=True,
                               text=True, timeout=600, check=False)
        assert child.returncode == 0, child.stdout[-2000:] + child.stderr[-4000:]
        events = {e["event"]: e for e in read_log(log)}
        ready, done = events["ready"], events["done"]
        assert ready["master"] == master and ready["executors"] == 2
        assert done["executor_processes"] == 2  # Python tasks ran in both executors
        assert done["columns"] == ["id", "label", "ts", "score"]
        assert done["rows"] == 250 + 7 - 5  # 0..249, 7 new keys upserted, 5 deleted
        assert done["log_blocks"] > 0  # merge-on-read log blocks written by the executors
        assert done["compacted"] and done["same_after_compaction"]
        positions = events["positions"]
        assert positions["in_reader"] and positions["right"] and positions["rows"] == 294
        from evonb.table.check import check_table

        assert check_table(tmp_path / "t").ok
    finally:
        for proc in reversed(daemons):
            stop(proc)
