"""SIGKILL at random times and at named points during writes, DDL, compaction and rewrites.

A child process loops inserts, upserts, deletes, DDL, compaction and full rewrites on a
merge-on-read table and logs each operation before (``intent``) and after (``done``) it. On
every third run the parent kills the child's whole process group after a random delay; on the
others the child kills itself at a named point of the commit protocol (``KILL_POINTS`` of
``tests.stress.workers``: attempt requested, files written, inflight marked, lock held, schema
saved, just before or after the commit file, with an archive written and the archived
commits' timeline files not yet removed, in the middle of rolling back a failed attempt),
the points taken in turn (on their 1st pass, then their 2nd, alternately). The child logs the hit
before it kills itself; the test fails when a point was not reached, and at the end unless
every point was hit (15 kills, the default, give each point one turn; 100 give each 6 or 7).
The table archives old commits after every second commit or so
(``evonb.timeline.archive.keep`` = 2), so kills land in archiving too.
After every kill:

- the table opens and reads exactly the committed state: the rows of every ``done`` operation,
  and the operation in flight either entirely or not at all (never part of it);
- ``evonb check --repair`` leaves a clean table; on every other pair of kills the repair runs
  on a copy and the next child's first operation rolls the failed attempt back instead.

Most children attach to this test's JVM (see ``tests.stress.workers``); ``OWN_JVM_KILLS`` of
them start their own Spark, and then the kill takes their JVM down with them.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import evonb
from evonb.table.check import check_table, repair_table
from evonb.table.timeline import ARCHIVE_PROPERTY
from tests.concurrency.helpers import child_env, gateway_env
from tests.stress.groups import SIGKILL_AND_CLUSTER
from tests.stress.workers import COLUMNS, KILL_POINTS, ROLLBACK_POINTS, read_log

pytestmark = [pytest.mark.stress, pytest.mark.spark, SIGKILL_AND_CLUSTER]

KILLS = int(os.environ.get("EVONB_STRESS_KILLS", "15"))  # 15: each point once
OWN_JVM_KILLS = int(os.environ.get("EVONB_STRESS_OWN_JVM_KILLS", "1"))
SEED = int(os.environ.get("EVONB_STRESS_SEED", "20261122"))
POINT_WAIT = 120.0
BASE_COLUMNS = ["id", "writer", "seq", "val"]


def timed_runs(kills: int) -> list[int]:
    """The runs killed by the parent's timer (a third of them); the others die at a point."""
    return [r for r in range(kills) if r % 3 == 0]


def kill_schedule(kills: int) -> dict[int, tuple[str, int]]:
    """Run -> (named kill point, on its n-th pass) for the runs the timer does not kill: they
    take the points in turn, each on its 1st pass in the first round, its 2nd in the second,
    then the 1st again, and so on (a point of the rollback of a failed attempt is always on its
    1st pass: a child rolls back only once; a later pass would make the child run more
    operations first, and the run longer, for little more). A child's first commit may be the
    rollback record of the attempt its predecessor left, so a point's first passes are
    sometimes in that rollback and sometimes in an operation."""
    names = list(KILL_POINTS)
    timed = set(timed_runs(kills))
    schedule = {}
    for i, run in enumerate(r for r in range(kills) if r not in timed):
        point = names[i % len(names)]
        nth = 1 if point in ROLLBACK_POINTS else 1 + (i // len(names)) % 2
        schedule[run] = (point, nth)
    return schedule


def test_the_kill_schedule_takes_every_point_in_turn() -> None:
    full = kill_schedule(100)
    assert len(full) == 66 and not set(full) & set(timed_runs(100))
    hits = Counter(point for point, _ in full.values())
    assert set(hits) == set(KILL_POINTS) and min(hits.values()) == 66 // len(KILL_POINTS)
    assert [nth for point, nth in full.values() if point == "before-commit"] == [1, 2, 1, 2, 1,
                                                                                 2, 1]
    assert {nth for point, nth in full.values() if point in ROLLBACK_POINTS} == {1}
    assert sorted(kill_schedule(15).values()) == sorted((p, 1) for p in KILL_POINTS)


def plant_failed_attempt(path: Path) -> None:
    """A pending commit of a dead process, with a data file, for the next child to undo."""
    import socket

    import pyarrow as pa
    import pyarrow.parquet as pq

    dead = subprocess.Popen(["true"])
    dead.wait()
    t = evonb.open_table(path)
    inst = t.timeline.requested("commit", plan={"operation": "insert", "writer": {
        "host": socket.gethostname(), "pid": dead.pid, "pid_start": None}})
    pq.write_table(pa.table({"id": [0]}), path / f"planted_0_{inst.timestamp}.parquet")


def wait_ready(proc: subprocess.Popen, log: Path, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(e["event"] == "ready" for e in read_log(log)):
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.05)
    raise AssertionError(f"child not ready after {timeout}s")


def kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # its JVM and Python workers too
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)


