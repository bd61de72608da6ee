"""Child processes of the stress tests: ``python -m tests.stress.workers ROLE ARGS_JSON``.

Roles:

- ``writer``: inserts fresh keys and upserts shared "hot" keys, retrying on ConflictError;
- ``ddl``: a sequence of ALTER TABLE statements (no Spark), retrying on ConflictError;
- ``chaos``: loops inserts, upserts, deletes, DDL, compaction and rewrites until it is killed
  (or kills itself at a kill point);
- ``cluster``: writes, evolves and reads a table on a Spark standalone cluster.

Every event goes to a JSON-lines log, flushed and fsynced, so a parent can tell what committed
even after a SIGKILL: ``intent`` is logged before an operation, ``done`` after it returned.

``spark: "attach"`` connects to the JVM of the parent (its py4j gateway, given by the
``PYSPARK_GATEWAY_PORT`` / ``PYSPARK_GATEWAY_SECRET`` environment variables) instead of starting
one: the child is still a separate process with its own locks and timeline writes, and a kill
still stops it at any point, but it starts in a second instead of ~15.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

HOT_KEYS = list(range(1, 9))
COLUMNS = "id bigint, writer int, seq int, val string"
MAX_ATTEMPTS = 60
SMALL_LOCAL_CONF = {
    "spark.driver.memory": "1g",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
}


class Log:
    """An append-only JSON-lines log that survives a SIGKILL of the writer."""

    def __init__(self, path: str) -> None:
        self.fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - lives as long as the process

    def __call__(self, **event: Any) -> None:
        event.setdefault("t", round(time.time(), 3))
        self.fh.write(json.dumps(event) + "\n")
        self.fh.flush()
        os.fsync(self.fh.fileno())


def read_log(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The events of a log (a torn last line, from a kill mid-write, is dropped)."""
    out = []
    p = Path(path)
    if not p.exists():
        return out
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def start_spark(mode: str | None, master: str | None = None, conf: dict[str, str] | None = None):
    """A SparkSession: attached to the parent's JVM, or a new (small) local one."""
    import evonb

    if mode == "attach":
        from pyspark import SparkContext
        from pyspark.java_gateway import launch_gateway
        from pyspark.sql import SparkSession

        gateway = launch_gateway()
        jvm = gateway.jvm
        jsc = jvm.JavaSparkContext(jvm.org.apache.spark.SparkContext.getOrCreate())
        SparkSession(SparkContext(gateway=gateway, jsc=jsc))
    else:
        from evonb.spark.session import configure

        configure(master=master or "local[2]", conf={**SMALL_LOCAL_CONF, **(conf or {})})
    return evonb.session()


# ------------------------------------------------------------------------------ writer
def writer(args: dict[str, Any], log: Log) -> int:
    import evonb
    from evonb.errors import ConflictError

    spark = start_spark(args.get("spark"))
    t = evonb.open_table(args["table"])
    rng = random.Random(args["seed"])
    w = args["writer"]
    log(event="ready", pid=os.getpid())
    for i in range(args["commits"]):
        if rng.random() < args.get("upsert_share", 0.4):
            mode, keys = "upsert", sorted(rng.sample(HOT_KEYS, 2))
        else:
            mode, keys = "insert", [w * 100_000 + i * 10 + k for k in range(3)]
        val = f"w{w}-{i}"
        df = spark.createDataFrame([(k, w, i, val) for k in keys], COLUMNS).coalesce(1)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                commit = t.write(df, mode)
            except ConflictError as exc:
                log(event="conflict", op=i, mode=mode, attempt=attempt, winner=exc.winner,
                    message=exc.message)
                time.sleep(rng.uniform(0.0, 0.3))
                continue
            log(event="done", op=i, mode=mode, keys=keys, val=val, instant=commit.instant,
                attempts=attempt)
            break
        else:
            log(event="gave-up", op=i)
            return 4
    return 0


DDL_STEPS = (
    "ALTER TABLE t ADD COLUMNS (d{i} int COMMENT 'added')",
    "ALTER TABLE t ALTER COLUMN d{p} COMMENT 'noted {i}'",
    "ALTER TABLE t RENAME COLUMN d{pp} TO e{pp}",
    "ALTER TABLE t ALTER COLUMN val COMMENT 'step {i}'",
)


def ddl_statement(i: int) -> str:
    """The i-th statement of the DDL process (every 4 steps: add, comment, rename, comment)."""
    return DDL_STEPS[i % 4].format(i=i, p=i - 1, pp=i - 2)


