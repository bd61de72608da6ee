"""Runtime settings of the shared SparkSession for one block of a test, restored after."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

TIMESTAMP_TYPE = "spark.sql.parquet.outputTimestampType"
"""How Spark's writer stores ``timestamp`` values; ``INT96`` makes a file as Spark writes
by default and as tables written before evonb chose microseconds hold."""


@contextlib.contextmanager
def spark_settings(spark, settings: Mapping[str, str]) -> Iterator[None]:
    """``settings`` set on ``spark`` for the block; each is restored after, or unset if it
    was not set before (so evonb's defaults for unset settings apply again)."""
    before = {key: spark.conf.get(key, None) for key in settings}
    try:
        for key, value in settings.items():
            spark.conf.set(key, value)
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)
