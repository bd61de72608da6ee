"""The ``object_storage`` benchmark group: a DDL commit on a table in a bucket of a loopback S3
server (moto's server mode) against the same DDL on local disk, and the S3 requests each
metadata operation makes; the same DDL commit in a container of Azurite, the Azure Storage
emulator, on loopback (``object_storage.ddl_commit_azure``); a Spark insert into a table in
the bucket, whose files evonb's Python workers write, against the same insert on local disk,
written by Spark's Parquet writer (``object_storage.spark_insert``); a merge-on-read upsert
whose log blocks the driver stores 8 at once against one after another
(``object_storage.mor_upsert_blocks``), and the same through a proxy that adds a store's
request latency (``object_storage.mor_upsert_blocks_latency``, :mod:`bench.latency`).

The ratio shows what the store's round trips cost per commit (loopback: no network latency,
so real stores add their request latency times the counts reported). The request counts are
the portable figure: they do not depend on the server. No bar: it is a report.

Three request-count cases follow (:func:`request_scaling`, :func:`open_by_archive`,
:func:`planning_vs_listing`):

- ``object_storage.requests_by_history``: the requests of ``open_table``, ``history``, an ALTER
  and a read's planning (``open_table(...).snapshot()``) in a fresh process, for tables of 2,
  100 and 1,000 commits (tiny: 2 and 100). Bar: the largest table costs at most 2 requests
  more than the 100-commit one (timeline checkpoints: the count is bounded by the checkpoint
  interval, not the history; only the timeline's LIST pages grow, one per 1,000 files).
- ``object_storage.open_archived``: the requests of a fresh process's ``open_table`` + a
  read's planning and ``history`` on tables of 100 and 10,000 commits (quick: 2,000; tiny:
  400) with the default archiving (``evonb.timeline.archive.keep`` = 100), and on the largest
  with archiving off. Bar: the largest archived table costs at most 2 requests more than the
  100-commit one, LIST pages included; the ratio is archived / not archived.
- ``object_storage.planning_vs_listing``: planning a table of many data files (10,000; quick:
  2,000; tiny: 200) in 100 partition folders from its timeline, against listing its data
  folders. Bar: at most 0.5x the listing's requests. The same files all in one folder are
  reported too (no bar): listing them costs one request per 1,000 files.

The tables are built on local disk and copied to the bucket file by file (a sync tool's
PUTs), then committed to once in the bucket (which writes the checkpoint), since building a
long history through the loopback server takes too long.
``python -m bench.object_storage`` prints the same without the suite's runner.
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.harness import Case, Result, Side, skipped
from bench.latency import latency_proxy

if TYPE_CHECKING:  # pragma: no cover
    from bench.suite import Context

MISSING = "boto3 or moto[server] not installed (pip install 'evonb[bench]')"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def store_environment(env: dict[str, str]) -> Iterator[None]:
    """The object-store variables ``env`` set for the block, then restored (or removed again);
    evonb's cached stores are dropped on the way in and out, so each side sees its settings."""
    from evonb.table.fileio import object_store_io

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    object_store_io.cache_clear()
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        object_store_io.cache_clear()


@contextmanager
def s3_server() -> Iterator[str]:
    """A moto S3 server on loopback, with the standard AWS variables pointing at it; yields a
    fresh bucket's name."""
    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "bench",
           "AWS_SECRET_ACCESS_KEY": "bench", "AWS_REGION": "us-east-1"}
    try:
        with store_environment(env):
            bucket = f"evonb-bench-{uuid.uuid4().hex[:8]}"
            boto3.client("s3").create_bucket(Bucket=bucket)
            yield bucket
    finally:
        server.stop()


def request_counts(operations: dict[str, Callable[[], Any]]) -> dict[str, Counter[str]]:
    """The S3 requests (by API operation) each of ``operations`` makes."""
    from evonb.table.fileio import object_store_io

    events = object_store_io()._client.meta.events  # type: ignore[attr-defined]
    seen: Counter[str] = Counter()

    def note(model: Any, **_: Any) -> None:
        seen[model.name] += 1

    events.register("before-call.s3", note)
    out = {}
    try:
        for name, op in operations.items():
            seen.clear()
            op()
            out[name] = Counter(seen)
    finally:
        events.unregister("before-call.s3", note)
    return out