def ddl(args: dict[str, Any], log: Log) -> int:
    import evonb
    from evonb.errors import ConflictError

    t = evonb.open_table(args["table"])
    rng = random.Random(args["seed"])
    log(event="ready", pid=os.getpid())
    go = Path(args["go"]) if args.get("go") else None
    while go is not None and not go.exists():  # the parent says when the writers are up
        time.sleep(0.05)
    for i in range(args["commits"]):
        time.sleep(rng.uniform(*args.get("pause", (0.5, 2.0))))
        stmt = ddl_statement(i)
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                t.alter(stmt)
            except ConflictError as exc:
                log(event="conflict", op=i, mode="alter", attempt=attempt, winner=exc.winner,
                    message=exc.message)
                time.sleep(rng.uniform(0.0, 0.2))
                continue
            log(event="done", op=i, mode="alter", ddl=stmt, instant=t.schema.version_id,
                attempts=attempt)
            break
        else:
            log(event="gave-up", op=i)
            return 4
    return 0


# ------------------------------------------------------------------------------- chaos
KILL_POINTS = {
    # point name: (object path, attribute, when): the steps of a commit, in their order ...
    "requested": ("evonb.table.timeline:Timeline", "requested", "after"),
    "files-written": ("evonb.table.timeline:Timeline", "inflight", "before"),
    "inflight": ("evonb.table.timeline:Timeline", "inflight", "after"),
    "lock-held": ("evonb.table.lock:FileLock", "acquire", "after"),
    "schema-saved": ("evonb.table.table:BaseTable", "save_version", "after"),
    "before-commit": ("evonb.table.timeline:Timeline", "complete", "before"),
    "after-commit": ("evonb.table.timeline:Timeline", "complete", "after"),
    # ... of archiving old commits (the archive written, their timeline files not yet removed)
    "archive-written": ("evonb.table.timeline:Timeline", "_remove_archived", "before"),
    # ... and of the rollback of a failed attempt (its files removed, its instant not yet;
    # then the attempt gone, the rollback commit not yet recorded)
    "rollback-abort": ("evonb.table.timeline:Timeline", "abort", "before"),
    "rollback-undo": ("evonb.table.rollback:_undo_attempt", None, "after"),
}
ROLLBACK_POINTS = frozenset(p for p in KILL_POINTS if p.startswith("rollback-"))
"""Points passed only while rolling back a failed attempt: the child needs one to find."""


def install_kill_point(point: str, nth: int, log: Log | None = None) -> None:
    """SIGKILL this process the ``nth`` time execution passes ``point`` (by wrapping the
    function of the commit sequence named in :data:`KILL_POINTS`; evonb has no test hooks).
    The hit is logged first (``kill-point``), so the parent knows the kill was this one."""
    import importlib

    module_name, _, attr_path = KILL_POINTS[point][0].partition(":")
    _, method, when = KILL_POINTS[point]
    module = importlib.import_module(module_name)
    owner = module if method is None else getattr(module, attr_path)
    name = attr_path if method is None else method
    original = getattr(owner, name)
    seen = [0]

    def die() -> None:
        if log is not None:
            log(event="kill-point", point=point, nth=nth, when=when)
        os.kill(os.getpid(), signal.SIGKILL)

    def hooked(*a: Any, **k: Any) -> Any:
        seen[0] += 1
        hit = seen[0] == nth
        if hit and when == "before":
            die()
        out = original(*a, **k)
        if hit:
            die()
        return out

    setattr(owner, name, hooked)


def chaos(args: dict[str, Any], log: Log) -> int:
    import evonb
    from evonb.errors import ConflictError

    spark = start_spark(args.get("spark"))
    if args.get("kill_at"):
        install_kill_point(args["kill_at"], args.get("kill_nth", 1), log)
    t = evonb.open_table(args["table"])
    rng = random.Random(args["seed"])
    model: dict[int, str] = {int(k): v for k, v in args["model"].items()}
    next_key = args["next_key"]
    run = args["run"]
    added: list[str] = list(args.get("ddl_columns", []))
    log(event="ready", pid=os.getpid())
    for n in range(args.get("ops", 1000)):
        val = f"r{run}-{n}"
        kind = rng.choices(["insert", "upsert", "delete", "ddl", "compact", "rewrite"],
                           [32, 25, 10, 15, 12, 6])[0]
        if kind in ("upsert", "delete") and len(model) < 4:
            kind = "insert"
        intent: dict[str, Any] = {"op": n, "kind": kind}
        if kind == "insert":
            keys = [next_key, next_key + 1, next_key + 2]
            next_key += 3
            intent.update(keys=keys, val=val)
        elif kind == "upsert":
            keys = [*rng.sample(sorted(model), 2), next_key]
            next_key += 1
            intent.update(keys=keys, val=val)
        elif kind == "delete":
            keys = rng.sample(sorted(model), 1)
            intent.update(keys=keys)
        elif kind == "ddl":
            if added and rng.random() < 0.4:
                old = added.pop(rng.randrange(len(added)))
                new = f"{old}_r"
                intent.update(ddl=f"ALTER TABLE t RENAME COLUMN {old} TO {new}",
                              columns=[*added, new])
                added.append(new)
            else:
                col = f"c{run}_{n}"
                intent.update(ddl=f"ALTER TABLE t ADD COLUMNS ({col} int)", columns=[*added, col])
                added.append(col)
        log(event="intent", **intent)
        try:
            if kind in ("insert", "upsert"):
                df = spark.createDataFrame([(k, run, n, val) for k in keys], COLUMNS)
                t.write(df, kind)
                model.update(dict.fromkeys(keys, val))
            elif kind == "delete":
                t.write(spark.createDataFrame([(k,) for k in keys], "id bigint"), "delete")
                for k in keys:
                    model.pop(k, None)
            elif kind == "ddl":
                t.alter(intent["ddl"])
            elif kind == "compact":
                t.compact()
            else:
                t.rewrite(purge_dropped=True)
        except ConflictError as exc:  # only a kill can race us; report it all the same
            log(event="conflict", op=n, message=exc.message)
            return 5
        log(event="done", op=n)
    return 0


