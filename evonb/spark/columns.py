"""Compile read-plan expressions (:mod:`evonb.table.read_plan`) into Spark columns."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evonb.schema.defaults import sql_literal
from evonb.schema.render import backquote
from evonb.schema.spark_convert import CURRENT_DEFAULT_KEY, EXISTS_DEFAULT_KEY, type_to_spark
from evonb.schema.types import DOUBLE, FLOAT, ArrayType, MapType, StructType
from evonb.spark.position_source import DELETED, OPTION, SOURCE
from evonb.table.fileio import file_io
from evonb.table.lru import LRU
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

_GLOB = re.compile(r"([\\{}\[\]*?])")


def literal_paths(paths: Sequence[str]) -> list[str]:
    """``paths`` as Spark's file sources read them literally: Spark takes each as a glob
    pattern, so a table folder named with ``[``, ``]``, ``{``, ``}``, ``*`` or ``?`` would match
    no file or other files; those characters are escaped (Spark's option that turns globbing
    off reads each file once per file listed when the path holds them)."""
    return [_GLOB.sub(r"\\\1", p) for p in paths]


def to_column(expr: Expr) -> Column:
    """The Spark column for ``expr``."""
    from pyspark.sql import functions as F

    return F.expr(to_sql(expr))


def to_sql(expr: Expr, depth_names: dict[int, str] | None = None) -> str:
    """``expr`` as Spark SQL text: a whole projection is then one ``selectExpr`` call instead of
    a JVM round trip per function (planning a read of many columns stays cheap).
    ``depth_names`` binds lambda variables by depth."""
    env = depth_names or {}
    if isinstance(expr, Col):
        return backquote(expr.name)
    if isinstance(expr, Var):
        return env[expr.depth]
    if isinstance(expr, GetField):
        return f"({to_sql(expr.src, env)}).{backquote(expr.name)}"
    if isinstance(expr, Lit):
        if expr.value is None:
            return f"CAST(NULL AS {expr.type})"
        return f"CAST({sql_literal(expr.value, expr.type)} AS {expr.type})"
    if isinstance(expr, Cast):
        # try_cast: a value an allowed change cannot carry (e.g. string -> date on 'abc', a
        # float beyond a decimal's range) reads as null instead of failing the whole query.
        src = to_sql(expr.src, env)
        cast = f"try_cast({src} AS {expr.type})"
        if expr.type == FLOAT:
            # Spark's optimizer (SimplifyCasts) takes an integer -> float -> double chain for
            # one integer -> double cast, dropping the float's rounding (80208124 read through
            # float is 80208128): the product with 1, exact for every float, keeps the step.
            cast = f"({cast} * CAST(1 AS FLOAT))"
        if expr.exact is None:
            return cast
        if expr.type in (FLOAT, DOUBLE):  # a narrowed number: null where it overflows
            inf = "CAST('Infinity' AS DOUBLE)"
            return (f"CASE WHEN abs({cast}) = {inf} AND abs(CAST({src} AS DOUBLE)) != {inf} "
                    f"THEN NULL ELSE {cast} END")
        return f"CASE WHEN try_cast({cast} AS {expr.exact}) = {src} THEN {cast} END"
    if isinstance(expr, StructOf):
        src = to_sql(expr.src, env)
        members = ", ".join(f"{_string(name)}, {to_sql(e, env)}" for name, e in expr.members)
        return f"CASE WHEN ({src}) IS NULL THEN NULL ELSE named_struct({members}) END"
    if isinstance(expr, ForEach):
        var = _lambda_var(expr.depth)
        body = to_sql(expr.element, {**env, expr.depth: var})
        return f"transform({to_sql(expr.src, env)}, {var} -> {body})"
    if isinstance(expr, ForEachValue):
        var = _lambda_var(expr.depth)
        body = to_sql(expr.value, {**env, expr.depth: var})
        return f"transform_values({to_sql(expr.src, env)}, ({var}_k, {var}) -> {body})"
    if isinstance(expr, Coalesce):
        return "coalesce(" + ", ".join(to_sql(e, env) for e in expr.items) + ")"
    if isinstance(expr, DefaultIn):
        names = ", ".join(_string(n) for n in sorted(expr.files))
        return (f"CASE WHEN _metadata.file_name IN ({names}) THEN {to_sql(expr.default, env)} "
                f"ELSE {to_sql(expr.value, env)} END")
    raise TypeError(f"unknown expression {expr!r}")  # pragma: no cover


def _lambda_var(depth: int) -> str:
    return f"__evo_x{depth}"


def _string(text: str) -> str:
    """A SQL string literal (any character)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


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


    if isinstance(t, StructType):
        return T.StructType([_plain_field(f) for f in t.fields])
    if isinstance(t, ArrayType):
        return T.ArrayType(_plain_type(t.element.type), True)
    if isinstance(t, MapType):
        return T.MapType(_plain_type(t.key.type), _plain_type(t.value.type), True)
    return type_to_spark(t)