def _operations(where: str, n: Iterator[int]) -> dict[str, Callable[[], Any]]:
    import evonb
    from evonb.table.check import check_table

    return {
        "open_table": lambda: evonb.open_table(where),
        "alter (ADD COLUMN)": lambda: evonb.open_table(where).alter(
            f"ALTER TABLE t ADD COLUMN r{next(n)} int"),
        "set_properties": lambda: evonb.open_table(where).set_properties({"k": str(next(n))}),
        "history": lambda: evonb.open_table(where).history(),
        "check": lambda: check_table(where),
    }


def _format(counts: dict[str, Counter[str]]) -> list[str]:
    return [f"{name}: {sum(c.values())} requests ("
            + ", ".join(f"{op} {k}" for op, k in sorted(c.items())) + ")"
            for name, c in counts.items()]


HISTORIES = {"tiny": (2, 100), "quick": (2, 100, 1_000), "full": (2, 100, 1_000)}
"""Commits of the tables of ``requests_by_history`` at each size."""

ARCHIVED = {"tiny": (100, 400), "quick": (100, 2_000), "full": (100, 10_000)}
"""Commits of the tables of ``open_archived`` at each size."""

PLAN_FILES = {"tiny": 200, "quick": 2_000, "full": 10_000}
"""Data files of the table of ``planning_vs_listing`` at each size."""

INSERT_ROWS = {"tiny": 20_000, "quick": 500_000, "full": 5_000_000}
"""Rows of each Spark insert of ``spark_insert`` at each size."""
UPSERT_GROUPS = {"tiny": (6, 500), "quick": (24, 5_000), "full": (50, 10_000)}
"""File groups and rows per group of ``object_storage.mor_upsert_blocks``."""
LATENCY = 0.010
"""Seconds the proxy of ``object_storage.mor_upsert_blocks_latency`` adds to each request and
each response: a round trip of about 20 ms, as to a store in the same region."""

FOLDERS = 100
"""Partition folders of the table of ``planning_vs_listing`` (the bar's layout)."""


def upload(local: Path, bucket: str, prefix: str, client: Any = None) -> int:
    """Copy the folder ``local`` to ``bucket`` under ``prefix``, one PUT per file (as a sync
    tool does), with ``client`` (default: a boto3 client configured from the environment);
    the number of files."""
    if client is None:
        import boto3

        client = boto3.client("s3")
    from concurrent.futures import ThreadPoolExecutor

    paths = [p for p in sorted(local.rglob("*")) if p.is_file()]

    def put(path: Path) -> None:
        client.put_object(Bucket=bucket, Key=f"{prefix}/{path.relative_to(local).as_posix()}",
                          Body=path.read_bytes())

    with ThreadPoolExecutor(8) as pool:  # boto3 clients are thread-safe
        list(pool.map(put, paths))
    return len(paths)


def _counted(op: Callable[[], Any]) -> Counter[str]:
    from evonb.table.fileio import object_store_io

    object_store_io.cache_clear()
    return request_counts({"op": op})["op"]


def _history_operations(where: str) -> dict[str, Callable[[], Any]]:
    import evonb

    return {
        "open_table": lambda: evonb.open_table(where),
        "history": lambda: evonb.open_table(where).history(),
        "alter": lambda: evonb.open_table(where).alter(
            "ALTER TABLE t ALTER COLUMN v COMMENT 'again'"),
        "planning": lambda: evonb.open_table(where).snapshot(),
    }


def request_scaling(bucket: str, workdir: Path, histories: tuple[int, ...],
                    out: Callable[[str], None] = print) -> dict[int, dict[str, dict[str, int]]]:
    """Requests (by API operation) of open_table, history, an ALTER and a read's planning,
    each in a fresh process, for a table of each number of commits in ``histories``."""
    import evonb

    found: dict[int, dict[str, dict[str, int]]] = {}
    for commits in histories:
        local = workdir / f"history_{commits}"
        t = evonb.create_table(str(local), "id bigint not null, v string", primary_key="id")
        for i in range(commits - 2):
            t.alter(f"ALTER TABLE t ALTER COLUMN v COMMENT 'c{i}'")
        upload(local, bucket, f"h{commits}")
        where = f"s3://{bucket}/h{commits}"
        evonb.open_table(where).alter("ALTER TABLE t ADD COLUMN last int")  # writes a checkpoint
        found[commits] = {name: dict(_counted(op))
                          for name, op in _history_operations(where).items()}
        out(f"{commits} commits: " + _per_operation(found[commits]))
    return found


