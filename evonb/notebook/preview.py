"""Small data previews: the first rows of a Spark DataFrame or of an Arrow read as pandas, with
HTML and text forms.

Both engines' rows go through one conversion (:func:`_pandas`: Arrow to pandas, maps as dicts,
zoned timestamps as wall-clock times in Spark's session time zone, as Spark's ``toPandas``
shows them), so a preview of the same rows looks the same whichever engine read them. The zone
(:func:`time_zone`) is the running session's ``spark.sql.session.timeZone`` or, with no
session, the one it would start with (``Evo.spark_conf``; evonb's default is UTC): an Arrow
preview starts no Spark to find it."""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

import evonb.notebook.html as H
from evonb.arrow.python_values import beyond_python_as_text
from evonb.spark import session as managed
from evonb.spark.arrow_collect import to_arrow

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    import pyarrow as pa
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
    with managed.temporary_settings(spark, {_TOP_K_CONF: str(threshold)}):
        yield


@dataclass
class Preview:
    """The first ``limit`` rows of ``df``: a Spark DataFrame, or the rows an Arrow read gave (a
    ``pyarrow.Table``, or None when they were streamed), kept for further work."""

    df: DataFrame | pa.Table | None
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
            rows = to_arrow(shown.limit(n))
        return cls._from_arrow(df, rows, limit, caption)

    @classmethod
    def of_arrow(cls, data: pa.Table | Iterable[pa.RecordBatch], limit: int, caption: str,
                 order_by: tuple[str, ...] = (), *, schema: pa.Schema | None = None
                 ) -> Preview:
        """The same preview as :meth:`of` from rows read with Arrow: a ``pyarrow.Table`` or
        record batches (``schema`` then names their columns; batches are consumed only as
        far as needed: up to ``limit + 1`` rows without ``order_by``, else a running top-k).
        Sorted like Spark's ``orderBy``: ascending, nulls first."""
        import pyarrow as pa

        if isinstance(data, pa.Table):
            kept: pa.Table | None = data
            schema = data.schema
            batches: Iterable[pa.RecordBatch] = data.to_batches()
        else:
            if schema is None:
                raise TypeError("of_arrow needs the schema of the record batches")
            kept, batches = None, data
        keys = [k for k in order_by if k in schema.names]
        n = limit + 1
        rows = _first_rows(batches, schema, n, keys)
        return cls._from_arrow(kept, rows, limit, caption)

    @classmethod
    def _from_arrow(cls, df: DataFrame | pa.Table | None, rows: pa.Table, limit: int,
                    caption: str) -> Preview:
        import pyarrow as pa

        frame = _pandas(rows)
        integral = tuple(f.name for f in rows.schema if pa.types.is_integer(f.type))
        return cls(df, frame.head(limit), caption, len(frame) > limit, integral)

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


def _first_rows(batches: Iterable[pa.RecordBatch], schema: pa.Schema, n: int,
                keys: list[str]) -> pa.Table:
    """The first ``n`` rows of ``batches`` (by ``keys``, ascending, nulls first, when given),
    reading no further than needed and holding at most a few times ``n`` rows."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def top(parts: list[pa.RecordBatch | pa.Table]) -> pa.Table:
        table = pa.concat_tables([p if isinstance(p, pa.Table) else
                                  pa.Table.from_batches([p], schema=schema) for p in parts]) \
            if parts else schema.empty_table()
        if keys:
            try:  # pyarrow 25 and later: null placement per key
                order = pc.sort_indices(table, sort_keys=[(k, "ascending", "at_start")
                                                          for k in keys])
            except (TypeError, ValueError, pa.ArrowException):
                order = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in keys],
                                        null_placement="at_start")
            table = table.take(order)
        return table.slice(0, n)

    held: list[pa.RecordBatch | pa.Table] = []
    count = 0
    for batch in batches:
        held.append(batch)
        count += batch.num_rows
        if not keys and count >= n:
            break
        if keys and count > max(2 * n, 65536):
            held = [top(held)]
            count = held[0].num_rows
    return top(held)


TIME_ZONE_CONF = "spark.sql.session.timeZone"
_OFFSET = re.compile(r"(?:GMT|UTC|UT)?([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?")


def time_zone() -> str:
    """The zone previews show zoned timestamps in: Spark's session time zone (see the
    module doc), as a name pyarrow knows (Spark's ``GMT+5:30`` style offsets as ``+05:30``,
    ``Z`` as ``UTC``)."""
    zone = (managed.setting(TIME_ZONE_CONF) or "UTC").strip()
    if zone.upper() in ("Z", "GMT", "UT", "UTC"):
        return "UTC"
    match = _OFFSET.fullmatch(zone)
    if match:
        sign, hours, minutes = match.group(1), int(match.group(2)), match.group(3) or "00"
        return f"{sign}{hours:02d}:{minutes}"
    return zone


def _in_zone(t: pa.DataType, zone: str) -> pa.DataType:
    """``t`` with every zoned timestamp in it (nested ones too) in ``zone``."""
    import pyarrow as pa

    if pa.types.is_timestamp(t):
        return pa.timestamp(t.unit, tz=zone) if t.tz is not None else t
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_in_zone(f.type, zone)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_in_zone(t.key_type, zone)),
                       t.item_field.with_type(_in_zone(t.item_type, zone)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_in_zone(t.value_type, zone)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_in_zone(t.value_type, zone)))
    return t


def _pandas(rows: pa.Table, zone: str | None = None) -> pd.DataFrame:
    """``rows`` as pandas the way Spark's ``toPandas`` shows them: maps as dicts, timestamps
    with a zone as the wall-clock time in ``zone`` (default :func:`time_zone`; nested ones as
    zoned values in it), whichever zone the rows carry (Spark's rows carry the session's,
    the Arrow reader's UTC)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    zone = zone or time_zone()
    columns = []
    for column in rows.columns:
        zoned = _in_zone(column.type, zone)
        if zoned != column.type:
            column = column.cast(zoned)
        if pa.types.is_timestamp(column.type) and column.type.tz is not None:
            column = pc.local_timestamp(column)
        columns.append(_beyond_pandas_as_text(column))
    table = pa.Table.from_arrays(columns, names=rows.column_names)
    return table.to_pandas(maps_as_pydicts="strict", coerce_temporal_nanoseconds=True)


_PANDAS_DAYS = (-106_751, 106_750)
"""The days (since 1970-01-01) whose every instant pandas' nanosecond timestamps hold."""


def _beyond_pandas_as_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column with a date or timestamp past what pandas holds (a date past year 9999, a
    timestamp past 2262 at the top level, past 9999 inside a struct, list or map; Spark's
    reach further) as the text Spark prints for each value of that field; other columns and
    fields as they are."""
    return beyond_python_as_text(column, top_timestamp_days=_PANDAS_DAYS)


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
