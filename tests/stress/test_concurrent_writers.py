"""N writer processes and one DDL process on one table.

Each writer process makes ``COMMITS`` commits (``WRITERS - ATTACHED`` of them start their own
local Spark, the others attach to this test's JVM: see ``tests.stress.workers``): inserts of fresh
keys and upserts of shared "hot" keys (which rewrite the same file groups, so writers conflict),
retrying each on ConflictError. The DDL process (no Spark needed) runs ``DDL_COMMITS`` ALTER
TABLE statements meanwhile, so writes that started before a DDL are aborted (Hudi RFC-33).
Afterwards: every committed row is present exactly once with the value of the last write of its
key to complete (commits overlapping in time on different file groups both commit, in whatever
order they complete), every loser got ConflictError naming a commit that exists, every operation
succeeded on a retry, and ``evonb check`` is clean.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter

import pytest

import evonb
from evonb.table.check import check_table
from evonb.table.timeline import ARCHIVE_PROPERTY
from tests.concurrency.helpers import child_env, gateway_env
from tests.stress.groups import WRITERS_FUZZ_MODEL
from tests.stress.workers import COLUMNS, HOT_KEYS, ddl_statement, read_log

pytestmark = [pytest.mark.stress, pytest.mark.spark, WRITERS_FUZZ_MODEL]

WRITERS = int(os.environ.get("EVONB_STRESS_WRITERS", "4"))
COMMITS = int(os.environ.get("EVONB_STRESS_COMMITS", "12"))
DDL_COMMITS = int(os.environ.get("EVONB_STRESS_DDL_COMMITS", "12"))
ATTACHED = int(os.environ.get("EVONB_STRESS_ATTACHED_WRITERS", "2"))
TIMEOUT = 1800
"""A guard against a hung process, not a speed bar: the full-size run took 425 s on 2 busy cores."""


def spawn(role: str, args: dict, tmp_path, name: str, env: dict[str, str] | None = None
          ) -> tuple[subprocess.Popen, str]:
    log = str(tmp_path / f"{name}.log")
    out = open(tmp_path / f"{name}.out", "w")  # noqa: SIM115 - closed with the process
    proc = subprocess.Popen([sys.executable, "-m", "tests.stress.workers", role,
                             json.dumps({**args, "log": log})],
                            stdout=out, stderr=subprocess.STDOUT, env=child_env(**(env or {})),
                            start_new_session=True)
    return proc, log


def test_writers_and_a_ddl_process(spark, tmp_path) -> None:
    path = tmp_path / "t"
    t = evonb.create_table(path, "id bigint not null, writer int, seq int, val string",
                           primary_key="id", properties={ARCHIVE_PROPERTY: "5"})
    t.write(spark.createDataFrame([(k, -1, -1, "init") for k in HOT_KEYS], COLUMNS).coalesce(1))
    started = time.monotonic()
    attached = gateway_env(spark)
    children = [spawn("writer", {"table": str(path), "writer": w, "seed": 100 + w,
                                 "commits": COMMITS,
                                 "spark": "attach" if w >= WRITERS - ATTACHED else None},
                      tmp_path, f"writer{w}", attached if w >= WRITERS - ATTACHED else {})
                for w in range(WRITERS)]
    # The DDL process waits until every writer is up, then spreads its DDL over their run.
    go = tmp_path / "go"
    children.append(spawn("ddl", {"table": str(path), "seed": 7, "commits": DDL_COMMITS,
                                  "go": str(go), "pause": [1.0, 5.0]}, tmp_path, "ddl"))
    try:
        deadline = time.monotonic() + 300
        while not all(any(e["event"] == "ready" for e in read_log(log))
                      for _, log in children[:-1]) and time.monotonic() < deadline:
            time.sleep(0.1)
        go.touch()
        for proc, _ in children:
            proc.wait(timeout=max(1.0, TIMEOUT - (time.monotonic() - started)))
    finally:
        for proc, _ in children:
            if proc.poll() is None:
                os.killpg(proc.pid, 9)
                proc.wait()
    elapsed = time.monotonic() - started
    outputs = {name: (tmp_path / f"{name}.out").read_text()[-3000:]
               for name in [*(f"writer{w}" for w in range(WRITERS)), "ddl"]}
    assert [p.returncode for p, _ in children] == [0] * len(children), outputs

    events = {name: read_log(log) for (_, log), name in zip(children, outputs, strict=True)}
    t = evonb.open_table(path)
    completed = {c.instant: c for c in t.timeline.completed()}
    done = [e for evs in events.values() for e in evs if e["event"] == "done"]
    conflicts = [e for evs in events.values() for e in evs if e["event"] == "conflict"]
    assert len(done) == WRITERS * COMMITS + DDL_COMMITS  # every operation succeeded at last
    for e in conflicts:  # every loser was told which existing commit it lost to
        assert e["winner"] in completed, e
    for e in done:
        assert e["instant"] in completed, e

    expected: dict[int, tuple[str, str]] = {k: ("init", "0") for k in HOT_KEYS}
    writes = [e for e in done if e["mode"] != "alter"]
    for e in sorted(writes, key=lambda e: completed[e["instant"]].order):  # completion order
        for k in e["keys"]:
            expected[k] = (e["val"], e["instant"])
    got = [(r["id"], r["val"]) for r in t.read().select("id", "val").collect()]
    assert len(got) == len({k for k, _ in got})  # every row exactly once
    assert dict(got) == {k: v for k, (v, _) in expected.items()}

    columns = t.read().columns
    for i in range(DDL_COMMITS):
        stmt = ddl_statement(i)
        if "ADD COLUMNS" in stmt:
            renamed = i + 2 < DDL_COMMITS
            assert (f"e{i}" if renamed else f"d{i}") in columns, (stmt, columns)
    report = check_table(path)
    assert report.ok, report.render()
    assert report.stats["archived"] > 0  # old commits were archived while the others wrote

    # Inserts make new file groups: they only ever lose to a schema change (RFC-33), never to a
    # write that overlapped them in time.
    for e in conflicts:
        if e["mode"] == "insert":
            assert completed[e["winner"]].action == "alter", e

    def reason(message: str) -> str:
        if "file groups" in message or "log blocks" in message:
            return "same file group"
        return "schema change" if "schema" in message else message

    by_kind = Counter(e["mode"] for e in conflicts)
    figures = {
        "writers": WRITERS, "commits_per_writer": COMMITS, "ddl_commits": DDL_COMMITS,
        "committed": len(done), "conflicts": len(conflicts), "conflicts_by_mode": by_kind,
        "conflicts_by_reason": Counter(reason(e["message"]) for e in conflicts),
        "lost_to_ddl": sum(1 for e in conflicts
                           if completed[e["winner"]].action == "alter"),
        "max_attempts": max(e["attempts"] for e in done),
        "attempts": sum(e["attempts"] for e in done),
        "completed_out_of_instant_order": sum(
            1 for x, y in zip(t.timeline.completed(), t.timeline.completed()[1:], strict=False)
            if y.instant < x.instant),
        "rows": len(got),
        "seconds": round(elapsed, 1),
    }
    print("concurrency figures:", json.dumps(figures, default=dict))
    assert figures["conflicts"] > 0  # the run did exercise the conflict path
