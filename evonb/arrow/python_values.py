"""Rows as Python values, with dates and timestamps Python cannot hold shown as Spark's text.

Spark's dates run from year -5877641 to +5881580 and its timestamps to year 294247, while
Python's :class:`datetime.date` and :class:`datetime.datetime` stop at year 9999 (and pandas'
nanosecond timestamps at 2262): pyarrow's ``to_pylist`` and ``to_pandas`` raise on such a
value. :func:`beyond_python_as_text` turns every date or timestamp field (at any depth: struct
members, list elements, map keys and values) holding such a value into text, each value as
Spark prints it (``+164111-01-01``, ``+294247-01-10 04:00:54``), and leaves every other field
as it is; :func:`python_rows` is ``to_pylist`` after it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evonb.schema.dates import MICROS_PER_DAY, PYTHON_DAYS, date_text, micros_text

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

Days = tuple[int, int]
"""The first and last day numbers (since 1970-01-01) a consumer holds."""


def beyond_python_as_text(values: pa.Array | pa.ChunkedArray, *,
                          top_timestamp_days: Days = PYTHON_DAYS
                          ) -> pa.Array | pa.ChunkedArray:
    """``values`` with each date or timestamp field that holds a day Python cannot (at any
    depth) made text, as Spark prints each value; a timestamp with a time zone is printed as
    the wall-clock time in its zone. ``top_timestamp_days``: the days allowed for timestamps
    at the top level only (pandas holds fewer there than in nested values). The same object
    when nothing is beyond."""
    import pyarrow as pa

    if isinstance(values, pa.ChunkedArray):
        whole = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
        out = _rebuild(whole, PYTHON_DAYS, top_timestamp_days)
        return values if out is whole else pa.chunked_array([out], out.type)
    return _rebuild(values, PYTHON_DAYS, top_timestamp_days)


def python_rows(table: pa.Table) -> list[dict[str, Any]]:
    """``table.to_pylist()``, with the dates and timestamps Python cannot hold as Spark's
    text (:func:`beyond_python_as_text`)."""
    return text_beyond_python(table).to_pylist()


def text_beyond_python(table: pa.Table) -> pa.Table:
    """``table`` with :func:`beyond_python_as_text` applied to each column (the same table
    when no column changes)."""
    import pyarrow as pa

    stored = table.columns
    columns = [beyond_python_as_text(c) for c in stored]
    if all(a is b for a, b in zip(columns, stored, strict=True)):
        return table
    return pa.Table.from_arrays(columns, names=table.column_names)


def _rebuild(arr: pa.Array, days: Days, timestamp_days: Days) -> pa.Array:
    import pyarrow as pa

    t = arr.type
    if pa.types.is_date32(t):
        return _as_text(arr, arr.cast(pa.int32()), days, 1, date_text)
    if pa.types.is_timestamp(t) and t.unit == "us":
        import pyarrow.compute as pc

        wall = pc.local_timestamp(arr) if t.tz is not None else arr
        return _as_text(arr, wall.cast(pa.int64()), timestamp_days, MICROS_PER_DAY,
                        micros_text)
    if pa.types.is_struct(t):
        children = arr.flatten()
        rebuilt = [_rebuild(c, days, days) for c in children]
        if all(a is b for a, b in zip(rebuilt, children, strict=True)):
            return arr
        fields = [t.field(i).with_type(c.type) for i, c in enumerate(rebuilt)]
        return pa.StructArray.from_arrays(rebuilt, fields=fields, mask=_nulls(arr))
    if pa.types.is_map(t):
        stored_keys, stored_items = arr.values.field(0), arr.values.field(1)
        keys = _rebuild(stored_keys, days, days)
        items = _rebuild(stored_items, days, days)
        if keys is stored_keys and items is stored_items:
            return arr
        kind = pa.map_(t.key_field.with_type(keys.type), t.item_field.with_type(items.type))
        return pa.MapArray.from_arrays(arr.offsets, keys, items, type=kind, mask=_nulls(arr))
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        stored = arr.values
        inner = _rebuild(stored, days, days)
        if inner is stored:
            return arr
        make = pa.list_ if pa.types.is_list(t) else pa.large_list
        cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        return cls.from_arrays(arr.offsets, inner, type=make(t.value_field.with_type(inner.type)),
                               mask=_nulls(arr))
    return arr


def _nulls(arr: pa.Array) -> pa.Array | None:
    return arr.is_null() if arr.null_count else None


def _as_text(arr: pa.Array, numbers: pa.Array, days: Days, scale: int,
             text: Any) -> pa.Array:
    """``arr`` itself when every value of ``numbers`` (days times ``scale``) is within
    ``days``, else every value as ``text(number)``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    low, high = (v.as_py() for v in pc.min_max(numbers).values())
    if low is None or (low >= days[0] * scale and high < (days[1] + 1) * scale):
        return arr
    return pa.array([None if v is None else text(v) for v in numbers.to_pylist()], pa.string())


__all__ = ["beyond_python_as_text", "python_rows", "text_beyond_python"]