def quiesce(spark) -> None:
    """Stop the jobs a killed attached child left running in our JVM, and wait for them."""
    sc = spark.sparkContext
    sc.cancelAllJobs()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        tracker = sc.statusTracker()
        if not tracker.getActiveJobsIds() and not tracker.getActiveStageIds():
            break
        time.sleep(0.1)
    time.sleep(0.3)


def resolve(events: list[dict[str, Any]]) -> tuple[list[dict], dict | None]:
    """Operations surely committed, and the one in flight when the child died (if any)."""
    intents = {e["op"]: e for e in events if e["event"] == "intent"}
    done = {e["op"] for e in events if e["event"] == "done"}
    committed = [intents[op] for op in sorted(intents) if op in done]
    pending = [intents[op] for op in sorted(intents) if op not in done]
    assert len(pending) <= 1, pending
    return committed, (pending[0] if pending else None)


def apply(model: dict[int, str], columns: list[str], op: dict) -> tuple[dict, list[str]]:
    model = dict(model)
    if op["kind"] in ("insert", "upsert"):
        model.update(dict.fromkeys(op["keys"], op["val"]))
    elif op["kind"] == "delete":
        for k in op["keys"]:
            model.pop(k, None)
    elif op["kind"] == "ddl":
        columns = list(op["columns"])
    return model, columns


def observe(path: Path) -> tuple[dict[int, str], list[str], int]:
    t = evonb.open_table(path)
    df = t.read()
    rows = [(r["id"], r["val"]) for r in df.select("id", "val").collect()]
    extra = [c for c in df.columns if c not in BASE_COLUMNS]
    return dict(rows), extra, len(rows)