def timeline_history(local: Path, commits: int) -> None:
    """A local table of ``commits`` commits made through the engine's timeline protocol
    (requested, inflight, completed under the table lock: three timeline files each, as a
    write makes), with no data, fast enough for 10,000 (with the default archiving)."""
    import evonb

    t = evonb.create_table(str(local), "id bigint not null, v string", primary_key="id")
    for _ in range(commits - 1):
        empty_commit(t)


def empty_commit(t: Any) -> None:
    """One commit of no data through the timeline protocol."""
    inst = t.timeline.requested("commit", plan={"operation": "upsert"})
    t.timeline.inflight(inst, {"added": []})
    with t.locked():
        t.timeline.complete(inst, {"operation": "upsert", "schema_version": t.schema.version_id,
                                   "added": [], "removed": [], "rows_written": 0})


def unarchived_copy(source: Path, target: Path) -> None:
    """A copy of the local table ``source`` whose archived commits are back in the timeline
    folder as :func:`timeline_history` wrote them (completed, requested and inflight files),
    with archiving off: the same history as it would stand had it never been archived.
    Building 10,000 commits with archiving off takes over an hour (every commit lists the
    whole folder), so the benchmark makes the unarchived table this way."""
    import json
    import shutil

    import evonb
    from evonb.table.timeline import ARCHIVE_PROPERTY, is_archive_name

    shutil.copytree(source, target)
    timeline = target / ".evo" / "timeline"
    archives = sorted(p for p in (timeline / "archive").iterdir() if is_archive_name(p.name))
    for entry in json.loads(archives[-1].read_text())["commits"]:
        if not (timeline / entry["file"]).exists():
            (timeline / f"{entry['file']}.requested").write_text('{"operation":"upsert"}')
            (timeline / f"{entry['file']}.inflight").write_text('{"added":[]}')
            (timeline / entry["file"]).write_text(entry["content"])
    shutil.rmtree(timeline / "archive")
    evonb.open_table(str(target)).set_properties({ARCHIVE_PROPERTY: "0"})


def open_by_archive(bucket: str, workdir: Path, commits: tuple[int, ...],
                    out: Callable[[str], None] = print) -> dict[str, dict[str, dict[str, int]]]:
    """Requests (by API operation) of ``open_table`` + a read's planning and of ``history``
    in a fresh process, for tables of each number of ``commits`` with the default archiving,
    and for the largest also with archiving off (:func:`unarchived_copy`)."""
    import evonb

    found: dict[str, dict[str, dict[str, int]]] = {}
    for n, archived in [(n, True) for n in commits] + [(max(commits), False)]:
        label = f"{n} commits" + ("" if archived else ", archiving off")
        name = f"a{n}_{'on' if archived else 'off'}"
        if archived:
            timeline_history(workdir / name, n - 1)
        else:
            unarchived_copy(workdir / f"a{n}_on", workdir / name)
        upload(workdir / name, bucket, name)
        where = f"s3://{bucket}/{name}"
        empty_commit(evonb.open_table(where))  # in the bucket: writes a checkpoint
        found[label] = {
            "open + planning": dict(_counted(lambda w=where: evonb.open_table(w).snapshot())),
            "history": dict(_counted(lambda w=where: evonb.open_table(w).history())),
        }
        out(f"{label}: " + _per_operation(found[label]))
    return found


