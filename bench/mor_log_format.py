"""Merge-on-read log formats: Avro (the default) vs Parquet log blocks.

``python -m bench.mor_log_format [--rows N] [--fraction F] [--repeat R]`` builds one
merge-on-read table per format (``evonb.mor.log_format``), upserts ``fraction`` of the keys
spread over every file group, and times, per format: the upsert that writes the log blocks, a
snapshot read that merges them (a full-scan aggregate), and a compaction (on a copy of the
table state, rolled back after each run). A copy-on-write read of the same rows is the
reference. Medians of ``repeat`` runs are printed; nothing is asserted.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

COLUMNS = ("cast(id as bigint) as id", "cast(0 as bigint) as ts",
           "cast((id % 1000) / 10 as double) as amount", "concat('name-', id) as name",
           "concat('c', id % 50) as cat")


def _timed(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _aggregate(df: Any) -> Any:
    from pyspark.sql import functions as F

    return df.agg(F.count(F.lit(1)), F.sum("amount"), F.max("name"), F.max("cat")).collect()


def run(rows: int = 300_000, fraction: float = 0.01, repeat: int = 3, files: int = 20,
        out: Callable[[str], None] = print) -> dict[str, dict[str, float]]:
    """Time both log formats; returns ``{format: {measure: median seconds}}``."""
    import evonb

    spark = evonb.session()
    base = Path(tempfile.mkdtemp(prefix="evonb-logfmt-"))
    results: dict[str, dict[str, float]] = {}
    try:
        data = spark.range(0, rows, 1, files).selectExpr(*COLUMNS)

        def updates(seed: int) -> Any:
            keys = spark.range(0, rows, 1, 2).sample(fraction=fraction, seed=seed)
            return keys.selectExpr("cast(id as bigint) as id", f"cast({seed} as bigint) as ts",
                                   "cast((id % 1000) / 10 + 2 as double) as amount",
                                   "concat('name-', id) as name", "concat('c', id % 50) as cat")

        cow = evonb.create_table(base / "cow", "id bigint not null, ts bigint, amount double, "
                                 "name string, cat string", primary_key="id", precombine="ts")
        cow.write(data)
        cow.write(updates(1), mode="upsert")
        results["cow"] = {"read": _timed(lambda: _aggregate(cow.read()), repeat)}
        for fmt in ("avro", "parquet"):
            t = evonb.create_table(base / fmt, "id bigint not null, ts bigint, amount double, "
                                   "name string, cat string", primary_key="id",
                                   precombine="ts", table_type="mor",
                                   properties={"evonb.mor.log_format": fmt})
            t.write(data)
            seeds = iter(range(2, 2 + 10 * repeat))
            upsert = _timed(lambda t=t, s=seeds: t.write(updates(next(s)), mode="upsert"), repeat)
            read = _timed(lambda t=t: _aggregate(t.read()), repeat)
            log_bytes = sum(f.bytes for f in t.snapshot().logs)
            log_rows = sum(f.rows for f in t.snapshot().logs)

            def compact(t: Any = t) -> None:
                t.compact()
                t.rollback()

            results[fmt] = {"upsert": upsert, "read": read, "compact": _timed(compact, repeat),
                            "log_bytes": float(log_bytes), "log_rows": float(log_rows)}
        out(f"rows={rows:,} fraction={fraction} repeat={repeat} "
            f"cores={spark.sparkContext.defaultParallelism}")
        out(f"{'format':<8} {'upsert s':>9} {'read s':>8} {'compact s':>10} {'log rows':>9} "
            f"{'log KiB':>8}")
        for fmt in ("avro", "parquet"):
            r = results[fmt]
            out(f"{fmt:<8} {r['upsert']:>9.2f} {r['read']:>8.2f} {r['compact']:>10.2f} "
                f"{int(r['log_rows']):>9,} {r['log_bytes'] / 1024:>8.0f}")
        out(f"{'cow read':<8} {'':>9} {results['cow']['read']:>8.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.mor_log_format",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--fraction", type=float, default=0.01)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    run(rows=args.rows, fraction=args.fraction, repeat=args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
