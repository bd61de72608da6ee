"""The ``cluster`` benchmark group: a table after many small writes, read before and after
``t.cluster(by="ts")``, and the clustering itself against a plain Spark sorted rewrite.

The table gets ``WRITES[size]`` inserts of one small file each (1,000 at full size), whose
``ts`` values are spread at random, so every file's ``ts`` range covers most of the table's.
Reads of a copy clustered by ``ts`` (untimed, once) are timed against reads of the original:
a full-scan aggregate, and a count with a filter on ``ts`` that keeps about 0.1% of the rows.
Bars: the clustered read at least 3x faster (ratio clustered / original <= 0.33). Then
``t.cluster(by="ts")`` of a fresh copy of the original is timed against Spark reading the same
small files and writing the rows range-partitioned and sorted by ``ts`` into as many files
(bar <= 1.3x). Last, report-only: a filter on ``qty`` (0.1% of the rows), the second of two
sort columns, on a copy z-ordered by ``(ts, qty)`` against a copy sorted linearly by them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from bench.harness import Case, Result, Side
from bench.util import commit_arrow_files, full_aggregate

if TYPE_CHECKING:  # pragma: no cover
    from bench.suite import Context
    from evonb.api import Table

WRITES = {"tiny": 50, "quick": 200, "full": 1_000}
"""Small writes (one file each) before clustering, by size."""
SCHEMA = "id bigint not null, ts bigint, qty int, amount double, name string"
TS_RANGE = 1_000_000_000
SELECTIVITY = 0.001


def _batch(start: int, n: int) -> Any:
    """Rows ``start .. start+n``: ``ts`` spread over the whole range (a hash of the id)."""
    import numpy as np
    import pyarrow as pa

    ids = np.arange(start, start + n, dtype=np.int64)
    ts = (ids * 2_654_435_761) % TS_RANGE
    return pa.table({"id": ids, "ts": ts, "qty": (ids % 1000).astype(np.int32),
                     "amount": (ids % 1000) / 10.0,
                     "name": pa.array([f"name-{i}" for i in ids.tolist()])})


def _small_table(ctx: Context, writes: int) -> Table:
    import evonb

    t = evonb.create_table(ctx.path("cluster_small"), SCHEMA, primary_key="id")
    per = max(1, ctx.size.rows // writes)
    for w in range(writes):
        commit_arrow_files(t, [_batch(w * per, per)])
    return t


def cluster(ctx: Context) -> Iterator[Case | Result]:
    """Reads after t.cluster() vs before, and clustering vs a plain sorted Spark rewrite."""
    from pyspark.sql import functions as F

    import evonb

    spark, size = ctx.spark, ctx.size
    writes = WRITES.get(size.name, 1_000)
    small = _small_table(ctx, writes)
    clustered_root = ctx.path("cluster_done")
    shutil.copytree(small.root, clustered_root)
    clustered = evonb.open_table(clustered_root)
    commit = clustered.cluster(by="ts")
    n_out = len(clustered.snapshot().files)
    lo = TS_RANGE // 2
    hi = lo + int(TS_RANGE * SELECTIVITY)
    note = (f"{size.rows:,} rows in {writes:,} small writes (one file each); clustered "
            f"(untimed) into {n_out} file(s) by ts, in "
            f"{'a replacecommit' if commit is not None else 'no commit'}")

    def scan(t: Table) -> Any:
        return full_aggregate(t.read())

    def selective(t: Table) -> Any:
        return t.read().filter((F.col("ts") >= lo) & (F.col("ts") < hi)).count()

    before, after = small.read(), clustered.read()
    if before.exceptAll(after).count() or after.exceptAll(before).count():
        raise AssertionError("clustering changed the rows")
    yield Case(
        name="cluster.full_scan",
        evonb=Side(f"t.read() full-scan aggregate after t.cluster() ({n_out} files)",
                   lambda: scan(clustered)),
        baseline=Side(f"the same read before ({writes:,} small files)", lambda: scan(small)),
        bar=0.333, notes=[note],
    )
    yield Case(
        name="cluster.filter",
        evonb=Side(f"count with ts in a {SELECTIVITY:.1%} range after t.cluster(by='ts')",
                   lambda: selective(clustered)),
        baseline=Side("the same filter before", lambda: selective(small)),
        bar=0.333, notes=[note],
    )

    plain_files = [str(small.root / f.path) for f in small.snapshot().files]
    out = str(ctx.path("cluster_plain_out"))
    copy = ctx.path("cluster_copy")
    current: list[Table] = []

    def fresh_copy() -> None:
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(small.root, copy)
        current[:] = [evonb.open_table(copy)]

    def plain_sorted_rewrite() -> None:
        (spark.read.parquet(*plain_files).repartitionByRange(n_out, F.col("ts"))
         .sortWithinPartitions("ts").write.mode("overwrite").parquet(out))

    def clustered_note(result: Result) -> None:
        meta = current[0].timeline.last_completed().metadata
        result.notes.append(f"last clustering: {len(meta.get('removed', ()))} files replaced "
                            f"by {len(meta.get('added', ()))}, "
                            f"{meta.get('rows_written', 0):,} rows written")

    yield from _zorder_case(ctx, small, note)

    yield Case(
        name="cluster.rewrite",
        evonb=Side("t.cluster(by='ts') of a fresh copy of the small-file table",
                   lambda: current[0].cluster(by="ts"), prepare=fresh_copy),
        baseline=Side(f"spark.read.parquet of the {writes:,} files + range-partitioned sorted "
                      f"write into {n_out} file(s)", plain_sorted_rewrite),
        bar=1.3, after=clustered_note, notes=[note],
    )


def _zorder_case(ctx: Context, small: Table, note: str) -> Iterator[Case]:
    """A filter on the second sort column: z-ordered by (ts, qty) vs linear by (ts, qty)."""
    from pyspark.sql import functions as F

    import evonb

    copies = {}
    for kind in ("linear", "zorder"):
        root = ctx.path(f"cluster_{kind}")
        shutil.copytree(small.root, root)
        copies[kind] = evonb.open_table(root)
        copies[kind].cluster(by=["ts", "qty"], order=kind)
    qty = 500  # qty is id % 1000: 0.1% of the rows

    def second(t: Table) -> Any:
        return t.read().filter(F.col("qty") == qty).count()

    if second(copies["zorder"]) != second(copies["linear"]) or second(small) != second(
            copies["zorder"]):
        raise AssertionError("z-ordering changed the rows")
    files = {k: len(t.snapshot().files) for k, t in copies.items()}
    yield Case(
        name="cluster.zorder_filter",
        evonb=Side(f"count with qty = {qty} (0.1%) after t.cluster(by=['ts', 'qty'], "
                   f"order='zorder') ({files['zorder']} files)",
                   lambda: second(copies["zorder"])),
        baseline=Side(f"the same filter after t.cluster(by=['ts', 'qty']) (linear, "
                      f"{files['linear']} files)", lambda: second(copies["linear"])),
        notes=[note, "report only: a linear sort helps a filter on its first column only; "
                     "the z-order spreads the pruning over both columns"],
    )


__all__ = ["WRITES", "cluster"]
