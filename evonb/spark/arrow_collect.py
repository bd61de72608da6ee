"""Collect a Spark DataFrame as an Arrow table on the driver, also when a null struct has
required members.

Spark sends a null struct's required member as null under it, which Arrow allows; but
pyarrow's cast refuses such a child ("nulls in input cannot be viewed as non-nullable",
apache/arrow#37072 and #50515), and ``DataFrame.toArrow`` casts. :func:`to_arrow` therefore
collects every nested field as nullable (:func:`relaxed_type`), as the driver paths write
them (:func:`nullable_schema`); top-level columns keep Spark's nullability. The module
loads no engine: Spark and pyarrow are imported by the functions that use them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from evonb.schema.render import backquote

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame
    from pyspark.sql.types import DataType, StructType

TableOrBatch = TypeVar("TableOrBatch", "pa.Table", "pa.RecordBatch")


def relaxed_type(t: DataType) -> DataType:
    """``t`` with every nested field, list element and map value nullable (map keys stay
    required); field names and metadata kept."""
    from pyspark.sql.types import ArrayType, MapType, StructField, StructType

    if isinstance(t, StructType):
        return StructType([StructField(f.name, relaxed_type(f.dataType), True, f.metadata)
                           for f in t.fields])
    if isinstance(t, ArrayType):
        return ArrayType(relaxed_type(t.elementType), True)
    if isinstance(t, MapType):
        return MapType(relaxed_type(t.keyType), relaxed_type(t.valueType), True)
    return t


def relaxed_columns(schema: StructType) -> StructType:
    """``schema`` (a DataFrame's) with every nested field nullable (:func:`relaxed_type`),
    its columns' own nullability kept: the Spark schema of rows :func:`to_arrow` collected,
    for ``createDataFrame``."""
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(f.name, relaxed_type(f.dataType), f.nullable, f.metadata)
                       for f in schema.fields])


def to_arrow(df: DataFrame) -> pa.Table:
    """``df.toArrow()`` with nested fields collected as nullable (see the module): the
    columns whose types have a required nested field are cast to :func:`relaxed_type` in
    the same plan, keeping their names and metadata."""
    fields = df.schema.fields
    relaxed = [relaxed_type(f.dataType) for f in fields]
    if all(r == f.dataType for r, f in zip(relaxed, fields, strict=True)):
        return df.toArrow()
    from pyspark.sql import functions as F

    cols = [F.col(backquote(f.name)) if r == f.dataType
            else F.col(backquote(f.name)).cast(r).alias(f.name, metadata=f.metadata)
            for r, f in zip(relaxed, fields, strict=True)]
    return df.select(*cols).toArrow()


def nullable_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field nullable, nested ones too (map keys stay required)."""
    import pyarrow as pa

    def field(f: pa.Field) -> pa.Field:
        return f.with_type(kind(f.type)).with_nullable(True)

    def kind(t: pa.DataType) -> pa.DataType:
        if pa.types.is_struct(t):
            return pa.struct([field(t.field(i)) for i in range(t.num_fields)])
        if pa.types.is_map(t):
            return pa.map_(t.key_field.with_type(kind(t.key_type)), field(t.item_field))
        if pa.types.is_large_list(t):
            return pa.large_list(field(t.value_field))
        if pa.types.is_list(t):
            return pa.list_(field(t.value_field))
        return t

    return pa.schema([field(f) for f in schema], metadata=schema.metadata)


def nested_nullable(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its nested fields nullable (:func:`nullable_schema`), its top-level
    fields as they are; field metadata (field IDs) kept."""
    import pyarrow as pa

    return pa.schema([r.with_nullable(f.nullable)
                      for r, f in zip(nullable_schema(schema), schema, strict=True)],
                     metadata=schema.metadata)


def key_list(column: pa.Array | pa.ChunkedArray) -> list[Any]:
    """A key column's values as Python values that compare and hash as the keys do, with
    dates and timestamps as their numbers (days, or the timestamp's unit, since 1970-01-01):
    Python's dates and date-times stop at year 9999, a Spark date or timestamp does not."""
    return with_times_as_numbers(column).to_pylist()


def with_times_as_numbers(column: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """``column`` cast to :func:`times_as_numbers` of its type (the same object when it holds
    no date or timestamp): equal values give equal numbers."""
    plain = times_as_numbers(column.type)
    return column if plain == column.type else column.cast(plain)


def rows_with_times_as_numbers(rows: TableOrBatch) -> TableOrBatch:
    """``rows`` (a table or a record batch, the same kind returned) with each column as
    :func:`with_times_as_numbers` has it."""
    return type(rows).from_arrays([with_times_as_numbers(c) for c in rows.columns],
                                  names=rows.schema.names)


def times_as_numbers(t: pa.DataType) -> pa.DataType:
    """``t`` with every date and timestamp in it (at any depth) as the integer type that
    holds its number (days, or the timestamp's unit, since 1970-01-01): what a column is cast
    to so that Python compares and hashes its values over Spark's whole range."""
    import pyarrow as pa

    if pa.types.is_date32(t):
        return pa.int32()
    if pa.types.is_timestamp(t) or pa.types.is_date64(t):
        return pa.int64()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(times_as_numbers(f.type)) for f in t])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(times_as_numbers(t.key_type)),
                       t.item_field.with_type(times_as_numbers(t.item_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(times_as_numbers(t.value_type)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(times_as_numbers(t.value_type)))
    return t


__all__ = ["key_list", "nested_nullable", "nullable_schema", "relaxed_columns", "relaxed_type",
           "rows_with_times_as_numbers", "times_as_numbers", "to_arrow",
           "with_times_as_numbers"]
