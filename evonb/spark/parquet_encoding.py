"""Which columns of a Parquet file evonb writes with pyarrow get dictionary encoding.

pyarrow dictionary-encodes every column until a column chunk's dictionary outgrows its page
limit (1 MiB), so a small file (a log block of a few thousand rows, say) keeps a dictionary
even for a column of distinct values: a key, a name. Spark's vectorized reader then decodes
such a column through the dictionary, value by value, which costs more than reading plain
values (about an eighth more for a whole log-block read of the benchmark's rows). Spark's own
writer (parquet-mr) falls back to plain encoding when a dictionary does not pay; this module
decides the same from the first rows written: a primitive column is dictionary-encoded when
at most half of its sampled values are distinct. Columns of nested types keep dictionaries
on every leaf, but for a list's element of a fixed-width type other than a decimal (integers,
floats, dates, timestamps): Spark's vectorized reader fails on such an element column whose
dictionary is empty (a row group where every element is null) when a read transforms the list
(``ArrayIndexOutOfBoundsException`` in ``PlainValuesDictionary.decodeToInt``, measured on
Spark 4 with the files pyarrow writes; map values, struct members in lists, decimals and text
read fine), and which row group will be all null is not known when the writer opens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa

SAMPLE_ROWS = 10_000
"""The rows of the first batch a column's distinct values are counted in."""
DISTINCT_SHARE = 0.5
"""A primitive column is dictionary-encoded when at most this share of its sampled values
is distinct (nulls are not counted)."""


def dictionary_columns(data: pa.Table | pa.RecordBatch) -> list[str]:
    """The Parquet column paths of ``data``'s schema to write with dictionary encoding (the
    ``use_dictionary`` of :class:`pyarrow.parquet.ParquetWriter`), judged on its first
    :data:`SAMPLE_ROWS` rows; an empty ``data`` keeps every dictionary."""
    import pyarrow.compute as pc
    import pyarrow.types as pt

    rows = min(data.num_rows, SAMPLE_ROWS)
    chosen: list[str] = []
    for i, (field, paths) in enumerate(zip(data.schema, leaf_paths(data.schema), strict=True)):
        if pt.is_nested(field.type):
            plain = set(_paths(field.name, field.type, plain_elements=True))
            chosen.extend(p for p in paths if p not in plain)
            continue
        column = data.column(i).slice(0, rows)
        values = rows - column.null_count
        if (values == 0 or pc.count_distinct(column, mode="only_valid").as_py()
                <= values * DISTINCT_SHARE):
            chosen.append(field.name)
    return chosen


def leaf_paths(schema: pa.Schema) -> tuple[tuple[str, ...], ...]:
    """Per top-level field of ``schema``, the dotted paths of its Parquet leaf columns, as
    pyarrow names them (lists ``<name>.list.element``, maps ``<name>.key_value.key`` and
    ``.value``, struct fields ``<name>.<field>``)."""
    return tuple(tuple(_paths(field.name, field.type)) for field in schema)


def _paths(prefix: str, t: pa.DataType, plain_elements: bool = False) -> list[str]:
    """The leaf paths under ``prefix``; with ``plain_elements``, only those of list elements
    of a fixed-width type other than a decimal (see the module docstring)."""
    import pyarrow.types as pt

    if pt.is_struct(t):
        return [p for i in range(t.num_fields)
                for p in _paths(f"{prefix}.{t.field(i).name}", t.field(i).type, plain_elements)]
    if pt.is_map(t):
        return (_paths(f"{prefix}.key_value.key", t.key_type, plain_elements)
                + _paths(f"{prefix}.key_value.value", t.item_type, plain_elements))
    if pt.is_list(t) or pt.is_large_list(t) or pt.is_fixed_size_list(t):
        element = t.value_type
        if plain_elements and (pt.is_integer(element) or pt.is_floating(element)
                               or pt.is_temporal(element) or pt.is_boolean(element)):
            return [f"{prefix}.list.element"]
        return _paths(f"{prefix}.list.element", element, plain_elements)
    return [] if plain_elements else [prefix]


__all__ = ["DISTINCT_SHARE", "SAMPLE_ROWS", "dictionary_columns", "leaf_paths"]