def planning_vs_listing(bucket: str, workdir: Path, files: int, folders: int = FOLDERS,
                        out: Callable[[str], None] = print) -> dict[str, Any]:
    """Requests to find the files of a table of ``files`` data files in ``folders`` partition
    folders (``1``: all in the table's folder) from its timeline, and by listing its data
    folders."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import evonb
    from evonb.table.fileio import file_io

    name = f"many_{folders}"
    local = workdir / name
    for i in range(files):
        part = i % folders
        folder = local / f"part={part}" if folders > 1 else local
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"id": [i], "part": [part]}), folder / f"f{i:05d}.parquet")
    evonb.convert(str(local))
    upload(local, bucket, name)
    root = Path(f"s3://{bucket}/{name}")
    plan: list[Any] = []
    listed: list[Any] = []

    def from_timeline() -> None:
        plan[:] = evonb.open_table(str(root)).snapshot().files

    def by_listing() -> None:
        io = file_io()
        if folders == 1:  # one paginated LIST of the table's folder
            listed[:] = [f for f in io.list(root) if f.name.endswith(".parquet")]
        else:  # the partition folders, then each of them
            listed[:] = [f for d in io.folders(root) if d != ".evo" for f in io.list(root / d)]

    timeline, listing = _counted(from_timeline), _counted(by_listing)
    assert len(plan) == len(listed) == files, (len(plan), len(listed), files)
    a, b = sum(timeline.values()), sum(listing.values())
    out(f"planning {files} files in {folders} folder(s): timeline {a} requests "
        f"({dict(timeline)}), listing {b} requests ({dict(listing)}), ratio {a / b:.3f}")
    return {"timeline": dict(timeline), "listing": dict(listing), "ratio": a / b,
            "folders": folders}


LIST = "ListObjectsV2"


def _per_operation(ops: dict[str, dict[str, int]]) -> str:
    """``open_table 7 (LIST 3)``, ...: all requests, and the LIST pages among them."""
    return ", ".join(f"{name} {sum(c.values())} (LIST {c.get(LIST, 0)})"
                     for name, c in ops.items())


def _scaling_result(found: dict[int, dict[str, dict[str, int]]]) -> Result:
    """Bar: apart from LIST pages (one per 1,000 timeline files), the largest table's
    operations make at most 2 requests more than the 100-commit table's."""
    largest, middle = max(found), sorted(found)[-2] if len(found) > 1 else min(found)

    def other(c: dict[str, int]) -> int:
        return sum(v for k, v in c.items() if k != LIST)

    ok = all(other(found[largest][k]) <= other(found[middle][k]) + 2 for k in found[largest])
    return Result(
        benchmark="object_storage", name="object_storage.requests_by_history",
        status="PASS" if ok else "MISS",
        bar=f"{largest} commits <= {middle} + 2 (not counting LIST pages)",
        notes=[f"{c} commits: {_per_operation(ops)}" for c, ops in sorted(found.items())],
        metrics={"requests": {str(c): ops for c, ops in found.items()}})


def _archive_result(found: dict[str, dict[str, dict[str, int]]]) -> Result:
    """Bar: with archiving, the largest table's cold open and history make at most 2 requests
    more than the smallest table's, LIST pages included."""
    on = [k for k in found if "off" not in k]
    small, large = found[on[0]], found[on[-1]]
    off = found[next(k for k in found if "off" in k)]
    ok = all(sum(large[op].values()) <= sum(small[op].values()) + 2 for op in large)
    ratio = (sum(large["open + planning"].values()) / sum(off["open + planning"].values()))
    return Result(
        benchmark="object_storage", name="object_storage.open_archived",
        status="PASS" if ok else "MISS", ratio=ratio,
        evonb_label=f"cold open + planning, {on[-1]}, archived",
        baseline_label="the same table with archiving off (requests)",
        bar=f"{on[-1]} <= {on[0]} + 2 requests (LIST pages included)",
        notes=[f"{k}: {_per_operation(v)}" for k, v in found.items()],
        metrics={"requests": found})


def _planning_result(found: dict[str, Any], flat: dict[str, Any], files: int) -> Result:
    return Result(
        benchmark="object_storage", name="object_storage.planning_vs_listing",
        status="PASS" if found["ratio"] <= 0.5 else "MISS", ratio=found["ratio"],
        evonb_label=f"plan {files} files in {found['folders']} folders from the timeline",
        baseline_label="list the data folders (requests)", bar="<= 0.5x requests",
        notes=[f"timeline: {found['timeline']}", f"listing: {found['listing']}",
               f"all files in one folder (no bar): timeline {flat['timeline']}, listing "
               f"{flat['listing']}, ratio {flat['ratio']:.2f}"],
        metrics={"partitioned": found, "one_folder": flat})


