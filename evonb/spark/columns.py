"""Compile read-plan expressions (:mod:`evonb.table.read_plan`) into Spark columns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evonb.schema.spark_convert import type_to_spark
from evonb.schema.types import StructType
from evonb.table.read_plan import (
    Cast,
    Coalesce,
    Col,
    DefaultIn,
    Expr,
    ForEach,
    ForEachValue,
    GetField,
    Lit,
    ScanGroup,
    StructOf,
    Var,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType as SparkStructType


def to_column(expr: Expr, env: dict[int, Column] | None = None) -> Column:
    """The Spark column for ``expr``; ``env`` binds lambda variables by depth."""
    from pyspark.sql import functions as F

    env = env or {}
    if isinstance(expr, Col):
        return F.col(_quote(expr.name))
    if isinstance(expr, Var):
        return env[expr.depth]
    if isinstance(expr, GetField):
        return to_column(expr.src, env).getField(expr.name)
    if isinstance(expr, Lit):
        return F.lit(expr.value).cast(type_to_spark(expr.type))
    if isinstance(expr, Cast):
        # try_cast: a value an allowed change cannot carry (e.g. string -> date on 'abc', a
        # float beyond a decimal's range) reads as null instead of failing the whole query.
        return to_column(expr.src, env).try_cast(type_to_spark(expr.type))
    if isinstance(expr, StructOf):
        src = to_column(expr.src, env)
        built = F.struct(*[to_column(e, env).alias(name) for name, e in expr.members])
        return F.when(src.isNull(), F.lit(None)).otherwise(built)
    if isinstance(expr, ForEach):
        depth = expr.depth
        return F.transform(to_column(expr.src, env),
                           lambda x: to_column(expr.element, {**env, depth: x}))
    if isinstance(expr, ForEachValue):
        depth = expr.depth
        return F.transform_values(to_column(expr.src, env),
                                  lambda _k, v: to_column(expr.value, {**env, depth: v}))
    if isinstance(expr, Coalesce):
        return F.coalesce(*[to_column(e, env) for e in expr.items])
    if isinstance(expr, DefaultIn):
        in_files = F.col("_metadata.file_name").isin(sorted(expr.files))
        return F.when(in_files, to_column(expr.default, env)).otherwise(
            to_column(expr.value, env))
    raise TypeError(f"unknown expression {expr!r}")  # pragma: no cover


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def spark_read_type(struct: StructType) -> SparkStructType:
    """A plain Spark read schema (names and types only, no field-ID metadata)."""
    from pyspark.sql import types as T

    return T.StructType([_plain_field(f) for f in struct.fields])


def _plain_field(f) -> object:
    from pyspark.sql import types as T

    return T.StructField(f.name, _plain_type(f.type), True)


def _plain_type(t):
    from pyspark.sql import types as T

    from evonb.schema.types import ArrayType, MapType

    if isinstance(t, StructType):
        return T.StructType([_plain_field(f) for f in t.fields])
    if isinstance(t, ArrayType):
        return T.ArrayType(_plain_type(t.element.type), True)
    if isinstance(t, MapType):
        return T.MapType(_plain_type(t.key.type), _plain_type(t.value.type), True)
    return type_to_spark(t)


def scan_group(spark: SparkSession, group: ScanGroup, *, extra: tuple[Column, ...] = (),
               with_file: bool = False, with_position: bool = False,
               row_filter: Column | None = None) -> DataFrame:
    """Read one scan group and project it onto the query columns (``with_file``: plus the
    file's path as ``_evo_file``; ``with_position``: plus the row's position in its file,
    ``_metadata.row_index``, as ``_evo_pos``; ``row_filter``: only the rows it keeps, over
    the file's columns and ``_metadata``)."""
    from pyspark.sql import functions as F

    df = spark.read.schema(spark_read_type(group.read_type)).parquet(*group.files)
    if row_filter is not None:
        df = df.filter(row_filter)
    cols = [to_column(e).alias(name) for name, e in group.columns]
    if with_file:
        cols.append(F.col("_metadata.file_path").alias("_evo_file"))
    if with_position:
        cols.append(F.col("_metadata.row_index").alias("_evo_pos"))
    return df.select(*cols, *extra)
