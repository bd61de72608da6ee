"""A time-range filter on a ``timestamp`` column: files evonb writes (INT64 microseconds, with
Parquet statistics) against the same rows written as INT96 (Spark's own default, which has
no statistics any reader uses). Both readers; report only.

The table holds ``size.rows`` rows whose ``at`` rises with ``id`` (as an event log's would),
in row groups of :data:`ROWS_PER_GROUP` rows; the filter keeps the last 1%. Each side reads
the same rows from a table of its own, laid out alike.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from bench.harness import Case, Result, Side
from bench.util import full_aggregate, spark_conf

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from bench.suite import Context

ROWS_PER_GROUP = 100_000
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SCHEMA = "id bigint not null, at timestamp, amount double, label string"
INT96 = {"spark__sql__parquet__outputTimestampType": "INT96"}
"""The session setting (in :func:`~bench.util.spark_conf`'s spelling) of the baseline's files."""


def _rows(ctx: Context) -> DataFrame:
    return ctx.spark.range(0, ctx.size.rows, 1, max(1, ctx.size.slice_partitions)).selectExpr(
        "id", f"timestamp_seconds({int(START.timestamp())} + id) as at",
        "cast(id % 1000 as double) / 10 as amount", "concat('n', id % 5000) as label")


def _empty(ctx: Context, name: str) -> Any:
    import evonb

    return evonb.create_table(ctx.path(name), SCHEMA, primary_key="id", properties={
        "evonb.write.parquet.block.row.count.limit": str(ROWS_PER_GROUP)})


def _table(ctx: Context, name: str, **timestamp_setting: str) -> Any:
    t = _empty(ctx, name)
    with spark_conf(ctx.spark, **timestamp_setting):
        t.write(_rows(ctx), mode="insert")
    return t


def time_range(ctx: Context) -> Iterator[Case | Result]:
    """The last 1% of a time range, read by both readers from evonb's files and from INT96
    files of the same rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    micros = _table(ctx, "time_range_micros")
    int96 = _table(ctx, "time_range_int96", **INT96)
    since = START + dt.timedelta(seconds=ctx.size.rows - ctx.size.rows // 100)
    arrow_filter = pc.field("at") >= pa.scalar(since, pa.timestamp("us", "UTC"))
    spark_filter = F.col("at") >= F.lit(since)
    expected = ctx.size.rows // 100

    def arrow_read(t: Any) -> int:
        rows = t.to_arrow(filter=arrow_filter).num_rows
        assert rows == expected, (rows, expected)
        return rows

    def spark_read(t: Any) -> int:
        (row,) = t.read().filter(spark_filter).agg(F.count(F.lit(1)), F.sum("amount")).collect()
        assert row[0] == expected, (row[0], expected)
        return row[0]

    layout = (f"{ctx.size.rows:,} rows, `at` rising with the key, row groups of "
              f"{ROWS_PER_GROUP:,} rows; the filter keeps the last {expected:,}")
    for name, read, label in (
            ("to_arrow", arrow_read, "t.to_arrow(filter=at >= t0)"),
            ("spark", spark_read, "t.read().filter(at >= t0) count and sum")):
        yield Case(
            name=f"time_range.{name}",
            evonb=Side(f"{label}: INT64 microseconds (evonb's writes)",
                       lambda read=read: read(micros)),
            baseline=Side("the same read of the same rows written as INT96 (Spark's default)",
                          lambda read=read: read(int96)),
            notes=[layout,
                   "report only: row groups skipped by their statistics (INT96 has none)"],
        )
    yield Case(
        name="time_range.full_scan",
        evonb=Side("t.read() full-scan aggregate: INT64 microseconds",
                   lambda: full_aggregate(micros.read())),
        baseline=Side("the same read of the INT96 table", lambda: full_aggregate(int96.read())),
        notes=[layout.split(";")[0], "report only: what the encoding costs a read of every row"],
    )
    fresh: dict[str, Any] = {}

    def write(side: str, **setting: str) -> None:
        with spark_conf(ctx.spark, **setting):
            fresh[side].write(_rows(ctx), mode="insert")

    yield Case(
        name="time_range.write",
        evonb=Side("t.write() of the rows into an empty table: INT64 microseconds",
                   lambda: write("micros"),
                   prepare=lambda: fresh.update(micros=_empty(ctx, "time_range_w64"))),
        baseline=Side("the same write with the session set to INT96",
                      lambda: write("int96", **INT96),
                      prepare=lambda: fresh.update(int96=_empty(ctx, "time_range_w96"))),
        notes=[f"{ctx.size.rows:,} rows; report only: what the encoding costs a write"],
    )