def object_storage(ctx: Context) -> Iterator[Case | Result]:
    """DDL commit latency in a bucket on loopback S3 vs on local disk; requests per operation."""
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
    except ImportError:
        yield skipped("object_storage", "object_storage.ddl_commit", MISSING)
        return
    import evonb

    with s3_server() as bucket:
        where = f"s3://{bucket}/t"
        remote = evonb.create_table(where, "id bigint not null", primary_key="id")
        local = evonb.create_table(ctx.path("object_storage_local"), "id bigint not null",
                                   primary_key="id")
        n = count()
        counts = request_counts(_operations(where, n))
        ctx.log("\n".join(_format(counts)))
        yield Case(
            "object_storage.ddl_commit",
            evonb=Side("ALTER ADD COLUMN, table in a bucket (loopback S3)",
                       lambda: remote.alter(f"ALTER TABLE t ADD COLUMN c{next(n)} int")),
            baseline=Side("ALTER ADD COLUMN, table on local disk",
                          lambda: local.alter(f"ALTER TABLE t ADD COLUMN c{next(n)} int")),
            notes=_format(counts), same_calls=True,
            bar_text="report (no bar): loopback S3 has no network latency",
        )
        yield _spark_insert(ctx, bucket)
        yield from _mor_upsert_blocks(ctx, bucket)
        yield _cow_upsert_driver(ctx, bucket)
        histories = HISTORIES.get(ctx.size.name, HISTORIES["quick"])
        yield _scaling_result(request_scaling(bucket, ctx.path("object_storage_histories"),
                                              histories, out=ctx.log))
        archived = ARCHIVED.get(ctx.size.name, ARCHIVED["quick"])
        yield _archive_result(open_by_archive(bucket, ctx.path("object_storage_archive"),
                                              archived, out=ctx.log))
        files = PLAN_FILES.get(ctx.size.name, PLAN_FILES["quick"])
        where = ctx.path("object_storage_files")
        yield _planning_result(planning_vs_listing(bucket, where, files, out=ctx.log),
                               planning_vs_listing(bucket, where, files, 1, out=ctx.log), files)
    yield from _azure_ddl(ctx)


def _spark_insert(ctx: Context, bucket: str) -> Case:
    """``object_storage.spark_insert``: one Spark insert into a table in a bucket (files
    written by evonb's Python workers, ``evonb.spark.object_writer``) against the same insert
    into a table on local disk (Spark's own Parquet writer)."""
    import evonb

    rows = INSERT_ROWS.get(ctx.size.name, INSERT_ROWS["quick"])
    schema = "id bigint, name string, score double, day date"
    df = ctx.spark.range(rows).selectExpr(
        "id", "concat('name-', id % 1000) name", "id / 7 score",
        "date_add(date'2024-01-01', cast(id % 365 as int)) day")
    remote = evonb.create_table(f"s3://{bucket}/inserts", schema)
    local = evonb.create_table(ctx.path("object_storage_inserts"), schema)
    return Case(
        "object_storage.spark_insert",
        evonb=Side(f"Spark insert of {rows:,} rows, table in a bucket (loopback S3)",
                   lambda: remote.write(df)),
        baseline=Side(f"Spark insert of {rows:,} rows, table on local disk",
                      lambda: local.write(df)),
        same_calls=True,
        bar_text="report (no bar): loopback S3 has no network latency",
    )


