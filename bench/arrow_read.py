"""The Arrow reader vs the Spark reader on the same evolved tables.

``python -m bench.arrow_read [--rows N] [--repeat R]`` builds a copy-on-write and a
merge-on-read table (``rows`` rows over 8 files), evolves them (a rename, an added column with
a default, ``int -> bigint``; on merge-on-read an upsert of 1% of the keys after the DDL, left
as log blocks), and times, per table: ``t.to_arrow()`` (pyarrow, no JVM) and
``t.read().toArrow()`` (Spark) over the whole table, and both with a filter on the key that
keeps about 1% of the rows. Medians of ``repeat`` runs (after one warm-up) and the ratio
Spark / Arrow are printed; nothing is asserted.
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

COLUMNS = ("cast(id as bigint) as id", "cast(0 as bigint) as ts", "cast(id % 1000 as int) as qty",
           "cast((id % 1000) / 10 as double) as amount", "concat('name-', id) as name")
SCHEMA = "id bigint not null, ts bigint, qty int, amount double, name string"


def _timed(fn: Callable[[], Any], repeat: int) -> float:
    fn()  # warm-up
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def run(rows: int = 1_000_000, repeat: int = 3, out: Callable[[str], None] = print
        ) -> dict[str, dict[str, float]]:
    """Time both readers; returns ``{table: {measure: median seconds}}``."""
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    import evonb

    spark = evonb.session()
    base = Path(tempfile.mkdtemp(prefix="evonb-arrowread-"))
    results: dict[str, dict[str, float]] = {}
    cut = rows - rows // 100
    try:
        data = spark.range(0, rows, 1, 8).selectExpr(*COLUMNS)
        for kind in ("cow", "mor"):
            t = evonb.create_table(base / kind, SCHEMA, primary_key="id", precombine="ts",
                                   table_type=kind)
            t.write(data)
            t.alter(f"ALTER TABLE {t.name} RENAME COLUMN name TO label; "
                    f"ALTER TABLE {t.name} ADD COLUMNS (color string DEFAULT 'red'); "
                    f"ALTER TABLE {t.name} ALTER COLUMN qty TYPE bigint")
            if kind == "mor":
                keys = spark.range(0, rows, 1, 2).sample(fraction=0.01, seed=1)
                t.write(keys.selectExpr("cast(id as bigint) as id", "cast(1 as bigint) as ts",
                                        "cast(7 as bigint) as qty", "2.5d as amount",
                                        "'upd' as label", "'blue' as color"), mode="upsert")
            arrow_full = _timed(lambda t=t: t.to_arrow(), repeat)
            spark_full = _timed(lambda t=t: t.read().toArrow(), repeat)
            arrow_cut = _timed(lambda t=t: t.to_arrow(filter=pc.field("id") >= cut), repeat)
            spark_cut = _timed(lambda t=t: t.read().filter(F.col("id") >= cut).toArrow(),
                               repeat)
            results[kind] = {"arrow": arrow_full, "spark": spark_full,
                             "arrow_filtered": arrow_cut, "spark_filtered": spark_cut}
        out(f"rows={rows:,} repeat={repeat} cores={spark.sparkContext.defaultParallelism}")
        out(f"{'table':<6} {'read':<9} {'to_arrow s':>10} {'Spark s':>8} {'Spark/Arrow':>11}")
        for kind, r in results.items():
            for label, a, s in (("full", r["arrow"], r["spark"]),
                                ("filtered", r["arrow_filtered"], r["spark_filtered"])):
                out(f"{kind:<6} {label:<9} {a:>10.3f} {s:>8.3f} {s / a:>11.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.arrow_read",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    run(rows=args.rows, repeat=args.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
