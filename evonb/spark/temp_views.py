"""Temporary views that live for one statement.

``%evo sql`` and :func:`evonb.spark.sql_writes.execute` show evonb tables to Spark SQL as
temporary views. A view left behind keeps the plan of the snapshot it was made from: once
compaction or clean removes that snapshot's files, a later query that names the view (or a
name evonb did not recognise as the table) fails on missing files or reads old rows. So each
view is dropped when the statement that needed it has been analysed and run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


@contextlib.contextmanager
def statement_views() -> Iterator[Callable[[str, DataFrame], None]]:
    """A function ``register(name, df)`` that makes ``df`` the temporary view ``name``; every
    view it made is dropped on leaving the block (a DataFrame Spark analysed meanwhile keeps
    its plan and can still be read)."""
    made: list[tuple[DataFrame, str]] = []

    def register(name: str, df: DataFrame) -> None:
        df.createOrReplaceTempView(name)
        made.append((df, name))

    try:
        yield register
    finally:
        for df, name in reversed(made):
            df.sparkSession.catalog.dropTempView(name)


__all__ = ["statement_views"]
