"""Helpers shared by the benchmarks: sizes, Spark settings, fast table building, scan metrics."""

from __future__ import annotations

import contextlib
import json
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evonb.spark.session import temporary_settings

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from evonb.api import Table


@dataclass(frozen=True)
class Size:
    """How big each benchmark's data is at one ``--size``."""

    name: str
    rows: int  # evolved-read, time-travel, upsert and merge-on-read tables
    slice_partitions: int  # Spark partitions (so files) per written slice
    block_size: int  # parquet.block.size for the evolved table and its Parquet copy
    ddl_files: int  # the many-file table of the DDL benchmark
    plan_files: int  # the planning benchmark's table
    upsert_files: int  # files of the copy-on-write upsert table
    alter_rows: int  # rows in the DDL benchmark's tables


SIZES: dict[str, Size] = {
    "tiny": Size("tiny", rows=6_000, slice_partitions=1, block_size=16 * 1024,
                 ddl_files=40, plan_files=100, upsert_files=10, alter_rows=400),
    "quick": Size("quick", rows=300_000, slice_partitions=2, block_size=128 * 1024,
                  ddl_files=2_000, plan_files=10_000, upsert_files=20, alter_rows=20_000),
    "full": Size("full", rows=5_000_000, slice_partitions=4, block_size=1024 * 1024,
                 ddl_files=2_000, plan_files=10_000, upsert_files=50, alter_rows=200_000),
}


@contextlib.contextmanager
def spark_conf(spark: SparkSession, **settings: str) -> Iterator[None]:
    """Set SQL settings (dots given as ``__``) for a block; restore them afterwards."""
    with temporary_settings(spark, {k.replace("__", "."): str(v) for k, v in settings.items()}):
        yield


def same_rows(a: pa.Table, b: pa.Table) -> bool:
    """Whether two Arrow reads hold the same columns and rows, in any order (by ``id``;
    nullability aside)."""
    if a.column_names != b.column_names or a.num_rows != b.num_rows:
        return False
    return bool(a.sort_by("id").equals(b.cast(a.schema).sort_by("id")))


def full_aggregate(df: DataFrame) -> list[Any]:
    """A full-scan aggregate touching every column: sums of numbers, max of strings,
    a count of true booleans, and the row count."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    aggs = [F.count(F.lit(1)).alias("rows")]
    for i, f in enumerate(df.schema.fields):
        c = F.col(f"`{f.name}`")
        if isinstance(f.dataType, T.NumericType):
            aggs.append(F.sum(c).alias(f"a{i}"))
        elif isinstance(f.dataType, T.BooleanType):
            aggs.append(F.sum(c.cast("int")).alias(f"a{i}"))
        else:
            aggs.append(F.max(c).alias(f"a{i}"))
    return df.agg(*aggs).collect()


# ----------------------------------------------------------------------- fast table building
def commit_arrow_files(table: Table, batches: list[pa.Table], *, operation: str = "insert"
                       ) -> str:
    """Write each Arrow table as one Parquet file of ``table`` and commit them all at once.

    The files are written by pyarrow (much faster than Spark for thousands of tiny files) in the
    table's physical layout: physical column names, field IDs, and the ``_evo_commit_time``
    column, like the files of :func:`evonb.spark.writer.write_files`. The commit goes through the
    engine's own timeline protocol (requested, inflight, then completed under the table lock),
    with the same metadata a Spark insert records. Columns are matched by logical name.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from evonb.schema.arrow_convert import schema_to_arrow
    from evonb.table.layout import META_COMMIT_TIME
    from evonb.table.snapshot import DataFile

    schema = table.schema
    _, layout = table.version(schema.version_id)
    physical = table.physical_query(schema, layout)
    arrow_schema = schema_to_arrow(physical)
    arrow_schema = pa.schema([*arrow_schema, pa.field(META_COMMIT_TIME, pa.string(), False)])
    base = table.timeline.last_completed()
    inst = table.timeline.requested("commit", plan={"operation": operation})
    instant = inst.timestamp
    added: list[DataFile] = []
    for task, batch in enumerate(batches):
        cols = [batch.column(f.name).cast(arrow_schema.field(i).type)
                for i, f in enumerate(schema.fields)]
        cols.append(pa.array([instant] * batch.num_rows, pa.string()))
        data = pa.Table.from_arrays(cols, schema=arrow_schema)
        name = f"{uuid.uuid4().hex[:20]}_{task}_{instant}.parquet"
        dest = table.root / name
        pq.write_table(data, dest, compression="snappy")
        added.append(DataFile(path=name, version=schema.version_id, instant=instant,
                              rows=data.num_rows, bytes=dest.stat().st_size))
    table.timeline.inflight(inst, {"added": [f.path for f in added]})
    with table.locked():
        record = table.timeline.complete(inst, {
            "operation": operation,
            "schema_version": schema.version_id,
            "base_instant": base.instant if base else None,
            "added": [f.to_dict() for f in added],
            "removed": [],
            "rows_written": sum(f.rows for f in added),
        })
    table.invalidate()
    return record.instant