def test_sigkill_at_random_points(spark, tmp_path) -> None:
    rng = random.Random(SEED)
    path = tmp_path / "t"
    t = evonb.create_table(path, "id bigint not null, writer int, seq int, val string",
                           primary_key="id", table_type="mor",
                           properties={ARCHIVE_PROPERTY: "2"})
    t.write(spark.createDataFrame([(k, 0, 0, "init") for k in range(1, 9)], COLUMNS))
    model: dict[int, str] = dict.fromkeys(range(1, 9), "init")
    columns: list[str] = []
    next_key = 100
    attach_env = child_env(**gateway_env(spark))
    timed = timed_runs(KILLS)
    own_jvm = set(rng.sample(timed, min(OWN_JVM_KILLS, len(timed))))  # killed by the timer
    points = kill_schedule(KILLS)
    hits: Counter[str] = Counter()  # named points reached (logged by the child before dying)
    missed: list[tuple[int, str, int]] = []  # named points not reached in POINT_WAIT
    stats: Counter[str] = Counter()
    started = time.monotonic()
    for run in range(KILLS):
        log = tmp_path / f"run{run}.log"
        args = {"table": str(path), "log": str(log), "seed": SEED + run, "run": run,
                "model": {str(k): v for k, v in model.items()}, "next_key": next_key,
                "ddl_columns": columns, "spark": None if run in own_jvm else "attach"}
        if run in points:
            args["kill_at"], args["kill_nth"] = points[run]
            if points[run][0] in ROLLBACK_POINTS and not evonb.open_table(path).timeline.pending():
                plant_failed_attempt(path)
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.stress.workers", "chaos", json.dumps(args)],
            env=attach_env if run not in own_jvm else child_env(),
            stdout=subprocess.DEVNULL, stderr=open(tmp_path / f"run{run}.err", "w"),  # noqa: SIM115
            start_new_session=True)
        try:
            wait_ready(proc, log, timeout=240 if run in own_jvm else 60)
            if run in points:
                with contextlib.suppress(subprocess.TimeoutExpired):  # judged by the log
                    proc.wait(timeout=POINT_WAIT)
            else:
                time.sleep(rng.uniform(0.2, 2.5))
        finally:
            kill_group(proc)
        if run not in own_jvm:
            quiesce(spark)
        err = (tmp_path / f"run{run}.err").read_text()[-3000:]
        events = read_log(log)
        assert proc.returncode == -signal.SIGKILL, (proc.returncode, err)
        assert not any(e["event"] in ("conflict", "exit") for e in events), (events[-3:], err)
        reached = [e for e in events if e["event"] == "kill-point"]
        if run in points:
            point, nth = points[run]
            if [(e["point"], e["nth"]) for e in reached] == [(point, nth)]:
                hits[point] += 1
                in_op = [e["kind"] for e in events if e["event"] == "intent"][-1:]
                stats[f"point {point} during {in_op[0] if in_op else 'start-up'}"] += 1
            else:
                missed.append((run, point, nth))
        else:
            assert not reached, (run, reached)

        committed, in_flight = resolve(events)
        for op in committed:
            model, columns = apply(model, columns, op)
        for e in events:
            if e["event"] == "intent" and e.get("keys"):
                next_key = max(next_key, max(e["keys"]) + 1)
        got, got_columns, n_rows = observe(path)
        assert n_rows == len(got), "a key is present twice"
        if in_flight is not None:
            with_op = apply(model, columns, in_flight)
            now = (got, sorted(got_columns))  # a rename keeps the column's place in the table
            if now == (with_op[0], sorted(with_op[1])) and now != (model, sorted(columns)):
                model, columns = with_op
                stats["in-flight op committed"] += 1
            else:
                stats["in-flight op not committed"] += 1
            stats[f"killed during {in_flight['kind']}"] += 1
        assert got == model, f"run {run}: rows differ from the committed state"
        assert sorted(got_columns) == sorted(columns), (got_columns, columns)
        stats["operations committed"] += len(committed)

        reopened = evonb.open_table(path)
        commits = reopened.timeline.completed()  # each with its place in completion order
        assert all(c.has_completion for c in commits), f"run {run}: a commit without an order"
        assert len({c.completion for c in commits}) == len(commits)
        pending = reopened.timeline.pending()
        stats["kills leaving a failed attempt"] += bool(pending)
        if (run // 2) % 2 == 0 or run == KILLS - 1:  # after both kinds of kill
            report = repair_table(path)
        else:  # repair a copy; the next child's first operation rolls the attempt back
            copy = tmp_path / f"copy{run}"
            shutil.copytree(path, copy)
            report = repair_table(copy)
            shutil.rmtree(copy)
        assert report.ok, f"run {run}:\n{report.render()}"
    report = check_table(path)
    assert report.ok, report.render()
    assert observe(path)[0] == model
    stats["commits archived"] = report.stats["archived"]
    assert report.stats["archived"] > 0  # archiving did happen (and was killed in: KILL_POINTS)
    stats["kills"] = KILLS
    stats["own-JVM kills"] = len(own_jvm)
    stats["named-point kills"] = sum(hits.values())
    stats["seconds"] = round(time.monotonic() - started)
    print("kill figures:", json.dumps(dict(sorted(stats.items()))))
    print("kill points hit:", json.dumps(dict(sorted(hits.items()))))
    assert not missed, f"named kill points not reached in {POINT_WAIT:g}s (run, point, pass): " \
                       f"{missed}"
    assert sum(hits.values()) == len(points)
    if len(points) >= len(KILL_POINTS):  # every point had its turn: each was hit
        assert set(hits) == set(KILL_POINTS), sorted(set(KILL_POINTS) - set(hits))