def _mor_upsert_blocks(ctx: Context, bucket: str) -> Iterator[Case]:
    """``object_storage.mor_upsert_blocks``: a merge-on-read upsert of 1% of the keys, spread
    over every file group of a table in a bucket (the driver writes one log block per group),
    with the blocks stored by 8 threads at once (``evonb.mor.driver_lookup.uploads``, the
    default) against one after another (``= 1``), on two copies of one table; then
    ``object_storage.mor_upsert_blocks_latency``, the same through :mod:`bench.latency`'s
    proxy, which adds ``LATENCY`` seconds to each request and to each response."""
    import evonb

    groups, per_group = UPSERT_GROUPS.get(ctx.size.name, UPSERT_GROUPS["quick"])
    rows = groups * per_group
    tables = {}
    for uploads in (8, 1):
        t = evonb.create_table(
            f"s3://{bucket}/mor_upserts_{uploads}", "id bigint not null, ts bigint, v string",
            primary_key="id", precombine="ts", table_type="mor",
            properties={"evonb.write.target.file.bytes": "0",
                        "evonb.mor.driver_lookup.uploads": str(uploads)})
        t.write(ctx.spark.range(0, rows, 1, groups).selectExpr(
            "id", "0L ts", "concat('v', id) v"))
        tables[uploads] = t
    n = count(1)
    picked = max(groups, rows // 100)

    def upsert(t: Any) -> None:
        ts = next(n)
        t.write(ctx.spark.range(picked).selectExpr(
            f"id * {rows // picked} + {ts % (rows // picked)} id", f"{ts}L ts", "'new' v"),
            mode="upsert")

    what = f"merge-on-read upsert of {picked:,} keys into {groups} file groups"
    yield Case(
        "object_storage.mor_upsert_blocks",
        evonb=Side(f"{what}, blocks stored 8 at once (loopback S3)", lambda: upsert(tables[8])),
        baseline=Side("the same upsert, blocks stored one after another",
                      lambda: upsert(tables[1])),
        same_calls=True,
        bar_text="report (no bar): loopback S3 answers in about a millisecond",
    )
    direct = os.environ["AWS_ENDPOINT_URL"]
    host, port = direct.split("//")[1].split(":")
    with latency_proxy(host, int(port), LATENCY) as slow, \
            store_environment({"AWS_ENDPOINT_URL": slow}):
        yield Case(
            "object_storage.mor_upsert_blocks_latency",
            evonb=Side(f"{what}, blocks stored 8 at once, {LATENCY * 2000:.0f} ms added "
                       "to each request's round trip", lambda: upsert(tables[8])),
            baseline=Side("the same upsert, blocks stored one after another",
                          lambda: upsert(tables[1])),
            same_calls=True,
            bar_text="report (no bar): what overlapping the blocks' requests saves when "
                     "each request waits on the store",
        )


def _cow_upsert_driver(ctx: Context, bucket: str) -> Case:
    """``object_storage.cow_upsert_driver``: a copy-on-write upsert of 1% of the keys drawn
    at random into a table in a bucket, its files rewritten by the driver in Arrow (the
    default) against the same upsert through Spark and evonb's Python workers
    (``evonb.write.driver_rewrite.bytes = 0``), on two tables of the same rows."""
    import evonb

    groups, per_group = UPSERT_GROUPS.get(ctx.size.name, UPSERT_GROUPS["quick"])
    rows = groups * per_group
    tables = {}
    for driver in (True, False):
        t = evonb.create_table(
            f"s3://{bucket}/cow_upserts_{int(driver)}", "id bigint not null, ts bigint, v string",
            primary_key="id", precombine="ts",
            properties={} if driver else {"evonb.write.driver_rewrite.bytes": "0"})
        t.write(ctx.spark.range(0, rows, 1, 4).selectExpr("id", "0L ts", "concat('v', id) v"))
        tables[driver] = t
    picked = max(1, rows // 100)
    n = count(1)

    def upsert(t: Any) -> None:
        ts = next(n)
        t.write(ctx.spark.range(picked).selectExpr(
            f"cast(rand({ts}) * {rows} as bigint) id", f"{ts}L ts", "'new' v"), mode="upsert")

    return Case(
        "object_storage.cow_upsert_driver",
        evonb=Side(f"copy-on-write upsert of {picked:,} random keys into {rows:,} rows in a "
                   "bucket (loopback S3), files rewritten by the driver in Arrow",
                   lambda: upsert(tables[True])),
        baseline=Side("the same upsert through Spark and evonb's Python workers",
                      lambda: upsert(tables[False])),
        same_calls=True,
        bar_text="report (no bar): loopback S3 answers in about a millisecond",
    )


def _azure_ddl(ctx: Context) -> Iterator[Case | Result]:
    """``object_storage.ddl_commit_azure``: the same ALTER in a container of Azurite (the Azure
    Storage emulator) on loopback against local disk."""
    from bench.azurite import Azurite, installed

    name = "object_storage.ddl_commit_azure"
    try:
        from azure.storage.blob import BlobServiceClient
    except ImportError:
        yield skipped("object_storage", name, "azure-storage-blob not installed "
                      "(pip install 'evonb[azure]')")
        return
    if not installed():
        yield skipped("object_storage", name, "Azurite not installed (scripts/setup.sh --test)")
        return
    import evonb

    server = Azurite(ctx.path("object_storage_azurite"))
    server.start()
    try:
        with store_environment(
                {"AZURE_STORAGE_CONNECTION_STRING": server.connection_string()}):
            container = f"bench-{uuid.uuid4().hex[:12]}"
            BlobServiceClient.from_connection_string(
                server.connection_string()).create_container(container)
            remote = evonb.create_table(f"az://{container}/t", "id bigint not null",
                                        primary_key="id")
            local = evonb.create_table(ctx.path("object_storage_azure_local"),
                                       "id bigint not null", primary_key="id")
            n = count()
            yield Case(
                name,
                evonb=Side("ALTER ADD COLUMN, table in a container (loopback Azurite)",
                           lambda: remote.alter(f"ALTER TABLE t ADD COLUMN c{next(n)} int")),
                baseline=Side("ALTER ADD COLUMN, table on local disk",
                              lambda: local.alter(f"ALTER TABLE t ADD COLUMN c{next(n)} int")),
                same_calls=True,
                bar_text="report (no bar): loopback Azurite has no network latency",
            )
    finally:
        server.stop()


def run(*, repeat: int = 5, out: Callable[[str], None] = print,
        histories: tuple[int, ...] = (), files: int = 0,
        archived: tuple[int, ...] = ()) -> dict[str, Any]:
    """Standalone: the median DDL commit time in a bucket and on local disk, their ratio, and
    the requests per operation; with ``histories`` and ``files``, also
    :func:`request_scaling` and :func:`planning_vs_listing`."""
    import statistics
    import tempfile
    import time

    import evonb

    with s3_server() as bucket, tempfile.TemporaryDirectory() as tmp:
        where = f"s3://{bucket}/t"
        remote = evonb.create_table(where, "id bigint not null", primary_key="id")
        local = evonb.create_table(f"{tmp}/t", "id bigint not null", primary_key="id")
        n = count()
        times: dict[str, list[float]] = {"s3": [], "local": []}
        for _ in range(repeat):
            for side, t in (("s3", remote), ("local", local)):
                start = time.perf_counter()
                t.alter(f"ALTER TABLE t ADD COLUMN c{next(n)} int")
                times[side].append(time.perf_counter() - start)
        medians = {k: statistics.median(v) for k, v in times.items()}
        counts = request_counts(_operations(where, n))
        extra: dict[str, Any] = {}
        if histories:
            extra["by_history"] = request_scaling(bucket, Path(tmp) / "h", histories, out=out)
        if archived:
            extra["archived"] = open_by_archive(bucket, Path(tmp) / "a", archived, out=out)
        if files:
            extra["planning"] = planning_vs_listing(bucket, Path(tmp) / "p", files, out=out)
            extra["planning_one_folder"] = planning_vs_listing(bucket, Path(tmp) / "p", files,
                                                               1, out=out)
    out(f"DDL commit: loopback S3 {medians['s3'] * 1000:.1f} ms, local disk "
        f"{medians['local'] * 1000:.1f} ms, ratio {medians['s3'] / medians['local']:.2f}x")
    for line in _format(counts):
        out(f"  {line}")
    return {"median_s": medians, "requests": {k: dict(v) for k, v in counts.items()}, **extra}


if __name__ == "__main__":
    import sys

    size = sys.argv[1] if len(sys.argv) > 1 else "tiny"
    run(histories=HISTORIES[size], files=PLAN_FILES[size], archived=ARCHIVED[size])