def small_batches(n_files: int, total_rows: int, make: Callable[[int, int], pa.Table]
                  ) -> list[pa.Table]:
    """``n_files`` Arrow tables splitting ``total_rows`` ids in contiguous ranges."""
    per = max(1, total_rows // n_files)
    return [make(i * per, per) for i in range(n_files)]


# ------------------------------------------------------------------------------ scan metrics
def scan_metrics(df: DataFrame) -> dict[str, int]:
    """Summed metrics of every file scan in ``df``'s executed plan (call after an action).

    Uses Spark's SQL metrics of ``FileSourceScanExec``: rows output by the scans (rows of the
    row groups not skipped), files read, and the size of those files.
    """
    plan = df._jdf.queryExecution().executedPlan()
    scans: list[dict[str, int]] = []

    def walk(node: Any) -> None:
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
            return
        if name.endswith("QueryStageExec"):
            walk(node.plan())
            return
        if name == "ReusedExchangeExec":
            walk(node.child())
            return
        if name == "FileSourceScanExec":
            values = {}
            it = node.metrics().iterator()
            while it.hasNext():
                kv = it.next()
                values[kv._1()] = int(kv._2().value())
            scans.append(values)
        children = node.children()
        for i in range(children.size()):
            walk(children.apply(i))

    walk(plan)
    return {
        "scans": len(scans),
        "scan_output_rows": sum(s.get("numOutputRows", 0) for s in scans),
        "files_read": sum(s.get("numFiles", 0) for s in scans),
        "file_bytes": sum(s.get("filesSize", 0) for s in scans),
    }


def stage_input(spark: SparkSession, group: str, timeout: float = 30.0) -> dict[str, int] | None:
    """Bytes and records read by the tasks of the jobs in ``group`` (Spark's REST API).

    The task metrics count what the Parquet reader actually read, so skipped row groups show
    as fewer bytes. ``None`` when the UI (and so the REST API) is off.
    """
    sc = spark.sparkContext
    url = sc.uiWebUrl
    if not url:
        return None
    tracker = sc.statusTracker()
    stage_ids: list[int] = []
    for job_id in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job_id)
        if info is not None:
            stage_ids.extend(info.stageIds)
    app = sc.applicationId
    total = {"input_bytes": 0, "input_records": 0}
    deadline = time.monotonic() + timeout
    for sid in stage_ids:
        while True:
            try:
                with urllib.request.urlopen(
                        f"{url}/api/v1/applications/{app}/stages/{sid}", timeout=20) as resp:
                    attempts = json.load(resp)
            except OSError:
                return None
            done = [a for a in attempts if a.get("status") in ("COMPLETE", "SKIPPED")]
            if done or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for a in done[:1]:
            total["input_bytes"] += int(a.get("inputBytes", 0))
            total["input_records"] += int(a.get("inputRecords", 0))
    return total


def collect_with_metrics(spark: SparkSession, df: DataFrame) -> tuple[list[Any], dict[str, Any]]:
    """Run ``df`` once (untimed) and return its rows with scan and task input metrics."""
    sc = spark.sparkContext
    group = f"bench-{uuid.uuid4().hex[:12]}"
    sc.setJobGroup(group, "evonb benchmark metrics")
    try:
        rows = df.collect()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    metrics: dict[str, Any] = scan_metrics(df)
    io = stage_input(spark, group)
    if io is not None:
        metrics.update(io)
    return rows, metrics


def dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*.parquet"))


# ----------------------------------------------------------------------------------- profiling
def _rest(spark: SparkSession, path: str) -> Any:
    sc = spark.sparkContext
    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/{path}"
    with urllib.request.urlopen(url, timeout=20) as resp:
        return json.load(resp)


def _short_site(name: str) -> str:
    """``collect at /any/where/evonb/table/writes.py:189`` -> ``collect at evonb/table/...``."""
    for marker in ("/evonb/", "/bench/", "/pyspark/"):
        head, sep, tail = name.rpartition(marker)
        if sep:
            verb = head.split(" at ")[0]
            return f"{verb} at {marker.strip('/')}/{tail}"
    return name


def profile_call(spark: SparkSession, fn: Callable[[], Any]) -> dict[str, Any]:
    """Run ``fn`` once and say where its time went: each Spark job it ran (its Python call
    site, duration, input and shuffle bytes) and the wall time outside any job (driver-side
    Python and JVM work: planning, listing, commits)."""
    sc = spark.sparkContext
    group = f"bench-profile-{uuid.uuid4().hex[:12]}"
    sc.setJobGroup(group, "evonb benchmark profile")
    start = time.perf_counter()
    try:
        fn()
    finally:
        wall = time.perf_counter() - start
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    jobs = []
    if sc.uiWebUrl:
        tracker = sc.statusTracker()
        for job_id in sorted(tracker.getJobIdsForGroup(group)):
            data = None
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    data = _rest(spark, f"jobs/{job_id}")
                except OSError:
                    data = None
                    break
                if data.get("status") != "RUNNING" and data.get("completionTime"):
                    break
                time.sleep(0.1)
            if not data:
                continue
            stages = []
            for sid in data.get("stageIds", ()):
                with contextlib.suppress(OSError):
                    stages.extend(a for a in _rest(spark, f"stages/{sid}")[:1])
            jobs.append({
                "job": job_id,
                "site": _short_site(str(data.get("name", ""))),
                "seconds": _duration(data.get("submissionTime"), data.get("completionTime")),
                "tasks": data.get("numTasks", 0),
                "input_bytes": sum(int(s.get("inputBytes", 0)) for s in stages),
                "input_records": sum(int(s.get("inputRecords", 0)) for s in stages),
                "shuffle_bytes": sum(int(s.get("shuffleWriteBytes", 0)) for s in stages),
                "output_bytes": sum(int(s.get("outputBytes", 0)) for s in stages),
            })
    in_jobs = sum(j["seconds"] or 0 for j in jobs)
    return {"wall_s": round(wall, 3), "in_spark_jobs_s": round(in_jobs, 3),
            "outside_jobs_s": round(max(0.0, wall - in_jobs), 3), "jobs": jobs}


def _duration(start: str | None, end: str | None) -> float | None:
    from datetime import datetime

    if not start or not end:
        return None
    fmt = "%Y-%m-%dT%H:%M:%S.%f%Z"
    a = datetime.strptime(start.replace("GMT", "UTC"), fmt)
    b = datetime.strptime(end.replace("GMT", "UTC"), fmt)
    return round((b - a).total_seconds(), 3)


def format_profile(label: str, prof: dict[str, Any]) -> list[str]:
    lines = [f"profile {label}: {prof['wall_s']:.2f}s wall, {prof['in_spark_jobs_s']:.2f}s in "
             f"{len(prof['jobs'])} Spark jobs, {prof['outside_jobs_s']:.2f}s outside jobs"]
    for j in prof["jobs"]:
        lines.append(
            f"  job {j['job']}: {j['seconds'] or 0:.2f}s {j['tasks']} tasks, in "
            f"{j['input_bytes']:,}B/{j['input_records']:,} rows, shuffle {j['shuffle_bytes']:,}B,"
            f" out {j['output_bytes']:,}B - {j['site']}")
    return lines