_RELATIONS: LRU[tuple, DataFrame] = LRU(64)


def _relation(spark: SparkSession, read_type: SparkStructType, files: Sequence[str]
              ) -> DataFrame:
    """``spark.read.schema(read_type).parquet(*files)``, kept for the last
    64 file lists and read types of the session's application, keyed by
    each file's version too (:class:`~evonb.table.fileio.FileInfo`): data files never change
    once written, so the
    relation (Spark's listing of the files included) is the same every time, and reading the
    same snapshot again skips the listing and the analysis. Projections and filters are
    applied afresh by each read."""
    try:  # each file as it is now: a file touched or replaced gets a fresh listing
        io = file_io()
        stats = tuple(io.info(f).version for f in files)
    except OSError:  # not a local path: no reuse
        return spark.read.schema(read_type).parquet(*literal_paths(files))
    key = (id(spark), spark.sparkContext.applicationId, read_type.json(), tuple(files), stats)
    found = _RELATIONS.get(key)
    if found is not None:
        return found
    df = spark.read.schema(read_type).parquet(*literal_paths(files))
    _RELATIONS[key] = df
    return df


def _position_relation(spark: SparkSession, read_type: SparkStructType, files: Sequence[str],
                       positions: str) -> DataFrame:
    """The files' rows that ``positions`` keep, through evonb's Parquet source
    (:mod:`evonb.spark.position_source`)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T


    schema = T.StructType([*read_type.fields, T.StructField(DELETED, T.BooleanType(), True)])
    df = (spark.read.format(SOURCE).schema(schema).option(OPTION, positions)
          .load(literal_paths(files)))
    return df.filter(~F.col(DELETED))


def scan_group(spark: SparkSession, group: ScanGroup, *, extra: tuple[Column, ...] = (),
               with_file: bool = False, with_position: bool = False,
               row_filter: Column | None = None, positions: str | None = None) -> DataFrame:
    """Read one scan group and project it onto the query columns (``with_file``: plus the
    file's path as ``_evo_file``; ``with_position``: plus the row's position in its file,
    ``_metadata.row_index``, as ``_evo_pos``; ``row_filter``: only the rows it keeps, over
    the file's columns and ``_metadata``; ``positions``: only the rows these bitmaps keep,
    :func:`evonb.spark.position_source.encode`, read by evonb's Parquet source)."""
    read_type = spark_read_type(group.read_type, group.read_defaults)
    if positions is not None:
        df = _position_relation(spark, read_type, group.files, positions)
    else:
        df = _relation(spark, read_type, group.files)
    if row_filter is not None:
        df = df.filter(row_filter)
    cols = [f"{to_sql(e)} AS {backquote(name)}" for name, e in group.columns]
    if with_file:
        cols.append("_metadata.file_path AS _evo_file")
    if with_position:
        cols.append("_metadata.row_index AS _evo_pos")
    projected = df.selectExpr(*cols)
    return projected.select("*", *extra) if extra else projected
