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
from bench.util import spark_conf

if TYPE_CHECKING:  # pragma: no cover
    from bench.suite import Context

ROWS_PER_GROUP = 100_000
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
SCHEMA = "id bigint not null, at timestamp, amount double, label string"


def _table(ctx: Context, name: str, **timestamp_setting: str) -> Any:
    import evonb

    spark = ctx.spark
    files = max(1, ctx.size.slice_partitions)
    t = evonb.create_table(ctx.path(name), SCHEMA, primary_key="id", properties={
        "evonb.write.parquet.block.row.count.limit": str(ROWS_PER_GROUP)})
    rows = spark.range(0, ctx.size.rows, 1, files).selectExpr(
        "id", f"timestamp_seconds({int(START.timestamp())} + id) as at",
        "cast(id % 1000 as double) / 10 as amount", "concat('n', id % 5000) as label")
    with spark_conf(spark, **timestamp_setting):
        t.write(rows, mode="insert")
    return t


def time_range(ctx: Context) -> Iterator[Case | Result]:
    """The last 1% of a time range, read by both readers from evonb's files and from INT96
    files of the same rows."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F

    micros = _table(ctx, "time_range_micros")
    int96 = _table(ctx, "time_range_int96", spark__sql__parquet__outputTimestampType="INT96")
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
    yield Case(
        name="time_range.to_arrow",
        evonb=Side("t.to_arrow(filter=at >= t0): INT64 microseconds (evonb's writes)",
                   lambda: arrow_read(micros)),
        baseline=Side("the same read of the same rows written as INT96 (Spark's default)",
                      lambda: arrow_read(int96)),
        notes=[layout, "report only: row groups skipped by their statistics (INT96 has none)"],
    )
    yield Case(
        name="time_range.spark",
        evonb=Side("t.read().filter(at >= t0) count and sum: INT64 microseconds",
                   lambda: spark_read(micros)),
        baseline=Side("the same read of the same rows written as INT96",
                      lambda: spark_read(int96)),
        notes=[layout, "report only: row groups skipped by their statistics (INT96 has none)"],
    )
