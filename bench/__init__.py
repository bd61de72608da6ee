"""evonb's benchmark suite: ``python -m bench [names...] [--size quick|full] [--repeat N]``.

Every benchmark times the evonb side and a baseline alternately in the same process and
SparkSession, after warm-up runs, and reports both medians, their ratio and the bar the ratio
must meet. Results are printed and written as JSON (``bench/results/latest.json`` by default).
See ``docs/benchmarks.md``.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.clustering import cluster
from bench.cpu import local_spark_cpu_clock
from bench.harness import (
    HEADER,
    Case,
    Result,
    Side,
    environment,
    evaluate,
    format_result,
    write_json,
)
from bench.iceberg_export import iceberg_export
from bench.object_storage import object_storage
from bench.peers import peers
from bench.suite import BENCHMARKS as SUITE
from bench.suite import Context
from bench.time_range import time_range
from bench.util import SIZES

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

BENCHMARKS = {**SUITE, "time_range": time_range, "peers": peers,
              "object_storage": object_storage, "cluster": cluster,
              "iceberg_export": iceberg_export}
"""Every benchmark by name: the suite's, then the peers side by side."""

DEFAULT_JSON = Path(__file__).resolve().parent / "results" / "latest.json"


def run_suite(
    names: Sequence[str] | None = None,
    *,
    size: str = "quick",
    repeat: int = 5,
    warmup: int = 1,
    json_path: str | Path | None = DEFAULT_JSON,
    spark: SparkSession | None = None,
    workdir: str | Path | None = None,
    keep: bool = False,
    profile: bool = False,
    out: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the named benchmarks (all by default); return (and write) the results document.

    ``profile`` runs each side once more after timing and records where its time went (the
    Spark jobs it ran, and the time outside them).
    """
    import evonb
    from bench.util import profile_call

    selected = list(names) if names else list(BENCHMARKS)
    unknown = [n for n in selected if n not in BENCHMARKS]
    if unknown:
        raise ValueError(f"unknown benchmark(s) {unknown}; known: {list(BENCHMARKS)}")
    if size not in SIZES:
        raise ValueError(f"unknown size {size!r}; known: {list(SIZES)}")
    started = time.perf_counter()
    spark = spark or evonb.session()
    env = environment(spark)
    clock = local_spark_cpu_clock(spark)
    env["cpu_clock"] = "this process + the Spark JVM" if clock else "none"
    out(f"evonb benchmarks: size={size} repeat={repeat} warmup={warmup} "
        f"cores={env['cores']} load={env['load_average']} spark={env['pyspark']} "
        f"pyiceberg={env['pyiceberg'] or '-'} ({env['date']})")
    out(HEADER)
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="evonb-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    profiler = None
    if profile:
        def profiler(side: Side) -> dict[str, Any]:
            if side.prepare is not None:
                side.prepare()
            return profile_call(spark, side.run)
    results: list[Result] = []
    timings: dict[str, float] = {}
    try:
        for name in selected:
            t0 = time.perf_counter()
            folder = base / name
            ctx = Context(spark=spark, workdir=folder, size=SIZES[size], log=out, repeat=repeat,
                          warmup=warmup)
            folder.mkdir(parents=True, exist_ok=True)
            try:
                for item in BENCHMARKS[name](ctx):
                    r = (evaluate(name, item, repeat=repeat, warmup=warmup, profiler=profiler,
                                  clock=clock)
                         if isinstance(item, Case) else item)
                    results.append(r)
                    out(format_result(r))
            except Exception as exc:  # one failure must not stop the suite
                r = Result(benchmark=name, name=name, status="ERROR",
                           notes=[f"{type(exc).__name__}: {exc}",
                                  *traceback.format_exc().splitlines()[-6:]])
                results.append(r)
                out(format_result(r))
            finally:
                if not keep:
                    shutil.rmtree(folder, ignore_errors=True)
            timings[name] = round(time.perf_counter() - t0, 2)
    finally:
        if not keep and not workdir:
            shutil.rmtree(base, ignore_errors=True)
    total = time.perf_counter() - started
    counts = {s: sum(r.status == s for r in results)
              for s in ("PASS", "MISS", "INFO", "SKIP", "ERROR")}
    out(f"done in {total:.0f}s on {env['cores']} cores: "
        + ", ".join(f"{v} {k}" for k, v in counts.items() if v))
    payload = {
        "suite": "evonb",
        "size": size,
        "repeat": repeat,
        "warmup": warmup,
        "environment": env,
        "benchmarks": selected,
        "seconds": round(total, 1),
        "seconds_by_benchmark": timings,
        "summary": counts,
        "profiled": profile,
        "results": [r.to_dict() for r in results],
    }
    if json_path:
        write_json(Path(json_path), payload)
        out(f"results written to {json_path}")
    return payload


__all__ = ["BENCHMARKS", "DEFAULT_JSON", "SIZES", "run_suite"]
