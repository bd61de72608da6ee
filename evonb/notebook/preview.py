"""Small data previews: the first rows of a Spark DataFrame as pandas, with HTML and text forms."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

import evonb.notebook.html as H

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from pyspark.sql import DataFrame


TOP_K_MAX = 100_000
"""The largest sorted preview Spark takes as a top-k selection. Its top-k keeps an array of
twice the limit per task, so ``--limit 2147483647`` on a sorted read ran the JVM out of memory
(and took the session down); above this, Spark sorts the rows and stops at the limit."""
_TOP_K_CONF = "spark.sql.execution.topKSortFallbackThreshold"


@contextlib.contextmanager
def _top_k_within(spark: Any, threshold: int | None) -> Iterator[None]:
    """Within the block, Spark plans a sort plus limit instead of a top-k selection for limits
    above ``threshold`` (None: Spark's setting as it is)."""
    if threshold is None:
        yield
        return
    before = spark.conf.get(_TOP_K_CONF, None)
    spark.conf.set(_TOP_K_CONF, str(threshold))
    try:
        yield
    finally:
        if before is None:
            spark.conf.unset(_TOP_K_CONF)
        else:
            spark.conf.set(_TOP_K_CONF, before)


@dataclass
class Preview:
    """The first ``limit`` rows of ``df`` (a Spark DataFrame, kept for further work)."""

    df: DataFrame
    pandas: pd.DataFrame
    caption: str
    more: bool = False
    integral: tuple[str, ...] = ()

    @classmethod
    def of(cls, df: DataFrame, limit: int, caption: str,
           order_by: tuple[str, ...] = ()) -> Preview:
        """Collect at most ``limit`` rows (sorted by ``order_by`` columns that exist)."""
        keys = [k for k in order_by if k in df.columns]
        shown = df.orderBy(*keys) if keys else df
        n = min(limit + 1, 2**31 - 1)  # Spark's limit is an int
        with _top_k_within(df.sparkSession, TOP_K_MAX if n > TOP_K_MAX else None):
            frame = shown.limit(n).toPandas()
        more = len(frame) > limit
        integral = tuple(f.name for f in df.schema.fields
                         if f.dataType.typeName() in ("byte", "short", "integer", "long"))
        return cls(df, frame.head(limit), caption, more, integral)

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The shown rows as dicts."""
        return self.pandas.to_dict(orient="records")

    def shown(self) -> pd.DataFrame:
        """The rows as display text: nulls as ``NULL``, integers without a fraction."""
        out = self.pandas.astype(object).copy()
        for name in out.columns:
            whole = name in self.integral
            out[name] = [_cell(v, whole) for v in out[name]]
        return out

    def _repr_html_(self) -> str:
        return H.frame_html(self.shown(), self.caption, more=self.more)

    def __repr__(self) -> str:
        text = self.shown().to_string(index=False) if len(self.pandas.columns) \
            else "(no columns)"
        tail = "\n(more rows not shown)" if self.more else ""
        return f"{self.caption}\n{text}{tail}"


def _cell(value: Any, whole: bool) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)) \
            or type(value).__name__ in ("NAType", "NaTType"):
        return "NULL"
    if whole and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def error_html(message: str) -> str:
    """An error shown inside a widget (the widget stays usable)."""
    return (f'<pre style="{H.FONT} color: #b02a37; white-space: pre-wrap; margin: 2px 0;">'
            f"{escape(message)}</pre>")
