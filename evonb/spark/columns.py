"""Compile read-plan expressions (:mod:`evonb.table.read_plan`) into Spark columns."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evonb.schema.defaults import sql_literal
from evonb.schema.spark_convert import CURRENT_DEFAULT_KEY, EXISTS_DEFAULT_KEY, type_to_spark
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


def spark_read_type(struct: StructType, defaults: tuple[tuple[str, Lit], ...] = ()
                    ) -> SparkStructType:
    """A plain Spark read schema (names and types only, no field-ID metadata); top-level
    columns named in ``defaults`` carry their constant as ``EXISTS_DEFAULT``, which the Parquet
    reader fills into files that lack the column."""
    from pyspark.sql import types as T

    filled = {name: sql_literal(lit.value, lit.type) for name, lit in defaults}
    fields = []
    for f in struct.fields:
        plain = _plain_field(f)
        if f.name in filled:
            text = filled[f.name]
            plain = T.StructField(plain.name, plain.dataType, True,
                                  {EXISTS_DEFAULT_KEY: text, CURRENT_DEFAULT_KEY: text})
        fields.append(plain)
    return T.StructType(fields)


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
               with_file: bool = False) -> DataFrame:
    """Read one scan group and project it onto the query columns."""
    from pyspark.sql import functions as F

    read_type = spark_read_type(group.read_type, group.read_defaults)
    df = spark.read.schema(read_type).parquet(*group.files)
    cols = [to_column(e).alias(name) for name, e in group.columns]
    if with_file:
        cols.append(F.col("_metadata.file_path").alias("_evo_file"))
    return df.select(*cols, *extra)