# ------------------------------------------------------------------------------ cluster
def cluster(args: dict[str, Any], log: Log) -> int:
    """On a standalone cluster: write, evolve by write and by DDL, upsert (log blocks written
    by executors on a merge-on-read table), compact, read back."""
    import evonb

    spark = start_spark(None, master=args["master"], conf=args.get("conf"))
    sc = spark.sparkContext
    log(event="ready", master=sc.master, executors=_executors(sc))
    t = evonb.create_table(args["table"], "id bigint not null, name string, ts bigint",
                           primary_key="id", precombine="ts", table_type=args.get("type", "mor"))
    rows = [(i, f"n{i}", 1) for i in range(200)]
    t.write(spark.createDataFrame(rows, "id bigint, name string, ts bigint").repartition(4))
    wider = [(i, f"n{i}", 2, i * 1.5) for i in range(150, 250)]
    t.write(spark.createDataFrame(wider, "id bigint, name string, ts bigint, score double"),
            "upsert")
    t.alter("ALTER TABLE t RENAME COLUMN name TO label")
    t.write(spark.createDataFrame([(i, f"u{i}", 3, -1.0) for i in range(0, 300, 7)],
                                  "id bigint, label string, ts bigint, score double"), "upsert")
    t.write(spark.createDataFrame([(i,) for i in range(1, 50, 10)], "id bigint"), "delete")
    before = sorted(tuple(r) for r in t.read().collect())
    logs = len(t.snapshot().logs)
    daemons = set(sc.parallelize(range(8), 8).map(lambda _: os.getppid()).collect())
    compacted = t.compact()
    after = sorted(tuple(r) for r in evonb.open_table(args["table"]).read().collect())
    log(event="done", rows=len(after), columns=t.read().columns, log_blocks=logs,
        same_after_compaction=before == after, compacted=compacted is not None,
        executor_processes=len(daemons), sample=[list(r) for r in after[:3]],
        schema=str(t.schema.struct.simple_string()))
    # One upsert and one delete on a fresh table: merged by position, with the replaced base
    # rows dropped inside the executors' Parquet readers by evonb's source (from spark.jars).
    p = evonb.create_table(args["table"] + "_pos", "id bigint not null, v string, ts bigint",
                           primary_key="id", precombine="ts", table_type="mor")
    cols = "id bigint, v string, ts bigint"
    p.write(spark.createDataFrame([(i, f"b{i}", 1) for i in range(300)], cols).repartition(3),
            "insert")
    p.write(spark.createDataFrame([(i, f"u{i}", 2) for i in range(0, 300, 5)], cols), "upsert")
    p.write(spark.createDataFrame([(i,) for i in range(1, 300, 50)], "id bigint"), "delete")
    read = p.read()
    got = sorted(tuple(r) for r in read.collect())
    want = sorted((i, f"u{i}" if i % 5 == 0 else f"b{i}", 2 if i % 5 == 0 else 1)
                  for i in range(300) if i % 50 != 1)
    log(event="positions", rows=len(got), right=got == want,
        in_reader="EvonbParquet" in read._jdf.queryExecution().executedPlan().toString())
    return 0


def _executors(sc: Any, want: int = 2, timeout: float = 120.0) -> int:
    """The executors registered (waits up to ``timeout`` seconds for ``want`` of them)."""
    deadline = time.monotonic() + timeout
    while True:
        n = sc._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
        if n >= want or time.monotonic() > deadline:
            return n
        time.sleep(0.2)


ROLES = {"writer": writer, "ddl": ddl, "chaos": chaos, "cluster": cluster}


def main() -> int:
    role, raw = sys.argv[1], sys.argv[2]
    args = json.loads(raw)
    log = Log(args["log"])
    code = ROLES[role](args, log)
    log(event="exit", code=code)
    sys.stdout.flush()
    os._exit(code)  # never stop a JVM we attached to


if __name__ == "__main__":
    sys.exit(main())
